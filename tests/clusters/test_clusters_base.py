"""The cluster server base, the JSON<->Matter value bridge, OnOff and composition."""
import json

import pytest
from chip.clusters import Objects as Clusters
from chip.clusters.Types import NullValue

from clusters.devices import create_device
from clusters.onoff import OnOffServer
from clusters.status import MatterError, Status
from clusters.values import from_json, to_json


class FakeClock:
    tick = 0


def light():
    server = OnOffServer(lighting=True)
    server.clock = FakeClock()
    return server


def test_values_round_trip_struct_and_nullable():
    cmd = from_json(Clusters.LevelControl.Commands.MoveToLevel,
                    {"level": 10, "transitionTime": None, "optionsMask": 0, "optionsOverride": 0})
    assert cmd.transitionTime is NullValue
    assert to_json(cmd) == {"level": 10, "transitionTime": None, "optionsMask": 0, "optionsOverride": 0}
    assert json.dumps(to_json([cmd]))


@pytest.mark.parametrize("typ,data,status", [
    (Clusters.FanControl.Enums.FanModeEnum, 42, Status.CONSTRAINT_ERROR),
    (Clusters.FanControl.Enums.FanModeEnum, "fast", Status.INVALID_DATA_TYPE),
    (bool, 1, Status.INVALID_DATA_TYPE),
    (Clusters.OnOff.Bitmaps.Feature, 0x80, Status.CONSTRAINT_ERROR),
])
def test_values_reject_bad_input(typ, data, status):
    with pytest.raises(MatterError) as err:
        from_json(typ, data, "x")
    assert err.value.status == status
    assert "x" in err.value.message


def test_command_field_errors_name_the_field():
    with pytest.raises(MatterError) as err:
        from_json(Clusters.LevelControl.Commands.MoveToLevel, {"levl": 3}, "MoveToLevel")
    assert err.value.status == Status.INVALID_COMMAND and "levl" in err.value.message
    with pytest.raises(MatterError) as err:
        from_json(Clusters.LevelControl.Commands.MoveToLevel, {"level": 3}, "MoveToLevel")
    assert "missing field" in err.value.message


def test_global_attributes():
    s = light()
    assert s.read("ClusterRevision") == 6
    assert s.read("FeatureMap") == int(Clusters.OnOff.Bitmaps.Feature.kLighting)
    ids = s.read("AttributeList")
    assert Clusters.OnOff.Attributes.OnTime.attribute_id in ids
    assert Clusters.OnOff.Attributes.AttributeList.attribute_id in ids
    assert s.read("AcceptedCommandList") == [0, 1, 2, 0x40, 0x41, 0x42]
    assert s.read("GeneratedCommandList") == []
    plain = OnOffServer()
    assert Clusters.OnOff.Attributes.OnTime.attribute_id not in plain.read("AttributeList")


def test_attribute_errors():
    s = light()
    with pytest.raises(MatterError) as err:
        s.read("Brightness")
    assert err.value.status == Status.UNSUPPORTED_ATTRIBUTE
    with pytest.raises(MatterError) as err:
        s.write("OnOff", True)
    assert err.value.status == Status.UNSUPPORTED_WRITE
    with pytest.raises(MatterError) as err:
        s.write("OnTime", 70000)
    assert err.value.status == Status.CONSTRAINT_ERROR
    with pytest.raises(MatterError) as err:
        s.invoke("Blink")
    assert err.value.status == Status.UNSUPPORTED_COMMAND
    s.write("OnTime", 5)
    assert s.read(Clusters.OnOff.Attributes.OnTime.attribute_id) == 5


def test_onoff_commands_and_data_version():
    s = light()
    changes = []
    s.listeners.append(lambda server, name: changes.append(name))
    s.invoke("On")
    assert s.read("OnOff") is True
    version = s.data_version
    s.invoke("On")  # no change, no new DataVersion
    assert s.data_version == version
    s.invoke(2)  # Toggle by id
    assert s.read("OnOff") is False
    assert "OnOff" in changes


def test_on_with_timed_off_counts_down_in_ticks():
    s = light()
    s.invoke("OnWithTimedOff", {"onOffControl": 0, "onTime": 30, "offWaitTime": 0})
    assert s.next_event_tick() == 30
    s.clock.tick = 12
    assert s.read("OnTime") == 18 and s.read("OnOff") is True
    s.clock.tick = 30
    s.advance_to(30)
    assert s.read("OnOff") is False and s.read("OnTime") == 0
    assert s.next_event_tick() is None


def test_state_round_trip():
    s = light()
    s.invoke("OnWithTimedOff", {"onOffControl": 0, "onTime": 30, "offWaitTime": 5})
    copy = OnOffServer(lighting=True)
    copy.load_state(json.loads(json.dumps(s.state())))
    assert copy.state() == s.state()


def test_device_composition_and_descriptor():
    device = create_device("lamp", "on_off_light")
    root = device.endpoint(0)
    assert root.server("Descriptor").read("PartsList") == [1]
    dtl = device.endpoint(1).server(Clusters.Descriptor).read("DeviceTypeList")
    assert dtl[0].deviceType == 0x0100
    device.invoke("OnOff", "On")
    assert device.read("OnOff", "OnOff") is True
    with pytest.raises(MatterError) as err:
        device.endpoint(7)
    assert err.value.status == Status.UNSUPPORTED_ENDPOINT
    with pytest.raises(MatterError) as err:
        device.locate("Thermostat")
    assert err.value.status == Status.UNSUPPORTED_CLUSTER


def test_unknown_device_type():
    with pytest.raises(MatterError) as err:
        create_device("x", "toaster")
    assert "on_off_light" in err.value.message
