"""Level Control cluster test cases (TC_LVL), from the Level Control test plan."""
from __future__ import annotations

import pytest
from chip.clusters import Objects as C
from chip.clusters.Types import NullValue
from conftest import serving
from dut import DutStatusError
from steps import (
    IN_PROCESS,
    ClusterSpec,
    at_least,
    at_most,
    between,
    check_attributes,
    check_global_attributes,
    endpoints_with,
    scene_round_trip,
)

from clusters.status import Status

LVL = C.LevelControl
A = LVL.Attributes
LT = 0x2   # the Lighting feature bit

SPEC = ClusterSpec(
    LVL, revisions=range(5, 8),
    features={"OO": 0, "LT": 1, "FQ": 2},
    attributes={"CurrentLevel": "M", "RemainingTime": "LT", "MinLevel": "O", "MaxLevel": "O",
                "CurrentFrequency": "FQ", "MinFrequency": "FQ", "MaxFrequency": "FQ", "Options": "M",
                "OnOffTransitionTime": "O", "OnLevel": "M", "OnTransitionTime": "O", "OffTransitionTime": "O",
                "DefaultMoveRate": "O", "StartUpCurrentLevel": "LT"},
    accepted={"MoveToLevel": "M", "Move": "M", "Step": "M", "Stop": "M", "MoveToLevelWithOnOff": "M",
              "MoveWithOnOff": "M", "StepWithOnOff": "M", "StopWithOnOff": "M", "MoveToClosestFrequency": "FQ"},
    constraints={
        "CurrentLevel": between("MinLevel", "MaxLevel", nullable=True),
        "MinLevel": between(0, "MaxLevel"),
        "MaxLevel": between("MinLevel", 254),
        "OnLevel": between("MinLevel", "MaxLevel", nullable=True),
        "Options": at_most(0x3),
        "DefaultMoveRate": at_least(1, nullable=True),
        "OnTransitionTime": at_most(0xFFFE, nullable=True),
        "OffTransitionTime": at_most(0xFFFE, nullable=True),
        "StartUpCurrentLevel": at_most(254, nullable=True),
    },
)

NOT_APPLICABLE = {
    "TC_LVL_7_1": "the Frequency feature (FQ) is not served by any device",
}

DUTS = serving(LVL, kinds=IN_PROCESS)


def _move_to(level: int, time: int = 0) -> LVL.Commands.MoveToLevel:
    return LVL.Commands.MoveToLevel(level=level, transitionTime=time, optionsMask=0, optionsOverride=0)


@pytest.mark.parametrize("dut", serving(LVL), indirect=True)
def test_TC_LVL_1_1(dut):
    check_global_attributes(dut, SPEC)


@pytest.mark.parametrize("dut", serving(LVL), indirect=True)
def test_TC_LVL_2_1(dut):
    for endpoint, values in check_attributes(dut, SPEC).items():
        if dut.read(endpoint, A.FeatureMap) & LT:
            assert values.get("MinLevel", 1) >= 1 and values.get("MaxLevel", 254) <= 254


@pytest.mark.parametrize("dut", serving(LVL, kinds=IN_PROCESS), indirect=True)
def test_TC_LVL_2_2(dut):
    """Writable attributes keep what is written (OnOffTransitionTime, OnLevel, transition times,
    DefaultMoveRate) and refuse out-of-range values."""
    for endpoint in endpoints_with(dut, LVL):
        served = dut.read(endpoint, A.AttributeList)
        low, high = dut.read(endpoint, A.MinLevel), dut.read(endpoint, A.MaxLevel)
        writes = [(A.OnLevel, high), (A.OnLevel, NullValue), (A.Options, 1), (A.Options, 0)]
        writes += [(a, v) for a, v in ((A.OnOffTransitionTime, 10), (A.OnTransitionTime, 5),
                                       (A.OnTransitionTime, NullValue), (A.OffTransitionTime, 7),
                                       (A.DefaultMoveRate, 20)) if a.attribute_id in served]
        for attribute, value in writes:
            dut.write(endpoint, attribute, value)
            assert dut.read(endpoint, attribute) == value, attribute.__name__
        assert low <= high
        bad = [(A.OnLevel, 255), (A.Options, 0x4)]
        bad += [(A.DefaultMoveRate, 0)] if A.DefaultMoveRate.attribute_id in served else []
        for attribute, value in bad:
            with pytest.raises(DutStatusError) as error:
                dut.write(endpoint, attribute, value)
            assert error.value.status == Status.CONSTRAINT_ERROR, (attribute.__name__, value)


@pytest.mark.parametrize("dut", DUTS, indirect=True)
def test_TC_LVL_3_1(dut):
    """MoveToLevel: immediate and with a transition time; clamped to Min/MaxLevel."""
    for endpoint in endpoints_with(dut, LVL):
        low, high = dut.read(endpoint, A.MinLevel), dut.read(endpoint, A.MaxLevel)
        dut.invoke(endpoint, C.OnOff.Commands.On())
        dut.invoke(endpoint, _move_to(high))
        assert dut.read(endpoint, A.CurrentLevel) == high
        middle = (low + high) // 2
        dut.invoke(endpoint, _move_to(middle, time=20))     # 2 s
        dut.wait(1.0)
        assert middle < dut.read(endpoint, A.CurrentLevel) < high
        dut.wait(1.5)
        assert dut.read(endpoint, A.CurrentLevel) == middle
        dut.invoke(endpoint, _move_to(low))
        assert dut.read(endpoint, A.CurrentLevel) == low
        _with_on_off(dut, endpoint, low, high)


def _with_on_off(dut, endpoint, low, high):
    """MoveToLevelWithOnOff drives OnOff with the level: up turns it on, down to the minimum off."""
    if C.OnOff.id not in dut.read(endpoint, C.Descriptor.Attributes.ServerList):
        return
    dut.invoke(endpoint, C.OnOff.Commands.Off())
    dut.invoke(endpoint, LVL.Commands.MoveToLevelWithOnOff(level=high, transitionTime=0, optionsMask=0,
                                                           optionsOverride=0))
    assert dut.read(endpoint, C.OnOff.Attributes.OnOff) is True
    assert dut.read(endpoint, A.CurrentLevel) == high
    dut.invoke(endpoint, LVL.Commands.MoveToLevelWithOnOff(level=low, transitionTime=0, optionsMask=0,
                                                           optionsOverride=0))
    assert dut.read(endpoint, C.OnOff.Attributes.OnOff) is False


@pytest.mark.parametrize("dut", DUTS, indirect=True)
def test_TC_LVL_4_1(dut):
    """Move up and down at a rate until the limits; Stop halts a move."""
    for endpoint in endpoints_with(dut, LVL):
        low, high = dut.read(endpoint, A.MinLevel), dut.read(endpoint, A.MaxLevel)
        dut.invoke(endpoint, C.OnOff.Commands.On())
        dut.invoke(endpoint, _move_to(low))
        dut.invoke(endpoint, LVL.Commands.Move(moveMode=0, rate=100, optionsMask=0, optionsOverride=0))
        dut.wait(1.0)
        moved = dut.read(endpoint, A.CurrentLevel)
        assert low < moved < high or moved == high
        dut.wait(5.0)
        assert dut.read(endpoint, A.CurrentLevel) == high
        dut.invoke(endpoint, LVL.Commands.Move(moveMode=1, rate=50, optionsMask=0, optionsOverride=0))
        dut.wait(1.0)
        dut.invoke(endpoint, LVL.Commands.Stop(optionsMask=0, optionsOverride=0))
        stopped = dut.read(endpoint, A.CurrentLevel)
        assert low <= stopped < high
        dut.wait(2.0)
        assert dut.read(endpoint, A.CurrentLevel) == stopped


@pytest.mark.parametrize("dut", DUTS, indirect=True)
def test_TC_LVL_5_1(dut):
    """Step up and down by a step size, clamped at the limits."""
    for endpoint in endpoints_with(dut, LVL):
        low, high = dut.read(endpoint, A.MinLevel), dut.read(endpoint, A.MaxLevel)
        dut.invoke(endpoint, C.OnOff.Commands.On())
        start = (low + high) // 2
        dut.invoke(endpoint, _move_to(start))
        dut.invoke(endpoint, LVL.Commands.Step(stepMode=0, stepSize=10, transitionTime=0, optionsMask=0,
                                               optionsOverride=0))
        assert dut.read(endpoint, A.CurrentLevel) == min(start + 10, high)
        dut.invoke(endpoint, LVL.Commands.Step(stepMode=1, stepSize=20, transitionTime=10, optionsMask=0,
                                               optionsOverride=0))
        dut.wait(1.5)
        assert dut.read(endpoint, A.CurrentLevel) == max(min(start + 10, high) - 20, low)
        dut.invoke(endpoint, LVL.Commands.Step(stepMode=1, stepSize=254, transitionTime=0, optionsMask=0,
                                               optionsOverride=0))
        assert dut.read(endpoint, A.CurrentLevel) == low


@pytest.mark.parametrize("dut", DUTS, indirect=True)
def test_TC_LVL_6_1(dut):
    """Move, then Stop: the level holds where it stopped."""
    for endpoint in endpoints_with(dut, LVL):
        low = dut.read(endpoint, A.MinLevel)
        dut.invoke(endpoint, C.OnOff.Commands.On())
        dut.invoke(endpoint, _move_to(low))
        dut.invoke(endpoint, LVL.Commands.Move(moveMode=0, rate=20, optionsMask=0, optionsOverride=0))
        dut.wait(2.0)
        dut.invoke(endpoint, LVL.Commands.Stop(optionsMask=0, optionsOverride=0))
        level = dut.read(endpoint, A.CurrentLevel)
        assert level > low
        dut.wait(2.0)
        assert dut.read(endpoint, A.CurrentLevel) == level


@pytest.mark.parametrize("dut", [p for p in serving(LVL, kinds=IN_PROCESS)
                                 if p.id in {q.id for q in serving(C.ScenesManagement, kinds=IN_PROCESS)}],
                         indirect=True)
def test_TC_LVL_9_1(dut):
    def set_level(endpoint, level):
        dut.invoke(endpoint, C.OnOff.Commands.On())
        dut.invoke(endpoint, _move_to(level))
    assert scene_round_trip(dut, LVL, A.CurrentLevel, 20, 200, set_level)
