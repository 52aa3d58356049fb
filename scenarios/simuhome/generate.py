"""Episode generators for the twelve SimuHome categories (§4.1-4.2, Appendix A and L).

Every episode: a seeded small layout (`twin.generator.generate_home`, 2-6 rooms), plus any
devices the category needs; then seeded random operation from all-off through the tools
(recorded as `setup` calls); then a warm-up so rooms drift and appliances are mid-cycle.
Goals are read off that starting home, the query is rendered from templates. Each candidate
is checked before it is kept: a plan that does exactly what the goal asks must succeed on the
simulator and doing nothing must fail (feasible), or the strongest possible action must not
move the room (QT2 at capacity). Rejected candidates are redrawn.

Seeds: category c's episode k draws from `Random(f"{seed}:{c}:{attempt}")`, so any subset of
categories or a smaller count reproduces the same leading episodes byte for byte.
"""
from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from bridge.tools import call_tool
from bridge.twin_backend import TwinBackend
from clusters.devices import create_device
from clusters.modes import ModeBaseServer
from clusters.values import to_json
from scenarios.agents.simple import NullAgent, ScriptedAgent
from scenarios.simuhome import actions as A
from scenarios.simuhome import templates as T
from scenarios.simuhome.evaluate import EpisodeError, build_home, replay, run_episode
from scenarios.simuhome.judges import RuleJudge
from scenarios.simuhome.schema import (
    CATEGORIES,
    DeviceGoal,
    Episode,
    Infeasibility,
    InitialState,
    RoomGoal,
    SetupCall,
    TimedGoal,
    ToolCall,
)
from twin.generator import SHORT_NAMES, generate_home
from twin.home import Home
from twin.schema import DeviceSpec, HomeSpec

SEED = 20250601
PER_CATEGORY = 50
MAX_ATTEMPTS = 400


# ---- drafting a home ----------------------------------------------------------------------------
@dataclass
class Draft:
    rng: random.Random
    spec: HomeSpec
    setup: list[SetupCall] = field(default_factory=list)
    warmup: int = 0
    home: Home | None = None

    # layout -----------------------------------------------------------------------------------
    def rooms(self) -> list[str]:
        return [r.id for r in self.spec.rooms]

    def room_name(self, room_id: str) -> str:
        return T.room_phrase(next(r.name or r.id for r in self.spec.rooms if r.id == room_id))

    def devices(self, room_id: str | None = None, types: tuple[str, ...] | None = None) -> list[tuple[str, str, str]]:
        """[(room_id, device_id, type)] in listing order."""
        return [(r.id, d.id, d.type) for r in self.spec.rooms for d in r.devices
                if (room_id is None or r.id == room_id) and (types is None or d.type in types)]

    def types_in(self, room_id: str) -> set[str]:
        return {t for _, _, t in self.devices(room_id)}

    def ordinal(self, device_id: str) -> int:
        room_id, _, type_key = next(x for x in self.devices() if x[1] == device_id)
        return [d for _, d, _ in self.devices(room_id, (type_key,))].index(device_id) + 1

    def add_device(self, room_id: str, type_key: str) -> str:
        room = next(r for r in self.spec.rooms if r.id == room_id)
        base = f"{room_id}_{SHORT_NAMES.get(type_key, type_key)}"
        taken = {d for _, d, _ in self.devices()}
        device_id, n = base, 1
        while device_id in taken:
            n += 1
            device_id = f"{base}_{n}"
        room.devices.append(DeviceSpec(id=device_id, type=type_key, name=f"{room.name} {type_key}"))
        return device_id

    # state ------------------------------------------------------------------------------------
    def call(self, at: int, call: dict[str, Any]) -> None:
        self.setup.append(SetupCall(tool=call["tool"], args=call["args"], at_seconds=at))

    def initial(self) -> InitialState:
        setup = sorted(self.setup, key=lambda c: c.at_seconds)  # stable: keeps call order per time
        return InitialState(home=self.spec, setup=setup,
                            start_time=self.spec.start_time + timedelta(seconds=self.warmup))

    def build(self) -> Home:
        self.home = replay(self.initial())
        return self.home

    def read(self, device_id: str, cluster: str, attribute: str, endpoint: int = 1) -> Any:
        return to_json(self.home.device(device_id).read(cluster, attribute, endpoint_id=endpoint))


APPLIANCE_ROOMS = {"dishwasher": "kitchen", "laundry_washer": "utility_room", "laundry_dryer": "utility_room"}


def new_draft(rng: random.Random, need: dict[str, int] | None = None, rooms: tuple[int, int] = (2, 6)) -> Draft:
    """A seeded layout with at least `need` devices of each type, and a warm-up length."""
    n_rooms = rng.randint(*rooms)
    start = datetime(2025, 6, rng.randint(1, 28), rng.randint(7, 20), rng.randrange(0, 60, 5))
    spec = generate_home(rng.getrandbits(32), rooms=n_rooms, devices=n_rooms * rng.randint(2, 4), start_time=start)
    spec.name = f"episode home {spec.seed}"
    draft = Draft(rng, spec)
    for type_key, count in sorted((need or {}).items()):
        while len(draft.devices(types=(type_key,))) < count:
            # appliances go where they belong when the home has such a room
            home_rooms = [r for r in draft.rooms() if r.startswith(APPLIANCE_ROOMS.get(type_key, "-"))]
            draft.add_device(rng.choice(home_rooms or draft.rooms()), type_key)
    draft.warmup = rng.randint(600, 2400)
    return draft


def random_operation(d: Draft, reserved: set[str] = frozenset()) -> None:
    """Seeded random operation from all-off, through the tools (SimuHome §4.2 step 1)."""
    rng = d.rng
    for _room_id, dev, type_key in d.devices():
        if dev in reserved or rng.random() < 0.45:
            continue
        pct = rng.randrange(10, 101, 10)
        if type_key in ("on_off_light", "fan"):
            d.call(0, A.command(dev, "OnOff", "On"))
        elif type_key in ("dimmable_light", "tv"):
            for c in A.calls(dev, type_key, "level", {"level": rng.randint(1, 254 if type_key != "tv" else 100)}):
                d.call(0, c)
        elif type_key in ("air_purifier", "humidifier", "dehumidifier"):
            for c in A.calls(dev, type_key, "fan", {"pct": pct}):
                d.call(0, c)
        elif type_key == "air_conditioner":
            action = rng.choice(("cool", "heat"))
            for c in A.calls(dev, type_key, action, {"pct": pct}):
                d.call(0, c)
            attr = "OccupiedCoolingSetpoint" if action == "cool" else "OccupiedHeatingSetpoint"
            d.call(0, A.write(dev, "Thermostat", attr, rng.randrange(2000, 2700, 50)))
        elif type_key == "heat_pump":
            d.call(0, A.write(dev, "Thermostat", "SystemMode", 4, endpoint=2))
            d.call(0, A.write(dev, "Thermostat", "OccupiedHeatingSetpoint", rng.randrange(2000, 2500, 50), endpoint=2))
        elif type_key == "window_covering":
            d.call(0, A.command(dev, "WindowCovering", "GoToLiftPercentage",
                                {"liftPercent100thsValue": rng.randrange(0, 10001, 2500)}))
        elif type_key in A.APPLIANCES and rng.random() < 0.5:
            start_appliance(d, dev, type_key, at=rng.randint(0, d.warmup))


def start_appliance(d: Draft, dev: str, type_key: str, at: int, mode: int | None = None) -> None:
    d.call(at, A.command(dev, "OnOff", "On"))
    if mode is not None:
        d.call(at, A.command(dev, A.MODE_CLUSTER[type_key], "ChangeToMode", {"newMode": mode}))
    d.call(at, A.command(dev, "OperationalState", "Start"))


#: The appliance modes episodes start mid-cycle in: a long one and a quick one each.
ANCHOR_MODES = {"dishwasher": (0, 3), "laundry_washer": (0, 4), "laundry_dryer": (0, 3)}


def cycle_seconds(type_key: str, mode: int) -> int:
    """Length of an appliance's cycle in `mode`, read from the device's own mode server."""
    device = create_device("probe", type_key)
    server = next(s for s in device.servers() if isinstance(s, ModeBaseServer))
    option = next(m for m in server.modes if m.mode == mode)
    return sum(seconds for _, seconds in option.cycle)


def running_anchor(d: Draft, dev: str, type_key: str, min_remaining: int) -> None:
    """Start `dev` in setup so that it is mid-cycle at the start with >= min_remaining s left."""
    mode = d.rng.choice(ANCHOR_MODES[type_key])
    cycle = cycle_seconds(type_key, mode)
    elapsed = d.rng.randint(60, max(60, min(d.warmup, cycle - min_remaining)))
    start_appliance(d, dev, type_key, at=d.warmup - elapsed, mode=mode)


# ---- rendering helpers ---------------------------------------------------------------------------
def ref(d: Draft, dev: str) -> tuple[str, int]:
    type_key = next(t for _, x, t in d.devices() if x == dev)
    return (type_key, d.ordinal(dev))


def with_filler(rng: random.Random, sentences: list[str]) -> str:
    out = list(sentences)
    if rng.random() < 0.6:
        out.insert(0, rng.choice(T.FILLER))
    if rng.random() < 0.3:
        out.append(rng.choice([f for f in T.FILLER if f not in out]))
    return " ".join(out)


def sentence(rng: random.Random, intent: str, match: dict[str, Any] | None = None, **slots: Any) -> str:
    options = [t for i, p, t in T.SENTENCES if i == intent and all(p.get(k) == v for k, v in (match or {}).items())]
    return T.render(rng.choice(options), **slots)


def clause(rng: random.Random, intent: str, action: str, **slots: Any) -> str:
    wrapper = rng.choice([w for i, w in T.WRAPPERS if i == intent])
    body = rng.choice([b for a, b in T.BODIES if a == action])
    return T.render_clause(wrapper, body, **slots)


def action_slots(d: Draft, dev: str, type_key: str, action: str, avoid: dict | None = None) -> tuple[dict, int | None]:
    rng = d.rng
    slots: dict[str, Any] = {}
    mode_id = None
    if action == "level":
        slots["level"] = rng.choice([10, 20, 30, 40, 50, 60, 70, 80, 100, 128, 150, 200, 254])
    elif action == "volume":
        slots["level"] = rng.randrange(5, 80, 5)
    elif action in ("fan", "cool", "heat"):
        slots["pct"] = rng.randrange(10, 101, 10)
    elif action == "setpoint":
        slots["deg"] = rng.randrange(18, 27)
    elif action == "lift":
        slots["pct"] = rng.randrange(10, 91, 10)
    elif action == "start_dry":
        slots["n"] = rng.randint(0, 3)
    if action == "start_mode":
        modes = d.read(dev, A.MODE_CLUSTER[type_key], "SupportedModes")
        choice = rng.choice(modes)
        slots["mode"], mode_id = choice["label"].lower(), choice["mode"]
    if avoid and slots and slots == avoid:
        return action_slots(d, dev, type_key, action, avoid)
    return slots, mode_id


def device_goals(room_id: str, dev: str, type_key: str, action: str, slots: dict,
                 mode_id: int | None) -> list[DeviceGoal]:
    return [DeviceGoal(room_id=room_id, device_id=dev, endpoint=ep, cluster=c, attribute=a, value=v)
            for ep, c, a, v in A.goals(type_key, action, slots, mode_id)]


def clock_at(d: Draft, seconds: int) -> datetime:
    return d.spec.start_time + timedelta(seconds=d.warmup + seconds)


def minute_floor(when: datetime) -> datetime:
    return when.replace(second=0, microsecond=0)


ROOM_REQ = lambda room_id: ToolCall(tool="get_room_devices", args={"room.id": room_id})  # noqa: E731
MISSING_WORDS_FOR = {"on_off_light": ["light"], "dimmable_light": ["dimmer light", "dimmable light"],
                     "air_conditioner": ["AC", "air conditioner"], "window_covering": ["blinds", "window covering"],
                     "laundry_washer": ["washer"], "laundry_dryer": ["dryer"], "tv": ["TV", "television"]}


def type_words(type_key: str) -> list[str]:
    return MISSING_WORDS_FOR.get(type_key, [T.DEVICE_PHRASES[type_key]])


# ---- QT1: environment perception ------------------------------------------------------------------
ASK_ATTRIBUTES = {  # attribute asked -> (cluster, device types that have it)
    "OnOff": ("OnOff", ("on_off_light", "dimmable_light", "air_conditioner", "air_purifier", "fan", "tv",
                        "humidifier", "dehumidifier")),
    "CurrentLevel": ("LevelControl", ("dimmable_light",)),
    "PercentCurrent": ("FanControl", ("air_purifier", "fan", "humidifier", "dehumidifier", "air_conditioner")),
    "OccupiedCoolingSetpoint": ("Thermostat", ("air_conditioner",)),
}


def natural(result: dict[str, Any], state: str) -> float:
    """A get_room_states value in natural units ("0.01 °C" scales by 0.01; "lux" by 1)."""
    unit = result["units"][state].split()
    scale = float(unit[0]) if len(unit) > 1 else 1.0
    return round(result[state] * scale, 4)


def _room_value(d: Draft, room_id: str, state: str) -> float:
    """What get_room_states tells an agent right now (the value QT1 asks for)."""
    return natural(call_tool(TwinBackend(d.home), "get_room_states", {"room.id": room_id}), state)


def _ask_state(d: Draft, used: set) -> tuple[str, RoomGoal, ToolCall]:
    room_id, state = d.rng.choice([(r, s) for r in d.rooms() for s in T.STATE_PHRASES if (r, s) not in used])
    used.add((room_id, state))
    text = sentence(d.rng, "ask_state", room=d.room_name(room_id),
                    state=d.rng.choice(T.STATE_PHRASES[state]))
    return text, RoomGoal(room_id=room_id, state=state, value=_room_value(d, room_id, state)), \
        ToolCall(tool="get_room_states", args={"room.id": room_id})


def gen_qt1_f(d: Draft) -> dict | None:
    random_operation(d)
    d.build()
    rng = d.rng
    texts, goals, reqs, used = [], [], [], set()
    for _ in range(rng.randint(1, 2)):
        if rng.random() < 0.5:
            text, goal, req = _ask_state(d, used)
        else:
            attribute = rng.choice(sorted(ASK_ATTRIBUTES))
            cluster, types = ASK_ATTRIBUTES[attribute]
            candidates = [x for x in d.devices(types=types) if x[1] not in used]
            if not candidates:
                continue
            room_id, dev, type_key = rng.choice(candidates)
            used.add(dev)
            text = sentence(rng, "ask_device", {"attribute": attribute}, room=d.room_name(room_id),
                            dev=ref(d, dev))
            goal = DeviceGoal(room_id=room_id, device_id=dev, cluster=cluster, attribute=attribute,
                              value=d.read(dev, cluster, attribute))
            req = ROOM_REQ(room_id)
        texts.append(text)
        goals.append(goal)
        if req not in reqs:
            reqs.append(req)
    if not goals:
        return None
    return dict(query=with_filler(rng, texts), goals=goals, required_actions=reqs)


def gen_qt1_if(d: Draft) -> dict | None:
    random_operation(d)
    d.build()
    rng = d.rng
    attribute = rng.choice(sorted(ASK_ATTRIBUTES))
    cluster, types = ASK_ATTRIBUTES[attribute]
    options = [(r, t) for r in d.rooms() for t in types if t not in d.types_in(r)]
    if not options:
        return None
    room_id, type_key = rng.choice(options)
    texts = [sentence(rng, "ask_device", {"attribute": attribute}, room=d.room_name(room_id), dev=(type_key, 1))]
    goals, reqs = [], [ROOM_REQ(room_id)]
    if rng.random() < 0.5:
        text, goal, req = _ask_state(d, set())
        texts.insert(rng.randint(0, 1), text)
        goals.append(goal)
        reqs.append(req)
    reason = f"there is no {T.DEVICE_PHRASES[type_key]} in the {d.room_name(room_id)}"
    return dict(query=with_filler(rng, texts), goals=goals, required_actions=reqs,
                infeasibility=Infeasibility(kind="missing_device", reason=reason,
                                            keywords=[type_words(type_key)], room_ids=[room_id]))


# ---- QT2: implicit intent --------------------------------------------------------------------------
def strongest_plan(d: Draft, room_id: str, state: str, direction: str) -> list[dict]:
    """Calls that push the room hardest, for devices not already there (what a solver does)."""
    out = []
    for _, dev, type_key in d.devices(room_id, A.ACTUATORS[(state, direction)]):
        steps = A.strongest(dev, type_key, state, direction)
        if any(d.read(dev, c, a, ep) != v for _, (ep, c, a, v) in steps):
            out += [call for call, _ in steps]
    return out


def gen_qt2_f(d: Draft) -> dict | None:
    random_operation(d)
    d.build()
    rng = d.rng
    pairs = [(r, s, dr) for r in d.rooms() for (s, dr) in sorted(A.ACTUATORS)
             if strongest_plan(d, r, s, dr)]
    if not pairs:
        return None
    chosen: list[tuple[str, str, str]] = []
    for _ in range(rng.randint(1, 2)):
        pick = rng.choice(pairs)
        if all((pick[0], pick[1]) != (c[0], c[1]) for c in chosen):
            chosen.append(pick)
    texts, goals, reqs, plan = [], [], [], []
    for room_id, state, direction in chosen:
        texts.append(sentence(rng, "complain", {"state": state, "direction": direction}, room=d.room_name(room_id)))
        goals.append(RoomGoal(room_id=room_id, state=state, direction=direction))
        reqs.append(ROOM_REQ(room_id))
        plan += strongest_plan(d, room_id, state, direction)
    return dict(query=with_filler(rng, texts), goals=goals, required_actions=reqs, plan=plan)


def gen_qt2_if(d: Draft) -> dict | None:
    rng = d.rng
    random_operation(d)
    room_id = rng.choice(d.rooms())
    state, direction = rng.choice(sorted(A.ACTUATORS))
    present = d.devices(room_id, A.ACTUATORS[(state, direction)])
    words: list[list[str]]
    if not present:
        kind = "no_actuator"
        needed = [w for t in A.ACTUATORS[(state, direction)][:1] for w in type_words(t)]
        reason = f"no device in the {d.room_name(room_id)} can {direction} the {state}"
        words = [needed]
    else:
        kind = "at_capacity"
        for _, dev, type_key in present:  # saturate: every actuator already at its strongest
            for call, _ in A.strongest(dev, type_key, state, direction):
                d.call(d.warmup, call)
        reason = (f"every device that could {direction} the {state} in the {d.room_name(room_id)} "
                  "is already at its limit")
        words = [["already", "maximum", "max", "full", "100", "lowest", "highest", "off", "closed", "open", "limit"]]
    d.build()
    if strongest_plan(d, room_id, state, direction):
        return None
    text = sentence(rng, "complain", {"state": state, "direction": direction}, room=d.room_name(room_id))
    return dict(query=with_filler(rng, [text]), goals=[RoomGoal(room_id=room_id, state=state, direction=direction)],
                required_actions=[ROOM_REQ(room_id)],
                infeasibility=Infeasibility(kind=kind, reason=reason, keywords=words, room_ids=[room_id]))


# ---- QT3: explicit intent ----------------------------------------------------------------------------
def pick_action(d: Draft, dev: str, type_key: str, instant: bool, avoid: set[str] = frozenset()):
    choices = [a for a in A.ACTIONS[type_key] if (a in A.INSTANT or not instant) and a not in avoid]
    if type_key in A.APPLIANCES and d.read(dev, "OperationalState", "OperationalState") != 0:
        return None
    if not choices:
        return None
    action = d.rng.choice(choices)
    slots, mode_id = action_slots(d, dev, type_key, action)
    return action, slots, mode_id


def gen_qt3_f(d: Draft) -> dict | None:
    random_operation(d)
    d.build()
    rng = d.rng
    controllable = [x for x in d.devices() if x[2] in A.ACTIONS]
    texts, goals, reqs, plan, used = [], [], [], [], set()
    for _ in range(rng.randint(1, 2)):
        room_id, dev, type_key = rng.choice(controllable)
        picked = pick_action(d, dev, type_key, instant=False)
        if dev in used or picked is None:
            continue
        action, slots, mode_id = picked
        new = device_goals(room_id, dev, type_key, action, slots, mode_id)
        if all(d.read(g.device_id, g.cluster, g.attribute, g.endpoint) == g.value for g in new):
            continue  # already so: nothing to do
        used.add(dev)
        texts.append(clause(rng, "now", action, room=d.room_name(room_id), dev=ref(d, dev), **slots))
        goals += new
        plan += A.calls(dev, type_key, action, slots, mode_id)
        if ROOM_REQ(room_id) not in reqs:
            reqs.append(ROOM_REQ(room_id))
    if not goals:
        return None
    return dict(query=with_filler(rng, texts), goals=goals, required_actions=reqs, plan=plan)


def gen_qt3_if(d: Draft) -> dict | None:
    random_operation(d)
    d.build()
    rng = d.rng
    room_id = rng.choice(d.rooms())
    type_key = rng.choice(sorted(A.ACTIONS))
    present = d.devices(room_id, (type_key,))
    ordinal = len(present) + 1 if present and rng.random() < 0.3 else 1
    if ordinal == 1 and present:
        return None
    action = rng.choice(A.ACTIONS[type_key])
    if action == "start_mode":
        action = "start"
    slots, _ = action_slots(d, "", type_key, action)
    text = clause(rng, "now", action, room=d.room_name(room_id), dev=(type_key, ordinal), **slots)
    name = f"{T.DEVICE_PHRASES[type_key]} {ordinal}"
    return dict(query=with_filler(rng, [text]), goals=[], required_actions=[ROOM_REQ(room_id)],
                infeasibility=Infeasibility(kind="missing_device",
                                            reason=f"there is no {name} in the {d.room_name(room_id)}",
                                            keywords=[type_words(type_key)], room_ids=[room_id]))


# ---- QT4-1: future scheduling -------------------------------------------------------------------------
def _schedule_plan(d: Draft, at_seconds: int, steps: list[dict]) -> dict:
    when = clock_at(d, at_seconds)
    return {"tool": "schedule_workflow", "args": {"start_time": when.strftime("%Y-%m-%d %H:%M:%S"), "steps": steps}}


def gen_qt4_1_f(d: Draft) -> dict | None:
    random_operation(d)
    d.build()
    rng = d.rng
    timed = [x for x in d.devices() if x[2] in A.ACTIONS and x[2] not in A.APPLIANCES
             and any(a in A.INSTANT for a in A.ACTIONS[x[2]])]
    texts, goals, reqs, plan, used, times = [], [], [], [], set(), set()
    for _ in range(rng.randint(1, 2)):
        room_id, dev, type_key = rng.choice(timed)
        if dev in used:
            continue
        used.add(dev)
        at = rng.randint(3, 40) * 60
        gap = 0  # minutes since the previous action on this device
        prev_action = None
        for k in range(rng.randint(1, 2)):
            avoid = {prev_action} if prev_action in ("on", "off", "hp_heat", "hp_cool") else set()
            picked = pick_action(d, dev, type_key, instant=True, avoid=avoid)
            if picked is None:
                break
            action, slots, mode_id = picked
            if at in times:
                break
            times.add(at)
            intent = "in" if k == 0 else "after_prev"
            minutes = at // 60 if k == 0 else gap
            texts.append(clause(rng, intent, action, room=d.room_name(room_id), dev=ref(d, dev), min=minutes, **slots))
            goals.append(TimedGoal(at_seconds=at, goals=device_goals(room_id, dev, type_key, action, slots, mode_id)))
            plan.append(_schedule_plan(d, at, A.calls(dev, type_key, action, slots, mode_id)))
            prev_action = action
            gap = rng.randint(3, 20)
            at += gap * 60
        if ROOM_REQ(room_id) not in reqs:
            reqs.append(ROOM_REQ(room_id))
    if not goals:
        return None
    return dict(query=with_filler(rng, texts), goals=goals, required_actions=reqs, plan=plan)


def gen_qt4_1_if(d: Draft) -> dict | None:
    random_operation(d)
    d.build()
    rng = d.rng
    room_id, dev, type_key = rng.choice([x for x in d.devices() if x[2] in A.ACTIONS and x[2] not in A.APPLIANCES])
    picked = pick_action(d, dev, type_key, instant=True)
    if picked is None:
        return None
    action, slots, mode_id = picked
    minutes = rng.randint(5, 40)
    now = minute_floor(clock_at(d, 0))
    shift = timedelta(minutes=rng.choice([-1, 1]) * rng.randint(12, 90))
    texts = []
    if rng.random() < 0.5:
        claimed = now + shift
        texts.append(sentence(rng, "claim_now", claimed=claimed))
        said = claimed + timedelta(minutes=minutes)
    else:
        said = now + timedelta(minutes=minutes) + shift
    texts.append(clause(rng, "in_at", action, room=d.room_name(room_id), dev=ref(d, dev), min=minutes,
                        time=said, **slots))
    real = now + timedelta(minutes=minutes)
    reason = (f"it is {T.clock_text(now)} now, so {minutes} minutes from now is {T.clock_text(real)}, "
              f"not {T.clock_text(said)}")
    goal = TimedGoal(at_seconds=minutes * 60, goals=device_goals(room_id, dev, type_key, action, slots, mode_id))
    return dict(query=with_filler(rng, texts), goals=[goal], required_actions=[],
                infeasibility=Infeasibility(kind="time_conflict", reason=reason,
                                            times=[now.strftime("%H:%M"), real.strftime("%H:%M")]))


# ---- QT4-2: dependency scheduling ------------------------------------------------------------------------
def _anchor(d: Draft, min_remaining: int) -> tuple[str, str, str]:
    room_id, dev, type_key = d.rng.choice(d.devices(types=A.APPLIANCES))
    running_anchor(d, dev, type_key, min_remaining)
    return room_id, dev, type_key


def _remaining(d: Draft, dev: str) -> int:
    return d.read(dev, "OperationalState", "CountdownTime")


def gen_qt4_2_f(d: Draft) -> dict | None:
    rng = d.rng
    aroom, anchor, atype = _anchor(d, 900)
    random_operation(d, reserved={anchor})
    d.build()
    remaining = _remaining(d, anchor)
    targets = [x for x in d.devices() if x[2] in A.ACTIONS and x[2] not in A.APPLIANCES]
    room_id, dev, type_key = rng.choice(targets)
    picked = pick_action(d, dev, type_key, instant=True)
    if picked is None or remaining is None:
        return None
    action, slots, mode_id = picked
    intent = rng.choice(["anchor_end", "anchor_after", "anchor_before"])
    minutes = 0 if intent == "anchor_end" else rng.randint(3, min(30, remaining // 60 - 3))
    at = remaining + (-minutes * 60 if intent == "anchor_before" else minutes * 60)
    text = clause(rng, intent, action, room=d.room_name(room_id), dev=ref(d, dev), min=minutes,
                  aroom=d.room_name(aroom), adev=ref(d, anchor), **slots)
    reqs = [ROOM_REQ(aroom)] + ([ROOM_REQ(room_id)] if room_id != aroom else [])
    return dict(query=with_filler(rng, [text]), required_actions=reqs,
                goals=[TimedGoal(at_seconds=at, goals=device_goals(room_id, dev, type_key, action, slots, mode_id))],
                plan=[_schedule_plan(d, at, A.calls(dev, type_key, action, slots, mode_id))])


def gen_qt4_2_if(d: Draft) -> dict | None:
    rng = d.rng
    aroom, anchor, atype = _anchor(d, 900)
    random_operation(d, reserved={anchor})
    d.build()
    remaining = _remaining(d, anchor)
    room_id, dev, type_key = rng.choice([x for x in d.devices() if x[2] in A.ACTIONS and x[2] not in A.APPLIANCES])
    picked = pick_action(d, dev, type_key, instant=True)
    if picked is None or remaining is None:
        return None
    action, slots, mode_id = picked
    minutes = rng.randint(5, 30)
    end = clock_at(d, remaining)
    shift = timedelta(minutes=rng.choice([-1, 1]) * rng.randint(12, 60))
    if rng.random() < 0.5:
        claimed = minute_floor(end + shift)
        said = claimed + timedelta(minutes=minutes)
        text = clause(rng, "anchor_claim", action, room=d.room_name(room_id), dev=ref(d, dev), min=minutes,
                      aroom=d.room_name(aroom), adev=ref(d, anchor), claimed=claimed, time=said, **slots)
    else:
        said = minute_floor(end + timedelta(minutes=minutes) + shift)
        text = clause(rng, "anchor_after_at", action, room=d.room_name(room_id), dev=ref(d, dev), min=minutes,
                      aroom=d.room_name(aroom), adev=ref(d, anchor), time=said, **slots)
    real = end + timedelta(minutes=minutes)
    reason = (f"the {T.DEVICE_PHRASES[atype]} finishes at {T.clock_text(end)}, so {minutes} minutes after "
              f"is {T.clock_text(real)}, not {T.clock_text(said)}")
    goal = TimedGoal(at_seconds=remaining + minutes * 60,
                     goals=device_goals(room_id, dev, type_key, action, slots, mode_id))
    return dict(query=with_filler(rng, [text]), goals=[goal], required_actions=[],
                infeasibility=Infeasibility(kind="completion_conflict", reason=reason, anchor_device_id=anchor,
                                            times=[end.strftime("%H:%M"), real.strftime("%H:%M")]))


# ---- QT4-3: concurrent scheduling ------------------------------------------------------------------------
def gen_qt4_3_f(d: Draft) -> dict | None:
    rng = d.rng
    appliances = d.devices(types=A.APPLIANCES)
    (aroom, anchor, atype), (room_id, dev, type_key) = rng.sample(appliances, 2)
    running_anchor(d, anchor, atype, 600)
    random_operation(d, reserved={anchor, dev})
    d.build()
    remaining = _remaining(d, anchor)
    action = rng.choice(A.ACTIONS[type_key])
    slots, mode_id = action_slots(d, dev, type_key, action)
    minutes = rng.randint(2, 20)
    at = remaining + minutes * 60
    text = clause(rng, "anchor_wait", action, room=d.room_name(room_id), dev=ref(d, dev), min=minutes,
                  aroom=d.room_name(aroom), adev=ref(d, anchor), **slots)
    reqs = [ROOM_REQ(aroom)] + ([ROOM_REQ(room_id)] if room_id != aroom else [])
    return dict(query=with_filler(rng, [text]), required_actions=reqs,
                goals=[TimedGoal(at_seconds=at, goals=device_goals(room_id, dev, type_key, action, slots, mode_id))],
                plan=[_schedule_plan(d, at, A.calls(dev, type_key, action, slots, mode_id))])


def gen_qt4_3_if(d: Draft) -> dict | None:
    rng = d.rng
    (aroom, a, atype), (room_id, b, btype) = rng.sample(d.devices(types=A.APPLIANCES), 2)
    running_anchor(d, a, atype, 900)
    running_anchor(d, b, btype, 900)
    random_operation(d, reserved={a, b})
    d.build()
    ends = {a: _remaining(d, a), b: _remaining(d, b)}
    later = max(ends, key=lambda k: (ends[k], k))
    latest = ends[later]
    if latest < 20 * 60:
        return None
    deadline = minute_floor(clock_at(d, rng.randint(5 * 60, latest - 12 * 60)))
    text = sentence(rng, "deadline", aroom=d.room_name(aroom), adev=ref(d, a), room=d.room_name(room_id),
                    dev=ref(d, b), time=deadline)
    end = clock_at(d, latest)
    later_type = atype if later == a else btype
    reason = (f"the {T.DEVICE_PHRASES[later_type]} cannot finish before {T.clock_text(end)}, "
              f"after the {T.clock_text(deadline)} deadline")
    return dict(query=with_filler(rng, [text]), goals=[], required_actions=[],
                infeasibility=Infeasibility(kind="deadline", reason=reason, anchor_device_id=later,
                                            times=[end.strftime("%H:%M")],
                                            keywords=[type_words(later_type)]))


GENERATORS: dict[str, tuple[Callable[[Draft], dict | None], dict[str, int]]] = {
    "QT1-F": (gen_qt1_f, {}), "QT1-IF": (gen_qt1_if, {}),
    "QT2-F": (gen_qt2_f, {}), "QT2-IF": (gen_qt2_if, {}),
    "QT3-F": (gen_qt3_f, {}), "QT3-IF": (gen_qt3_if, {}),
    "QT4-1-F": (gen_qt4_1_f, {}), "QT4-1-IF": (gen_qt4_1_if, {}),
    "QT4-2-F": (gen_qt4_2_f, {"dishwasher": 1}), "QT4-2-IF": (gen_qt4_2_if, {"laundry_washer": 1}),
    "QT4-3-F": (gen_qt4_3_f, {"dishwasher": 1, "laundry_dryer": 1}),
    "QT4-3-IF": (gen_qt4_3_if, {"laundry_washer": 1, "dishwasher": 1}),
}


# ---- checking and assembling -----------------------------------------------------------------------------
def check(episode: Episode, plan: list[dict] | None) -> str | None:
    """None when the episode is sound; else why not (see the module docstring)."""
    start = build_home(episode)
    judge = RuleJudge()
    if episode.simulator_scored:
        plan = [r.model_dump() for r in episode.required_actions] + (plan or [])
        if not run_episode(episode, ScriptedAgent(plan), judge, start=start)["success"]:
            return "the plan that does the goal fails"
        if run_episode(episode, NullAgent(), judge, start=start)["success"]:
            return "doing nothing already succeeds"
    return None


def generate_category(category: str, seed: int = SEED, count: int = PER_CATEGORY) -> list[Episode]:
    gen, need = GENERATORS[category]
    qt, _, f = category.rpartition("-")
    out: list[Episode] = []
    attempt = 0
    while len(out) < count:
        attempt += 1
        if attempt > MAX_ATTEMPTS * count:
            raise RuntimeError(f"{category}: could not draw {count} sound episodes")
        rng = random.Random(f"{seed}:{category}:{attempt}")
        draft = new_draft(rng, need)
        try:
            fields = gen(draft)
        except EpisodeError:
            continue  # a random operation the devices refused: draw again
        if fields is None:
            continue
        plan = fields.pop("plan", None)
        episode = Episode(id=f"{category.lower()}-{len(out) + 1:03d}", category=category, query_type=qt,
                          feasible=f == "F", initial=draft.initial(), **fields)
        if check(episode, plan) is None:
            out.append(episode)
    return out


def generate(seed: int = SEED, per_category: int = PER_CATEGORY,
             categories: tuple[str, ...] = CATEGORIES) -> list[Episode]:
    return [e for c in CATEGORIES if c in categories for e in generate_category(c, seed, per_category)]
