"""On/Off cluster test cases (TC_OO), from the On/Off test plan."""
from __future__ import annotations

import pytest
from chip.clusters import Objects as C
from chip.clusters.Types import NullValue
from conftest import serving
from dut import DutStatusError
from steps import (
    IN_PROCESS,
    ClusterSpec,
    check_attributes,
    check_global_attributes,
    endpoints_with,
    one_of,
    scene_round_trip,
)

from clusters.status import Status

OO = C.OnOff
A = OO.Attributes

SPEC = ClusterSpec(
    OO, revisions=range(4, 7),
    features={"LT": 0, "DF": 1, "OFFONLY": 2},
    feature_rules={"LT": "[!OFFONLY]", "DF": "[!OFFONLY]", "OFFONLY": "[!(LT | DF)]"},
    attributes={"OnOff": "M", "GlobalSceneControl": "LT", "OnTime": "LT", "OffWaitTime": "LT",
                "StartUpOnOff": "LT"},
    accepted={"Off": "M", "On": "!OFFONLY", "Toggle": "!OFFONLY", "OffWithEffect": "LT",
              "OnWithRecallGlobalScene": "LT", "OnWithTimedOff": "LT"},
    constraints={"StartUpOnOff": lambda v, _: v == NullValue or v in (0, 1, 2)},
)

NOT_APPLICABLE: dict[str, str] = {}   # TC_OO_2_4 (power cycles) is in test_tc_restarts.py

DUTS = serving(OO, kinds=IN_PROCESS)


def _lighting(dut, endpoint):
    return dut.read(endpoint, A.FeatureMap) & 1


@pytest.mark.parametrize("dut", serving(OO), indirect=True)
def test_TC_OO_1_1(dut):
    check_global_attributes(dut, SPEC)


@pytest.mark.parametrize("dut", serving(OO), indirect=True)
def test_TC_OO_2_1(dut):
    for endpoint, values in check_attributes(dut, SPEC).items():
        assert one_of(True, False)(values["OnOff"], values)
        if _lighting(dut, endpoint):
            assert values["GlobalSceneControl"] in (True, False)
            assert values["OnTime"] >= 0 and values["OffWaitTime"] >= 0


@pytest.mark.parametrize("dut", DUTS, indirect=True)
def test_TC_OO_2_2(dut):
    """Primary functionality: Off, On, Toggle, each reflected in OnOff (OffOnly: Off, and On and
    Toggle are UNSUPPORTED_COMMAND)."""
    for endpoint in endpoints_with(dut, OO):
        if dut.read(endpoint, A.FeatureMap) & 0x4:   # OffOnly (a cooktop: it is turned on by using it)
            assert dut.invoke(endpoint, OO.Commands.Off()) is None and dut.read(endpoint, A.OnOff) is False
            for command in (OO.Commands.On(), OO.Commands.Toggle()):
                with pytest.raises(DutStatusError) as error:
                    dut.invoke(endpoint, command)
                assert error.value.status == Status.UNSUPPORTED_COMMAND
            continue
        for command, expected in ((OO.Commands.Off(), False), (OO.Commands.On(), True),
                                  (OO.Commands.Off(), False), (OO.Commands.Toggle(), True),
                                  (OO.Commands.Toggle(), False), (OO.Commands.Off(), False)):
            assert dut.invoke(endpoint, command) is None
            assert dut.read(endpoint, A.OnOff) is expected, (endpoint, command)


@pytest.mark.parametrize("dut", serving(OO, feature=0x1, kinds=IN_PROCESS), indirect=True)
def test_TC_OO_2_3(dut):
    """Secondary functionality (LT): OnTime, OffWaitTime, GlobalSceneControl, OnWithTimedOff."""
    lit = [ep for ep in endpoints_with(dut, OO) if _lighting(dut, ep)]
    for endpoint in lit:
        dut.invoke(endpoint, OO.Commands.On())
        assert dut.read(endpoint, A.GlobalSceneControl) is True
        dut.invoke(endpoint, OO.Commands.OffWithEffect(effectIdentifier=0, effectVariant=0))
        assert dut.read(endpoint, A.OnOff) is False and dut.read(endpoint, A.GlobalSceneControl) is False
        dut.invoke(endpoint, OO.Commands.OnWithRecallGlobalScene())
        assert dut.read(endpoint, A.OnOff) is True and dut.read(endpoint, A.GlobalSceneControl) is True
        # Timed On: on for 3 s, then off with OffWaitTime cleared.
        dut.invoke(endpoint, OO.Commands.Off())
        dut.invoke(endpoint, OO.Commands.OnWithTimedOff(onOffControl=0, onTime=30, offWaitTime=20))
        assert dut.read(endpoint, A.OnOff) is True and dut.read(endpoint, A.OnTime) == 30
        assert dut.read(endpoint, A.OffWaitTime) == 20
        dut.wait(1.0)
        assert 15 <= dut.read(endpoint, A.OnTime) <= 25
        dut.wait(2.5)
        assert dut.read(endpoint, A.OnOff) is False
        assert (dut.read(endpoint, A.OnTime), dut.read(endpoint, A.OffWaitTime)) == (0, 0)
        # Off during Timed On: Delayed Off, OffWaitTime counts down while off.
        dut.invoke(endpoint, OO.Commands.OnWithTimedOff(onOffControl=0, onTime=30, offWaitTime=30))
        dut.wait(1.0)
        dut.invoke(endpoint, OO.Commands.Off())
        assert dut.read(endpoint, A.OnOff) is False and dut.read(endpoint, A.OnTime) == 0
        assert 25 <= dut.read(endpoint, A.OffWaitTime) <= 30
        # Accept-only-when-on is ignored while off; another OnWithTimedOff only shortens the wait.
        dut.invoke(endpoint, OO.Commands.OnWithTimedOff(onOffControl=1, onTime=30, offWaitTime=30))
        assert dut.read(endpoint, A.OnOff) is False
        dut.invoke(endpoint, OO.Commands.OnWithTimedOff(onOffControl=0, onTime=30, offWaitTime=10))
        assert dut.read(endpoint, A.OnOff) is False and dut.read(endpoint, A.OffWaitTime) == 10
        dut.wait(1.5)
        assert (dut.read(endpoint, A.OnTime), dut.read(endpoint, A.OffWaitTime)) == (0, 0)
        # A plain On ends Delayed Off at once.
        dut.invoke(endpoint, OO.Commands.OnWithTimedOff(onOffControl=0, onTime=30, offWaitTime=30))
        dut.invoke(endpoint, OO.Commands.Off())
        dut.invoke(endpoint, OO.Commands.On())
        assert dut.read(endpoint, A.OnOff) is True
        assert (dut.read(endpoint, A.OnTime), dut.read(endpoint, A.OffWaitTime)) == (0, 0)
        # Off clears OnTime.
        dut.invoke(endpoint, OO.Commands.On())
        dut.write(endpoint, A.OnTime, 50)
        dut.invoke(endpoint, OO.Commands.Off())
        assert dut.read(endpoint, A.OnOff) is False and dut.read(endpoint, A.OnTime) == 0
    assert lit, f"{dut.name} was selected for the Lighting feature"


def _with_scenes(params):
    scenes = {p.id for p in serving(C.ScenesManagement, kinds=IN_PROCESS)}
    return [p for p in params if p.id in scenes]


@pytest.mark.parametrize("dut", _with_scenes(serving(OO, kinds=IN_PROCESS)), indirect=True)
def test_TC_OO_2_7(dut):
    def set_on_off(endpoint, on):
        dut.invoke(endpoint, OO.Commands.On() if on else OO.Commands.Off())
    assert scene_round_trip(dut, OO, A.OnOff, False, True, set_on_off)
