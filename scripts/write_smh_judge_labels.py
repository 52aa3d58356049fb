"""Write SMH-Bench's independent judge labels: replies to every TC3 and TC7 task, each labelled
pass or fail by the category's definition (docs/judge-labels.md says how; the labels come from
the kind of reply, never from running a judge). Then two free-wording parts written later by
someone who never read the judges: shape sets A, B and C (each held out until measured; all
`dev2` now), then round 4, one writer split by task hash into `dev2` and `heldout2`.

    PYTHONPATH=. python scripts/write_smh_judge_labels.py OUT.jsonl [FREE_OUT.jsonl]

OUT is scenarios/smh/data/judge_labels.jsonl (template part), FREE_OUT
scenarios/smh/data/judge_labels_free.jsonl (dev2 and heldout2).

Byte-identical output: every task draws its shapes from `Random(task id)` (the free parts from
`Random(part:task id)`, round 4 from `Random(round4:task id)`).
"""
from __future__ import annotations

import hashlib
import json
import random
import sys
from collections.abc import Callable
from typing import Any

from bridge.twin_backend import TwinBackend
from scenarios.smh.language import LIGHT_TYPES
from scenarios.smh.tasks import SmhTask, build_home, load_tasks
from twin.home import Home

NUMBER_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")


def split(task_id: str) -> str:
    return "heldout" if int(hashlib.sha256(task_id.encode()).hexdigest(), 16) % 10 < 3 else "dev"


def row(task: SmhTask, kind: str, label: str, reason: str, **reply: Any) -> dict[str, Any]:
    return {"task_id": task.id, **reply, "label": label, "kind": kind, "reason": reason, "split": split(task.id)}


# ---- TC7: answers --------------------------------------------------------------------------------
def _yesno_state(query: str, value: bool) -> str:
    q = query.lower().rstrip("?")
    if q.startswith("is charging enabled on the "):
        return "charging is enabled" if value else "charging is switched off"
    if q.endswith(" locked"):
        return "it is locked" if value else "it is unlocked"
    if q.endswith(" charging right now"):
        return "it is charging" if value else "it is not charging at the moment"
    return "it is on" if value else "it is off"


def yesno_replies(task: SmhTask, rng: random.Random) -> list[dict[str, Any]]:
    value = bool(task.answer["value"])  # type: ignore[index]
    yes, no = ("Yes", "No") if value else ("No", "Yes")
    state, other = _yesno_state(task.query, value), _yesno_state(task.query, not value)
    out = [
        row(task, "correct", "pass", "states the reading", answer=rng.choice((f"{yes}.", f"{yes}, {state}.",
                                                                             f"{yes} - {state} right now."))),
        row(task, "correct", "pass", "states the reading without yes or no", answer=f"Right now {state}."),
        row(task, "wrong", "fail", "the opposite of the reading", answer=rng.choice((f"{no}.", f"{no}, {other}."))),
        row(task, "hedged", "fail", "takes the reading back",
            answer=rng.choice((f"{yes}, {state}, but I can't be sure, it may be the other way.",
                               f"{yes}... although actually {other}, I'm not certain."))),
        row(task, "stuffed", "fail", "both answers at once", answer="Yes or no, it could be either."),
        row(task, "refusal", "fail", "no reading given", answer=rng.choice(("Sorry, I can't check that.",
                                                                           "I'm unable to help with that."))),
        row(task, "raw", "fail", "tool output instead of an answer",
            answer=json.dumps({"ok": True, "value": task.answer["value"]})),  # type: ignore[index]
    ]
    return out


def _fmt(value: float) -> str:
    return f"{value:g}" if isinstance(value, int) or float(value).is_integer() else f"{value:.1f}"


def number_replies(task: SmhTask, rng: random.Random) -> list[dict[str, Any]]:
    value = task.answer["value"]  # type: ignore[index]
    q = task.query.lower()
    unit = " degrees" if "degrees?" in q and "warmer" not in q else "%" if "percent" in q else ""
    said = _fmt(value)
    out = [row(task, "correct", "pass", "states the value",
               answer=rng.choice((f"{said}{unit}.", f"It is {said}{unit}.",
                                  f"The reading is {said}{unit} right now.")))]
    counting = q.startswith("how many")
    if counting and value <= 10:
        word = NUMBER_WORDS[int(value)]
        text = "None." if value == 0 else f"{word.capitalize()}."
        out.append(row(task, "in_words", "pass", "the count in words", answer=text))
    if isinstance(value, float) and not value.is_integer() and unit == " degrees" and "temperature in" in q:
        fahrenheit = value * 9 / 5 + 32
        out.append(row(task, "converted", "pass", "the value in another unit, with the asked one",
                       answer=f"{value:.1f} °C, which is {fahrenheit:.1f} °F."))
        if abs(value - round(value)) > 0.2:
            out.append(row(task, "rounded", "pass", "rounded to whole degrees, as the question asks",
                           answer=f"About {round(value)} degrees."))
    step = 10 if unit == "%" else 2 if unit == " degrees" else 1
    wrong = value + step if value - step < 0 or rng.random() < 0.5 else value - step
    out += [
        row(task, "wrong", "fail", "a different value", answer=rng.choice((f"{_fmt(wrong)}{unit}.",
                                                                            f"It is {_fmt(wrong)}{unit}."))),
        row(task, "stuffed", "fail", "several candidate values",
            answer=f"Either {_fmt(value)}{unit} or {_fmt(value + step)}{unit}."),
        row(task, "hedged", "fail", "takes the value back",
            answer=f"{said}{unit}, but I'm not sure that reading is right, it could be something else."),
        row(task, "refusal", "fail", "no value given", answer=rng.choice(("I can't tell you that.",
                                                                           "Sorry, I don't know."))),
        row(task, "raw", "fail", "tool output instead of an answer", answer=json.dumps({"value": value})),
    ]
    return out


def room_replies(task: SmhTask, home: Home, rng: random.Random) -> list[dict[str, Any]]:
    right = task.answer["value"]  # type: ignore[index]
    name = (home.rooms[right].name or right).lower()
    others = sorted(r for r in home.rooms if r != right and (home.rooms[r].name or r).lower() not in name
                    and name not in (home.rooms[r].name or r).lower())
    other = (home.rooms[rng.choice(others)].name or "").lower()
    humidity = home.rooms[right].humidity
    return [
        row(task, "correct", "pass", "names the room", answer=rng.choice((f"The {name}.", f"It's the {name}.",
                                                                          f"The {name} is the most humid room."))),
        row(task, "correct", "pass", "names the room and its true humidity",
            answer=f"The {name}, at {humidity:.0f}% humidity."),
        row(task, "wrong", "fail", "another room", answer=f"The {other} is the most humid."),
        row(task, "stuffed", "fail", "two candidate rooms", answer=f"Either the {name} or the {other}."),
        row(task, "hedged", "fail", "takes the room back",
            answer=f"Probably the {name}, though the {other} may well be more humid."),
        row(task, "refusal", "fail", "no room given", answer="I'm not able to check humidity."),
    ]


# ---- TC3: clarifying questions ------------------------------------------------------------------
UNRELATED = ("Would you like to hear today's weather forecast?", "Shall I add milk to your shopping list?",
             "Do you want me to set a timer?", "What's your favourite song?")


def _room_of(task: SmhTask, home: Home) -> str:
    room = home.device_info(task.targets[0])["room"]
    return (home.rooms[room].name or room).lower()


def clarify_replies(task: SmhTask, home: Home, rng: random.Random) -> list[dict[str, Any]]:
    assert task.user is not None
    room = _room_of(task, home)
    device = home.device_info(task.targets[0])["name"].lower()
    slots = task.user.get("slots") or {}
    grounded = set(task.targets)
    unrelated_devices = sorted(d for d in home.devices.objects if d not in grounded
                               and home.device_info(d)["room"] != home.device_info(task.targets[0])["room"])
    stray = home.device_info(rng.choice(unrelated_devices))["name"].lower() if unrelated_devices else "front door"
    if slots:   # a setting is missing: ask for it
        word = slots["value"]["keywords"][0]
        good = rng.choice((f"What {word} would you like for the {device}?",
                           f"Which {word} should I set the {device} to?", f"Sure - what {word} do you want?"))
    else:
        good = rng.choice((f"What would you like me to change in the {room}?",
                           f"Which devices in the {room} should I adjust, and how?",
                           f"How can I help in the {room} - what should I do?"))
    out = [
        row(task, "targeted", "pass", "asks what the request leaves open", questions=[good]),
        row(task, "confirm_only", "fail", "confirms what was asked, not the missing setting",
            questions=[f"Shall I adjust the {device}?"]) if slots else
        row(task, "grounded_offer", "pass", "offers a change the request gives ground for",
            questions=[rng.choice((f"Shall I adjust the {device}?", f"Would you like me to change the {device}?"))]),
        row(task, "two_questions", "pass", "a greeting, then the open question",
            questions=["Happy to help!", good] if rng.random() < 0.5 else [good, "Anything else?"]),
        row(task, "unrelated", "fail", "asks about something else", questions=[rng.choice(UNRELATED)]),
        row(task, "baseless_guess", "fail", "confirms a guess the request gives no ground for",
            questions=[rng.choice((f"Shall I turn off the {stray}?", f"Do you want me to use the {stray}?"))]),
        row(task, "not_a_question", "fail", "tells instead of asking",
            questions=[rng.choice(("OK, I'll take care of it.", "Done.", "Working on it now."))]),
        row(task, "none", "fail", "nothing asked", questions=[]),
    ]
    return out


def replies(task: SmhTask) -> list[dict[str, Any]]:
    rng = random.Random(task.id)
    if task.category == "TC3":
        return clarify_replies(task, build_home(task), rng)
    kind = task.answer["kind"]  # type: ignore[index]
    if kind == "yesno":
        return yesno_replies(task, rng)
    if kind == "room":
        return room_replies(task, build_home(task), rng)
    return number_replies(task, rng)


# ---- free wording: what a reader sees in the task's home -------------------------------------------
# Written after the template part, without reading any judge: each reply is a shape an LLM agent
# writes, labelled from the task, the home as the tools show it and the category's definition.
ONES = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
        "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen")
TENS = ("", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety")


def words(n: int, joiner: str = "-") -> str:
    """0..100 in English words ("twenty-one", or "twenty one" with joiner " ")."""
    if n == 100:
        return "one hundred"
    if n < 20:
        return ONES[n]
    return TENS[n // 10] + (joiner + ONES[n % 10] if n % 10 else "")


def decimal_words(value: float, joiner: str = "-") -> str:
    whole, tenth = int(value), round(value * 10) % 10
    return words(whole, joiner) + (f" point {ONES[tenth]}" if tenth else "")


def free_split(task: SmhTask) -> str:
    """heldout2 lies on the old held-out tasks, dev2 on old dev ones: a rule tuned on dev2 never
    sees a heldout2 task or shape."""
    return "heldout2" if split(task.id) == "heldout" else "dev2"


def free_draw(tasks: list[SmhTask]) -> list[SmhTask]:
    """The free parts' tasks, in file order: a seeded draw of 42 old-dev tasks per category, by
    subcategory (TC3) and answer kind (TC7) (dev2), then every old held-out TC3 and TC7 task
    (heldout2)."""
    judged = [t for t in tasks if t.category in ("TC3", "TC7")]
    rng = random.Random("smh-free-wording")
    dev2 = []
    for cat, strata in (("TC3", {"state_ambiguity": 14, "scene_ambiguity": 14, "slot_missing": 14}),
                        ("TC7", {"yesno": 8, "room": 7, "number": 27})):
        pool = [t for t in judged if t.category == cat and split(t.id) == "dev"]
        chosen: set[str] = set()
        for stratum, n in strata.items():   # every subcategory and answer kind in fair share
            chosen |= {t.id for t in rng.sample([t for t in pool if stratum in (
                t.subcategory, (t.answer or {}).get("kind"))], n)}
        dev2 += [t for t in pool if t.id in chosen]
    return dev2 + [t for t in judged if split(t.id) == "heldout"]


def fresh_draw(tasks: list[SmhTask]) -> list[SmhTask]:
    """Set C's tasks (heldout2 until measured, dev2 now), in file order: a seeded draw among the old-dev TC3 and
    TC7 tasks free_draw did not take, by subcategory (TC3) and answer kind (TC7), TC7 the larger."""
    taken = {t.id for t in free_draw(tasks)}
    rng = random.Random("smh-free-wording/heldout3")
    out = []
    for cat, strata in (("TC3", {"state_ambiguity": 10, "scene_ambiguity": 10, "slot_missing": 10}),
                        ("TC7", {"yesno": 6, "room": 8, "number": 22})):
        pool = [t for t in tasks if t.category == cat and split(t.id) == "dev" and t.id not in taken]
        chosen: set[str] = set()
        for stratum, n in strata.items():
            stratum_pool = [t for t in pool if stratum in (t.subcategory, (t.answer or {}).get("kind"))]
            chosen |= {t.id for t in rng.sample(stratum_pool, min(n, len(stratum_pool)))}
        out += [t for t in pool if t.id in chosen]
    return out


class Reader:
    """The task's home in its start state, read as the agent's tools show it."""

    def __init__(self, task: SmhTask):
        self.task, self.home = task, build_home(task)
        self.backend = TwinBackend(self.home)
        self.names = {d: self.home.device_info(d)["name"].lower() for d in self.home.devices.objects}
        self.by_name = {n: d for d, n in self.names.items()}

    def read(self, dev: str, cluster: str, attribute: str) -> Any:
        try:
            return self.backend.read_attribute(dev, None, cluster, attribute)["value"]
        except Exception:   # the device has no such cluster: nothing to read
            return None

    def room(self, room_id: str) -> str:
        return (self.home.rooms[room_id].name or room_id).lower()

    def room_of(self, dev: str) -> str:
        return str(self.home.device_info(dev)["room"])

    def temp(self, room_id: str) -> float:
        return round(self.home.rooms[room_id].temperature, 1)

    def humidity(self, room_id: str) -> float:
        return round(self.home.rooms[room_id].humidity, 1)

    def device_in(self, text: str) -> str | None:
        """The device the question names (the longest name it contains)."""
        found = [n for n in self.by_name if f"the {n} " in text.lower() or f"the {n}?" in text.lower()]
        return self.by_name[max(found, key=len)] if found else None

    def room_in(self, text: str) -> str | None:
        found = [r for r in self.home.rooms if f"the {self.room(r)} " in text.lower()
                 or f"the {self.room(r)}," in text.lower()]
        return max(found, key=lambda r: len(self.room(r))) if found else None

    def lights_on(self) -> list[str]:
        return sorted(d for d in self.names if self.home.devices.objects[d].type.key in LIGHT_TYPES
                      and self.read(d, "OnOff", "OnOff"))

    def lights_off(self) -> list[str]:
        return sorted(d for d in self.names if self.home.devices.objects[d].type.key in LIGHT_TYPES
                      and not self.read(d, "OnOff", "OnOff"))


class Query:
    """A TC7 question as a reader sees it: the answer, its unit and a true fact beside it with a
    false twin (the 'helpful extra' and the 'invented' one)."""

    def __init__(self, task: SmhTask, r: Reader, rng: random.Random):
        assert task.answer is not None
        self.kind, self.value = task.answer["kind"], task.answer["value"]
        q = task.query.lower()
        self.unit = "C" if "in degrees" in q else "%" if "in percent" in q else ""
        self.counting = q.startswith("how many")
        self.device = r.device_in(task.query) if not self.counting and self.kind != "room" else None
        self.place = r.room_in(task.query)
        self.state = ""   # yes/no: what is asked about, in words ("locked", "on", "charging")
        if self.kind == "yesno":
            self.state = ("charging enabled" if q.startswith("is charging enabled") else "locked" if
                          q.endswith(" locked?") else "charging" if "charging right now" in q else "on")
        self.subject = r.names[self.device] if self.device else r.room(self.place) if self.place else "home"
        # a true extra and a false one, as (what, fact) pairs a reply puts in its own words
        if q.startswith("how many lights"):
            on = [r.names[d] for d in r.lights_on()]
            assert len(on) == self.value, task.id
            off = [r.names[d] for d in r.lights_off()]
            self.true_extra = ("lights", on)
            self.false_extra = ("lights", sorted(on + [rng.choice(off)]) if off else on + ["porch light"])
        elif q.startswith("how many devices"):
            assert self.place is not None
            here = sorted(r.names[d] for d in r.names if r.room_of(d) == self.place)
            assert len(here) == self.value, task.id
            fake = f"{r.room(self.place)} floor lamp"
            assert fake not in r.by_name
            self.true_extra, self.false_extra = ("devices", here), ("devices", sorted(here + [fake]))
        elif q.startswith("how many rooms are warmer"):
            t = int(q.split("warmer than ")[1].split()[0])
            warm = [(r.room(x), r.temp(x)) for x in r.home.rooms if r.temp(x) > t]
            cool = [(r.room(x), r.temp(x)) for x in r.home.rooms if r.temp(x) <= t]
            self.true_extra = ("temps", warm or cool[:2])
            if cool:
                name, temp = rng.choice(cool)
                lie = (name, round(t + 0.8, 1)) if warm else (name, round(temp + 3.0, 1))
                self.false_extra = ("temps", (warm + [lie]) if warm else [lie])
            else:
                self.false_extra = ("temps", [(warm[0][0], round(t - 1.2, 1))] + warm[1:])
        elif self.kind == "room":
            self.true_extra = ("humidity", [(r.room(self.value), r.humidity(self.value))])
            self.false_extra = ("humidity", [(r.room(self.value), round(r.humidity(self.value) + 7.0, 1))])
        elif self.place is not None and self.device is None:   # a room's temperature: its humidity beside
            self.true_extra = ("humidity", [(r.room(self.place), r.humidity(self.place))])
            self.false_extra = ("humidity", [(r.room(self.place), round(r.humidity(self.place) + 9.0, 1))])
        else:   # a device: the temperature of its room beside
            assert self.device is not None, task.id
            home_room = r.room_of(self.device)
            self.true_extra = ("temps", [(r.room(home_room), r.temp(home_room))])
            self.false_extra = ("temps", [(r.room(home_room), round(r.temp(home_room) + 2.6, 1))])
        # a value that is not the reading, for wrong, guessed and stuffed replies
        if self.kind == "number":
            step = 10 if self.unit == "%" else 1.5 if self.unit == "C" else 1
            up = self.value - step < 0 or (rng.random() < 0.5 and not (self.unit == "%" and self.value + step > 100))
            self.other = self.value + step if up else self.value - step
            if self.unit == "C" and not float(self.value).is_integer():
                self.other = round(self.other, 1)
        elif self.kind == "room":
            rooms = sorted(x for x in r.home.rooms if x != self.value and r.room(x) not in r.room(self.value)
                           and r.room(self.value) not in r.room(x))
            self.other = rng.choice(rooms)
            self.value_name, self.other_name = r.room(self.value), r.room(self.other)
        else:
            self.other = not self.value


class Ask:
    """A TC3 request as a reader sees it: the room, the device meant, what is left open."""

    def __init__(self, task: SmhTask, r: Reader, rng: random.Random):
        assert task.user is not None
        self.sub = task.subcategory
        self.target = task.targets[0]
        self.device = r.names[self.target]
        self.room_id = r.room_of(self.target)
        self.room = r.room(self.room_id)
        slots = task.user.get("slots") or {}
        self.slot = slots["value"]["keywords"][0] if slots else ""
        mine = [p for p in task.goal if p["device_id"] == self.target]
        self.cluster, self.goal_on = mine[-1]["cluster_id"], mine[0]["value"]
        self.is_on = r.read(self.target, "OnOff", "OnOff")   # None: the device has no on/off
        strays = sorted(d for d in r.names if r.room_of(d) != self.room_id and d not in task.targets)
        self.stray = r.names[rng.choice(strays)]
        self.stray_room = r.room(r.room_of(r.by_name[self.stray]))
        fake = f"{self.room} ceiling fan" if "fan" not in self.device else f"{self.room} reading lamp"
        self.fake = fake if fake not in r.by_name else f"{self.room} smart blinds"
        assert self.fake not in r.by_name
        self.everything = sorted({r.names[d] for d in r.names})[:8]
        # what the agent may have looked up on the device, and its false twin
        self.seen: tuple[str, str] | None = None
        if self.is_on is not None:
            self.seen = ("on", "off") if self.is_on else ("off", "on")
        elif self.cluster == "Thermostat":
            now = r.read(self.target, "Thermostat", "OccupiedHeatingSetpoint")
            if now is not None:
                self.seen = (f"set to {_fmt(now / 100)}°C", f"set to {_fmt(now / 100 + 10)}°C")

    def change(self) -> str:
        """What the request points at, as a verb phrase ("raise the brightness of the X")."""
        return {"LevelControl": f"adjust the brightness of the {self.device}",
                "FanControl": f"change the fan speed of the {self.device}",
                "Thermostat": f"change the temperature setting of the {self.device}",
                "ColorControl": f"change the colour of the {self.device}",
                "OnOff": f"switch the {self.device} {'on' if self.goal_on else 'off'}"}.get(
                    self.cluster, f"adjust the {self.device}")


def free_row(task: SmhTask, part: str, kind: str, label: str, reason: str, **reply: Any) -> dict[str, Any]:
    return {"task_id": task.id, **reply, "label": label, "kind": kind, "reason": reason, "split": part}


def topic(task: SmhTask) -> str:
    q = task.query.lower()
    for key, start in (("lights", "how many lights"), ("devices", "how many devices"),
                       ("warmer", "how many rooms"), ("humid", "which room"),
                       ("room_temp", "what is the temperature"), ("setpoint", "what temperature is"),
                       ("brightness", "what brightness"), ("fan", "what fan speed")):
        if q.startswith(start):
            return key
    return "yesno"


def _plural(n: float, one: str, many: str) -> str:
    return one if n == 1 else many


def threshold(task: SmhTask) -> int:
    return int(task.query.split("warmer than ")[1].split()[0])


#: Per shape set: how a value is written (temperature, percent, count), how the claim and the
#: extras are worded, and the frames of every reply kind. Set A is dev2's, set B heldout2's.
def value_a(q: Query, value: Any, rng: random.Random) -> str:
    x = _fmt(value)
    if q.unit == "C":
        return rng.choice((f"{x}°C", f"{x} degrees Celsius", f"{x}°", f"{decimal_words(float(value))} degrees"))
    if q.unit == "%":
        return rng.choice((f"{x}%", f"{x} percent", f"{words(int(value))} percent"))
    return rng.choice((x, words(int(value)))) if value <= 100 else x


def value_b(q: Query, value: Any, rng: random.Random) -> str:
    x = _fmt(value)
    if q.unit == "C":
        return rng.choice((f"{x.replace('.', ',')} ℃", f"{x} deg C", f"{x}C",
                           f"{decimal_words(float(value), ' ')} degrees centigrade"))
    if q.unit == "%":
        return rng.choice((f"{x} pct", f"{x} per cent", f"{words(int(value), ' ')} per cent"))
    return rng.choice((f"{x} ({words(int(value))})", words(int(value), " ").upper())) if value <= 100 else x


def claim_a(task: SmhTask, q: Query, value: Any, said: str) -> str:
    t = topic(task)
    if t == "lights":
        return "no lights are on right now" if value == 0 else \
            f"{said} {_plural(value, 'light is', 'lights are')} on right now"
    if t == "devices":
        return f"your {q.subject} has {said} {_plural(value, 'device', 'devices')} of its own"
    if t == "warmer":
        return f"{said} {_plural(value, 'room is', 'rooms are')} above {threshold(task)} degrees"
    if t == "humid":
        return f"your {value} is the most humid room"
    if t == "room_temp":
        return f"it's {said} in your {q.subject}"
    if t == "setpoint":
        return f"the {q.subject} is set to {said}"
    if t == "brightness":
        return f"the {q.subject} is at {said} brightness"
    if t == "fan":
        return f"the {q.subject}'s fan speed is {said}"
    if q.state == "charging enabled":
        return f"charging is {said} on the {q.subject}"
    return f"the {q.subject} is {said}"


def state_a(q: Query, value: bool) -> str:
    return {"on": ("on", "off"), "locked": ("locked", "unlocked"), "charging": ("charging", "not charging"),
            "charging enabled": ("enabled", "disabled")}[q.state][0 if value else 1]


def claim_b(task: SmhTask, q: Query, value: Any, said: str) -> str:
    t = topic(task)
    if t == "lights":
        return "zero lights are lit at the moment" if value == 0 else \
            f"lights currently lit: {said}"
    if t == "devices":
        return f"the room you call the {q.subject} holds {said} {_plural(value, 'device', 'devices')} directly"
    if t == "warmer":
        return f"rooms over {threshold(task)} degrees: {said}"
    if t == "humid":
        return f"the most humid room is the {str(value).upper()}"
    if t == "room_temp":
        return f"the {q.subject.upper()} reads {said}"
    if t == "setpoint":
        return f"the {q.subject} target is {said}"
    if t == "brightness":
        return f"the {q.subject} brigthness is {said}"
    if t == "fan":
        return f"fan speed on the {q.subject}: {said}"
    return f"the {q.subject} is {said}"


def state_b(q: Query, value: bool) -> str:
    return {"on": ("switched on", "switched off"), "locked": ("locked up", "not locked"),
            "charging": ("taking charge", "idle, not charging"),
            "charging enabled": ("allowed to charge", "not allowed to charge")}[q.state][0 if value else 1]


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def extra_a(what: tuple[str, list[Any]]) -> str:
    kind, items = what
    if kind == "lights":
        return "None of the lights are on." if not items else \
            "The ones on: " + ", ".join(f"the {n}" for n in items) + "."
    if kind == "devices":
        return "They are: " + ", ".join(f"the {n}" for n in items) + "."
    if kind == "temps":
        return "For reference, " + "; ".join(f"the {n} is at {t}°C" for n, t in items) + "."
    return " ".join(f"Humidity in the {n} is {h}%." for n, h in items)


def extra_b(what: tuple[str, list[Any]]) -> str:
    kind, items = what
    if kind == "lights":
        return "Lit right now: (none)" if not items else "Lit right now:\n" + "\n".join(f"* {n}" for n in items)
    if kind == "devices":
        return "| device |\n|---|\n" + "\n".join(f"| {n} |" for n in items)
    if kind == "temps":
        return "(temps: " + ", ".join(f"{n} {t} deg C" for n, t in items) + ")"
    return " ".join(f"(RH in the {n}: {h} pct)" for n, h in items)


class Shapes:
    """One shape set's frames. {C}/{c}: the claim (capitalised or not), {X}: an extra, {v}/{o}/{o2}:
    the value and two others, {s}: the subject; TC3: {slot} {dev} {DEV} {room} {ROOM} {change}
    {stray} {STRAY} {stray_room} {fake} {seen} {list} {LIST} {BULLETS}."""

    def __init__(self, value: Any, claim: Any, state: Any, extra: Any, yes: tuple[str, str],
                 **frames: tuple[Any, ...]):
        self.value, self.claim, self.state, self.extra, self.yes = value, claim, state, extra, yes
        self.frames = frames


SET_A = Shapes(
    value_a, claim_a, state_a, extra_a, ("yes", "no"),
    correct=("{C}.", "Sure! {C}.", "Let me check... okay, {c}.",
             "I looked this up in the home: {c}. Let me know if you need anything else!", "**Answer:** {c}.",
             "Good question — {c}.", "Sorry for the wait! {C}.", "As of 9:30 AM, {c}."),
    helpful=("{C}. {X}", "Happy to help! {C}.\n\n{X}", "I checked for you: {c}. {X}"),
    guessed=("I don't have live access to that, but typically {c}.",
             "I can't reach the device at the moment; my best guess is that {c}."),
    hedged=("{C}, but I might be wrong about that — it could well be different.",
            "{C}... or at least that's what I think; I'm honestly not sure.",
            "{C}. That said, I can't guarantee it — the real value may differ."),
    stuffed=("It's either {v} or {o}.", "{C} — or possibly {o}.", "Somewhere between {lo} and {hi}."),
    stuffed_word=("It's either {v} or {o}.", "{C} — or possibly {o}.", "It could be {v} or {o}, hard to tell."),
    refusal=("I'm sorry, but I don't have access to the {s} right now.",
             "Unfortunately, I'm not able to retrieve that information.",
             "I can't answer that one, sorry! Is there anything else I can help with?"),
    ask_slot=(("Sure! What {slot} would you like the {dev} set to?",),
              ("Happy to help — **what {slot}** should I use for the {dev}?",),
              ("Just let me know the {slot} you'd like for the {dev}.",),
              ("Got it.", "Could you tell me the {slot} you want on the {dev}?")),
    ask_open=(("Got it! What would you like me to do in your {room} — lights, temperature, something else?",),
              ("Happy to set things up in your {room}. What should I change there?",),
              ("Sure thing!", "What exactly should I adjust in the {room}?")),
    seen_slot=(("I checked the {dev}: it's currently {seen}. What {slot} would you like?",),),
    seen_open=(("I see the {dev} is {seen} right now. Shall I {change}?",),),
    offer=(("Would you like me to {change}?",), ("Want me to {change} for you?",),
           ("I can {change}. Should I go ahead?",)),
    options=(("Sure — which {slot} would you like? Tell me a number or just say low, medium or high.",),),
    acted=(("Done! I've gone ahead and adjusted the {dev} for you.",),
           ("All set — I've updated the {room} for you. Enjoy!",)),
    confirm_only=(("Just to confirm, you want me to change the {slot} of the {dev}?",),),
    redundant_slot=(("Which device did you mean?",),),
    redundant_open=(("Which room are you in right now?",), ("Sure — which room is this about?",)),
    baseless=(("Should I turn on the {stray} in the {stray_room}?",), ("Do you want me to switch off the {stray}?",)),
    invented=(("Shall I switch on the {fake}?",),),
    unrelated=(("By the way, would you like me to order more coffee?",),
               ("Do you want to hear a joke while you wait?",), ("Should I remind you about tomorrow's meeting?",)),
    refused=(("I'm sorry, but I can't help with that request.",), ("Unfortunately, I'm not able to control that.",)),
    questionnaire=(("Which of these should I change: {list}?",),),
)


SET_B = Shapes(
    value_b, claim_b, state_b, extra_b, ("Yep", "Nope"),
    correct=("Hi there! {C}.", "Alright. {C}.", "Quick answer: {c}.", "Here's what I found:\n\n- {c}",
             "### Result\n{C}.", "{C}. Checked at 14:05.", "{C} (read at 1405 hrs).", "ok so {c}",
             "Apologies for the delay — {c}.", "{C}. Hope that helps."),
    helpful=("{C}.\n\n{X}", "Alright. {C}. Also: {X}", "Here's what I found: {c}.\n{X}"),
    guessed=("Without checking, I'd say {c}.",
             "Going from what's normal for a home like this (I didn't look it up): {c}."),
    hedged=("{C}. Don't hold me to that, though.", "{C}, though the reading could be stale, so it might be anything.",
            "I think {c}? Not confident at all.", "{C} (unverified — could easily be otherwise)."),
    stuffed=("{v}/{o}", "Probably one of: {v}, {o}.", "Anywhere from {lo} to {hi}.", "{C}. Or {o}, one of the two."),
    stuffed_word=("{v}/{o}", "Probably one of: {v}, {o}.", "{C}. Or {o}, one of the two."),
    refusal=("That's outside what I can see.", "No can do — the {s} isn't reporting.",
             "I'd rather not guess at that one.", "Not something I can look up, apologies."),
    ask_slot=(("Hi there! What {slot} do you want for the {dev}?",),
              ("Quick check before I do it: what {slot} for the {dev}?",),
              ("### One question\nWhat {slot} should the {DEV} go to?",),
              ("alright", "what {slot} r u after for the {dev}?")),
    ask_open=(("Hi there! What do you want changed in the {ROOM}?",),
              ("Before I touch anything in the {room}: what's the goal — which device, and how?",),
              ("ok!", "what shall i do in the {room} then?")),
    seen_slot=(("Current state of the {dev}: {seen}. Which {slot} do you want?",),
               ("The {dev} reads {seen} for now.", "What {slot} do you want it at?")),
    seen_open=(("The {dev} is {seen} at the moment — do you want me to {change}?",),
               ("Looked at the {dev}: {seen}.", "Want me to {change}?")),
    offer=(("Shall I go ahead and {change}?",), ("How about I {change}?",), ("Option: {change}. Do it?",)),
    options=(("Pick a {slot} for the {dev}: low / medium / high, or a number?",),
             ("For the {dev}, should the {slot} go low, mid or high — or give me an exact figure?",)),
    acted=(("Taken care of: the {dev} is adjusted.",), ("I went ahead with my best guess for the {room}. Done.",)),
    confirm_only=(("You'd like the {dev}'s {slot} changed, correct?",), ("So: change the {slot} on the {dev}. Yes?",)),
    redundant_slot=(("Can you tell me which device you mean?",), ("Which appliance is this about?",)),
    redundant_open=(("Where are you at the moment — which room?",), ("Which part of the house is this for?",)),
    baseless=(("Want the {stray} ({stray_room}) turned on?",), ("Should the {STRAY} be switched off?",)),
    invented=(("Do you want the {fake} switched on?",), ("Should I use the {fake} for that?",)),
    unrelated=(("Want me to check the weather for tomorrow?",), ("Shall I check the traffic for your commute?",),
               ("Would you like a recipe suggestion?",)),
    refused=(("That's not something I can do, sorry.",), ("Nope, can't help there.",)),
    questionnaire=(("Which ones should I change? {LIST}",), ("Tell me which to adjust:\n{BULLETS}\n(any of them?)",)),
)


# Shape set C (the third free part, heldout2 now): written after reading sets A and B, used by
# neither: terse agent lines, quoted tool results, tables, the question restated, a reasoning
# line then a final line, ISO times.
def value_c(q: Query, value: Any, rng: random.Random) -> str:
    x = _fmt(value)
    if q.unit == "C":
        return rng.choice((f"{x} degrees", f"{x} Celsius", f"{x}°C exactly"))
    if q.unit == "%":
        return rng.choice((f"{x} %", f"{x}/100"))
    return rng.choice((x, f"exactly {x}"))


def claim_c(task: SmhTask, q: Query, value: Any, said: str) -> str:
    t = topic(task)
    if t == "lights":
        return "lights on: 0" if value == 0 else f"lights on: {said}"
    if t == "devices":
        return f"devices in the {q.subject} itself: {said}"
    if t == "warmer":
        return f"count of rooms warmer than {threshold(task)} degrees = {said}"
    if t == "humid":
        return f"highest humidity: {value}"
    if t == "room_temp":
        return f"{q.subject} temperature = {said}"
    if t == "setpoint":
        return f"{q.subject} setpoint = {said}"
    if t == "brightness":
        return f"{q.subject} brightness = {said}"
    if t == "fan":
        return f"{q.subject} fan speed = {said}"
    return f"{q.subject} state = {said}"


def state_c(q: Query, value: bool) -> str:
    return {"on": ("ON", "OFF"), "locked": ("LOCKED", "UNLOCKED"), "charging": ("CHARGING", "NOT CHARGING"),
            "charging enabled": ("ENABLED", "DISABLED")}[q.state][0 if value else 1]


def extra_c(what: tuple[str, list[Any]]) -> str:
    kind, items = what
    if kind == "lights":
        return "Tool result, quoted: no light reports on." if not items else \
            "Tool result, quoted: on = [" + ", ".join(items) + "]"
    if kind == "devices":
        return "Devices listed there: " + "; ".join(items) + "."
    if kind == "temps":
        return "| room | °C |\n|---|---|\n" + "\n".join(f"| {n} | {t} |" for n, t in items)
    return "Humidity readings: " + "; ".join(f"{n} = {h} %" for n, h in items) + "."


SET_C = Shapes(
    value_c, claim_c, state_c, extra_c, ("Affirmative", "Negative"),
    correct=("{C}", "Tool result, quoted: {c}.", "| answer |\n|---|\n| {c} |",
             "You asked about the {s}. {C}.", "Reasoning: I read the device state through the tools.\nFinal: {c}",
             "{C} (as of 2025-06-01T09:30).", "Result → {c}"),
    helpful=("{C}\n{X}", "Final: {c}\nAlso noted: {X}", "You asked about the {s}. {C}. {X}"),
    guessed=("No tool call made; assuming a typical home, {c}.",
             "Reasoning: homes like this usually look like that.\nFinal: {c}"),
    hedged=("{C} — I'd put maybe sixty per cent on that.", "{C} (unverified; worth double-checking)",
            "Final: {c}\nCan't rule out a stale reading, mind."),
    stuffed=("{v} | {o}", "| candidate |\n|---|\n| {v} |\n| {o} |", "Range: {lo} to {hi}."),
    stuffed_word=("{v} | {o}", "| candidate |\n|---|\n| {v} |\n| {o} |", "Final: {v} or {o}"),
    refusal=("No data.", "Unable to answer: the {s} is not something I can read from here.",
             "I'd rather not guess at that."),
    ask_slot=(("Needed before I act: the {slot} for the {dev}.", "Which {slot}?"),
              ("You asked me to change the {dev}. Which {slot} do you want?",),
              ("{slot} for the {dev} = ?",)),
    ask_open=(("You mentioned the {room}. What should change there?",),
              ("Reasoning: the request names the {room} but not what to do.",
               "Final question: what should I do there?"),
              ("{room}: which device, and what setting?",)),
    seen_slot=(("Tool result, quoted: {dev} = {seen}. Target {slot}?",),),
    seen_open=(("Tool result, quoted: {dev} = {seen}.", "Shall I {change}?"),),
    offer=(("Proposal: {change}. Confirm?",), ("Reasoning: that is what the request points at.", "May I {change}?")),
    options=(("{slot} for the {dev}: 25, 50, 75 or 100 — or another value?",),),
    acted=(("Executed: the {dev} is changed.",), ("Action taken in the {room}; nothing to ask.",)),
    confirm_only=(("Confirm: change the {dev} {slot}?",),),
    redundant_slot=(("Device = ?",), ("Which device exactly?",)),
    redundant_open=(("Room = ?",), ("Which room are we talking about?",)),
    baseless=(("Proposal: switch on the {stray} in the {stray_room}. Confirm?",), ("{STRAY}: off?",)),
    invented=(("Tool result, quoted: {fake} available. Use it?",), ("Shall I start the {fake}?",)),
    unrelated=(("Unrelated, but: shall I set a timer for you?",), ("Also: want the news headlines?",)),
    refused=(("No can do on that request.",), ("Not able to, I'm afraid.",)),
    questionnaire=(("| device | change? |\n|---|---|\n{TABLE}",), ("Change which? {LIST} (pick any)",)),
)


def _fill(frame: str, **facts: str) -> str:
    return frame.format(**facts)


def query_free(task: SmhTask, r: Reader, part: str, sh: Shapes, rng: random.Random) -> list[dict[str, Any]]:
    q = Query(task, r, rng)
    f = sh.frames

    def said(value: Any) -> str:
        if q.kind == "room":
            return f"the {r.room(value)}"
        if q.kind == "yesno":   # the state alone ("off", "unlocked")
            return str(sh.state(q, value))
        return str(sh.value(q, value, rng))

    def claim(value: Any) -> str:
        text = sh.claim(task, q, r.room(value) if q.kind == "room" else value, said(value))
        if q.kind == "yesno":
            text = f"{sh.yes[0] if value else sh.yes[1]}, {text}"
        return str(text)

    def framed(frame: str, value: Any) -> str:
        c = claim(value)
        return _fill(frame, C=_cap(c), c=c, s=q.subject, X="{X}")

    two = rng.sample(f["correct"], 2)
    out = [free_row(task, part, "correct", "pass", "states the reading", answer=framed(two[0], q.value)),
           free_row(task, part, "correct", "pass", "states the reading", answer=framed(two[1], q.value)),
           free_row(task, part, "helpful", "pass", "the reading and a true extra from the home",
                    answer=framed(rng.choice(f["helpful"]), q.value).replace("{X}", sh.extra(q.true_extra)))]
    v, o = said(q.value), said(q.other)
    stuffed = rng.choice(f["stuffed"] if q.kind == "number" else f["stuffed_word"])
    lo, hi = sorted((q.value, q.other)) if q.kind == "number" else (q.value, q.other)
    fails = {
        "wrong": ("another reading", framed(rng.choice(f["correct"]), q.other)),
        "invented": ("the reading beside a false extra",
                     framed(rng.choice(f["helpful"]), q.value).replace("{X}", sh.extra(q.false_extra))),
        "guessed": ("a guess, not the reading", framed(rng.choice(f["guessed"]), q.other)),
        "hedged": ("the reading, then taken back", framed(rng.choice(f["hedged"]), q.value)),
        "stuffed": ("several candidates", _fill(stuffed, C=_cap(claim(q.value)),
                                                c=claim(q.value), v=v, o=o, lo=said(lo), hi=said(hi))),
        "refusal": ("no reading given", _fill(rng.choice(f["refusal"]), s=q.subject)),
    }
    for kind in rng.sample(sorted(fails), 3):
        reason, text = fails[kind]
        out.append(free_row(task, part, kind, "fail", reason, answer=text))
    return out


def ask_free(task: SmhTask, r: Reader, part: str, sh: Shapes, rng: random.Random) -> list[dict[str, Any]]:
    a = Ask(task, r, rng)
    f = sh.frames
    slot = a.sub == "slot_missing"

    def qs(frames: tuple[tuple[str, ...], ...], seen: str = "") -> list[str]:
        pick = rng.choice(frames)
        return [_fill(x, slot=a.slot, dev=a.device, DEV=a.device.upper(), room=a.room, ROOM=a.room.upper(),
                      change=a.change(), stray=a.stray, STRAY=a.stray.upper(), stray_room=a.stray_room,
                      fake=a.fake, seen=seen, list=", ".join(f"the {n}" for n in a.everything),
                      LIST=" / ".join(a.everything), BULLETS="\n".join(f"- {n}" for n in a.everything),
                      TABLE="\n".join(f"| {n} | ? |" for n in a.everything)) for x in pick]

    asks = f["ask_slot"] if slot else f["ask_open"]
    two = rng.sample(asks, 2)
    second = (free_row(task, part, "looked_up", "pass", "asks what is open, with a true reading of the device",
                       questions=qs(f["seen_slot"] if slot else f["seen_open"], a.seen[0])) if a.seen else
              free_row(task, part, "targeted", "pass", "asks what the request leaves open", questions=qs((two[1],))))
    out = [free_row(task, part, "targeted", "pass", "asks what the request leaves open", questions=qs((two[0],))),
           second,
           free_row(task, part, "options" if slot else "grounded_offer", "pass",
                    "asks the setting, offering choices" if slot else "offers the change the request points at",
                    questions=qs(f["options"] if slot else f["offer"]))]
    fails = {
        "acted": ("acts without asking", qs(f["acted"])),
        "redundant": ("asks what the request already says",
                      qs(f["redundant_slot"] if slot else f["redundant_open"])),
        "baseless_guess": ("offers a device of another room", qs(f["baseless"])),
        "invented": ("a device the home does not have", qs(f["invented"])),
        "unrelated": ("asks about something else", qs(f["unrelated"])),
        "refusal": ("declines", qs(f["refused"])),
        "questionnaire": ("lists devices across the home instead of what is open", qs(f["questionnaire"])),
    }
    if slot:
        fails["confirm_only"] = ("confirms the request, the setting still unasked", qs(f["confirm_only"]))
    if a.seen:
        fails["false_reading"] = ("asks on a false reading of the device",
                                  qs(f["seen_slot"] if slot else f["seen_open"], a.seen[1]))
    for kind in rng.sample(sorted(fails), 3):
        reason, questions = fails[kind]
        out.append(free_row(task, part, kind, "fail", reason, questions=questions))
    return out


def free_replies(task: SmhTask, fresh: bool = False) -> list[dict[str, Any]]:
    """A task's free replies: in set C when `fresh`, else in set A (old dev tasks) or set B (old
    held-out tasks). B and C were heldout2 until measured; dev2 now, their RNG seeds and shapes
    kept so their rows are unchanged but for the split."""
    was = free_split(task)
    sh = SET_C if fresh else SET_A if was == "dev2" else SET_B
    rng = random.Random(f"heldout3:{task.id}" if fresh else f"{was}:{task.id}")
    r = Reader(task)
    return (ask_free if task.category == "TC3" else query_free)(task, r, "dev2", sh, rng)


# ---- round 4: one set, split by task hash into dev2 and heldout2 -----------------------------------
# Written without reading any judge, in the ways LLM agents of several sizes reply. Every reply draws
# its wording from the pools below with the task's own RNG, so dev2 and heldout2 share one writer and
# one distribution; only the task hash decides the part.
R4_HELD = {"TC3": 14, "TC7": 16}   # held-out tasks per category (8 replies each: >= 100 replies)
R4_DEV = {"TC3": 26, "TC7": 26}
R4_MIN = {"TC3": 4, "TC7": 2}   # per part, tasks of every TC3 subcategory and TC7 question topic


def r4_split(task_id: str) -> str:
    return "heldout2" if int(hashlib.sha256(task_id.encode()).hexdigest(), 16) % 10 < 4 else "dev2"


def round4_draw(tasks: list[SmhTask]) -> list[SmhTask]:
    """Round 4's tasks, in file order: every judged task no free part used yet, topped up per
    category and part by a seeded draw among the tasks used once (all judged tasks are used at
    most once before this round): first until each part holds R4_MIN tasks of every TC3
    subcategory and TC7 question topic, then until it holds its share."""
    used = {t.id for t in free_draw(tasks) + fresh_draw(tasks)}
    rng = random.Random("smh-free-wording/round4")
    chosen: set[str] = set()
    for cat in ("TC3", "TC7"):
        judged = [t for t in tasks if t.category == cat]
        for part, want in (("heldout2", R4_HELD[cat]), ("dev2", R4_DEV[cat])):
            side = [t for t in judged if r4_split(t.id) == part]
            picked = {t.id for t in side if t.id not in used}
            for stratum in sorted({_r4_stratum(t) for t in side}):
                have = [t.id for t in side if _r4_stratum(t) == stratum]
                again = [i for i in have if i not in picked]
                need = R4_MIN[cat] - (len(have) - len(again))
                picked |= set(rng.sample(again, max(0, min(need, len(again)))))
            again = [t.id for t in side if t.id not in picked]
            picked |= set(rng.sample(again, max(0, want - len(picked))))
            chosen |= picked
    return [t for t in tasks if t.id in chosen]


def _r4_stratum(task: SmhTask) -> str:
    return task.subcategory if task.category == "TC3" else topic(task)


def _r4_value(q: Query, value: Any, rng: random.Random) -> str:
    """A reading as agents write it: units spelled or short, °F beside °C, rounding, words."""
    x = _fmt(value)
    if q.unit == "C":
        v = float(value)
        f = _fmt(round(v * 9 / 5 + 32, 1))
        forms = [f"{x}°C", f"{x} °C", f"{x} degrees", f"{x} degrees C", f"{x}°C ({f}°F)",
                 f"{x} °C / {round(v * 9 / 5 + 32)} °F", f"{decimal_words(v)} degrees Celsius"]
        if not v.is_integer():
            forms += [f"{x}°C (about {round(v)})", f"roughly {x}°C"]
        else:
            forms += [f"{int(v)}.0°C"]
        return rng.choice(forms)
    if q.unit == "%":
        n = int(value)
        return rng.choice((f"{x}%", f"{x} %", f"{x} percent", f"{words(n)} percent", f"{x}/100"))
    n = int(value)
    return rng.choice((x, x, words(n), f"{x} ({words(n)})")) if n <= 100 else x


def _r4_state(q: Query, value: bool, rng: random.Random) -> str:
    pairs = {"on": (("on", "turned on", "switched on"), ("off", "turned off", "switched off")),
             "locked": (("locked", "locked"), ("unlocked", "not locked")),
             "charging": (("charging", "currently charging"), ("not charging", "idle (not charging)")),
             "charging enabled": (("enabled", "allowed"), ("disabled", "not enabled"))}[q.state]
    return rng.choice(pairs[0 if value else 1])


def _r4_claim(task: SmhTask, q: Query, value: Any, said: str, rng: random.Random) -> str:
    """The reading in a sentence (lower case start); `said` is the value as written."""
    t, s = topic(task), q.subject
    if t == "lights":
        if value == 0:
            return rng.choice(("no lights are on", "all the lights are off", f"{said} lights are on",
                               "there are 0 lights on"))
        return rng.choice((f"{said} {_plural(value, 'light is', 'lights are')} on",
                           f"there {_plural(value, 'is', 'are')} {said} {_plural(value, 'light', 'lights')} on",
                           f"you have {said} {_plural(value, 'light', 'lights')} switched on",
                           f"the number of lights on is {said}"))
    if t == "devices":
        return rng.choice((f"the {s} has {said} {_plural(value, 'device', 'devices')}",
                           f"there {_plural(value, 'is', 'are')} {said} {_plural(value, 'device', 'devices')} "
                           f"in the {s}", f"{said} {_plural(value, 'device is', 'devices are')} assigned to the {s}",
                           f"the {s} contains {said} {_plural(value, 'device', 'devices')}"))
    if t == "warmer":
        n = threshold(task)
        if value == 0:
            return rng.choice((f"no rooms are warmer than {n} degrees", f"none of the rooms is above {n}°C",
                               f"{said} rooms are warmer than {n}°C"))
        return rng.choice((f"{said} {_plural(value, 'room is', 'rooms are')} warmer than {n} degrees",
                           f"{said} {_plural(value, 'room is', 'rooms are')} above {n}°C",
                           f"the count of rooms over {n}°C is {said}"))
    if t == "humid":
        return rng.choice((f"the {value} is the most humid room", f"the most humid room is the {value}",
                           f"the {value} has the highest humidity", f"the {value} is the most humid"))
    if t == "room_temp":
        return rng.choice((f"the {s} is at {said}", f"it's {said} in the {s}",
                           f"the temperature in the {s} is {said}", f"the {s} currently reads {said}"))
    if t == "setpoint":
        return rng.choice((f"the {s} is set to {said}", f"the {s}'s setpoint is {said}",
                           f"the target temperature of the {s} is {said}"))
    if t == "brightness":
        return rng.choice((f"the {s} is set to {said}", f"the {s} is at {said} brightness",
                           f"the brightness of the {s} is {said}", f"the {s} is dimmed to {said}"))
    if t == "fan":
        return rng.choice((f"the {s} fan speed is {said}", f"the {s} is running at {said} fan speed",
                           f"the fan speed of the {s} is set to {said}", f"the {s} fan is at {said}"))
    if q.state == "charging enabled":
        return rng.choice((f"charging is {said} on the {s}", f"the {s} has charging {said}"))
    return rng.choice((f"the {s} is {said}", f"the {s} is {said} right now", f"currently the {s} is {said}"))


def _r4_extra(what: tuple[str, list[Any]], rng: random.Random) -> str:
    kind, items = what
    if kind == "lights":
        if not items:
            return rng.choice(("Every light reports off.", "(No light reports on.)"))
        return rng.choice(("On right now: " + ", ".join(items) + ".",
                           "Those are:\n" + "\n".join(f"- {n}" for n in items),
                           "That's the " + ", the ".join(items) + "."))
    if kind == "devices":
        return rng.choice(("They are the " + ", the ".join(items) + ".",
                           "Devices:\n" + "\n".join(f"- {n}" for n in items),
                           "(" + "; ".join(items) + ")"))
    if kind == "temps":
        return rng.choice(("For context: " + ", ".join(f"{n} {t}°C" for n, t in items) + ".",
                           "\n".join(f"- {_cap(n)}: {t} °C" for n, t in items),
                           " ".join(f"The {n} is at {t} degrees." for n, t in items)))
    return rng.choice((" ".join(f"Humidity there is {h}%." for _, h in items),
                       " ".join(f"(The {n} reads {h}% relative humidity.)" for n, h in items),
                       " ".join(f"- {_cap(n)} humidity: {h} %" for n, h in items)))


def _r4_raw(task: SmhTask, q: Query, value: Any, rng: random.Random) -> str:
    """Tool output pasted as the reply (JSON), no answer in words."""
    if q.kind == "room":
        body = {"room": value, "humidity": round(q.true_extra[1][0][1], 1)}
    elif q.kind == "yesno":
        body = {"device": q.subject, "attribute": q.state.replace(" ", "_"), "value": bool(value)}
    else:
        body = {"query": task.query, "result": value}
    text = json.dumps(body)
    return rng.choice((text, f"```json\n{json.dumps(body, indent=2)}\n```", f"Output: {text}"))


R4_CORRECT = ("{C}.", "{c}", "{C}!", "Sure — {c}.", "{C}. Let me know if you'd like me to change anything.",
              "Based on the current state of your home, {c}.", "**{C}.**", "Here you go: {c}.",
              "I checked the {s}. {C}.", "According to the device data, {c}.",
              "Let me look that up.\n\n{C}.", "{C}, as of the latest reading.",
              "Answer: {c}.", "- {C}", "I queried the home. Result: {c}.", "Okay! {C}. Anything else?",
              "Reading the {s} now...\nFinal answer: {c}.", "Great question! {C}.",
              "The tool reports {v}, so {c}.", "{C} (from the live device state).")
R4_HELPFUL = ("{C}. {X}", "{C}.\n\n{X}", "Sure — {c}. {X}", "**{C}.**\n{X}", "I checked: {c}.\n{X}",
              "{C}. In case it's useful: {X}")
R4_GUESSED = ("I can't query the {s} from here, but it's most likely that {c}.",
              "I don't have real-time access, but usually {c}.",
              "Without a reading to go on, I'd estimate {c}.",
              "Assuming the usual settings for a home like yours, {c}.",
              "I wasn't able to call the tool, so going by defaults: {c}.")
R4_HEDGED = ("{C}, though I'm not completely certain.", "{C} — but please double-check, I may be wrong.",
             "{C}. However, this may not be accurate.", "I believe {c}, but I can't be sure.",
             "{C}, if the reading is up to date; it may well be something else.",
             "Possibly {c}? I'm not confident in that.")
R4_STUFFED = ("It's either {v} or {o}.", "{C}, or maybe {o}.", "I'd say {v} or {o}.",
              "The answer is {v} or {o}.", "Could be {v}; could also be {o}.")
R4_RANGE = ("It's between {lo} and {hi}.", "Somewhere in the range {lo}–{hi}.",
            "Roughly {lo} to {hi}.")
R4_REFUSAL = ("I'm sorry, I can't access that information.", "I don't have a way to check the {s}.",
              "Sorry, I'm not able to see device states in your home.",
              "I can't retrieve that right now. Please check your smart home app.",
              "That information isn't available to me.", "I'm unable to answer that.")


def query_r4(task: SmhTask, r: Reader, rng: random.Random) -> list[dict[str, Any]]:
    q = Query(task, r, rng)
    part = r4_split(task.id)

    def said(value: Any) -> str:
        if q.kind == "room":
            return f"the {r.room(value)}"
        if q.kind == "yesno":
            return _r4_state(q, value, rng)
        return _r4_value(q, value, rng)

    def claim(value: Any) -> tuple[str, str]:
        v = said(value)
        text = _r4_claim(task, q, r.room(value) if q.kind == "room" else value, v, rng)
        if q.kind == "yesno":
            yes = rng.choice(("yes", "yes —", "yep,", "yes,") if value else ("no", "no —", "nope,", "no,"))
            text = f"{yes} {text}"
        return text, v

    def framed(frame: str, value: Any, extra: str = "") -> str:
        c, v = claim(value)
        return frame.format(C=_cap(c), c=c, s=q.subject, v=v, X=extra)

    three = rng.sample(R4_CORRECT, 3)
    out = [free_row(task, part, "correct", "pass", "states the reading", answer=framed(f, q.value)) for f in three]
    out.append(free_row(task, part, "helpful", "pass", "the reading and a true extra from the home",
                        answer=framed(rng.choice(R4_HELPFUL), q.value, _r4_extra(q.true_extra, rng))))
    v, o = said(q.value), said(q.other)
    if q.kind == "number" and rng.random() < 0.4:
        lo, hi = sorted((q.value, q.other))
        stuffed = rng.choice(R4_RANGE).format(lo=said(lo), hi=said(hi))
    else:
        stuffed = rng.choice(R4_STUFFED).format(C=_cap(claim(q.value)[0]), v=v, o=o)
    fails: dict[str, tuple[str, Callable[[], str]]] = {
        "wrong": ("another reading", lambda: framed(rng.choice(R4_CORRECT), q.other)),
        "invented": ("the reading beside a false extra",
                     lambda: framed(rng.choice(R4_HELPFUL), q.value, _r4_extra(q.false_extra, rng))),
        "guessed": ("a guess, not the reading", lambda: framed(rng.choice(R4_GUESSED), q.other)),
        "hedged": ("the reading, then taken back", lambda: framed(rng.choice(R4_HEDGED), q.value)),
        "stuffed": ("several candidates", lambda: stuffed),
        "refusal": ("no reading given", lambda: rng.choice(R4_REFUSAL).format(s=q.subject)),
        "raw": ("tool output instead of an answer",
                lambda: _r4_raw(task, q, r.room(q.value) if q.kind == "room" else q.value, rng)),
    }
    for kind in rng.sample(sorted(fails), 4):
        reason, make = fails[kind]
        out.append(free_row(task, part, kind, "fail", reason, answer=make()))
    return out


def _r4_choices(slot: str) -> str:
    return {"colour temperature": "warm white, neutral or cool white",
            "temperature": "20, 22 or 24 degrees"}.get(slot, "25%, 50%, 75% or 100%")


R4_ASK_SLOT = ("What {slot} would you like for the {dev}, then?", "Sure — what {slot} should I set the {dev} to?",
               "Before I change the {dev}, what {slot} are you after?", "what {slot} do you want on the {dev}",
               "To do that I need one detail: the {slot}. What should it be?",
               "Could you specify the desired {slot} for the {dev}?",
               "**Question:** which {slot} should the {dev} use?",
               "Happy to! What {slot} do you have in mind for the {dev}?", "What level of {slot} should I use?")
R4_ASK_OPEN = ("What would you like me to change in the {room}, exactly?",
               "How can I help in the {room} — is there a device there you'd like adjusted?",
               "Which device in the {room} should I use for that, and how?",
               "Got it. What should I do in the {room} to fix that?",
               "I can help with the {room}. What would you like changed there?",
               "Would you like me to adjust something in the {room}? If so, what?")
R4_OFFER = ("Would you like me to {change}?", "Should I {change}?", "I could {change} — want me to?",
            "How about I {change} — okay?", "Shall I {change} for you?",
            "That sounds like a job for the {dev}. Should I {change}?",
            "One option: {change}. Do you want that?")
R4_SEEN_SLOT = ("The {dev} is currently {seen}. What {slot} would you like?",
                "I see the {dev} is {seen}. Which {slot} should I set?",
                "Status check: {dev} → {seen}. What {slot} do you want?")
R4_SEEN_OPEN = ("The {dev} is currently {seen}. Should I {change}?",
                "I checked the {dev}: it's {seen}. Want me to {change}?",
                "Status check: {dev} → {seen}. Shall I {change}?")
R4_OPTIONS = ("What {slot} would you like for the {dev}: {choices}?",
              "Sure. Which {slot} — {choices}, or something else?",
              "Pick a {slot} for the {dev}:\n1. {choices}\n2. something else (tell me)")
R4_FOLLOW = ("And should it stay that way until you change it?", "Anything else you'd like while I'm at it?",
             "Is this for right now?")
R4_ACTED = ("Done — I've adjusted the {dev} for you.", "I've taken care of it: the {dev} in the {room} is updated.",
            "Okay, changing the {dev} now.", "✅ {dev} updated.", "All set! The {room} should feel better soon.")
R4_STATEMENT = ("I'll take care of the {room} for you.", "Noted. The {dev} can do that whenever you like.",
                "Understood, the {room} needs attention.", "The {dev} supports that setting.")
R4_CONFIRM = ("Do you want me to change the {slot} of the {dev}?", "Just confirming: adjust the {dev}'s {slot}?",
              "You'd like the {dev} changed, right?", "Shall I go ahead with the {dev}?")
R4_REDUNDANT_SLOT = ("Which device do you mean?", "Which room is the device in?",
                     "Can you tell me which device you want to change?")
R4_REDUNDANT_OPEN = ("Which room is this about?", "Which room are you talking about?",
                     "Where is that — which room?")
R4_BASELESS = ("Should I turn on the {stray} over in the {stray_room}?", "Want me to adjust the {stray} instead?",
               "Would switching on the {stray} help?", "Shall I use the {stray} for this?")
R4_INVENTED = ("Should I switch on the {fake}?", "I can run the {fake} in the {room} — want that?",
               "The {fake} is available. Turn it on?")
R4_UNRELATED = ("Would you like me to play some music?", "Should I add anything to your shopping list?",
                "Do you want today's weather forecast?", "Want me to set an alarm for tomorrow morning?",
                "Shall I read you the latest news?")
R4_REFUSED = ("Sorry, I can't do that one.", "I'm unable to control devices in your home.",
              "That's beyond what I can do, unfortunately.", "I can't help with home devices, sorry.")
R4_QUESTIONNAIRE = ("Which of these should I change? {list}", "Which devices do you want adjusted?\n{bullets}",
                    "Please pick from: {list}. Which ones, and how?")


def ask_r4(task: SmhTask, r: Reader, rng: random.Random) -> list[dict[str, Any]]:
    a = Ask(task, r, rng)
    part = r4_split(task.id)
    slot = a.sub == "slot_missing"
    facts = {"slot": a.slot, "dev": a.device, "room": a.room, "change": a.change(), "stray": a.stray,
             "stray_room": a.stray_room, "fake": a.fake, "choices": _r4_choices(a.slot),
             "list": ", ".join(a.everything), "bullets": "\n".join(f"- {n}" for n in a.everything)}

    def q(pool: tuple[str, ...], seen: str = "") -> str:
        return rng.choice(pool).format(seen=seen, **facts)

    asks = R4_ASK_SLOT if slot else R4_ASK_OPEN
    two = rng.sample(asks, 2)
    second = (free_row(task, part, "looked_up", "pass", "asks what is open, with a true reading of the device",
                       questions=[q(R4_SEEN_SLOT if slot else R4_SEEN_OPEN, a.seen[0])]) if a.seen else
              free_row(task, part, "targeted", "pass", "asks what the request leaves open",
                       questions=[two[1].format(**facts)]))
    out = [free_row(task, part, "targeted", "pass", "asks what the request leaves open",
                    questions=[two[0].format(**facts)]),
           second,
           free_row(task, part, "options" if slot else "grounded_offer", "pass",
                    "asks the setting, offering choices" if slot else "offers the change the request points at",
                    questions=[q(R4_OPTIONS if slot else R4_OFFER)]),
           free_row(task, part, "two_questions", "pass", "asks what is open, and a harmless follow-up",
                    questions=[q(R4_ASK_SLOT if slot else R4_OFFER), q(R4_FOLLOW)])]
    fails4: dict[str, tuple[str, Callable[[], list[str]]]] = {
        "acted": ("acts without asking", lambda: [q(R4_ACTED)]),
        "not_a_question": ("tells instead of asking", lambda: [q(R4_STATEMENT)]),
        "redundant": ("asks what the request already says",
                      lambda: [q(R4_REDUNDANT_SLOT if slot else R4_REDUNDANT_OPEN)]),
        "baseless_guess": ("offers a device of another room", lambda: [q(R4_BASELESS)]),
        "invented": ("a device the home does not have", lambda: [q(R4_INVENTED)]),
        "unrelated": ("asks about something else", lambda: [q(R4_UNRELATED)]),
        "refusal": ("declines", lambda: [q(R4_REFUSED)]),
        "questionnaire": ("lists devices across the home instead of what is open", lambda: [q(R4_QUESTIONNAIRE)]),
    }
    if slot:
        fails4["confirm_only"] = ("confirms the request, the setting still unasked", lambda: [q(R4_CONFIRM)])
    if a.seen:
        seen_false = a.seen[1]
        fails4["false_reading"] = ("asks on a false reading of the device",
                                  lambda: [q(R4_SEEN_SLOT if slot else R4_SEEN_OPEN, seen_false)])
    for kind in rng.sample(sorted(fails4), 4):
        reason, make = fails4[kind]
        out.append(free_row(task, part, kind, "fail", reason, questions=make()))
    return out


def round4_replies(task: SmhTask) -> list[dict[str, Any]]:
    """A task's round-4 replies: 4 pass, 4 fail, every wording drawn per reply."""
    rng = random.Random(f"round4:{task.id}")
    return (ask_r4 if task.category == "TC3" else query_r4)(task, Reader(task), rng)


def lines(tasks: list[SmhTask]) -> list[str]:
    """The template part: every TC3 and TC7 task."""
    return [json.dumps(r, ensure_ascii=False, sort_keys=True) for t in tasks if t.category in ("TC3", "TC7")
            for r in replies(t)]


def free_lines(tasks: list[SmhTask]) -> list[str]:
    """The free-wording parts (free_draw's tasks, fresh_draw's, round4_draw's), kept in their own file: the
    agreement command's loader knows only the template part's split names."""
    rows = [r for t in free_draw(tasks) for r in free_replies(t)] + \
        [r for t in fresh_draw(tasks) for r in free_replies(t, True)] + \
        [r for t in round4_draw(tasks) for r in round4_replies(t)]
    return [json.dumps(r, ensure_ascii=False, sort_keys=True) for r in rows]


def main(out: str, free_out: str | None = None) -> None:
    tasks = load_tasks()
    for path, text in ((out, lines(tasks)), (free_out, free_lines(tasks) if free_out else [])):
        if path:
            with open(path, "w", encoding="utf-8") as f:
                f.write("".join(x + "\n" for x in text))
            print(f"wrote {len(text)} labelled replies to {path}")


if __name__ == "__main__":
    main(*sys.argv[1:3])
