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

Each tool's arguments are one pydantic model (`TOOL_MODELS`; the two that are also workflow
steps come from twin/tool_arguments.py). Validation, the OpenAI schemas here, the MCP and HTTP
schemas and the tool docs are all derived from those models.
"""
from __future__ import annotations

import copy
import datetime as _dt
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import Field

from bridge.backend import INVALID_ARGUMENT, NOT_FOUND, TIME_FORMAT, UNAVAILABLE, UNKNOWN_TOOL, Backend, ToolError
from bridge.docs import get_cluster_doc
from clusters.status import MatterError
from twin.physics import COEFFICIENTS as C
from twin.physics import COOL_MODES, HEAT_MODES  # the twin's own mode sets
from twin.tool_arguments import (
    ArgumentError,
    Arguments,
    ExecuteCommand,
    Id,
    Integer,
    OptionalId,
    OptionalText,
    Text,
    WorkflowStep,
    WriteAttribute,
    endpoint_number,
    parameters_schema,
    parse_arguments,
    parse_step,
    plain_id,
)

# ---- the tools' arguments: one model each, the only description of them ---------------------

_ROOM = "Room id, as listed by get_rooms (e.g. \"living_room\")."
_ENDPOINT_OPTIONAL = "Endpoint id; optional, defaults to the first endpoint that has the cluster."
_WORKFLOW = "Workflow id, as returned by schedule_workflow."

STATES = ("temperature", "humidity", "illuminance", "pm10")
STATE_ALIASES = {"temp": "temperature", "temperature": "temperature", "humidity": "humidity",
                 "rh": "humidity", "illuminance": "illuminance", "light": "illuminance",
                 "brightness": "illuminance", "lux": "illuminance", "pm10": "pm10",
                 "pm": "pm10", "air_quality": "pm10", "air quality": "pm10", "dust": "pm10"}


class Finish(Arguments):
    """Complete the task and return the final natural-language answer."""
    answer: Text = Field(description="Final response text for the user.")


class GetEnvironmentControlRules(Arguments):
    """Get control rules for a specific environmental state: which device types and settings
    raise or lower it."""
    state: Text = Field(description="Environmental state: temperature (temp), humidity, "
                        "illuminance (light) or pm10 (air_quality).")


class AskUser(Arguments):
    """Ask the user a question to gather additional information, clarify ambiguity, confirm
    preferences, or get missing details."""
    question: Text = Field(description="The question for the user.")


class _DeviceOnly(Arguments):
    device_id: Text = Field(description=ExecuteCommand.model_fields["device_id"].description)


class GetAllAttributes(_DeviceOnly):
    """Get all attributes of a device, keyed "<endpoint>.<Cluster>.<Attribute>"."""


class GetAttribute(Arguments):
    """Get a specific attribute of a device."""
    device_id: Text = Field(description=WriteAttribute.model_fields["device_id"].description)
    cluster_id: Id = Field(description=WriteAttribute.model_fields["cluster_id"].description)
    attribute_id: Id = Field(description=WriteAttribute.model_fields["attribute_id"].description)
    endpoint_id: OptionalId = Field(None, description=_ENDPOINT_OPTIONAL)


class GetDeviceStructure(_DeviceOnly):
    """Get device structure (endpoints, clusters, attributes, and commands)."""


class GetRooms(Arguments):
    """Get all rooms in the home along with their display names."""


class GetRoomDevices(Arguments):
    """Get all devices in a room."""
    room_id: Text = Field(description=_ROOM)


class GetRoomStates(Arguments):
    """Get environmental states of a room: temperature in 0.01 °C (2300 = 23.00 °C), humidity
    in 0.01 %RH (5500 = 55.00 %), illuminance in lux, PM10 in µg/m³."""
    room_id: Text = Field(description=_ROOM)


class GetClusterDoc(Arguments):
    """Search the Matter cluster documentation (attributes, commands, value ranges,
    cross-cluster rules)."""
    query: Text = Field(description="What to look for, e.g. \"fan speed percent\".")
    top_k: Integer = Field(ge=1, le=20, description="How many cluster documents to return (1-20).")


class GetCurrentTime(Arguments):
    """Get current virtual time as human-friendly string "YYYY-MM-DD HH:MM:SS"."""


class ScheduleWorkflow(Arguments):
    """Schedule a sequential workflow of steps at a virtual absolute time. Steps run in order
    at start_time. Success means scheduled, not that every step will succeed."""
    start_time: Text = Field(description="Absolute virtual time \"YYYY-MM-DD HH:MM:SS\".")
    steps: list[WorkflowStep] = Field(min_length=1, description=(
        "Steps, each {\"tool\": \"execute_command\"|\"write_attribute\", "
        "\"args\": {...that tool's arguments...}}."))


class _WorkflowOnly(Arguments):
    workflow_id: Text = Field(description=_WORKFLOW)


class CancelWorkflow(_WorkflowOnly):
    """Cancel a scheduled workflow by id."""


class GetWorkflowStatus(_WorkflowOnly):
    """Get workflow status by id."""


class GetWorkflowList(Arguments):
    """Get list of workflows with optional filtering."""
    status: OptionalText = Field(None, description="Only workflows with this status "
                         "(e.g. scheduled, completed, failed, cancelled).")


#: Every tool's argument model, in the order of the paper's Table 5.
TOOL_MODELS: dict[str, type[Arguments]] = {
    "finish": Finish, "get_environment_control_rules": GetEnvironmentControlRules,
    "ask_user": AskUser, "execute_command": ExecuteCommand, "write_attribute": WriteAttribute,
    "get_all_attributes": GetAllAttributes, "get_attribute": GetAttribute,
    "get_device_structure": GetDeviceStructure, "get_rooms": GetRooms,
    "get_room_devices": GetRoomDevices, "get_room_states": GetRoomStates,
    "get_cluster_doc": GetClusterDoc, "get_current_time": GetCurrentTime,
    "schedule_workflow": ScheduleWorkflow, "cancel_workflow": CancelWorkflow,
    "get_workflow_status": GetWorkflowStatus, "get_workflow_list": GetWorkflowList,
}


# ---- a suite's own tools ----------------------------------------------------------------------
#: A tool's handler: the backend, the arguments as its validated model (parsed once, in
#: call_tool), the session. `Any` for the model: each handler takes its own model class.
Handler = Callable[[Backend, Any, "Session"], dict[str, Any]]


@dataclass(frozen=True)
class ToolSet:
    """Tools a benchmark suite adds to its agents' sessions (`Session.tools`), each an argument
    model and a handler, e.g. PersonalHomeBench's household tools (scenarios/personal/tools.py).
    They answer only in a session that carries them: the core table (TOOL_MODELS, SimuHome's
    Table 5) never changes, so a SimuHome run sees exactly its 17 tools."""
    models: dict[str, type[Arguments]] = field(default_factory=dict)
    handlers: dict[str, Handler] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if set(self.models) != set(self.handlers):
            raise ValueError(f"tool models {sorted(self.models)} and handlers {sorted(self.handlers)} differ")
        if set(self.models) & set(TOOL_MODELS):
            raise ValueError(f"{sorted(set(self.models) & set(TOOL_MODELS))} are core tools; a suite adds, "
                             "never replaces")

    @property
    def schemas(self) -> list[dict[str, Any]]:
        """OpenAI function-calling schemas of these tools (agents get TOOL_SCHEMAS + these)."""
        return tool_schemas(self.models)


NO_TOOLS = ToolSet()


# ---- the session: who answers ask_user, who hears finish, and the history ----------------


@dataclass
class Session:
    """Supplied by whoever runs the agent. `history` records every call, in order, as
    {"tool", "args", "result"}; the benchmark evaluator reads it."""
    ask_user: Callable[[str], str] | None = None
    on_finish: Callable[[str], Any] | None = None
    history: list[dict[str, Any]] = field(default_factory=list)
    answer: str | None = None
    #: The suite's own tools, answered beside the core ones (ToolSet below).
    tools: ToolSet = NO_TOOLS

    @property
    def finished(self) -> bool:
        return self.answer is not None


def tool_model(name: str, tools: ToolSet = NO_TOOLS) -> type[Arguments]:
    """The argument model of a core tool or of one in `tools` (looked up, never copied)."""
    return TOOL_MODELS[name] if name in TOOL_MODELS else tools.models[name]


def _description(model: type[Arguments]) -> str:
    return " ".join((model.__doc__ or "").split())


def tool_description(name: str) -> str:
    """What the tool does, as agents read it: its model's docstring on one line."""
    return _description(tool_model(name))


def arguments_schema(name: str) -> dict[str, Any]:
    """The JSON schema of a tool's arguments, from its model (OpenAI, MCP and OpenAPI use it)."""
    return parameters_schema(tool_model(name))


def tool_schemas(models: dict[str, type[Arguments]]) -> list[dict[str, Any]]:
    """OpenAI function-calling schemas of tools given by their argument models."""
    return [{"type": "function", "function": {"name": name, "description": _description(model),
                                              "parameters": parameters_schema(model)}}
            for name, model in models.items()]


TOOL_NAMES: tuple[str, ...] = tuple(sorted(TOOL_MODELS))

if TYPE_CHECKING:   # made by __getattr__ on first use
    #: OpenAI function-calling schemas, in the order of the paper's Table 5.
    TOOL_SCHEMAS: list[dict[str, Any]]
    SCHEMAS_BY_NAME: dict[str, dict[str, Any]]


def __getattr__(name: str) -> Any:
    """TOOL_SCHEMAS and SCHEMAS_BY_NAME, made on first use: pydantic's JSON schemas of the
    models are a tenth of a tool call's start-up (`twin tool`), and a call needs none."""
    if name in ("TOOL_SCHEMAS", "SCHEMAS_BY_NAME"):
        schemas = tool_schemas(TOOL_MODELS)
        globals().update(TOOL_SCHEMAS=schemas, SCHEMAS_BY_NAME={s["function"]["name"]: s["function"] for s in schemas})
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def parse_args(name: str, args: Any, tools: ToolSet = NO_TOOLS) -> Arguments:
    """`args` for tool `name` (core, or one of `tools`) as its validated model: the one parse
    of a call's arguments; bad ones raise ToolError(INVALID_ARGUMENT)."""
    try:
        return parse_arguments(tool_model(name, tools), args, name)
    except ArgumentError as err:
        raise ToolError(INVALID_ARGUMENT, err.message, err.accepted) from None


def _endpoint(value: Any) -> int | None:
    try:
        return endpoint_number(value)
    except ArgumentError as err:
        raise ToolError(INVALID_ARGUMENT, err.message) from None


# ---- the tools ------------------------------------------------------------------------------

def _get_rooms(backend: Backend, args: GetRooms, session: Session) -> dict[str, Any]:
    return {"rooms": backend.rooms()}


def _get_room_devices(backend: Backend, args: GetRoomDevices, session: Session) -> dict[str, Any]:
    return {"room_id": args.room_id, "devices": backend.room_devices(args.room_id)}


#: Room states in SimuHome's units (its agent prompt, "Room State Units"), which are also
#: the Matter measurement clusters' units: temperature and humidity in hundredths
#: (2300 = 23.00 °C, 5500 = 55.00 %RH), illuminance in lux, PM10 in µg/m³. Rounded here,
#: at the edge, finer than the judges' tolerance (±0.1 °C, %RH, µg/m³; ±1 lux): PM10 keeps
#: two decimals. The home keeps full precision.
ROOM_STATE_UNITS = {"temperature": "0.01 °C", "humidity": "0.01 %RH", "illuminance": "lux", "pm10": "µg/m³"}
_SCALE = {"temperature": 100, "humidity": 100, "illuminance": 1}


def _rounded(name: str, value: float) -> int | float:
    if name == "pm10":
        return round(value, 2)
    return int(round(value * _SCALE[name]))


def room_states(backend: Backend, room_id: str) -> dict[str, Any]:
    """A room's states as get_room_states answers them (suites' tools reuse it)."""
    raw = backend.room_states(room_id)
    return {"room_id": room_id, **{k: _rounded(k, raw[k]) for k in STATES}, "units": ROOM_STATE_UNITS}


def _get_room_states(backend: Backend, args: GetRoomStates, session: Session) -> dict[str, Any]:
    return room_states(backend, args.room_id)


def _get_device_structure(backend: Backend, args: GetDeviceStructure, session: Session) -> dict[str, Any]:
    return backend.device_structure(args.device_id)


def _get_all_attributes(backend: Backend, args: GetAllAttributes, session: Session) -> dict[str, Any]:
    return {"device_id": args.device_id, "attributes": backend.read_all_attributes(args.device_id)}


def _get_attribute(backend: Backend, args: GetAttribute, session: Session) -> dict[str, Any]:
    out = backend.read_attribute(args.device_id, _endpoint(args.endpoint_id),
                                 plain_id(args.cluster_id), plain_id(args.attribute_id))
    return {"device_id": args.device_id, **out}


def _write_attribute(backend: Backend, args: WriteAttribute, session: Session) -> dict[str, Any]:
    out = backend.write_attribute(args.device_id, _endpoint(args.endpoint_id),
                                  plain_id(args.cluster_id), plain_id(args.attribute_id), args.value)
    return {"device_id": args.device_id, **out}


def _execute_command(backend: Backend, args: ExecuteCommand, session: Session) -> dict[str, Any]:
    out = backend.invoke(args.device_id, _endpoint(args.endpoint_id), plain_id(args.cluster_id),
                         plain_id(args.command_id), args.args)
    return {"device_id": args.device_id, **out}


def _home_types(backend: Backend) -> set[str]:
    """The device types of the backend's home (empty when it cannot say: every type is documented)."""
    try:
        return {d["device_type"] for r in backend.rooms() for d in backend.room_devices(r["room_id"])
                if isinstance(d.get("device_type"), str)}
    except Exception:  # noqa: BLE001 - a backend without rooms (a test stub, a lab): every type
        return set()


def _get_cluster_doc(backend: Backend, args: GetClusterDoc, session: Session) -> dict[str, Any]:
    return {"query": args.query, "results": get_cluster_doc(args.query, args.top_k, _home_types(backend))}


def _get_environment_control_rules(backend: Backend, args: GetEnvironmentControlRules,
                                   session: Session) -> dict[str, Any]:
    state = STATE_ALIASES.get(args.state.strip().lower().replace("-", "_"))
    if state is None:
        raise ToolError(INVALID_ARGUMENT, f"unknown environmental state {args.state!r}",
                        accepted=list(STATES))
    return {"state": state, "unit": ROOM_STATE_UNITS[state], "rules": environment_rules(state)}


def _get_current_time(backend: Backend, args: GetCurrentTime, session: Session) -> dict[str, Any]:
    return {"current_time": backend.current_time()}


def _schedule_workflow(backend: Backend, args: ScheduleWorkflow, session: Session) -> dict[str, Any]:
    start = args.start_time.strip()
    try:
        _dt.datetime.strptime(start, TIME_FORMAT)
    except ValueError:
        raise ToolError(INVALID_ARGUMENT, f"start_time {start!r} is not \"YYYY-MM-DD HH:MM:SS\"") from None
    steps = []
    for i, step in enumerate(args.steps):
        try:
            tool, step_args = parse_step(step, i)  # the same check the workflow table makes
        except ArgumentError as err:
            raise ToolError(INVALID_ARGUMENT, err.message, err.accepted) from None
        steps.append({"tool": tool, "args": step_args.model_dump(by_alias=True, exclude_unset=True)})
    return backend.schedule_workflow(start, steps)


def _cancel_workflow(backend: Backend, args: CancelWorkflow, session: Session) -> dict[str, Any]:
    return backend.cancel_workflow(args.workflow_id)


def _get_workflow_status(backend: Backend, args: GetWorkflowStatus, session: Session) -> dict[str, Any]:
    return backend.workflow_status(args.workflow_id)


def _get_workflow_list(backend: Backend, args: GetWorkflowList, session: Session) -> dict[str, Any]:
    workflows = backend.workflows()
    if args.status is not None:
        wanted = args.status.lower()
        workflows = [w for w in workflows if str(w.get("status", "")).lower() == wanted]
    return {"workflows": workflows}


def _ask_user(backend: Backend, args: AskUser, session: Session) -> dict[str, Any]:
    if session.ask_user is None:
        raise ToolError(UNAVAILABLE, "nobody is available to answer questions in this session; "
                        "decide with the information at hand or explain what is missing in finish")
    return {"question": args.question, "answer": str(session.ask_user(args.question))}


def _finish(backend: Backend, args: Finish, session: Session) -> dict[str, Any]:
    session.answer = args.answer
    if session.on_finish is not None:
        session.on_finish(args.answer)
    return {"finished": True, "answer": args.answer}


_HANDLERS: dict[str, Handler] = {
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
assert set(_HANDLERS) == set(TOOL_MODELS)


def call_tool(backend: Backend, name: str, args: Any = None, session: Session | None = None,
              parsed: Arguments | None = None) -> dict[str, Any]:
    """Run one tool. Never raises: failures come back as {"ok": false, "error": {...}}.
    `parsed`: `args` already parsed by `parse_args` (a caller that routes on them first), so
    they are not parsed again; the history records `args` as given."""
    session = session if session is not None else Session()
    try:
        handler = _HANDLERS.get(name) or session.tools.handlers.get(name)
        if handler is None:
            raise ToolError(UNKNOWN_TOOL, f"there is no tool {name!r}",
                            accepted=sorted((*TOOL_NAMES, *session.tools.models)))
        model = parsed if parsed is not None else parse_args(name, args, session.tools)
        result: dict[str, Any] = {"ok": True, **handler(backend, model, session)}
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


__all__ = ["NO_TOOLS", "NOT_FOUND", "Handler", "ToolSet", "room_states", "tool_schemas",
           "ROOM_STATE_UNITS", "SCHEMAS_BY_NAME", "TOOL_MODELS", "TOOL_NAMES", "TOOL_SCHEMAS", "Session",
           "ToolError", "arguments_schema", "call_tool", "environment_rules", "parse_args",
           "tool_description"]
