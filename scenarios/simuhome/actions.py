"""Device actions the queries talk about: which tool calls do them, which attributes they set.

One table for the generator (goals and its own checking plan) and the reference solver (the
calls it makes once it has found the device through the tools). An action is a name from
`templates.BODIES` plus its numbers; `calls` gives SimuHome tool calls (dotted args),
`goals` the (endpoint, cluster, attribute, value) the device must show afterwards.
"""
from __future__ import annotations

from typing import Any

#: Which actions each device type accepts. Window coverings move for 20 s, so they are not
#: used where a goal is checked to the tick (INSTANT).
ACTIONS: dict[str, tuple[str, ...]] = {
    "on_off_light": ("on", "off"),
    "dimmable_light": ("on", "off", "level"),
    "air_conditioner": ("on", "off", "cool", "heat", "setpoint", "fan"),
    "air_purifier": ("on", "off", "fan"),
    "fan": ("on", "off", "fan"),
    "humidifier": ("on", "off", "fan"),
    "dehumidifier": ("on", "off", "fan"),
    "tv": ("on", "off", "volume"),
    "heat_pump": ("hp_heat", "hp_cool"),
    "window_covering": ("close", "open", "lift"),
    "dishwasher": ("start", "start_mode"),
    "laundry_washer": ("start", "start_mode"),
    "laundry_dryer": ("start", "start_mode", "start_dry"),
}
INSTANT = frozenset(a for a in {x for v in ACTIONS.values() for x in v} if a not in ("close", "open", "lift"))
APPLIANCES = ("dishwasher", "laundry_washer", "laundry_dryer")
MODE_CLUSTER = {"dishwasher": "DishwasherMode", "laundry_washer": "LaundryWasherMode",
                "laundry_dryer": "LaundryWasherMode"}
#: Thermostat endpoint per type (the heat pump's thermostat is endpoint 2).
THERMOSTAT_ENDPOINT = {"air_conditioner": 1, "heat_pump": 2}


def command(device_id: str, cluster: str, name: str, args: dict[str, Any] | None = None,
            endpoint: int = 1) -> dict[str, Any]:
    return {"tool": "execute_command", "args": {"device.id": device_id, "endpoint.id": endpoint,
                                                "cluster.id": cluster, "command.id": name,
                                                "args": dict(args or {})}}


def write(device_id: str, cluster: str, attribute: str, value: Any, endpoint: int = 1) -> dict[str, Any]:
    return {"tool": "write_attribute", "args": {"device.id": device_id, "endpoint.id": endpoint,
                                                "cluster.id": cluster, "attribute.id": attribute,
                                                "value": value}}


def _level(level: int) -> dict[str, int]:
    return {"level": level, "transitionTime": 0, "optionsMask": 0, "optionsOverride": 0}


def calls(device_id: str, type_key: str, action: str, slots: dict[str, Any],
          mode_id: int | None = None) -> list[dict[str, Any]]:
    """The tool calls that perform `action` ({"tool", "args"} dicts, schedulable as steps)."""
    on = command(device_id, "OnOff", "On")
    if action == "on":
        return [on]
    if action == "off":
        return [command(device_id, "OnOff", "Off")]
    if action in ("level", "volume"):
        return [on, command(device_id, "LevelControl", "MoveToLevel", _level(slots["level"]))]
    if action == "fan":
        return [on, write(device_id, "FanControl", "PercentSetting", slots["pct"])]
    if action in ("cool", "heat"):
        return [on, write(device_id, "Thermostat", "SystemMode", 3 if action == "cool" else 4),
                write(device_id, "FanControl", "PercentSetting", slots["pct"])]
    if action == "setpoint":
        return [on, write(device_id, "Thermostat", "OccupiedCoolingSetpoint", round(slots["deg"] * 100))]
    if action in ("hp_heat", "hp_cool"):
        return [write(device_id, "Thermostat", "SystemMode", 4 if action == "hp_heat" else 3,
                      endpoint=THERMOSTAT_ENDPOINT[type_key])]
    if action in ("close", "open", "lift"):
        pct = {"close": 100, "open": 0}.get(action, slots.get("pct"))
        return [command(device_id, "WindowCovering", "GoToLiftPercentage",
                        {"liftPercent100thsValue": pct * 100})]
    if action == "start":
        return [on, command(device_id, "OperationalState", "Start")]
    if action == "start_mode":
        return [on, command(device_id, MODE_CLUSTER[type_key], "ChangeToMode", {"newMode": mode_id}),
                command(device_id, "OperationalState", "Start")]
    if action == "start_dry":
        return [on, write(device_id, "LaundryDryerControls", "SelectedDrynessLevel", slots["n"]),
                command(device_id, "OperationalState", "Start")]
    raise ValueError(f"unknown action {action!r}")


def goals(type_key: str, action: str, slots: dict[str, Any],
          mode_id: int | None = None) -> list[tuple[int, str, str, Any]]:
    """(endpoint, cluster, attribute, value) the device shows once `action` is done."""
    on = (1, "OnOff", "OnOff", True)
    if action == "on":
        return [on]
    if action == "off":
        return [(1, "OnOff", "OnOff", False)]
    if action in ("level", "volume"):
        return [on, (1, "LevelControl", "CurrentLevel", slots["level"])]
    if action == "fan":
        return [on, (1, "FanControl", "PercentSetting", slots["pct"])]
    if action in ("cool", "heat"):
        return [on, (1, "Thermostat", "SystemMode", 3 if action == "cool" else 4),
                (1, "FanControl", "PercentSetting", slots["pct"])]
    if action == "setpoint":
        return [on, (1, "Thermostat", "OccupiedCoolingSetpoint", round(slots["deg"] * 100))]
    if action in ("hp_heat", "hp_cool"):
        return [(THERMOSTAT_ENDPOINT[type_key], "Thermostat", "SystemMode", 4 if action == "hp_heat" else 3)]
    if action in ("close", "open", "lift"):
        pct = {"close": 100, "open": 0}.get(action, slots.get("pct"))
        return [(1, "WindowCovering", "CurrentPositionLiftPercentage", pct)]
    running = (1, "OperationalState", "OperationalState", 1)
    if action == "start":
        return [on, running]
    if action == "start_mode":
        return [on, (1, MODE_CLUSTER[type_key], "CurrentMode", mode_id), running]
    if action == "start_dry":
        return [on, (1, "LaundryDryerControls", "SelectedDrynessLevel", slots["n"]), running]
    raise ValueError(f"unknown action {action!r}")


# ---- room states: which devices move them, and the strongest setting ----------------------------
#: (state, direction) -> device types that can move it that way (SimuHome Appendix O.2 criteria).
ACTUATORS: dict[tuple[str, str], tuple[str, ...]] = {
    ("temperature", "decrease"): ("air_conditioner", "heat_pump"),
    ("temperature", "increase"): ("air_conditioner", "heat_pump"),
    ("humidity", "increase"): ("humidifier", "dehumidifier"),
    ("humidity", "decrease"): ("dehumidifier", "humidifier"),
    ("pm10", "decrease"): ("air_purifier",),
    ("illuminance", "increase"): ("dimmable_light", "on_off_light", "window_covering"),
    ("illuminance", "decrease"): ("dimmable_light", "on_off_light", "window_covering"),
}
MIN_COOL = 1600   # the twin's thermostats: MinCoolSetpointLimit
MAX_HEAT = 3000   # MaxHeatSetpointLimit


def strongest(device_id: str, type_key: str, state: str, direction: str) -> list[tuple[dict, tuple]]:
    """[(call, (endpoint, cluster, attribute, value))]: the settings that push `state` hardest
    in `direction`; a device already showing every value cannot do more."""
    on = (command(device_id, "OnOff", "On"), (1, "OnOff", "OnOff", True))
    off = (command(device_id, "OnOff", "Off"), (1, "OnOff", "OnOff", False))
    fan100 = (write(device_id, "FanControl", "PercentSetting", 100), (1, "FanControl", "PercentSetting", 100))
    if state == "temperature":
        ep = THERMOSTAT_ENDPOINT[type_key]
        mode, attr, value = ((3, "OccupiedCoolingSetpoint", MIN_COOL) if direction == "decrease"
                             else (4, "OccupiedHeatingSetpoint", MAX_HEAT))
        thermo = [(write(device_id, "Thermostat", "SystemMode", mode, endpoint=ep),
                   (ep, "Thermostat", "SystemMode", mode)),
                  (write(device_id, "Thermostat", attr, value, endpoint=ep), (ep, "Thermostat", attr, value))]
        return ([on] + thermo + [fan100]) if type_key == "air_conditioner" else thermo
    if state == "humidity":
        helps = (type_key == "humidifier") == (direction == "increase")
        return [on, fan100] if helps else [off]
    if state == "pm10":
        return [on, fan100]
    if type_key == "window_covering":
        pct = 0 if direction == "increase" else 100
        return [(command(device_id, "WindowCovering", "GoToLiftPercentage", {"liftPercent100thsValue": pct * 100}),
                 (1, "WindowCovering", "CurrentPositionLiftPercentage", pct))]
    if direction == "decrease":
        return [off]
    if type_key == "dimmable_light":
        return [on, (command(device_id, "LevelControl", "MoveToLevel", _level(254)),
                     (1, "LevelControl", "CurrentLevel", 254))]
    return [on]
