"""The SimuHome tool set (Appendix B, Table 5), written once against `Backend`.

    from bridge.tools import TOOL_SCHEMAS, Session, call_tool
    result = call_tool(backend, "get_room_devices", {"room.id": "kitchen"}, session)

Every result is a JSON object. Success: `{"ok": true, ...payload}`. Failure:
`{"ok": false, "error": {"code", "message", "accepted"?}}` where `code` is a Matter status
name (CONSTRAINT_ERROR, UNSUPPORTED_WRITE, ...) or a bridge code (UNKNOWN_TOOL,
INVALID_ARGUMENT, NOT_FOUND, UNAVAILABLE). A call never raises.

Argument names are the paper's dotted ones (`device.id`, `cluster.id`, ...); the
underscore forms (`device_id`) are accepted too. Clusters, attributes and commands may be
given by spec name or numeric id (`"OnOff"`, `6`, `"6"`, `"0x0006"`).
"""
from __future__ import annotations

import copy
import datetime as _dt
from dataclasses import dataclass, field
from typing import Any, Callable

from clusters.status import MatterError

from bridge.backend import INVALID_ARGUMENT, NOT_FOUND, TIME_FORMAT, UNAVAILABLE, UNKNOWN_TOOL, Backend, ToolError

# ---- the session: who answers ask_user, who hears finish, and the history ----------------


@dataclass
class Session:
    """Supplied by whoever runs the agent. `history` records every call, in order, as
    {"tool", "args", "result"}; the benchmark evaluator reads it."""
    ask_user: Callable[[str], str] | None = None
    on_finish: Callable[[str], Any] | None = None
    history: list[dict[str, Any]] = field(default_factory=list)
    answer: str | None = None

    @property
    def finished(self) -> bool:
        return self.answer is not None


# ---- schemas ------------------------------------------------------------------------------

_ID = {"type": ["string", "integer"]}


def _prop(schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {**schema, "description": description}


_DEVICE = _prop({"type": "string"}, "Device id, as listed by get_room_devices (e.g. \"living_room_light_1\").")
_ROOM = _prop({"type": "string"}, "Room id, as listed by get_rooms (e.g. \"living_room\").")
_ENDPOINT = _prop(_ID, "Endpoint id (an integer, e.g. 1), as listed by get_device_structure.")
_ENDPOINT_OPT = _prop(_ID, "Endpoint id; optional, defaults to the first endpoint that has the cluster.")
_CLUSTER = _prop(_ID, "Cluster by spec name (\"OnOff\", \"LevelControl\") or numeric id (6).")
_ATTRIBUTE = _prop(_ID, "Attribute by spec name (\"CurrentLevel\") or numeric id.")
_COMMAND = _prop(_ID, "Command by spec name (\"MoveToLevel\") or numeric id.")
_WORKFLOW = _prop({"type": "string"}, "Workflow id, as returned by schedule_workflow.")

STATES = ("temperature", "humidity", "illuminance", "pm10")
STATE_ALIASES = {"temp": "temperature", "temperature": "temperature", "humidity": "humidity",
                 "rh": "humidity", "illuminance": "illuminance", "light": "illuminance",
                 "brightness": "illuminance", "lux": "illuminance", "pm10": "pm10",
                 "pm": "pm10", "air_quality": "pm10", "air quality": "pm10", "dust": "pm10"}

_STEP = {
    "type": "object",
    "properties": {
        "tool": {"type": "string", "enum": ["execute_command", "write_attribute"],
                 "description": "Which tool the step calls."},
        "args": {"type": "object", "description": "The arguments that tool takes, exactly as if called directly."},
    },
    "required": ["tool", "args"],
    "additionalProperties": False,
}


def _tool(name: str, description: str, properties: dict[str, Any] | None = None,
          required: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"type": "function", "function": {
        "name": name, "description": description,
        "parameters": {"type": "object", "properties": properties or {},
                       "required": list(required), "additionalProperties": False}}}


#: OpenAI function-calling schemas, in the order of the paper's Table 5.
TOOL_SCHEMAS: list[dict[str, Any]] = [
    _tool("finish", "Complete the task and return the final natural-language answer.",
          {"answer": _prop({"type": "string"}, "Final response text for the user.")}, ("answer",)),
    _tool("get_environment_control_rules",
          "Get control rules for a specific environmental state: which device types and "
          "settings raise or lower it.",
          {"state": _prop({"type": "string"}, "Environmental state: temperature (temp), humidity, "
                          "illuminance (light) or pm10 (air_quality).")}, ("state",)),
    _tool("ask_user", "Ask the user a question to gather additional information, clarify "
          "ambiguity, confirm preferences, or get missing details.",
          {"question": _prop({"type": "string"}, "The question for the user.")}, ("question",)),
    _tool("execute_command", "Execute a command on a device (e.g., turn on light, set level, "
          "set setpoint).",
          {"device.id": _DEVICE, "endpoint.id": _ENDPOINT, "cluster.id": _CLUSTER,
           "command.id": _COMMAND,
           "args": _prop({"type": "object"}, "Command fields by spec label, e.g. {\"level\": 128, "
                         "\"transitionTime\": 0, \"optionsMask\": 0, \"optionsOverride\": 0}; "
                         "{} for commands without fields.")},
          ("device.id", "endpoint.id", "cluster.id", "command.id", "args")),
    _tool("write_attribute", "Directly set a device attribute value.",
          {"device.id": _DEVICE, "cluster.id": _CLUSTER, "attribute.id": _ATTRIBUTE,
           "value": {"description": "New value (JSON: number, boolean, string, null, object or list)."},
           "endpoint.id": _ENDPOINT_OPT},
          ("device.id", "cluster.id", "attribute.id", "value")),
    _tool("get_all_attributes", "Get all attributes of a device, keyed "
          "\"<endpoint>.<Cluster>.<Attribute>\".", {"device.id": _DEVICE}, ("device.id",)),
    _tool("get_attribute", "Get a specific attribute of a device.",
          {"device.id": _DEVICE, "cluster.id": _CLUSTER, "attribute.id": _ATTRIBUTE,
           "endpoint.id": _ENDPOINT_OPT},
          ("device.id", "cluster.id", "attribute.id")),
    _tool("get_device_structure", "Get device structure (endpoints, clusters, attributes, and "
          "commands).", {"device.id": _DEVICE}, ("device.id",)),
    _tool("get_rooms", "Get all rooms in the home along with their display names."),
    _tool("get_room_devices", "Get all devices in a room.", {"room.id": _ROOM}, ("room.id",)),
    _tool("get_room_states", "Get environmental states of a room: temperature in 0.01 °C (2300 = 23.00 °C), "
          "humidity in 0.01 %RH (5500 = 55.00 %), illuminance in lux, PM10 in µg/m³.", {"room.id": _ROOM}, ("room.id",)),
    _tool("get_cluster_doc", "Search the Matter cluster documentation (attributes, commands, "
          "value ranges, cross-cluster rules).",
          {"query": _prop({"type": "string"}, "What to look for, e.g. \"fan speed percent\"."),
           "top_k": _prop({"type": "integer", "minimum": 1, "maximum": 20},
                          "How many cluster documents to return (1-20).")},
          ("query", "top_k")),
    _tool("get_current_time", "Get current virtual time as human-friendly string "
          "\"YYYY-MM-DD HH:MM:SS\"."),
    _tool("schedule_workflow", "Schedule a sequential workflow of steps at a virtual absolute "
          "time. Steps run in order at start_time. Success means scheduled, not that every "
          "step will succeed.",
          {"start_time": _prop({"type": "string"}, "Absolute virtual time \"YYYY-MM-DD HH:MM:SS\"."),
           "steps": _prop({"type": "array", "items": _STEP, "minItems": 1},
                          "Steps, each {\"tool\": \"execute_command\"|\"write_attribute\", "
                          "\"args\": {...that tool's arguments...}}.")},
          ("start_time", "steps")),
    _tool("cancel_workflow", "Cancel a scheduled workflow by id.", {"workflow.id": _WORKFLOW},
          ("workflow.id",)),
    _tool("get_workflow_status", "Get workflow status by id.", {"workflow.id": _WORKFLOW},
          ("workflow.id",)),
    _tool("get_workflow_list", "Get list of workflows with optional filtering.",
          {"status": _prop({"type": "string"}, "Only workflows with this status "
                           "(e.g. scheduled, completed, failed, cancelled).")}),
]

SCHEMAS_BY_NAME: dict[str, dict[str, Any]] = {s["function"]["name"]: s["function"] for s in TOOL_SCHEMAS}
TOOL_NAMES: tuple[str, ...] = tuple(sorted(SCHEMAS_BY_NAME))


# ---- argument validation (a small JSON-schema subset, enough for the schemas above) ---------

_JSON_TYPES = {"string": str, "integer": int, "number": (int, float), "boolean": bool,
               "object": dict, "array": list, "null": type(None)}


def _type_ok(value: Any, typ: str) -> bool:
    if typ in ("integer", "number") and isinstance(value, bool):
        return False
    if typ == "integer" and isinstance(value, float) and value.is_integer():
        return True
    return isinstance(value, _JSON_TYPES[typ])


def _check(value: Any, schema: dict[str, Any], where: str) -> None:
    typ = schema.get("type")
    if typ is not None:
        types = [typ] if isinstance(typ, str) else typ
        if not any(_type_ok(value, t) for t in types):
            raise ToolError(INVALID_ARGUMENT, f"{where} must be {' or '.join(types)}, "
                            f"got {type(value).__name__} {value!r}")
    if "enum" in schema and value not in schema["enum"]:
        raise ToolError(INVALID_ARGUMENT, f"{where}={value!r} is not accepted",
                        accepted=list(schema["enum"]))
    if "minimum" in schema and value < schema["minimum"] or "maximum" in schema and value > schema["maximum"]:
        raise ToolError(INVALID_ARGUMENT, f"{where}={value!r} is outside "
                        f"{schema.get('minimum', '-inf')}..{schema.get('maximum', 'inf')}")
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0):
            raise ToolError(INVALID_ARGUMENT, f"{where} needs at least {schema['minItems']} item(s)")
        for i, item in enumerate(value):
            _check(item, schema.get("items", {}), f"{where}[{i}]")
    if isinstance(value, dict) and "properties" in schema:
        _check_object(value, schema, where)


def _check_object(args: dict[str, Any], schema: dict[str, Any], where: str) -> None:
    props = schema["properties"]
    if schema.get("additionalProperties") is False:
        unknown = [k for k in args if k not in props]
        if unknown:
            raise ToolError(INVALID_ARGUMENT, f"{where}: unknown argument(s) {', '.join(unknown)}",
                            accepted=list(props))
    missing = [k for k in schema.get("required", ()) if k not in args]
    if missing:
        raise ToolError(INVALID_ARGUMENT, f"{where}: missing required argument(s) {', '.join(missing)}",
                        accepted=list(props))
    for key, value in args.items():
        _check(value, props[key], f"{where}.{key}" if where else key)


def normalize_args(name: str, args: Any) -> dict[str, Any]:
    """Validate `args` for tool `name` and return them keyed by the canonical names."""
    schema = SCHEMAS_BY_NAME[name]["parameters"]
    if args is None:
        args = {}
    if not isinstance(args, dict):
        raise ToolError(INVALID_ARGUMENT, f"{name} takes a JSON object of arguments, got "
                        f"{type(args).__name__}", accepted=list(schema["properties"]))
    aliases = {p.replace(".", "_"): p for p in schema["properties"] if "." in p}
    out: dict[str, Any] = {}
    for key, value in args.items():
        canonical = aliases.get(key, key)
        if canonical in out:
            raise ToolError(INVALID_ARGUMENT, f"{name}: {canonical} given twice ({key!r} and {canonical!r})")
        out[canonical] = value
    _check_object(out, schema, name)
    return out


def _id(value: Any) -> Any:
    """A cluster/attribute/command/endpoint id: ints and numeric strings become int."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        text = value.strip()
        try:
            return int(text, 16) if text.lower().startswith("0x") else int(text) if text.isdigit() else text
        except ValueError:
            return text
    return value


def _endpoint(value: Any) -> int | None:
    if value is None:
        return None
    endpoint = _id(value)
    if not isinstance(endpoint, int):
        raise ToolError(INVALID_ARGUMENT, f"endpoint.id must be an integer, got {value!r}")
    return endpoint


# ---- the tools ------------------------------------------------------------------------------

def _get_rooms(backend: Backend, args: dict, session: Session) -> dict:
    return {"rooms": backend.rooms()}


def _get_room_devices(backend: Backend, args: dict, session: Session) -> dict:
    return {"room_id": args["room.id"], "devices": backend.room_devices(args["room.id"])}


#: Room states in SimuHome's units (its agent prompt, "Room State Units"), which are also
#: the Matter measurement clusters' units: temperature and humidity in hundredths
#: (2300 = 23.00 °C, 5500 = 55.00 %RH), illuminance in lux, PM10 in µg/m³. Rounded here,
#: at the edge; the home keeps full precision.
ROOM_STATE_UNITS = {"temperature": "0.01 °C", "humidity": "0.01 %RH", "illuminance": "lux", "pm10": "µg/m³"}
_SCALE = {"temperature": 100, "humidity": 100, "illuminance": 1, "pm10": 1}


def _rounded(name: str, value: float) -> int:
    return int(round(value * _SCALE[name]))


def _get_room_states(backend: Backend, args: dict, session: Session) -> dict:
    raw = backend.room_states(args["room.id"])
    return {"room_id": args["room.id"],
            **{k: _rounded(k, raw[k]) for k in STATES}, "units": ROOM_STATE_UNITS}


def _get_device_structure(backend: Backend, args: dict, session: Session) -> dict:
    return backend.device_structure(args["device.id"])


def _get_all_attributes(backend: Backend, args: dict, session: Session) -> dict:
    return {"device_id": args["device.id"], "attributes": backend.read_all_attributes(args["device.id"])}


def _get_attribute(backend: Backend, args: dict, session: Session) -> dict:
    out = backend.read_attribute(args["device.id"], _endpoint(args.get("endpoint.id")),
                                 _id(args["cluster.id"]), _id(args["attribute.id"]))
    return {"device_id": args["device.id"], **out}


def _write_attribute(backend: Backend, args: dict, session: Session) -> dict:
    out = backend.write_attribute(args["device.id"], _endpoint(args.get("endpoint.id")),
                                  _id(args["cluster.id"]), _id(args["attribute.id"]), args["value"])
    return {"device_id": args["device.id"], **out}


def _execute_command(backend: Backend, args: dict, session: Session) -> dict:
    out = backend.invoke(args["device.id"], _endpoint(args["endpoint.id"]), _id(args["cluster.id"]),
                         _id(args["command.id"]), args["args"])
    return {"device_id": args["device.id"], **out}


def _get_cluster_doc(backend: Backend, args: dict, session: Session) -> dict:
    from bridge.docs import get_cluster_doc
    return {"query": args["query"], "results": get_cluster_doc(args["query"], args["top_k"])}


def _get_environment_control_rules(backend: Backend, args: dict, session: Session) -> dict:
    state = STATE_ALIASES.get(args["state"].strip().lower().replace("-", "_"))
    if state is None:
        raise ToolError(INVALID_ARGUMENT, f"unknown environmental state {args['state']!r}",
                        accepted=list(STATES))
    return {"state": state, "unit": ROOM_STATE_UNITS[state], "rules": environment_rules(state)}


def _get_current_time(backend: Backend, args: dict, session: Session) -> dict:
    return {"current_time": backend.current_time()}


def _schedule_workflow(backend: Backend, args: dict, session: Session) -> dict:
    start = args["start_time"].strip()
    try:
        _dt.datetime.strptime(start, TIME_FORMAT)
    except ValueError:
        raise ToolError(INVALID_ARGUMENT, f"start_time {start!r} is not \"YYYY-MM-DD HH:MM:SS\"") from None
    steps = []
    for i, step in enumerate(args["steps"]):
        try:
            step_args = normalize_args(step["tool"], step["args"])
        except ToolError as err:
            raise ToolError(err.code, f"steps[{i}]: {err.message}", err.accepted) from None
        _endpoint(step_args.get("endpoint.id"))  # reject non-integer endpoints now, not at run time
        steps.append({"tool": step["tool"], "args": step_args})
    return backend.schedule_workflow(start, steps)


def _cancel_workflow(backend: Backend, args: dict, session: Session) -> dict:
    return backend.cancel_workflow(args["workflow.id"])


def _get_workflow_status(backend: Backend, args: dict, session: Session) -> dict:
    return backend.workflow_status(args["workflow.id"])


def _get_workflow_list(backend: Backend, args: dict, session: Session) -> dict:
    workflows = backend.workflows()
    if "status" in args:
        workflows = [w for w in workflows if str(w.get("status", "")).lower() == args["status"].lower()]
    return {"workflows": workflows}


def _ask_user(backend: Backend, args: dict, session: Session) -> dict:
    if session.ask_user is None:
        raise ToolError(UNAVAILABLE, "nobody is available to answer questions in this session; "
                        "decide with the information at hand or explain what is missing in finish")
    return {"question": args["question"], "answer": str(session.ask_user(args["question"]))}


def _finish(backend: Backend, args: dict, session: Session) -> dict:
    session.answer = args["answer"]
    if session.on_finish is not None:
        session.on_finish(args["answer"])
    return {"finished": True, "answer": args["answer"]}


_HANDLERS: dict[str, Callable[[Backend, dict, Session], dict]] = {
    "get_rooms": _get_rooms, "get_room_devices": _get_room_devices,
    "get_room_states": _get_room_states, "get_device_structure": _get_device_structure,
    "get_all_attributes": _get_all_attributes, "get_attribute": _get_attribute,
    "execute_command": _execute_command, "write_attribute": _write_attribute,
    "get_cluster_doc": _get_cluster_doc,
    "get_environment_control_rules": _get_environment_control_rules,
    "get_current_time": _get_current_time, "schedule_workflow": _schedule_workflow,
    "cancel_workflow": _cancel_workflow, "get_workflow_status": _get_workflow_status,
    "get_workflow_list": _get_workflow_list, "ask_user": _ask_user, "finish": _finish,
}
assert set(_HANDLERS) == set(SCHEMAS_BY_NAME)


def call_tool(backend: Backend, name: str, args: Any = None, session: Session | None = None) -> dict:
    """Run one tool. Never raises: failures come back as {"ok": false, "error": {...}}."""
    session = session if session is not None else Session()
    try:
        if name not in _HANDLERS:
            raise ToolError(UNKNOWN_TOOL, f"there is no tool {name!r}", accepted=list(TOOL_NAMES))
        result = {"ok": True, **_HANDLERS[name](backend, normalize_args(name, args), session)}
    except ToolError as err:
        result = {"ok": False, "error": err.to_json()}
    except MatterError as err:  # a backend that let one through
        result = {"ok": False, "error": {"code": err.status.name, "message": err.message}}
    except Exception as err:  # the boundary: an agent gets data, never a traceback
        result = {"ok": False, "error": {"code": "INTERNAL_ERROR",
                                         "message": f"{type(err).__name__}: {err}"}}
    session.history.append({"tool": name, "args": copy.deepcopy(args), "result": result})
    return result


# ---- environment control rules --------------------------------------------------------------

def _minutes(k_per_tick: float) -> str:
    """Time constant of a first-order pull with coefficient k per 0.1 s tick."""
    return f"{1 / (k_per_tick * 10) / 60:.0f} min"


def environment_rules(state: str) -> list[dict[str, Any]]:
    """Which device types raise or lower one room state, and how strongly.

    Derived from twin/physics.py's coefficient table, so the rules an agent reads are the
    ones the twin simulates (each device pulls the room towards a target; "strength" is the
    time constant of that pull).
    """
    from twin.physics import COEFFICIENTS as C
    from twin.physics import COOL_MODES, HEAT_MODES  # the twin's own mode sets

    def modes(ms: Any) -> str:
        return " or ".join(f"{int(m)} ({m.name[1:]})" for m in sorted(ms))
    thermostat = (f"Thermostat.SystemMode {modes(COOL_MODES)}: pulls down towards "
                  "OccupiedCoolingSetpoint while the room is warmer; SystemMode "
                  f"{modes(HEAT_MODES)}: pulls up towards OccupiedHeatingSetpoint while the "
                  "room is colder; other modes do nothing")
    rules: dict[str, list[dict[str, Any]]] = {
        "temperature": [
            {"device_type": "air_conditioner", "effect": "lower or raise",
             "when": "OnOff.OnOff is true and FanControl.PercentCurrent > 0. " + thermostat,
             "controls": ["OnOff.On", "FanControl.PercentSetting", "Thermostat.SystemMode",
                          "Thermostat.OccupiedCoolingSetpoint", "Thermostat.OccupiedHeatingSetpoint"],
             "strength": f"grows with FanControl.PercentCurrent; at 100 % time constant "
                         f"{_minutes(C['ac_k_full_fan'])}"},
            {"device_type": "heat_pump", "effect": "raise or lower", "when": thermostat,
             "controls": ["Thermostat.SystemMode", "Thermostat.OccupiedHeatingSetpoint",
                          "Thermostat.OccupiedCoolingSetpoint"],
             "strength": f"fixed; time constant {_minutes(C['heat_pump_k'])}"},
        ],
        "humidity": [
            {"device_type": kind, "effect": effect,
             "when": "OnOff.OnOff is true and FanControl.PercentCurrent > 0",
             "controls": ["OnOff.On", "FanControl.PercentSetting"],
             "strength": f"pulls towards {C[kind]['target']:g} %RH; grows with "
                         f"FanControl.PercentCurrent; at 100 % time constant {_minutes(C[kind]['k_full_fan'])}"}
            for kind, effect in (("humidifier", "raise"), ("dehumidifier", "lower"))],
        "illuminance": [
            *({"device_type": kind, "effect": "raise",
               "when": "OnOff.OnOff is true" + ("" if kind == "on_off_light" else
                                                "; scales with LevelControl.CurrentLevel (1-254)"),
               "controls": ["OnOff.On", "OnOff.Off"] + ([] if kind == "on_off_light" else
                                                       ["LevelControl.MoveToLevel"]),
               "strength": f"adds up to {lux:g} lux at once; Off (or a lower level) removes it"}
              for kind, lux in C["light_lux"].items()),
            {"device_type": "window_covering", "effect": "raise or lower",
             "when": "daylight enters in proportion to how open the coverings are "
                     "(WindowCovering.CurrentPositionLiftPercent100ths: 0 open, 10000 closed)",
             "controls": ["WindowCovering.UpOrOpen", "WindowCovering.DownOrClose",
                          "WindowCovering.GoToLiftPercentage"],
             "strength": "the room's daylight times the mean openness of its coverings"},
        ],
        "pm10": [
            {"device_type": "air_purifier", "effect": "lower",
             "when": "OnOff.OnOff is true and FanControl.PercentCurrent > 0",
             "controls": ["OnOff.On", "FanControl.PercentSetting"],
             "strength": f"pulls towards {C['air_purifier']['target']:g} µg/m³; grows with "
                         f"FanControl.PercentCurrent; at 100 % time constant "
                         f"{_minutes(C['air_purifier']['k_full_fan'])}"},
        ],
    }
    out = rules[state]
    if state in C["ambient_k"]:
        out.append({"device_type": None, "effect": "drift",
                    "when": "always: the room drifts slowly towards the outdoor (ambient) value",
                    "controls": [], "strength": f"time constant {_minutes(C['ambient_k'][state])}"})
    return out


__all__ = ["NOT_FOUND", "ROOM_STATE_UNITS", "SCHEMAS_BY_NAME", "TOOL_NAMES", "TOOL_SCHEMAS",
           "Session", "ToolError", "call_tool", "environment_rules", "normalize_args"]
