"""SMH-Bench's request language: operations on devices, how they are said, and how they are read.

One module for both directions, so the generator's wording and the reference solver's reading
cannot drift apart. An operation is `{"op", "device", "value"?}`:

| op | devices | value | tool calls | the device shows |
| --- | --- | --- | --- | --- |
| on, off | anything with OnOff | - | OnOff On/Off | OnOff |
| brightness | dimmable lights | % | On, MoveToLevel | OnOff, CurrentLevel = round(% x 2.54) |
| color_temperature | white/colour lights | K | On, MoveToColorTemperature | ColorTemperatureMireds = round(1e6 / K) |
| fan_speed | fans, purifiers, (de)humidifiers, ACs | % | On, PercentSetting | OnOff, PercentSetting |
| cool | air conditioners | °C | On, SystemMode cool, setpoint | OnOff, SystemMode 3, OccupiedCoolingSetpoint |
| volume | speakers, TVs | % | On, MoveToLevel | OnOff, CurrentLevel = % (their level is 0-100) |
| close_to | window coverings | % closed | GoToLiftPercentage | TargetPositionLiftPercent100ths |
| start | dishwashers, washers | - | On, OperationalState Start | OperationalState running |
| lock, unlock | door locks | - | DoorLock LockDoor/UnlockDoor | LockState locked (1) / unlocked (2) |
| water_temperature | water heaters | °C | Thermostat setpoint | OccupiedHeatingSetpoint |
| bake | ovens | °C | cavity (endpoint 2) SetTemperature, Start | TemperatureSetpoint, OperationalState running |
| stop_oven | ovens | - | cavity (endpoint 2) Stop | OperationalState stopped |
| charge, stop_charging | EV chargers | - | EnergyEvse EnableCharging/Disable | SupplyState enabled (1) / disabled (0) |
| battery_charge, battery_discharge | home batteries | W | DEM PowerAdjustRequest, an hour | ActivePower = +W / -W |

The operations after `lock` are the appliance operations (`APPLIANCE_OPS`): SMH-Bench draws them;
`BASIC_OPS` (the rest) is what a draft draws by default, so HomeFlow's tasks stay as they were.

No phrase puts a word next to the same word (a name ending in "fan" before "fan speed"):
the reader collapses stutters. Wording styles (TC1): `clear` (the canonical phrase),
`colloquial` (everyday phrasing) and
`noisy` (fillers, a stuttered word, and a self-correction "the X, no wait, the Y").
`parse_clauses` reads any of them back into operations, given the home's device names.
"""
from __future__ import annotations

import json
import random
import re
from typing import Any

from chip.clusters.Objects import DoorLock, EnergyEvse, OperationalState

#: op -> device types it applies to
OP_TYPES: dict[str, tuple[str, ...]] = {
    "on": ("on_off_light", "dimmable_light", "color_temperature_light", "extended_color_light", "fan",
           "air_purifier", "humidifier", "dehumidifier", "air_conditioner", "tv", "speaker", "on_off_plug"),
    "brightness": ("dimmable_light", "color_temperature_light", "extended_color_light"),
    "color_temperature": ("color_temperature_light", "extended_color_light"),
    "fan_speed": ("fan", "air_purifier", "humidifier", "dehumidifier", "air_conditioner"),
    "cool": ("air_conditioner",),
    "volume": ("speaker", "tv"),
    "close_to": ("window_covering",),
    "start": ("dishwasher", "laundry_washer"),
    "lock": ("door_lock",),
}
OP_TYPES["off"] = OP_TYPES["on"]
OP_TYPES["unlock"] = OP_TYPES["lock"]
BASIC_OPS = tuple(OP_TYPES)
#: The energy and kitchen appliances' operations (water heaters, ovens, EV chargers, batteries).
APPLIANCE_OPS: dict[str, tuple[str, ...]] = {
    "water_temperature": ("water_heater",), "bake": ("oven",), "stop_oven": ("oven",), "charge": ("evse",),
    "stop_charging": ("evse",), "battery_charge": ("battery_storage",), "battery_discharge": ("battery_storage",),
}
OP_TYPES.update(APPLIANCE_OPS)
VALUES: dict[str, tuple[int, ...]] = {
    "brightness": (10, 20, 25, 30, 40, 50, 60, 70, 75, 80, 90, 100),
    "color_temperature": (2700, 3000, 4000, 5000, 6500),
    "fan_speed": (10, 20, 30, 40, 50, 60, 70, 80, 90, 100), "cool": (18, 20, 22, 23, 24, 25, 26, 27),
    "volume": (5, 10, 15, 20, 30, 40, 50, 60), "close_to": (0, 25, 50, 75, 100),
    "water_temperature": (45, 50, 60, 65), "bake": (160, 180, 200, 220),
    "battery_charge": (1000, 2000, 3000), "battery_discharge": (1000, 2000, 3000),
}
LIGHT_TYPES = ("on_off_light", "dimmable_light", "color_temperature_light", "extended_color_light")
#: Plain ints, as the task files and tool results carry them.
STOPPED, RUNNING = (int(OperationalState.Enums.OperationalStateEnum.kStopped),
                    int(OperationalState.Enums.OperationalStateEnum.kRunning))
LOCKED, UNLOCKED = int(DoorLock.Enums.DlLockState.kLocked), int(DoorLock.Enums.DlLockState.kUnlocked)
CHARGING_ENABLED = int(EnergyEvse.Enums.SupplyStateEnum.kChargingEnabled)
CHARGING_DISABLED = int(EnergyEvse.Enums.SupplyStateEnum.kDisabled)
OVEN = 2   # the oven's cavity endpoint


def level_of(pct: int) -> int:
    return round(pct * 254 / 100)


def pct_of(level: int) -> int:
    return round(level * 100 / 254)


def _cmd(device: str, cluster: str, name: str, args: dict[str, Any] | None = None, endpoint: int = 1) -> dict[str, Any]:
    return {"tool": "execute_command", "args": {"device.id": device, "endpoint.id": endpoint, "cluster.id": cluster,
                                                "command.id": name, "args": dict(args or {})}}


def _write(device: str, cluster: str, attribute: str, value: Any) -> dict[str, Any]:
    return {"tool": "write_attribute", "args": {"device.id": device, "endpoint.id": 1, "cluster.id": cluster,
                                                "attribute.id": attribute, "value": value}}


def calls(op: dict[str, Any]) -> list[dict[str, Any]]:
    """The tool calls ({"tool", "args"}, also valid workflow and automation steps) that do `op`."""
    dev, kind, value = op["device"], op["op"], op.get("value")
    on = _cmd(dev, "OnOff", "On")
    level = {"transitionTime": 0, "optionsMask": 0, "optionsOverride": 0}
    if kind == "on":
        return [on]
    if kind == "off":
        return [_cmd(dev, "OnOff", "Off")]
    if kind == "brightness":
        return [on, _cmd(dev, "LevelControl", "MoveToLevel", {"level": level_of(value), **level})]
    if kind == "volume":   # speakers and TVs: LevelControl 0-100, the volume in percent
        return [on, _cmd(dev, "LevelControl", "MoveToLevel", {"level": value, **level})]
    if kind == "color_temperature":
        return [on, _cmd(dev, "ColorControl", "MoveToColorTemperature",
                         {"colorTemperatureMireds": round(1e6 / value), **level})]
    if kind == "fan_speed":
        return [on, _write(dev, "FanControl", "PercentSetting", value)]
    if kind == "cool":
        return [on, _write(dev, "Thermostat", "SystemMode", 3), _write(dev, "Thermostat", "OccupiedCoolingSetpoint",
                                                                      value * 100)]
    if kind == "close_to":
        return [_cmd(dev, "WindowCovering", "GoToLiftPercentage", {"liftPercent100thsValue": value * 100})]
    if kind == "start":
        return [on, _cmd(dev, "OperationalState", "Start")]
    if kind in ("lock", "unlock"):
        return [_cmd(dev, "DoorLock", "LockDoor" if kind == "lock" else "UnlockDoor")]
    if kind == "water_temperature":
        return [_write(dev, "Thermostat", "OccupiedHeatingSetpoint", value * 100)]
    if kind == "bake":
        return [_cmd(dev, "TemperatureControl", "SetTemperature", {"targetTemperature": value * 100}, OVEN),
                _cmd(dev, "OvenCavityOperationalState", "Start", endpoint=OVEN)]
    if kind == "stop_oven":
        return [_cmd(dev, "OvenCavityOperationalState", "Stop", endpoint=OVEN)]
    if kind == "charge":
        return [_cmd(dev, "EnergyEvse", "EnableCharging", {"chargingEnabledUntil": None, "minimumChargeCurrent": 6000,
                                                           "maximumChargeCurrent": 32000})]
    if kind == "stop_charging":
        return [_cmd(dev, "EnergyEvse", "Disable")]
    if kind in ("battery_charge", "battery_discharge"):   # mW, positive charges; for an hour
        power = value * 1000 * (1 if kind == "battery_charge" else -1)
        return [_cmd(dev, "DeviceEnergyManagement", "PowerAdjustRequest",
                     {"power": power, "duration": 3600, "cause": 0})]
    raise ValueError(f"unknown operation {kind!r}")


def _check(dev: str, cluster: str, attribute: str, value: Any, endpoint: int = 1) -> dict[str, Any]:
    return {"type": "device", "device_id": dev, "endpoint_id": endpoint, "cluster_id": cluster,
            "attribute_id": attribute, "op": "==", "value": value}


def predicates(op: dict[str, Any]) -> list[dict[str, Any]]:
    """Goal predicates (twin.goals) that hold once `op` is done."""
    dev, kind, value = op["device"], op["op"], op.get("value")
    on = _check(dev, "OnOff", "OnOff", True)
    if kind in ("on", "off"):
        return [_check(dev, "OnOff", "OnOff", kind == "on")]
    if kind == "brightness":
        return [on, _check(dev, "LevelControl", "CurrentLevel", level_of(value))]
    if kind == "volume":
        return [on, _check(dev, "LevelControl", "CurrentLevel", value)]
    if kind == "color_temperature":
        return [on, _check(dev, "ColorControl", "ColorTemperatureMireds", round(1e6 / value))]
    if kind == "fan_speed":
        return [on, _check(dev, "FanControl", "PercentSetting", value)]
    if kind == "cool":
        return [on, _check(dev, "Thermostat", "SystemMode", 3), _check(dev, "Thermostat", "OccupiedCoolingSetpoint",
                                                                      value * 100)]
    if kind == "close_to":
        return [_check(dev, "WindowCovering", "TargetPositionLiftPercent100ths", value * 100)]
    if kind == "start":
        return [on, _check(dev, "OperationalState", "OperationalState", RUNNING)]
    if kind in ("lock", "unlock"):
        return [_check(dev, "DoorLock", "LockState", LOCKED if kind == "lock" else UNLOCKED)]
    if kind == "water_temperature":
        return [_check(dev, "Thermostat", "OccupiedHeatingSetpoint", value * 100)]
    if kind == "bake":
        return [_check(dev, "TemperatureControl", "TemperatureSetpoint", value * 100, OVEN),
                _check(dev, "OvenCavityOperationalState", "OperationalState", RUNNING, OVEN)]
    if kind == "stop_oven":
        return [_check(dev, "OvenCavityOperationalState", "OperationalState", STOPPED, OVEN)]
    if kind in ("charge", "stop_charging"):
        return [_check(dev, "EnergyEvse", "SupplyState", CHARGING_ENABLED if kind == "charge" else CHARGING_DISABLED)]
    if kind in ("battery_charge", "battery_discharge"):
        return [_check(dev, "ElectricalPowerMeasurement", "ActivePower",
                       value * 1000 * (1 if kind == "battery_charge" else -1))]
    raise ValueError(f"unknown operation {kind!r}")


# ---- saying an operation ----------------------------------------------------------------------
#: op -> (clear, colloquial...) phrasings; {d} the device's name, {v} the value.
PHRASES: dict[str, tuple[str, ...]] = {
    "on": ("turn on the {d}", "could you switch the {d} on", "get the {d} going"),
    "off": ("turn off the {d}", "please shut the {d} off", "kill the {d}"),
    "brightness": ("set the {d} to {v}% brightness", "make the {d} {v} percent bright"),
    "color_temperature": ("set the {d} to {v} K", "I'd like the {d} at {v} kelvin"),
    "fan_speed": ("set the fan speed of the {d} to {v}%", "run the {d} at {v} percent"),
    "cool": ("cool with the {d} at {v} degrees", "I want the {d} cooling to {v} degrees"),
    "volume": ("set the {d} volume to {v}%", "turn the {d} to volume {v}"),
    "close_to": ("close the {d} to {v}%", "pull the {d} {v} percent shut"),
    "start": ("start the {d}", "kick off the {d}"),
    "lock": ("lock the {d}", "make sure the {d} is locked"),
    "unlock": ("unlock the {d}", "open up the {d}"),
    "water_temperature": ("set the {d} to {v} degrees", "heat the water in the {d} to {v} degrees"),
    "bake": ("bake with the {d} at {v} degrees", "preheat the {d} to {v} degrees"),
    "stop_oven": ("stop the {d}", "stop baking in the {d}"),
    "charge": ("start charging at the {d}", "let the car charge at the {d}"),
    "stop_charging": ("stop charging at the {d}", "pause the car charging at the {d}"),
    "battery_charge": ("charge the {d} at {v} watts", "fill up the {d} at {v} watts"),
    "battery_discharge": ("discharge the {d} at {v} watts", "power the home from the {d} at {v} watts"),
}
FILLERS = ("uh", "um", "erm", "hmm")
#: The words that open a self-correction, and the fillers the reader ignores.
_CORRECTION = re.compile(r"\bthe ((?:(?!\bthe\b)[^,;])+?),? no,? wait,? the ")
_FILLER = re.compile(r"(?:^|(?<=[\s,]))(?:uh|um|erm|hmm)(?:,)?(?=\s|$)")


def say(op: dict[str, Any], names: dict[str, str], style: str = "clear", rng: random.Random | None = None,
        decoy: str | None = None) -> str:
    """One operation in words. `names`: device id -> name; `decoy`: for noisy, the device named
    first and then corrected away from."""
    forms = PHRASES[op["op"]]
    if style == "clear":
        template = forms[0]
    else:
        assert rng is not None
        pick = 1 + rng.randrange(len(forms) - 1) if style == "colloquial" else rng.randrange(len(forms))
        template = forms[pick]
    name = names[op["device"]].lower()
    text = template.format(d=name, v=op.get("value"))
    if style == "noisy":
        assert rng is not None
        if decoy is not None:
            text = text.replace(f"the {name}", f"the {names[decoy].lower()}, no wait, the {name}", 1)
        words = text.split()
        k = rng.randrange(len(words))
        words.insert(k, words[k])   # a stutter
        words.insert(rng.randrange(len(words) + 1), rng.choice(FILLERS) + ",")
        text = " ".join(words)
    return text


def normalize(text: str) -> str:
    """Lower case, fillers gone, stutters collapsed, self-corrections resolved."""
    text = text.lower().strip()
    text = _FILLER.sub("", text)
    words = text.split()
    kept = [w for i, w in enumerate(words) if i == 0 or w != words[i - 1]]
    text = " ".join(kept)
    text = _CORRECTION.sub("the ", text)
    return re.sub(r"\s+,", ",", text).strip(" .!?")


def _pattern(template: str) -> re.Pattern[str]:
    body = re.escape(template.lower()).replace(r"\{d\}", r"(?P<d>.+?)").replace(r"\{v\}", r"(?P<v>\d+)")
    return re.compile(rf"^(?:please |now |also |and |then )*{body}(?: too| as well| please)?$")


_PATTERNS = [(op, _pattern(t)) for op, forms in PHRASES.items() for t in forms]


def parse_clause(text: str, names: dict[str, str]) -> dict[str, Any] | None:
    """One clause back into an operation (device resolved by its name), or None."""
    by_name = {n.lower(): d for d, n in names.items()}
    text = normalize(text)
    for op, pattern in _PATTERNS:
        m = pattern.match(text)
        if m and m.group("d") in by_name:
            out: dict[str, Any] = {"op": op, "device": by_name[m.group("d")]}
            if "v" in pattern.groupindex:
                out["value"] = int(m.group("v"))
            return out
    return None


def split_clauses(text: str) -> list[str]:
    """A request's clauses: separated by ';' or ', and ' / ' and then '."""
    parts = re.split(r";|, and then |, and | and then ", normalize(text))
    return [p.strip(" ,.") for p in parts if p.strip(" ,.")]


def parse_clauses(text: str, names: dict[str, str]) -> list[dict[str, Any]] | None:
    """Every clause of `text` as an operation; None if any clause is not one."""
    out = []
    for clause in split_clauses(text):
        op = parse_clause(clause, names)
        if op is None:
            return None
        out.append(op)
    return out or None


def join(clauses: list[str]) -> str:
    """Clauses as one request: 'A; B; C'."""
    text = "; ".join(clauses)
    return text[0].upper() + text[1:] + "."


#: TC3 slot-missing requests: op -> (the request, the words a question about the missing value
#: uses (the first is what the reference asks with), how the user states the value).
SLOT_REQUESTS: dict[str, tuple[str, tuple[str, ...], str]] = {
    "brightness": ("Set the {d} brightness.", ("brightness", "bright", "level", "percent"), "{v}%"),
    "fan_speed": ("Set the fan speed of the {d}.", ("fan speed", "speed", "fast", "percent"), "{v}%"),
    "cool": ("Cool the room with the {d}.", ("temperature", "degrees", "setpoint", "cool"), "{v} degrees"),
    "volume": ("Set the {d} volume.", ("volume", "loud", "level", "percent"), "{v}%"),
    "color_temperature": ("Change the {d} colour temperature.", ("colour temperature", "color", "kelvin", "warm"),
                          "{v} K"),
}



def _keys(preds: list[dict[str, Any]]) -> list[str]:
    return sorted(json.dumps(p, sort_keys=True) for p in preds)


def ops_of(goal: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
    """The operations whose `predicates` are exactly `goal`'s, one per device in goal order (the
    inverse of `predicates`), or None when a device's predicates are not one operation's."""
    by_device: dict[str, list[dict[str, Any]]] = {}
    for p in goal:
        if p.get("type") != "device" or p.get("op") != "==":
            return None
        by_device.setdefault(p["device_id"], []).append(p)
    out = []
    for dev, preds in by_device.items():
        want = _keys(preds)
        # The value each operation would have, read back from any number in the predicates.
        numbers = {p["value"] for p in preds if isinstance(p["value"], int) and not isinstance(p["value"], bool)}
        values = {v for n in numbers for v in (n, pct_of(n), n // 100, round(1e6 / n) if n else 0, abs(n) // 1000)}
        found = None
        for kind in PHRASES:
            for value in sorted(values) if kind in VALUES else [None]:
                if kind == "color_temperature" and not value:
                    continue   # no colour temperature of 0 K
                op = {"op": kind, "device": dev, **({"value": value} if value is not None else {})}
                if _keys(predicates(op)) == want:
                    found = op
                    break
            if found:
                break
        if found is None:
            return None
        out.append(found)
    return out
