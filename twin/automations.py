"""Automations: persistent rules that run workflow steps when their trigger fires.

A rule is a trigger, optional conditions and steps (the same `execute_command` /
`write_attribute` steps as workflows, run through `Device.invoke`/`write` by the home).
Triggers:

- `{"type": "time", "cron": "30 7 * * 1-5"}`: at second 0 of every minute the five cron
  fields (minute hour day-of-month month day-of-week) match; `"at": "07:30"` with optional
  `"days": ["mon", ...]` is shorthand for one. As in cron, when both day fields are
  restricted either may match.
- `{"type": "device", "device_id", "cluster_id", "attribute_id", "endpoint_id"?, "op", "value"}`:
  when the attribute's condition *becomes* true. Devices are watched through their cluster
  servers' change listeners (the ones Matter nodes report from), so a change made by a tool,
  a workflow, a rule, the device itself or a Matter controller triggers alike. Values a
  sensor derives from its room are not changes of the device: trigger on the room instead.
- `{"type": "room", "room_id", "state", "op", "value"}`: when a room's temperature (°C),
  humidity (%RH), PM10 (µg/m³) or illuminance (lux) condition becomes true.
- `{"type": "time_and_state", "cron" | "at"/"days", "state": <device or room condition>}`:
  at the cron times, only if the condition holds then.

`conditions` (device or room conditions, and `{"type": "time_window", "after": "22:00",
"before": "06:00"}`) must all hold when a trigger fires. A state trigger that is already true
when the rule is created (or enabled) waits until it has been false.

Exact under fast-forward: cron times and the ticks where a room's trajectory crosses a
threshold are computed, not polled (`next_tick`), device changes arrive through listeners,
and rules are evaluated in the same settle in both paths; a rule fires at most once a tick.
A rule that can never fire (a cron date that never exists, an empty range, a value the
attribute can never hold) or that names a missing device, room or cluster is refused.
"""
from __future__ import annotations

import copy
from datetime import datetime, timedelta
from typing import Any

from clusters.status import MatterError
from clusters.values import to_json
from twin.compare import check_operand, compare
from twin.schema import UnknownIdError
from twin.workflows import StepFailed, normalize_step


class AutomationError(ValueError):
    """A rule refused: the message says what is wrong and what would be accepted."""


ROOM_STATES = ("temperature", "humidity", "pm10", "illuminance")
#: Physical ranges of room states: a condition outside them can never hold.
ROOM_RANGES = {"temperature": (-40.0, 60.0), "humidity": (0.0, 100.0), "pm10": (0.0, 2000.0),
               "illuminance": (0.0, 1_000_000.0)}
_DAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
#: How far ahead a cron expression is searched: long enough for 29 February in any century.
_CRON_YEARS = 9


# ---- cron ------------------------------------------------------------------------------
def _cron_field(text: str, lo: int, hi: int, names: tuple[str, ...] = (), base: int = 0) -> set[int]:
    out: set[int] = set()
    for part in text.lower().split(","):
        rng, _, step_text = part.partition("/")
        step = int(step_text) if step_text.isdigit() and int(step_text) > 0 else None
        if step_text and step is None:
            raise AutomationError(f"cron step {step_text!r} is not a positive number")

        def value(word: str) -> int:
            if word in names:
                return names.index(word) + base
            if not word.isdigit():
                raise AutomationError(f"cron value {word!r} is not a number"
                                      + (f" or one of {', '.join(names)}" if names else ""))
            return int(word)
        if rng == "*":
            a, b = lo, hi
        elif "-" in rng:
            first, _, last = rng.partition("-")
            a, b = value(first), value(last)
        else:
            a = b = value(rng)
            if step:
                b = hi
        if not (lo <= a <= hi and lo <= b <= hi):
            raise AutomationError(f"cron field {text!r}: {rng!r} is outside {lo}-{hi}")
        if a > b:
            raise AutomationError(f"cron field {text!r}: {rng!r} is an empty range (write low-high)")
        out.update(range(a, b + 1, step or 1))
    return out


class Cron:
    """A five-field cron expression, matched at whole minutes."""

    def __init__(self, expression: str):
        fields = expression.split()
        if len(fields) != 5:
            raise AutomationError(f"cron {expression!r} needs five fields: minute hour day-of-month "
                                  "month day-of-week (e.g. \"30 7 * * 1-5\")")
        self.expression = " ".join(fields)
        self.minutes = sorted(_cron_field(fields[0], 0, 59))
        self.hours = sorted(_cron_field(fields[1], 0, 23))
        self.days = _cron_field(fields[2], 1, 31)
        self.months = _cron_field(fields[3], 1, 12, _MONTHS, 1)
        dow = _cron_field(fields[4].replace("7", "0") if fields[4] == "7" else fields[4], 0, 7, _DAYS)
        self.weekdays = {d % 7 for d in dow}
        self.any_day, self.any_weekday = fields[2] == "*", fields[4] == "*"

    def _day_matches(self, day: datetime) -> bool:
        if day.month not in self.months:
            return False
        in_month = day.day in self.days
        in_week = (day.isoweekday() % 7) in self.weekdays
        if self.any_day or self.any_weekday:
            return in_month and in_week
        return in_month or in_week

    def next_after(self, when: datetime) -> datetime | None:
        """The first matching minute strictly after `when`; None if none within years."""
        start = (when + timedelta(minutes=1)).replace(second=0, microsecond=0)
        day = start.replace(hour=0, minute=0)
        for _ in range(366 * _CRON_YEARS):
            if self._day_matches(day):
                for hour in self.hours:
                    for minute in self.minutes:
                        at = day.replace(hour=hour, minute=minute)
                        if at >= start:
                            return at
            day += timedelta(days=1)
        return None


def _cron_of(trigger: dict[str, Any]) -> str:
    if "cron" in trigger:
        if "at" in trigger or "days" in trigger:
            raise AutomationError("give either cron or at/days, not both")
        if not isinstance(trigger["cron"], str):
            raise AutomationError(f"cron must be a string like \"30 7 * * 1-5\", got {trigger['cron']!r}")
        return str(trigger["cron"])
    at = trigger.get("at")
    hh, _, mm = str(at).partition(":")
    if not (isinstance(at, str) and hh.isdigit() and mm.isdigit() and int(hh) < 24 and int(mm) < 60):
        raise AutomationError(f"a time trigger needs cron (\"30 7 * * *\") or at (\"HH:MM\"), got {at!r}")
    days = trigger.get("days", ["*"])
    if not isinstance(days, list) or not days or not all(isinstance(d, str) and (d in _DAYS or d == "*")
                                                         for d in days):
        raise AutomationError(f"days must be a non-empty list of {', '.join(_DAYS)}; got {days!r}")
    return f"{int(mm)} {int(hh)} * * {','.join(days) if '*' not in days else '*'}"


def check_condition(home: Any, cond: Any, where: str) -> dict[str, Any]:
    """A device, room or time-window condition, checked against `home` and normalized
    (resolved names); AutomationError or UnknownIdError says why it is refused. Goal
    predicates (twin/goals.py) use the same conditions."""
    if not isinstance(cond, dict):
        raise AutomationError(f"{where}: expected an object, got {cond!r}")
    kind = cond.get("type") or ("device" if "device_id" in cond else "room" if "room_id" in cond else None)
    if kind in ("device", "room"):
        missing = [k for k in ("op", "value") if k not in cond]
        if missing:
            raise AutomationError(f"{where}: a {kind} condition needs {' and '.join(missing)} "
                                  f"(op one of ==, !=, >, >=, <, <=, in, between)")
        problem = check_operand(cond["op"], cond["value"])
        if problem:
            raise AutomationError(f"{where}: {problem}")
    if kind == "room":
        if where == "trigger" and cond.get("op") not in ("<", "<=", ">", ">=", "between"):
            raise AutomationError(f"{where}: a room state varies continuously; trigger on <, <=, >, >= or "
                                  f"between, not {cond.get('op')!r}")
        extra = set(cond) - {"type", "room_id", "state", "op", "value"}
        if extra:
            raise AutomationError(f"{where}: unknown field(s) {', '.join(sorted(extra))}")
        home._check_room(cond.get("room_id"))
        state = cond.get("state")
        if state not in ROOM_STATES:
            raise AutomationError(f"{where}: unknown room state {state!r}; accepted: {', '.join(ROOM_STATES)}")
        lo, hi = ROOM_RANGES[state]
        op, value = cond["op"], cond["value"]
        probe = {">": [hi], ">=": [hi], "<": [lo], "<=": [lo], "between": [max(lo, value[0])] if
                 op == "between" else [], "==": [value], "in": value if op == "in" else [], "!=": [lo, hi]}[op]
        if op in ("==", "in", "between") and not any(isinstance(v, (int, float)) and not isinstance(v, bool)
                                                     and lo <= v <= hi for v in probe):
            raise AutomationError(f"{where}: {state} is always within {lo:g}..{hi:g}; "
                                  f"{op} {value!r} can never hold")
        if op in (">", ">=", "<", "<=") and not compare(probe[0], op, value):
            raise AutomationError(f"{where}: {state} is always within {lo:g}..{hi:g}; "
                                  f"{op} {value!r} can never hold")
        return {"type": "room", "room_id": cond["room_id"], "state": state, "op": op, "value": value}
    if kind == "device":
        extra = set(cond) - {"type", "device_id", "endpoint_id", "cluster_id", "attribute_id", "op", "value"}
        if extra:
            raise AutomationError(f"{where}: unknown field(s) {', '.join(sorted(extra))}")
        device = home.device(cond.get("device_id"))
        try:
            server = device.locate(cond.get("cluster_id"), cond.get("endpoint_id"))
            name = server.resolve_attribute(cond.get("attribute_id"))
        except MatterError as err:
            raise AutomationError(f"{where}: {err.message}") from None
        if getattr(server, "sensor_source", None) is not None and name not in server.writable:
            raise AutomationError(f"{where}: {server.name}.{name} is measured from the room; use a room "
                                  "trigger (type room, with the room's state) instead")
        current = to_json(server.read(name))
        op, value = cond["op"], cond["value"]
        if op in (">", ">=", "<", "<=", "between") and (isinstance(current, bool) or
                                                       not isinstance(current, (int, float, type(None)))):
            raise AutomationError(f"{where}: {server.name}.{name} is not a number ({current!r}); "
                                  f"{op} can never hold")
        for v in (value if op == "in" else [value] if op == "==" else []):
            try:
                server._coerce(name, v)
            except (MatterError, TypeError, ValueError) as err:
                raise AutomationError(f"{where}: {server.name}.{name} can never be {v!r} "
                                      f"({getattr(err, 'message', err)})") from None
        return {"type": "device", "device_id": device.id, "endpoint_id": server.endpoint.id,
                "cluster_id": server.name, "attribute_id": name, "op": op, "value": value}
    if kind == "time_window":
        out = {"type": "time_window"}
        for key in ("after", "before"):
            text = cond.get(key)
            hh, _, mm = str(text).partition(":")
            if not (isinstance(text, str) and hh.isdigit() and mm.isdigit() and int(hh) < 24 and int(mm) < 60):
                raise AutomationError(f"{where}.{key}: expected \"HH:MM\", got {text!r}")
            out[key] = f"{int(hh):02d}:{int(mm):02d}"
        if out["after"] == out["before"]:
            raise AutomationError(f"{where}: the window {out['after']}-{out['before']} is empty")
        return out
    raise AutomationError(f"{where}: a condition has type device (device_id, cluster_id, attribute_id, op, "
                          "value), room (room_id, state, op, value) or time_window (after, before)")


# ---- rules -----------------------------------------------------------------------------
class Rule:
    def __init__(self, rule_id: str, name: str, trigger: dict[str, Any], conditions: list[dict[str, Any]],
                 steps: list[dict[str, Any]], created_tick: int):
        self.id = rule_id
        self.name = name
        self.trigger = trigger          # normalized; never mutated
        self.conditions = conditions
        self.steps = steps
        self.created_tick = created_tick
        self.enabled = True
        self.due: int | None = None     # next cron tick (time triggers)
        self.last: bool = False         # the state condition at its last evaluation
        self.fired_tick: int | None = None
        self.runs: list[dict[str, Any]] = []

    def to_json(self) -> dict[str, Any]:
        return copy.deepcopy({
            "id": self.id, "rule_id": self.id, "name": self.name, "enabled": self.enabled,
            "trigger": self.trigger, "conditions": self.conditions, "steps": self.steps,
            "created_tick": self.created_tick, "due_tick": self.due, "last": self.last,
            "fired_tick": self.fired_tick, "runs": self.runs})

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> Rule:
        rule = cls(state["id"], state["name"], state["trigger"], state["conditions"], state["steps"],
                   state["created_tick"])
        rule.enabled, rule.due, rule.last = state["enabled"], state["due_tick"], state["last"]
        rule.fired_tick, rule.runs = state["fired_tick"], state["runs"]
        return rule


class Automations:
    """A home's rules (ids a1, a2, ... in creation order). The home drives them: `touched`
    from its change listener, `run_due` in every settle, `next_tick` for fast-forward."""

    def __init__(self, home: Any):
        self._home = home
        self._items: dict[str, Rule] = {}
        self._counter = 0
        self._pending: set[str] = set()      # device ids whose state changed since the last settle
        self.watched: dict[str, list[str]] = {}   # device id -> ids of enabled rules on it

    # ---- checking a rule -------------------------------------------------------------
    def _condition(self, cond: Any, where: str) -> dict[str, Any]:
        return check_condition(self._home, cond, where)

    def _trigger(self, trigger: Any) -> dict[str, Any]:
        if not isinstance(trigger, dict):
            raise AutomationError("trigger: expected an object with a type (time, device, room, time_and_state)")
        kind = trigger.get("type")
        if kind in ("time", "time_and_state"):
            allowed = {"type", "cron", "at", "days"} | ({"state"} if kind == "time_and_state" else set())
            extra = set(trigger) - allowed
            if extra:
                raise AutomationError(f"trigger: unknown field(s) {', '.join(sorted(extra))}")
            try:
                cron = Cron(_cron_of(trigger))
            except AutomationError as err:
                raise AutomationError(f"trigger: {err}") from None
            if cron.next_after(self._home.now) is None:
                raise AutomationError(f"trigger: cron {cron.expression!r} never matches a real date")
            out: dict[str, Any] = {"type": kind, "cron": cron.expression}
            if kind == "time_and_state":
                if "state" not in trigger:
                    raise AutomationError("trigger: time_and_state needs a state condition")
                state = self._condition(trigger["state"], "trigger.state")
                if state["type"] == "time_window":
                    raise AutomationError("trigger.state: must be a device or room condition")
                out["state"] = state
            return out
        if kind in ("device", "room"):
            return self._condition(trigger, "trigger")
        raise AutomationError(f"trigger: unknown type {kind!r}; accepted: time, device, room, time_and_state")

    def _steps(self, steps: Any) -> list[dict[str, Any]]:
        if not isinstance(steps, list) or not steps:
            raise AutomationError("steps must be a non-empty list of {'tool', 'args'} objects")
        out = []
        for i, step in enumerate(steps):
            normalized = normalize_step(step, i)   # ArgumentError: the workflow's own message
            args = normalized["args"]
            device = self._home.device(args["device_id"])
            try:
                server = device.locate(args["cluster_id"], args.get("endpoint_id"))
                if normalized["tool"] == "execute_command":
                    server.resolve_command(args["command_id"])
                else:
                    server.resolve_attribute(args["attribute_id"])
            except MatterError as err:
                raise AutomationError(f"steps[{i}]: {err.message}") from None
            out.append(normalized)
        return out

    # ---- the table -------------------------------------------------------------------
    def create(self, trigger: Any, steps: Any, conditions: Any = None, name: str | None = None) -> Rule:
        """Check and add a rule (enabled); AutomationError, ArgumentError or UnknownIdError if bad."""
        norm_trigger = self._trigger(trigger)
        if conditions is None:
            conditions = []
        if not isinstance(conditions, list):
            raise AutomationError("conditions must be a list")
        norm_conditions = [self._condition(c, f"conditions[{i}]") for i, c in enumerate(conditions)]
        norm_steps = self._steps(steps)
        if name is not None and not isinstance(name, str):
            raise AutomationError(f"name must be a string, got {name!r}")
        self._counter += 1
        rule = Rule(f"a{self._counter}", name or f"a{self._counter}", norm_trigger, norm_conditions,
                    norm_steps, self._home.clock.tick)
        self._items[rule.id] = rule
        self._arm(rule)
        return rule

    def normalize_trigger(self, trigger: Any) -> dict[str, Any]:
        """A trigger checked and normalized as `create` stores it (resolved names, cron form)."""
        return self._trigger(trigger)

    def same_firing(self, a: Any, b: Any) -> bool:
        """Whether two triggers fire at the same times and under the same states (a task's
        ground-truth trigger against an agent's): cron expressions that match the same minutes
        (over the coming nine years), state conditions on the same attribute or room that hold
        for the same values (`> 24` is `>= 25` on an integer attribute). Bad triggers raise as
        in `create`."""
        x, y = self.normalize_trigger(a), self.normalize_trigger(b)
        if x["type"] != y["type"]:
            return False
        if "cron" in x and not _same_cron(Cron(x["cron"]), Cron(y["cron"]), self._home.now):
            return False
        if x["type"] == "time":
            return True
        cx, cy = (x["state"], y["state"]) if x["type"] == "time_and_state" else (x, y)
        return _same_condition(self._home, cx, cy)

    def get(self, rule_id: str) -> Rule:
        try:
            return self._items[rule_id]
        except (KeyError, TypeError):
            raise UnknownIdError(f"no automation {rule_id!r}; known: " + (", ".join(self._items) or "none")) from None

    def list(self) -> list[Rule]:
        return list(self._items.values())

    def set_enabled(self, rule_id: str, enabled: bool) -> Rule:
        rule = self.get(rule_id)
        if rule.enabled != enabled:
            rule.enabled = enabled
            if enabled:
                self._arm(rule)
            else:
                rule.due = None
            self._rewatch()
        return rule

    def delete(self, rule_id: str) -> Rule:
        rule = self.get(rule_id)
        del self._items[rule_id]
        self._rewatch()
        return rule

    def _arm(self, rule: Rule) -> None:
        """Start watching from now: the next cron time, or the state as it is now."""
        trigger = rule.trigger
        if "cron" in trigger:
            rule.due = self._cron_tick(trigger["cron"], self._home.clock.tick)
        else:
            rule.last = self._holds(trigger)
        self._rewatch()

    def _cron_tick(self, expression: str, after_tick: int) -> int | None:
        clock = self._home.clock
        when = Cron(expression).next_after(clock.time_at(after_tick))
        return None if when is None else clock.tick_at(when)

    def _rewatch(self) -> None:
        watched: dict[str, list[str]] = {}
        for rule in self._items.values():
            if rule.enabled and rule.trigger["type"] == "device":
                watched.setdefault(rule.trigger["device_id"], []).append(rule.id)
        self.watched = watched

    # ---- evaluation ------------------------------------------------------------------
    def _holds(self, cond: dict[str, Any]) -> bool:
        home = self._home
        kind = cond["type"]
        if kind == "device":
            server = home.devices[cond["device_id"]].locate(cond["cluster_id"], cond["endpoint_id"])
            return compare(to_json(server.read(cond["attribute_id"])), cond["op"], cond["value"])
        if kind == "room":
            return compare(getattr(home.rooms[cond["room_id"]], cond["state"]), cond["op"], cond["value"])
        if kind == "time_window":
            now = home.now.strftime("%H:%M")
            after, before = cond["after"], cond["before"]
            return after <= now < before if after < before else (now >= after or now < before)
        return all(self._holds(c) for c in cond.get("all", []))

    def touched(self, device_id: str) -> None:
        """A watched device changed (the home's change listener)."""
        self._pending.add(device_id)

    def run_due(self, tick: int) -> bool:
        """Fire every rule whose trigger fires at `tick` (in id order); True if any ran."""
        if not self._items:
            return False
        fire = []
        pending, self._pending = self._pending, set()
        for rule in self._items.values():
            if not rule.enabled or rule.fired_tick == tick:
                continue
            trigger = rule.trigger
            kind = trigger["type"]
            if kind in ("time", "time_and_state"):
                if rule.due is None or rule.due > tick:
                    continue
                rule.due = self._cron_tick(trigger["cron"], tick)
                if kind == "time_and_state" and not self._holds(trigger["state"]):
                    continue
            else:
                if kind == "device" and trigger["device_id"] not in pending:
                    continue
                now = self._holds(trigger)
                rising = now and not rule.last
                rule.last = now
                if not rising:
                    continue
            if all(self._holds(c) for c in rule.conditions):
                fire.append(rule)
        for rule in fire:
            self._fire(rule, tick)
        return bool(fire)

    def _fire(self, rule: Rule, tick: int) -> None:
        rule.fired_tick = tick
        run: dict[str, Any] = {"tick": tick, "time": self._home.clock.format(tick), "status": "completed",
                               "results": []}
        for i, step in enumerate(rule.steps):
            if run["status"] == "failed":
                run["results"].append({"status": "skipped"})
                continue
            try:
                result = self._home._run_step(step["tool"], step["args"])
            except StepFailed as exc:
                run["status"] = "failed"
                run["error"] = f"step {i + 1} ({step['tool']}): {exc}"
                run["results"].append({"status": "error", "error": str(exc)})
            else:
                run["results"].append({"status": "ok", "result": result})
        rule.runs.append(run)

    def next_tick(self) -> int | None:
        """The earliest tick after now at which a rule can fire without a device changing:
        a cron time, or a room trajectory reaching a threshold (None: no such tick)."""
        best: int | None = None
        now = self._home.clock.tick
        for rule in self._items.values():
            if not rule.enabled:
                continue
            trigger = rule.trigger
            if rule.due is not None:
                tick: int | None = rule.due
            elif trigger["type"] == "room" and not rule.last and trigger["state"] != "illuminance":
                tick = _crossing(self._home.rooms[trigger["room_id"]]._traj[trigger["state"]], now,
                                 trigger["op"], trigger["value"])
            else:
                continue
            if tick is not None and (best is None or tick < best):
                best = tick
        return best

    # ---- persistence -----------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        return {"counter": self._counter, "pending": sorted(self._pending),
                "items": [rule.to_json() for rule in self._items.values()]}

    def load_state(self, state: dict[str, Any]) -> None:
        self._counter = state["counter"]
        self._pending = set(state["pending"])
        self._items = {s["id"]: Rule.from_state(s) for s in state["items"]}
        self._rewatch()

    def __bool__(self) -> bool:
        return bool(self._items) or self._counter > 0


def _same_cron(a: Cron, b: Cron, now: datetime) -> bool:
    if (a.minutes, a.hours) != (b.minutes, b.hours):
        return False
    day = now.replace(hour=0, minute=0, second=0, microsecond=0)
    for _ in range(366 * _CRON_YEARS):
        if a._day_matches(day) != b._day_matches(day):
            return False
        day += timedelta(days=1)
    return True


def _same_condition(home: Any, a: dict[str, Any], b: dict[str, Any]) -> bool:
    where = (("device_id", "endpoint_id", "cluster_id", "attribute_id") if a["type"] == "device"
             else ("room_id", "state"))
    if a["type"] != b["type"] or any(a[k] != b[k] for k in where):
        return False
    if (a["op"], a["value"]) == (b["op"], b["value"]):
        return True
    if a["type"] == "device":
        server = home.devices[a["device_id"]].locate(a["cluster_id"], a["endpoint_id"])
        current = server.get(a["attribute_id"])
        if isinstance(current, bool):
            return all(compare(v, a["op"], a["value"]) == compare(v, b["op"], b["value"]) for v in (False, True))
        if isinstance(current, int):
            # Integer attributes: compare over every value near the thresholds.
            edges = [v for c in (a, b) for v in (c["value"] if isinstance(c["value"], list) else [c["value"]])
                     if isinstance(v, (int, float)) and not isinstance(v, bool)]
            probes = {int(e) + d for e in edges for d in (-2, -1, 0, 1, 2)} | {current}
            if all(isinstance(v, int) for v in probes) and probes:
                return all(compare(v, a["op"], a["value"]) == compare(v, b["op"], b["value"]) for v in probes)
    return False


def _crossing(traj: Any, now: int, op: str, value: Any) -> int | None:
    """The first tick after `now` at which the trajectory satisfies `op value`, if it
    ever does while it holds (x moves monotonically towards x*, so a binary search finds it)."""
    if compare(traj.value(now), op, value):
        return None   # already true: it must first become false, which takes a settle
    between = op == "between"
    if between:   # enter through the bound the trajectory moves towards, then check the other
        rising = traj.xstar > traj.value(now)
        op, value, other = (">=", value[0], ("<=", value[1])) if rising else ("<=", value[1], (">=", value[0]))
    if not compare(traj.value(now + 10 ** 9), op, value):   # a**n has reached 0: the value is x*
        return None
    lo, hi = 0, 1
    while not compare(traj.value(now + hi), op, value):
        lo, hi = hi, hi * 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if compare(traj.value(now + mid), op, value):
            hi = mid
        else:
            lo = mid
    if between and not compare(traj.value(now + hi), *other):
        return None   # it steps over the whole range between two ticks
    return now + hi
