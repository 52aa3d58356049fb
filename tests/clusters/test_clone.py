"""Clones of real products (clusters/clone.py): round trips, behaviour, stores, home files."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from clusters.clone import (
    AttributeStoreServer,
    DumpError,
    differences,
    export_attributes,
    load_product,
    product_type,
    read_dump,
)
from clusters.devices import DEVICE_TYPES, create_device
from clusters.status import MatterError, Status
from matter_twin.cli import app
from twin.home import Home
from twin.node.values import encode_value
from twin.schema import UserFileError

PLUG = Path(__file__).parent.parent / "data" / "products" / "acme_plug.json"


def _clone(attributes: dict) -> object:
    product = load_product({"attributes": json.loads(json.dumps(attributes))})
    return create_device("clone", product_type("clone", product))


@pytest.mark.parametrize("key", sorted(DEVICE_TYPES))
def test_every_device_type_round_trips(key):
    """A dump of each of our types (exported), cloned and exported again, is the same dump."""
    dump = json.loads(json.dumps(export_attributes(create_device("d", key))))
    clone = _clone(dump)
    assert differences(dump, json.loads(json.dumps(export_attributes(clone)))) == []
    assert json.loads(json.dumps(export_attributes(clone))) == dump


def test_hand_written_product_round_trips_and_every_value_encodes():
    product = read_dump(str(PLUG))
    device = create_device("plug", product_type("acme_plug", product))
    assert export_attributes(device) == product.attributes
    for ep in device.endpoints.values():
        for server in ep.servers.values():
            for name in server.attribute_names():   # what the Interaction Model sends
                encode_value(server.attribute_class(name).attribute_type.Type, server.read(name))


def test_clone_uses_our_behaviour_with_the_products_shape():
    device = create_device("plug", product_type("acme_plug", read_dump(str(PLUG))))
    onoff = device.endpoint(1).server("OnOff")
    assert not isinstance(onoff, AttributeStoreServer)
    device.invoke("OnOff", "Toggle", {}, 1)
    assert device.read("OnOff", "OnOff", 1) is False
    assert onoff.read("AttributeList") == [0, 16387, 65528, 65529, 65530, 65531, 65532, 65533]
    # The product accepts Off/On/Toggle only; StartUpOnOff (stored beside ours) is writable.
    with pytest.raises(MatterError) as err:
        device.invoke("OnOff", "OffWithEffect", {"effectIdentifier": 0, "effectVariant": 0}, 1)
    assert err.value.status == Status.UNSUPPORTED_COMMAND
    device.write("OnOff", "StartUpOnOff", 1, 1)
    assert export_attributes(device)["1/6/16387"] == 1
    with pytest.raises(MatterError) as err:
        device.write("OnOff", "StartUpOnOff", 7, 1)
    assert err.value.status == Status.CONSTRAINT_ERROR
    # BasicInformation is ours: its constraints apply to the product's values too.
    with pytest.raises(MatterError) as err:
        device.write("BasicInformation", "NodeLabel", "x" * 40, 0)
    assert err.value.status == Status.CONSTRAINT_ERROR
    assert device.read("BasicInformation", "ProductURL", 0) == "https://acme.example/plug"


def test_stores_follow_the_data_model():
    device = create_device("plug", product_type("acme_plug", read_dump(str(PLUG))))
    # Groups has a server of ours (clusters/scenes.py): the product's AddGroup behaves as ours does.
    groups = device.endpoint(1).server("Groups")
    assert not isinstance(groups, AttributeStoreServer)
    assert device.invoke("Groups", "AddGroup", {"groupID": 1, "groupName": "x"}, 1).status == Status.SUCCESS
    acl = device.endpoint(0).server("AccessControl")   # the node's own server lives in twin/node
    assert isinstance(acl, AttributeStoreServer)
    with pytest.raises(MatterError) as err:
        device.invoke("AccessControl", 0, {}, 0)
    assert err.value.status == Status.UNSUPPORTED_COMMAND
    with pytest.raises(MatterError) as err:
        device.write("AccessControl", "SubjectsPerAccessControlEntry", 5, 0)
    assert err.value.status == Status.UNSUPPORTED_WRITE
    assert "Acl" in acl.writable and "SubjectsPerAccessControlEntry" not in acl.writable
    with pytest.raises(MatterError) as err:
        device.write("AccessControl", "Acl", [{"privilege": 9, "authMode": 2, "subjects": None,
                                               "targets": None, "fabricIndex": 1}], 0)
    assert err.value.status == Status.CONSTRAINT_ERROR
    seen = []
    acl.listeners.append(lambda server, name: seen.append(name))
    device.write("AccessControl", "Acl", [], 0)
    assert seen == ["Acl"] and export_attributes(device)["0/31/0"] == []
    vendor = device.endpoint(1).server(319486977)
    assert vendor.read(1) == {"0": 5, "1": "AAEC"}
    with pytest.raises(MatterError) as err:
        vendor.write(0, "other")
    assert err.value.status == Status.UNSUPPORTED_WRITE
    # An enum value this data model does not know is kept, as the product reported it.
    assert export_attributes(device)["1/3/1"] == 9


def test_bad_dumps_are_one_line_errors(tmp_path):
    cases = {"not an object": [], "no attributes": {"node_id": 1},
             "bad key": {"attributes": {"0/x/1": 1}},
             "no root": {"attributes": {"1/29/0": []}}}
    for _, data in cases.items():
        with pytest.raises(DumpError) as err:
            load_product(data, "d.json")
        assert "\n" not in str(err.value) and str(err.value).startswith("d.json: ")
    diagnostics = {"home_assistant": {}, "data": {"server": {}, "node": json.loads(PLUG.read_text())}}
    assert load_product(diagnostics).label == "Acme Acme Plug Mini"


def test_home_file_products_snapshot_restore_and_fork(tmp_path):
    (tmp_path / "plug.json").write_text(PLUG.read_text())
    home_file = tmp_path / "home.yaml"
    spec = {"name": "h", "products": {"acme_plug": "plug.json"},
            "rooms": [{"id": "r", "devices": [{"id": "p", "type": "acme_plug", "name": "Desk plug",
                                               "attributes": {"1/OnOff/OnOff": False}}]}]}
    home_file.write_text(yaml.safe_dump(spec))
    home = Home.load(home_file)
    device = home.device("p")
    assert device.read("BasicInformation", "NodeLabel", 0) == "Desk plug"
    assert device.read("OnOff", "OnOff", 1) is False
    snap = json.dumps(home.snapshot(), sort_keys=True)
    assert json.dumps(Home.restore(json.loads(snap)).snapshot(), sort_keys=True) == snap
    assert json.dumps(home.fork().snapshot(), sort_keys=True) == snap
    spec["rooms"][0]["devices"][0]["type"] = "acme_plugg"
    home_file.write_text(yaml.safe_dump(spec))
    with pytest.raises(UserFileError, match=r"rooms\[0\]\.devices\[0\]\.type: unknown device type 'acme_plugg'"):
        Home.load(home_file)
    spec["rooms"][0]["devices"][0]["type"] = "acme_plug"
    spec["products"] = {"acme_plug": "missing.json"}
    home_file.write_text(yaml.safe_dump(spec))
    with pytest.raises(UserFileError, match=r"products\.acme_plug: .*missing.json: cannot read"):
        Home.load(home_file)


def test_cli_clone_and_export(tmp_path, capsys):
    runner = CliRunner()
    out = tmp_path / "light.json"
    result = runner.invoke(app, ["device", "export", "kitchen_light", "-o", str(out)])
    assert result.exit_code == 0, result.output
    product_file = tmp_path / "product.json"
    result = runner.invoke(app, ["device", "clone", str(out), "-o", str(product_file), "--key", "lamp"])
    assert result.exit_code == 0, result.output
    assert "do not read back" not in result.output
    assert json.loads(product_file.read_text())["attributes"] == json.loads(out.read_text())["attributes"]
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(SystemExit) as exit_:
        app(["device", "clone", str(tmp_path / "bad.json")], prog_name="twin")
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "bad.json: not JSON" in err and err.count("\n") == 1
    # a key a built-in type uses would be refused by every home: refused here, nothing written
    taken = tmp_path / "dryer.json"
    with pytest.raises(SystemExit) as exit_:
        app(["device", "clone", str(out), "-o", str(taken), "--key", "laundry_dryer"], prog_name="twin")
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "'laundry_dryer' is a built-in device type" in err and not taken.exists()


# ---- clones act on the room as our devices of their kind do ------------------------------
def _hand_written(vendor: str, name: str, endpoint1: dict) -> dict:
    """A product dump: the plug's endpoint 0 renamed, and `endpoint1` ("cluster/attribute")."""
    root = {k: v for k, v in json.loads(PLUG.read_text())["attributes"].items() if k.startswith("0/")}
    root["0/40/1"], root["0/40/3"] = vendor, name
    return {"attributes": {**root, **{f"1/{key}": value for key, value in endpoint1.items()}}}


def _cluster(cluster_id: int, values: dict, features: int = 0, revision: int = 1,
             accepted: list | None = None) -> dict:
    ids = sorted(int(a) for a in values) + [65528, 65529, 65531, 65532, 65533]
    out = {f"{cluster_id}/{a}": v for a, v in values.items()}
    out.update({f"{cluster_id}/65528": [], f"{cluster_id}/65529": accepted or [],
                f"{cluster_id}/65531": ids, f"{cluster_id}/65532": features, f"{cluster_id}/65533": revision})
    return out


def _descriptor(device_types: list, servers: list) -> dict:
    return _cluster(29, {"0": [{"0": t, "1": r} for t, r in device_types], "1": servers, "2": [], "3": []},
                    revision=2)


IDENTIFY = _cluster(3, {"0": 0, "1": 2}, revision=4, accepted=[0, 64])
ON_OFF = _cluster(6, {"0": False}, revision=6, accepted=[0, 1, 2])
# FanControl with Auto: Off/Low/Med/High/Auto (sequence 2), PercentSetting/PercentCurrent 0.
FAN_AUTO = _cluster(514, {"0": 0, "1": 2, "2": 0, "3": 0}, features=2, revision=4)

# An air purifier as some sell it: no OnOff (the fan's Off mode is its power), a HEPA filter.
PURIFIER = _hand_written("Brisa", "AirPro 3", {
    **_descriptor([(0x2D, 2)], [3, 29, 113, 514]), **IDENTIFY, **FAN_AUTO,
    **_cluster(113, {"0": 100, "1": 1, "2": 0, "3": True, "4": None}, features=3, accepted=[0])})
# A humidifier: Matter has no such type, so a Fan that measures humidity, named for what it does.
HUMIDIFIER = _hand_written("Nimbus", "Mist 5 Humidifier", {
    **_descriptor([(0x2B, 3), (0x307, 2)], [3, 6, 29, 514, 1029]), **IDENTIFY, **ON_OFF, **FAN_AUTO,
    **_cluster(1029, {"0": None, "1": 0, "2": 10000}, revision=3)})


@pytest.mark.parametrize("dump, ours, variable", [(PURIFIER, "air_purifier", "pm10"),
                                                  (HUMIDIFIER, "humidifier", "humidity")])
def test_cloned_purifier_and_humidifier_move_the_room_like_ours(dump, ours, variable):
    home = Home(seed=1)
    for room in ("with_ours", "with_clone", "with_idle_clone", "empty"):
        home.add_room(room, humidity=40.0, pm10=60.0)
    home.add_product("product", load_product(dump))
    builtin = home.add_device("builtin", ours, "with_ours")
    clone = home.add_device("clone", "product", "with_clone")
    home.add_device("idle_clone", "product", "with_idle_clone")
    fan = clone.endpoint(1).server("FanControl")
    assert not isinstance(fan, AttributeStoreServer)   # our FanControl, with the product's features
    for device in (builtin, clone):
        if device.endpoint(1).servers.get(6) is not None:
            device.invoke("OnOff", "On", {}, 1)
        device.write("FanControl", "PercentSetting", 100, 1)
    assert fan.read("PercentCurrent") == 100
    start = home.rooms["with_ours"].state()[variable]
    home.advance(15 * 60)
    moved = home.rooms["with_ours"].state()[variable]
    assert abs(moved - start) > 5                                                       # ours acts ...
    assert home.rooms["with_clone"].state()[variable] == pytest.approx(moved, abs=1e-9)  # ... the clone alike
    idle = home.rooms["with_idle_clone"].state()[variable]
    assert idle == pytest.approx(home.rooms["empty"].state()[variable], abs=1e-9)   # one at rest does not


def test_a_fan_named_for_nothing_moves_no_humidity():
    plain = json.loads(json.dumps(HUMIDIFIER))
    plain["attributes"]["0/40/3"] = "Breeze Tower"
    home = Home(seed=1)
    home.add_room("r", humidity=40.0)
    home.add_product("tower", load_product(plain))
    device = home.add_device("t", "tower", "r")
    device.invoke("OnOff", "On", {}, 1)
    device.write("FanControl", "PercentSetting", 100, 1)
    assert device.read("FanControl", "PercentCurrent", 1) == 100
    assert [t["source"] for t in home.rooms["r"].terms()["humidity"]] == ["ambient"]


def test_a_cloned_colour_light_lights_the_room_as_a_dimmable_one():
    dump = json.loads(json.dumps(export_attributes(create_device("d", "dimmable_light"))))
    dump["1/29/0"] = [{"0": 0x010D, "1": 4}]   # an Extended Color Light, dimmable as ours is
    dump["0/40/3"] = "Hue-ish Color Bulb"
    home = Home(seed=1)
    home.add_room("r", daylight_lux=100.0)
    home.add_product("bulb", load_product({"attributes": dump}))
    bulb = home.add_device("b", "bulb", "r")
    assert home.rooms["r"].illuminance == 100.0
    bulb.invoke("OnOff", "On", {}, 1)
    assert home.rooms["r"].illuminance == pytest.approx(100.0 + home.coefficients["light_lux"]["dimmable_light"])


def test_writable_flags_read_from_the_data_model_file_match_the_imported_tables():
    # The base install reads CHIPClusters.py without importing it (its import needs the SDK's
    # controller); with the SDK present both views must agree cluster for cluster.
    from chip.clusters.CHIPClusters import ChipClusters

    from clusters.clone import _writable_table
    imported = {info["clusterId"]: frozenset(a for a, m in info["attributes"].items() if m.get("writable"))
                for info in vars(ChipClusters).values() if isinstance(info, dict) and "clusterId" in info}
    assert len(imported) > 100
    assert _writable_table() == imported


@pytest.mark.parametrize("key, cluster", [("door_lock", "DoorLock"), ("smoke_co_alarm", "SmokeCoAlarm"),
                                          ("occupancy_sensor", "OccupancySensing"),
                                          ("water_leak_detector", "BooleanStateConfiguration")])
def test_a_cloned_lock_or_sensor_is_our_server(key, cluster):
    """The product's values, our behaviour: a cloned lock takes a user and a PIN and locks and
    unlocks with it (a dump carries no users); a cloned sensor's server is ours."""
    from chip.clusters import Objects as Clusters

    from clusters.door_lock import DoorLockServer
    from clusters.sensors import SmokeCoAlarmServer
    dump = json.loads(json.dumps(export_attributes(create_device("d", key))))
    clone = _clone(dump)
    server = clone.endpoint(1).server(cluster)
    assert type(server).__name__ == f"Cloned{type(create_device('d', key).endpoint(1).server(cluster)).__name__}"
    assert json.loads(json.dumps(export_attributes(clone))) == dump
    if key == "door_lock":
        assert isinstance(server, DoorLockServer)
        DL = Clusters.DoorLock
        server.invoke("SetUser", {"operationType": 0, "userIndex": 1, "userName": "ann", "userUniqueID": None,
                                  "userStatus": None, "userType": None, "credentialRule": None})
        answer = server.invoke("SetCredential", {
            "operationType": 0,
            "credential": {"credentialType": DL.Enums.CredentialTypeEnum.kPin, "credentialIndex": 1},
            "credentialData": b"1234", "userIndex": 1, "userStatus": None, "userType": None})
        assert answer.status == DL.Enums.DlStatus.kSuccess
        server.invoke("UnlockDoor", {"PINCode": b"1234"})
        assert server.read("LockState") == DL.Enums.DlLockState.kUnlocked
    if key == "smoke_co_alarm":
        assert isinstance(server, SmokeCoAlarmServer)
        server.sense_smoke(2)
        assert server.read("ExpressedState") == Clusters.SmokeCoAlarm.Enums.ExpressedStateEnum.kSmokeAlarm


@pytest.mark.parametrize("key, calls", [
    ("robot_vacuum_cleaner", [("ServiceArea", "SelectAreas", {"newAreas": [2]}),
                              ("RvcRunMode", "ChangeToMode", {"newMode": 1}),
                              ("RvcOperationalState", "Pause", {}), ("RvcOperationalState", "Resume", {}),
                              ("RvcOperationalState", "GoHome", {}),
                              ("ServiceArea", "SelectAreas", {"newAreas": [99]})]),
    ("thermostat", [("Thermostat", "SetpointRaiseLower", {"mode": 0, "amount": 10})]),
    ("extended_color_light", [
        ("OnOff", "On", {}),
        ("LevelControl", "MoveToLevel", {"level": 100, "transitionTime": 0, "optionsMask": 0, "optionsOverride": 0}),
        ("ColorControl", "MoveToHueAndSaturation", {"hue": 120, "saturation": 200, "transitionTime": 0,
                                                    "optionsMask": 0, "optionsOverride": 0}),
        ("ColorControl", "MoveToColorTemperature", {"colorTemperatureMireds": 300, "transitionTime": 0,
                                                    "optionsMask": 0, "optionsOverride": 0})]),
])
def test_clones_answer_commands_as_the_built_ins_do(key, calls):
    """A clone of a robot vacuum (with its service areas), thermostat and colour light gets our
    cluster servers configured from the dump, so each command answers and changes state exactly
    as on the built-in device the dump came from."""
    ours = create_device("a", key)
    clone = _clone(json.loads(json.dumps(export_attributes(ours))))
    assert not any(isinstance(s, AttributeStoreServer) for ep in clone.endpoints.values()
                   for cid, s in ep.servers.items() if cid in (0x0150, 0x0054, 0x0061, 0x0201, 0x0300))
    for cluster, command, args in calls:
        assert repr(clone.invoke(cluster, command, args, 1)) == repr(ours.invoke(cluster, command, args, 1))
    assert export_attributes(clone) == export_attributes(ours)
