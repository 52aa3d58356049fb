"""Acceptance: python-matter-server commissions one twin node of each of the 17 SimuHome device
types (the default home has them all) inside a namespace this module creates, and:

- completes the full interview: every attribute of every endpoint the twin's cluster servers
  hold is in the server, with the twin's value (read through the twin's HTTP tool API; values
  that physics moved during the interview need only be present);
- for each cluster with commands, a representative command is invoked through the server and
  its effect checked in the twin; clusters without commands get a representative attribute
  write; read-only clusters (measurements, PowerSource, PowerTopology, Descriptor) are covered
  by the interview comparison.
"""
from __future__ import annotations

import json
import time
from typing import Any

import pytest
from e2e_twin import only_the_readers_entry, per_reader, server_value_json, twin_lab

pytestmark = pytest.mark.e2e   # a namespace, python-matter-server or matter.js

MODULE = "test_e2e_all_types"
ONE_OF_EACH = {  # device id in the default home -> its type
    "living_room_light": "dimmable_light", "living_room_ac": "air_conditioner",
    "living_room_purifier": "air_purifier", "living_room_tv": "tv", "living_room_blinds": "window_covering",
    "living_room_fan": "fan", "kitchen_light": "on_off_light", "kitchen_refrigerator": "refrigerator",
    "kitchen_freezer": "freezer", "kitchen_dishwasher": "dishwasher", "kitchen_humidifier": "humidifier",
    "bathroom_dehumidifier": "dehumidifier", "utility_room_washer": "laundry_washer",
    "utility_room_dryer": "laundry_dryer", "utility_room_heat_pump": "heat_pump",
    "utility_room_energy_meter": "electrical_sensor", "utility_room_vacuum": "robot_vacuum_cleaner"}


def actions() -> list[tuple[str, int, Any, str, str, Any]]:
    """(device, endpoint, command or ("write", attribute class, value), cluster, attribute, expected).

    `expected` is the twin's JSON value afterwards, or a (min, max) range, or a dict of
    fields. In order: some commands need the device on first (the twin's rules say so)."""
    from chip.clusters import Objects as C
    on = C.OnOff.Commands.On()
    return [
        ("living_room_light", 1, C.Identify.Commands.Identify(identifyTime=60), "Identify", "IdentifyTime", (30, 60)),
        ("kitchen_light", 1, on, "OnOff", "OnOff", True),
        ("living_room_light", 1, C.LevelControl.Commands.MoveToLevel(level=50, transitionTime=0, optionsMask=0,
                                                                    optionsOverride=0),
         "LevelControl", "CurrentLevel", 50),
        ("living_room_ac", 1, on, "OnOff", "OnOff", True),
        ("living_room_ac", 1, C.Thermostat.Commands.SetpointRaiseLower(
            mode=C.Thermostat.Enums.SetpointRaiseLowerModeEnum.kCool, amount=10),
         "Thermostat", "OccupiedCoolingSetpoint", 2700),
        ("living_room_ac", 1, C.FanControl.Commands.Step(direction=C.FanControl.Enums.StepDirectionEnum.kIncrease,
                                                         wrap=False, lowestOff=True),
         "FanControl", "PercentSetting", (1, 100)),
        ("living_room_ac", 1, C.Thermostat.Commands.SetActivePresetRequest(presetHandle=b"\x02"),   # Away
         "Thermostat", "OccupiedHeatingSetpoint", 1600),
        ("living_room_tv", 1, on, "OnOff", "OnOff", True),
        ("living_room_tv", 1, C.MediaPlayback.Commands.Play(), "MediaPlayback", "CurrentState", 0),
        ("living_room_tv", 1, C.Channel.Commands.ChangeChannelByNumber(majorNumber=2, minorNumber=0),
         "Channel", "CurrentChannel", {"majorNumber": 2}),
        ("living_room_tv", 1, C.KeypadInput.Commands.SendKey(keyCode=C.KeypadInput.Enums.CECKeyCodeEnum.kChannelUp),
         "Channel", "CurrentChannel", {"majorNumber": 3}),
        ("living_room_blinds", 1, C.WindowCovering.Commands.GoToLiftPercentage(liftPercent100thsValue=5000),
         "WindowCovering", "TargetPositionLiftPercent100ths", 5000),
        ("living_room_blinds", 1, C.WindowCovering.Commands.GoToTiltPercentage(tiltPercent100thsValue=3000),
         "WindowCovering", "TargetPositionTiltPercent100ths", 3000),
        ("living_room_purifier", 1, C.HepaFilterMonitoring.Commands.ResetCondition(),
         "HepaFilterMonitoring", "Condition", 100),
        ("living_room_fan", 1, on, "OnOff", "OnOff", True),
        ("living_room_fan", 1, ("write", C.FanControl.Attributes.SpeedSetting, 3), "FanControl", "SpeedSetting", 3),
        ("kitchen_refrigerator", 1, C.RefrigeratorAndTemperatureControlledCabinetMode.Commands.ChangeToMode(newMode=1),
         "RefrigeratorAndTemperatureControlledCabinetMode", "CurrentMode", 1),
        ("kitchen_freezer", 2, C.TemperatureControl.Commands.SetTemperature(targetTemperature=-2000),
         "TemperatureControl", "TemperatureSetpoint", -2000),
        ("kitchen_dishwasher", 1, C.DishwasherMode.Commands.ChangeToMode(newMode=2),
         "DishwasherMode", "CurrentMode", 2),
        ("kitchen_dishwasher", 1, C.DishwasherAlarm.Commands.ModifyEnabledAlarms(mask=1), "DishwasherAlarm", "Mask", 1),
        ("kitchen_dishwasher", 1, on, "OnOff", "OnOff", True),
        ("kitchen_dishwasher", 1, C.OperationalState.Commands.Start(), "OperationalState", "OperationalState", 1),
        ("utility_room_washer", 1, C.LaundryWasherMode.Commands.ChangeToMode(newMode=3),
         "LaundryWasherMode", "CurrentMode", 3),
        ("utility_room_washer", 1, ("write", C.LaundryWasherControls.Attributes.SpinSpeedCurrent, 1),
         "LaundryWasherControls", "SpinSpeedCurrent", 1),
        ("utility_room_washer", 1, C.TemperatureControl.Commands.SetTemperature(targetTemperatureLevel=4),
         "TemperatureControl", "SelectedTemperatureLevel", 4),
        ("utility_room_dryer", 1, ("write", C.LaundryDryerControls.Attributes.SelectedDrynessLevel, 2),
         "LaundryDryerControls", "SelectedDrynessLevel", 2),
        ("utility_room_heat_pump", 1, C.DeviceEnergyManagement.Commands.PowerAdjustRequest(
            power=1_000_000, duration=120, cause=C.DeviceEnergyManagement.Enums.AdjustmentCauseEnum.kLocalOptimization),
         "DeviceEnergyManagement", "ESAState", 3),                   # PowerAdjustActive
        ("utility_room_vacuum", 1, C.RvcCleanMode.Commands.ChangeToMode(newMode=1), "RvcCleanMode", "CurrentMode", 1),
        ("utility_room_vacuum", 1, C.ServiceArea.Commands.SelectAreas(newAreas=[1]), "ServiceArea", "SelectedAreas",
         [1]),
        ("utility_room_vacuum", 1, C.RvcRunMode.Commands.ChangeToMode(newMode=1), "RvcRunMode", "CurrentMode", 1),
        ("utility_room_vacuum", 1, C.RvcOperationalState.Commands.Pause(),
         "RvcOperationalState", "OperationalState", 2),
        ("living_room_fan", 0, ("write", C.BasicInformation.Attributes.NodeLabel, "Ceiling Fan"),
         "BasicInformation", "NodeLabel", "Ceiling Fan"),
    ]


def matches(value: Any, expected: Any) -> bool:
    if isinstance(expected, tuple):
        return isinstance(value, (int, float)) and expected[0] <= value <= expected[1]
    if isinstance(expected, dict):
        return isinstance(value, dict) and all(value.get(k) == v for k, v in expected.items())
    return value == expected


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    # Every window at once, for QR-code pairing (manual codes would be ambiguous: #13).
    with twin_lab(tmp_path_factory.mktemp("all-types"), "at", "--open-windows", "all-qr") as the_lab:
        yield the_lab


async def twin_attributes(twin: Any, device: str) -> dict[str, Any]:
    return (await twin.tool("get_all_attributes", {"device.id": device}))["attributes"]


async def commission_all(client: Any, twin: Any, state: Any) -> dict[str, Any]:
    """Commission and interview the devices `state` names (default ONE_OF_EACH; other modules
    pass their own)."""
    codes = {row["device"]: row for row in (await twin.get("/codes"))["codes"]}
    out: dict[str, Any] = {"node_ids": {}, "compared": {}, "moved": {}, "wrong": [], "seconds": {},
                           "per reader": {}}
    for device in state or ONE_OF_EACH:
        before = await twin_attributes(twin, device)
        started = time.monotonic()
        node = await client.commission_with_code(codes[device]["qr_code"], network_only=True)
        out["seconds"][device] = round(time.monotonic() - started, 2)
        after = await twin_attributes(twin, device)
        node = client.get_node(node.node_id)
        out["node_ids"][device] = node.node_id
        compared = moved = 0
        for key, value in after.items():
            ep, cluster, attribute = key.split(".")
            present, got = server_value_json(node, int(ep), cluster, attribute)
            if not present:
                out["wrong"].append((device, key, "missing"))
            elif before.get(key) != value:
                moved += 1        # physics or a clock moved it during the interview
            elif per_reader(cluster, attribute):
                # The controller reads as fabric 1, the tool API as no fabric.
                out["per reader"].setdefault(attribute, []).append((got, value))
            elif got != value:
                out["wrong"].append((device, key, got, value))
            else:
                compared += 1
        out["compared"][device], out["moved"][device] = compared, moved
        out[f"clusters {device}"] = sorted({k.split(".", 1)[1].split(".")[0] for k in after})
    return out


async def control_all(client: Any, twin: Any, node_ids: dict[str, int]) -> list[Any]:
    results = []
    for device, endpoint, command, cluster, attribute, expected in actions():
        node_id = node_ids[device]
        try:
            if isinstance(command, tuple):
                _, attr, value = command
                await client.write_attribute(node_id, f"{endpoint}/{attr.cluster_id}/{attr.attribute_id}", value)
                name = f"write {type(attr()).__qualname__}"
            else:
                await client.send_device_command(node_id, endpoint, command)
                name = type(command).__qualname__            # e.g. KeypadInput.Commands.SendKey
        except Exception as err:  # noqa: BLE001 - reported with the rest
            results.append((device, cluster, "error", f"{type(err).__name__}: {err}"))
            continue
        value = (await twin.tool("get_attribute", {"device.id": device, "endpoint.id": endpoint,
                                                   "cluster.id": cluster, "attribute.id": attribute}))["value"]
        results.append((device, cluster, name, value, expected, matches(value, expected)))
    return results


def test_every_device_type_is_interviewed_and_controlled(lab):
    first = lab.call(MODULE, "commission_all", None, timeout=600)
    print(json.dumps(first, indent=1, default=str))
    assert set(first["node_ids"]) == set(ONE_OF_EACH) and len(set(ONE_OF_EACH.values())) == 17
    assert first["wrong"] == []
    # Per-reader attributes: the controller (fabric 1) sees its own, the tool API (no fabric) none.
    readers = first["per reader"]
    assert {tuple(pair) for pair in readers["CurrentFabricIndex"]} == {(1, 0)}
    assert readers["FabricSceneInfo"] and all(
        only_the_readers_entry(got, local) and got[0]["sceneCount"] == 0
        for got, local in readers["FabricSceneInfo"]), readers["FabricSceneInfo"]
    for device in ONE_OF_EACH:
        assert first["compared"][device] >= 20, (device, first["compared"][device])   # root + app endpoints

    results = lab.call(MODULE, "control_all", first["node_ids"], timeout=300)
    print(json.dumps(results, indent=1, default=str))
    failed = [r for r in results if r[2] == "error" or not r[-1]]
    assert failed == []
    exercised = {r[2].removeprefix("write ").split(".")[0] for r in results}
    with_commands = {"Identify", "OnOff", "LevelControl", "Thermostat", "FanControl", "MediaPlayback", "Channel",
                     "KeypadInput", "WindowCovering", "RefrigeratorAndTemperatureControlledCabinetMode",
                     "TemperatureControl", "DishwasherMode", "DishwasherAlarm", "OperationalState",
                     "LaundryWasherMode", "DeviceEnergyManagement", "RvcCleanMode", "RvcRunMode",
                     "RvcOperationalState"}
    assert with_commands <= exercised        # each cluster with commands had one invoked
    assert {"LaundryWasherControls", "LaundryDryerControls", "BasicInformation"} <= exercised   # writes
    served = set().union(*(first[f"clusters {d}"] for d in ONE_OF_EACH))
    assert with_commands - {"KeypadInput"} <= served   # (KeypadInput has no attributes to list)
