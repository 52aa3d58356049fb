"""Command fields get the data model's constraints on every path (issue #12 item 5).

OnOff.OnWithTimedOff with onTime = offWaitTime = 0xFFFFFFFF used to be accepted (over Matter
and through the tool API), leaving a uint16 attribute at 4294967295. `clusters.constraints`
checks every built command against its declared types, once, in `ClusterServer.invoke`.
"""
from __future__ import annotations

import json

import pytest
from chip.clusters import Objects as C

from bridge.tools import Session, call_tool
from bridge.twin_backend import TwinBackend
from clusters.constraints import FIELD_TYPES, RANGES, check_command
from clusters.devices import create_device
from clusters.status import MatterError, Status
from twin.home import Home

TIMED_OFF = {"onOffControl": 0, "onTime": 0xFFFFFFFF, "offWaitTime": 0xFFFFFFFF}


def test_every_listed_field_exists_in_the_data_model():
    for (cluster, command, path), typ in FIELD_TYPES.items():
        assert typ in RANGES
        cls = getattr(getattr(getattr(C, cluster), "Commands", None), command, None)
        if cls is None:
            continue   # a command of a newer spec revision than chip's Objects
        labels = {f.Label: f.Type for f in cls.descriptor.Fields}
        assert path.split(".")[0] in labels, (cluster, command, path)


@pytest.mark.parametrize("fields, ok", [
    (TIMED_OFF, False),
    ({"onOffControl": 0, "onTime": 0x10000, "offWaitTime": 0}, False),
    ({"onOffControl": 0x100, "onTime": 0, "offWaitTime": 0}, False),
    ({"onOffControl": 1, "onTime": 0xFFFF, "offWaitTime": 0xFFFF}, True),
])
def test_on_with_timed_off_fields_are_checked_against_their_widths(fields, ok):
    device = create_device("lamp", "dimmable_light")
    if ok:
        device.invoke("OnOff", "OnWithTimedOff", fields)
        assert device.read("OnOff", "OnTime") <= 0xFFFF
        return
    with pytest.raises(MatterError) as e:
        device.invoke("OnOff", "OnWithTimedOff", fields)
    assert e.value.status == Status.CONSTRAINT_ERROR and "uint" in e.value.message
    assert device.read("OnOff", "OnOff") is False and device.read("OnOff", "OnTime") == 0


def test_signed_widths_and_unlisted_fields():
    cmd = C.Thermostat.Commands.SetpointRaiseLower(mode=C.Thermostat.Enums.SetpointRaiseLowerModeEnum.kHeat,
                                                   amount=-129)
    with pytest.raises(MatterError, match="int8"):
        check_command(cmd, "Thermostat.SetpointRaiseLower")
    cmd.amount = -128
    check_command(cmd, "Thermostat.SetpointRaiseLower")
    # A uint field no table lists is a uint64 at most.
    with pytest.raises(MatterError, match="uint64"):
        check_command(C.LevelControl.Commands.MoveToLevel(level=1, transitionTime=1 << 64, optionsMask=0,
                                                          optionsOverride=0), "x", "NoSuchCluster")


def test_the_tool_api_refuses_the_out_of_range_command():
    home = Home("h", seed=1)
    home.add_room("r", "R")
    home.add_device("lamp", "dimmable_light", "r")
    before = home.snapshot()
    result = call_tool(TwinBackend(home), "execute_command",
                       {"device_id": "lamp", "endpoint_id": 1, "cluster_id": "OnOff",
                        "command_id": "OnWithTimedOff", "args": TIMED_OFF}, Session())
    json.dumps(result)
    assert result["ok"] is False and result["error"]["code"] == "CONSTRAINT_ERROR", result
    assert home.snapshot() == before
