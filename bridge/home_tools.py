"""Home-wide tools beyond SimuHome's 17: one query over the whole home, and automations.

They are extra tools: not in `bridge.tools.TOOL_MODELS` (SimuHome's table stays as the paper
has it). `HOME_TOOLS` is a `bridge.tools.ToolSet`: a suite that offers them puts it in its
agents' sessions (`Session(tools=HOME_TOOLS)`), and `bridge.tools.call_tool` answers them
there with the same result shape and validation as the core tools.

`query_home` is written against `Backend`, so it answers over Matter as in process: it reads
rooms, devices, room states and attributes through the backend's ordinary calls.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from pydantic import Field

from bridge.backend import INVALID_ARGUMENT, NOT_FOUND, UNAVAILABLE, Backend, ToolError
from bridge.tools import Session, ToolSet
from clusters.devices import DEVICE_TYPES
from clusters.status import MatterError
from twin.compare import OPS, check_operand, compare
from twin.layout import category_of
from twin.schema import UnknownIdError
from twin.tool_arguments import Absent, ArgumentError, Arguments, Id, Integer, JsonObject, Text

ROOM_STATES = ("temperature", "humidity", "illuminance", "pm10")
Op = Literal["==", "!=", ">", ">=", "<", "<=", "in", "between"]


class RoomCondition(Arguments):
    """A condition on a room's state, in natural units: temperature °C, humidity %RH,
    illuminance lux, pm10 µg/m³."""
    state: Literal["temperature", "humidity", "illuminance", "pm10"]
    op: Op
    value: Any = Field(description="A number; [low, high] for between.")


class AttributeCondition(Arguments):
    """A condition on a device attribute, as get_attribute reads it (devices without the
    attribute do not match)."""
    cluster_id: Id = Field(description="Cluster name or id, e.g. \"OnOff\".")
    attribute_id: Id = Field(description="Attribute name or id, e.g. \"OnOff\".")
    endpoint_id: Id | Absent = Field(None, description="Endpoint; default: the first that has the cluster.")
    op: Op
    value: Any = Field(description="JSON value; a list for in; [low, high] for between.")


class OrderBy(Arguments):
    """Sort the matching devices by an attribute (devices without it go last) and keep the top N."""
    cluster_id: Id
    attribute_id: Id
    descending: bool = True
    limit: Integer | Absent = Field(None, ge=1, description="Keep this many (top N).")


class QueryHome(Arguments):
    """Find devices and rooms across the whole home in one call: filter by device type,
    category, tag, room (id, kind, floor, exclusions, conditions on its temperature,
    humidity, illuminance or PM10) and device attribute conditions; optionally read
    attributes of every match and keep the top N by an attribute. Every filter is optional;
    all given filters must hold."""
    device_type: list[Text] | Absent = Field(None, description="Device type keys, e.g. [\"dimmable_light\"]; "
                                             "any of them.")
    category: list[Text] | Absent = Field(None, description="Categories (lighting, hvac, sensors, closures, "
                                 "appliances, media, energy, ...); any of them.")
    tags: list[Text] | Absent = Field(None, description="Device tags; a device must have all of them.")
    rooms: list[Text] | Absent = Field(None, description="Room ids; rooms inside them (an ensuite) count too.")
    exclude_rooms: list[Text] | Absent = Field(None, description="Room ids left out (rooms inside them too).")
    room_kind: list[Text] | Absent = Field(None, description="Room kinds, e.g. [\"bedroom\"]; any of them.")
    floor: Integer | Absent = Field(None, description="Only rooms on this floor (0 = ground floor).")
    room_where: list[RoomCondition] | Absent = Field(None, description="Conditions on room state; all must hold.")
    where: list[AttributeCondition] | Absent = Field(None, description="Conditions on device attributes; "
                                                     "all must hold.")
    read: list[Text] | Absent = Field(None, description="Attributes to report for each device, \"Cluster.Attribute\" "
                             "(e.g. \"OnOff.OnOff\").")
    order_by: OrderBy | Absent = Field(None)
    rooms_only: bool = Field(False, description="Report only the matching rooms (with their states), no devices.")


def _error(err: ArgumentError) -> ToolError:
    return ToolError(INVALID_ARGUMENT, err.message, err.accepted)


def _read(backend: Backend, device_id: str, endpoint: Any, cluster: Any, attribute: Any) -> Any:
    """An attribute's JSON value; raises KeyError if the device lacks it, ToolError(UNAVAILABLE)
    if it does not answer."""
    try:
        return backend.read_attribute(device_id, endpoint, cluster, attribute)["value"]
    except ToolError as err:
        if err.code == UNAVAILABLE:
            raise
        raise KeyError(err.message) from None
    except MatterError as err:
        raise KeyError(err.message) from None


def _query_home(backend: Backend, q: QueryHome, session: Session) -> dict[str, Any]:
    device_filters = [k for k in ("device_type", "category", "tags", "where", "read", "order_by")
                      if getattr(q, k) is not None]
    if q.rooms_only and device_filters:
        raise ToolError(INVALID_ARGUMENT, f"rooms_only reports rooms; {', '.join(device_filters)} filter or "
                        "read devices: leave rooms_only out to find devices")
    for cond in (q.room_where or []) + (q.where or []):
        problem = check_operand(cond.op, cond.value)
        if problem:
            raise ToolError(INVALID_ARGUMENT, problem, accepted=list(OPS))
    rooms = backend.rooms()
    known = {r["room_id"] for r in rooms}
    for name, given in (("rooms", q.rooms), ("exclude_rooms", q.exclude_rooms)):
        unknown = sorted(set(given or ()) - known)
        if unknown:
            raise ToolError("NOT_FOUND", f"{name}: no room {', '.join(map(repr, unknown))}", accepted=sorted(known))
    if q.device_type:
        unknown = sorted(set(q.device_type) - set(DEVICE_TYPES))
        if unknown:
            raise ToolError(INVALID_ARGUMENT, f"device_type: unknown {', '.join(map(repr, unknown))}",
                            accepted=sorted(DEVICE_TYPES))
    reads = []
    for spec in q.read or []:
        cluster, sep, attribute = spec.partition(".")
        if not sep or not cluster or not attribute:
            raise ToolError(INVALID_ARGUMENT, f"read: {spec!r} is not \"Cluster.Attribute\"")
        reads.append((spec, cluster, attribute))

    parent = {r["room_id"]: r.get("parent") for r in rooms}

    def under(room_id: str, roots: list[str]) -> bool:
        at: str | None = room_id
        while at is not None:
            if at in roots:
                return True
            at = parent.get(at)
        return False

    matched_rooms = []
    for room in rooms:
        rid = room["room_id"]
        if q.rooms and not under(rid, q.rooms):
            continue
        if q.exclude_rooms and under(rid, q.exclude_rooms):
            continue
        if q.room_kind and room.get("kind") not in q.room_kind:
            continue
        if q.floor is not None and room.get("floor", 0) != q.floor:
            continue
        states = backend.room_states(rid)
        if not all(compare(states[c.state], c.op, c.value) for c in q.room_where or []):
            continue
        matched_rooms.append({**room, "states": {k: round(states[k], 2) for k in ROOM_STATES}})
    if q.rooms_only:
        return {"rooms": matched_rooms, "count": len(matched_rooms),
                "units": {"temperature": "°C", "humidity": "%RH", "illuminance": "lux", "pm10": "µg/m³"}}
    out: dict[str, Any] = {}

    devices, unreachable = [], []
    for room in matched_rooms:
        for dev in backend.room_devices(room["room_id"]):
            key = dev["device_type"]
            category = dev.get("category") or (category_of(DEVICE_TYPES[key]) if key in DEVICE_TYPES else "other")
            if q.device_type and key not in q.device_type:
                continue
            if q.category and category not in q.category:
                continue
            if q.tags and not set(q.tags) <= set(dev.get("tags", ())):
                continue
            entry = {"device_id": dev["device_id"], "name": dev["name"], "device_type": key,
                     "room_id": room["room_id"], "category": category, "tags": dev.get("tags", [])}
            try:
                ok = True
                for c in q.where or []:
                    try:
                        value = _read(backend, dev["device_id"], c.endpoint_id, c.cluster_id, c.attribute_id)
                    except KeyError:
                        ok = False
                        break
                    if not compare(value, c.op, c.value):
                        ok = False
                        break
                if not ok:
                    continue
                values = {}
                for spec, cluster, attribute in reads:
                    try:
                        values[spec] = _read(backend, dev["device_id"], None, cluster, attribute)
                    except KeyError:
                        continue   # not every device has every attribute asked for
                if reads:
                    entry["values"] = values
                if q.order_by is not None:
                    try:
                        entry["_key"] = _read(backend, dev["device_id"], None, q.order_by.cluster_id,
                                              q.order_by.attribute_id)
                    except KeyError:
                        entry["_key"] = None
            except ToolError as err:
                if err.code != UNAVAILABLE:
                    raise
                unreachable.append(dev["device_id"])
                continue
            devices.append(entry)
    if q.order_by is not None:
        numbered = [d for d in devices if isinstance(d["_key"], (int, float)) and not isinstance(d["_key"], bool)]
        rest = [d for d in devices if d not in numbered]
        numbered.sort(key=lambda d: d["_key"], reverse=q.order_by.descending)   # stable: home order on ties
        devices = numbered + rest
        if q.order_by.limit is not None:
            devices = devices[:q.order_by.limit]
        for d in devices:
            d["order_value"] = d.pop("_key")
    out["devices"] = devices
    out["count"] = len(devices)
    if unreachable:
        out["unreachable"] = unreachable
    return out


# ---- automations -----------------------------------------------------------------------------
_TRIGGER = ("When the rule fires: {\"type\": \"time\", \"cron\": \"30 7 * * 1-5\"} (minute hour "
            "day-of-month month day-of-week) or {\"type\": \"time\", \"at\": \"07:30\", \"days\": [\"mon\", ...]}; "
            "{\"type\": \"device\", \"device_id\", \"cluster_id\", \"attribute_id\", \"op\", \"value\"} (when the "
            "attribute's condition becomes true); {\"type\": \"room\", \"room_id\", \"state\", \"op\", \"value\"} "
            "(temperature °C, humidity %RH, pm10 µg/m³, illuminance lux; op <, <=, >, >= or between); "
            "{\"type\": \"time_and_state\", \"cron\" or \"at\", \"state\": <device or room condition>} (at those "
            "times, if the condition holds). op is one of ==, !=, >, >=, <, <=, in, between.")
_RULE = "Automation id, as returned by create_automation (e.g. \"a1\")."


class CreateAutomation(Arguments):
    """Create a persistent automation rule: when its trigger fires (a time, a device or room
    state becoming true, or a time with a state condition) and its conditions hold, run its
    steps (the same steps as schedule_workflow). It stays until deleted and can be disabled."""
    trigger: JsonObject = Field(description=_TRIGGER)
    steps: list[JsonObject] = Field(min_length=1, description=(
        "Steps, each {\"tool\": \"execute_command\"|\"write_attribute\", \"args\": {...that tool's arguments...}}."))
    conditions: list[JsonObject] | Absent = Field(None, description=(
        "Extra conditions that must all hold when it fires: device or room conditions as in trigger, or "
        "{\"type\": \"time_window\", \"after\": \"22:00\", \"before\": \"06:00\"}."))
    name: Text | Absent = Field(None, description="A name for the rule.")


class ListAutomations(Arguments):
    """List the automation rules: trigger, conditions, steps, whether enabled, and their runs."""


class _RuleOnly(Arguments):
    automation_id: Text = Field(description=_RULE)


class EnableAutomation(_RuleOnly):
    """Enable an automation rule (a state trigger that already holds waits until it becomes true again)."""


class DisableAutomation(_RuleOnly):
    """Disable an automation rule; it keeps its definition and can be enabled again."""


class DeleteAutomation(_RuleOnly):
    """Delete an automation rule."""


def _automations(backend: Backend) -> Any:
    home = getattr(backend, "home", None)
    if home is None or not hasattr(home, "automations"):
        raise ToolError(UNAVAILABLE, "automations run in the twin's home; this backend has none")
    return home.automations


def _rule_call(fn: Callable[[], Any]) -> Any:
    """Run an automation-table call, turning its refusals into tool errors."""
    try:
        return fn()
    except UnknownIdError as err:
        raise ToolError(NOT_FOUND, str(err)) from None
    except ArgumentError as err:
        raise _error(err) from None
    except ValueError as err:   # AutomationError
        raise ToolError(INVALID_ARGUMENT, str(err)) from None


def _step_args(steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    # Workflow steps name their arguments with underscores; tools show them dotted.
    return [{"tool": s["tool"], "args": {k.replace("_id", ".id") if k.endswith("_id") else k: v
                                         for k, v in s["args"].items()}} for s in steps]


def _rule_json(rule: Any) -> dict[str, Any]:
    out: dict[str, Any] = rule.to_json()
    out["steps"] = _step_args(out["steps"])
    for key in ("id", "due_tick", "last", "created_tick", "fired_tick"):
        out.pop(key)
    return out


def _create_automation(backend: Backend, args: CreateAutomation, session: Session) -> dict[str, Any]:
    table = _automations(backend)
    rule = _rule_call(lambda: table.create(args.trigger, args.steps, args.conditions, args.name))
    return {"automation": _rule_json(rule)}


def _list_automations(backend: Backend, args: ListAutomations, session: Session) -> dict[str, Any]:
    return {"automations": [_rule_json(r) for r in _automations(backend).list()]}


def _enable_automation(backend: Backend, args: EnableAutomation, session: Session) -> dict[str, Any]:
    table = _automations(backend)
    return {"automation": _rule_json(_rule_call(lambda: table.set_enabled(args.automation_id, True)))}


def _disable_automation(backend: Backend, args: DisableAutomation, session: Session) -> dict[str, Any]:
    table = _automations(backend)
    return {"automation": _rule_json(_rule_call(lambda: table.set_enabled(args.automation_id, False)))}


def _delete_automation(backend: Backend, args: DeleteAutomation, session: Session) -> dict[str, Any]:
    table = _automations(backend)
    return {"deleted": _rule_json(_rule_call(lambda: table.delete(args.automation_id)))}


#: The extra tools, as a suite hands them to its sessions (`Session(tools=HOME_TOOLS)`; the one
#: mechanism for a suite's tools, bridge.tools.ToolSet): call_tool validates their arguments
#: through these models and answers them beside the core tools.
HOME_TOOLS = ToolSet(
    models={"query_home": QueryHome, "create_automation": CreateAutomation, "list_automations": ListAutomations,
            "enable_automation": EnableAutomation, "disable_automation": DisableAutomation,
            "delete_automation": DeleteAutomation},
    handlers={"query_home": _query_home, "create_automation": _create_automation,
              "list_automations": _list_automations, "enable_automation": _enable_automation,
              "disable_automation": _disable_automation, "delete_automation": _delete_automation})


__all__ = ["HOME_TOOLS"]
