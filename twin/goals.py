"""Goal predicates with partial credit: Boolean checks over device, room and rule state.

A goal is a list of predicates φ_1..φ_K; `Goal.check(home)` gives each one's truth and
m = (1/K) Σ φ_k (partial credit), and success when m = 1. It can be checked after every
step. Predicates are JSON, in the spelling of automation conditions (twin/automations.py):

- `{"type": "device", "device_id", "cluster_id", "attribute_id", "endpoint_id"?, "op", "value"}`
- `{"type": "room", "room_id", "state", "op", "value"}` (°C, %RH, lux, µg/m³)
- `{"type": "room_change", "room_id", "state", "direction": "increase"|"decrease", "min_change"?}`:
  the room's value compared with the same home left alone (the counterfactual, below)
- `{"type": "rule", "match": {...}, "fires_like": <trigger>?}`: some automation rule whose JSON
  (trigger, conditions, steps, enabled, name) contains `match` (objects by subset, other values
  equal) and, with `fires_like`, that is enabled and fires as that trigger does
  (`Automations.same_firing`: `at 07:30` on weekdays is `30 7 * * 1-5`)
- `{"type": "all"|"any", "of": [predicates]}`, `{"type": "not", "of": predicate}`
- `{"type": "every"|"some", "devices": <selector>, "check": {cluster_id, attribute_id,
  endpoint_id?, op, value}}` over devices chosen by `type`, `category`, `tags`, `rooms`
  (rooms inside them too), `room_kind`, `floor`, `exclude`; or `"rooms": <selector>` (`ids`,
  `kind`, `floor`, `exclude`) with `"check": {state, op, value}`. A selector that selects
  nothing is refused.
- `{"type": "unchanged", "except": [device ids]}`: irrelevant-state preservation: every other
  device is as it would be had nobody acted (the counterfactual), comparing every attribute
  except those a device measures from its room (they follow the room, which the agent may
  legitimately change).

The counterfactual is a fork of the home taken when the goal is made (`Goal(home, ...)`,
before the agent acts), advanced to the checked home's tick with nobody acting. Forks share
untouched devices (copy on write), so a device both homes still share is equal at once.
"""
from __future__ import annotations

from typing import Any

from clusters.base import GLOBAL_ATTRIBUTES
from clusters.values import to_json
from twin.automations import ROOM_STATES, AutomationError, check_condition
from twin.clock import TICKS_PER_SECOND
from twin.compare import check_operand, compare


class GoalError(ValueError):
    """A predicate that is malformed, names something missing, or can never hold."""


def _subset(want: Any, have: Any) -> bool:
    if isinstance(want, dict):
        return isinstance(have, dict) and all(k in have and _subset(v, have[k]) for k, v in want.items())
    if isinstance(want, list):
        return isinstance(have, list) and len(want) == len(have) and all(map(_subset, want, have))
    return bool(compare(have, "==", want))


class Goal:
    """Predicates checked against a home; `baseline` is the counterfactual's starting point
    (default: a fork of `home` now)."""

    def __init__(self, home: Any, predicates: list[Any], baseline: Any = None):
        if not isinstance(predicates, list) or not predicates:
            raise GoalError("a goal is a non-empty list of predicates")
        self._home = home
        self.predicates = [self._normalize(p, f"[{i}]") for i, p in enumerate(predicates)]
        self._baseline = baseline if baseline is not None else home.fork()

    # ---- checking predicates ---------------------------------------------------------
    def _normalize(self, p: Any, where: str) -> dict[str, Any]:
        home = self._home
        if not isinstance(p, dict):
            raise GoalError(f"{where}: expected an object with a type, got {p!r}")
        kind = p.get("type")
        try:
            if kind in ("device", "room"):
                return check_condition(home, p, where)
            if kind == "room_change":
                home._check_room(p.get("room_id"))
                if p.get("state") not in ROOM_STATES:
                    raise GoalError(f"{where}: unknown room state {p.get('state')!r}; "
                                    f"accepted: {', '.join(ROOM_STATES)}")
                if p.get("direction") not in ("increase", "decrease"):
                    raise GoalError(f"{where}: direction must be increase or decrease, got {p.get('direction')!r}")
                min_change = p.get("min_change", 0.0)
                if not isinstance(min_change, (int, float)) or isinstance(min_change, bool) or min_change < 0:
                    raise GoalError(f"{where}: min_change must be a number >= 0, got {min_change!r}")
                return {"type": kind, "room_id": p["room_id"], "state": p["state"], "direction": p["direction"],
                        "min_change": float(min_change)}
            if kind == "rule":
                match, fires = p.get("match", {}), p.get("fires_like")
                if not isinstance(match, dict) or (not match and fires is None):
                    raise GoalError(f"{where}: a rule predicate needs match (an object to find in a rule) "
                                    "and/or fires_like (a trigger)")
                out = {"type": kind, "match": match}
                if fires is not None:
                    home.automations.normalize_trigger(fires)   # refused as create_automation would
                    out["fires_like"] = fires
                return out
            if kind in ("all", "any"):
                if not isinstance(p.get("of"), list) or not p["of"]:
                    raise GoalError(f"{where}: {kind} needs of: a non-empty list of predicates")
                return {"type": kind, "of": [self._normalize(q, f"{where}.of[{i}]") for i, q in enumerate(p["of"])]}
            if kind == "not":
                return {"type": kind, "of": self._normalize(p.get("of"), f"{where}.of")}
            if kind in ("every", "some"):
                return self._quantifier(p, where)
            if kind == "unchanged":
                ignore = p.get("except", [])
                if not isinstance(ignore, list):
                    raise GoalError(f"{where}: except must be a list of device ids")
                for device_id in ignore:
                    home.device(device_id)
                return {"type": kind, "except": list(ignore)}
        except AutomationError as err:
            raise GoalError(str(err)) from None
        raise GoalError(f"{where}: unknown predicate type {kind!r}; accepted: device, room, room_change, rule, "
                        "all, any, not, every, some, unchanged")

    def _quantifier(self, p: dict[str, Any], where: str) -> dict[str, Any]:
        home = self._home
        check = p.get("check")
        if not isinstance(check, dict):
            raise GoalError(f"{where}: {p['type']} needs check: the condition each member must meet")
        if ("devices" in p) == ("rooms" in p):
            raise GoalError(f"{where}: {p['type']} takes either devices or rooms (a selector)")
        if "rooms" in p:
            members = select_rooms(home, p["rooms"], f"{where}.rooms")
            for room_id in members:
                check_condition(home, {"type": "room", "room_id": room_id, **check}, f"{where}.check")
            return {"type": p["type"], "rooms": members, "check": dict(check)}
        members = select_devices(home, p["devices"], f"{where}.devices")
        problem = check_operand(check.get("op"), check.get("value"))
        if problem:
            raise GoalError(f"{where}.check: {problem}")
        extra = set(check) - {"cluster_id", "attribute_id", "endpoint_id", "op", "value"}
        if extra:
            raise GoalError(f"{where}.check: unknown field(s) {', '.join(sorted(extra))}")
        # Each member checked as a device condition of its own (a member without the attribute,
        # or that can never meet it, makes the predicate one that cannot hold: refused here).
        checks = [check_condition(home, {"type": "device", "device_id": d, **check}, f"{where}.check ({d})")
                  for d in members]
        return {"type": p["type"], "devices": members, "check": dict(check), "checks": checks}

    # ---- evaluation ------------------------------------------------------------------
    def counterfactual(self) -> Any:
        """The baseline home advanced, with nobody acting, to the checked home's tick."""
        base = self._baseline
        target = self._home.clock.tick
        if base.clock.tick < target:
            base.advance((target - base.clock.tick) / TICKS_PER_SECOND)
        return base

    def check(self, home: Any = None) -> dict[str, Any]:
        """{"satisfied": [bool per predicate], "m": fraction satisfied, "success": all hold}."""
        if home is not None:
            self._home = home
        satisfied = [self._holds(p) for p in self.predicates]
        m = sum(satisfied) / len(satisfied)
        return {"satisfied": satisfied, "m": m, "success": all(satisfied)}

    def _holds(self, p: dict[str, Any]) -> bool:
        home = self._home
        kind = p["type"]
        if kind == "device":
            return _device_holds(home, p["device_id"], p)
        if kind == "room":
            return compare(getattr(home.rooms[p["room_id"]], p["state"]), p["op"], p["value"])
        if kind == "room_change":
            now = getattr(home.rooms[p["room_id"]], p["state"])
            alone = getattr(self.counterfactual().rooms[p["room_id"]], p["state"])
            moved = now - alone if p["direction"] == "increase" else alone - now
            return moved > p["min_change"]
        if kind == "rule":
            table = home.automations
            fires = p.get("fires_like")
            return any(_subset(p["match"], rule.to_json())
                       and (fires is None or (rule.enabled and table.same_firing(fires, rule.trigger)))
                       for rule in table.list())
        if kind == "all":
            return all(self._holds(q) for q in p["of"])
        if kind == "any":
            return any(self._holds(q) for q in p["of"])
        if kind == "not":
            return not self._holds(p["of"])
        if kind in ("every", "some"):
            test = all if kind == "every" else any
            if "rooms" in p:
                c = p["check"]
                return test(compare(getattr(home.rooms[r], c["state"]), c["op"], c["value"]) for r in p["rooms"])
            return test(_device_holds(home, c["device_id"], c) for c in p["checks"])
        if kind == "unchanged":
            return not changed_devices(home, self.counterfactual(), set(p["except"]))
        raise AssertionError(kind)   # _normalize admits no other type


def _device_holds(home: Any, device_id: str, cond: dict[str, Any]) -> bool:
    """A normalized device condition (resolved endpoint, cluster and attribute names) now."""
    server = home.devices[device_id].endpoints[cond["endpoint_id"]].server(cond["cluster_id"])
    name = cond["attribute_id"]
    value = server.read(name) if name in GLOBAL_ATTRIBUTES else server.get(name)
    return compare(to_json(value), cond["op"], cond["value"])


def device_state(device: Any, as_json: bool = True) -> dict[str, Any]:
    """{"<ep>/<Cluster>/<Attribute>": value} of what a device holds: every attribute but the
    global ones and those it measures from its room (read-only ones of a room-fed server).
    Values as JSON, or (`as_json=False`, for comparing) as the servers hold them."""
    out = {}
    for ep_id, ep in sorted(device.endpoints.items()):
        for _, server in sorted(ep.servers.items()):
            for name, value in _server_state(server).items():
                out[f"{ep_id}/{server.name}/{name}"] = to_json(value) if as_json else value
    return out


def _server_state(server: Any) -> dict[str, Any]:
    fed = getattr(server, "sensor_source", None) is not None
    # By spec name: no id lookup (a check runs every step).
    return {name: server.get(name) for name in server.attributes
            if name not in GLOBAL_ATTRIBUTES and not (fed and name not in server.writable)}


def changed_devices(home: Any, other: Any, ignore: set[str] = frozenset()) -> list[str]:  # type: ignore[assignment]
    """Ids of devices (not in `ignore`) whose state differs between two homes of the same
    devices; devices both still share through a fork are equal without reading them."""
    out = []
    for device_id, mine in home.devices.objects.items():
        if device_id in ignore:
            continue
        theirs = other.devices.objects.get(device_id)
        if mine is theirs:
            continue
        if theirs is None or not _same_device(home.devices[device_id], other.devices[device_id]):
            out.append(device_id)
    return out


def _same_device(a: Any, b: Any) -> bool:
    # Equal stored values mean equal servers (derived values follow from them, the clock and
    # the room, and room-measured ones are not compared): one dict comparison per server, and
    # only a server whose stored values differ is read attribute by attribute.
    return all(x._values == y._values or _server_state(x) == _server_state(y)
               for x, y in zip(a.servers(), b.servers()))


def select_devices(home: Any, selector: Any, where: str = "devices") -> list[str]:
    """Device ids chosen by a selector (all given filters hold), in home order; GoalError if none."""
    if not isinstance(selector, dict):
        raise GoalError(f"{where}: expected a selector object (type, category, tags, rooms, room_kind, floor, exclude)")
    extra = set(selector) - {"type", "category", "tags", "rooms", "room_kind", "floor", "exclude"}
    if extra:
        raise GoalError(f"{where}: unknown field(s) {', '.join(sorted(extra))}")

    def names(key: str) -> list[Any] | None:
        value = selector.get(key)
        if value is None:
            return None
        return value if isinstance(value, list) else [value]
    rooms = names("rooms")
    inside = None
    if rooms is not None:
        inside = set()
        for room_id in rooms:
            inside |= {room_id, *home.rooms_inside(room_id)}
    types, categories, tags = names("type"), names("category"), names("tags")
    kinds, exclude, floor = names("room_kind"), set(names("exclude") or ()), selector.get("floor")
    out = []
    for device_id in home.devices.objects:
        info = home.device_info(device_id)
        room = home.rooms[info["room"]]
        if (device_id in exclude or (types and info["type"] not in types)
                or (categories and home.category_of(device_id) not in categories)
                or (tags and not set(tags) <= set(home.tags_of(device_id)))
                or (inside is not None and info["room"] not in inside)
                or (kinds and room.kind not in kinds) or (floor is not None and room.floor != floor)):
            continue
        out.append(device_id)
    if not out:
        raise GoalError(f"{where}: the selector {selector} selects no device")
    return out


def select_rooms(home: Any, selector: Any, where: str = "rooms") -> list[str]:
    """Room ids chosen by a selector (ids, kind, floor, exclude), in home order; GoalError if none."""
    if not isinstance(selector, dict):
        raise GoalError(f"{where}: expected a selector object (ids, kind, floor, exclude)")
    extra = set(selector) - {"ids", "kind", "floor", "exclude"}
    if extra:
        raise GoalError(f"{where}: unknown field(s) {', '.join(sorted(extra))}")
    def listed(key: str) -> list[Any] | None:   # one value or a list of them
        value = selector.get(key)
        return None if value is None else value if isinstance(value, list) else [value]
    ids, exclude, kinds = listed("ids"), listed("exclude") or [], listed("kind")
    for room_id in (ids or []) + exclude:
        home._check_room(room_id)
    out = [r for r, room in home.rooms.items()
           if (ids is None or r in ids) and r not in exclude and (not kinds or room.kind in kinds)
           and (selector.get("floor") is None or room.floor == selector["floor"])]
    if not out:
        raise GoalError(f"{where}: the selector {selector} selects no room")
    return out


def simuhome_predicates(goals: list[dict[str, Any]], epsilon: dict[str, float] | None = None) -> list[dict[str, Any]]:
    """SimuHome's device and room-direction goals (scenarios/simuhome/schema.py, as JSON) as predicates:
    a device goal is an exact equality, a direction goal a room_change against the home left
    alone by more than `epsilon[state]`. Timed goals hold at their own tick: check them there."""
    out = []
    for g in goals:
        if g["type"] == "device_attribute":
            out.append({"type": "device", "device_id": g["device_id"], "endpoint_id": g.get("endpoint", 1),
                        "cluster_id": g["cluster"], "attribute_id": g["attribute"], "op": "==", "value": g["value"]})
        elif g["type"] == "room_state" and g.get("direction"):
            out.append({"type": "room_change", "room_id": g["room_id"], "state": g["state"],
                        "direction": g["direction"], "min_change": (epsilon or {}).get(g["state"], 0.0)})
        else:
            raise GoalError(f"goal type {g['type']!r} (without direction) is not a state predicate: "
                            "QT1 values are answers for a judge; timed goals are checked at their tick")
    return out
