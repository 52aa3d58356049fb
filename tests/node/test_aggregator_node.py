"""Bridge mode: the home as one Matter Bridge node. Descriptor trees, shared servers with the
tools, rules through the bridge, BridgedDeviceBasicInformation, run-time add/remove with stable
ids, the IM codec on every bridged attribute, and the real IM server serving the bridge."""
from __future__ import annotations

import json

import pytest
from chip.clusters import Objects as C
from test_node_im_matterjs import ask, check_reports, js  # noqa: F401 - js is a fixture
from test_node_im_server import Link, read, subscribe, values

from bridge.tools import Session, call_tool
from bridge.twin_backend import TwinBackend
from clusters.aggregator import (
    AGGREGATOR,
    AGGREGATOR_ENDPOINT,
    BRIDGE_PRODUCT_ID,
    BRIDGED_NODE,
    Bridge,
    BridgedEndpoint,
)
from clusters.devices import DEVICE_TYPES, NODE_ONLY_TYPES, create_device
from clusters.status import MatterError, Status
from matter_protocol.interaction import (
    AttributeData,
    AttributePath,
    CommandData,
    CommandPath,
    InvokeRequest,
    Opcode,
    SubscribeResponse,
    WriteRequest,
)
from twin.aggregator import BRIDGE_ID, build_bridge
from twin.home import Home
from twin.node.values import encode_value
from twin.room_sensors import room_sensor_id

ON_OFF, DESC, BDBI = C.OnOff.id, C.Descriptor.id, C.BridgedDeviceBasicInformation.id


def make_home(seed=5):
    home = Home("bridged home", seed=seed)
    home.add_room("living_room", "Living Room", temperature=27.0, daylight_lux=100.0)
    home.add_room("kitchen", "Kitchen")
    home.add_device("lamp", "dimmable_light", "living_room", name="Reading Lamp")
    home.add_device("ac", "air_conditioner", "living_room")
    home.add_device("tv", "tv", "living_room")
    home.add_device("fridge", "refrigerator", "kitchen")
    home.add_device("heat_pump", "heat_pump", "kitchen")
    return home


@pytest.fixture
def home():
    return make_home()


@pytest.fixture
def bridge(home):
    return build_bridge(home)


def tool(home, name, args, ok=True):
    result = call_tool(TwinBackend(home), name, args, Session())
    json.dumps(result)
    assert result["ok"] is ok, result
    return result


def types_of(bridge, ep):
    return [(d.deviceType, d.revision) for d in bridge.read("Descriptor", "DeviceTypeList", ep)]


# ---- composition ------------------------------------------------------------------------------
def test_endpoint_layout_and_descriptor_trees(home, bridge):
    ids = {d: bridge.endpoint_ids(d) for d in bridge.bridged}
    assert list(ids) == ["lamp", "ac", "tv", "fridge", "heat_pump", room_sensor_id("living_room"),
                         room_sensor_id("kitchen")]
    # the fridge is a fridge-freezer: body, fridge cabinet, freezer cabinet
    assert ids == {"lamp": [2], "ac": [3], "tv": [4], "fridge": [5, 6, 7], "heat_pump": [8, 9],
                   "sensors@living_room": [10, 11, 12, 13], "sensors@kitchen": [14, 15, 16, 17]}
    assert bridge.read("Descriptor", "TagList", 7)[0].tag == 1                        # tags cross the bridge
    bridged = list(range(2, 18))
    assert types_of(bridge, 0) == [(0x0016, 3)]
    assert bridge.read("Descriptor", "PartsList", 0) == [1, *bridged]
    assert types_of(bridge, AGGREGATOR_ENDPOINT) == [AGGREGATOR]
    assert bridge.read("Descriptor", "ServerList", AGGREGATOR_ENDPOINT) == [DESC]
    assert bridge.read("Descriptor", "PartsList", AGGREGATOR_ENDPOINT) == bridged      # full family
    for device_id, (top, *children) in ids.items():
        device = bridge.bridged[device_id]
        sources = [e for e in sorted(device.endpoints) if e != 0]
        assert types_of(bridge, top) == device.endpoints[sources[0]].device_types + [BRIDGED_NODE]
        assert BDBI in bridge.read("Descriptor", "ServerList", top)
        assert bridge.read("Descriptor", "PartsList", top) == children                 # tree under the top
        for child, source in zip(children, sources[1:]):
            assert types_of(bridge, child) == device.endpoints[source].device_types
            assert BDBI not in bridge.read("Descriptor", "ServerList", child)
            assert bridge.read("Descriptor", "PartsList", child) == []
        for ep_id, source in zip([top, *children], sources):
            expected = set(device.endpoints[source].servers) | ({BDBI} if ep_id == top else set())
            assert set(bridge.read("Descriptor", "ServerList", ep_id)) == expected
    # The fridge's cabinet and the heat pump's thermostat stay under their device.
    assert types_of(bridge, 6) == [(0x0071, 3)] and types_of(bridge, 9) == [(0x0301, 4)]
    assert bridge.read("BasicInformation", "ProductID", 0) == BRIDGE_PRODUCT_ID
    assert bridge.type.device_type_id == 0x000E and bridge.id == BRIDGE_ID


def test_bridged_endpoints_hold_the_devices_own_servers(home, bridge):
    lamp = home.device("lamp")
    ep = bridge.endpoints[2]
    assert isinstance(ep, BridgedEndpoint) and ep.source is lamp.endpoints[1]
    assert bridge.endpoint_of(lamp.locate("OnOff")) == 2 and bridge.endpoint_of(lamp.endpoint(0).servers[DESC]) is None
    for cluster_id, server in lamp.endpoints[1].servers.items():
        if cluster_id == DESC:
            assert ep.servers[DESC] is not server and ep.servers[DESC].endpoint is ep
        else:
            assert ep.servers[cluster_id] is server and server.endpoint is lamp.endpoints[1]
    # Sibling lookups and the home still work on the same objects.
    assert lamp.locate("LevelControl").sibling(C.OnOff) is ep.servers[ON_OFF]


def test_building_the_bridge_leaves_the_home_unchanged():
    home = make_home()
    before = json.dumps(home.snapshot(), sort_keys=True)
    rng = home.rng.getstate()
    bridge = build_bridge(home)
    assert home.rng.getstate() == rng and json.dumps(home.snapshot(), sort_keys=True) == before
    assert set(home.devices) == {"lamp", "ac", "tv", "fridge", "heat_pump"}
    again = build_bridge(make_home())
    assert bridge.read("BasicInformation", "UniqueID", 0) == again.read("BasicInformation", "UniqueID", 0)


# ---- one state: bridge and tools ---------------------------------------------------------------
def test_a_command_through_the_bridge_is_seen_by_the_tools_and_vice_versa(home, bridge):
    lamp = {"device.id": "lamp", "cluster.id": "OnOff", "attribute.id": "OnOff"}
    bridge.invoke("OnOff", "On", endpoint_id=2)
    assert tool(home, "get_attribute", lamp)["value"] is True
    assert tool(home, "get_room_states", {"room.id": "living_room"})["illuminance"] == 500
    tool(home, "execute_command", {"device.id": "lamp", "endpoint.id": 1, "cluster.id": "OnOff",
                                   "command.id": "Off", "args": {}})
    assert bridge.read("OnOff", "OnOff", 2) is False
    bridge.write("LevelControl", "OnLevel", 77, 2)
    assert tool(home, "get_attribute", {"device.id": "lamp", "cluster.id": "LevelControl",
                                        "attribute.id": "OnLevel"})["value"] == 77
    # A child endpoint: the fridge cabinet's setpoint, written through bridge endpoint 6.
    bridge.invoke("TemperatureControl", "SetTemperature", {"targetTemperature": 300}, 6)
    assert home.device("fridge").read("TemperatureControl", "TemperatureSetpoint", 2) == 300
    # Room sensors over the bridge read the room.
    assert bridge.read("TemperatureMeasurement", "MeasuredValue", 10) == 2700
    home.advance(60)
    room = home.rooms["living_room"]
    assert bridge.read("TemperatureMeasurement", "MeasuredValue", 10) == round(room.temperature * 100)


def test_rules_apply_through_the_bridge(home, bridge):
    with pytest.raises(MatterError) as e:
        bridge.write("FanControl", "PercentSetting", 50, 3)     # the AC is off
    assert e.value.status == Status.INVALID_IN_STATE and "ac" in str(e.value)
    assert home.device("ac").read("FanControl", "PercentSetting") != 50
    with pytest.raises(MatterError) as e:
        # The TV is off: no channel change.
        bridge.invoke("Channel", "ChangeChannelByNumber", {"majorNumber": 7, "minorNumber": 0}, 4)
    assert e.value.status == Status.INVALID_IN_STATE
    bridge.invoke("OnOff", "On", endpoint_id=3)
    bridge.write("FanControl", "PercentSetting", 50, 3)
    assert home.device("ac").read("FanControl", "PercentSetting") == 50


def test_bridge_errors_name_what_is_wrong(bridge):
    for call, status in [(lambda: bridge.read("OnOff", "OnOff", 99), Status.UNSUPPORTED_ENDPOINT),
                         (lambda: bridge.read("Thermostat", "LocalTemperature", 2), Status.UNSUPPORTED_CLUSTER),
                         (lambda: bridge.write("OnOff", "OnOff", True, 2), Status.UNSUPPORTED_WRITE)]:
        with pytest.raises(MatterError) as e:
            call()
        assert e.value.status == status


# ---- BridgedDeviceBasicInformation -----------------------------------------------------------
def test_bridged_basic_information_mirrors_the_device(home, bridge):
    lamp = home.device("lamp")
    for name in ("VendorName", "VendorID", "ProductName", "NodeLabel", "SerialNumber", "UniqueID", "Reachable",
                 "SoftwareVersion", "HardwareVersionString"):
        assert bridge.read("BridgedDeviceBasicInformation", name, 2) == lamp.read("BasicInformation", name, 0)
    assert bridge.read("BridgedDeviceBasicInformation", "NodeLabel", 2) == "Reading Lamp"
    assert bridge.read("BridgedDeviceBasicInformation", "ProductName", 5) == "Twin Refrigerator"
    assert bridge.read("BridgedDeviceBasicInformation", "ProductName", 10) == "Twin Room Sensor"
    assert bridge.read("BridgedDeviceBasicInformation", "ClusterRevision", 2) == 3
    bdbi = bridge.endpoints[2].servers[BDBI]
    assert bdbi.state()["attributes"] == {}   # nothing stored
    # Renamed on the device: the bridge shows it, with a new DataVersion and a listener call.
    heard, version = [], bdbi.data_version
    bdbi.listeners.append(lambda server, name: heard.append((server, name)))
    lamp.write("BasicInformation", "NodeLabel", "Desk Lamp")
    assert bridge.read("BridgedDeviceBasicInformation", "NodeLabel", 2) == "Desk Lamp"
    assert bdbi.data_version != version and heard == [(bdbi, "NodeLabel")]
    # Renamed through the bridge: the device's own BasicInformation changes.
    bridge.write("BridgedDeviceBasicInformation", "NodeLabel", "Sofa Lamp", 2)
    assert lamp.read("BasicInformation", "NodeLabel", 0) == "Sofa Lamp"
    with pytest.raises(MatterError) as e:
        bridge.write("BridgedDeviceBasicInformation", "NodeLabel", "x" * 33, 2)
    assert e.value.status == Status.CONSTRAINT_ERROR and lamp.read("BasicInformation", "NodeLabel", 0) == "Sofa Lamp"
    with pytest.raises(MatterError) as e:
        bridge.write("BridgedDeviceBasicInformation", "VendorName", "Acme", 2)
    assert e.value.status == Status.UNSUPPORTED_WRITE


def test_reachable_change_emits_reachable_changed(home, bridge):
    events = []
    bdbi = bridge.endpoints[2].servers[BDBI]
    bdbi.event_sink = lambda server, event: events.append((server, event))
    home.device("lamp").endpoint(0).server("BasicInformation").set("Reachable", False)
    assert bridge.read("BridgedDeviceBasicInformation", "Reachable", 2) is False
    assert events == [(bdbi, C.BridgedDeviceBasicInformation.Events.ReachableChanged(reachableNewValue=False))]


# ---- run-time composition ----------------------------------------------------------------------
def test_add_and_remove_update_parts_list_with_stable_never_reused_ids(home, bridge):
    aggregator = bridge.endpoints[AGGREGATOR_ENDPOINT].servers[DESC]
    heard, version = [], aggregator.data_version
    aggregator.listeners.append(lambda server, name: heard.append(name))
    recomposed = []
    bridge.composition_listeners.append(recomposed.append)
    fan = home.add_device("fan", "fan", "kitchen")
    assert bridge.add_device(fan) == [18]
    assert bridge.read("Descriptor", "PartsList", AGGREGATOR_ENDPOINT) == list(range(2, 19))
    assert bridge.read("Descriptor", "PartsList", 0) == list(range(1, 19))
    assert heard == ["PartsList"] and aggregator.data_version != version and recomposed == [bridge]
    before = {d: bridge.endpoint_ids(d) for d in bridge.bridged if d != "fridge"}
    bridge.remove_device("fridge")
    assert not {5, 6, 7} & set(bridge.endpoints)
    assert bridge.read("Descriptor", "PartsList", AGGREGATOR_ENDPOINT) == [2, 3, 4, *range(8, 19)]
    assert {d: bridge.endpoint_ids(d) for d in bridge.bridged} == before     # nobody else moved
    assert bridge.add_device(home.device("fridge")) == [19, 20, 21]           # 5, 6, 7 are not reused
    assert bridge.read("Descriptor", "PartsList", 19) == [20, 21]
    with pytest.raises(MatterError) as e:
        bridge.add_device(fan)
    assert e.value.status == Status.CONSTRAINT_ERROR
    with pytest.raises(MatterError) as e:
        bridge.remove_device("toaster")
    assert e.value.status == Status.NOT_FOUND
    with pytest.raises(MatterError) as e:
        bridge.read("OnOff", "OnOff", 5)
    assert e.value.status == Status.UNSUPPORTED_ENDPOINT


def test_removal_leaves_no_listener_behind(home, bridge):
    lamp = home.device("lamp")
    onoff, basic = lamp.locate("OnOff"), lamp.endpoint(0).server("BasicInformation")
    counts = len(onoff.listeners), len(basic.listeners)
    bridge.remove_device("lamp")
    # The bridge adds no listener to borrowed servers; its BDBI's one on BasicInformation goes.
    assert (len(onoff.listeners), len(basic.listeners)) == (counts[0], counts[1] - 1)
    assert bridge.endpoint_of(onoff) is None
    lamp.invoke("OnOff", "On")   # the device keeps working for the home
    assert home.rooms["living_room"].illuminance == 500


def test_allocation_keeps_ids_across_a_restart(home, bridge):
    bridge.remove_device("tv")
    bridge.add_device(home.add_device("fan", "fan", "kitchen"))
    saved = json.loads(json.dumps(bridge.allocation()))
    restarted = build_bridge(home, allocation=saved)
    kept = {d: restarted.endpoint_ids(d) for d in restarted.bridged if d != "tv"}
    assert kept == {d: bridge.endpoint_ids(d) for d in bridge.bridged}
    # The TV is still in the home, so it is bridged again, on a fresh id (never its old 4).
    assert restarted.endpoint_ids("tv") == [saved["next_endpoint"]] == [19]
    assert restarted.add_device(create_device("lamp2", "on_off_light")) == [20]


def test_a_saved_allocation_without_next_endpoint_still_never_reuses_ids(home):
    bridge = build_bridge(home, room_sensors=False, allocation={"endpoints": {"tv": [40], "lamp": [30]}})
    assert bridge.endpoint_ids("lamp") == [30] and bridge.endpoint_ids("tv") == [40]
    assert bridge.endpoint_ids("ac") == [41]
    bridge.remove_device("tv")
    assert bridge.add_device(create_device("lamp2", "on_off_light")) == [47]   # fridge 42-44, heat pump 45-46


def test_only_devices_can_be_bridged_and_failures_change_nothing(home, bridge):
    with pytest.raises(MatterError):
        bridge.add_device("lamp")
    with pytest.raises(MatterError):
        bridge.add_device(bridge)
    headless = create_device("headless", "on_off_light")
    del headless.endpoints[0]                 # no BasicInformation to mirror
    before = (sorted(bridge.endpoints), bridge.allocation())
    with pytest.raises(MatterError) as e:
        bridge.add_device(headless)
    assert e.value.status == Status.UNSUPPORTED_ENDPOINT
    assert (sorted(bridge.endpoints), bridge.allocation()) == before


# ---- the Matter side ---------------------------------------------------------------------------
def test_every_attribute_of_every_bridged_endpoint_encodes(home, bridge):
    count = 0
    for ep_id, ep in bridge.endpoints.items():
        for server in ep.servers.values():
            for name in server.attribute_names():
                typ = server.attribute_class(name).attribute_type.Type
                assert encode_value(typ, bridge.read(server.id, name, ep_id)) is not None, (ep_id, server.name, name)
                count += 1
    assert count > 300


def test_the_im_server_serves_the_bridge(home, bridge):
    link = Link(bridge)
    got = values(read(link, AttributePath()))          # wildcard read of the whole bridge
    assert {k[0] for k in got} == set(bridge.endpoints)
    assert got[(AGGREGATOR_ENDPOINT, DESC, 3)] == list(range(2, 18))     # PartsList
    assert got[(10, C.TemperatureMeasurement.id, 0)] == 2700
    assert got[(2, BDBI, C.BridgedDeviceBasicInformation.Attributes.NodeLabel.attribute_id)] == "Reading Lamp"
    ib, = link.request(InvokeRequest([CommandData(CommandPath(2, ON_OFF, 2))]))[0].invoke_responses
    assert ib.status.status.status == Status.SUCCESS and home.device("lamp").read("OnOff", "OnOff") is True
    path = AttributePath(3, C.FanControl.id, C.FanControl.Attributes.PercentSetting.attribute_id)
    (response,) = link.request(WriteRequest([AttributeData(path, 50)]))
    assert response.write_responses[0].status.status == Status.INVALID_IN_STATE   # rule of the AC


@pytest.mark.e2e
def test_matterjs_schemas_accept_every_attribute_of_the_bridge(js, home, bridge):  # noqa: F811 (fixture)
    # An independent implementation decodes the whole bridge (BDBI, AirQuality, Descriptor trees).
    request = js("TlvReadRequest.encode({attributeRequests: [{}], isFabricFiltered: false, "
                 "interactionModelRevision: 12})")
    messages, payloads = ask(Link(bridge), request, Opcode.ReadRequest)
    result = check_reports(js, payloads)
    assert result["statuses"] == []
    assert {k: v["error"] for k, v in result["attributes"].items() if not v["ok"]} == {}
    expected = {f"{ep.id}/{s.id}/{s.attribute_class(n).attribute_id}"
                for ep in bridge.endpoints.values() for s in ep.servers.values() for n in s.attribute_names()}
    assert set(result["attributes"]) == expected
    assert result["attributes"][f"1/{DESC}/3"]["value"] == list(range(2, 18))
    assert result["attributes"][f"13/{C.AirQuality.id}/0"]["value"] == 1          # Good


def test_subscriptions_report_changes_at_the_bridged_path(home, bridge):
    link = Link(bridge)
    *_, response = subscribe(link, AttributePath(2, ON_OFF, 0), AttributePath(endpoint=2, cluster=BDBI),
                             floor=0, ceiling=60)
    assert isinstance(response, SubscribeResponse)
    tool(home, "execute_command", {"device.id": "lamp", "endpoint.id": 1, "cluster.id": "OnOff",
                                   "command.id": "Toggle", "args": {}})
    assert values(link.advance(10)) == {(2, ON_OFF, 0): True}
    home.device("lamp").write("BasicInformation", "NodeLabel", "Desk Lamp")
    label = C.BridgedDeviceBasicInformation.Attributes.NodeLabel.attribute_id
    assert values(link.advance(10)) == {(2, BDBI, label): "Desk Lamp"}


def test_room_sensor_type_is_not_offered_to_home_files():
    assert "room_sensor" not in DEVICE_TYPES and NODE_ONLY_TYPES["room_sensor"].product_id != BRIDGE_PRODUCT_ID
    assert BRIDGE_PRODUCT_ID not in {t.product_id for t in DEVICE_TYPES.values()}
    assert isinstance(build_bridge(make_home(), room_sensors=False), Bridge)
    assert list(build_bridge(make_home(), room_sensors=False).bridged) == ["lamp", "ac", "tv", "fridge", "heat_pump"]
