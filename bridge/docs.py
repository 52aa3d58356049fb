"""Offline cluster documentation for `get_cluster_doc`, generated from the data model.

One document per cluster, built by instantiating every registered device type and asking
each cluster server to `describe()` itself: id, a one-line purpose, attributes (type,
writability, the value a fresh device has, enum values), commands with their fields,
FeatureMap per device type, the server's notes and the cross-cluster rules of
clusters/rules.py. Search is BM25 (written here; no dependency), deterministic: ties break
by cluster name.
"""
from __future__ import annotations

import enum
import functools
import json
import math
import random
import re
from collections import Counter
from typing import Any

from clusters import devices as _devices  # noqa: F401  (registers the device types)
from clusters.base import GLOBAL_ATTRIBUTES
from clusters.devices import DEVICE_TYPES
from clusters.rules import RULES
from clusters.value_types import Kind, shape
from clusters.values import enum_members, to_json

#: One line on what each cluster is for (the data model has ids and types, not purposes).
PURPOSE = {
    "BasicInformation": "Identity of the node: vendor, product, serial number, software version.",
    "Descriptor": "Composition of an endpoint: its device types, server and client clusters, parts.",
    "Identify": "Make a device identify itself (blink, beep) for a number of seconds.",
    "OnOff": "Turn a device on or off (power); Toggle; timed on with OnWithTimedOff (lighting feature).",
    "LevelControl": "Brightness or level from MinLevel to MaxLevel (1-254), moved with MoveToLevel, "
                    "Move, Step and Stop, optionally with a transition time in tenths of a second.",
    "FanControl": "Fan speed: FanMode (Off, Low, Medium, High, Auto) and PercentSetting 0-100; "
                  "PercentCurrent is the actual speed.",
    "Thermostat": "Heating and cooling: SystemMode (Off, Cool, Heat, ...), occupied cooling and "
                  "heating setpoints in hundredths of °C, LocalTemperature of the room; presets "
                  "(SetActivePresetRequest with a handle from Presets), ThermostatRunningState.",
    "TemperatureMeasurement": "Measured temperature in hundredths of °C.",
    "RelativeHumidityMeasurement": "Measured relative humidity in hundredths of a percent.",
    "TemperatureControl": "Target temperature of an appliance (setpoint or temperature levels).",
    "OperationalState": "Run state of an appliance cycle: Start, Stop, Pause, Resume; phases and "
                        "CountdownTime (seconds until the cycle ends).",
    "RvcOperationalState": "Run state of a robot vacuum: Pause, Resume, GoHome; phases, countdown.",
    "RvcRunMode": "Robot vacuum run modes (idle, cleaning, mapping) changed with ChangeToMode.",
    "RvcCleanMode": "Robot vacuum cleaning modes (vacuum, mop) changed with ChangeToMode.",
    "DishwasherMode": "Dishwasher program (normal, heavy, light) changed with ChangeToMode.",
    "DishwasherAlarm": "Dishwasher alarms (door, water, temperature) with mask, latch and reset.",
    "LaundryWasherMode": "Washer program (normal, delicate, heavy, whites) changed with ChangeToMode.",
    "LaundryWasherControls": "Washer spin speed and number of rinses.",
    "LaundryDryerControls": "Dryer dryness level.",
    "RefrigeratorAndTemperatureControlledCabinetMode": "Fridge or freezer mode (normal, rapid "
                                                       "cool, rapid freeze) via ChangeToMode.",
    "WindowCovering": "Blinds and shades: lift (and slat tilt) position in hundredths of a percent "
                      "(0 open, 10000 closed), UpOrOpen, DownOrClose, StopMotion, GoToLiftPercentage, "
                      "GoToTiltPercentage.",
    "Groups": "Group membership of the endpoint (AddGroup, ViewGroup, RemoveGroup); scenes use it.",
    "ScenesManagement": "Scenes: StoreScene saves the current on/off, level or cover position, "
                        "RecallScene restores it; FabricSceneInfo shows the current scene.",
    "ServiceArea": "Rooms a robot vacuum can clean (SupportedAreas): SelectAreas picks the rooms "
                   "for the next run; CurrentArea and Progress follow the cleaning; SkipArea "
                   "skips a room of the run under way.",
    "ThermostatUserInterfaceConfiguration": "Thermostat panel settings: temperature display unit, "
                                            "keypad lockout.",
    "HepaFilterMonitoring": "HEPA filter condition in percent (falls with use), ResetCondition "
                            "after replacing it.",
    "ActivatedCarbonFilterMonitoring": "Activated carbon filter condition in percent (falls with "
                                       "use), ResetCondition after replacing it.",
    "RefrigeratorAlarm": "Fridge alarms: DoorOpen when a door stays open.",
    "MediaPlayback": "Play, pause, stop and seek media; CurrentState.",
    "Channel": "TV channel list and ChangeChannel, ChangeChannelByNumber, SkipChannel.",
    "KeypadInput": "Send remote-control key presses (SendKey).",
    "PowerSource": "Power source: wired or battery, voltage, charge level (BatPercentRemaining in "
                   "half percent), charging state.",
    "PowerTopology": "Which endpoints are powered and measured.",
    "ElectricalPowerMeasurement": "Instantaneous electrical power, voltage and current.",
    "ElectricalEnergyMeasurement": "Imported and exported electrical energy.",
    "DeviceEnergyManagement": "Energy management of a device: ESA state, power limits, forecast.",
    "AirQuality": "Air quality class of the room.",
    "Pm10ConcentrationMeasurement": "Measured PM10 concentration.",
    "ColorControl": "Light colour: colour temperature in mireds (MoveToColorTemperature), hue and "
                    "saturation (MoveToHueAndSaturation), CIE x/y (MoveToColor), colour loop.",
    "Switch": "A button or rocker: its position and its press, long press and multi-press events.",
    "Binding": "The devices or groups a switch or controller sends its commands to.",
    "OvenCavityOperationalState": "Oven cavity run state: Start, Stop; phases (preheat, bake), countdown.",
    "OvenMode": "Oven program (bake, convection, grill, roast, clean) changed with ChangeToMode.",
    "MicrowaveOvenMode": "Microwave mode (normal, defrost), set by SetCookingParameters.",
    "MicrowaveOvenControl": "Microwave cooking: SetCookingParameters (cook time in seconds, power "
                            "percent, start), AddMoreTime.",
    "WaterHeaterManagement": "Hot water tank: heat demand, tank percentage, Boost (heat now) and CancelBoost.",
    "WaterHeaterMode": "Water heater mode (off, manual, timed) changed with ChangeToMode.",
    "EnergyEvse": "Electric vehicle charger: EnableCharging (current limits), Disable, the car's "
                  "state of charge, session energy; charging targets.",
    "EnergyEvseMode": "EV charger mode (manual, time of use, solar charging) changed with ChangeToMode.",
    "ValveConfigurationAndControl": "Water valve: Open (for a duration), Close; current and target state.",
    "PumpConfigurationAndControl": "Pump operation mode (normal, minimum, maximum), speed, flow, power.",
    "ModeSelect": "A device's own modes (a coffee machine's drinks) changed with ChangeToMode.",
}


def name_is_composition(cluster: str) -> bool:
    return cluster == "Descriptor"


def _enum_type(typ: Any) -> type[enum.Enum] | None:
    """The enum inside a (possibly Optional/Nullable/list) chip type, if any."""
    s = shape(typ)
    if s.is_union and len(s.options) != 1:
        return next((found for option in s.options if (found := _enum_type(option))), None)
    if s.kind is Kind.LIST:
        return _enum_type(s.item)
    return s.typ if s.kind is Kind.ENUM else None


def _enum_text(typ: Any) -> str:
    found = _enum_type(typ)
    if not found:
        return ""
    return " values: " + ", ".join(f"{v}={k.removeprefix('k')}" for k, v in enum_members(found).items())


@functools.lru_cache(maxsize=4)
def _documents(device_type_keys: tuple[str, ...]) -> tuple[dict[str, Any], ...]:
    by_cluster: dict[str, dict[str, Any]] = {}
    rng = random.Random(0)
    for key in device_type_keys:
        device = _devices.create_device(f"doc_{key}", key, rng=rng)
        for ep_id, ep in sorted(device.endpoints.items()):
            for server in ep.servers.values():
                info = server.describe()
                doc = by_cluster.setdefault(info["name"], {
                    "name": info["name"], "id": info["id"], "revision": info["revision"],
                    "attributes": {}, "commands": {}, "feature_maps": {}, "notes": set(),
                    "device_types": set()})
                if info["feature_map"]:
                    doc["feature_maps"][f"{key} endpoint {ep_id}"] = info["feature_map"]
                if ep_id != 0 and not name_is_composition(info["name"]):
                    label = DEVICE_TYPES[key].label
                    doc["device_types"].add(f"{label} ({key})")
                doc["notes"].update(getattr(server, "notes", ()))
                for attr in info["attributes"]:
                    if attr["name"] in doc["attributes"] or attr["name"] in GLOBAL_ATTRIBUTES:
                        continue
                    try:
                        current = to_json(server.read(attr["name"]))
                    except Exception:  # a derived value may need a home around it
                        current = None
                    if isinstance(current, (list, dict)) or name_is_composition(info["name"]):
                        current = None  # per-device content, not a useful default
                    extra = {k: v for k, v in attr.items() if k not in ("name", "id", "type", "writable")}
                    doc["attributes"][attr["name"]] = {
                        **attr, "default": current, "extra": extra,
                        "enum": _enum_text(server.attribute_class(attr["name"]).attribute_type.Type)}
                for cmd in info["commands"]:
                    if cmd["name"] in doc["commands"]:
                        continue
                    fields = server.command_class(cmd["name"]).descriptor.Fields
                    doc["commands"][cmd["name"]] = {
                        **cmd, "enums": {f.Label: _enum_text(f.Type) for f in fields if _enum_text(f.Type)}}
    out = []
    for name in sorted(by_cluster):
        doc = by_cluster[name]
        doc["text"] = _render(doc)
        out.append(doc)
    return tuple(out)


def _render(doc: dict[str, Any]) -> str:
    name = doc["name"]
    lines = [f"# {name} cluster (id {doc['id']:#06x}, revision {doc['revision']})",
             PURPOSE.get(name, f"The Matter {name} cluster."), "", "Attributes:"]
    for a in doc["attributes"].values():
        access = "writable" if a["writable"] else "read-only"
        extra = "".join(f"; {k}: {v}" for k, v in a["extra"].items())
        default = "" if a["default"] is None else f"; default {json.dumps(a['default'])}"
        lines.append(f"- {a['name']} (id {a['id']}, {a['type']}, {access}{default}{extra}){a['enum']}")
    lines.append("- plus the global attributes " + ", ".join(GLOBAL_ATTRIBUTES) + " (read-only)")
    lines.append("Commands:" if doc["commands"] else "Commands: none")
    for c in doc["commands"].values():
        fields = ", ".join(f"{k}: {v}" for k, v in c["fields"].items()) or "no fields"
        enums = "".join(f"; {k}{v}" for k, v in c["enums"].items())
        lines.append(f"- {c['name']} (id {c['id']}): {fields}{enums}")
    if doc["feature_maps"]:
        lines.append("FeatureMap: " + ", ".join(f"{k}: {v:#x}" for k, v in sorted(doc["feature_maps"].items())))
    else:
        lines.append("FeatureMap: 0 (no optional features)")
    if doc["device_types"]:
        lines.append("Used by device types: " + ", ".join(sorted(doc["device_types"])))
    rules = [r for r in RULES if r.cluster == name]
    if rules or doc["notes"]:
        lines.append("Rules:")
    for rule in rules:
        who = ", ".join(rule.device_types) or "all device types"
        answer = (f"otherwise {rule.status.name}" if getattr(rule, "enforced_here", True)
                  else "answered by the cluster's own response")
        lines.append(f"- {', '.join(rule.operations)} on {who}: {rule.explanation} ({answer})")
    lines.extend(f"- {note}" for note in sorted(doc["notes"]))
    return "\n".join(lines)


# ---- BM25 ----------------------------------------------------------------------------------

_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")


_STOP = frozenset("a an and are as at be by do does for from how i in is it me my of or "
                  "the this to what when which with you".split())


def tokenize(text: str) -> list[str]:
    """Lowercase words; CamelCase names also split into parts (CurrentLevel -> current, level)."""
    out: list[str] = []
    for word in re.findall(r"[A-Za-z0-9]+", text):
        if word.lower() in _STOP:
            continue
        parts = _CAMEL.findall(word)
        out.append(word.lower())
        if len(parts) > 1:
            out.extend(p.lower() for p in parts)
    return out


class BM25:
    def __init__(self, texts: list[str], k1: float = 1.5, b: float = 0.75):
        self.k1, self.b = k1, b
        self.docs = [Counter(tokenize(t)) for t in texts]
        self.lengths = [sum(d.values()) for d in self.docs]
        self.avg = sum(self.lengths) / max(len(self.docs), 1)
        df: Counter[str] = Counter()
        for d in self.docs:
            df.update(d.keys())
        n = len(self.docs)
        self.idf = {t: math.log(1 + (n - f + 0.5) / (f + 0.5)) for t, f in df.items()}

    def scores(self, query: str) -> list[float]:
        terms = tokenize(query)
        out = []
        for doc, length in zip(self.docs, self.lengths):
            score = 0.0
            for t in terms:
                tf = doc.get(t, 0)
                if tf:
                    score += self.idf[t] * tf * (self.k1 + 1) / (
                        tf + self.k1 * (1 - self.b + self.b * length / self.avg))
            out.append(score)
        return out


@functools.lru_cache(maxsize=4)
def _index(device_type_keys: tuple[str, ...]) -> BM25:
    # Field boost: the cluster's name and purpose count three times, so "turn the light on"
    # finds OnOff before clusters whose rules merely mention "turn it on (OnOff On)".
    docs = _documents(device_type_keys)
    return BM25([" ".join([d["name"], PURPOSE.get(d["name"], "")] * 3 + [d["text"]]) for d in docs])


def documents() -> tuple[dict[str, Any], ...]:
    """Every cluster document of the currently registered device types."""
    return _documents(tuple(sorted(DEVICE_TYPES)))


def get_cluster_doc(query: str, top_k: int = 3, types: Any = None) -> list[dict[str, Any]]:
    """The `top_k` cluster documents that best match `query`, best first, over the clusters of
    the device types `types` (default: every registered type; the tool passes its home's, so a
    SimuHome home reads exactly SimuHome's documents however many types the twin knows).

    A query naming nothing known scores zero everywhere; then nothing is returned rather
    than arbitrary documents.
    """
    known = sorted(set(types or ()) & set(DEVICE_TYPES))
    keys = tuple(known) if known else tuple(sorted(DEVICE_TYPES))
    docs = _documents(keys)
    scores = _index(keys).scores(query)
    ranked = sorted(range(len(docs)), key=lambda i: (-scores[i], docs[i]["name"]))
    return [{"cluster": docs[i]["name"], "cluster_id": docs[i]["id"],
             "score": round(scores[i], 4), "doc": docs[i]["text"]}
            for i in ranked[:max(int(top_k), 0)] if scores[i] > 0]
