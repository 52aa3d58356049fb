"""Tool arguments as SimuHome spells them: the base every tool's argument model shares.

`execute_command` and `write_attribute` are both SimuHome tools and workflow steps. Their
models live here, below the bridge, so a workflow step (twin/workflows.py) and a tool call
(bridge/tools.py, which adds the other tools on the same base) share one spelling and one
validation: ids are dotted (`device.id`; `device_id` is accepted too), and a bad argument is
one `ArgumentError` naming the field and what is accepted.

The models are also the only description of the arguments: `parameters_schema` turns one
into the JSON schema that agents, MCP clients and the HTTP API are shown, and the error
messages take their wording ("must be string or integer") from that same schema.
"""
from __future__ import annotations

import copy
import functools
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictInt,
    StrictStr,
    ValidationError,
    WithJsonSchema,
)
from pydantic.json_schema import SkipJsonSchema


class ArgumentError(ValueError):
    """Bad arguments, as data: `message` names the field; `accepted` lists what would do."""

    def __init__(self, message: str, accepted: list[Any] | None = None):
        self.message = message
        self.accepted = accepted
        hint = f"; accepted: {', '.join(map(str, accepted))}" if accepted else ""
        super().__init__(message + hint)


def _dotted(name: str) -> str:
    """SimuHome writes ids dotted: device_id -> device.id."""
    return name[:-3] + ".id" if name.endswith("_id") else name


def _integral(value: Any) -> Any:
    """JSON has one number type: 1.0 is the integer 1."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


Text = StrictStr
Integer = Annotated[StrictInt, BeforeValidator(_integral)]
#: A cluster, attribute, command or endpoint: spec name or number ("OnOff", 6, "0x0006").
Id = Annotated[StrictStr | Integer, WithJsonSchema({"type": ["string", "integer"]})]
JsonObject = Annotated[dict[str, Any], WithJsonSchema({"type": "object"})]
#: `X | Absent = Field(None)`: an optional argument, None in Python, shown to agents as X alone.
Absent = SkipJsonSchema[None]
#: Optional arguments (default None): typed as such, shown to agents as the plain type.
OptionalId = Annotated[StrictStr | Integer | None, WithJsonSchema({"type": ["string", "integer"]})]
OptionalText = Annotated[StrictStr | None, WithJsonSchema({"type": "string"})]


class Arguments(BaseModel):
    """Base of every tool's arguments: unknown names are errors, ids dotted, no coercion
    (an agent that sends "3" for a number is told so, not silently obeyed). Each model's
    validator is built when first used (`defer_build`): a call uses one (start-up time)."""
    model_config = ConfigDict(extra="forbid", strict=True, populate_by_name=True,
                              alias_generator=_dotted, defer_build=True)


# ---- the schema agents see ----------------------------------------------------------------

def _clean(schema: Any, defs: dict[str, Any]) -> Any:
    """Inline $refs; drop pydantic's titles and defaults (noise to an agent)."""
    if isinstance(schema, list):
        return [_clean(s, defs) for s in schema]
    if not isinstance(schema, dict):
        return schema
    if "$ref" in schema:  # a nested model; its docstring is for Python readers
        inner = {k: v for k, v in defs[schema["$ref"].rsplit("/", 1)[1]].items() if k != "description"}
        return _clean({**inner, **{k: v for k, v in schema.items() if k != "$ref"}}, defs)
    out = {}
    for key, value in schema.items():
        if key in ("title", "default", "$defs"):
            continue
        if key == "properties":
            out[key] = {name: _clean(prop, defs) for name, prop in value.items()}
        else:
            out[key] = _clean(value, defs)
    return out


@functools.cache
def _parameters(model: type[Arguments]) -> dict[str, Any]:
    raw = model.model_json_schema(by_alias=True)
    props = _clean(raw.get("properties", {}), raw.get("$defs", {}))
    return {"type": "object", "properties": props, "required": list(raw.get("required", [])),
            "additionalProperties": False}


def parameters_schema(model: type[Arguments]) -> dict[str, Any]:
    """The JSON schema of `model`'s arguments (a fresh copy; callers may keep or change it)."""
    return copy.deepcopy(_parameters(model))


# ---- validation with one clear message -------------------------------------------------------

def _at(schema: dict[str, Any], loc: tuple[Any, ...]) -> tuple[int, dict[str, Any]]:
    """How much of `loc` names a place in `schema`, and the schema there (union members
    that pydantic adds to a location are not places)."""
    depth = 0
    for part in loc:
        if isinstance(part, int) and "items" in schema:
            schema = schema["items"]
        elif isinstance(part, str) and part in schema.get("properties", {}):
            schema = schema["properties"][part]
        else:
            break
        depth += 1
    return depth, schema


def _places(schema: dict[str, Any], loc: tuple[Any, ...]) -> tuple[Any, ...]:
    """`loc` without the union members' tags pydantic puts in it ("list[RoomCondition]" of an
    optional list, "str" of an id): they are not places an agent wrote."""
    out = []
    for part in loc:
        if isinstance(part, int) and "items" in schema:
            schema = schema["items"]
        elif isinstance(part, str) and part in schema.get("properties", {}):
            schema = schema["properties"][part]
        elif isinstance(part, str):
            continue
        else:
            break
        out.append(part)
    return tuple(out)


def _path(where: str, loc: tuple[Any, ...]) -> str:
    out = where
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _problem(schema: dict[str, Any], where: str, errors: list[dict[str, Any]],
             order: list[str]) -> ArgumentError:
    """The first problem, checked as a person would: unknown names, then missing ones, then
    each value in the order given (outer objects before what is inside them)."""
    found = []
    if any(e["type"] != "none_required" for e in errors):   # an optional argument's None member
        errors = [e for e in errors if e["type"] != "none_required"]
    for err in errors:
        kind = err["type"]
        loc = tuple(err["loc"])
        loc = _places(schema, loc[:-1]) + loc[-1:] if kind in ("extra_forbidden", "missing") else _places(schema, loc)
        if kind in ("extra_forbidden", "missing"):
            parent_depth, parent = _at(schema, loc[:-1])
            loc = loc[:parent_depth] + loc[-1:]
        else:
            depth, _ = _at(schema, loc)
            loc = loc[:depth]
        found.append((kind, loc, err))
    rank = {"extra_forbidden": 0, "missing": 1}

    def key(item: tuple[str, tuple[Any, ...], dict[str, Any]]) -> tuple[Any, ...]:
        kind, loc, _ = item
        first = order.index(loc[0]) if loc and loc[0] in order else len(order)
        parent = loc[:-1] if kind in rank else loc
        return (len(parent), first, parent, rank.get(kind, 2))
    kind, loc, err = min(found, key=key)
    if kind in rank:
        parent = loc[:-1]
        names = [str(f[1][-1]) for f in found if f[0] == kind and f[1][:-1] == parent]
        _, parent_schema = _at(schema, parent)
        accepted = list(parent_schema.get("properties", {}))
        what = "unknown argument(s)" if kind == "extra_forbidden" else "missing required argument(s)"
        return ArgumentError(f"{_path(where, parent)}: {what} {', '.join(names)}", accepted)
    _, here = _at(schema, loc)
    path, value = _path(where, loc), err["input"]
    if kind == "literal_error" and "enum" in here:
        return ArgumentError(f"{path}={value!r} is not accepted", list(here["enum"]))
    if kind in ("greater_than_equal", "less_than_equal", "greater_than", "less_than"):
        return ArgumentError(f"{path}={value!r} is outside "
                             f"{here.get('minimum', '-inf')}..{here.get('maximum', 'inf')}")
    if kind == "too_short":
        return ArgumentError(f"{path} needs at least {here.get('minItems', 1)} item(s)")
    if "type" in here and kind.endswith("_type"):
        types = [here["type"]] if isinstance(here["type"], str) else here["type"]
        return ArgumentError(f"{path} must be {' or '.join(types)}, got {type(value).__name__} {value!r}")
    return ArgumentError(f"{path}: {err['msg']}")


def parse_arguments(model: type[Arguments], args: Any, where: str) -> Arguments:
    """`args` (dotted or underscore names) as a `model`; problems raise `ArgumentError`,
    whose message starts with `where` (the tool's name, say)."""
    schema = _parameters(model)
    if args is None:
        args = {}
    if not isinstance(args, dict):
        raise ArgumentError(f"{where} takes a JSON object of arguments, got {type(args).__name__}",
                            list(schema["properties"]))
    dotted: dict[str, Any] = {}
    for key, value in args.items():
        name = _dotted(key) if isinstance(key, str) and _dotted(key) in schema["properties"] else key
        if name in dotted:
            raise ArgumentError(f"{where}: {name} given twice ({key!r} and {name!r})")
        dotted[name] = value
    try:
        return model.model_validate(dotted)
    except ValidationError as exc:
        raise _problem(schema, where, exc.errors(), list(dotted)) from None


# ---- the two tools that are also workflow steps ---------------------------------------------

_DEVICE = "Device id, as listed by get_room_devices (e.g. \"living_room_light_1\")."
_ENDPOINT = "Endpoint id (an integer, e.g. 1), as listed by get_device_structure."
_ENDPOINT_OPTIONAL = "Endpoint id; optional, defaults to the first endpoint that has the cluster."
_CLUSTER = "Cluster by spec name (\"OnOff\", \"LevelControl\") or numeric id (6)."
_ATTRIBUTE = "Attribute by spec name (\"CurrentLevel\") or numeric id."
_COMMAND = "Command by spec name (\"MoveToLevel\") or numeric id."


class ExecuteCommand(Arguments):
    """Execute a command on a device (e.g., turn on light, set level, set setpoint)."""
    device_id: Text = Field(description=_DEVICE)
    endpoint_id: Id = Field(description=_ENDPOINT)
    cluster_id: Id = Field(description=_CLUSTER)
    command_id: Id = Field(description=_COMMAND)
    args: JsonObject = Field(description="Command fields by spec label, e.g. {\"level\": 128, "
                             "\"transitionTime\": 0, \"optionsMask\": 0, \"optionsOverride\": 0}; "
                             "{} for commands without fields.")


class WriteAttribute(Arguments):
    """Directly set a device attribute value."""
    device_id: Text = Field(description=_DEVICE)
    cluster_id: Id = Field(description=_CLUSTER)
    attribute_id: Id = Field(description=_ATTRIBUTE)
    value: Any = Field(description="New value (JSON: number, boolean, string, null, object or list).")
    endpoint_id: OptionalId = Field(None, description=_ENDPOINT_OPTIONAL)


#: The tools a workflow step may call.
STEP_TOOLS: dict[str, type[Arguments]] = {"execute_command": ExecuteCommand,
                                          "write_attribute": WriteAttribute}


class WorkflowStep(Arguments):
    """One step of a workflow: a tool and its arguments, exactly as if called directly."""
    tool: Literal["execute_command", "write_attribute"] = Field(description="Which tool the step calls.")
    args: JsonObject = Field(description="The arguments that tool takes, exactly as if called directly.")


def plain_id(value: Any) -> Any:
    """A cluster/attribute/command/endpoint id: numbers and numeric strings ("6", "0x0006")
    become int; names stay names."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        text = value.strip()
        try:
            return int(text, 16) if text.lower().startswith("0x") else int(text) if text.isdigit() else text
        except ValueError:
            return text
    return value


def endpoint_number(value: Any) -> int | None:
    """An endpoint id as an int (None stays None); anything else is an ArgumentError."""
    if value is None:
        return None
    endpoint = plain_id(value)
    if not isinstance(endpoint, int):
        raise ArgumentError(f"endpoint.id must be an integer, got {value!r}")
    return endpoint


def parse_step(step: Any, index: int) -> tuple[str, Arguments]:
    """One workflow step (JSON, or a `WorkflowStep` already parsed) as (tool, its arguments);
    bad steps raise the same `ArgumentError` as the tool itself would, prefixed `steps[i]`."""
    shape = step if isinstance(step, WorkflowStep) else parse_arguments(WorkflowStep, step, f"steps[{index}]")
    try:
        args = parse_arguments(STEP_TOOLS[shape.tool], shape.args, shape.tool)
        endpoint_number(getattr(args, "endpoint_id", None))  # a name fails now, not at run time
    except ArgumentError as err:
        raise ArgumentError(f"steps[{index}]: {err.message}", err.accepted) from None
    return shape.tool, args


__all__ = ["Absent", "ArgumentError", "Arguments", "ExecuteCommand", "Id", "Integer", "JsonObject", "OptionalId",
           "OptionalText", "STEP_TOOLS", "Text", "WorkflowStep", "WriteAttribute", "endpoint_number",
           "parameters_schema", "parse_arguments", "parse_step", "plain_id"]
