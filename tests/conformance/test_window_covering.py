"""Window Covering cluster test cases (TC_WNCV), from the Window Covering test plan."""
from __future__ import annotations

import pytest
from chip.clusters import Objects as C
from chip.clusters.Types import NullValue
from conftest import serving
from dut import DutStatusError
from steps import IN_PROCESS, ClusterSpec, at_most, check_attributes, check_global_attributes, endpoints_with

from clusters.status import Status

WC = C.WindowCovering
A = WC.Attributes
LF, TL, PA_LF, ABS, PA_TL = 0x1, 0x2, 0x4, 0x8, 0x10

SPEC = ClusterSpec(
    WC, revisions=range(5, 9),
    features={"LF": 0, "TL": 1, "PA_LF": 2, "ABS": 3, "PA_TL": 4},
    feature_rules={"PA_LF": "[LF]", "PA_TL": "[TL]", "ABS": "O"},
    attributes={
        "Type": "M", "PhysicalClosedLimitLift": "[LF & PA_LF & ABS]", "PhysicalClosedLimitTilt": "[TL & PA_TL & ABS]",
        "CurrentPositionLift": "[LF & PA_LF & ABS]", "CurrentPositionTilt": "[TL & PA_TL & ABS]",
        "NumberOfActuationsLift": "[LF]", "NumberOfActuationsTilt": "[TL]", "ConfigStatus": "M",
        "CurrentPositionLiftPercentage": "[LF & PA_LF]", "CurrentPositionTiltPercentage": "[TL & PA_TL]",
        "OperationalStatus": "M", "TargetPositionLiftPercent100ths": "LF & PA_LF",
        "TargetPositionTiltPercent100ths": "TL & PA_TL", "EndProductType": "M",
        "CurrentPositionLiftPercent100ths": "LF & PA_LF", "CurrentPositionTiltPercent100ths": "TL & PA_TL",
        "InstalledOpenLimitLift": "LF & PA_LF & ABS", "InstalledClosedLimitLift": "LF & PA_LF & ABS",
        "InstalledOpenLimitTilt": "TL & PA_TL & ABS", "InstalledClosedLimitTilt": "TL & PA_TL & ABS",
        "Mode": "M", "SafetyStatus": "O"},
    accepted={"UpOrOpen": "M", "DownOrClose": "M", "StopMotion": "M", "GoToLiftValue": "[LF & ABS]",
              "GoToLiftPercentage": "LF & PA_LF, [LF]", "GoToTiltValue": "[TL & ABS]",
              "GoToTiltPercentage": "TL & PA_TL, [TL]"},
    constraints={
        "Type": at_most(9), "EndProductType": at_most(23), "Mode": at_most(0x0F),
        "OperationalStatus": at_most(0x3F), "ConfigStatus": at_most(0x7F),
        "CurrentPositionLiftPercentage": at_most(100, nullable=True),
        "CurrentPositionTiltPercentage": at_most(100, nullable=True),
        "CurrentPositionLiftPercent100ths": at_most(10000, nullable=True),
        "CurrentPositionTiltPercent100ths": at_most(10000, nullable=True),
        "TargetPositionLiftPercent100ths": at_most(10000, nullable=True),
        "TargetPositionTiltPercent100ths": at_most(10000, nullable=True),
        "SafetyStatus": at_most(0x0FFF),
    },
)

NOT_APPLICABLE = {
    "TC_WNCV_6_1": "Absolute Position feature (ABS) is not served",
}

DUTS = serving(WC, kinds=IN_PROCESS)


def _positions(dut, endpoint):
    return (dut.read(endpoint, A.CurrentPositionLiftPercent100ths),
            dut.read(endpoint, A.TargetPositionLiftPercent100ths))


@pytest.mark.parametrize("dut", serving(WC), indirect=True)
def test_TC_WNCV_1_1(dut):
    check_global_attributes(dut, SPEC)


@pytest.mark.parametrize("dut", serving(WC), indirect=True)
def test_TC_WNCV_2_1(dut):
    for values in check_attributes(dut, SPEC).values():
        lift = values.get("CurrentPositionLiftPercent100ths", NullValue)
        if lift != NullValue and values.get("CurrentPositionLiftPercentage", NullValue) != NullValue:
            assert values["CurrentPositionLiftPercentage"] == lift // 100


@pytest.mark.parametrize("dut", DUTS, indirect=True)
def test_TC_WNCV_2_2(dut):
    """ConfigStatus: Operational, and the lift (and tilt) position-aware bits match the features."""
    for endpoint in endpoints_with(dut, WC):
        features, config = dut.read(endpoint, A.FeatureMap), dut.read(endpoint, A.ConfigStatus)
        assert config & 0x01, "not Operational"
        assert bool(config & 0x08) == bool(features & PA_LF)     # LiftMovementReversed is 0x04
        assert bool(config & 0x10) == bool(features & PA_TL)


@pytest.mark.parametrize("dut", DUTS, indirect=True)
def test_TC_WNCV_2_3(dut):
    """Mode is writable within its bits; a reserved bit is CONSTRAINT_ERROR."""
    for endpoint in endpoints_with(dut, WC):
        dut.write(endpoint, A.Mode, 0)
        assert dut.read(endpoint, A.Mode) == 0
        with pytest.raises(DutStatusError) as error:
            dut.write(endpoint, A.Mode, 0x10)
        assert error.value.status == Status.CONSTRAINT_ERROR


@pytest.mark.parametrize("dut", DUTS, indirect=True)
def test_TC_WNCV_3_1(dut):
    """UpOrOpen: the target is fully open (0), the lift moves there, OperationalStatus shows it."""
    for endpoint in endpoints_with(dut, WC):
        dut.invoke(endpoint, WC.Commands.GoToLiftPercentage(liftPercent100thsValue=10000))
        dut.wait(120)
        assert _positions(dut, endpoint) == (10000, 10000)
        dut.invoke(endpoint, WC.Commands.UpOrOpen())
        assert dut.read(endpoint, A.TargetPositionLiftPercent100ths) == 0
        dut.wait(1)
        status = dut.read(endpoint, A.OperationalStatus)
        assert status & 0x3 == 0x1 and (status >> 2) & 0x3 == 0x1   # global and lift: opening (01b)
        dut.wait(120)
        assert _positions(dut, endpoint) == (0, 0) and dut.read(endpoint, A.OperationalStatus) == 0


@pytest.mark.parametrize("dut", DUTS, indirect=True)
def test_TC_WNCV_3_2(dut):
    """DownOrClose: the target is fully closed (10000), the lift moves there."""
    for endpoint in endpoints_with(dut, WC):
        dut.invoke(endpoint, WC.Commands.UpOrOpen())
        dut.wait(120)
        dut.invoke(endpoint, WC.Commands.DownOrClose())
        assert dut.read(endpoint, A.TargetPositionLiftPercent100ths) == 10000
        dut.wait(1)
        status = dut.read(endpoint, A.OperationalStatus)
        assert status & 0x3 == 0x2 and (status >> 2) & 0x3 == 0x2   # global and lift: closing (10b)
        dut.wait(120)
        assert _positions(dut, endpoint) == (10000, 10000) and dut.read(endpoint, A.OperationalStatus) == 0


@pytest.mark.parametrize("dut", DUTS, indirect=True)
def test_TC_WNCV_3_3(dut):
    """StopMotion: the target becomes the current position and the motion ends."""
    for endpoint in endpoints_with(dut, WC):
        dut.invoke(endpoint, WC.Commands.UpOrOpen())
        dut.wait(120)
        dut.invoke(endpoint, WC.Commands.DownOrClose())
        dut.wait(2)
        dut.invoke(endpoint, WC.Commands.StopMotion())
        current, target = _positions(dut, endpoint)
        assert 0 < current < 10000 and target == current
        assert dut.read(endpoint, A.OperationalStatus) == 0
        dut.wait(5)
        assert _positions(dut, endpoint) == (current, current)


@pytest.mark.parametrize("dut", DUTS, indirect=True)
def test_TC_WNCV_4_1(dut):
    """GoToLiftPercentage: to the given position; beyond 10000 is CONSTRAINT_ERROR."""
    for endpoint in endpoints_with(dut, WC):
        for target in (2500, 7500, 0):
            dut.invoke(endpoint, WC.Commands.GoToLiftPercentage(liftPercent100thsValue=target))
            assert dut.read(endpoint, A.TargetPositionLiftPercent100ths) == target
            dut.wait(120)
            assert _positions(dut, endpoint) == (target, target)
            assert dut.read(endpoint, A.CurrentPositionLiftPercentage) == target // 100
        with pytest.raises(DutStatusError) as error:
            dut.invoke(endpoint, WC.Commands.GoToLiftPercentage(liftPercent100thsValue=10001))
        assert error.value.status == Status.CONSTRAINT_ERROR


@pytest.mark.parametrize("dut", serving(WC, feature=TL | PA_TL, kinds=IN_PROCESS), indirect=True)
def test_TC_WNCV_4_2(dut):
    """GoToTiltPercentage: to the given position; beyond 10000 is CONSTRAINT_ERROR."""
    for endpoint in endpoints_with(dut, WC):
        if dut.read(endpoint, A.FeatureMap) & (TL | PA_TL) != TL | PA_TL:
            continue
        for target in (3000, 10000):
            dut.invoke(endpoint, WC.Commands.GoToTiltPercentage(tiltPercent100thsValue=target))
            assert dut.read(endpoint, A.TargetPositionTiltPercent100ths) == target
            dut.wait(120)
            assert dut.read(endpoint, A.CurrentPositionTiltPercent100ths) == target
        with pytest.raises(DutStatusError) as error:
            dut.invoke(endpoint, WC.Commands.GoToTiltPercentage(tiltPercent100thsValue=10001))
        assert error.value.status == Status.CONSTRAINT_ERROR


@pytest.mark.parametrize("dut", serving(WC), indirect=True)
def test_TC_WNCV_2_4(dut):
    """Type is a defined WindowCoveringType, and one that moves the lift when the lift is served."""
    for endpoint in endpoints_with(dut, WC):
        kind = dut.read(endpoint, A.Type)
        assert 0 <= kind <= 9
        if dut.read(endpoint, A.FeatureMap) & LF and not dut.read(endpoint, A.FeatureMap) & TL:
            assert kind in (0, 1, 2, 3, 4, 5, 9)   # lift-only types (and Unknown)


@pytest.mark.parametrize("dut", serving(WC), indirect=True)
def test_TC_WNCV_2_5(dut):
    """EndProductType is a defined EndProductType."""
    for endpoint in endpoints_with(dut, WC):
        assert 0 <= dut.read(endpoint, A.EndProductType) <= 23


def _travel(dut, endpoint, command, target):
    there = dut.read(endpoint, A.CurrentPositionLiftPercent100ths) == target
    dut.invoke(endpoint, command)
    dut.wait(1)
    assert (dut.read(endpoint, A.OperationalStatus) == 0) == there   # moving unless already there
    dut.wait(300)
    assert _positions(dut, endpoint) == (target, target)
    assert dut.read(endpoint, A.CurrentPositionLiftPercentage) == target // 100
    assert dut.read(endpoint, A.OperationalStatus) == 0


@pytest.mark.parametrize("dut", serving(WC, kinds=IN_PROCESS), indirect=True)
def test_TC_WNCV_3_4(dut):
    """UpOrOpen from fully closed reaches fully open (0) and stops there."""
    for endpoint in endpoints_with(dut, WC):
        _travel(dut, endpoint, WC.Commands.DownOrClose(), 10000)
        _travel(dut, endpoint, WC.Commands.UpOrOpen(), 0)


@pytest.mark.parametrize("dut", serving(WC, kinds=IN_PROCESS), indirect=True)
def test_TC_WNCV_3_5(dut):
    """DownOrClose from fully open reaches fully closed (10000) and stops there."""
    for endpoint in endpoints_with(dut, WC):
        _travel(dut, endpoint, WC.Commands.UpOrOpen(), 0)
        _travel(dut, endpoint, WC.Commands.DownOrClose(), 10000)
