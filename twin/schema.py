"""Home files: the pydantic schema, the loader and its one-line errors.

A home file (YAML or JSON) names the home, its start time and ambient conditions, and
its rooms with their devices. Device attributes can be given flat
(`"1/Thermostat/SystemMode": 3`) or nested (`1: {Thermostat: {SystemMode: 3}}`); they
are normalized to the flat form here and checked against the real cluster servers when
the home is built (`Home.from_spec`). Every problem surfaces as `UserFileError`, whose
text is one line: "<file>: <field path>: <problem>".
"""
from __future__ import annotations

import gzip
import json
import re
from datetime import date, datetime
from pathlib import Path
from typing import Any, Literal, TypeVar

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_serializer,
    model_validator,
)

from clusters.devices import DEVICE_TYPES
from twin.clock import DEFAULT_START
from twin.physics import with_overrides
from twin.weather import WeatherSpec

ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$"
M = TypeVar("M", bound=BaseModel)


class UserFileError(Exception):
    """A bad user file (a home, a bridge config, ...): every loader raises this one type, so
    an app prints any of them the same way. `str()` is one line: "<file>: <field path>: <problem>"
    (no field path for a problem of the whole file or line, e.g. "<file>:<line>: <problem>")."""

    def __init__(self, source: str, path: str, problem: str):
        self.source = str(source)
        self.path = path
        self.problem = " ".join(str(problem).split())
        super().__init__(": ".join(part for part in (self.source, self.path, self.problem) if part))


#: How deeply a user file or a tool call's JSON may nest (mappings and lists). Real homes and
#: configs nest about ten levels; the bound keeps parsers and validators off Python's
#: recursion limit (a file nested thousands of levels deep raised RecursionError).
MAX_NESTING = 64


def json_nesting(text: str | bytes, limit: int = MAX_NESTING) -> int | None:
    """The line at which JSON `text` nests deeper than `limit` (None: it does not), found by
    scanning brackets outside strings, before any parser recurses into it."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    depth, in_string, escaped, line = 0, False, False, 1
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            if depth > limit:
                return line
        elif ch in "]}":
            depth -= 1
        if ch == "\n":
            line += 1
    return None


#: How many values (mappings, lists and scalars) a user file may expand to. YAML aliases let a
#: few hundred bytes stand for millions of values (a 425-byte "billion laughs" file stood for 43
#: million); real homes and configs hold a few thousand, big generated ones some hundred thousand.
MAX_VALUES = 1_000_000


def check_nesting(data: Any, source: str, limit: int = MAX_NESTING, max_values: int = MAX_VALUES) -> None:
    """Raise UserFileError if parsed `data` nests deeper than `limit` or expands to more than
    `max_values` values, or refers to itself. Alias-aware: a mapping or list met again (a YAML
    alias) is measured once and its measure reused, so the check costs the size of the parsed
    data, not of its expansion; iterative, so no recursion limit."""
    if not isinstance(data, (dict, list)):
        return
    measured: dict[int, tuple[int, int]] = {}   # id -> (values, height) of a container seen whole
    path = [(data, iter(_children(data)))]
    on_path = {id(data)}
    totals = [[1, 0]]   # per open container: values so far, height of its tallest child
    while path:
        value, children = path[-1]
        child = next(children, _END)
        if child is _END:
            path.pop()
            on_path.discard(id(value))
            values, height = totals.pop()
            measured[id(value)] = (values, height + 1)
            if values > max_values:
                raise too_big(source, max_values)
            if totals:
                totals[-1][0] += values
                totals[-1][1] = max(totals[-1][1], height + 1)
            continue
        if not isinstance(child, (dict, list)):
            totals[-1][0] += 1
            continue
        seen = measured.get(id(child))
        if seen is not None:   # an alias of a container measured already
            if len(path) + seen[1] > limit:
                raise too_deep(source, limit)
            totals[-1][0] += seen[0]
            totals[-1][1] = max(totals[-1][1], seen[1])
            if totals[-1][0] > max_values:
                raise too_big(source, max_values)
            continue
        if id(child) in on_path:
            raise UserFileError(source, "(file)", "refers to itself (a YAML alias inside its own anchor); "
                                                  "accepted: aliases of finished mappings and lists only")
        if len(path) >= limit:
            raise too_deep(source, limit)
        path.append((child, iter(_children(child))))
        on_path.add(id(child))
        totals.append([1, 0])


_END = object()


def _children(value: dict | list) -> Any:
    return value.values() if isinstance(value, dict) else value


def too_big(source: str, limit: int = MAX_VALUES) -> UserFileError:
    return UserFileError(source, "(file)", f"expands to more than {limit} values (YAML aliases repeat what they "
                                           f"refer to); accepted: at most {limit}")


def too_deep(source: str, limit: int = MAX_NESTING, where: str = "(file)") -> UserFileError:
    return UserFileError(source, where, f"nested too deeply; accepted: at most {limit} levels of mappings and lists")


class UnknownIdError(KeyError):
    """A room, device or workflow id that does not exist; the message lists known ids."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class DeviceSpec(_Model):
    id: str = Field(pattern=ID_PATTERN)
    type: str
    name: str | None = None
    options: dict[str, Any] = Field(default_factory=dict)
    #: Initial attribute values, flat: {"<endpoint>/<Cluster>/<Attribute>": value}.
    attributes: dict[str, Any] = Field(default_factory=dict)
    #: Free labels for finding devices together ("bedside", "kids", "security").
    tags: list[str] = Field(default_factory=list, description="free labels, e.g. bedside")
    #: The device's category; default: the Matter device library chapter of its type
    #: (twin/layout.py CATEGORIES: lighting, hvac, appliances, ...).
    category: str | None = Field(None, pattern=ID_PATTERN)

    @field_validator("tags")
    @classmethod
    def _tags(cls, value: list[str]) -> list[str]:
        for tag in value:
            if not re.match(ID_PATTERN, tag):
                raise ValueError(f"tag {tag!r} must be letters, digits, _ . - (starting with a letter or digit)")
        if len(set(value)) != len(value):
            raise ValueError(f"tags repeat: {value}")
        return value

    @model_serializer(mode="wrap")
    def _layout_only_when_set(self, handler: Any) -> dict[str, Any]:
        return _drop_unset(handler(self), ("tags", "category"))

    @field_validator("type")
    @classmethod
    def _known_type(cls, value: str, info: ValidationInfo) -> str:
        # Products cloned into the home (HomeSpec.products) come in through the context.
        products = sorted((info.context or {}).get("products", ()))
        if value not in DEVICE_TYPES and value not in products:
            raise ValueError(f"unknown device type {value!r}; known: "
                             + ", ".join(sorted(DEVICE_TYPES) + products))
        return value

    @field_validator("attributes", mode="before")
    @classmethod
    def _flatten(cls, value: Any) -> Any:
        if not isinstance(value, dict):
            return value
        flat: dict[str, Any] = {}
        _flatten_into(flat, (), value)
        return flat


def _flatten_into(out: dict[str, Any], prefix: tuple[str, ...], data: dict[Any, Any]) -> None:
    for key, value in data.items():
        parts = prefix + tuple(p.strip() for p in str(key).split("/"))
        if len(parts) < 3:
            if not isinstance(value, dict):
                raise ValueError(f"{'/'.join(parts)}: expected a mapping of "
                                 + ("clusters" if len(parts) == 1 else "attributes")
                                 + " or a key '<endpoint>/<Cluster>/<Attribute>'")
            _flatten_into(out, parts, value)
        elif len(parts) == 3:
            if not parts[0].isdigit():
                raise ValueError(f"{'/'.join(parts)}: endpoint {parts[0]!r} is not a number")
            path = "/".join(parts)
            if path in out:
                raise ValueError(f"{path}: given twice")
            out[path] = value
        else:
            raise ValueError(f"{'/'.join(parts)}: expected '<endpoint>/<Cluster>/<Attribute>'")


class RoomSpec(_Model):
    id: str = Field(pattern=ID_PATTERN)
    name: str | None = None
    temperature: float = Field(24.0, ge=-40, le=60, description="°C at start")
    humidity: float = Field(50.0, ge=0, le=100, description="%RH at start")
    pm10: float = Field(20.0, ge=0, le=2000, description="µg/m³ at start")
    daylight_lux: float = Field(300.0, ge=0, le=200000, description="lux with coverings open")
    #: Light the twin does not model (lamps off the network, a skylight): added to the
    #: room's illuminance whatever its blinds and lights do.
    indoor_lux: float = Field(0.0, ge=0, le=200000, description="lux from unmodelled sources")
    #: Layout (optional): the storey (0 = ground floor, negative = basement), what kind of
    #: room it is (bedroom, bathroom, balcony, ...) and the room it opens off or lies inside
    #: (an ensuite's bedroom, a balcony's living room).
    floor: int = Field(0, ge=-5, le=200, description="storey, 0 = ground floor")
    kind: str | None = Field(None, pattern=ID_PATTERN, description="room type, e.g. bedroom")
    parent: str | None = Field(None, description="id of the room this one lies inside or opens off")
    devices: list[DeviceSpec] = Field(default_factory=list)

    @model_serializer(mode="wrap")
    def _layout_only_when_set(self, handler: Any) -> dict[str, Any]:
        return _drop_unset(handler(self), ("floor", "kind", "parent"))


def _drop_unset(data: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    """Layout fields at their defaults are left out of dumps, so homes and episodes written
    before they existed stay byte-identical."""
    for key in keys:
        if not data.get(key):
            data.pop(key, None)
    return data


class AmbientSpec(_Model):
    temperature: float = Field(26.0, ge=-40, le=60)
    humidity: float = Field(55.0, ge=0, le=100)
    pm10: float = Field(25.0, ge=0, le=2000)


_CLOCK_TIME = r"^([01][0-9]|2[0-3]):[0-5][0-9]$"


class PreferencesSpec(_Model):
    """A resident's habits and likes: when they get up, go out, come back and go to bed
    (local "HH:MM"; no `leave` means they stay home), and how they like their rooms."""
    wake: str = Field("07:00", pattern=_CLOCK_TIME)
    leave: str | None = Field(None, pattern=_CLOCK_TIME)
    back: str | None = Field(None, pattern=_CLOCK_TIME)
    bed: str = Field("23:00", pattern=_CLOCK_TIME)
    temperature: float = Field(24.0, ge=16, le=30, description="°C they cool the room they are in to")
    light_level: int = Field(200, ge=1, le=254, description="the level they dim lights to (1-254)")
    hobbies: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _in_order(self) -> PreferencesSpec:
        if (self.leave is None) != (self.back is None):
            raise ValueError("leave and back go together (both or neither)")
        order = [self.wake] + ([self.leave, self.back] if self.leave and self.back else []) + [self.bed]
        if order != sorted(order) or len(set(order)) != len(order):
            raise ValueError(f"times must run wake < leave < back < bed within one day; got {', '.join(order)}")
        return self


class AutomationSpec(_Model):
    """A persistent rule of the home (twin/automations.py); its trigger, conditions and steps are
    checked against the home's devices and rooms when the home is built."""
    name: str | None = None
    enabled: bool = True
    trigger: dict[str, Any]
    conditions: list[dict[str, Any]] = Field(default_factory=list)
    steps: list[dict[str, Any]] = Field(min_length=1)


class ResidentSpec(_Model):
    """Someone who lives in the home: who they are (a persona, in words) and their habits."""
    id: str = Field(pattern=ID_PATTERN)
    name: str
    age: int = Field(ge=0, le=120)
    role: str = Field("adult", description="their place in the household, e.g. parent, child, lodger")
    persona: str = ""
    bedroom: str | None = Field(None, description="room id where they sleep")
    preferences: PreferencesSpec = Field(default_factory=PreferencesSpec)


class PetSpec(_Model):
    """An animal of the household (PersonalHomeBench); the twin ignores it."""
    name: str
    species: str
    age: int = Field(ge=0, le=60)
    carer: str | None = Field(None, description="resident id of who looks after it")


class LifeEventSpec(_Model):
    """Something that happens to a resident on one day and changes what they do that day
    (scenarios/personal/household.py lives it)."""
    day: date
    resident: str
    kind: Literal["sick_day", "late_return", "early_start", "late_night", "day_off", "guests"]
    text: str = Field(description="the event in words, as the household remembers it")


class HouseholdSpec(_Model):
    """Who the residents are together: the household's kind, its pets and its life events."""
    kind: Literal["single", "couple", "family", "roommates", "multi-generation"]
    pets: list[PetSpec] = Field(default_factory=list)
    events: list[LifeEventSpec] = Field(default_factory=list)


class HomeSpec(_Model):
    name: str = "home"
    seed: int | None = None
    start_time: datetime = DEFAULT_START
    ambient: AmbientSpec = Field(default_factory=AmbientSpec)
    #: Device types cloned from real products: type key -> product file (`twin device clone`),
    #: relative to the home file.
    products: dict[str, str] = Field(default_factory=dict)
    #: Calibrated physics coefficients (`twin calibrate`), replacing those of
    #: twin.physics.COEFFICIENTS they name.
    physics: dict[str, Any] = Field(default_factory=dict)
    rooms: list[RoomSpec] = Field(min_length=1)
    #: Who lives here (personalised households, scenarios/personal); the twin itself ignores them.
    residents: list[ResidentSpec] = Field(default_factory=list)
    #: The residents' household: kind, pets, life events (scenarios/personal); none: not given.
    household: HouseholdSpec | None = None
    #: Automation rules the home starts with (docs/home.md).
    automations: list[AutomationSpec] = Field(default_factory=list)
    #: The outdoor weather (twin/weather.py); none: the constant `ambient`.
    weather: WeatherSpec | None = None

    @field_validator("start_time")
    @classmethod
    def _naive(cls, value: datetime) -> datetime:
        if value.tzinfo is not None:
            raise ValueError("start_time must be naive local time (no time zone)")
        return value

    @field_validator("physics")
    @classmethod
    def _physics(cls, value: dict[str, Any]) -> dict[str, Any]:
        with_overrides(value)   # raises ValueError naming the bad coefficient
        return value

    @model_serializer(mode="wrap")
    def _optional_parts_only_when_set(self, handler: Any) -> dict[str, Any]:
        # A home without products or physics overrides dumps as before they existed (episode
        # files stay byte-identical).
        data = handler(self)
        for key in ("products", "physics", "residents", "automations"):
            if not getattr(self, key):
                data.pop(key, None)
        for key in ("weather", "household"):
            if getattr(self, key) is None:
                data.pop(key, None)
        return data

    @field_validator("products")
    @classmethod
    def _product_keys(cls, value: dict[str, str]) -> dict[str, str]:
        for key in value:
            if key in DEVICE_TYPES or not re.match(ID_PATTERN, key):
                raise ValueError(f"product key {key!r} must be a new type name (letters, digits, _ . -), "
                                 "not one of the built-in types")
        return value

    @model_validator(mode="after")
    def _unique_ids(self) -> HomeSpec:
        seen: dict[str, str] = {}
        for i, room in enumerate(self.rooms):
            places = [(f"rooms[{i}].id", room.id)] + [
                (f"rooms[{i}].devices[{j}].id", d.id) for j, d in enumerate(room.devices)]
            for where, ident in places:
                if ident in seen:
                    # Top-level validator: the message carries its own field path.
                    raise ValueError(f"{where}: duplicate id {ident!r} (also at {seen[ident]}); "
                                     "room and device ids must be unique in the home")
                seen[ident] = where
        rooms = [room.id for room in self.rooms]
        people: dict[str, int] = {}
        for i, resident in enumerate(self.residents):
            if resident.id in people:
                raise ValueError(f"residents[{i}].id: duplicate resident id {resident.id!r} "
                                 f"(also residents[{people[resident.id]}])")
            people[resident.id] = i
            if resident.bedroom is not None and resident.bedroom not in rooms:
                raise ValueError(f"residents[{i}].bedroom: no room {resident.bedroom!r}; rooms: {', '.join(rooms)}")
        household = self.household
        named = [(f"household.pets[{i}].carer", p.carer) for i, p in enumerate(household.pets if household else [])
                 if p.carer is not None]
        named += [(f"household.events[{i}].resident", e.resident)
                  for i, e in enumerate(household.events if household else [])]
        for where, rid in named:
            if rid not in people:
                raise ValueError(f"{where}: no resident {rid!r}; residents: {', '.join(people) or '(none)'}")
        parents = {room.id: room.parent for room in self.rooms}
        for i, room in enumerate(self.rooms):
            if room.parent is None:
                continue
            if room.parent not in parents:
                raise ValueError(f"rooms[{i}].parent: no room {room.parent!r}; rooms: {', '.join(rooms)}")
            seen_chain, at = [room.id], room.parent
            while at is not None:
                if at in seen_chain:
                    raise ValueError(f"rooms[{i}].parent: rooms lie inside each other in a loop: "
                                     + " -> ".join(seen_chain + [at]))
                seen_chain.append(at)
                at = parents[at]
        return self


# ---- loading ------------------------------------------------------------------------
def _loc_path(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part in ("function-after", "function-before") or "[" in str(part):
            continue  # pydantic's internal validator step names
        else:
            out += f".{part}" if out else str(part)
    return out


def first_problem(exc: ValidationError, default_path: str) -> tuple[str, str]:
    """(field path, one-line problem) for the first error of a pydantic validation, followed
    on the same line by every other problem ("; <path>: <problem>").

    Shared by every user file we validate (homes here, bridge configs in bridge/config.py),
    so they all report "<file>: <field>: <problem>" the same way.
    """
    found = [_problem(error, default_path) for error in exc.errors()]
    path, message = found[0]
    # Every problem is named, on the same line: fixing one at a time and re-running is slow.
    shown = found[1:1 + MAX_PROBLEMS_NAMED]
    others = "".join(f"; {p}: {m}" for p, m in shown)
    if len(found) > 1 + len(shown):
        others += f"; and {len(found) - 1 - len(shown)} more"
    return path, message + others


MAX_PROBLEMS_NAMED = 20


def _problem(error: Any, default_path: str) -> tuple[str, str]:
    message = re.sub(r"^(Value|Assertion) error, ", "", error["msg"])
    if error["type"] not in ("value_error", "assertion_error", "missing", "extra_forbidden"):
        given = error.get("input")
        if not isinstance(given, (dict, list)):
            message += f" (got {given!r})"
    path = _loc_path(tuple(error["loc"]))
    if not path:
        # Model-level validators put "<path>: <problem>" in the message.
        head, sep, rest = message.partition(": ")
        path, message = (head, rest) if sep and re.match(r"^[\w.\[\]]+$", head) else (default_path, message)
    return path, message


def validation_error(source: str, exc: ValidationError) -> UserFileError:
    return UserFileError(source, *first_problem(exc, "(home)"))


def parse_data(data: Any, source: str = "<home>") -> HomeSpec:
    if not isinstance(data, dict):
        raise UserFileError(source, "(top level)", f"expected a mapping with name, rooms, ...; "
                                                   f"got {type(data).__name__}")
    try:
        products = data.get("products")
        keys = [k for k in products if isinstance(k, str)] if isinstance(products, dict) else []
        return HomeSpec.model_validate(data, context={"products": keys})
    except ValidationError as exc:
        raise validation_error(source, exc) from None


def read_user_file(path: str | Path) -> Any:
    """A user file's data (YAML, or JSON for a `.json` name); every failure a UserFileError."""
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        raise UserFileError(source, "(file)", f"cannot read: {reason}") from None
    return load_text(text, source, json_syntax=source.lower().endswith(".json"))


def load_jsonl(path: str | Path, model: type[M], what: str = "(record)") -> list[M]:
    """`model` records, one JSON object a line, from a JSONL file (gzipped or not): the one
    loader of the suites' task and episode files. Blank lines are skipped; a bad line is one
    UserFileError "<file>:<line>: <field>: <problem>", nesting checked as `load_text` does."""
    source = str(path)
    try:
        raw = Path(path).read_bytes()
        text = (gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw).decode("utf-8")
    except (OSError, UnicodeDecodeError, EOFError) as exc:
        raise UserFileError(source, "(file)", f"cannot read: {getattr(exc, 'strerror', None) or exc}") from None
    records = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        where = f"{source}:{n}"
        if json_nesting(line) is not None:
            raise too_deep(where, where="")
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            raise UserFileError(where, "", f"JSON syntax error: {exc.msg}") from None
        check_nesting(data, where)
        try:
            records.append(model.model_validate(data))
        except ValidationError as exc:
            field, problem = first_problem(exc, what)
            raise UserFileError(where, field, problem) from None
    return records


#: libyaml's parser where PyYAML has it (the default home parses 4x faster), else PyYAML's own;
#: both construct with the safe constructor.
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_text(text: str | bytes, source: str, json_syntax: bool = False) -> Any:
    """The one way YAML or JSON from a user (a file, a request body, a message) is parsed: a
    bracket pre-scan for JSON, the parser, then `check_nesting` (depth, size, aliases), so deep
    nesting and alias bombs are refused fast, with one UserFileError line, wherever they enter."""
    if json_syntax:
        line = json_nesting(text)
        if line is not None:
            raise too_deep(source, where=f"line {line}")
        try:
            data = json.loads(text)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            where = f"line {exc.lineno} column {exc.colno}" if isinstance(exc, json.JSONDecodeError) else "(file)"
            raise UserFileError(source, where, f"JSON syntax error: {getattr(exc, 'msg', exc)}") from None
    else:
        try:
            data = yaml.load(text, Loader=_YAML_LOADER)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f"line {mark.line + 1} column {mark.column + 1}" if mark else "(yaml)"
            problem = getattr(exc, "problem", None) or str(exc)
            if "maximum nesting depth" in problem:   # libyaml's own limit (1,000 levels)
                raise too_deep(source, where=where) from None
            raise UserFileError(source, where, f"YAML syntax error: {problem}") from None
        except RecursionError:   # YAML nests without brackets ("- - - - x"): no cheap pre-scan
            raise too_deep(source) from None
    check_nesting(data, source)
    return data


def parse_file(path: str | Path) -> HomeSpec:
    """Read and validate a YAML or JSON home file; every failure is a UserFileError."""
    return parse_data(read_user_file(path), str(path))


def to_yaml(spec: HomeSpec) -> str:
    """A home file for `spec`, stable for identical specs (keys in schema order)."""
    data = spec.model_dump(mode="json")
    data["start_time"] = spec.start_time.isoformat(sep=" ")
    if data["seed"] is None:
        del data["seed"]
    for room in data["rooms"]:
        for device in room["devices"]:
            for key in ("name", "options", "attributes"):
                if not device[key]:
                    del device[key]
        if not room["indoor_lux"]:
            del room["indoor_lux"]
    for resident in data.get("residents", []):
        if resident["bedroom"] is None:
            del resident["bedroom"]
        prefs = resident["preferences"]
        for key in ("leave", "back"):
            if prefs[key] is None:
                del prefs[key]
    for pet in (data.get("household") or {}).get("pets", []):
        if pet["carer"] is None:
            del pet["carer"]
    for rule in data.get("automations", []):
        for key, default in (("name", None), ("enabled", True), ("conditions", [])):
            if rule[key] == default:
                del rule[key]
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)
