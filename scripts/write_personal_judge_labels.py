"""Independent labelled answers for PersonalHomeBench's judge (docs/judge-labels.md).

Written from the tasks (question, ground truth, options, features, checks), the household as
its tools show it (members, rooms, devices, the memory lived to the task's `at`) and the
paper's criteria, never from the judge's rules. The sentence shapes are hand-written here; a
seeded RNG per task picks among them, so a task's lines do not depend on which other tasks
are drawn and a rerun is byte-identical.

    PYTHONPATH=. python scripts/write_personal_judge_labels.py OUT.jsonl [TASKS.jsonl.gz]
"""
from __future__ import annotations

import hashlib
import json
import random
import re
import sys
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from chip.clusters import Objects as Clusters

from bridge.tools import Session, call_tool
from scenarios.personal.household import Household
from scenarios.personal.households import load_spec
from scenarios.personal.tasks import LETTERS, NOBODY, PersonalTask, load_tasks
from scenarios.personal.tools import household_tools

TASKS = Path("scenarios/personal/data/personal.jsonl.gz")
OUT = Path("scenarios/personal/data/judge_labels_independent.jsonl")
#: Tasks drawn per category (CF: this many tasks, in whole changed/unchanged pairs).
PER_CATEGORY = 60
SEED = "personal-judge-labels/1"

Row = dict[str, Any]


#: The fresh held-out part: this many tasks per category that the first part did not draw.
FRESH_PER = 20
FRESH_SEED = "personal-judge-labels/fresh"


def second_shapes(task_id: str) -> bool:
    """Whether a first-part task is answered in the second set of shapes (it was held out until
    the scorer was measured on it; it is dev now)."""
    return int(hashlib.sha256(task_id.encode()).hexdigest(), 16) % 10 < 3


# ---- which tasks ----------------------------------------------------------------------------
def draw(tasks: list[PersonalTask], per: int | dict[str, int] = PER_CATEGORY, seed: str = SEED,
         skip: frozenset[str] = frozenset()) -> list[PersonalTask]:
    """`per` tasks of each category, a third of each difficulty where it has one, drawn by id
    with a seeded RNG (same ids while the set is unchanged), none in `skip`. CF in whole pairs."""
    rng = random.Random(seed)
    out: list[PersonalTask] = []
    for cat in ("IG", "CF", "MC", "FR", "PG"):
        mine = sorted((t for t in tasks if t.category == cat and t.id not in skip), key=lambda t: t.id)
        if cat == "CF":
            pairs: dict[str, list[PersonalTask]] = {}
            for t in mine:
                pairs.setdefault(t.id[:-1], []).append(t)
            units = [p for _, p in sorted(pairs.items()) if len(p) == 2]
        else:
            units = [[t] for t in mine]
        levels = sorted({u[0].difficulty or "" for u in units})
        n_cat = per[cat] if isinstance(per, dict) else per
        want = n_cat // 2 if cat == "CF" else n_cat
        picked: list[list[PersonalTask]] = []
        for i, level in enumerate(levels):
            n = want // len(levels) + (1 if i < want % len(levels) else 0)
            # Round robin over the difficulty's templates: every kind of question is answered.
            groups: dict[str, list[list[PersonalTask]]] = {}
            for u in units:
                if (u[0].difficulty or "") == level:
                    groups.setdefault(u[0].template or "", []).append(u)
            queues = [rng.sample(g, len(g)) for _, g in sorted(groups.items())]
            taken: list[list[PersonalTask]] = []
            while len(taken) < n and any(queues):
                for q in queues:
                    if q and len(taken) < n:
                        taken.append(q.pop(0))
            picked += taken
        out += sorted((t for u in picked for t in u), key=lambda t: t.id)
    return out


def draws(tasks: list[PersonalTask]) -> tuple[list[PersonalTask], ...]:
    """The four draws, each among the tasks the earlier ones did not take: the first part, the
    fresh part, the fourth-shapes part (all three dev now: their held-out parts were measured
    on) and round 4."""
    first = draw(tasks)
    fresh = draw(tasks, FRESH_PER, FRESH_SEED, frozenset(t.id for t in first))
    fourth = draw(tasks, FOURTH_PER, FOURTH_SEED, frozenset(t.id for t in first + fresh))
    return first, fresh, fourth, draw(tasks, ROUND4_PER, ROUND4_SEED, frozenset(t.id for t in first + fresh + fourth))


def parts(tasks: list[PersonalTask]) -> tuple[list[PersonalTask], list[PersonalTask]]:
    """(dev, held-out): every earlier draw and round 4's dev tasks; round 4's held-out tasks."""
    first, fresh, fourth, round4 = draws(tasks)
    return (first + fresh + fourth + [t for t in round4 if round4_split(t.id) == "dev"],
            [t for t in round4 if round4_split(t.id) == "heldout"])


# ---- what the tools show ----------------------------------------------------------------------
class View:
    """The task's household lived to `at`, read through the agent's tools."""

    def __init__(self, base: Path, task: PersonalTask):
        household = Household.from_spec(load_spec(base, task.household))
        household.simulate(task.at)
        self.session = Session(tools=household_tools(household))
        self.backend = household.backend
        self.members: list[Row] = self.call("get_household_members")["members"]
        self.rooms: list[Row] = self.call("get_rooms")["rooms"]
        self.devices: dict[str, str] = {}
        for room in self.rooms:
            for d in self.call("get_room_devices", {"room_id": room["room_id"]})["devices"]:
                self.devices[d["device_id"]] = room["room_id"]

    def call(self, tool: str, args: Row | None = None) -> Row:
        result = call_tool(self.backend, tool, args or {}, self.session)
        if not result.get("ok"):
            raise RuntimeError(f"{tool} {args}: {result}")
        return result

    def current(self, check: Row) -> Any:
        """What get_attribute shows now for a PG check's attribute."""
        cluster, attribute = check["attribute"].split(".")
        return self.call("get_attribute", {"device_id": check["device"], "cluster_id": cluster,
                                           "attribute_id": attribute, "endpoint_id": check["endpoint"]})["value"]

    def member(self, key: str) -> Row:
        return next(m for m in self.members if key in (m["id"], m["name"]))

    def first(self, name: str) -> str:
        return name.split()[0]

    def reading_before(self, room: str, day: str, when: str) -> float | None:
        """The last hourly temperature of `room` at or before `when`, as the memory gives it."""
        got = self.call("search_household_memory", {"kind": "room", "room_id": room, "date": day,
                                                    "query": "temperature", "limit": 200})
        value = None
        for r in got["records"]:
            if r["time"] <= when:
                m = re.search(r"temperature (-?\d+(?:\.\d+)?)", r["text"])
                value = float(m.group(1)) if m else value
        return value


# ---- hand-written shapes --------------------------------------------------------------------
def clock12(hhmm: str, style: int) -> str:
    h, m = map(int, hhmm.split(":"))
    suffix = "AM" if h < 12 else "PM"
    h12 = h % 12 or 12
    return [f"{h12}:{m:02d} {suffix}", f"{h12}:{m:02d}{suffix.lower()}", f"{h12}.{m:02d} {suffix.lower()[0]}.m.",
            f"{h12} {m:02d} {suffix}", f"{h:02d}h{m:02d}"][style % 5]


def clock_held(hhmm: str, style: int) -> str:
    """The held-out ways to write a time (none of clock12's)."""
    h, m = map(int, hhmm.split(":"))
    h12, pm = h % 12 or 12, h >= 12
    part = "at night" if h >= 21 or h < 5 else "in the evening" if h >= 17 else \
        "in the afternoon" if h >= 12 else "in the morning"
    spoken = f"{words(h12)} {'o' + chr(39) + 'clock' if m == 0 else words(m) if m >= 10 else 'oh ' + words(m)}"
    return [f"{m} minute{'s' if m > 1 else ''} past {h12} {part}" if m else f"{h12} o'clock {part}",
            f"{spoken} {'pm' if pm else 'am'}", f"{h:02d}{m:02d} hrs", f"{h12}:{m:02d}{'p' if pm else 'a'}",
            f"{h12}:{m:02d} {'PM' if pm else 'AM'} ({h:02d}:{m:02d})"][style % 5]


def shift(hhmm: str, minutes: int) -> str:
    t = datetime.strptime(hhmm, "%H:%M") + timedelta(minutes=minutes)
    return f"{t:%H:%M}"


NUMBERS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
           "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"]
TENS = ["", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]


def words(n: int) -> str:
    if n < 20:
        return NUMBERS[n]
    return TENS[n // 10] + ("" if n % 10 == 0 else "-" + NUMBERS[n % 10])


REFUSALS = ["I'm sorry, I can't answer that.", "I don't know.",
            "I couldn't find that in the household's memory.",
            "I don't have access to that information.",
            "That isn't something I can look up, sorry."]
HEDGES = [" Though I'm not certain; it could well be otherwise.", " But I may be wrong about that.",
          " Actually, on second thought, that may not be right.", " Then again, the records are unclear, so maybe not."]


REFUSALS_HELD = ["Sorry — no idea.", "I'm unable to determine that from what I can see.",
                 "can't help with that one", "Unfortunately the records don't say, so I can't tell you.",
                 "I'd rather not guess on this one."]
HEDGES_HELD = [" ...I think? Don't quote me on it.", " Not 100% sure though.",
               " (Could be wrong — worth double-checking.)", " Or not; I keep going back and forth on this.",
               " Probably. Maybe."]


class Writer:
    """One task's answers: (answer, label, kind, reason)."""

    def __init__(self, task: PersonalTask, view: View, fresh: bool = False, fourth: bool = False,
                 round4: bool = False):
        self.task, self.view = task, view
        seed = ROUND4_SEED if round4 else FOURTH_SEED if fourth else FRESH_SEED if fresh else SEED
        self.rng = random.Random(f"{seed}/{task.id}")
        self.rows: list[tuple[str, str, str, str]] = []
        # Each part is answered in its own set of shapes, so rules tuned on the earlier parts
        # have never seen a fresh held-out phrasing.
        self.fresh, self.round4 = fresh, round4
        self.held = not fresh and second_shapes(task.id)

    def add(self, answer: str, label: str, kind: str, reason: str) -> None:
        if self.fresh:   # "5:37 P.M." ending a sentence takes no second full stop
            answer = answer.replace(".M..", ".M.")
        if self.round4:
            answer = answer.replace(".M..", ".M.").replace(".m..", ".m.")
        if all(answer != a for a, *_ in self.rows):
            self.rows.append((answer, label, kind, reason))

    def pick(self, options: list[Any]) -> Any:
        return options[self.rng.randrange(len(options))]

    def some(self, options: list[Any], n: int) -> list[Any]:
        return self.rng.sample(options, min(n, len(options)))


# ---- IG, CF: a stated value ------------------------------------------------------------------
def value_shapes(w: Writer, truth: str) -> tuple[list[str], list[str], str]:
    """(correct phrasings, wrong values, what a part-only answer says) for the task's truth."""
    t, p, view = w.task, w.task.params, w.view
    template = t.template or ""
    name = p.get("name", "")
    first = view.first(name) if name else ""
    day = p.get("day", "")
    if template in ("first_on", "dishes", "last_out", "first_home"):
        others = [m["name"] for m in view.members if m["name"] != truth]
        wrong = others + ([] if truth == NOBODY else [NOBODY])
        what = {"first_on": f"switched on the {p.get('label')}", "dishes": f"started the {p.get('label')}",
                "last_out": f"left the {p.get('room_name')} last", "first_home": "came home first"}[template]
        if truth == NOBODY:
            ok = ["Nobody.", "No one.", f"Nobody {what} on {day}.", f"No one {what} that day.",
                  "None of them."]
            return ok, wrong, ""
        f = view.first(truth)
        ok = [truth, f"{truth}.", f"It was {f}.", f"{truth} {what} on {day}.", f"{f} did.",
              f"That was {truth}."]
        surname = truth.split()[-1] if " " in truth else ""
        shared = surname and sum(m["name"].endswith(" " + surname) for m in view.members) > 1
        return ok, [x for x in wrong if x != truth], (f"It was a {surname}." if shared else "")
    if template == "came_home":
        if not re.fullmatch(r"\d{2}:\d{2}", truth):
            ok = [f"{first} did not come home on {day}.", f"{first} never came home that day.",
                  f"They didn't come home on {day}."]
            return ok, [f"{shift('18:00', w.rng.randrange(-90, 90, 5))}"], ""
        ok = [truth, f"At {truth}.", f"{first} came home at {clock12(truth, w.rng.randrange(5))}.",
              clock12(truth, w.rng.randrange(5)), f"{first} got back at {truth} on {day}."]
        wrong = [shift(truth, d) for d in (-75, -40, -20, 25, 45, 90)]
        h = int(truth[:2])
        part = "evening" if h >= 17 else "afternoon" if h >= 12 else "morning"
        return ok, wrong, w.pick([f"Some time after {h % 12 or 12} {'PM' if h >= 12 else 'AM'}.",
                                  f"Around {h % 12 or 12} o'clock.", f"In the {part}."])
    if template in ("pref_temp", "temp_home"):
        m = re.match(r"(-?\d+(?:\.\d+)?)", truth)
        if m is None:
            return [truth], [], ""
        v = float(m.group(1))
        f = v * 9 / 5 + 32
        num = f"{v:g}"
        if template == "pref_temp":
            ok = [truth, f"{num} degrees", f"{num} °C", f"{first} likes their rooms cooled to {num} °C.",
                  f"{num} degrees Celsius ({f:g} °F)", f"{num}°C", f"{first} prefers {num} degrees."]
        else:
            ok = [truth, f"About {num} °C.", f"{num} degrees Celsius",
                  f"The {p.get('room_name')} was at {num} °C when {first} came home.", f"{num}°C"]
            came = view.call("search_household_memory", {"kind": "presence", "member": p["resident"], "date": day,
                                                          "query": "came home"})["records"]
            reading = view.reading_before(p["room"], day, came[0]["time"]) if came and t.category == "IG" else None
            if reading is not None and round(reading) == v:
                ok.append(f"The last reading before {first} came in was {reading:g} °C, so {num} °C "
                          "to the nearest degree.")
        step = 0.5 if template == "pref_temp" and not v.is_integer() else 1
        wrong = [f"{v + d * step:g} °C" for d in (-4, -3, -2, -1, 1, 2, 3)]
        part = f"Somewhere between {v - 2:g} and {v + 2:g} degrees."
        return ok, wrong, part
    if template == "age":
        n = int(truth)
        ok = [truth, f"{n} years old", f"{first} is {n}.", f"{words(n).capitalize()}.",
              f"{name} is {n} years old."]
        part = f"{first} is in their {n // 10 * 10}s." if n >= 20 else \
            f"{first} is {'a teenager' if n >= 13 else 'a child, not yet a teenager'}."
        return ok, [str(n + d) for d in (-5, -3, -2, -1, 1, 2, 4) if n + d > 0], part
    if template == "bedroom":
        rooms = {r["room_id"]: r.get("name", r["room_id"]) for r in view.rooms}
        ok = [truth, f"`{truth}`", f"{first} sleeps in {truth}.", f"Room id: {truth}",
              f"The {rooms.get(truth, truth)} ({truth})."]
        return ok, [r for r in rooms if r != truth], ""
    return [truth], [], ""


def value_shapes_held(w: Writer, truth: str) -> tuple[list[str], list[str], str]:
    """value_shapes for held-out tasks: the same facts, in shapes the dev part never uses."""
    t, p, view = w.task, w.task.params, w.view
    template = t.template or ""
    name = p.get("name", "")
    first = view.first(name) if name else ""
    day = p.get("day", "")
    if template in ("first_on", "dishes", "last_out", "first_home"):
        others = [m["name"] for m in view.members if m["name"] != truth]
        wrong = others + ([] if truth == NOBODY else [NOBODY])
        what = {"first_on": f"turned the {p.get('label')} on", "dishes": f"ran the {p.get('label')}",
                "last_out": f"was the last to leave the {p.get('room_name')}",
                "first_home": "got home before everyone else"}[template]
        if truth == NOBODY:
            ok = ["nobody", "Nobody at all.", f"None of the household members {what} on {day}.",
                  f"It didn't happen that day — no one {what}.", "No-one did."]
            return ok, wrong, ""
        f = view.first(truth)
        ok = [truth.lower(), f"Answer: {f}", f"From the {day} records: {truth}.", f"{f} was teh one who {what}.",
              f"{truth} - {what} ({day})", f"{f}!"]
        surname = truth.split()[-1] if " " in truth else ""
        shared = surname and sum(m["name"].endswith(" " + surname) for m in view.members) > 1
        return ok, [x for x in wrong if x != truth], (f"One of the {surname}s." if shared else "")
    if template == "came_home":
        if not re.fullmatch(r"\d{2}:\d{2}", truth):
            ok = [f"{first} stayed out all of {day}.", f"{first} didn't return home that day at all.",
                  f"no return home for {first} on {day}"]
            return ok, [clock_held(shift("18:00", w.rng.randrange(-90, 90, 5)), w.rng.randrange(5))], ""
        ok = [clock_held(truth, w.rng.randrange(5)),
              f"{first} arrived home at {clock_held(truth, w.rng.randrange(5))}.",
              f"home at {truth} ({day})", f"It was {clock_held(truth, w.rng.randrange(5))} when {first} walked in.",
              f"{truth} hrs"]
        wrong = [clock_held(shift(truth, d), w.rng.randrange(5)) for d in (-70, -35, -15, 20, 50, 85)]
        h = int(truth[:2])
        return ok, wrong, w.pick([f"Sometime between {h:02d}:00 and {(h + 1) % 24:02d}:00.",
                                  f"Late in the {'evening' if h >= 17 else 'day'}.", "Before dinner, I think."])
    if template in ("pref_temp", "temp_home"):
        m = re.match(r"(-?\d+(?:\.\d+)?)", truth)
        if m is None:
            return [truth], [], ""
        v = float(m.group(1))
        fahr = v * 9 / 5 + 32
        num = f"{v:g}"
        spoken = (words(int(v)) + ("" if v.is_integer() else " and a half")) if 0 <= v < 100 and v * 2 == int(v * 2) \
            else num
        if template == "pref_temp":
            ok = [f"{num} C", f"{first}: {num}°", f"{first}'s preferred temperature is {num} degrees C.",
                  f"{fahr:g}°F, i.e. {num}°C", f"{spoken} degrees", f"{num} celsius"]
        else:
            ok = [f"{num} C", f"It read {num} degrees.", f"~{num}°C", f"{spoken} degrees",
                  f"When {first} got in, the {p.get('room_name')} read {num} C."]
            came = view.call("search_household_memory", {"kind": "presence", "member": p["resident"], "date": day,
                                                          "query": "came home"})["records"]
            reading = view.reading_before(p["room"], day, came[0]["time"]) if came and t.category == "IG" else None
            if reading is not None and round(reading) == v:
                ok.append(f"{num} — the hourly log had {reading:g} C just before {first} got home, which rounds "
                          f"to {num}.")
        step = 0.5 if template == "pref_temp" and not v.is_integer() else 1
        wrong = [f"{v + d * step:g} degrees C" for d in (-4, -3, -2, -1, 1, 2, 3)]
        return ok, wrong, f"Roughly {v - 2:g}-{v + 2:g} C."
    if template == "age":
        n = int(truth)
        lo = n // 10 * 10
        ok = [f"{n} yrs", f"{first}'s age: {n}", words(n), f"{first} — {n} years of age.", f"{n} (years)"]
        return ok, [f"{n + d} yrs" for d in (-6, -4, -2, -1, 1, 3, 5) if n + d > 0], \
            f"Somewhere between {lo} and {lo + 9}."
    if template == "bedroom":
        rooms = {r["room_id"]: r.get("name", r["room_id"]) for r in view.rooms}
        ok = [f"'{truth}'", f"{rooms.get(truth, truth)} — id {truth}", f"{first}'s bedroom is {truth}",
              f"room {truth}", f"{truth} ({rooms.get(truth, truth)})"]
        return ok, [f"room {r}" for r in rooms if r != truth], ""
    return [truth], [], ""


def sentence(text: str) -> str:
    """`text` ended as a sentence, so more can follow it."""
    return text if text.endswith((".", "!", "?", ")")) else text + "."


def helpful_extra(w: Writer) -> str:
    """A true extra fact from the members' list, for a helpful correct answer."""
    p = w.task.params
    rid = p.get("resident")
    if not rid:
        return ""
    m = w.view.member(rid)
    prefs = m["preferences"]
    fn = w.view.first(m["name"])
    if w.held:
        facts = [f" FYI, {fn} is {m['age']} years old.", f" ({fn}'s bedroom: {m['bedroom']}.)"]
        if prefs.get("back"):
            facts.append(f" {fn} normally gets home about {prefs['back']}, for what it's worth.")
        if prefs.get("light_level") is not None:
            facts.append(f" By the way, {fn}'s preferred light level is {prefs['light_level']}.")
        return w.pick(facts)
    facts = [f" ({w.view.first(m['name'])} is {m['age']}.)",
             f" {w.view.first(m['name'])} sleeps in {m['bedroom']}."]
    if prefs.get("back"):
        facts.append(f" Usually {w.view.first(m['name'])} gets back around {prefs['back']}.")
    if prefs.get("light_level") is not None:
        facts.append(f" {w.view.first(m['name'])} also likes lights at level {prefs['light_level']}.")
    return w.pick(facts)


def ghost(w: Writer) -> str:
    """A member who does not exist in the household."""
    names = {m["name"].split()[0] for m in w.view.members}
    return next(n for n in ("Tobias", "Marguerite", "Ingrid", "Oskar", "Priya") if n not in names)


def reactive(w: Writer) -> None:
    if w.fresh:
        reactive_fresh(w)
        return
    t = w.task
    truth = t.answer or ""
    ok, wrong, part = (value_shapes_held if w.held else value_shapes)(w, truth)
    cf = t.counterfactual or {}
    if w.held:
        reactive_held(w, truth, ok, wrong, part, cf)
        return
    for a in w.some(ok, 3):
        w.add(a, "pass", "correct", "states the true answer and nothing contradicting it")
    if cf:
        orig = cf.get("original_answer", "")
        if cf.get("changed"):
            w.add(w.pick([f"With that change: {truth} (instead of {orig}).",
                          f"{truth}. Without the change it would have been {orig}.",
                          f"It would change from {orig} to {truth}."]),
                  "pass", "helpful", "gives the answer under the change; the actual one named only as the contrast")
            w.add(w.pick([orig, f"Still {orig}; the change makes no difference.", f"It stays {orig}."]),
                  "fail", "ignored_change", "gives the actual answer; under the change it is different")
        else:
            w.add(w.pick([f"{truth}; that change doesn't affect it.", f"Still {truth}: the change is irrelevant here.",
                          f"Unchanged: {truth}."]),
                  "pass", "helpful", "states the true answer, unchanged by the hypothetical, and says so")
            if wrong:
                w.add(w.pick([f"With that change it would be {w.pick(wrong)} instead.",
                              f"It would become {w.pick(wrong)}."]),
                      "fail", "wrong", "claims the change moves the answer; it does not")
    else:
        extra = helpful_extra(w)
        if extra:
            w.add(sentence(w.pick(ok)) + extra, "pass", "helpful", "true answer plus a true fact about the member")
    first_ok = w.pick(ok)
    if wrong:
        x = w.pick(wrong)
        w.add(w.pick(["Nobody did.", "No one."] if x == NOBODY else
                     ["{x}", "{x}.", "The answer is {x}.", "I believe it was {x}."]).format(x=x),
              "fail", "wrong", "states a value that is not the true answer")
        cands = [truth] + w.some(wrong, 2)
        w.rng.shuffle(cands)
        shapes = ["{a}, {b} or {c}", "Either {a} or {b} (possibly {c}).", "It's one of: {a}; {b}; {c}."] \
            if len(cands) == 3 else ["{a} or {b}", "Either {a} or {b}.", "It's one of: {a}; {b}."]
        w.add(w.pick(shapes).format(a=cands[0], b=cands[1], c=cands[-1]),
              "fail", "stuffed", "several candidate answers instead of one")
        doubts = [f" Or maybe {w.pick(wrong)}.", f" Although it might have been {w.pick(wrong)}."]
        w.add(sentence(first_ok) + w.pick(doubts + HEDGES),
              "fail", "hedged", "the answer is taken back or put in doubt after it is given")
    if part:
        w.add(part, "fail", "partly_correct", "only part of the answer: not the exact value asked for")
    choices = [("copied", "repeats the question without answering it"),
               ("refusal", "gives no answer"), ("fabricated", "claims a household member who does not exist")]
    for kind, reason in w.some(choices, 2):
        if kind == "copied":
            w.add(w.pick([t.question, f"You asked: {t.question}", f"{t.question} Let me check."]),
                  "fail", kind, reason)
        elif kind == "refusal":
            w.add(w.pick(REFUSALS), "fail", kind, reason)
        else:
            w.add(f"{sentence(first_ok)} {ghost(w)}, {w.pick(['the lodger', 'the eldest son', 'the nanny'])}, "
                  f"{w.pick(['told me so', 'confirmed it', 'saw it happen'])}.",
                  "fail", kind, reason)


def held_value(w: Writer, value: str) -> str:
    """A ground-truth value as the held-out shapes write it (a time or a temperature restyled)."""
    if re.fullmatch(r"\d{2}:\d{2}", value):
        return clock_held(value, w.rng.randrange(5))
    m = re.fullmatch(r"(-?\d+(?:\.\d+)?) ?°C", value)
    return f"{m.group(1)} C" if m else value


def reactive_held(w: Writer, truth: str, ok: list[str], wrong: list[str], part: str, cf: Row) -> None:
    """reactive's answers in the held-out shapes: same kinds, same labels."""
    t = w.task
    answer = held_value(w, truth)
    for a in w.some(ok, 3):
        w.add(a, "pass", "correct", "states the true answer and nothing contradicting it")
    if cf:
        orig = held_value(w, cf.get("original_answer", ""))
        if cf.get("changed"):
            w.add(w.pick([f"Under that scenario the answer becomes {answer}; in reality it was {orig}.",
                          f"{answer} (vs. {orig} as things actually went)",
                          f"if that had happened: {answer}; what really happened: {orig}"]),
                  "pass", "helpful", "gives the answer under the change; the actual one named only as the contrast")
            w.add(w.pick([f"{orig}, same as before.", f"The answer is {orig} either way.",
                          f"{orig} — nothing changes"]),
                  "fail", "ignored_change", "gives the actual answer; under the change it is different")
        else:
            w.add(w.pick([f"No difference — it's {answer} either way.",
                          f"The hypothetical doesn't matter here; answer: {answer}",
                          f"{answer}, same as without the change."]),
                  "pass", "helpful", "states the true answer, unchanged by the hypothetical, and says so")
            if wrong:
                w.add(w.pick([f"That would switch it to {w.pick(wrong)}.", f"In that case: {w.pick(wrong)}"]),
                      "fail", "wrong", "claims the change moves the answer; it does not")
    else:
        extra = helpful_extra(w)
        if extra:
            w.add(sentence(w.pick(ok)) + extra, "pass", "helpful", "true answer plus a true fact about the member")
    first_ok = w.pick(ok)
    if wrong:
        x = w.pick(wrong)
        w.add(w.pick(["nobody", "No one did that, that day."] if x == NOBODY else
                     ["{x}!", "Answer: {x}", "It's {x}.", "pretty sure it's {x}"]).format(x=x),
              "fail", "wrong", "states a value that is not the true answer")
        cands = [answer] + w.some(wrong, 2)
        w.rng.shuffle(cands)
        shapes = ["{a} / {b} / {c}", "Could be {a}, {b}, or {c}.", "Candidates: {a}, {b}, {c}."] \
            if len(cands) == 3 else ["{a} / {b}", "Could be {a} or {b}.", "Candidates: {a}, {b}."]
        w.add(w.pick(shapes).format(a=cands[0], b=cands[1], c=cands[-1]),
              "fail", "stuffed", "several candidate answers instead of one")
        doubts = [f" Unless it was {w.pick(wrong)}.", f" Or {w.pick(wrong)}, now that I think of it."]
        w.add(sentence(first_ok) + w.pick(doubts + HEDGES_HELD),
              "fail", "hedged", "the answer is taken back or put in doubt after it is given")
    if part:
        w.add(part, "fail", "partly_correct", "only part of the answer: not the exact value asked for")
    choices = [("copied", "repeats the question without answering it"),
               ("refusal", "gives no answer"), ("fabricated", "claims a household member who does not exist")]
    for kind, reason in w.some(choices, 2):
        if kind == "copied":
            w.add(w.pick([t.question.lower(), f"Q: {t.question}", f"Good question — {t.question}"]),
                  "fail", kind, reason)
        elif kind == "refusal":
            w.add(w.pick(REFUSALS_HELD), "fail", kind, reason)
        else:
            who = f"{ghost(w)}, {w.pick(['the housekeeper', 'the neighbour', 'the exchange student'])}"
            w.add(w.pick([f"{sentence(first_ok)} (Source: {who}, who keeps track of this.)",
                          f"{who}, mentioned it: {first_ok}"]),
                  "fail", kind, reason)


# ---- MC -----------------------------------------------------------------------------------
def multiple_choice(w: Writer) -> None:
    if w.fresh:
        multiple_choice_fresh(w)
        return
    t = w.task
    right = t.answer or "A"
    i = LETTERS.index(right)
    text = t.options[i]
    letters = LETTERS[:len(t.options)]
    others = [c for c in letters if c != right]
    if w.held:
        multiple_choice_held(w, right, text, letters, others)
        return
    ok = [right, f"{right})", f"({right})", f"{right}) {text}", f"The answer is {right}.", f"Answer: {right}",
          text, f"{right} — {text}", right.lower(), f"Option {right}: {text}."]
    for a in w.some(ok, 3):
        w.add(a, "pass", "correct", "one option chosen, the right one (its letter or its text)")
    x = w.pick(others)
    w.add(w.pick([x, f"{x})", f"The answer is {x}.", f"{x}) {t.options[LETTERS.index(x)]}"]),
          "fail", "wrong", "one option chosen, a wrong one")
    y = w.pick(others)
    w.add(f"{right}) {t.options[LETTERS.index(y)]}", "fail", "wrong",
          "letter and option text disagree: no single option chosen")
    pair = sorted([right, w.pick(others)])
    w.add(w.pick([", ".join(letters), f"{pair[0]} or {pair[1]}", f"{pair[0]}/{pair[1]}",
                  f"Either {pair[0]} or {pair[1]}.", " ".join(letters)]),
          "fail", "stuffed", "several options chosen")
    w.add(sentence(w.pick(ok[:6])) + w.pick([f" Or possibly {x}.", f" Hmm, maybe {x} instead."] + HEDGES),
          "fail", "hedged", "the choice is put in doubt after it is made")
    kinds = [("copied", "repeats the options without choosing"), ("refusal", "no option chosen")]
    kind, reason = w.pick(kinds)
    if kind == "copied":
        listed = " ".join(f"{LETTERS[k]}) {o}" for k, o in enumerate(t.options))
        w.add(w.pick([listed, f"Options: {listed}."]), "fail", kind, reason)
    else:
        w.add(w.pick(REFUSALS + ["None of the options fits."]), "fail", kind, reason)


def multiple_choice_held(w: Writer, right: str, text: str, letters: str, others: list[str]) -> None:
    t = w.task

    def opt(c: str) -> str:
        return t.options[LETTERS.index(c)]
    ok = [f"{right}.", f"**{right}**", f"I'd go with {right}.", f"option {right.lower()}", f"{text} ({right})",
          f"Correct option: {right}", f"[{right}]", f"{right} - {text}"]
    for a in w.some(ok, 3):
        w.add(a, "pass", "correct", "one option chosen, the right one (its letter or its text)")
    x = w.pick(others)
    w.add(w.pick([f"**{x}**", f"I'd go with {x}.", f"{opt(x)} ({x})", f"option {x.lower()}"]),
          "fail", "wrong", "one option chosen, a wrong one")
    y = w.pick(others)
    w.add(f"{opt(y)} ({right})", "fail", "wrong", "letter and option text disagree: no single option chosen")
    pair = sorted([right, w.pick(others)])
    w.add(w.pick([f"{pair[0]} and {pair[1]}", f"{pair[0]}, {pair[1]}", f"Both {pair[0]} and {pair[1]}.",
                  "/".join(letters), f"any of {', '.join(letters)}"]),
          "fail", "stuffed", "several options chosen")
    w.add(sentence(w.pick(ok[:5])) + w.pick([f" Though {x} is also plausible.", f" ...or {x}?"] + HEDGES_HELD),
          "fail", "hedged", "the choice is put in doubt after it is made")
    if w.pick(["copied", "refusal"]) == "copied":
        w.add(w.pick(["\n".join(f"{LETTERS[k]}. {o}" for k, o in enumerate(t.options)),
                      "The options are: " + "; ".join(f"{LETTERS[k]} = {o}" for k, o in enumerate(t.options))]),
              "fail", "copied", "repeats the options without choosing")
    else:
        w.add(w.pick(REFUSALS_HELD + ["none of these is right tbh"]), "fail", "refusal", "no option chosen")


# ---- FR -------------------------------------------------------------------------------------
def ranking_shapes(order: list[str], rng: random.Random) -> list[str]:
    """One ranking written the ways people write a list."""
    n = len(order)
    prose = (f"{order[0]} first, then {order[1]}, then {order[2]}"
             + (f"; after that {', '.join(order[3:])}." if n > 3 else "."))
    return [json.dumps(order), json.dumps(order, indent=2),
            "\n".join(f"{k}. {f}" for k, f in enumerate(order, 1)),
            "\n".join(f"- {f}" for f in order), ", ".join(order),
            f"Most useful first: {', '.join(order)}", prose,
            f"I'd start with {order[0]}, followed by {order[1]} and {order[2]}; the rest matter less."]


def ranking_shapes_held(order: list[str], rng: random.Random) -> list[str]:
    """ranking_shapes' held-out counterpart: the first six give the whole order, the seventh in
    prose, the last only the top three."""
    rest = order[3:]
    table = "| rank | feature |\n|---|---|\n" + "\n".join(f"| {k} | {f} |" for k, f in enumerate(order, 1))
    return [" > ".join(order), "\n".join(f"{k}) {f}" for k, f in enumerate(order, 1)),
            "\n".join(f"#{k} {f}" for k, f in enumerate(order, 1)), "; ".join(order),
            json.dumps(order, separators=(",", ":")), table,
            f"Top pick: {order[0]}. Next: {order[1]}, then {order[2]}."
            + (f" Lower down: {', '.join(rest)}." if rest else ""),
            f"go with {order[0]} first; {order[1]} and {order[2]} are runners-up, others don't matter much"]


def made_up_feature(w: Writer) -> str:
    for device in ("hallway_light", "garage_door", "sauna_heater", "entrance_light", "towel_warmer"):
        if device not in w.view.devices:
            return f"{device}.OnOff.On"
    return "front_porch_lamp.OnOff.On"


def feature_recommendation(w: Writer) -> None:
    if w.fresh:
        feature_recommendation_fresh(w)
        return
    t = w.task
    relevant = t.relevant
    rest = [f for f in t.features if f not in relevant]
    w.rng.shuffle(rest)
    best = relevant + rest
    if w.held:
        feature_recommendation_held(w, relevant, rest, best)
        return
    shapes = ranking_shapes(best, w.rng)
    for a in w.some(shapes, 3):
        w.add(a, "pass", "correct", "the top-ranked feature is a relevant one (AP@1 = 1)")
    alt = [relevant[1], relevant[0], relevant[2]] + rest
    w.add(w.pick(ranking_shapes(alt, w.rng)[:6]), "pass", "correct",
          "the top-ranked feature is a relevant one (AP@1 = 1), though not the one used most")
    w.add(w.pick([json.dumps(relevant[:1]), f"{relevant[0]}", json.dumps(relevant)]), "pass", "correct",
          "ranks only the top features; the first is relevant (AP@1 = 1)")
    junk = w.pick(rest)
    wrong = [junk] + [f for f in best if f != junk]
    w.add(w.pick(ranking_shapes(wrong, w.rng)[:7]), "fail", "wrong", "the top-ranked feature is not relevant")
    w.add(w.pick(ranking_shapes(list(reversed(best)), w.rng)[:6]), "fail", "wrong",
          "ranked least useful first: the top-ranked feature is not relevant")
    listed = "\n".join(f"- {c}" for c in t.features)
    given = list(t.features)
    kinds = ["copied", "stuffed", "hedged", "fabricated", "refusal"]
    for kind in w.some(kinds, 3):
        if kind == "copied":
            w.add(w.pick([json.dumps(given), listed, t.question]), "fail", kind,
                  "repeats the candidates in the order given: no ranking made")
        elif kind == "stuffed":
            w.add(w.pick(["All of them are equally useful: " + ", ".join(given),
                          f"Any of these: {json.dumps(sorted(given))}",
                          f"1. {' / '.join(relevant + [junk])}\n2. the rest"]),
                  "fail", kind, "no single top-ranked feature: several or all put first")
        elif kind == "hedged":
            w.add(w.pick(shapes[:5]) + w.pick(["\nHonestly, the order hardly matters; any of them could come first.",
                                               f"\nThough {junk} might be the most useful after all."]),
                  "fail", kind, "the ranking is taken back after it is given")
        elif kind == "fabricated":
            made = made_up_feature(w)
            w.add(w.pick(ranking_shapes([made] + best, w.rng)[:6]), "fail", kind,
                  "the top-ranked feature is not a device feature of this home (made up)")
        else:
            w.add(w.pick(REFUSALS + ["I can't predict what they'll want."]), "fail", "refusal", "no ranking")


def feature_recommendation_held(w: Writer, relevant: list[str], rest: list[str], best: list[str]) -> None:
    t = w.task
    shapes = ranking_shapes_held(best, w.rng)
    for a in w.some(shapes, 3):
        w.add(a, "pass", "correct", "the top-ranked feature is a relevant one (AP@1 = 1)")
    alt = [relevant[1], relevant[0], relevant[2]] + rest
    w.add(w.pick(ranking_shapes_held(alt, w.rng)[:6]), "pass", "correct",
          "the top-ranked feature is a relevant one (AP@1 = 1), though not the one used most")
    w.add(w.pick([f"Top one: {relevant[0]}", f"{relevant[0]} (most useful)",
                  "\n".join(f"{k}) {f}" for k, f in enumerate(relevant, 1))]), "pass", "correct",
          "ranks only the top features; the first is relevant (AP@1 = 1)")
    junk = w.pick(rest)
    wrong = [junk] + [f for f in best if f != junk]
    w.add(w.pick(ranking_shapes_held(wrong, w.rng)[:7]), "fail", "wrong", "the top-ranked feature is not relevant")
    w.add(w.pick(ranking_shapes_held(list(reversed(best)), w.rng)[:6]), "fail", "wrong",
          "ranked least useful first: the top-ranked feature is not relevant")
    given = list(t.features)
    for kind in w.some(["copied", "stuffed", "hedged", "fabricated", "refusal"], 3):
        if kind == "copied":
            w.add(w.pick(["Candidates:\n" + "\n".join(f"* {c}" for c in given), t.question.lower()]), "fail", kind,
                  "repeats the candidates in the order given: no ranking made")
        elif kind == "stuffed":
            w.add(w.pick(["They're all about equally good: " + " | ".join(given),
                          f"No clear winner — {', '.join(sorted(given))} all tie.",
                          f"1) {relevant[0]} and {junk} (tie)\n2) everything else"]),
                  "fail", kind, "no single top-ranked feature: several or all put first")
        elif kind == "hedged":
            w.add(w.pick(shapes[:5]) + w.pick(["\n\n(That said, I could easily have the order wrong.)",
                                               f"\n\nActually {junk} may deserve the top spot."]),
                  "fail", kind, "the ranking is taken back after it is given")
        elif kind == "fabricated":
            made = made_up_feature(w)
            w.add(w.pick(ranking_shapes_held([made] + best, w.rng)[:6]), "fail", kind,
                  "the top-ranked feature is not a device feature of this home (made up)")
        else:
            w.add(w.pick(REFUSALS_HELD + ["No way to know their habits from this."]), "fail", "refusal",
                  "no ranking")


# ---- PG -------------------------------------------------------------------------------------
CLUSTER = {"OnOff": Clusters.OnOff, "LevelControl": Clusters.LevelControl, "Thermostat": Clusters.Thermostat,
           "FanControl": Clusters.FanControl}


def step_for(check: Row, value: Any, numeric: bool) -> Row:
    """The tool call that leaves `check`'s attribute at `value`, ids as names or numbers."""
    cname, attr = check["attribute"].split(".")
    cluster = CLUSTER[cname]
    cid: Any = cluster.id if numeric else cname
    if cname == "OnOff":
        cmd = cluster.Commands.On if value else cluster.Commands.Off
        return {"tool": "execute_command", "args": {"device_id": check["device"], "endpoint_id": check["endpoint"],
                                                    "cluster_id": cid,
                                                    "command_id": cmd.command_id if numeric else cmd.__name__,
                                                    "args": {}}}
    if cname == "LevelControl":
        # WithOnOff: a plain MoveToLevel is ignored by a light that is off (Matter Level Control).
        cmd = cluster.Commands.MoveToLevelWithOnOff
        return {"tool": "execute_command", "args": {
            "device_id": check["device"], "endpoint_id": check["endpoint"], "cluster_id": cid,
            "command_id": cmd.command_id if numeric else cmd.__name__,
            "args": {"level": value, "transitionTime": 0, "optionsMask": 0, "optionsOverride": 0}}}
    a = getattr(cluster.Attributes, attr)
    return {"tool": "write_attribute", "args": {"device_id": check["device"], "endpoint_id": check["endpoint"],
                                                "cluster_id": cid, "attribute_id": a.attribute_id if numeric else attr,
                                                "value": value}}


def wrong_value(check: Row, rng: random.Random) -> Any:
    v, attr = check["value"], check["attribute"]
    if attr == "OnOff.OnOff":
        return not v
    if attr == "LevelControl.CurrentLevel":
        return v - 70 if v > 120 else v + 80
    if attr == "Thermostat.SystemMode":
        return 4 if v == 3 else 3
    if attr.startswith("Thermostat."):
        return v + rng.choice((-400, -300, 300, 400))
    return 10 if v > 40 else 90


MODE_WORDS = {3: "cool", 4: "heat", 1: "auto", 0: "off"}


def in_words(check: Row, value: Any, room_of: dict[str, str]) -> str:
    device = check["device"].replace("_", " ")
    attr = check["attribute"]
    if attr == "OnOff.OnOff":
        return f"switch {'on' if value else 'off'} the {device}"
    if attr == "LevelControl.CurrentLevel":
        return f"set the {device} to level {value} (about {round(value / 254 * 100)}%)"
    if attr == "Thermostat.SystemMode":
        return f"put the {device} in {MODE_WORDS.get(value, value)} mode"
    if attr.startswith("Thermostat."):
        kind = "cooling" if "Cooling" in attr else "heating"
        return f"set the {device}'s {kind} setpoint to {value / 100:g} °C"
    return f"run the {device} fan at {value}%"


def in_words_held(check: Row, value: Any) -> str:
    device = check["device"].replace("_", " ")
    attr = check["attribute"]
    if attr == "OnOff.OnOff":
        return f"turn the {device} {'on' if value else 'off'}"
    if attr == "LevelControl.CurrentLevel":
        return f"dim the {device} to {value}/254"
    if attr == "Thermostat.SystemMode":
        return f"switch the {device} over to {MODE_WORDS.get(value, value)}"
    if attr.startswith("Thermostat."):
        return f"{device} {'cooling' if 'Cooling' in attr else 'heating'} setpoint -> {value / 100:g} C"
    return f"{device} fan speed {value} percent"


def already(check: Row) -> str:
    """A claim that `check`'s value is in place now."""
    device, attr, value = check["device"].replace("_", " "), check["attribute"], check["value"]
    if attr == "OnOff.OnOff":
        return f"the {device} is already {'on' if value else 'off'}"
    if attr == "LevelControl.CurrentLevel":
        return f"the {device} is already at level {value}"
    if attr == "Thermostat.SystemMode":
        return f"the {device} is already in {MODE_WORDS.get(value, value)} mode"
    if attr.startswith("Thermostat."):
        return f"the {device}'s {'cooling' if 'Cooling' in attr else 'heating'} setpoint is already {value / 100:g} °C"
    return f"the {device} fan is already at {value}%"


def plan_generation(w: Writer) -> None:
    if w.fresh:
        plan_generation_fresh(w)
        return
    t = w.task
    checks = t.checks
    arrival = datetime.strptime(t.params["arrival"], "%Y-%m-%d %H:%M:%S")
    rid = t.params["resident"]
    first = w.view.first(w.view.member(rid)["name"])
    pid = w.pick([f"{first.lower()}_home", "arrival_prep", f"get_ready_for_{rid}"] if w.held else
                 [f"{rid}_arrival", "welcome_home", f"arrival_{rid}", "prepare_home"])

    def plan(values: list[Any], start: datetime, numeric: bool, subset: list[Row] | None = None,
             split: bool = False) -> list[Row]:
        chosen = subset if subset is not None else checks
        steps = [step_for(c, v, numeric) for c, v in zip(chosen, values, strict=True)]
        when = f"{start:%Y-%m-%d %H:%M:%S}"
        if split:   # one scheduled workflow per step
            return [{"program_id": pid, "tool": "schedule_workflow", "args": {"start_time": when, "steps": [s]}}
                    for s in steps]
        return [{"program_id": pid, "tool": "schedule_workflow", "args": {"start_time": when, "steps": steps}}]

    def text(steps: list[Row]) -> str:
        if w.held:
            body = w.pick([json.dumps(steps, indent=4), json.dumps(steps, separators=(",", ":"))])
            return w.pick(["Plan:\n```\n{b}\n```", f"Sure — schedule this for {first}:\n\n{{b}}",
                           "{b}\n\nThat should have everything ready on arrival.", "```\n{b}\n```"]).format(b=body)
        body = w.pick([json.dumps(steps), json.dumps(steps, indent=2)])
        return w.pick(["{b}", "```json\n{b}\n```", f"Here is the plan for {first}'s arrival:\n{{b}}",
                       "{b}"]).format(b=body)

    truth = [c["value"] for c in checks]
    starts = [arrival - timedelta(minutes=m) for m in ((1, 3, 7, 12) if w.held else (0, 2, 5, 10))]
    for k in range(3):
        w.add(text(plan(truth, w.pick(starts), numeric=k == 1, split=k == 2)), "pass", "correct",
              "a runnable plan that leaves the values the resident sets on arrival in place by then")
    thermo = [c for c in checks if c["attribute"].startswith(("Thermostat.", "FanControl."))]
    if thermo and len(thermo) < len(checks):
        lights = [c for c in checks if c not in thermo]
        now = datetime.strptime(t.at, "%Y-%m-%d %H:%M:%S")
        steps = [{"program_id": "preheat", **step_for(c, c["value"], False)} for c in thermo] + \
            plan([c["value"] for c in lights], arrival - timedelta(minutes=3), False, lights)
        w.add(text(steps), "pass", "correct",
              f"climate set now ({now:%H:%M}), lights scheduled for arrival: every value in place by then")
    prose = "; ".join(in_words(c, c["value"], w.view.devices) for c in checks)
    if w.held:
        prose = ", ".join(in_words_held(c, c["value"]) for c in checks)
    w.add(w.pick([f"Around {clock_held(f'{arrival - timedelta(minutes=5):%H:%M}', 1)}: {prose}.",
                  f"before {first} is back ({arrival:%H:%M}) — {prose}",
                  f"Plan in words: {prose}, timed for {first}'s arrival."] if w.held else
                 [f"At {arrival - timedelta(minutes=5):%H:%M}, {prose}.",
                  f"When {first} gets home around {arrival:%H:%M}: {prose}.",
                  f"I'd {prose} just before {first} arrives."]),
          "fail", "prose", "a plan in prose: no executable steps, so its validity (Eq. 11) is 0; the task asks for "
                           "the JSON list of tool calls")
    bad = w.rng.randrange(len(checks))
    vals = list(truth)
    vals[bad] = wrong_value(checks[bad], w.rng)
    w.add(text(plan(vals, w.pick(starts), numeric=False)), "fail", "wrong",
          f"sets {checks[bad]['device']} {checks[bad]['attribute']} to a value the resident does not want")
    # Left out: a value not in place now (get_attribute) that no other step sets
    # (MoveToLevelWithOnOff also switches its light on).
    now_values = [w.view.current(c) for c in checks]
    leveled = {c["device"] for c in checks if c["attribute"] == "LevelControl.CurrentLevel"}
    missable = [c for c, v in zip(checks, now_values, strict=True) if v != c["value"]
                and not (c["attribute"] == "OnOff.OnOff" and c["value"] and c["device"] in leveled)]
    if len(checks) > 1 and missable:
        gone = w.pick(missable)
        keep = [c for c in checks if c is not gone]
        w.add(text(plan([c["value"] for c in keep], w.pick(starts), False, keep)), "fail", "partly_correct",
              f"leaves out {gone['device']} {gone['attribute']}, which the resident sets on arrival")
    if missable:
        gone = w.pick(missable)
        keep = [c for c in checks if c is not gone]
        claim = already(gone)
        w.add((f"Skipping one step since {claim}:\n" if w.held else
               f"{claim[0].upper()}{claim[1:]}, so that step is not needed.\n")
              + (json.dumps(plan([c["value"] for c in keep], w.pick(starts), False, keep)) if keep
                 else "Nothing else to do."),
              "fail", "fabricated", f"claims {gone['device']} {gone['attribute']} is already as wanted; "
                                    f"get_attribute shows {w.view.current(gone)!r}, not {gone['value']!r}")
    if any(v != c["value"] for c, v in zip(checks, now_values, strict=True)):
        late = arrival + timedelta(minutes=w.pick([90, 120, 180]))
        w.add(text(plan(truth, late, numeric=False)), "fail", "wrong_time",
              "the values come long after the resident has arrived (some are not in place until then)")
    shown = "; ".join(f"{c['device']} {c['attribute'].split('.')[1]} is {v!r}"
                      for c, v in zip(checks, now_values, strict=True))
    if w.held:
        shown = ", ".join(f"{c['device']}.{c['attribute'].split('.')[1]}={v!r}"
                          for c, v in zip(checks, now_values, strict=True))
    w.add((f"Current state — {shown}. Scheduled for {clock_held(f'{arrival - timedelta(minutes=5):%H:%M}', 3)}, "
           f"matching {first}'s preferences:\n" if w.held else
           f"Now: {shown}. At {arrival - timedelta(minutes=5):%H:%M} this sets what {first} likes:\n")
          + json.dumps(plan(truth, arrival - timedelta(minutes=5), numeric=False)),
          "pass", "helpful", "a runnable plan leaving the arrival values in place, with the values the tools "
                             "show now")
    kinds = ["fabricated", "invalid", "stuffed", "hedged", "copied", "refusal"]
    for kind in w.some(kinds, 3):
        if kind == "fabricated":
            made = made_up_feature(w).split(".")[0]
            steps = plan(truth, w.pick(starts), False)
            steps[0]["args"]["steps"].append({"tool": "execute_command", "args": {
                "device_id": made, "endpoint_id": 1, "cluster_id": "OnOff", "command_id": "On", "args": {}}})
            w.add(text(steps), "fail", kind, f"a step on {made}, which this home does not have (not executable)")
        elif kind == "invalid":
            if w.held:
                steps = [{"program_id": pid, "tool": w.pick(["set_state", "device_control", "apply_setting"]),
                          "args": {"id": c["device"], "attr": c["attribute"], "value": c["value"]}} for c in checks]
            else:
                steps = [{"program_id": pid, "tool": w.pick(["turn_on", "set_device", "control_device"]),
                          "args": {"device": c["device"], "setting": c["attribute"], "to": c["value"]}}
                         for c in checks]
            w.add(text(steps), "fail", kind, "steps name tools that do not exist: not executable (validity 0)")
        elif kind == "stuffed":
            a = plan(truth, w.pick(starts), False)
            b = plan(vals, w.pick(starts), False)
            w.add(f"Plan A:\n{json.dumps(a, indent=4)}\n\nPlan B:\n{json.dumps(b, indent=4)}\n\nEither works."
                  if w.held else
                  f"Option 1:\n{json.dumps(a)}\nOption 2:\n{json.dumps(b)}\nPick whichever you prefer.",
                  "fail", kind, "two conflicting plans instead of one")
        elif kind == "hedged":
            w.add(text(plan(truth, w.pick(starts), False)) + w.pick([
                f"\n\nHmm, not sure this is what {first} wants — maybe hold off on it.",
                "\n\nActually, scrap that; I'd leave the home as it is."] if w.held else [
                f"\nBut I'm not sure {first} wants any of this; maybe better to leave everything as it is.",
                "\nOn second thought, don't run it until someone confirms."]),
                "fail", kind, "the plan is withdrawn after it is given")
        elif kind == "copied":
            w.add(f"Task: {t.question}" if w.held else t.question, "fail", kind, "repeats the task: no plan")
        else:
            w.add(w.pick(REFUSALS_HELD + [f"no way to predict what {first} will want"] if w.held else
                         REFUSALS + [f"I can't know what {first} will want."]), "fail", "refusal", "no plan")


# ---- the fresh held-out part: how chatty LLM agents answer ------------------------------------
# A third set of shapes, written after the first two and used by neither: openings, markdown,
# what was looked up, other time, unit and number styles, names with the member's role or job,
# apologies and notes, new hedges, true and false extras, invented sources, new stuffing and
# refusals, typos and casing.
OPENERS = ["Great question! ", "Sure thing! ", "Okay, so ", "Happy to help. ", "Let me take a look... ", "Alright! ",
           "Hi there! ", "Thanks for asking! "]
LOOKED = ["I checked the household memory for {day} and ", "After going through the records, ",
          "From what I found in the household's log, ", "I definately double-checked this: ",
          "Based on the household records I pulled up, "]
NOTES = ["\n\n(Note: this is from the household's own records.)", "\n\nLet me know if you need anything else!",
         " Hope that helps!", "\n\n_Source: household memory._"]
REFUSALS_FRESH = ["As an AI assistant, I don't have access to your household's personal records.",
                  "I'm sorry, but I wasn't able to find enough information to answer this. Is there anything "
                  "else I can help with?",
                  "Unfortunately I can't determine that. Could you tell me which day you mean?",
                  "Apologies — I couldn't answer this reliably, so I'd rather not say.",
                  "I'd need more information to answer this question accurately."]
HEDGES_FRESH = ["\n\n⚠️ Low confidence: the records were ambiguous, so please verify before relying on this.",
                " That's my best guess, but honestly it could just as easily be something else.",
                " (I might be misreading the log here, so take this with a big grain of salt.)",
                "\n\nThat said, I couldn't confirm it, and it may well be wrong."]
GHOSTS_FRESH = ("Bartholomew", "Henrietta", "Cosimo", "Philippa", "Ambrose")
NOT_HOBBIES = ("chess", "surfing", "knitting", "rock climbing", "gaming", "fencing")
#: Devices no generated home has (checked against the home before use), for invented sources.
NO_DEVICES = (("front_door_camera", "front door camera"), ("hallway_motion_sensor", "hallway motion sensor"),
              ("smart_doorbell", "smart doorbell"), ("entry_keypad", "entry keypad"))
MADE_UP_FRESH = ("porch_light", "bathroom_fan", "hall_heater", "garden_sprinkler", "attic_light")


def clock_fresh(hhmm: str, style: int) -> str:
    """The fresh ways to write a time (none of clock12's or clock_held's)."""
    h, m = map(int, hhmm.split(":"))
    h12 = h % 12 or 12
    part = "at night" if h >= 21 or h < 5 else "in the evening" if h >= 17 else \
        "in the afternoon" if h >= 12 else "in the morning"
    said = f"{words(h)} {'hundred' if m == 0 else words(m) if m >= 10 else 'oh ' + words(m)}"
    return [f"{h12}:{m:02d} {'P.M.' if h >= 12 else 'A.M.'}", f"{h:02d}:{m:02d}:00", f"{h12}:{m:02d} {part}",
            f"{said} hours", f"{h:02d}.{m:02d}"][style % 5]


def decade_words(n: int) -> str:
    """'forties' for 40..49."""
    return "teens" if n // 10 == 1 else words(n // 10 * 10)[:-1] + "ies"


def role_plural(role: str) -> str:
    return "children" if role == "child" else role + "s"


def occupation(member: Row) -> str:
    m = re.search(r"-year-old (.+?) \(", member.get("persona", ""))
    return m.group(1) if m else member["role"]


def fresh_value(w: Writer, value: str) -> str:
    """A ground-truth value as the fresh shapes write it (a time or a temperature restyled)."""
    if re.fullmatch(r"\d{2}:\d{2}", value):
        return clock_fresh(value, w.rng.randrange(5))
    m = re.fullmatch(r"(-?\d+(?:\.\d+)?) ?°C", value)
    return w.pick([f"{m.group(1)} ℃", f"{m.group(1)} deg C", f"{float(m.group(1)):.1f} °C"]) if m else value


def by_name(w: Writer, name: str) -> Row:
    return next(m for m in w.view.members if m["name"] == name)


def value_shapes_fresh(w: Writer, truth: str) -> tuple[list[str], list[str], str]:
    """(correct phrasings, wrong values, a part-only answer) in the fresh shapes."""
    t, p, view = w.task, w.task.params, w.view
    template = t.template or ""
    name = p.get("name", "")
    first = view.first(name) if name else ""
    day = p.get("day", "")
    if template in ("first_on", "dishes", "last_out", "first_home"):
        wrong = [m["name"] for m in view.members if m["name"] != truth] + ([] if truth == NOBODY else [NOBODY])
        what = {"first_on": f"switched the {p.get('label')} on first", "dishes": f"started the {p.get('label')}",
                "last_out": f"was last out of the {p.get('room_name')}",
                "first_home": "was the first one home"}[template]
        if truth == NOBODY:
            return ([f"**Nobody.** No household member {what} on {day}.", "Looks like no one did!",
                     f"No one — none of the residents {what} that day.", "NOBODY"], wrong, "")
        m = by_name(w, truth)
        f, role = view.first(truth), m["role"]
        ok = [f"**{truth}**", f"{f} ({role})", f"That'd be {truth}, the {occupation(m)}.", truth.upper(),
              f"It was {f.lower()} — {f} {what} on {day}.", f"The one who {what} was {f}, the household's {role}."]
        same_role = [x for x in view.members if x["role"] == role]
        surname = truth.split()[-1] if " " in truth else ""
        part = f"One of the {role_plural(role)}." if len(same_role) > 1 else \
            (f"Someone from the {surname} family." if surname and sum(
                x["name"].endswith(" " + surname) for x in view.members) > 1 else "")
        return ok, [x for x in wrong if x != truth], part
    if template == "came_home":
        if not re.fullmatch(r"\d{2}:\d{2}", truth):
            ok = [f"{first} never made it home on {day}, according to the presence log.",
                  f"**{first} didn't come home** that day.", f"They were away all day on {day}: no arrival at all."]
            return ok, [clock_fresh(shift("18:00", w.rng.randrange(-90, 90, 5)), w.rng.randrange(5))], ""
        ok = [f"**{clock_fresh(truth, w.rng.randrange(5))}**", f"{first} got in at {clock_fresh(truth, 0)}.",
              f"The presence log shows {first} arriving at {clock_fresh(truth, 1)} on {day}.",
              f"{first} came through the door at {clock_fresh(truth, 2)}.", clock_fresh(truth, 3).capitalize(),
              f"Arrival time: {clock_fresh(truth, 4)}"]
        wrong = [clock_fresh(shift(truth, d), w.rng.randrange(5)) for d in (-65, -30, -10, 15, 40, 80)]
        h = int(truth[:2])
        h12 = h % 12 or 12
        return ok, wrong, w.pick([f"Between {h12} and {h12 % 12 + 1} {'p.m.' if h >= 12 else 'a.m.'}",
                                  "Around dinner time." if 17 <= h <= 20 else f"A little after {h12}.",
                                  f"Sometime in the {'evening' if h >= 17 else 'afternoon' if h >= 12 else 'morning'}, "
                                  "I believe."])
    if template in ("pref_temp", "temp_home"):
        mt = re.match(r"(-?\d+(?:\.\d+)?)", truth)
        if mt is None:
            return [truth], [], ""
        v = float(mt.group(1))
        num = f"{v:g}"
        fahr = round(v * 9 / 5 + 32)
        if template == "pref_temp":
            ok = [f"{num} ℃", f"{first} likes it at **{num} °C**.", f"{num} deg C",
                  f"{first}'s profile says {v:.1f} °C.", f"{num} degrees centigrade",
                  f"{num} °C (roughly {fahr} °F)", f"{num}ºC"]
        else:
            ok = [f"{num} ℃", f"About **{num} °C** when {first} got home.", f"{num} deg C",
                  f"The {p.get('room_name')} was at {v:.1f} °C (rounded) when {first} arrived.",
                  f"{num} degrees centigrade", f"{num}ºC"]
        step = 0.5 if template == "pref_temp" and not v.is_integer() else 1
        wrong = [f"{v + d * step:g} ℃" for d in (-3, -2, -1, 1, 2, 4)]
        level = int(v) % 10
        band = "low" if level < 4 else "mid" if level < 7 else "high"
        part = f"Somewhere in the {band} {decade_words(int(v))}." if v >= 10 else "Around ten degrees or a bit less."
        return ok, wrong, part
    if template == "age":
        n = int(truth)
        m = w.view.member(p["resident"]) if p.get("resident") else by_name(w, name)
        ok = [f"{n} y/o", f"{words(n).replace('-', ' ').capitalize()} years old.", f"**Age:** {n}",
              f"{first} is a {n}-year-old {m['role']}.", f"They're {n}.", f"{words(n).capitalize()} ({n})."]
        band = "early" if n % 10 < 4 else "mid" if n % 10 < 7 else "late"
        part = f"{first} is in their {band} {decade_words(n)}." if n >= 20 else f"Under {n // 5 * 5 + 5}."
        return ok, [f"{n + d} y/o" for d in (-7, -4, -2, -1, 2, 3, 6) if n + d > 0], part
    if template == "bedroom":
        rooms = {r["room_id"]: r.get("name", r["room_id"]) for r in view.rooms}
        nice = rooms.get(truth, truth)
        ok = [f"**{truth}**", f"{first}'s room is the {nice} (`{truth}`).", f"Looks like it's `{truth}`!",
              f"{truth} — that's the {nice.lower()}", f"room_id: {truth}"]
        return ok, [f"`{r}`" for r in rooms if r != truth], ""
    return [truth], [], ""


def extra_fresh(w: Writer, true: bool, rid: str | None = None) -> str:
    """A fact about the task's resident: true (helpful) or false (a made-up claim)."""
    rid = rid or w.task.params.get("resident")
    if not rid:
        return ""
    m = w.view.member(rid)
    fn, prefs = w.view.first(m["name"]), m["preferences"]
    hobbies = prefs.get("hobbies") or []
    if true:
        facts = [f" Fun fact: {fn} is {m['age']} and the household's {m['role']}.",
                 f"\n\nFor context, {fn} is the {occupation(m)} of the house."]
        if hobbies:
            facts.append(f" ({fn} enjoys {' and '.join(hobbies)}, by the way.)")
        if prefs.get("wake") and prefs.get("bed"):
            facts.append(f" {fn} usually wakes at {prefs['wake']} and goes to bed around {prefs['bed']}.")
        return w.pick(facts)
    fake = next(h for h in NOT_HOBBIES if h not in hobbies)
    off = w.pick([5, 8, 11] if m["age"] < 12 else [-9, -6, 5, 8])
    wake = shift(prefs["wake"], 75) if prefs.get("wake") else "05:15"
    return w.pick([f" Fun fact: {fn} is {m['age'] + off} years old.",
                   f" ({fn} is a big fan of {fake}, by the way.)",
                   f" For context, {fn} usually wakes at {wake}."])


def invented_source(w: Writer) -> tuple[str, str]:
    """(a cited source this home does not have, why it is false)."""
    names = {m["name"].split()[0] for m in w.view.members}
    ghost_name = next(n for n in GHOSTS_FRESH if n not in names)
    device = next(((d, label) for d, label in NO_DEVICES
                   if not any(d.split("_")[-1] in x for x in w.view.devices)), None)
    if device and w.rng.random() < 0.5:
        return f"the {device[1]} footage", f"cites a {device[1]}, which this home does not have"
    return f"{ghost_name}, the au pair", f"cites {ghost_name}, who is not a household member"


def reactive_fresh(w: Writer) -> None:
    t = w.task
    truth = t.answer or ""
    day = t.params.get("day", "")
    ok, wrong, part = value_shapes_fresh(w, truth)
    cf = t.counterfactual or {}
    if cf.get("changed"):   # the log and the profile show the actual value, not the hypothetical one
        ok = [a for a in ok if "presence log" not in a and "profile says" not in a]
    answer = fresh_value(w, truth)
    for a in w.some(ok, 2):
        w.add(a, "pass", "correct", "states the true answer and nothing contradicting it")
    framed = sentence(w.pick(ok))
    w.add(w.pick([w.pick(OPENERS) + framed, w.pick(LOOKED).format(day=day) + "the answer is " + answer + ".",
                  "Sorry for the wait! " + framed, framed + w.pick(NOTES)]),
          "pass", "correct", "states the true answer (with an opening, a note or what was looked up) and nothing "
                             "contradicting it")
    if cf:
        orig = fresh_value(w, cf.get("original_answer", ""))
        if cf.get("changed"):
            w.add(w.pick([f"In that hypothetical, it would be {answer}. (In reality it was {orig}.)",
                          f"**Hypothetically:** {answer}\n**Actually:** {orig}",
                          f"If that were the case, the answer would shift to {answer}, "
                          f"compared with the real {orig}."]),
                  "pass", "helpful", "gives the answer under the change; the actual one named only as the contrast")
            w.add(w.pick([f"That doesn't change anything — it's still {orig}.",
                          f"**{orig}** (the change wouldn't affect this)",
                          f"Even with that change, the answer stays at {orig}."]),
                  "fail", "ignored_change", "gives the actual answer; under the change it is different")
        else:
            w.add(w.pick([f"That change wouldn't affect this, so the answer remains {answer}.",
                          f"**{answer}** — the hypothetical is irrelevant here.",
                          f"Nothing changes: it's {answer} with or without that assumption."]),
                  "pass", "helpful", "states the true answer, unchanged by the hypothetical, and says so")
            if wrong:
                w.add(w.pick([f"Under that assumption the answer moves to {w.pick(wrong)}.",
                              f"That would push it to {w.pick(wrong)}."]),
                      "fail", "wrong", "claims the change moves the answer; it does not")
    else:
        extra = extra_fresh(w, True)
        if extra:
            w.add(sentence(w.pick(ok)) + extra, "pass", "helpful", "true answer plus a true fact about the member")
        extra = extra_fresh(w, False)
        if extra:
            w.add(sentence(w.pick(ok)) + extra, "fail", "fabricated",
                  "true answer plus a false claim about the member (the members' list says otherwise)")
    first_ok = w.pick(ok)
    if wrong:
        x = w.pick(wrong)
        w.add(w.pick(["**Nobody** did, from what I can see.", "Looks like no one did!"] if x == NOBODY else
                     ["Based on the records, it's **{x}**.", w.pick(OPENERS) + "{x}.",
                      "I checked, and the answer is {x}."]).format(x=x),
              "fail", "wrong", "states a value that is not the true answer")
        cands = [answer] + w.some(wrong, 2)
        w.rng.shuffle(cands)
        shapes = ["Most likely {a}, but {b} and {c} are also possible.", "Possible answers:\n- {a}\n- {b}\n- {c}",
                  "It's either {a}, {b} or {c}; hard to tell from the data."] if len(cands) == 3 else \
            ["Most likely {a}, but {b} is also possible.", "Possible answers:\n- {a}\n- {b}"]
        w.add(w.pick(shapes).format(a=cands[0], b=cands[1], c=cands[-1]),
              "fail", "stuffed", "several candidate answers instead of one")
        doubts = [f" Or possibly {w.pick(wrong)}; the entries were a bit confusing.",
                  f"\n\nEdit: on reflection it might actually be {w.pick(wrong)}."]
        w.add(sentence(first_ok) + w.pick(doubts + HEDGES_FRESH),
              "fail", "hedged", "the answer is taken back or put in doubt after it is given")
    if part:
        w.add(part, "fail", "partly_correct", "only part of the answer: not the exact value asked for")
    choices = [("copied", "repeats the question without answering it"), ("refusal", "gives no answer"),
               ("fabricated", "")]
    for kind, reason in w.some(choices, 2):
        if kind == "copied":
            w.add(w.pick([f"**Question:** {t.question}\n**Answer:** see the household records.",
                          f"You're asking: \"{t.question}\" Let me look into that for you!"]),
                  "fail", kind, reason)
        elif kind == "refusal":
            w.add(w.pick(REFUSALS_FRESH), "fail", kind, reason)
        else:
            source, why = invented_source(w)
            w.add(w.pick([f"{sentence(first_ok)} (Confirmed by {source}.)",
                          f"According to {source}: {first_ok}"]), "fail", kind, why)


def multiple_choice_fresh(w: Writer) -> None:
    t = w.task
    right = t.answer or "A"
    text = t.options[LETTERS.index(right)]
    letters = LETTERS[:len(t.options)]
    others = [c for c in letters if c != right]

    def opt(c: str) -> str:
        return t.options[LETTERS.index(c)]

    def chosen(c: str, body: str) -> list[str]:
        return [f"The correct answer is **{c}) {body}**.", f"{c} is correct: {body}.",
                f"Looking at the options, {c} ({body}) matches what I found in the records.", f"Answer → {c}",
                f"{c.lower()})", f"✅ {c}", f"Letter: {c}", f"My answer: {c} — {body}", f"Sure! The answer is {c}."]
    ok = chosen(right, text)
    for a in w.some(ok, 3):
        w.add(a, "pass", "correct", "one option chosen, the right one (its letter or its text)")
    if t.params.get("resident"):
        w.add(sentence(w.pick(ok[:4])) + extra_fresh(w, True), "pass", "helpful",
              "the right option plus a true fact about the member")
    x = w.pick(others)
    w.add(w.pick(chosen(x, opt(x))), "fail", "wrong", "one option chosen, a wrong one")
    y = w.pick(others)
    w.add(w.pick(chosen(right, opt(y))[:3]), "fail", "wrong",
          "letter and option text disagree: no single option chosen")
    pair = sorted([right, w.pick(others)])
    w.add(w.pick([f"{pair[0]} or {pair[1]}: both seem consistent with the data.",
                  f"{', '.join(letters)} (all plausible)", f"Could be {pair[0]}, could be {pair[1]}.",
                  f"I'd say {pair[0]}/{pair[1]}; hard to choose."]),
          "fail", "stuffed", "several options chosen")
    w.add(sentence(w.pick(ok[:4])) + w.pick([f" Though I'm torn between it and {x}, honestly.",
                                             f"\n\n(Low confidence: {x} is also a strong candidate.)"] + HEDGES_FRESH),
          "fail", "hedged", "the choice is put in doubt after it is made")
    if t.params.get("resident"):
        w.add(sentence(w.pick(ok[:4])) + extra_fresh(w, False), "fail", "fabricated",
              "the right option plus a false claim about the member (the members' list says otherwise)")
    if w.pick(["copied", "refusal"]) == "copied":
        w.add(w.pick(["Here are the options again:\n"
                      + "\n".join(f"({LETTERS[k]}) {o}" for k, o in enumerate(t.options)),
                      "\n".join(f"- **{LETTERS[k]}**: {o}" for k, o in enumerate(t.options))]),
              "fail", "copied", "repeats the options without choosing")
    else:
        w.add(w.pick(REFUSALS_FRESH + ["None of the listed options matches what I found, so I can't pick one."]),
              "fail", "refusal", "no option chosen")


def ranking_shapes_fresh(order: list[str], first: str) -> list[str]:
    """One ranking in the fresh shapes: the first seven give the whole order, the last the top three."""
    rest = order[3:]
    return ["Here's my ranking:\n```json\n" + json.dumps(order, indent=2) + "\n```",
            "Ranked (most → least useful):\n" + "\n".join(f"{k}. **{f}**" for k, f in enumerate(order, 1)),
            str(order),
            "\n".join(f"{k}. `{f}`" for k, f in enumerate(order, 1)),
            f"Based on {first}'s habits, I'd rank them like this: " + " → ".join(order),
            f"Sure! Top priority is {order[0]}, then {order[1]}; after that {order[2]}"
            + (f", and finally {', '.join(rest)}." if rest else "."),
            f"1. {order[0]}: the first thing {first} will want on walking in\n"
            + "\n".join(f"{k}. {f}" for k, f in enumerate(order[1:], 2)),
            f"Top 3: {order[0]}, {order[1]}, {order[2]}"]


def feature_recommendation_fresh(w: Writer) -> None:
    t = w.task
    relevant = t.relevant
    rest = [f for f in t.features if f not in relevant]
    w.rng.shuffle(rest)
    best = relevant + rest
    rid = t.params["resident"]
    first = w.view.first(w.view.member(rid)["name"])
    shapes = ranking_shapes_fresh(best, first)
    for a in w.some(shapes, 3):
        w.add(a, "pass", "correct", "the top-ranked feature is a relevant one (AP@1 = 1)")
    alt = [relevant[1], relevant[0], relevant[2]] + rest
    w.add(w.pick(ranking_shapes_fresh(alt, first)[:7]), "pass", "correct",
          "the top-ranked feature is a relevant one (AP@1 = 1), though not the one used most")
    w.add(w.pick([f"If I had to pick just one: **{relevant[0]}**.",
                  f"`{relevant[0]}` is the most useful one right now.",
                  f"Top 3: {relevant[0]}, {relevant[1]}, {relevant[2]}"]), "pass", "correct",
          "ranks only the top features; the first is relevant (AP@1 = 1)")
    shape, extra = w.pick(shapes[:7]), extra_fresh(w, True, rid)
    w.add(shape + ("\n\n" + extra.strip() if shape.endswith("```") else extra), "pass", "helpful",
          "a ranking with a relevant feature first, plus a true fact about the resident")
    junk = w.pick(rest)
    wrong = [junk] + [f for f in best if f != junk]
    w.add(w.pick(ranking_shapes_fresh(wrong, first)[:7]), "fail", "wrong", "the top-ranked feature is not relevant")
    w.add(w.pick(ranking_shapes_fresh(list(reversed(best)), first)[:7]), "fail", "wrong",
          "ranked least useful first: the top-ranked feature is not relevant")
    given = list(t.features)
    for kind in w.some(["copied", "stuffed", "hedged", "fabricated", "refusal"], 3):
        if kind == "copied":
            w.add(w.pick(["Here are the features you listed:\n"
                          + "\n".join(f"{k}. {c}" for k, c in enumerate(given, 1)),
                          "You asked me to rank these: " + json.dumps(given)]), "fail", kind,
                  "repeats the candidates in the order given: no ranking made")
        elif kind == "stuffed":
            w.add(w.pick(["Honestly, all of these could be useful; it depends on the day:\n"
                          + "\n".join(f"- {c}" for c in given),
                          f"**Tied for first:** {relevant[0]}, {junk}, {relevant[1]}\n**Then:** the rest"]),
                  "fail", kind, "no single top-ranked feature: several or all put first")
        elif kind == "hedged":
            w.add(w.pick(shapes[:7]) + w.pick([
                f"\n\nI'm not confident in this order, though: the top spot could just as well go to {junk}.",
                f"\n\n(Just a guess; I couldn't find much about {first}'s routine, so treat this as unreliable.)"]),
                "fail", kind, "the ranking is taken back after it is given")
        elif kind == "fabricated":
            made = next(d for d in MADE_UP_FRESH if d not in w.view.devices)
            w.add(w.pick(ranking_shapes_fresh([f"{made}.OnOff.On"] + best, first)[:7]), "fail", kind,
                  "the top-ranked feature is not a device feature of this home (made up)")
        else:
            w.add(w.pick(REFUSALS_FRESH + [f"I can't rank these without knowing more about {first}'s plans."]),
                  "fail", "refusal", "no ranking")


def in_words_fresh(check: Row, value: Any) -> str:
    device = check["device"].replace("_", " ")
    attr = check["attribute"]
    if attr == "OnOff.OnOff":
        return f"Turn {'on' if value else 'off'} the {device}"
    if attr == "LevelControl.CurrentLevel":
        return f"Bring the {device} to brightness {value} (~{round(value / 254 * 100)}%)"
    if attr == "Thermostat.SystemMode":
        return f"Switch the {device} to {MODE_WORDS.get(value, value)}"
    if attr.startswith("Thermostat."):
        return f"Set the {device} {'cooling' if 'Cooling' in attr else 'heating'} target to {value / 100:g} ℃"
    return f"Set the {device} fan to {value}%"


def realistic_wrong(check: Row, rng: random.Random) -> tuple[Any, str]:
    """A wrong value an agent plausibly writes: a level as a percentage, a setpoint in degrees."""
    v, attr = check["value"], check["attribute"]
    if attr == "LevelControl.CurrentLevel" and round(v / 254 * 100) != v:
        return round(v / 254 * 100), "a percentage where the level (0-254) is wanted"
    if attr.startswith("Thermostat.") and "Setpoint" in attr:
        return (v // 100 if v % 100 == 0 else v / 100), "degrees where hundredths of a degree are wanted"
    return wrong_value(check, rng), "a value the resident does not want"


def plan_generation_fresh(w: Writer) -> None:
    t = w.task
    checks = t.checks
    arrival = datetime.strptime(t.params["arrival"], "%Y-%m-%d %H:%M:%S")
    rid = t.params["resident"]
    member = w.view.member(rid)
    first = w.view.first(member["name"])
    pid = w.pick([f"welcome_{rid}", f"{rid}_comfort", "evening_arrival"])

    def plan(values: list[Any], start: datetime, numeric: bool = False, subset: list[Row] | None = None,
             split: bool = False) -> list[Row]:
        chosen = subset if subset is not None else checks
        steps = [step_for(c, v, numeric) for c, v in zip(chosen, values, strict=True)]
        when = f"{start:%Y-%m-%d %H:%M:%S}"
        if split:
            return [{"program_id": pid, "tool": "schedule_workflow", "args": {"start_time": when, "steps": [s]}}
                    for s in steps]
        return [{"program_id": pid, "tool": "schedule_workflow", "args": {"start_time": when, "steps": steps}}]

    def numbered(subset: list[Row], values: list[Any]) -> str:
        return "\n".join(f"{k}. {in_words_fresh(c, v)}" for k, (c, v) in enumerate(zip(subset, values, strict=True), 1))

    def text(steps: list[Row], words_of: str = "") -> str:
        body = json.dumps(steps, indent=2)
        if words_of:
            return f"Here's what I'll do for {first}:\n{words_of}\n\n```json\n{body}\n```"
        return w.pick([f"Sure! Here's a plan to get everything ready for {first}:\n\n```json\n{body}\n```\n\n"
                       "Let me know if you'd like any changes!",
                       f"I looked up {first}'s preferences with get_household_members and built this plan:\n"
                       f"```json\n{body}\n```",
                       f"```json\n{body}\n```\nLet me know if you want me to tweak anything.",
                       f"**Plan for {first}'s arrival**\n\n{body}"])

    truth = [c["value"] for c in checks]
    starts = [arrival - timedelta(minutes=m) for m in (4, 6, 8, 15)]
    for k in range(3):
        w.add(text(plan(truth, w.pick(starts), numeric=k == 1, split=k == 2)), "pass", "correct",
              "a runnable plan that leaves the values the resident sets on arrival in place by then")
    w.add(text(plan(truth, w.pick(starts)), numbered(checks, truth)), "pass", "correct",
          "the plan explained as numbered steps and given as runnable JSON; the values are in place by the arrival")
    thermo = [c for c in checks if c["attribute"].startswith(("Thermostat.", "FanControl."))]
    if thermo and len(thermo) < len(checks):
        lights = [c for c in checks if c not in thermo]
        now = datetime.strptime(t.at, "%Y-%m-%d %H:%M:%S")
        steps = [{"program_id": "climate_now", **step_for(c, c["value"], False)} for c in thermo] + \
            plan([c["value"] for c in lights], arrival - timedelta(minutes=6), False, lights)
        w.add(text(steps), "pass", "correct",
              f"climate set now ({now:%H:%M}), lights scheduled for arrival: every value in place by then")
    w.add(w.pick([f"Here's the plan:\n{numbered(checks, truth)}\n\nAll of this at about "
                  f"{clock_fresh(f'{arrival - timedelta(minutes=5):%H:%M}', 0)}, just before {first} gets in.",
                  f"Sure! Before {first} arrives ({clock_fresh(f'{arrival:%H:%M}', 2)}), I'd:\n"
                  + "\n".join(f"- {in_words_fresh(c, c['value']).lower()}" for c in checks)]),
          "fail", "prose", "a plan in prose: no executable steps, so its validity (Eq. 11) is 0; the task asks for "
                           "the JSON list of tool calls")
    bad = w.rng.randrange(len(checks))
    vals = list(truth)
    vals[bad], why = realistic_wrong(checks[bad], w.rng)
    w.add(text(plan(vals, w.pick(starts))), "fail", "wrong",
          f"sets {checks[bad]['device']} {checks[bad]['attribute']} to {vals[bad]!r}: {why} "
          f"(the resident sets {truth[bad]!r})")
    now_values = [w.view.current(c) for c in checks]
    leveled = {c["device"] for c in checks if c["attribute"] == "LevelControl.CurrentLevel"}
    missable = [c for c, v in zip(checks, now_values, strict=True) if v != c["value"]
                and not (c["attribute"] == "OnOff.OnOff" and c["value"] and c["device"] in leveled)]
    if len(checks) > 1 and missable:
        gone = w.pick(missable)
        keep = [c for c in checks if c is not gone]
        w.add(text(plan([c["value"] for c in keep], w.pick(starts), False, keep)), "fail", "partly_correct",
              f"leaves out {gone['device']} {gone['attribute']}, which the resident sets on arrival")
    if missable:
        gone = w.pick(missable)
        keep = [c for c in checks if c is not gone]
        claim = already(gone).replace(" °C", " ℃")
        body = f"```json\n{json.dumps(plan([c['value'] for c in keep], w.pick(starts), False, keep), indent=2)}\n```" \
            if keep else "So there's nothing to schedule!"
        w.add(f"Good news: I checked, and {claim}, so I've left that out.\n\n{body}",
              "fail", "fabricated", f"claims {gone['device']} {gone['attribute']} is already as wanted; "
                                    f"get_attribute shows {w.view.current(gone)!r}, not {gone['value']!r}")
    if any(v != c["value"] for c, v in zip(checks, now_values, strict=True)):
        late = arrival + timedelta(minutes=w.pick([100, 150]))
        w.add(text(plan(truth, late)), "fail", "wrong_time",
              "the values come long after the resident has arrived (some are not in place until then)")
    shown = "; ".join(f"{c['device'].replace('_', ' ')} {c['attribute'].split('.')[1]} = {v!r}"
                      for c, v in zip(checks, now_values, strict=True))
    start = arrival - timedelta(minutes=6)
    w.add(f"I checked the current state first ({shown}). Here's the plan, timed for "
          f"{clock_fresh(f'{start:%H:%M}', 2)}:\n```json\n{json.dumps(plan(truth, start), indent=2)}\n```",
          "pass", "helpful", "a runnable plan leaving the arrival values in place, with the values the tools show now")
    prefs = member["preferences"]
    liked = f"{prefs.get('temperature')} °C and light level {prefs.get('light_level')}"
    body = json.dumps(plan(truth, w.pick(starts)), indent=2)
    if prefs.get("temperature") is not None and prefs.get("light_level") is not None:
        w.add(f"From get_household_members: {first} prefers {liked}.\n```json\n{body}\n```", "pass", "helpful",
              "a runnable plan leaving the arrival values in place, with the resident's true preferences")
        w.add(f"From get_household_members: {first} prefers {prefs['temperature'] + 2:g} °C and light level "
              f"{(prefs['light_level'] + 60) % 254}.\n```json\n{body}\n```", "fail", "fabricated",
              "the plan is right but it misstates the resident's preferences (a false claim about the household)")
    for kind in w.some(["fabricated", "invalid", "stuffed", "hedged", "copied", "refusal"], 3):
        if kind == "fabricated":
            made = next(d for d in MADE_UP_FRESH if d not in w.view.devices)
            steps = plan(truth, w.pick(starts))
            steps[0]["args"]["steps"].insert(0, {"tool": "execute_command", "args": {
                "device_id": made, "endpoint_id": 1, "cluster_id": "OnOff", "command_id": "On", "args": {}}})
            w.add(text(steps), "fail", kind, f"a step on {made}, which this home does not have (not executable)")
        elif kind == "invalid":
            steps = [{"program_id": pid, "tool": w.pick(["set_device_state", "call_service", "control_light"]),
                      "args": {"entity": c["device"], "attribute": c["attribute"], "value": c["value"]}}
                     for c in checks]
            w.add(text(steps), "fail", kind, "steps name tools that do not exist: not executable (validity 0)")
        elif kind == "stuffed":
            a = json.dumps(plan(truth, w.pick(starts)), indent=2)
            b = json.dumps(plan(vals, w.pick(starts)), indent=2)
            w.add(f"Here are two options:\n\n**Option A**\n```json\n{a}\n```\n\n**Option B**\n```json\n{b}\n```\n\n"
                  f"Choose whichever suits {first} best.", "fail", kind, "two conflicting plans instead of one")
        elif kind == "hedged":
            w.add(text(plan(truth, w.pick(starts))) + w.pick([
                f"\n\nThat said, I'm really not sure this matches what {first} wants; I'd hold off on running it "
                "until they confirm.",
                "\n\nHonestly this is a guess, so it might be better not to change anything for now."]),
                "fail", kind, "the plan is withdrawn after it is given")
        elif kind == "copied":
            w.add(f"> {t.question}\n\nI'll plan this out!", "fail", kind, "repeats the task: no plan")
        else:
            w.add(w.pick(REFUSALS_FRESH + [f"I can't schedule anything without a confirmation from {first}."]),
                  "fail", "refusal", "no plan")


# ---- the fourth set of shapes (the third held-out part) ------------------------------------------
#: The third held-out part: this many tasks per category that no earlier part drew.
FOURTH_PER = 12
FOURTH_SEED = "personal-judge-labels/fourth"

REFUSALS_FOURTH = ["No data.", "I'd rather not guess about someone's personal routine.",
                   "That isn't something I can work out from here, I'm afraid.",
                   "Unable to answer: the records I can reach don't cover this."]
HEDGES_FOURTH = [" — I'd put maybe sixty per cent on that.", " (unverified; worth double-checking)",
                 "\n\nCan't rule out that I've misread the log, mind.", " At a guess, anyway."]
GHOSTS_FOURTH = ("Cressida", "Lysander", "Ottoline", "Peregrine", "Winifred")
PETS_FOURTH = (("parrot", "Mango"), ("tortoise", "Shelby"), ("ferret", "Pip"), ("rabbit", "Clover"))
ROOMS_FOURTH = ("conservatory", "wine cellar", "games room", "boot room", "sauna")
DEVICES_FOURTH = (("doorbell", "smart doorbell"), ("lock", "smart lock"), ("scale", "bathroom scale"))


def clock_fourth(day: str, hhmm: str, style: int) -> str:
    """The fourth part's ways to write a time: ISO, military, British."""
    h, m = map(int, hhmm.split(":"))
    return [f"{day}T{h:02d}:{m:02d}" if day else f"T{h:02d}:{m:02d}", f"{h:02d}{m:02d}h",
            f"{h % 12 or 12}.{m:02d}{'pm' if h >= 12 else 'am'}", f"{h:02d}:{m:02d} (24 h)"][style % 4]


def fourth_pet(w: Writer) -> tuple[str, str] | None:
    """(species, name) of a pet this household does not have."""
    pets = json.dumps(w.view.call("get_household_members").get("pets", [])).lower()
    return next((p for p in PETS_FOURTH if p[0] not in pets and p[1].lower() not in pets), None)


def made_up_fourth(w: Writer, rid: str | None) -> tuple[str, str]:
    """(a made-up claim of a new kind, why it is false): a pet, room, device, member, age, preference or bedtime."""
    options: list[tuple[str, str]] = []
    pet = fourth_pet(w)
    if pet:
        options.append((f" ({pet[1]} the {pet[0]} was about too, as usual.)",
                        f"mentions a pet {pet[0]}, {pet[1]}; this household has no such pet"))
    names = " ".join(r.get("name", "").lower() + " " + r["room_id"] for r in w.view.rooms)
    room = next((r for r in ROOMS_FOURTH if r.split()[0] not in names), None)
    if room:
        options.append((f" Most of that time was spent in the {room}.",
                        f"places someone in a {room}; the home has none"))
    dev = next((d for d in DEVICES_FOURTH if not any(d[0] in x for x in w.view.devices)), None)
    if dev:
        options.append((f" (Source: the {dev[1]} history.)", f"cites a {dev[1]}, which this home does not have"))
    member_names = {m["name"].split()[0] for m in w.view.members}
    ghost_name = next(n for n in GHOSTS_FOURTH if n not in member_names)
    options.append((f" {ghost_name}, the lodger, would know for sure.",
                    f"names {ghost_name}, who is not a household member"))
    if rid:
        m = w.view.member(rid)
        fn, prefs = w.view.first(m["name"]), m["preferences"]
        options.append((f" Bear in mind {fn} is only {max(1, m['age'] - 13) if m['age'] > 14 else m['age'] + 9}.",
                        f"states a wrong age for {fn} (the members' list says {m['age']})"))
        if prefs.get("temperature") is not None:
            options.append((f" {fn} likes the house at {prefs['temperature'] + 3:g} degrees, for reference.",
                            f"states a wrong preferred temperature for {fn}"))
        if prefs.get("bed"):
            options.append((f" {fn} tends to turn in at {shift(prefs['bed'], -95)}.",
                            f"states a wrong bedtime for {fn} (the members' list says {prefs['bed']})"))
    claim: tuple[str, str] = w.pick(options)
    return claim


def true_extra_fourth(w: Writer, rid: str | None) -> str:
    """A true extra fact, in the fourth shapes: the resident's age, bedroom or preferences, or a real pet."""
    facts: list[str] = []
    pets = w.view.call("get_household_members").get("pets", [])
    if rid:
        m = w.view.member(rid)
        fn, prefs = w.view.first(m["name"]), m["preferences"]
        facts += [f" {fn}, aged {m['age']}, is the household's {m['role']}.", f" {fn}'s bedroom id is {m['bedroom']}."]
        if prefs.get("temperature") is not None:
            facts.append(f" {fn} prefers rooms at {prefs['temperature']:g} degrees Celsius.")
        if prefs.get("wake"):
            facts.append(f" {fn} is normally up by {prefs['wake']}.")
    elif pets and pets[0].get("name"):
        facts.append(f" The household also has a pet called {pets[0]['name']}.")
    fact: str = w.pick(facts) if facts else ""
    return fact


def basics_fourth(w: Writer, truth: str) -> tuple[Callable[[str], str], list[str], str]:
    """(how a value is written, wrong values, a part-only answer) for the fourth shapes."""
    t, p = w.task, w.task.params
    day = p.get("day", "")
    if re.fullmatch(r"\d{2}:\d{2}", truth):
        h = int(truth[:2])
        return (lambda v: clock_fourth(day, v, w.rng.randrange(4)),
                [shift(truth, d) for d in (-55, -25, -12, 20, 45, 70)], f"Between {h:02d}:00 and {h + 1:02d}:00.")
    mt = re.fullmatch(r"(-?\d+(?:\.\d+)?) ?°C", truth)
    if mt:
        v = float(mt.group(1))
        step = 0.5 if not v.is_integer() else 1
        return (lambda x: w.pick([f"{x.split()[0]}C", f"{x.split()[0]} Celsius", f"{x.split()[0]} degrees C"]),
                [f"{v + d * step:g} °C" for d in (-3, -2, 2, 3)], "Low-to-mid twenties, degrees Celsius."
                if 21 <= v <= 25 else "")
    if (t.template or "") == "age" and truth.isdigit():
        n = int(truth)
        return (lambda x: f"aged {x}", [str(n + d) for d in (-5, -3, 4, 6) if n + d > 0], "")
    if (t.template or "") == "bedroom":
        rooms = [r["room_id"] for r in w.view.rooms]
        return (lambda x: f"room `{x}`", [r for r in rooms if r != truth], "")
    if truth == NOBODY:
        return (lambda x: "no one at all" if x == NOBODY else x, [m["name"] for m in w.view.members], "")
    if any(m["name"] == truth for m in w.view.members):
        names = [m["name"] for m in w.view.members if m["name"] != truth] + [NOBODY]
        return (lambda x: "no one at all" if x == NOBODY else x, names, "")
    return (lambda x: x, [], "")


def reactive_fourth(w: Writer) -> None:
    t = w.task
    truth = t.answer or ""
    rid = t.params.get("resident")
    day = t.params.get("day", "")
    say, wrong, part = basics_fourth(w, truth)
    cf = t.counterfactual or {}
    ok = [say(truth), f"{t.question.split('?')[0].strip()}? {say(truth)}.",
          f"| Question | Answer |\n|---|---|\n| as asked | {say(truth)} |",
          f"Reasoning: I went through the household's records{' for ' + day if day else ''} and matched the "
          f"entries to the question.\nFinal answer: {say(truth)}",
          f"Tool result, quoted: the records give {say(truth)}.\n=> {say(truth)}"]
    if cf.get("changed"):
        ok = ok[:3]
    for a in w.some(ok, 3):
        w.add(a, "pass", "correct", "states the true answer and nothing contradicting it")
    if cf:
        orig = cf.get("original_answer", "")
        if cf.get("changed"):
            w.add(w.pick([f"Hypothetical: {say(truth)}. Real: {say(orig)}.",
                          f"Under the supposition, {say(truth)} (as things stand, {say(orig)})."]),
                  "pass", "helpful", "gives the answer under the change; the actual one named only as the contrast")
            w.add(w.pick([f"Unaffected: {say(orig)}.", f"Final answer: {say(orig)} — the supposition is moot."]),
                  "fail", "ignored_change", "gives the actual answer; under the change it is different")
        else:
            w.add(w.pick([f"Unaffected by the supposition: {say(truth)}.",
                          f"Reasoning: the change touches nothing this depends on.\nFinal answer: {say(truth)}"]),
                  "pass", "helpful", "states the true answer, unchanged by the hypothetical, and says so")
            if wrong:
                w.add(f"With that supposition it becomes {say(w.pick(wrong))}.", "fail", "wrong",
                      "claims the change moves the answer; it does not")
    else:
        extra = true_extra_fourth(w, rid)
        if extra:
            w.add(sentence(say(truth)) + extra, "pass", "helpful", "true answer plus a true fact about the household")
    claim, why = made_up_fourth(w, rid)
    w.add(sentence(w.pick(ok[:2])) + claim, "fail", "fabricated",
          f"true answer beside a made-up claim: {why}")
    if wrong:
        x = w.pick(wrong)
        w.add(w.pick([say(x), f"Final answer: {say(x)}", f"| Answer |\n|---|\n| {say(x)} |"]),
              "fail", "wrong", "states a value that is not the true answer")
        cands = [truth] + w.some(wrong, 2)
        w.rng.shuffle(cands)
        w.add(w.pick([" / ".join(say(c) for c in cands),
                      "| Candidate |\n|---|\n" + "\n".join(f"| {say(c)} |" for c in cands)]),
              "fail", "stuffed", "several candidate answers instead of one")
    w.add(sentence(say(truth)) + w.pick(HEDGES_FOURTH), "fail", "hedged",
          "the answer is put in doubt after it is given")
    if part:
        w.add(part, "fail", "partly_correct", "only part of the answer: not the exact value asked for")
    if w.pick([True, False]):
        w.add(f"Restating the question: {t.question}", "fail", "copied", "repeats the question without answering it")
    else:
        w.add(w.pick(REFUSALS_FOURTH), "fail", "refusal", "gives no answer")


def multiple_choice_fourth(w: Writer) -> None:
    t = w.task
    right = t.answer or "A"
    letters = LETTERS[:len(t.options)]
    others = [c for c in letters if c != right]
    rid = t.params.get("resident")

    def opt(c: str) -> str:
        return t.options[LETTERS.index(c)]

    def chosen(c: str, body: str) -> list[str]:
        return [f"Final answer: ({c})", f"I'm going with option {c.lower()}.", f"| Choice |\n|---|\n| {c} |",
                f"Reasoning: I compared each option with the household's records.\nAnswer: {c}",
                f"{body}, which is option {c}.", f"[{c}] {body}"]
    ok = chosen(right, opt(right))
    for a in w.some(ok, 3):
        w.add(a, "pass", "correct", "one option chosen, the right one (its letter or its text)")
    extra = true_extra_fourth(w, rid)
    if extra:
        w.add(sentence(w.pick(ok[:2])) + extra, "pass", "helpful",
              "the right option plus a true fact about the household")
    x = w.pick(others)
    w.add(w.pick(chosen(x, opt(x))), "fail", "wrong", "one option chosen, a wrong one")
    y = w.pick(others)
    w.add(f"{opt(y)}, which is option {right}.", "fail", "wrong",
          "letter and option text disagree: no single option chosen")
    pair = sorted([right, x])
    w.add(w.pick([f"({pair[0]}) & ({pair[1]})", f"Final answer: {pair[0]}/{pair[1]}"]), "fail", "stuffed",
          "several options chosen")
    w.add(sentence(w.pick(ok[:2])) + w.pick(HEDGES_FOURTH), "fail", "hedged",
          "the choice is put in doubt after it is made")
    claim, why = made_up_fourth(w, rid)
    w.add(sentence(w.pick(ok[:2])) + claim, "fail", "fabricated", f"the right option beside a made-up claim: {why}")
    if w.pick([True, False]):
        w.add("Options restated: " + "; ".join(f"{LETTERS[k]} = {o}" for k, o in enumerate(t.options)),
              "fail", "copied", "repeats the options without choosing")
    else:
        w.add(w.pick(REFUSALS_FOURTH), "fail", "refusal", "no option chosen")


def ranking_shapes_fourth(order: list[str]) -> list[str]:
    """Whole rankings in the fourth shapes."""
    return [" > ".join(order), "| Rank | Feature |\n|---|---|\n" + "\n".join(f"| {k} | {f} |" for k, f in
                                                                          enumerate(order, 1)),
            "Reasoning: I weighed what the resident does on coming home against each feature.\nFinal answer: "
            + json.dumps(order), "\n".join(f"{k}) {f}" for k, f in enumerate(order, 1)),
            json.dumps(order, separators=(",", ":"))]


def feature_recommendation_fourth(w: Writer) -> None:
    t = w.task
    relevant = t.relevant
    rest = [f for f in t.features if f not in relevant]
    w.rng.shuffle(rest)
    best = relevant + rest
    rid = t.params["resident"]
    shapes = ranking_shapes_fourth(best)
    for a in w.some(shapes, 3):
        w.add(a, "pass", "correct", "the top-ranked feature is a relevant one (AP@1 = 1)")
    if len(relevant) > 1:
        alt = [relevant[1], relevant[0]] + relevant[2:] + rest
        w.add(w.pick(ranking_shapes_fourth(alt)), "pass", "correct",
              "the top-ranked feature is a relevant one (AP@1 = 1), though not the one used most")
    w.add(w.pick(shapes[:2]) + "\n\n" + true_extra_fourth(w, rid).strip(), "pass", "helpful",
          "a ranking with a relevant feature first, plus a true fact about the resident")
    junk = w.pick(rest) if rest else best[-1]
    w.add(w.pick(ranking_shapes_fourth([junk] + [f for f in best if f != junk])), "fail", "wrong",
          "the top-ranked feature is not relevant")
    w.add(w.pick(ranking_shapes_fourth(list(reversed(best)))), "fail", "wrong",
          "ranked least useful first: the top-ranked feature is not relevant")
    made = next(d for d in MADE_UP_FRESH[::-1] if d not in w.view.devices)
    w.add(w.pick(ranking_shapes_fourth([f"{made}.OnOff.On"] + best)), "fail", "fabricated",
          "the top-ranked feature is not a device feature of this home (made up)")
    claim, why = made_up_fourth(w, rid)
    w.add(w.pick(shapes[:2]) + "\n\n" + claim.strip(), "fail", "fabricated",
          f"a ranking beside a made-up claim: {why}")
    w.add(f"Joint first: {relevant[0]} = {junk}; the rest in any order.", "fail", "stuffed",
          "no single top-ranked feature: several put first")
    w.add(w.pick(shapes[:2]) + w.pick(HEDGES_FOURTH), "fail", "hedged", "the ranking is put in doubt after it is given")
    w.add(w.pick(REFUSALS_FOURTH), "fail", "refusal", "no ranking")


def plan_generation_fourth(w: Writer) -> None:
    t = w.task
    checks = t.checks
    arrival = datetime.strptime(t.params["arrival"], "%Y-%m-%d %H:%M:%S")
    rid = t.params["resident"]
    member = w.view.member(rid)
    first = w.view.first(member["name"])
    pid = w.pick([f"{rid}_homecoming", "arrival_prep"])

    def plan(values: list[Any], start: datetime) -> list[Row]:
        steps = [step_for(c, v, False) for c, v in zip(checks, values, strict=True)]
        return [{"program_id": pid, "tool": "schedule_workflow",
                 "args": {"start_time": f"{start:%Y-%m-%d %H:%M:%S}", "steps": steps}}]

    def text(steps: list[Row]) -> str:
        shown: str = w.pick([json.dumps(steps, separators=(",", ":")),
                       f"Reasoning: {first} arrives at {arrival:%H:%M}; everything is scheduled a few minutes "
                       f"before.\nFinal answer:\n{json.dumps(steps, indent=1)}",
                       f"Tool calls for {first}'s homecoming (24 h clock):\n{json.dumps(steps)}"])
        return shown

    truth = [c["value"] for c in checks]
    starts = [arrival - timedelta(minutes=m) for m in (3, 5, 7, 10)]
    for _ in range(3):
        w.add(text(plan(truth, w.pick(starts))), "pass", "correct",
              "a runnable plan that leaves the values the resident sets on arrival in place by then")
    w.add(f"{first} gets in at {arrival:%H.%M}. Programme: "
          + "; ".join(f"{c['device']} {c['attribute']} -> {c['value']!r}" for c in checks),
          "fail", "prose", "a plan in prose: no executable steps (validity 0); the task asks for the JSON list")
    bad = w.rng.randrange(len(checks))
    vals = list(truth)
    vals[bad], why = realistic_wrong(checks[bad], w.rng)
    w.add(text(plan(vals, w.pick(starts))), "fail", "wrong",
          f"sets {checks[bad]['device']} {checks[bad]['attribute']} to {vals[bad]!r}: {why} "
          f"(the resident sets {truth[bad]!r})")
    now_values = [w.view.current(c) for c in checks]
    if any(v != c["value"] for c, v in zip(checks, now_values, strict=True)):
        w.add(text(plan(truth, arrival + timedelta(minutes=w.pick([120, 180])))), "fail", "wrong_time",
              "the values come long after the resident has arrived (some are not in place until then)")
    body = json.dumps(plan(truth, w.pick(starts)), separators=(",", ":"))
    extra = true_extra_fourth(w, rid).strip()
    w.add(f"{extra}\n{body}", "pass", "helpful", "a runnable plan plus a true fact about the resident")
    claim, why = made_up_fourth(w, rid)
    w.add(f"{claim.strip()}\n{body}", "fail", "fabricated", f"a right plan beside a made-up claim: {why}")
    made = next(d for d in MADE_UP_FRESH[::-1] if d not in w.view.devices)
    steps = plan(truth, w.pick(starts))
    steps[0]["args"]["steps"].append({"tool": "execute_command", "args": {
        "device_id": made, "endpoint_id": 1, "cluster_id": "OnOff", "command_id": "On", "args": {}}})
    w.add(json.dumps(steps, separators=(",", ":")), "fail", "fabricated",
          f"a step on {made}, which this home does not have (not executable)")
    w.add(body + w.pick(HEDGES_FOURTH), "fail", "hedged", "the plan is put in doubt after it is given")
    w.add(w.pick(REFUSALS_FOURTH), "fail", "refusal", "no plan")


# ---- round 4: one set written as tool-using LLM agents reply, split by task into dev and held-out ----
#: Round 4: this many tasks per category that no earlier part drew (IG more, so that its held-out
#: tasks reach every difficulty); ROUND4_SEED also seeds the phrasing.
ROUND4_PER = {"IG": 30, "CF": 20, "MC": 20, "FR": 20, "PG": 20}
ROUND4_SEED = "personal-judge-labels/round4"


def round4_split(task_id: str) -> str:
    """A round-4 task's part: the same writer and shapes on both sides, split by whole task."""
    return "heldout" if int(hashlib.sha256(task_id.encode()).hexdigest(), 16) % 10 < 4 else "dev"


REFUSALS_R4 = ["I'm sorry, but I don't have enough information to answer that.",
               "I wasn't able to find that in the household records.",
               "Unfortunately the tools didn't return anything I could use for this question.",
               "I can't determine that. Could you give me more details?",
               "As an AI, I don't have access to personal information about household members.",
               "Hmm, the memory search came back empty, so I can't say.", "Not sure.",
               "I don't have that information right now. Would you like me to check something else?"]
HEDGES_R4 = [" I'm not completely sure, though — you may want to double-check.", " (low confidence)",
             "\n\nNote: the records were a bit unclear here, so this might not be accurate.",
             " But honestly I could be wrong.", " Probably — I couldn't fully confirm it.",
             "\n\nThat said, I'm only about 70% confident in this.", " If I'm reading the logs right, that is."]
OPENERS_R4 = ["", "", "", "Sure! ", "Certainly. ", "Of course! ", "Good question. ", "Let me check. ",
              "Okay — ", "Here's what I found: ", "I looked through the household memory. ",
              "After checking the records, ", "Based on the tool results, "]
CLOSERS_R4 = ["", "", "", " Let me know if you need anything else!", " Hope that helps!", " 😊",
              "\n\nIs there anything else you'd like to know?", " Anything else I can do?"]
TOOLS_R4 = ["search_household_memory", "get_household_members", "get_rooms"]


def clock_r4(hhmm: str, style: int) -> str:
    """A time as agents write it: 24 h, 12 h in its spellings, or with an 'at'."""
    h, m = map(int, hhmm.split(":"))
    twelve = f"{h % 12 or 12}:{m:02d}"
    return [f"{h:02d}:{m:02d}", f"{twelve} PM" if h >= 12 else f"{twelve} AM", f"{twelve} {'pm' if h >= 12 else 'am'}",
            f"{twelve} {'p.m.' if h >= 12 else 'a.m.'}", f"{h:02d}:{m:02d} ({twelve} {'PM' if h >= 12 else 'AM'})",
            f"{h:02d}:{m:02d}:00", f"{twelve}{'pm' if h >= 12 else 'am'}"][style % 7]


def say_r4(w: Writer, truth: str) -> tuple[Callable[[str], str], list[str], str]:
    """(how a value is written, drawn afresh per call; wrong values; a part-only answer)."""
    t = w.task
    if re.fullmatch(r"\d{2}:\d{2}", truth):
        h = int(truth[:2])
        return (lambda v: clock_r4(v, w.rng.randrange(7)), [shift(truth, d) for d in (-60, -30, -15, 15, 35, 90)],
                w.pick([f"Sometime in the {'morning' if h < 12 else 'afternoon' if h < 18 else 'evening'}.",
                        f"Around {h % 12 or 12} o'clock.", f"Between {h:02d}:00 and {h + 1:02d}:00."]))
    mt = re.fullmatch(r"(-?\d+(?:\.\d+)?) ?°C", truth)
    if mt:
        v = float(mt.group(1))
        step = 0.5 if not v.is_integer() else 1

        def temp(x: str) -> str:
            n = x.split()[0].replace("°C", "")
            return w.pick([f"{n} °C", f"{n}°C", f"{n} degrees Celsius", f"{n} degrees", f"{n} ℃", f"{n}C"])
        return temp, [f"{v + d * step:g} °C" for d in (-4, -2, -1, 1, 2, 4)], w.pick(
            ["Somewhere in the low twenties.", "It was fairly warm.", "A comfortable temperature."]
            if 20 <= v <= 24 else ["Fairly cool." if v < 20 else "Quite warm."])
    if (t.template or "") == "age" and truth.isdigit():
        n = int(truth)
        return (lambda x: w.pick([x, f"{x} years old", f"{x} years"]),
                [str(n + d) for d in (-4, -2, 1, 3, 7) if n + d > 0],
                w.pick([f"In their {n // 10 * 10}s." if n >= 20 else "A teenager." if n >= 13 else "A child."]))
    if (t.template or "") == "bedroom":
        rooms = [r["room_id"] for r in w.view.rooms]
        return (lambda x: w.pick([x, f"`{x}`", f"room {x}"]), [r for r in rooms if r != truth], "")
    names = [m["name"] for m in w.view.members]
    if truth == NOBODY or truth in names:
        def who(x: str) -> str:
            return w.pick(["nobody", "no one", "None of them"]) if x == NOBODY else x
        return who, [n for n in names if n != truth] + ([NOBODY] if truth != NOBODY else []), ""
    return (lambda x: x, [], "")


def wrap_r4(w: Writer, value: str, question: str, day: str = "", plain: bool = False) -> str:
    """One agent reply carrying `value` as its single answer, in a shape drawn per answer; `plain`:
    a sentence more can follow. A changed CF answer never says the records show it (they show
    the actual one)."""
    tool = w.pick(TOOLS_R4)
    q = question.rstrip("?").strip()
    plains = [f"{value}.", f"The answer is {value}.", f"That would be {value}.", f"It's {value}.", f"Answer: {value}."]
    if (w.task.counterfactual or {}).get("changed"):
        shapes = plains + [value, f"**{value}**", f'{{"answer": "{value}"}}', f"ANSWER: {value}",
                           f"In that case, it would be {value}.", f"Under that assumption: **{value}**"]
        core: str = w.pick(plains if plain else shapes)
        return core if plain or "\n" in core or core.startswith(("{", "ANSWER", "**")) else \
            (w.pick(OPENERS_R4[:9]) + core + w.pick(CLOSERS_R4)).strip()
    plains += [f"According to the records, it's {value}.", f"From the `{tool}` output: {value}.",
               f"Based on the data I retrieved, the answer is **{value}**."]
    if plain:
        plain_core: str = w.pick(plains)
        return (w.pick(OPENERS_R4[:9]) + plain_core).strip()
    shapes = [value, f"{value}.", f"The answer is {value}.", f"**{value}**", f"Answer: {value}",
              f"That would be {value}.", f"It's {value}.", f'{{"answer": "{value}"}}',
              f"I called `{tool}`{' for ' + day if day else ''} and went through the results.\n\nFinal answer: {value}",
              f"To answer \"{q}?\", I checked the household memory.\n\n**Answer:** {value}",
              f"Let me think step by step.\n1. Look up the relevant records{' for ' + day if day else ''}.\n"
              f"2. Find the matching entry.\n\nSo the answer is {value}.",
              f"According to the records, it's {value}.", f"- **Answer:** {value}\n- **Source:** household memory",
              f"Here's the result:\n\n> {value}", f"From the `{tool}` output: {value}.",
              f"Based on the data I retrieved, the answer is **{value}**.", f"ANSWER: {value}",
              f"{value} — that's what the household log shows.", f"Result → {value}"]
    core = w.pick(shapes)
    if "\n" in core or core.startswith(("{", "-", "*", "ANSWER", "Result", "Answer")):
        return core
    return (w.pick(OPENERS_R4) + core + w.pick(CLOSERS_R4)).strip()


def reactive_r4(w: Writer) -> None:
    t = w.task
    truth = t.answer or ""
    rid = t.params.get("resident")
    day = t.params.get("day", "")
    say, wrong, part = say_r4(w, truth)
    cf = t.counterfactual or {}

    def reply(x: str, plain: bool = False) -> str:
        return wrap_r4(w, say(x), t.question, day, plain)
    for _ in range(4 if not cf.get("changed") else 3):
        w.add(reply(truth), "pass", "correct", "states the true answer and nothing contradicting it")
    if cf:
        orig = cf.get("original_answer", "")
        if cf.get("changed"):
            w.add(w.pick([f"In that scenario the answer would be {say(truth)}. (In reality it was {say(orig)}.)",
                          f"If that were the case: {say(truth)}. Without the change it's {say(orig)}.",
                          f"**Hypothetical answer:** {say(truth)}\n\n(For comparison, the actual answer is "
                          f"{say(orig)}.)"]),
                  "pass", "helpful", "gives the answer under the change; the actual one named only as the contrast")
            w.add(w.pick([reply(orig), f"Looking at the records, it's {say(orig)}.",
                          f"The change doesn't matter here — the answer is still {say(orig)}."]),
                  "fail", "ignored_change", "gives the actual answer; under the change it is different")
        else:
            w.add(w.pick([f"That change wouldn't affect this. The answer is still {say(truth)}.",
                          f"Even with that hypothetical, nothing changes: {say(truth)}.",
                          f"The supposed change doesn't touch this question, so: **{say(truth)}**"]),
                  "pass", "helpful", "states the true answer, unchanged by the hypothetical, and says so")
            if wrong:
                w.add(f"With that change, the answer would become {say(w.pick(wrong))}.", "fail", "wrong",
                      "claims the change moves the answer; it does not")
    else:
        extra = true_extra_fourth(w, rid)
        if extra:
            w.add(reply(truth, True) + extra, "pass", "helpful", "true answer plus a true fact about the household")
    claim, why = made_up_fourth(w, rid)
    w.add(reply(truth, True) + claim, "fail", "fabricated", f"true answer beside a made-up claim: {why}")
    if wrong:
        w.add(reply(w.pick(wrong)), "fail", "wrong", "states a value that is not the true answer")
        cands = [truth] + w.some(wrong, w.pick([1, 2]))
        w.rng.shuffle(cands)
        w.add(w.pick([f"It could be {' or '.join(say(c) for c in cands)}.",
                      "Possible answers:\n" + "\n".join(f"- {say(c)}" for c in cands),
                      f"The records mention {', '.join(say(c) for c in cands)}, so one of those."]),
              "fail", "stuffed", "several candidate answers instead of one")
    w.add(reply(truth, True) + w.pick(HEDGES_R4), "fail", "hedged", "the answer is put in doubt after it is given")
    if part:
        w.add(part, "fail", "partly_correct", "only part of the answer: not the exact value asked for")
    w.add(w.pick(REFUSALS_R4), "fail", "refusal", "gives no answer")


def multiple_choice_r4(w: Writer) -> None:
    t = w.task
    right = t.answer or "A"
    letters = LETTERS[:len(t.options)]
    others = [c for c in letters if c != right]
    rid = t.params.get("resident")

    def opt(c: str) -> str:
        return t.options[LETTERS.index(c)]

    def chosen(c: str, plain: bool = False) -> str:
        plains = [f"The answer is {c}.", f"The correct option is {c}: {opt(c)}.", f"Option {c}.",
                  f"Looking at the options, {c} matches what the records show — {opt(c)}."]
        if plain:
            return str(w.pick(plains))
        return w.pick([c, f"{c}.", f"({c})", f"**{c}**", f"Answer: {c}", f"The answer is {c}.", f"{c}) {opt(c)}",
                       f"**{c}. {opt(c)}**", f"The correct option is {c}: {opt(c)}.", f"{opt(c)} ({c})",
                       f"I checked the household records.\n\nFinal answer: {c}", f'{{"answer": "{c}"}}',
                       f"Looking at the options, {c} matches what the records show — {opt(c)}.",
                       f"Let me reason through it: the records point to {opt(c)}.\n\n**Answer: {c}**",
                       f"Option {c}."])
    for _ in range(4):
        w.add(chosen(right), "pass", "correct", "one option chosen, the right one (its letter or its text)")
    extra = true_extra_fourth(w, rid)
    if extra:
        w.add(chosen(right, True) + extra, "pass", "helpful", "the right option plus a true fact about the household")
    w.add(chosen(w.pick(others)), "fail", "wrong", "one option chosen, a wrong one")
    pair = sorted([right, w.pick(others)])
    w.add(w.pick([f"{pair[0]} or {pair[1]}", f"Both {pair[0]} and {pair[1]} seem plausible.",
                  f"Answer: {pair[0]}, {pair[1]}", f"Either ({pair[0]}) or ({pair[1]})."]), "fail", "stuffed",
          "several options chosen")
    w.add(chosen(right, True) + w.pick(HEDGES_R4), "fail", "hedged", "the choice is put in doubt after it is made")
    claim, why = made_up_fourth(w, rid)
    w.add(chosen(right, True) + claim, "fail", "fabricated", f"the right option beside a made-up claim: {why}")
    w.add(w.pick(REFUSALS_R4), "fail", "refusal", "no option chosen")


def ranking_r4(w: Writer, order: list[str]) -> str:
    """A whole ranking in a shape drawn per answer."""
    shown: str = w.pick([
        json.dumps(order), json.dumps(order, indent=2), ", ".join(order),
        "\n".join(f"{k}. {f}" for k, f in enumerate(order, 1)),
        "Here's my ranking, most useful first:\n\n" + "\n".join(f"{k}. `{f}`" for k, f in enumerate(order, 1)),
        f"Based on the resident's routine, the most useful feature is {order[0]}.\n\nFull ranking: "
        + json.dumps(order),
        "```json\n" + json.dumps(order, indent=2) + "\n```",
        "Ranking:\n" + "\n".join(f"- {f}" for f in order),
        f"1. **{order[0]}**\n" + "\n".join(f"{k}. {f}" for k, f in enumerate(order[1:], 2))])
    return shown


def feature_recommendation_r4(w: Writer) -> None:
    t = w.task
    relevant = t.relevant
    rest = [f for f in t.features if f not in relevant]
    w.rng.shuffle(rest)
    best = relevant + rest
    rid = t.params["resident"]
    for _ in range(3):
        w.add(ranking_r4(w, best), "pass", "correct", "the top-ranked feature is a relevant one (AP@1 = 1)")
    if len(relevant) > 1:
        w.add(ranking_r4(w, [relevant[1], relevant[0]] + relevant[2:] + rest), "pass", "correct",
              "the top-ranked feature is a relevant one (AP@1 = 1), though not the one used most")
    w.add(ranking_r4(w, best) + "\n\n" + true_extra_fourth(w, rid).strip(), "pass", "helpful",
          "a ranking with a relevant feature first, plus a true fact about the resident")
    junk = w.pick(rest) if rest else best[-1]
    w.add(ranking_r4(w, [junk] + [f for f in best if f != junk]), "fail", "wrong",
          "the top-ranked feature is not relevant")
    made = next(d for d in MADE_UP_FRESH if d not in w.view.devices)
    w.add(ranking_r4(w, [f"{made}.OnOff.On"] + best), "fail", "fabricated",
          "the top-ranked feature is not a device feature of this home (made up)")
    claim, why = made_up_fourth(w, rid)
    w.add(ranking_r4(w, best) + "\n\n" + claim.strip(), "fail", "fabricated",
          f"a ranking beside a made-up claim: {why}")
    w.add(w.pick([f"Both {relevant[0]} and {junk} are equally useful; the rest don't matter much.",
                  f"Top picks (tied): {relevant[0]}, {junk}"]), "fail", "stuffed",
          "no single top-ranked feature: several put first")
    w.add(ranking_r4(w, best) + w.pick(HEDGES_R4), "fail", "hedged", "the ranking is put in doubt after it is given")
    w.add(w.pick(REFUSALS_R4), "fail", "refusal", "no ranking")


def plan_generation_r4(w: Writer) -> None:
    t = w.task
    checks = t.checks
    arrival = datetime.strptime(t.params["arrival"], "%Y-%m-%d %H:%M:%S")
    rid = t.params["resident"]
    first = w.view.first(w.view.member(rid)["name"])
    pid = w.pick([f"{rid}_arrival", "welcome_home", f"prep_for_{first.lower()}", "homecoming"])

    def plan(values: list[Any], start: datetime) -> list[Row]:
        steps = [step_for(c, v, w.pick([False, False, True])) for c, v in zip(checks, values, strict=True)]
        return [{"program_id": pid, "tool": "schedule_workflow",
                 "args": {"start_time": f"{start:%Y-%m-%d %H:%M:%S}", "steps": steps}}]

    def text(steps: list[Row]) -> str:
        shown: str = w.pick([
            json.dumps(steps), json.dumps(steps, indent=2), "```json\n" + json.dumps(steps, indent=2) + "\n```",
            f"{first} usually gets home around {arrival:%H:%M}, so I'll schedule everything shortly before.\n\n"
            "```json\n" + json.dumps(steps, indent=2) + "\n```",
            f"Here's the plan:\n{json.dumps(steps)}",
            f"Plan for {first}'s arrival ({clock_r4(f'{arrival:%H:%M}', w.rng.randrange(7))}):\n"
            + json.dumps(steps, indent=2) + "\n\nThis sets each device to what they usually choose."])
        return shown

    truth = [c["value"] for c in checks]
    starts = [arrival - timedelta(minutes=m) for m in (2, 5, 10, 15)]
    for _ in range(3):
        w.add(text(plan(truth, w.pick(starts))), "pass", "correct",
              "a runnable plan that leaves the values the resident sets on arrival in place by then")
    w.add(f"Before {first} arrives at {arrival:%H:%M}, I'd suggest:\n"
          + "\n".join(f"- {in_words_fresh(c, c['value'])}" for c in checks),
          "fail", "prose", "a plan in prose: no executable steps (validity 0); the task asks for the JSON list")
    bad = w.rng.randrange(len(checks))
    vals = list(truth)
    vals[bad], why = realistic_wrong(checks[bad], w.rng)
    w.add(text(plan(vals, w.pick(starts))), "fail", "wrong",
          f"sets {checks[bad]['device']} {checks[bad]['attribute']} to {vals[bad]!r}: {why} "
          f"(the resident sets {truth[bad]!r})")
    now_values = [w.view.current(c) for c in checks]
    if any(v != c["value"] for c, v in zip(checks, now_values, strict=True)):
        w.add(text(plan(truth, arrival + timedelta(minutes=w.pick([90, 150])))), "fail", "wrong_time",
              "the values come long after the resident has arrived (some are not in place until then)")
    body = text(plan(truth, w.pick(starts)))
    extra = true_extra_fourth(w, rid).strip()
    w.add(f"{extra}\n\n{body}", "pass", "helpful", "a runnable plan plus a true fact about the resident")
    claim, why = made_up_fourth(w, rid)
    w.add(f"{body}\n\n{claim.strip()}", "fail", "fabricated", f"a right plan beside a made-up claim: {why}")
    made = next(d for d in MADE_UP_FRESH if d not in w.view.devices)
    steps = plan(truth, w.pick(starts))
    steps[0]["args"]["steps"].append({"tool": "execute_command", "args": {
        "device_id": made, "endpoint_id": 1, "cluster_id": "OnOff", "command_id": "On", "args": {}}})
    w.add(text(steps), "fail", "fabricated", f"a step on {made}, which this home does not have (not executable)")
    w.add(body + w.pick(HEDGES_R4), "fail", "hedged", "the plan is put in doubt after it is given")
    w.add(w.pick(REFUSALS_R4), "fail", "refusal", "no plan")


ROUND4_WRITERS: dict[str, Callable[[Writer], None]] = {
    "IG": reactive_r4, "CF": reactive_r4, "MC": multiple_choice_r4,
    "FR": feature_recommendation_r4, "PG": plan_generation_r4}


WRITERS: dict[str, Callable[[Writer], None]] = {"IG": reactive, "CF": reactive, "MC": multiple_choice,
                                                "FR": feature_recommendation, "PG": plan_generation}


FOURTH_WRITERS: dict[str, Callable[[Writer], None]] = {
    "IG": reactive_fourth, "CF": reactive_fourth, "MC": multiple_choice_fourth,
    "FR": feature_recommendation_fourth, "PG": plan_generation_fourth}


def task_rows(base: Path, task: PersonalTask, fresh: bool = False, fourth: bool = False,
              round4: bool = False) -> list[Row]:
    w = Writer(task, View(base, task), fresh, fourth, round4)
    (ROUND4_WRITERS if round4 else FOURTH_WRITERS if fourth else WRITERS)[task.category](w)
    split = round4_split(task.id) if round4 else "dev"
    return [{"task_id": task.id, "answer": a, "label": label, "kind": kind, "reason": reason, "split": split}
            for a, label, kind, reason in w.rows]


def lines(base: Path, tasks: list[PersonalTask], fresh: bool = False, fourth: bool = False,
          round4: bool = False) -> list[str]:
    """The rows of `tasks`, answered in the fresh shapes when `fresh`, the fourth ones when
    `fourth`, round 4's (dev or held-out by task) when `round4`."""
    return [json.dumps(r, ensure_ascii=False, sort_keys=True) for t in tasks
            for r in task_rows(base, t, fresh, fourth, round4)]


def main(argv: list[str]) -> int:
    if len(argv) not in (1, 2):
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    source = Path(argv[1]) if len(argv) == 2 else TASKS
    first, fresh, fourth, round4 = draws(load_tasks(source))
    out = lines(source.parent, first) + lines(source.parent, fresh, fresh=True) + \
        lines(source.parent, fourth, fourth=True) + lines(source.parent, round4, round4=True)
    Path(argv[0]).write_text("".join(x + "\n" for x in out), encoding="utf-8")
    held = sum(round4_split(t.id) == "heldout" for t in round4)
    print(f"{len(out)} answers to {len(first + fresh + fourth) + len(round4) - held} dev and {held} held-out "
          f"tasks -> {argv[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
