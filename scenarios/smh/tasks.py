"""SMH-Bench tasks: seven capability categories, 22 subcategories, three home tiers.

A task is a home (`tier-k`: HomeMaker's home of that tier, `home_spec`) put into a start state by `setup`
operations, what the user said (`query`, with `history` for TC5 and `memory` for TC6), and its
ground truth, by what the task expects:

- `act` (TC1, TC2, TC5, TC6): goal predicates (twin.goals) over the targeted devices; every
  other device must be as it would be had nobody acted (irrelevant-state preservation);
- `clarify` (TC3): the same goal, reached after asking the simulated user (`user`: the hidden
  intent; twin.user.ScriptedUser answers from it); asking first is part of the check;
- `rule` (TC4): an automation whose trigger fires exactly when `rule.trigger` does (cron
  minutes, or the same states) and whose steps reach the goal; nothing may change now;
- `answer` (TC7): `answer` (the value a correct reply states); nothing may change.

Generation: subcategory s, task k draws from `Random(f"{seed}:{s}:{k}:{attempt}")` (a
candidate that does not fit its home is redrawn), so the committed set regenerates byte for
byte and any prefix of a subcategory is stable.
"""
from __future__ import annotations

import functools
import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from bridge.tools import Session, call_tool
from bridge.twin_backend import TwinBackend
from clusters.devices import DEVICE_TYPES
from clusters.status import MatterError
from scenarios.smh import language as L
from twin.generator import make_home
from twin.home import Home
from twin.schema import HomeSpec, load_jsonl

SEED = 20260601
#: category -> its subcategories (the paper's taxonomy, our names)
SUBCATEGORIES: dict[str, tuple[str, ...]] = {
    "TC1": ("clear", "colloquial", "noisy"),
    "TC2": ("multi_device", "batch", "state_dependent", "room_dependent", "top_n"),
    "TC3": ("state_ambiguity", "scene_ambiguity", "slot_missing"),
    "TC4": ("time_specific", "state_driven", "time_and_state"),
    "TC5": ("continuation", "topic_shift", "coreference", "correction"),
    "TC6": ("short_term", "long_term"),
    "TC7": ("status", "quantity"),
}
CATEGORIES = tuple(SUBCATEGORIES)
#: Tasks per category (the paper's Figure 3) and the tier shares (its 25/15/10 per 50).
PER_CATEGORY = {"TC1": 150, "TC2": 250, "TC3": 150, "TC4": 150, "TC5": 200, "TC6": 100, "TC7": 150}
TIER_SHARE = (("simple", 5), ("medium", 3), ("complex", 2))
DEFAULT_TASKS = Path(__file__).parent / "data" / "tasks.jsonl"
MAX_ATTEMPTS = 200


class SmhTask(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str
    category: str
    subcategory: str
    tier: Literal["simple", "medium", "complex"]
    home: str = Field(description="tier-index of the generated home")
    #: The start state: operations (scenarios/smh/language.py) done, in order, on the fresh home.
    setup: list[dict[str, Any]] = Field(default_factory=list)
    history: list[dict[str, str]] = Field(default_factory=list)
    memory: list[str] = Field(default_factory=list)
    query: str
    expect: Literal["act", "clarify", "rule", "answer"]
    goal: list[dict[str, Any]] = Field(default_factory=list)
    targets: list[str] = Field(default_factory=list)
    rule: dict[str, Any] | None = None
    answer: dict[str, Any] | None = None
    user: dict[str, Any] | None = None


# ---- the home a task starts from -----------------------------------------------------------------
TIERS = ("simple", "medium", "complex")
#: Appliances every medium and complex home has, so the energy and kitchen tasks have them to use.
REQUIRED = {"simple": [], "medium": ["water_heater", "oven", "evse", "battery_storage"],
            "complex": ["water_heater", "oven", "evse", "battery_storage"]}
#: How many distinct homes each tier has (tasks draw from them; the paper's complex tasks share one).
HOMES = {"simple": 24, "medium": 12, "complex": 6}
#: The device types HomeMaker draws SMH homes from: what the request language drives, and the
#: security, energy, water and kitchen devices the paper's categories name (locks, sensors,
#: plugs, water heaters, EV chargers, solar, batteries, ovens).
HOME_TYPES = ["on_off_light", "dimmable_light", "color_temperature_light", "extended_color_light",
              "air_conditioner", "air_purifier", "fan", "humidifier", "dehumidifier", "tv", "speaker",
              "window_covering", "robot_vacuum_cleaner", "refrigerator", "dishwasher", "laundry_washer",
              "on_off_plug", "door_lock", "contact_sensor", "occupancy_sensor", "water_heater", "evse",
              "solar_power", "battery_storage", "oven"]


@functools.cache
def home_spec(tier: str, index: int) -> HomeSpec:
    """Home `tier-index`: HomeMaker's (twin.generator.make_home) home of that tier, from a seed
    fixed by the tier and index; raises ValueError for an unknown tier."""
    if tier not in HOMES:
        raise ValueError(f"unknown tier {tier!r}; accepted: {', '.join(TIERS)}")
    spec = make_home(28_000 + 100 * TIERS.index(tier) + index, tier=tier, types=HOME_TYPES, required=REQUIRED[tier])
    return spec.model_copy(update={"name": f"SMH {tier} home {index}"})


@functools.cache
def _base_home(home_id: str) -> Home:
    tier, _, index = home_id.rpartition("-")
    return Home.from_spec(home_spec(tier, int(index)))


def fresh_home(home_id: str) -> Home:
    """Home `tier-k` as generated (a fork of one cached copy: forks share untouched devices)."""
    return _base_home(home_id).fork()


def build_home(task: SmhTask, fresh: Callable[[str], Home] = fresh_home) -> Home:
    """The task's home in its start state (setup calls replayed); ValueError if one fails.
    `fresh`: home id -> that home as generated (HomeFlow's homes are HomeMaker's)."""
    home = fresh(task.home)
    backend, session = TwinBackend(home), Session()
    for i, op in enumerate(task.setup):
        for call in L.calls(op):
            result = call_tool(backend, call["tool"], call["args"], session)
            if not result.get("ok"):
                raise ValueError(f"{task.id}: setup[{i}] ({op['op']}) failed: {result['error']['message']}")
    return home


def prompt(task: SmhTask) -> str:
    """What the agent is told: the dialogue so far, what it remembers, the request."""
    parts = []
    if task.history:
        parts.append("Conversation so far:\n" + "\n".join(f"{t['role']}: {t['text']}" for t in task.history))
    if task.memory:
        parts.append("What you remember about the user:\n" + "\n".join(f"- {m}" for m in task.memory))
    parts.append(f"user: {task.query}" if parts else task.query)
    return "\n\n".join(parts)


# ---- drafting a task on a live home ------------------------------------------------------------
class Draft:
    """A home being prepared for one task: random start state, then the task's own choices."""

    def __init__(self, rng: random.Random, tier: str, home: tuple[str, HomeSpec, Home] | None = None,
                 kinds: tuple[str, ...] = L.BASIC_OPS):
        self.rng = rng
        self.tier = tier
        #: the operations a task may draw (SMH-Bench: every one; HomeFlow: the basic ones)
        self.kinds = kinds
        if home is None:   # one of the tier's SMH-Bench homes (HomeFlow passes its own: id, spec, home)
            index = rng.randrange(HOMES[tier])
            home = (f"{tier}-{index}", home_spec(tier, index), fresh_home(f"{tier}-{index}"))
        self.home_id, self.spec, self.home = home
        self.backend = TwinBackend(self.home)
        self.setup: list[dict[str, Any]] = []
        self.names = {d.id: d.name or d.id for r in self.spec.rooms for d in r.devices}
        self.types = {d.id: d.type for r in self.spec.rooms for d in r.devices}
        self.room_of = {d.id: r.id for r in self.spec.rooms for d in r.devices}
        self.rooms = {r.id: r for r in self.spec.rooms}
        for dev in sorted(self.types):   # a lived-in start: some devices on, at various settings
            if rng.random() < 0.45:
                ops = [o for o in ("on", "brightness", "fan_speed", "volume", "color_temperature", "unlock")
                       if self.types[dev] in L.OP_TYPES[o]]
                if ops:
                    self.apply(self.random_op(dev, rng.choice(ops)))
        for dev in sorted(self.types):   # appliances at work: an oven baking, a car charging, a battery busy
            starts = [o for o in ("bake", "charge", "battery_charge", "battery_discharge")
                      if o in kinds and self.types[dev] in L.OP_TYPES[o]]
            if starts and rng.random() < 0.4:
                self.apply(self.random_op(dev, rng.choice(starts)))

    def apply(self, op: dict[str, Any]) -> None:
        for call in L.calls(op):
            result = call_tool(self.backend, call["tool"], call["args"])
            assert result["ok"], (op, result)
        self.setup.append(op)

    def random_op(self, dev: str, kind: str) -> dict[str, Any]:
        op: dict[str, Any] = {"op": kind, "device": dev}
        if kind in L.VALUES:
            op["value"] = self.rng.choice(L.VALUES[kind])
        return op

    def read(self, dev: str, cluster: str, attribute: str) -> Any:
        try:
            return self.backend.read_attribute(dev, None, cluster, attribute)["value"]
        except (MatterError, Exception):
            return None

    def holds(self, op: dict[str, Any]) -> bool:
        """Whether the home already shows what `op` would do (such an op is no task)."""
        return all(self.read(p["device_id"], p["cluster_id"], p["attribute_id"]) == p["value"]
                   for p in L.predicates(op))

    def changing_op(self, devices: list[str] | None = None, kinds: tuple[str, ...] | None = None,
                    avoid: set[str] = frozenset()) -> dict[str, Any] | None:  # type: ignore[assignment]
        """A random operation that changes something, on one of `devices` (default: any)."""
        pool = [d for d in (devices or sorted(self.types)) if d not in avoid]
        for _ in range(40):
            if not pool:
                return None
            dev = self.rng.choice(pool)
            fits = [k for k in (kinds or self.kinds) if self.types[dev] in L.OP_TYPES[k]]
            if not fits:
                continue
            op = self.random_op(dev, self.rng.choice(fits))
            if not self.holds(op):
                return op
        return None

    def lights_on(self, dimmable: bool = False) -> list[str]:
        kinds = L.OP_TYPES["brightness"] if dimmable else L.LIGHT_TYPES
        return [d for d in sorted(self.types) if self.types[d] in kinds and self.read(d, "OnOff", "OnOff")]

    def room_name(self, room_id: str) -> str:
        return (self.rooms[room_id].name or room_id).lower()


def act(draft: Draft, ops: list[dict[str, Any]], query: str, **extra: Any) -> dict[str, Any]:
    goal = [p for op in ops for p in L.predicates(op)]
    return {"query": query, "expect": "act", "goal": goal, "targets": sorted({op["device"] for op in ops}), **extra}


def _upper(text: str) -> str:
    return text[0].upper() + text[1:]


# ---- TC1 atomic control --------------------------------------------------------------------------
def tc1(draft: Draft, style: str) -> dict[str, Any] | None:
    op = draft.changing_op()
    if op is None:
        return None
    decoy = draft.rng.choice([d for d in draft.names if d != op["device"]]) if style == "noisy" else None
    return act(draft, [op], _upper(L.say(op, draft.names, style, draft.rng, decoy)) + ".")


# ---- TC2 compositional control -------------------------------------------------------------------
def tc2_multi(draft: Draft) -> dict[str, Any] | None:
    ops: list[dict[str, Any]] = []
    for _ in range(draft.rng.choice((2, 3))):
        op = draft.changing_op(avoid={o["device"] for o in ops})
        if op is None:
            return None
        ops.append(op)
    return act(draft, ops, L.join([L.say(op, draft.names) for op in ops]))


def _scope(draft: Draft) -> tuple[str, Callable[[str], bool]]:
    floors = sorted({r.floor for r in draft.spec.rooms})
    if len(floors) > 1 and draft.rng.random() < 0.5:
        floor = draft.rng.choice(floors)
        return f"on floor {floor}", lambda d: draft.rooms[draft.room_of[d]].floor == floor
    return "in the home", lambda d: True


def tc2_batch(draft: Draft) -> dict[str, Any] | None:
    phrase, inside = _scope(draft)
    if draft.rng.random() < 0.5:
        on = draft.rng.random() < 0.5
        lights = [d for d in sorted(draft.types) if draft.types[d] in L.LIGHT_TYPES and inside(d)]
        ops = [{"op": "on" if on else "off", "device": d} for d in lights]
        query = f"Turn {'on' if on else 'off'} all the lights {phrase}."
    else:
        value = draft.rng.choice(L.VALUES["brightness"])
        lights = [d for d in sorted(draft.types) if draft.types[d] in L.OP_TYPES["brightness"] and inside(d)]
        ops = [{"op": "brightness", "device": d, "value": value} for d in lights]
        query = f"Set all the dimmable lights {phrase} to {value}% brightness."
    changing = [op for op in ops if not draft.holds(op)]
    if len(ops) < 2 or len(changing) < 2:
        return None
    return act(draft, ops, query)


def tc2_state(draft: Draft) -> dict[str, Any] | None:
    lit = draft.lights_on(dimmable=True)
    levels = {d: draft.read(d, "LevelControl", "CurrentLevel") for d in lit}
    for _ in range(20):
        p = draft.rng.choice((30, 40, 50, 60, 70, 80))
        chosen = [d for d in lit if levels[d] > p * 2.54]
        value = draft.rng.choice([v for v in L.VALUES["brightness"] if v < p])
        ops = [{"op": "brightness", "device": d, "value": value} for d in chosen]
        if chosen and all(not draft.holds(op) for op in ops):
            return act(draft, ops, f"Set every light that is on and brighter than {p}% to {value}% brightness.")
    return None


def tc2_room(draft: Draft) -> dict[str, Any] | None:
    state, unit = draft.rng.choice((("humidity", "%"), ("temperature", " degrees")))
    values = {r: getattr(draft.home.rooms[r], state) for r in draft.rooms}
    threshold = int(sorted(values.values())[len(values) // 2])
    if any(abs(v - threshold) < 0.2 for v in values.values()):
        return None
    hot = [r for r, v in values.items() if v > threshold]
    if len(hot) < 2:
        return None
    spared = draft.rng.choice(hot)
    rooms = [r for r in hot if r != spared]
    lights = [d for d in draft.lights_on() if draft.room_of[d] in rooms]
    if not lights:
        return None
    query = (f"Turn off the lights in every room where the {state} is above {threshold}{unit}, "
             f"except the {draft.room_name(spared)}.")
    return act(draft, [{"op": "off", "device": d} for d in lights], query)


def tc2_top(draft: Draft) -> dict[str, Any] | None:
    for dev in [d for d in sorted(draft.types) if draft.types[d] in L.OP_TYPES["brightness"]]:
        if not draft.read(dev, "OnOff", "OnOff") and draft.rng.random() < 0.6:   # small homes: light some
            draft.apply(draft.random_op(dev, "brightness"))
    lit = draft.lights_on(dimmable=True)
    for n, brightest in draft.rng.sample([(n, b) for n in (1, 2, 3) for b in (True, False)], 6):
        levels = sorted(((draft.read(d, "LevelControl", "CurrentLevel"), d) for d in lit), reverse=brightest)
        if len(levels) > n and levels[n - 1][0] != levels[n][0]:
            ops = [{"op": "off", "device": d} for _, d in levels[:n]]
            which = "brightest" if brightest else "dimmest"
            what = f"{which} light that is" if n == 1 else f"{('two', 'three')[n - 2]} {which} lights that are"
            return act(draft, ops, f"Turn off the {what} on.")
    return None


# ---- TC3 ambiguous intent ------------------------------------------------------------------------
SCENES = ("I'm about to watch a film in the {room}.", "Guests are coming over to the {room}.",
          "I'm going to rest for a while in the {room}.", "Time to get some work done in the {room}.")


def clarify(draft: Draft, ops: list[dict[str, Any]], query: str, slots: dict[str, Any] | None = None) -> dict[str, Any]:
    words = L.join([L.say(op, draft.names) for op in ops])
    user = {"request": query, "goal": words, "fallback": f"Please do this: {words}", "slots": slots or {}}
    return {**act(draft, ops, query), "expect": "clarify", "user": user}


def tc3_state(draft: Draft) -> dict[str, Any] | None:
    heaters = [d for d in sorted(draft.types) if draft.types[d] == "water_heater"]
    if "water_temperature" in draft.kinds and heaters and draft.rng.random() < 0.25:   # a lukewarm shower
        dev = draft.rng.choice(heaters)
        now = draft.read(dev, "Thermostat", "OccupiedHeatingSetpoint")
        hotter = [v for v in L.VALUES["water_temperature"] if v * 100 > now]
        if not hotter:
            return None
        op = {"op": "water_temperature", "device": dev, "value": draft.rng.choice(hotter)}
        return clarify(draft, [op], f"The hot water in the {draft.room_name(draft.room_of[dev])} is barely warm.")
    room = draft.rng.choice(sorted(draft.rooms))
    here = [d for d in sorted(draft.types) if draft.room_of[d] == room]
    lights = [d for d in here if draft.types[d] in L.LIGHT_TYPES]
    if lights and all(not draft.read(d, "OnOff", "OnOff") for d in lights):
        dev = draft.rng.choice(lights)
        kind = "brightness" if draft.types[dev] in L.OP_TYPES["brightness"] else "on"
        return clarify(draft, [draft.random_op(dev, kind)], f"It's too dark in the {draft.room_name(room)}.")
    movers = [d for d in here if draft.types[d] in L.OP_TYPES["fan_speed"]]
    op = draft.changing_op(movers, ("fan_speed",)) if movers else None
    if op is None:
        return None
    return clarify(draft, [op], f"The air in the {draft.room_name(room)} feels stale.")


def tc3_scene(draft: Draft) -> dict[str, Any] | None:
    room = draft.rng.choice(sorted(draft.rooms))
    here = [d for d in sorted(draft.types) if draft.room_of[d] == room]
    # An empty room would let changing_op draw from the whole home: a scene the request gives no
    # ground for. HomeFlow's committed set (its drafts take only the basic operations) was drawn
    # with that flaw; redrawing it is its own change.
    if not here and draft.kinds != L.BASIC_OPS:
        return None
    first = draft.changing_op(here)
    if first is None:
        return None
    second = draft.changing_op(here, avoid={first["device"]})
    ops = [first] + ([second] if second else [])
    return clarify(draft, ops, draft.rng.choice(SCENES).format(room=draft.room_name(room)))


def tc3_slot(draft: Draft) -> dict[str, Any] | None:
    op = draft.changing_op(kinds=tuple(L.SLOT_REQUESTS))
    if op is None:
        return None
    ask, keywords, answer = L.SLOT_REQUESTS[op["op"]]
    slots = {"value": {"value": answer.format(v=op["value"]), "keywords": list(keywords)}}
    return clarify(draft, [op], ask.format(d=draft.names[op["device"]].lower()), slots)


# ---- TC4 automated task scheduling -------------------------------------------------------------
def _at(draft: Draft) -> tuple[int, int]:
    return draft.rng.randrange(24), draft.rng.choice((0, 15, 30, 45))


def rule_task(draft: Draft, op: dict[str, Any], trigger: dict[str, Any], when: str) -> dict[str, Any]:
    query = f"{when}, {L.say(op, draft.names)}."
    return {"query": _upper(query), "expect": "rule", "goal": L.predicates(op), "targets": [op["device"]],
            "rule": {"trigger": trigger, "steps": L.calls(op)}}


#: Operations worth timing for energy: off-peak charging, a battery, the hot water.
ENERGY_OPS = ("charge", "stop_charging", "battery_charge", "battery_discharge", "water_temperature")


def tc4_time(draft: Draft) -> dict[str, Any] | None:
    energy = [d for d in sorted(draft.types) if any(draft.types[d] in L.OP_TYPES[k] for k in ENERGY_OPS)]
    op = draft.changing_op(energy, ENERGY_OPS) if energy and draft.rng.random() < 0.4 else None
    op = op or draft.changing_op()
    if op is None:
        return None
    h, m = _at(draft)
    if draft.rng.random() < 0.5:
        return rule_task(draft, op, {"type": "time", "cron": f"{m} {h} * * *"}, f"every day at {h:02d}:{m:02d}")
    return rule_task(draft, op, {"type": "time", "cron": f"{m} {h} * * 1-5"}, f"on weekdays at {h:02d}:{m:02d}")


def _room_condition(draft: Draft) -> tuple[dict[str, Any], str]:
    room = draft.rng.choice(sorted(draft.rooms))
    state, unit, values = draft.rng.choice((("temperature", " degrees", (26, 27, 28, 29, 30)),
                                            ("humidity", "%", (60, 65, 70, 75))))
    value = draft.rng.choice(values)
    cond = {"type": "room", "room_id": room, "state": state, "op": ">", "value": value}
    return cond, f"the {draft.room_name(room)} {state} is above {value}{unit}"


#: Device-state triggers of security devices: type -> (cluster, attribute, value, how it is said).
SENSED = {"occupancy_sensor": ("OccupancySensing", "Occupancy", 1, "detects someone"),
          "contact_sensor": ("BooleanState", "StateValue", True, "reports contact"),
          "door_lock": ("DoorLock", "LockState", L.UNLOCKED, "is unlocked")}


def tc4_state(draft: Draft) -> dict[str, Any] | None:
    op = draft.changing_op()
    if op is None:
        return None
    sensed = [d for d in sorted(draft.types) if d != op["device"] and draft.types[d] in SENSED]
    if sensed and draft.rng.random() < 0.5:   # security: motion, a door opening, a lock unlocked
        dev = draft.rng.choice(sensed)
        cluster, attribute, value, words = SENSED[draft.types[dev]]
        if draft.read(dev, cluster, attribute) == value:
            return None
        trigger = {"type": "device", "device_id": dev, "endpoint_id": 1, "cluster_id": cluster,
                   "attribute_id": attribute, "op": "==", "value": value}
        return rule_task(draft, op, trigger, f"when the {draft.names[dev].lower()} {words}")
    switched = [d for d in draft.lights_on() + [d for d in sorted(draft.types) if draft.types[d] in ("tv", "speaker")
                                                 and draft.read(d, "OnOff", "OnOff")] if d != op["device"]]
    if switched and draft.rng.random() < 0.5:
        dev = draft.rng.choice(switched)
        trigger = {"type": "device", "device_id": dev, "endpoint_id": 1, "cluster_id": "OnOff",
                   "attribute_id": "OnOff", "op": "==", "value": False}
        return rule_task(draft, op, trigger, f"when the {draft.names[dev].lower()} is switched off")
    cond, words = _room_condition(draft)
    if getattr(draft.home.rooms[cond["room_id"]], cond["state"]) > cond["value"]:
        return None   # already true: it would wait for the condition to pass and return
    return rule_task(draft, op, cond, "when " + words.replace(" is above ", " rises above "))


def tc4_both(draft: Draft) -> dict[str, Any] | None:
    op = draft.changing_op()
    if op is None:
        return None
    h, m = _at(draft)
    cond, words = _room_condition(draft)
    trigger = {"type": "time_and_state", "cron": f"{m} {h} * * *", "state": cond}
    return rule_task(draft, op, trigger, f"every day at {h:02d}:{m:02d}, if {words}")


# ---- TC5 context-aware multi-turn ---------------------------------------------------------------
PRONOUN = {"brightness": "set it to {v}% brightness", "fan_speed": "set its fan speed to {v}%",
           "volume": "set its volume to {v}%", "color_temperature": "set it to {v} K",
           "cool": "make it cool to {v} degrees", "off": "turn it off", "on": "turn it on"}


def _turn(draft: Draft, op: dict[str, Any]) -> list[dict[str, str]]:
    draft.apply(op)
    return [{"role": "user", "text": _upper(L.say(op, draft.names)) + "."},
            {"role": "assistant", "text": f"Done: the {draft.names[op['device']].lower()} is updated."}]


def tc5_continue(draft: Draft) -> dict[str, Any] | None:
    first = draft.changing_op(kinds=("on",))
    if first is None:
        return None
    history = _turn(draft, first)
    op = draft.changing_op([first["device"]], tuple(k for k in PRONOUN if k != "on"))
    if op is None:
        return None
    return act(draft, [op], "Now " + PRONOUN[op["op"]].format(v=op.get("value")) + ".", history=history)


def tc5_shift(draft: Draft) -> dict[str, Any] | None:
    first = draft.changing_op()
    if first is None:
        return None
    history = _turn(draft, first)
    op = draft.changing_op(avoid={first["device"]})
    if op is None:
        return None
    return act(draft, [op], _upper(L.say(op, draft.names)) + ".", history=history)


def tc5_coreference(draft: Draft) -> dict[str, Any] | None:
    first = draft.changing_op(kinds=("on",))
    if first is None:
        return None
    room = draft.room_of[first["device"]]
    others = [d for d in sorted(draft.types) if draft.room_of[d] == room and d != first["device"]
              and draft.types[d] in L.OP_TYPES["on"] and draft.types[d] != draft.types[first["device"]]
              and sum(draft.types[x] == draft.types[d] for x in draft.types if draft.room_of[x] == room) == 1]
    history = _turn(draft, first)
    target = [d for d in others if not draft.read(d, "OnOff", "OnOff")]
    if not target:
        return None
    dev = draft.rng.choice(target)
    label = DEVICE_TYPES[draft.types[dev]].label.lower()
    return act(draft, [{"op": "on", "device": dev}], f"Turn on the {label} in there too.", history=history)


def tc5_correction(draft: Draft) -> dict[str, Any] | None:
    lights = [d for d in sorted(draft.types) if draft.types[d] in L.OP_TYPES["brightness"]]
    if len(lights) < 2:
        return None
    a, b = draft.rng.sample(lights, 2)
    was_on, was_level = draft.read(a, "OnOff", "OnOff"), draft.read(a, "LevelControl", "CurrentLevel")
    value = draft.rng.choice([v for v in L.VALUES["brightness"] if L.level_of(v) != was_level])
    first = {"op": "brightness", "device": a, "value": value}
    new = {"op": "brightness", "device": b, "value": value}
    if draft.holds(new) or (was_on and L.level_of(L.pct_of(was_level)) != was_level):
        return None
    before = f"on at {L.pct_of(was_level)}% brightness" if was_on else "off"
    restore = {"op": "brightness", "device": a, "value": L.pct_of(was_level)} if was_on else {"op": "off", "device": a}
    history = _turn(draft, first)
    history[-1]["text"] = f"Done: the {draft.names[a].lower()} is at {value}% brightness now (before, it was {before})."
    query = f"Sorry, not the {draft.names[a].lower()}, I meant the {draft.names[b].lower()}."
    return act(draft, [restore, new], query, history=history)


# ---- TC6 personalised memory --------------------------------------------------------------------
PHRASES = ("movie time", "time to sleep", "reading mode", "i'm heading out", "dinner time", "wake-up routine")


def tc6_short(draft: Draft) -> dict[str, Any] | None:
    for kind in draft.rng.sample(["brightness", "fan_speed", "volume", "cool", "color_temperature"], 5):
        devs = [d for d in sorted(draft.types) if draft.types[d] in L.OP_TYPES[kind]]
        if len(devs) >= 2:
            a, b = draft.rng.sample(devs, 2)
            op = draft.random_op(b, kind)
            if not draft.holds(op):
                earlier = L.say({**op, "device": a}, draft.names)
                memory = [f"Earlier today the user asked you to {earlier}."]
                query = f"Set the {draft.names[b].lower()} the same way I had the {draft.names[a].lower()} earlier."
                return act(draft, [op], query, memory=memory)
    return None


def tc6_long(draft: Draft) -> dict[str, Any] | None:
    phrases = draft.rng.sample(PHRASES, 3)
    memory, chosen = [], None
    for k, phrase in enumerate(phrases):
        first = draft.changing_op()
        if first is None:
            return None
        second = draft.changing_op(avoid={first["device"]})
        ops = [first] + ([second] if second else [])
        said = ", and ".join(L.say(op, draft.names) for op in ops)
        memory.append(f"When the user says \"{phrase}\", they want you to {said}.")
        if k == 0:
            chosen = (phrase, ops)
    assert chosen is not None
    phrase, ops = chosen
    return act(draft, ops, _upper(phrase) + ".", memory=sorted(memory))


# ---- TC7 environment-grounded queries ------------------------------------------------------------
def query(text: str, kind: str, value: Any) -> dict[str, Any]:
    return {"query": text, "expect": "answer", "answer": {"kind": kind, "value": value}}


#: Appliance status questions: type -> (the question, how the answer is read off the device).
APPLIANCE_QUESTIONS: dict[str, tuple[str, Callable[[Draft, str], tuple[str, Any]]]] = {
    "water_heater": ("What temperature is the {d} set to, in degrees?",
                     lambda dr, d: ("number", dr.read(d, "Thermostat", "OccupiedHeatingSetpoint") / 100)),
    "evse": ("Is charging enabled on the {d}?",
             lambda dr, d: ("yesno", dr.read(d, "EnergyEvse", "SupplyState") == L.CHARGING_ENABLED)),
    "battery_storage": ("Is the {d} charging right now?",
                        lambda dr, d: ("yesno", dr.read(d, "ElectricalPowerMeasurement", "ActivePower") > 0)),
}


def tc7_status(draft: Draft) -> dict[str, Any] | None:
    appliances = [d for d in sorted(draft.types) if draft.types[d] in APPLIANCE_QUESTIONS]
    if appliances and draft.rng.random() < 0.3:
        dev = draft.rng.choice(appliances)
        text, read = APPLIANCE_QUESTIONS[draft.types[dev]]
        kind, value = read(draft, dev)
        return query(text.format(d=draft.names[dev].lower()), kind, value)
    locks = [d for d in sorted(draft.types) if draft.types[d] == "door_lock"]
    if locks and draft.rng.random() < 0.4:
        dev = draft.rng.choice(locks)
        return query(f"Is the {draft.names[dev].lower()} locked?", "yesno",
                     draft.read(dev, "DoorLock", "LockState") == L.LOCKED)
    choice = draft.rng.randrange(4)
    if choice == 0:
        dev = draft.rng.choice([d for d in sorted(draft.types) if draft.types[d] in L.OP_TYPES["on"]])
        return query(f"Is the {draft.names[dev].lower()} on?", "yesno", bool(draft.read(dev, "OnOff", "OnOff")))
    if choice == 1:
        devs = [d for d in sorted(draft.types) if draft.types[d] in L.OP_TYPES["brightness"]]
        if not devs:
            return None
        dev = draft.rng.choice(devs)
        return query(f"What brightness is the {draft.names[dev].lower()} set to, in percent?", "number",
                     L.pct_of(draft.read(dev, "LevelControl", "CurrentLevel")))
    if choice == 2:
        room = draft.rng.choice(sorted(draft.rooms))
        return query(f"What is the temperature in the {draft.room_name(room)}, in degrees?", "number",
                     round(draft.home.rooms[room].temperature, 1))
    devs = [d for d in sorted(draft.types) if draft.types[d] in L.OP_TYPES["fan_speed"]]
    if not devs:
        return None
    dev = draft.rng.choice(devs)
    return query(f"What fan speed is the {draft.names[dev].lower()} set to, in percent?", "number",
                 draft.read(dev, "FanControl", "PercentSetting"))


def tc7_quantity(draft: Draft) -> dict[str, Any] | None:
    choice = draft.rng.randrange(4)
    if choice == 0:
        return query("How many lights are on in the home?", "number", len(draft.lights_on()))
    if choice == 1:
        room = draft.rng.choice(sorted(draft.rooms))
        count = sum(draft.room_of[d] == room for d in draft.types)
        return query(f"How many devices are in the {draft.room_name(room)} itself (not counting rooms inside it)?",
                     "number", count)
    if choice == 2:
        values = sorted(((draft.home.rooms[r].humidity, r) for r in draft.rooms), reverse=True)
        if len(values) > 1 and values[0][0] - values[1][0] < 0.5:
            return None
        return query("Which room is the most humid?", "room", values[0][1])
    t = draft.rng.choice((22, 23, 24, 25, 26))
    temps = [draft.home.rooms[r].temperature for r in draft.rooms]
    if any(abs(v - t) < 0.15 for v in temps):
        return None
    return query(f"How many rooms are warmer than {t} degrees?", "number", sum(v > t for v in temps))


GENERATORS: dict[str, Callable[[Draft], dict[str, Any] | None]] = {
    "clear": lambda d: tc1(d, "clear"), "colloquial": lambda d: tc1(d, "colloquial"),
    "noisy": lambda d: tc1(d, "noisy"),
    "multi_device": tc2_multi, "batch": tc2_batch, "state_dependent": tc2_state, "room_dependent": tc2_room,
    "top_n": tc2_top,
    "state_ambiguity": tc3_state, "scene_ambiguity": tc3_scene, "slot_missing": tc3_slot,
    "time_specific": tc4_time, "state_driven": tc4_state, "time_and_state": tc4_both,
    "continuation": tc5_continue, "topic_shift": tc5_shift, "coreference": tc5_coreference,
    "correction": tc5_correction,
    "short_term": tc6_short, "long_term": tc6_long,
    "status": tc7_status, "quantity": tc7_quantity,
}
assert set(GENERATORS) == {s for subs in SUBCATEGORIES.values() for s in subs}


def tiers_for(count: int) -> list[str]:
    """`count` tasks split over the tiers 5:3:2 (simple first)."""
    medium, complex_ = count * 3 // 10, count * 2 // 10
    return ["simple"] * (count - medium - complex_) + ["medium"] * medium + ["complex"] * complex_


def generate_one(seed: int, category: str, sub: str, k: int, tier: str) -> SmhTask:
    for attempt in range(MAX_ATTEMPTS):
        draft = Draft(random.Random(f"{seed}:{sub}:{k}:{attempt}"), tier, kinds=tuple(L.OP_TYPES))
        made = GENERATORS[sub](draft)
        if made is not None:
            return SmhTask(id=f"{category.lower()}-{sub}-{k:03d}", category=category, subcategory=sub, tier=tier,
                           home=draft.home_id, setup=draft.setup, **made)
    raise RuntimeError(f"{sub} #{k} ({tier}): no fitting task in {MAX_ATTEMPTS} draws")


def generate(seed: int = SEED, per_category: dict[str, int] | None = None,
             progress: Callable[[str], None] | None = None) -> list[SmhTask]:
    """The task set: each category's count split evenly over its subcategories, each
    subcategory's split 5:3:2 over the tiers."""
    out = []
    for category, subs in SUBCATEGORIES.items():
        count = (per_category or PER_CATEGORY)[category]
        for i, sub in enumerate(subs):
            n = count // len(subs) + (i < count % len(subs))
            for k, tier in enumerate(tiers_for(n), 1):
                out.append(generate_one(seed, category, sub, k, tier))
                if progress is not None:
                    progress(sub)
    return out


def dump_task(task: SmhTask) -> str:
    return json.dumps(task.model_dump(mode="json", exclude_defaults=True), ensure_ascii=False, sort_keys=True)


def load_tasks(path: str | Path = DEFAULT_TASKS) -> list[SmhTask]:
    """Tasks from JSONL; a bad line is one UserFileError naming the line and field."""
    return load_jsonl(path, SmhTask, "(task)")
