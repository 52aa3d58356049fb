"""Acceptance for the device library's lighting, plug, switch, media, appliance and energy
types (clusters/devices_appl.py): python-matter-server commissions one twin node of each,
inside a namespace this module creates, reads every attribute (the full interview, compared
with the twin's HTTP tool API as test_e2e_all_types does) and invokes a command on each, whose
effect is read back from the twin; then a hand (POST /hand) presses the Generic Switch twice,
whose Switch events reach the controller, and toggles the On/Off Light Switch, whose bound light
reports its new state to the controller.
"""
from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest
from e2e_twin import twin_lab

pytestmark = pytest.mark.e2e   # a namespace, python-matter-server

MODULE = "test_e2e_devices_appl"


def the_types() -> list[str]:
    from clusters.devices_appl import ROOM_KINDS
    return sorted(ROOM_KINDS)


def home_yaml() -> str:
    """One device of each type, its id its type key, in one room."""
    lines = ["name: Device library", "seed: 0", 'start_time: "2025-06-01 12:00:00"', "rooms:",
             "  - id: lab", "    devices:"]
    lines += [f"      - {{id: {key}, type: {key}}}" for key in the_types() if key != "on_off_light_switch"]
    lines.append("      - {id: on_off_light_switch, type: on_off_light_switch, "
                 "options: {bound_to: [extended_color_light]}}")
    return "\n".join(lines) + "\n"


def actions() -> list[tuple[str, int, Any, str, str, Any]]:
    """(device, endpoint, command, ("timed", command) or ("write", attribute class, value), cluster,
    attribute, expected)."""
    from chip.clusters import Objects as C
    opts = {"optionsMask": 1, "optionsOverride": 1}     # ExecuteIfOff: colour while the light is off
    identify = C.Identify.Commands.Identify(identifyTime=30)
    boost = C.WaterHeaterManagement.Structs.WaterHeaterBoostInfoStruct(duration=600)
    binding = [C.Binding.Structs.TargetStruct(node=7, endpoint=1, cluster=6, fabricIndex=1)]
    cc = C.ColorControl.Commands
    return [
        ("color_temperature_light", 1, cc.MoveToColorTemperature(colorTemperatureMireds=300, transitionTime=0, **opts),
         "ColorControl", "ColorTemperatureMireds", 300),
        ("extended_color_light", 1, cc.MoveToHueAndSaturation(hue=100, saturation=200, transitionTime=0, **opts),
         "ColorControl", "CurrentHue", 100),
        ("extended_color_light", 1, cc.MoveToColor(colorX=20000, colorY=21000, transitionTime=0, **opts),
         "ColorControl", "CurrentX", 20000),
        ("on_off_plug", 1, C.OnOff.Commands.On(), "OnOff", "OnOff", True),
        ("dimmable_plug", 1, C.LevelControl.Commands.MoveToLevelWithOnOff(level=100, transitionTime=0,
                                                                          optionsMask=0, optionsOverride=0),
         "LevelControl", "CurrentLevel", 100),
        ("mounted_on_off_control", 1, C.OnOff.Commands.Toggle(), "OnOff", "OnOff", True),
        ("mounted_dimmable_load_control", 1, C.LevelControl.Commands.MoveToLevelWithOnOff(
            level=50, transitionTime=0, optionsMask=0, optionsOverride=0), "LevelControl", "CurrentLevel", 50),
        ("generic_switch", 1, identify, "Identify", "IdentifyTime", (15, 30)),
        ("on_off_light_switch", 1, identify, "Identify", "IdentifyTime", (15, 30)),
        ("dimmer_switch", 1, ("write", C.Binding.Attributes.Binding, binding), "Binding", "Binding",
         lambda v: len(v) == 1 and v[0]["node"] == 7),
        ("color_dimmer_switch", 1, identify, "Identify", "IdentifyTime", (15, 30)),
        ("control_bridge", 1, identify, "Identify", "IdentifyTime", (15, 30)),
        ("pump_controller", 1, identify, "Identify", "IdentifyTime", (15, 30)),
        ("window_covering_controller", 1, identify, "Identify", "IdentifyTime", (15, 30)),
        ("video_remote_control", 1, ("write", C.Binding.Attributes.Binding, binding), "Binding", "Binding",
         lambda v: len(v) == 1 and v[0]["node"] == 7),
        ("casting_video_client", 1, ("write", C.Binding.Attributes.Binding, binding), "Binding", "Binding",
         lambda v: len(v) == 1 and v[0]["node"] == 7),
        ("mode_select", 1, C.ModeSelect.Commands.ChangeToMode(newMode=2), "ModeSelect", "CurrentMode", 2),
        ("speaker", 1, C.LevelControl.Commands.MoveToLevelWithOnOff(level=60, transitionTime=0, optionsMask=0,
                                                                    optionsOverride=0),
         "LevelControl", "CurrentLevel", 60),
        ("basic_video_player", 1, C.MediaPlayback.Commands.Play(), "MediaPlayback", "CurrentState", 0),
        ("thermostat", 1, C.Thermostat.Commands.SetpointRaiseLower(
            mode=C.Thermostat.Enums.SetpointRaiseLowerModeEnum.kHeat, amount=10),
         "Thermostat", "OccupiedHeatingSetpoint", 2100),
        ("oven", 2, C.OvenMode.Commands.ChangeToMode(newMode=2), "OvenMode", "CurrentMode", 2),
        ("oven", 2, C.OvenCavityOperationalState.Commands.Start(), "OvenCavityOperationalState",
         "OperationalState", 1),
        ("cooktop", 2, C.TemperatureControl.Commands.SetTemperature(targetTemperatureLevel=2),
         "TemperatureControl", "SelectedTemperatureLevel", 2),
        ("cook_surface", 1, C.TemperatureControl.Commands.SetTemperature(targetTemperatureLevel=3),
         "TemperatureControl", "SelectedTemperatureLevel", 3),
        ("microwave_oven", 1, C.MicrowaveOvenControl.Commands.SetCookingParameters(
            cookTime=90, powerSetting=50, startAfterSetting=True), "OperationalState", "OperationalState", 1),
        ("extractor_hood", 1, ("write", C.FanControl.Attributes.PercentSetting, 50), "FanControl",
         "PercentSetting", 50),
        ("water_heater", 1, C.WaterHeaterManagement.Commands.Boost(boostInfo=boost), "WaterHeaterManagement",
         "BoostState", 1),
        ("water_valve", 1, C.ValveConfigurationAndControl.Commands.Open(openDuration=60),
         "ValveConfigurationAndControl", "OpenDuration", 60),
        ("pump", 1, C.OnOff.Commands.On(), "PumpConfigurationAndControl", "PumpStatus", 0x20),
        ("evse", 1, ("timed", C.EnergyEvse.Commands.EnableCharging(chargingEnabledUntil=None,
                                                                   minimumChargeCurrent=6000,
                                                                   maximumChargeCurrent=16000)),
         "EnergyEvse", "SupplyState", 1),
        ("solar_power", 1, identify, "Identify", "IdentifyTime", (15, 30)),
        ("battery_storage", 1, C.DeviceEnergyManagement.Commands.PowerAdjustRequest(
            power=2_000_000, duration=600, cause=C.DeviceEnergyManagement.Enums.AdjustmentCauseEnum.kLocalOptimization),
         "DeviceEnergyManagement", "ESAState", 3),
    ]


def matches(value: Any, expected: Any) -> bool:
    if callable(expected):
        return bool(expected(value))
    if isinstance(expected, tuple):
        return isinstance(value, (int, float)) and expected[0] <= value <= expected[1]
    return value == expected


async def control_all(client: Any, twin: Any, node_ids: dict[str, int]) -> list[Any]:
    results = []
    for device, endpoint, command, cluster, attribute, expected in actions():
        node_id = node_ids[device]
        try:
            if isinstance(command, tuple) and command[0] == "timed":    # the spec asks a timed invoke
                await client.send_device_command(node_id, endpoint, command[1], timed_request_timeout_ms=2000)
                name = type(command[1]).__qualname__
            elif isinstance(command, tuple):
                _, attr, value = command
                await client.write_attribute(node_id, f"{endpoint}/{attr.cluster_id}/{attr.attribute_id}", value)
                name = f"write {type(attr()).__qualname__}"
            else:
                await client.send_device_command(node_id, endpoint, command)
                name = type(command).__qualname__
        except Exception as err:  # noqa: BLE001 - reported with the rest
            results.append((device, cluster, "error", f"{type(err).__name__}: {err}"))
            continue
        value = (await twin.tool("get_attribute", {"device.id": device, "endpoint.id": endpoint,
                                                   "cluster.id": cluster, "attribute.id": attribute}))["value"]
        results.append((device, cluster, name, value, matches(value, expected)))
    return results


async def hands(client: Any, twin: Any, node_ids: dict[str, int]) -> dict[str, Any]:
    from chip.clusters import Objects as C
    from matter_server.common.models import EventType
    from test_e2e_matter_server import HTTP_URL
    events: list[Any] = []
    client.subscribe_events(lambda _, e: events.append(e), EventType.NODE_EVENT,
                            node_filter=node_ids["generic_switch"])

    async def hand(body: dict[str, Any]) -> dict[str, Any]:
        async with twin.http.post(HTTP_URL + "/hand", json=body) as response:
            return await response.json()

    async def until(predicate: Any, timeout: float) -> bool:
        started = time.monotonic()
        while time.monotonic() - started < timeout:
            if predicate():
                return True
            await asyncio.sleep(0.2)
        return False

    pressed = await hand({"device": "generic_switch", "action": "press", "presses": 2})
    complete = C.Switch.Events.MultiPressComplete
    done = await until(lambda: any(e.event_id == complete.event_id for e in events), 20)
    light = node_ids["extended_color_light"]
    before = client.get_node(light).get_attribute_value(1, C.OnOff.id, C.OnOff.Attributes.OnOff)
    toggled = await hand({"device": "on_off_light_switch", "action": "toggle"})
    reported = await until(lambda: client.get_node(light).get_attribute_value(
        1, C.OnOff.id, C.OnOff.Attributes.OnOff) == (not before), 20)
    return {"pressed": pressed, "complete": done, "toggled": toggled, "reported": reported,
            "events": [(e.cluster_id, e.event_id, e.data) for e in events if e.cluster_id == C.Switch.id]}


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("devices-appl")
    (workdir / "home.yaml").write_text(home_yaml())
    with twin_lab(workdir, "da", "--home", str(workdir / "home.yaml"), "--open-windows", "all-qr") as the_lab:
        yield the_lab


def test_every_new_type_is_interviewed_and_controlled(lab):
    devices = {key: key for key in the_types()}
    first = lab.call("test_e2e_all_types", "commission_all", devices, timeout=900)
    print(json.dumps({k: v for k, v in first.items() if not k.startswith("clusters ")}, indent=1, default=str))
    assert set(first["node_ids"]) == set(devices)
    assert first["wrong"] == []
    for device in devices:
        assert first["compared"][device] >= 20, (device, first["compared"][device])   # root + app endpoints
    results = lab.call(MODULE, "control_all", first["node_ids"], timeout=300)
    print(json.dumps(results, indent=1, default=str))
    assert [r for r in results if r[2] == "error" or not r[-1]] == []
    assert {r[0] for r in results} == set(devices)        # a command (or write) on every type

    hands = lab.call(MODULE, "hands", first["node_ids"], timeout=120)
    print(json.dumps(hands, indent=1, default=str))
    from chip.clusters import Objects as C
    names = {e.event_id: n for n, e in vars(C.Switch.Events).items() if hasattr(e, "event_id")}
    assert hands["complete"] and [names[e[1]] for e in hands["events"]] == [
        "InitialPress", "ShortRelease", "InitialPress", "MultiPressOngoing", "ShortRelease", "MultiPressComplete"]
    assert hands["toggled"]["sent"][0]["status"] == "SUCCESS" and hands["reported"]
