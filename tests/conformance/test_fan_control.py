"""Fan Control cluster test cases (TC_FAN), from the Fan Control test plan."""
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
)

from clusters.status import Status

FAN = C.FanControl
A = FAN.Attributes
SPD, AUT, RCK, WND, STEP, DIR = 0x1, 0x2, 0x4, 0x8, 0x10, 0x20

SPEC = ClusterSpec(
    FAN, revisions=range(4, 7),
    features={"SPD": 0, "AUT": 1, "RCK": 2, "WND": 3, "STEP": 4, "DIR": 5},
    attributes={"FanMode": "M", "FanModeSequence": "M", "PercentSetting": "M", "PercentCurrent": "M",
                "SpeedMax": "SPD", "SpeedSetting": "SPD", "SpeedCurrent": "SPD", "RockSupport": "RCK",
                "RockSetting": "RCK", "WindSupport": "WND", "WindSetting": "WND", "AirflowDirection": "DIR"},
    accepted={"Step": "STEP"},
    constraints={
        "FanMode": at_most(6), "FanModeSequence": at_most(5),
        "PercentSetting": at_most(100, nullable=True), "PercentCurrent": at_most(100),
        "SpeedMax": between(1, 100), "SpeedSetting": at_most("SpeedMax", nullable=True),
        "SpeedCurrent": at_most("SpeedMax"), "RockSupport": between(1, 7),
        "RockSetting": lambda v, values: v & ~values["RockSupport"] == 0,
        "WindSupport": between(1, 3),
        "WindSetting": lambda v, values: v & ~values["WindSupport"] == 0,
        "AirflowDirection": at_most(1),
    },
)

NOT_APPLICABLE: dict[str, str] = {}

DUTS = serving(FAN, kinds=IN_PROCESS)


def _on(dut, endpoint):
    if C.OnOff.id in dut.read(endpoint, C.Descriptor.Attributes.ServerList):
        dut.invoke(endpoint, C.OnOff.Commands.On())


@pytest.mark.parametrize("dut", serving(FAN), indirect=True)
def test_TC_FAN_1_1(dut):
    check_global_attributes(dut, SPEC)


@pytest.mark.parametrize("dut", serving(FAN), indirect=True)
def test_TC_FAN_2_1(dut):
    for endpoint, values in check_attributes(dut, SPEC).items():
        auto = dut.read(endpoint, A.FeatureMap) & AUT
        assert values["FanModeSequence"] in ((2, 3, 4) if auto else (0, 1, 5))
        assert at_least(0)(values["PercentCurrent"], values)


@pytest.mark.parametrize("dut", DUTS, indirect=True)
def test_TC_FAN_3_1(dut):
    """Writes of FanMode and PercentSetting are kept and move each other; Off is 0 %."""
    for endpoint in endpoints_with(dut, FAN):
        _on(dut, endpoint)
        dut.write(endpoint, A.PercentSetting, 0)
        assert dut.read(endpoint, A.FanMode) == 0 and dut.read(endpoint, A.PercentCurrent) == 0
        dut.write(endpoint, A.FanMode, 3)   # High
        assert dut.read(endpoint, A.FanMode) == 3 and dut.read(endpoint, A.PercentSetting) == 100
        dut.write(endpoint, A.PercentSetting, 30)
        assert dut.read(endpoint, A.PercentSetting) == 30 and dut.read(endpoint, A.PercentCurrent) == 30
        assert dut.read(endpoint, A.FanMode) in (1, 2)
        dut.write(endpoint, A.FanMode, 0)
        assert dut.read(endpoint, A.PercentSetting) == 0 and dut.read(endpoint, A.PercentCurrent) == 0
        with pytest.raises(DutStatusError) as error:
            dut.write(endpoint, A.PercentSetting, 101)
        assert error.value.status == Status.CONSTRAINT_ERROR
        # The plan's sweeps: PercentSetting 0..100 and back move FanMode monotonically (and
        # SpeedSetting with MultiSpeed); FanMode Off..High and back move PercentSetting strictly.
        speed = dut.read(endpoint, A.FeatureMap) & SPD
        for order in (range(0, 101), range(100, -1, -1)):
            seen = []
            for percent in order:
                dut.write(endpoint, A.PercentSetting, percent)
                seen.append((dut.read(endpoint, A.FanMode), dut.read(endpoint, A.SpeedSetting) if speed else 0))
            assert seen == sorted(seen, reverse=order.step < 0), seen
        modes = [0, 1, 3] if dut.read(endpoint, A.FanModeSequence) in (1, 3) else \
            [0, 3] if dut.read(endpoint, A.FanModeSequence) in (4, 5) else [0, 1, 2, 3]
        for order in (modes, modes[::-1]):
            percents = []
            for mode in order:
                dut.write(endpoint, A.FanMode, mode)
                percents.append(dut.read(endpoint, A.PercentSetting))
            assert percents == sorted(percents, reverse=order[0] > order[-1]) and len(set(percents)) == len(percents)


def _optional_attributes(dut, feature: int, names: tuple[str, ...]) -> None:
    """TC_FAN_2_2..2_5: the feature's attributes are served and in range."""
    for endpoint, values in check_attributes(dut, SPEC).items():
        if dut.read(endpoint, A.FeatureMap) & feature:
            assert set(names) <= set(values), (endpoint, sorted(values))


@pytest.mark.parametrize("dut", serving(FAN, feature=SPD), indirect=True)
def test_TC_FAN_2_2(dut):
    _optional_attributes(dut, SPD, ("SpeedMax", "SpeedSetting", "SpeedCurrent"))


@pytest.mark.parametrize("dut", serving(FAN, feature=RCK), indirect=True)
def test_TC_FAN_2_3(dut):
    _optional_attributes(dut, RCK, ("RockSupport", "RockSetting"))


@pytest.mark.parametrize("dut", serving(FAN, feature=WND), indirect=True)
def test_TC_FAN_2_4(dut):
    _optional_attributes(dut, WND, ("WindSupport", "WindSetting"))


@pytest.mark.parametrize("dut", serving(FAN, feature=DIR), indirect=True)
def test_TC_FAN_2_5(dut):
    _optional_attributes(dut, DIR, ("AirflowDirection",))


@pytest.mark.parametrize("dut", serving(FAN, feature=SPD, kinds=IN_PROCESS), indirect=True)
def test_TC_FAN_3_2(dut):
    """MultiSpeed: SpeedSetting moves PercentSetting and FanMode; SpeedMax bounds it."""
    for endpoint in endpoints_with(dut, FAN):
        if not dut.read(endpoint, A.FeatureMap) & SPD:
            continue
        _on(dut, endpoint)
        top = dut.read(endpoint, A.SpeedMax)
        dut.write(endpoint, A.SpeedSetting, top)
        assert dut.read(endpoint, A.SpeedCurrent) == top and dut.read(endpoint, A.PercentSetting) == 100
        dut.write(endpoint, A.SpeedSetting, 0)
        assert dut.read(endpoint, A.FanMode) == 0 and dut.read(endpoint, A.PercentSetting) == 0
        with pytest.raises(DutStatusError) as error:
            dut.write(endpoint, A.SpeedSetting, top + 1)
        assert error.value.status == Status.CONSTRAINT_ERROR


@pytest.mark.parametrize("dut", serving(FAN, feature=RCK, kinds=IN_PROCESS), indirect=True)
def test_TC_FAN_3_3(dut):
    """Rocking: RockSetting takes the supported bits only."""
    for endpoint in endpoints_with(dut, FAN):
        if not dut.read(endpoint, A.FeatureMap) & RCK:
            continue
        support = dut.read(endpoint, A.RockSupport)
        for bit in (1, 2, 4):
            if support & bit:
                dut.write(endpoint, A.RockSetting, bit)
                assert dut.read(endpoint, A.RockSetting) == bit
            else:
                with pytest.raises(DutStatusError) as error:
                    dut.write(endpoint, A.RockSetting, bit)
                assert error.value.status == Status.CONSTRAINT_ERROR


@pytest.mark.parametrize("dut", serving(FAN, feature=WND, kinds=IN_PROCESS), indirect=True)
def test_TC_FAN_3_4(dut):
    """Wind: WindSetting takes the supported bits only."""
    for endpoint in endpoints_with(dut, FAN):
        if not dut.read(endpoint, A.FeatureMap) & WND:
            continue
        support = dut.read(endpoint, A.WindSupport)
        for bit in (1, 2):
            if support & bit:
                dut.write(endpoint, A.WindSetting, bit)
                assert dut.read(endpoint, A.WindSetting) == bit
        dut.write(endpoint, A.WindSetting, 0)
        assert dut.read(endpoint, A.WindSetting) == 0


@pytest.mark.parametrize("dut", serving(FAN, feature=DIR, kinds=IN_PROCESS), indirect=True)
def test_TC_FAN_3_6(dut):
    """AirflowDirection: Forward and Reverse are kept; anything else is CONSTRAINT_ERROR."""
    for endpoint in endpoints_with(dut, FAN):
        if not dut.read(endpoint, A.FeatureMap) & DIR:
            continue
        for value in (1, 0):
            dut.write(endpoint, A.AirflowDirection, value)
            assert dut.read(endpoint, A.AirflowDirection) == value
        with pytest.raises(DutStatusError) as error:
            dut.write(endpoint, A.AirflowDirection, 2)
        assert error.value.status == Status.CONSTRAINT_ERROR


@pytest.mark.parametrize("dut", serving(FAN, feature=STEP, kinds=IN_PROCESS), indirect=True)
def test_TC_FAN_3_5(dut):
    """Step: increase and decrease PercentSetting, with and without wrap and lowestOff."""
    for endpoint in endpoints_with(dut, FAN):
        if not dut.read(endpoint, A.FeatureMap) & STEP:
            continue
        _on(dut, endpoint)
        dut.write(endpoint, A.PercentSetting, 0)
        dut.invoke(endpoint, FAN.Commands.Step(direction=0, wrap=False, lowestOff=True))
        first = dut.read(endpoint, A.PercentSetting)
        assert first not in (0, NullValue)
        dut.invoke(endpoint, FAN.Commands.Step(direction=0, wrap=False, lowestOff=True))
        assert dut.read(endpoint, A.PercentSetting) >= first
        dut.write(endpoint, A.PercentSetting, 100)
        dut.invoke(endpoint, FAN.Commands.Step(direction=0, wrap=False, lowestOff=True))
        assert dut.read(endpoint, A.PercentSetting) == 100
        dut.invoke(endpoint, FAN.Commands.Step(direction=0, wrap=True, lowestOff=True))
        assert dut.read(endpoint, A.PercentSetting) == 0
        dut.invoke(endpoint, FAN.Commands.Step(direction=1, wrap=False, lowestOff=True))
        assert dut.read(endpoint, A.PercentSetting) == 0
        dut.invoke(endpoint, FAN.Commands.Step(direction=1, wrap=True, lowestOff=True))
        assert dut.read(endpoint, A.PercentSetting) == 100
