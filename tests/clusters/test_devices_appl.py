"""The device library's types beyond SimuHome's (clusters/devices_appl.py): composition,
identity, and what plugs measure."""
import json

import pytest

from clusters.devices import DEVICE_TYPES, create_device
from clusters.devices_appl import ROOM_KINDS
from clusters.values import to_json
from twin.home import Home

APPL = sorted(ROOM_KINDS)


@pytest.mark.parametrize("key", APPL)
def test_composition_reads_and_has_its_identity(key):
    device = create_device("d", key)
    assert device.endpoint(1).server("Descriptor").read("DeviceTypeList")[0].deviceType \
        == DEVICE_TYPES[key].device_type_id
    assert 0x8140 <= DEVICE_TYPES[key].product_id <= 0x81BF
    assert device.read("BasicInformation", "ProductID") == DEVICE_TYPES[key].product_id
    for server in device.servers():
        for attribute in server.attribute_names():
            json.dumps(to_json(server.read(attribute)))
        json.dumps(server.describe())
    assert ROOM_KINDS[key]


def test_product_ids_are_unique():
    ids = [t.product_id for t in DEVICE_TYPES.values()]
    assert len(ids) == len(set(ids))


def test_plug_meters_its_load_exactly():
    home = Home("h")
    home.add_room("r")
    home.add_device("plug", "dimmable_plug", "r", options={"load_watts": 254})
    plug = home.device("plug")
    assert plug.read("ElectricalPowerMeasurement", "ActivePower") == 0
    plug.invoke("OnOff", "On")
    assert plug.read("ElectricalPowerMeasurement", "ActivePower") == 254_000
    home.advance(3600)
    assert plug.read("ElectricalEnergyMeasurement", "CumulativeEnergyImported").energy == 254_000   # mWh
    plug.invoke("LevelControl", "MoveToLevel", {"level": 127, "transitionTime": 0, "optionsMask": 0,
                                                "optionsOverride": 0})
    assert plug.read("ElectricalPowerMeasurement", "ActivePower") == 127_000
    with pytest.raises(Exception, match="load_watts"):
        home.add_device("bad", "on_off_plug", "r", options={"load_watts": -1})
    assert "bad" not in home.devices


def test_mode_select_and_a_tv_remote():
    from clusters.status import MatterError, Status
    home = Home("h")
    home.add_room("r")
    home.add_device("coffee", "mode_select", "r", options={"labels": ["Espresso", "Lungo"]})
    home.add_device("tv", "tv", "r")
    home.add_device("remote", "video_remote_control", "r", options={"bound_to": ["tv"]})
    coffee = home.device("coffee")
    coffee.invoke("ModeSelect", "ChangeToMode", {"newMode": 1})
    assert coffee.read("ModeSelect", "CurrentMode") == 1
    with pytest.raises(MatterError) as err:
        coffee.invoke("ModeSelect", "ChangeToMode", {"newMode": 2})
    assert err.value.status == Status.CONSTRAINT_ERROR and coffee.read("ModeSelect", "CurrentMode") == 1
    home.press("remote", "toggle")
    assert home.device("tv").read("OnOff", "OnOff")
    with pytest.raises(ValueError, match="accepted: toggle, on, off, brighter, dimmer"):
        home.press("remote", "hue", value=1)
