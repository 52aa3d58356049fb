"""PersonalHomeBench's five task categories, generated from a simulated household.

Reactive (closed-form answers, computed by rules from the household's own history):
- IG, information grounding: a question answered from members and memory ("At what time did
  Ada come home on 2025-06-03?").
- CF, counterfactual reasoning: an IG question under one hypothetical change, in pairs: one
  whose answer changes and one whose answer does not. The answer is not reasoned out: the day is
  replayed from its midnight checkpoint with the change in force (`Household.counterfactual`)
  and the same rule reads the replayed memory.
- MC, multiple choice: an IG question with five options, one right.
Proactive:
- FR, feature recommendation: rank ten device features for a situation ("Ada comes home in 5
  minutes"); the three relevant ones are those the resident used on arriving on earlier days,
  ordered by on how many days, then how soon. Scored by AP@k (MAP@1 over a set) and RRS.
- PG, plan generation: a plan of tool calls preparing the home for a resident's arrival.
  Validity is the share of steps that run on a fork of the home (Eq. 10-11); the rule score is
  the share of the device values the resident would have set themselves on arrival (from the
  simulation: what they did set) that the plan achieves by then. A role-play LLM judge (the
  paper's RPJ, abs mode) adds per-member satisfaction scores when one is configured.

A rule (`SOLVERS`) reads only what the household tools return (members, and memory records as
search_household_memory gives them), so the reference solver can compute every reactive answer
through the tools.
"""
from __future__ import annotations

import json
import random
import re
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from bridge.backend import TIME_FORMAT
from scenarios.personal.household import ACT_PHRASES, Household
from scenarios.personal.households import load_spec
from twin.schema import load_jsonl

CATEGORIES = ("IG", "CF", "MC", "FR", "PG")
LETTERS = "ABCDE"
NOBODY = "nobody"
#: Where a resident's arrival ends, for FR relevance and PG checks (minutes after coming home).
ARRIVAL_MIN = 10
#: Device values a resident sets on arriving that a plan is checked against (cluster.attribute).
PLAN_CHECKED = ("OnOff.OnOff", "LevelControl.CurrentLevel", "Thermostat.SystemMode",
                "Thermostat.OccupiedCoolingSetpoint", "Thermostat.OccupiedHeatingSetpoint",
                "FanControl.PercentSetting")
LEVEL_TOLERANCE = 5


class PersonalTask(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str
    category: Literal["IG", "CF", "MC", "FR", "PG"]
    difficulty: Literal["easy", "medium", "hard"] | None = None
    household: str = Field(description="home file with residents in the task file's directory, or an "
                           "entry of the households pack there")
    at: str = Field(description="virtual time the household is lived to before the agent starts")
    question: str
    template: str | None = None
    params: dict[str, Any] = Field(default_factory=dict)
    answer: str | None = None
    options: list[str] = Field(default_factory=list)
    counterfactual: dict[str, Any] | None = None
    features: list[str] = Field(default_factory=list)
    relevant: list[str] = Field(default_factory=list)
    checks: list[dict[str, Any]] = Field(default_factory=list)

    @model_validator(mode="after")
    def _complete(self) -> PersonalTask:
        """What each category needs to be run and scored, so a bad line fails on loading."""
        need = {"IG": ("template", "answer"), "MC": ("template", "answer", "options"),
                "CF": ("template", "answer", "counterfactual"), "FR": ("features", "relevant"),
                "PG": ("checks",)}[self.category]
        missing = [name for name in need if not getattr(self, name)]
        if missing:
            raise ValueError(f"a {self.category} task needs {', '.join(missing)}")
        if self.template is not None and self.template not in SOLVERS:
            raise ValueError(f"template: unknown {self.template!r}; known: {', '.join(SOLVERS)}")
        if self.template is not None and self.difficulty != SOLVERS[self.template][1]:
            # A question's difficulty is its rule's: how many entities and records it reads.
            raise ValueError(f"difficulty: {self.template} questions are {SOLVERS[self.template][1]}, "
                             f"not {self.difficulty}")
        params = {"CF": ("day",), "FR": ("resident", "day"),
                  "PG": ("resident", "day", "arrival")}.get(self.category, ())
        if self.category == "CF" and not {"day", "edit"} <= set(self.counterfactual or {}):
            raise ValueError("counterfactual needs day and edit")
        missing = [name for name in params if name not in self.params]
        if missing:
            raise ValueError(f"params: a {self.category} task needs {', '.join(missing)}")
        return self


# ---- rules over what the tools return -----------------------------------------------------
Records = list[dict[str, Any]]
Members = list[dict[str, Any]]


def _name(members: Members, rid: str | None) -> str:
    return next((m["name"] for m in members if m["id"] == rid), NOBODY)


def _on_day(records: Records, day: str, kind: str | None = None) -> Records:
    return [r for r in records if r["time"].startswith(day) and (kind is None or r["kind"] == kind)]


def came_home_times(records: Records, rid: str, day: str) -> list[str]:
    return [r["time"] for r in _on_day(records, day, "presence") if r["actor"] == rid and "came home" in r["text"]]


def _age(records: Records, members: Members, p: dict[str, Any]) -> str:
    return str(next(m["age"] for m in members if m["id"] == p["resident"]))


def _came_home(records: Records, members: Members, p: dict[str, Any]) -> str:
    times = came_home_times(records, p["resident"], p["day"])
    return times[0][11:16] if times else "did not come home"


def _first_on(records: Records, members: Members, p: dict[str, Any]) -> str:
    for r in _on_day(records, p["day"], "change"):
        if r["device"] == p["device"] and "OnOff.OnOff = True" in r["text"] and r["actor"]:
            return _name(members, r["actor"])
    return NOBODY


def _dishes(records: Records, members: Members, p: dict[str, Any]) -> str:
    for r in _on_day(records, p["day"], "action"):
        if "OperationalState.Start" in r["text"] and r["device"] == p["device"]:
            return _name(members, r["actor"])
    return NOBODY


def _last_out(records: Records, members: Members, p: dict[str, Any]) -> str:
    room, who = p["room"], None
    for r in _on_day(records, p["day"], "presence"):
        if f"from {room} to" in r["text"] or (r["text"].endswith("left home") and r["room"] == room):
            who = r["actor"]
    return _name(members, who)


def _bedroom(records: Records, members: Members, p: dict[str, Any]) -> str:
    return str(next(m["bedroom"] for m in members if m["id"] == p["resident"]))


def _pref_temp(records: Records, members: Members, p: dict[str, Any]) -> str:
    return f"{next(m['preferences']['temperature'] for m in members if m['id'] == p['resident']):g} °C"


def _first_home(records: Records, members: Members, p: dict[str, Any]) -> str:
    """Of the members who came home that day, who came first (multi-hop: every member's day)."""
    times = sorted((t[0], m["id"]) for m in members if (t := came_home_times(records, m["id"], p["day"])))
    return _name(members, times[0][1]) if len(times) >= 2 and times[0][0] != times[1][0] else NOBODY


def _temp_home(records: Records, members: Members, p: dict[str, Any]) -> str:
    times = came_home_times(records, p["resident"], p["day"])
    if not times:
        return "did not come home"
    value = None
    for r in records:
        if r["time"] > times[0]:
            break
        if r["kind"] == "room" and r["room"] == p["room"] and " temperature " in r["text"]:
            value = float(r["text"].split()[2])
    return f"{round(value)} °C" if value is not None else "unknown"


#: template -> (rule, difficulty, question). The question's {names} come from params.
SOLVERS: dict[str, tuple[Callable[[Records, Members, dict[str, Any]], str], str, str]] = {
    "age": (_age, "easy", "How old is {name}?"),
    "bedroom": (_bedroom, "easy", "Which room (its room id) does {name} sleep in?"),
    "pref_temp": (_pref_temp, "easy", "What temperature does {name} like their rooms cooled to?"),
    "came_home": (_came_home, "medium", "At what time (HH:MM) did {name} come home on {day}?"),
    "first_on": (_first_on, "medium", "Who was the first to switch on the {label} on {day}?"),
    "dishes": (_dishes, "medium", "Who started the {label} on {day}?"),
    "last_out": (_last_out, "hard", "Who was the last to leave the {room_name} on {day}?"),
    "temp_home": (_temp_home, "hard", "What was the {room_name} temperature, to the nearest degree, "
                                      "when {name} came home on {day}?"),
    "first_home": (_first_home, "hard", "Of the household members who came home on {day}, who came home first?"),
}


def solve(template: str, records: Records, members: Members, params: dict[str, Any]) -> str:
    return SOLVERS[template][0](records, members, params)


def household_view(household: Household) -> tuple[Records, Members]:
    return household.memory, household.members()


# ---- answers and scores --------------------------------------------------------------------
def normalize(text: str) -> str:
    text = text.lower().replace("°c", " ").replace("degrees", " ")
    return " ".join(re.sub(r"[^\w:.]+", " ", text).split()).strip(" .")


def exact_match(predicted: str | None, truth: str) -> bool:
    """Eq. 1 with a normalisation: case, punctuation and units aside; a time or number matches
    when the answer's only time or number is the truth's."""
    if predicted is None:
        return False
    got, want = normalize(predicted), normalize(truth)
    if got == want:
        return True
    times = re.findall(r"\b\d{1,2}:\d{2}\b", got)
    if re.fullmatch(r"\d{1,2}:\d{2}", want):
        return len(set(times)) == 1 and times[0].zfill(5) == want
    numbers = re.findall(r"-?\d+(?:\.\d+)?", got)
    if re.fullmatch(r"-?\d+(?:\.\d+)?", want.split()[0] if want else ""):
        return len(set(numbers)) == 1 and float(numbers[0]) == float(want.split()[0])
    return bool(re.search(rf"\b{re.escape(want)}\b", got)) and len(got.split()) <= len(want.split()) + 6


def choice_of(answer: str | None, options: list[str]) -> str | None:
    """The option letter an MC answer picks (a lone letter, "B)", or one option's text)."""
    if answer is None:
        return None
    text = answer.strip()
    if len(set(re.findall(r"\b[A-E]\b", text))) > 1:
        return None   # several letters named: no choice (stuffing all of them must not pass)
    m = re.fullmatch(r"\(?([A-E])\)?[.):]?(?:\s.*)?", text, re.DOTALL)
    if m:
        return m.group(1)
    hits = [LETTERS[i] for i, o in enumerate(options) if normalize(o) == normalize(text)]
    return hits[0] if len(hits) == 1 else None


def ranking_of(answer: str | None, candidates: list[str]) -> list[str]:
    """The candidates in the order the answer names them (first mention counts)."""
    if not answer:
        return []
    found = [(answer.find(c), c) for c in candidates if c in answer]
    return [c for _, c in sorted(found)]


def average_precision(ranked: list[str], relevant: list[str], k: int) -> float:
    """AP@k (Eq. 7-8)."""
    hits, total = 0, 0.0
    for r, item in enumerate(ranked[:k], 1):
        if item in relevant:
            hits += 1
            total += hits / r
    return total / min(k, len(relevant)) if relevant else 0.0


def rank_deviation(ranked: list[str], relevant: list[str], n_candidates: int) -> int:
    """D_i of Eq. 12: how far each relevant item sits from its ideal rank (unranked: last + 1)."""
    return sum(abs((ranked.index(item) + 1 if item in ranked else n_candidates + 1) - j)
               for j, item in enumerate(relevant, 1))


# ---- feature relevance (FR) and arrival checks (PG) ----------------------------------------
def arrival_actions(records: Records, rid: str, day: str) -> Records:
    """The resident's actions within ARRIVAL_MIN minutes of coming home on `day`."""
    times = came_home_times(records, rid, day)
    if not times:
        return []
    start = datetime.strptime(times[0], TIME_FORMAT)
    end = (start + timedelta(minutes=ARRIVAL_MIN)).strftime(TIME_FORMAT)
    return [r for r in records if r["kind"] == "action" and r["actor"] == rid and times[0] <= r["time"] <= end]


def relevant_features(records: Records, rid: str, days: list[str]) -> list[str]:
    """Features the resident used on arriving, by how many of `days` (more first), then how
    soon after coming home on average, then name."""
    seen: dict[str, list[int]] = {}
    for day in days:
        acts = arrival_actions(records, rid, day)
        used: dict[str, int] = {}
        for order, r in enumerate(acts):
            used.setdefault(r["detail"]["feature"], order)
        for feature, order in used.items():
            seen.setdefault(feature, []).append(order)
    return sorted(seen, key=lambda f: (-len(seen[f]), sum(seen[f]) / len(seen[f]), f))


def arrival_checks(records: Records, rid: str, day: str) -> list[dict[str, Any]]:
    """The values the resident's own arrival left on devices (the last of each), to check a plan by."""
    times = came_home_times(records, rid, day)
    if not times:
        return []
    end = (datetime.strptime(times[0], TIME_FORMAT) + timedelta(minutes=ARRIVAL_MIN)).strftime(TIME_FORMAT)
    last: dict[tuple[str, int, str], Any] = {}
    for r in records:
        if r["kind"] == "change" and r["actor"] == rid and times[0] <= r["time"] <= end:
            d = r["detail"]
            if f"{d['cluster']}.{d['name']}" in PLAN_CHECKED:
                last[(r["device"], d["endpoint"], f"{d['cluster']}.{d['name']}")] = d["value"]
    return [{"device": dev, "endpoint": ep, "attribute": attr, "value": value}
            for (dev, ep, attr), value in sorted(last.items())]


# ---- generation --------------------------------------------------------------------------
def day_end(day: str) -> str:
    """The midnight after `day`: a counterfactual about one day is replayed to there."""
    return f"{(datetime.fromisoformat(day) + timedelta(days=1)):%Y-%m-%d %H:%M:%S}"


class Generator:
    """Draws tasks from one household (a home file or pack entry in `base`), lived `days` days."""

    def __init__(self, base: Path, name: str, days: int, seed: int):
        self.seed = seed
        self.file = name
        self.name = Path(name).stem.removeprefix("personal_")
        self.stem = Path(name).stem
        self.rng = random.Random(f"personal/{seed}/{self.stem}")
        self.household = Household.from_spec(load_spec(base, name), source=name)
        start = self.household.home.now
        self.days = [(start + timedelta(days=i)).date().isoformat() for i in range(days)]
        self.end = datetime.combine(start.date() + timedelta(days=days), datetime.min.time())
        self.at = self.end.strftime(TIME_FORMAT)
        self.full = self.household.fork()
        self.full.simulate(self.end)
        self.records, self.members = household_view(self.full)

    def _stream(self, category: str) -> None:
        """Each category draws from its own seeded stream, so asking a household for more of one
        (generate's top-up) leaves its draws of the others as they were."""
        self.rng = random.Random(f"personal/{self.seed}/{self.stem}/{category}")

    def _ask(self, template: str, params: dict[str, Any]) -> str:
        return SOLVERS[template][2].format(**params)

    def questions(self) -> list[tuple[str, dict[str, Any]]]:
        """Every (template, params) this household answers non-trivially, in a seeded order."""
        out: list[tuple[str, dict[str, Any]]] = []
        home = self.full.home
        labels = {d: home.device_info(d)["label"] for d in home.devices}
        lounge, kitchen = self.full.lounge, self.full.kitchen
        for m in self.members:
            who = {"resident": m["id"], "name": m["name"]}
            out += [("age", who), ("bedroom", who), ("pref_temp", who)]
        for day in self.days:
            out.append(("first_home", {"day": day}))
            for m in self.members:
                if came_home_times(self.records, m["id"], day):
                    out.append(("came_home", {"resident": m["id"], "name": m["name"], "day": day}))
                    out.append(("temp_home", {"resident": m["id"], "name": m["name"], "day": day,
                                              "room": lounge, "room_name": home.rooms[lounge].name.lower()}))
            for device in sorted(home.devices):
                kind = home.device_info(device)["type"]
                if kind in ("on_off_light", "dimmable_light", "tv", "air_conditioner"):
                    out.append(("first_on", {"device": device, "label": labels[device].lower(), "day": day}))
                if kind == "dishwasher":
                    out.append(("dishes", {"device": device, "label": labels[device].lower(), "day": day}))
            for room in dict.fromkeys((kitchen, lounge)):
                out.append(("last_out", {"room": room, "room_name": home.rooms[room].name.lower(), "day": day}))
        out = [(t, p) for t, p in out if solve(t, self.records, self.members, p) not in (NOBODY, "unknown")]
        self.rng.shuffle(out)
        # Round robin over the templates, so every category mixes questions and difficulties.
        by_template: dict[str, list[tuple[str, dict[str, Any]]]] = {}
        for item in out:
            by_template.setdefault(item[0], []).append(item)
        mixed = []
        while any(by_template.values()):
            for items in by_template.values():
                if items:
                    mixed.append(items.pop(0))
        return mixed

    def reactive(self, template: str, params: dict[str, Any], k: int, category: str) -> PersonalTask:
        answer = solve(template, self.records, self.members, params)
        task = PersonalTask(id=f"{category.lower()}-{self.name}-{k:03d}", category="IG",
                            difficulty=SOLVERS[template][1], household=self.file, at=self.at,
                            question=self._ask(template, params), template=template, params=params,
                            answer=answer)
        return task.model_copy(update={"category": category})   # MC and CF add their parts next

    def multiple_choice(self, template: str, params: dict[str, Any], k: int) -> PersonalTask | None:
        task = self.reactive(template, params, k, "MC")
        truth = task.answer or ""
        if template in ("first_on", "dishes", "last_out", "first_home"):
            pool = [m["name"] for m in self.members] + [NOBODY]
        elif template == "bedroom":
            pool = list(self.full.home.rooms)
        elif template == "came_home":
            base = datetime.strptime(truth, "%H:%M")
            pool = [(base + timedelta(minutes=d)).strftime("%H:%M") for d in (-45, -20, 20, 45, 70)]
        else:
            value, unit = float(truth.split()[0]), truth.partition(" ")[2]
            step = 0.5 if template == "pref_temp" else 1
            pool = [f"{value + d * step:g}" + (f" {unit}" if unit else "") for d in (-3, -2, -1, 1, 2, 3)]
        distractors = [o for o in dict.fromkeys(pool) if normalize(o) != normalize(truth)]
        self.rng.shuffle(distractors)
        options = [truth] + distractors[:len(LETTERS) - 1]
        if len(options) < 3:
            return None
        self.rng.shuffle(options)
        letter = LETTERS[options.index(truth)]
        listed = " ".join(f"{LETTERS[i]}) {o}" for i, o in enumerate(options))
        return task.model_copy(update={"question": f"{task.question} Options: {listed}. Answer with the letter.",
                                       "options": options, "answer": letter})

    def edits(self, template: str, params: dict[str, Any]) -> list[tuple[dict[str, Any], str]]:
        """Single-factor changes to the question's day, each with its wording, seeded order."""
        day = params["day"]
        out = []
        for m in self.members:
            for act in ("wake", "back", "dinner", "bed"):
                for minutes in (-50, 60, 120):
                    if act == "back" and not m["preferences"].get("back"):
                        continue
                    when = "later" if minutes > 0 else "earlier"
                    out.append(({"kind": "shift", "resident": m["id"], "act": act, "minutes": minutes, "day": day},
                                f"{m['name']} had {ACT_PHRASES[act]} {abs(minutes)} minutes {when} on {day} "
                                "than they did"))
            out.append(({"kind": "skip", "resident": m["id"], "act": "dinner", "day": day},
                        f"{m['name']} had not eaten dinner at home on {day} (staying where they were)"))
            pref = m["preferences"]["temperature"]
            out.append(({"kind": "temperature", "resident": m["id"], "value": pref - 2},
                        f"{m['name']} preferred their rooms at {pref - 2:g} °C"))
        self.rng.shuffle(out)
        # Likely to move the answer (the question's resident, an act it reads) and likely not,
        # alternating: a pair is found in a few replays.
        rid, acts = params.get("resident"), MOVES[template]
        def moving(e: tuple[dict[str, Any], str]) -> bool:
            return (e[0].get("act") or e[0]["kind"]) in acts
        likely = [e for e in out if moving(e) and rid in (None, e[0]["resident"])]
        alone = len(self.members) == 1
        unlikely = [e for e in out if not moving(e) and (e[0]["resident"] != rid or alone)]
        mixed = [e for pair in zip(likely, unlikely) for e in pair]
        return mixed + [e for e in out if e not in mixed]

    def counterfactuals(self, template: str, params: dict[str, Any], k: int) -> list[PersonalTask]:
        """A changed and an unchanged variant of one question, each decided by a replay."""
        base = self.reactive(template, params, k, "CF")
        found: dict[bool, PersonalTask] = {}
        for edit, condition in self.edits(template, params)[:MAX_REPLAYS]:
            replay = self.full.counterfactual(params["day"], edit, day_end(params["day"]))
            answer = solve(template, *household_view(replay), params)
            changed = normalize(answer) != normalize(base.answer or "")
            if changed in found or (changed and answer in (NOBODY, "unknown")):
                continue
            found[changed] = base.model_copy(update={
                "id": f"cf-{self.name}-{k:03d}{'c' if changed else 'u'}",
                "question": f"Suppose {condition}. {base.question}", "answer": answer,
                "counterfactual": {"day": params["day"], "edit": edit, "condition": condition,
                                   "original_answer": base.answer, "changed": changed}})
            if len(found) == 2:
                return [found[True], found[False]]
        return []

    def feature_recommendation(self, k: int) -> list[PersonalTask]:
        """One task per resident and day who came home, the days before it as their history."""
        out = []
        for i, day, m in ((i, d, m) for i, d in enumerate(self.days) if i for m in self.members):
            times = came_home_times(self.records, m["id"], day)
            ranked = relevant_features(self.records, m["id"], self.days[:i])
            if not times or len(ranked) < 3:
                continue
            relevant = ranked[:3]
            used = {r["detail"]["feature"] for r in self.records if r["kind"] == "action"}
            others = sorted(used - set(ranked))
            self.rng.shuffle(others)
            if len(others) < 7:
                continue
            candidates = relevant + others[:7]
            self.rng.shuffle(candidates)
            while candidates[:len(relevant)] == relevant:
                # Listed in the answer's order the question gives it away: a copy of the list
                # (which scores no ranking) would be the right answer.
                self.rng.shuffle(candidates)
            arrival = datetime.strptime(times[0], TIME_FORMAT)
            at = (arrival - timedelta(minutes=5)).strftime(TIME_FORMAT)
            listed = "\n".join(f"- {c}" for c in candidates)
            question = (f"It is {at}. {m['name']} will be home in about five minutes. Rank these device "
                        f"features (device.Cluster.Command or Attribute) from most to least useful for "
                        f"{m['name']} now, as a JSON list of the feature strings:\n{listed}")
            out.append(PersonalTask(id=f"fr-{self.name}-{k + len(out):03d}", category="FR", household=self.file,
                                    at=at, question=question, params={"resident": m["id"], "day": day},
                                    features=candidates, relevant=relevant))
        return out

    def plan_generation(self, k: int) -> list[PersonalTask]:
        """One task per resident and day (after the first) they came home, having come home on an
        earlier day too (how they like their arrival is in the memory)."""
        out = []
        for i, day, m in ((i, d, m) for i, d in enumerate(self.days) if i for m in self.members):
            times = came_home_times(self.records, m["id"], day)
            if not times or not any(arrival_actions(self.records, m["id"], d) for d in self.days[:i]):
                continue
            arrival = datetime.strptime(times[0], TIME_FORMAT)
            checks = arrival_checks(self.records, m["id"], day)
            if not checks:
                continue
            at = (arrival - timedelta(minutes=60)).strftime(TIME_FORMAT)
            question = (f"It is {at}. {m['name']} comes home at about {arrival:%H:%M}. Plan what the home "
                        f"should do for {m['name']} on arrival, as they like it. Answer (in finish) with a JSON "
                        "list of steps {\"program_id\": \"...\", \"tool\": \"...\", \"args\": {...}} using the "
                        "tools execute_command, write_attribute or schedule_workflow (to act at a later time).")
            out.append(PersonalTask(id=f"pg-{self.name}-{k + len(out):03d}", category="PG", household=self.file,
                                    at=at, question=question,
                                    params={"resident": m["id"], "day": day, "arrival": times[0]},
                                    checks=checks))
        return out

    def level_start(self) -> int:
        """Which difficulty this household's first question of a category has: households take
        turns (by their number in the pack), so the set holds the three in equal shares."""
        digits = re.findall(r"\d+", self.name)
        return int(digits[-1]) % len(LEVELS) if digits else self.rng.randrange(len(LEVELS))

    def candidates(self, counts: dict[str, int]) -> dict[str, list[list[PersonalTask]]]:
        """Up to counts[c] units of each category, best first (a unit: one task; a CF pair for CF).
        A household's reactive units go round the difficulties (easy, medium, hard) from
        `level_start`, IG, MC and CF each one step further on, taking another difficulty only
        where the household has no question of the one wanted."""
        questions = list(enumerate(self.questions(), 1))
        start = self.level_start()
        out: dict[str, list[list[PersonalTask]]] = {c: [] for c in CATEGORIES}

        def wanted(offset: int, n: int, pool: list[tuple[int, tuple[str, dict[str, Any]]]]) \
                -> list[tuple[int, tuple[str, dict[str, Any]]]]:
            """`pool` reordered: for each unit in turn a question of the next difficulty round."""
            left, order = list(pool), []
            for unit in range(len(pool)):
                # Past the units wanted (spares, for units that fail): the last unit's difficulty.
                level = LEVELS[(start + offset + min(unit, n - 1)) % len(LEVELS)] if n else None
                pick = next((q for q in left if level is None or SOLVERS[q[1][0]][1] == level), left[0])
                left.remove(pick)
                order.append(pick)
            return order

        firsts = wanted(0, counts["IG"], questions)[:counts["IG"]]
        out["IG"] = [[self.reactive(t, p, k, "IG")] for k, (t, p) in firsts]
        # MC: other questions than IG's where there are several.
        taken = {k for k, _ in firsts}
        self._stream("MC")
        pool = [q for q in reversed(questions) if q[0] not in taken] + [q for q in reversed(questions) if q[0] in taken]
        for k, (t, p) in wanted(1, counts["MC"], pool):
            if len(out["MC"]) >= counts["MC"]:
                break
            mc = self.multiple_choice(t, p, k)
            if mc is not None:
                out["MC"].append([mc])
        # CF: the templates a change moves most easily first within a difficulty (in a household
        # of one, who did something first or last can only become nobody).
        changeable = sorted(((k, (t, p if "day" in p else {**p, "day": self.days[-1]}))
                             for k, (t, p) in questions if t in MOVES),
                            key=lambda q: CF_ORDER.index(q[1][0]))
        pairs, tried = counts["CF"] // 2, 0
        self._stream("CF")
        for k, (t, p) in wanted(2, pairs, changeable):
            if len(out["CF"]) >= pairs or tried >= pairs + CF_SPARE_TRIES:
                break
            tried += 1
            pair = self.counterfactuals(t, p, k)
            if pair:
                out["CF"].append(pair)
        self._stream("FR")
        for cat, made in (("FR", self.feature_recommendation(1)), ("PG", self.plan_generation(1))):
            # The latest days first: the longest history behind them.
            out[cat] = [[t] for t in sorted(made, key=lambda t: t.at, reverse=True)[:counts[cat]]]
        return out


#: template -> the acts whose changes most likely move its answer (counterfactual search).
MOVES = {"pref_temp": ("temperature",), "came_home": ("back",), "temp_home": ("back",), "first_home": ("back",),
         "dishes": ("dinner",),
         "first_on": ("wake", "back", "dinner"), "last_out": ("bed", "dinner", "back")}
CF_ORDER = ("pref_temp", "came_home", "temp_home", "first_home", "last_out", "first_on", "dishes")
LEVELS = ("easy", "medium", "hard")
#: Questions tried beyond one per CF pair wanted, before a household gives fewer pairs.
CF_SPARE_TRIES = 3
#: Replays tried per counterfactual question before it is given up.
MAX_REPLAYS = 6
#: The paper's text split: 1,000 each of IG, MC, FR and PG, 2,000 CF (1,000 pairs).
PAPER_COUNTS = {"IG": 1000, "CF": 2000, "MC": 1000, "FR": 1000, "PG": 1000}


def per_household(counts: dict[str, int], households: int) -> dict[str, int]:
    """How many candidates of each category one household is first asked for, to draw `counts`
    over `households` (generate asks some for more where the households fall short)."""
    n = max(1, households)
    # A little spare; FR and PG more (some households have none: nobody goes out), cheap to draw.
    per = {c: -(-counts[c] // n) + (1 if n < 20 else 0) + (2 if c in ("FR", "PG") else 0) for c in CATEGORIES}
    # CF pairs cost replays: no spare; the top-up asks for a second pair where needed.
    per["CF"] = 2 * (-(-counts["CF"] // (2 * n)))
    return per


def _household_candidates(job: tuple[Path, str, int, int, dict[str, int]]) -> dict[str, list[list[PersonalTask]]]:
    base, name, days, seed, counts = job
    return Generator(base, name, days, seed).candidates(counts)


def _draw(work: list[tuple[Path, str, int, int, dict[str, int]]], jobs: int,
          done: Callable[[str], None] | None = None) -> list[dict[str, list[list[PersonalTask]]]]:
    """Each job's household candidates, in order; `jobs` processes share them."""
    if jobs > 1 and len(work) > 1:
        import multiprocessing
        with multiprocessing.get_context("spawn").Pool(min(jobs, len(work))) as pool:
            found = []
            for item, result in zip(work, pool.imap(_household_candidates, work), strict=True):
                found.append(result)
                if done is not None:
                    done(item[1])
            return found
    found = []
    for item in work:
        found.append(_household_candidates(item))
        if done is not None:
            done(item[1])
    return found


def _unit_size(category: str) -> int:
    return 2 if category == "CF" else 1


def generate(base: Path, households: list[str], seed: int, counts: dict[str, int], days: int = 2,
             jobs: int = 1, progress: Callable[[str], None] | None = None) -> list[PersonalTask]:
    """`counts[c]` tasks of each category (CF in changed/unchanged pairs) from `households` (names
    in `base`), spread over the households round robin: every household gives its best one of a
    category before any gives a second, and each difficulty first only up to a third of the
    category. Each household is first asked for its share (`per_household`); where they hold
    fewer of a category than wanted (some yield no counterfactual pair in the replays tried),
    households that gave all they were asked are asked for one more, in household order, until
    the count can be met. Fewer only where the households have no more material. `jobs`
    processes draw the households' candidates; the result does not depend on it."""
    per = per_household(counts, len(households))
    asked = [dict(per) for _ in households]
    found = _draw([(base, name, days, seed, per) for name in households], jobs, progress)
    while True:
        more: dict[int, set[str]] = {}
        for cat in CATEGORIES:
            size = _unit_size(cat)
            missing = counts[cat] - size * sum(len(f[cat]) for f in found)
            full = [i for i, f in enumerate(found) if size * len(f[cat]) >= asked[i][cat]]
            for i in full[:max(0, -(-missing // size))]:
                more.setdefault(i, set()).add(cat)
        if not more:
            break
        for i, cats in more.items():
            for cat in cats:
                asked[i][cat] += _unit_size(cat)
        again = sorted(more)
        # Each category draws from its own stream: the household's other draws come out as before.
        for i, result in zip(again, _draw([(base, households[i], days, seed, asked[i]) for i in again], jobs),
                             strict=True):
            found[i] = result
    tasks: list[PersonalTask] = []
    for cat in CATEGORIES:
        # Two rounds over the units, each round robin: the first keeps every difficulty within its
        # share (a third), the second fills what is left from the units not yet taken.
        units = [(depth, i, unit) for i, f in enumerate(found) for depth, unit in enumerate(f[cat])]
        units.sort(key=lambda u: (u[0], u[1]))
        share = -(-counts[cat] // len(LEVELS))
        taken: list[PersonalTask] = []
        used: set[tuple[int, int]] = set()
        levels: dict[str | None, int] = {}
        for capped in (True, False):
            for depth, i, unit in units:
                level = unit[0].difficulty
                if len(taken) >= counts[cat] or (depth, i) in used or \
                        (capped and level is not None and levels.get(level, 0) + len(unit) > share):
                    continue
                used.add((depth, i))
                levels[level] = levels.get(level, 0) + len(unit)
                taken += unit
        tasks += taken
    return tasks


# ---- files ---------------------------------------------------------------------------------
def dump_task(task: PersonalTask) -> str:
    return json.dumps(task.model_dump(mode="json", exclude_defaults=True), ensure_ascii=False, sort_keys=True)


def load_tasks(path: str | Path) -> list[PersonalTask]:
    """Tasks from a JSONL file; a bad line is a UserFileError naming the line and field."""
    return load_jsonl(path, PersonalTask, "(task)")


__all__ = ["CATEGORIES", "PersonalTask", "generate", "load_tasks", "dump_task", "solve"]
