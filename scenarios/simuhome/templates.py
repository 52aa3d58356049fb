"""The query template language: how episodes say things, and how to read them back.

A query is a sequence of sentences. Each sentence is either filler (context that asks for
nothing) or one *clause* rendered from a template below. Templates have slots:
`{room}` (a room's display name, lower case), `{dev}` (a device phrase and its ordinal in
the room, e.g. "dimmer light 1"), numbers (`{level}`, `{pct}`, `{deg}`, `{min}`, `{n}`),
clock times (`{time}`, `{claimed}`, "11:25 AM"), `{state}` and `{mode}`.

Timed clauses are a *wrapper* ("In {min} minutes, {body}.") around an action *body*
("turn on the {dev} in the {room}"). `parse_sentence` turns a sentence back into
(intent, action, slots) by matching every template compiled to a regex, most specific
first; the reference solver uses it, so it reads exactly the language the generator writes
and nothing else (it never sees the goal).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import Any

#: How queries name device types (SimuHome's prompt names: "dimmer light", "washer", ...).
DEVICE_PHRASES: dict[str, str] = {
    "on_off_light": "light", "dimmable_light": "dimmer light", "air_conditioner": "AC",
    "air_purifier": "air purifier", "tv": "TV", "heat_pump": "heat pump",
    "humidifier": "humidifier", "dehumidifier": "dehumidifier", "window_covering": "blinds",
    "dishwasher": "dishwasher", "laundry_washer": "washer", "laundry_dryer": "dryer", "fan": "fan",
    "robot_vacuum_cleaner": "robot vacuum", "freezer": "freezer", "refrigerator": "refrigerator",
    "electrical_sensor": "energy meter",
}
PHRASE_TYPES = {v.lower(): k for k, v in DEVICE_PHRASES.items()}

#: How queries name room states; the first phrase is also used in answers.
STATE_PHRASES: dict[str, tuple[str, ...]] = {
    "temperature": ("temperature",),
    "humidity": ("humidity", "humidity level"),
    "illuminance": ("illuminance", "brightness", "light level"),
    "pm10": ("PM10 level", "dust level", "fine dust level"),
}
PHRASE_STATES = {p.lower(): s for s, ps in STATE_PHRASES.items() for p in ps}

# ---- action bodies: (action, template) -------------------------------------------------------
BODIES: list[tuple[str, str]] = [
    ("on", "turn on the {dev} in the {room}"),
    ("on", "switch on the {dev} in the {room}"),
    ("on", "power on the {dev} in the {room}"),
    ("off", "turn off the {dev} in the {room}"),
    ("off", "switch off the {dev} in the {room}"),
    ("level", "turn on the {dev} in the {room} and set it to level {level}"),
    ("level", "set the {dev} in the {room} to level {level}"),
    ("fan", "turn on the {dev} in the {room} and set the fan to {pct} percent"),
    ("fan", "run the {dev} in the {room} at {pct} percent fan speed"),
    ("cool", "turn on the {dev} in the {room}, switch it to cooling mode and set the fan to {pct} percent"),
    ("heat", "turn on the {dev} in the {room}, switch it to heating mode and set the fan to {pct} percent"),
    ("hp_heat", "switch the {dev} in the {room} to heating mode"),
    ("hp_cool", "switch the {dev} in the {room} to cooling mode"),
    ("setpoint", "turn on the {dev} in the {room} and set its cooling setpoint to {deg} degrees"),
    ("volume", "turn on the {dev} in the {room} and set the volume to {level}"),
    ("close", "close the {dev} in the {room}"),
    ("open", "open the {dev} in the {room}"),
    ("lift", "set the {dev} in the {room} to {pct} percent closed"),
    ("start", "start the {dev} in the {room}"),
    ("start_mode", "start the {dev} in the {room} in {mode} mode"),
    ("start_dry", "start the {dev} in the {room} with dryness level {n}"),
]

# ---- wrappers: (intent, template); {body} is an action body, {Body} the same capitalized ------
WRAPPERS: list[tuple[str, str]] = [
    ("now", "{Body}."),
    ("now", "Please {body}."),
    ("now", "Could you {body}?"),
    ("now", "Can you {body} for me?"),
    ("in", "In {min} minutes, {body}."),
    ("in", "{Body}, {min} minutes from now."),
    ("after_prev", "{min} minutes after that, {body}."),
    ("in_at", "In {min} minutes, at {time}, {body}."),
    ("in_at", "{Body} in {min} minutes, which will be {time}."),
    ("anchor_end", "When the {adev} in the {aroom} finishes, {body}."),
    ("anchor_after", "{min} minutes after the {adev} in the {aroom} finishes, {body}."),
    ("anchor_before", "{min} minutes before the {adev} in the {aroom} finishes, {body}."),
    ("anchor_claim", "I think the {adev} in the {aroom} finishes at {claimed}, so {min} minutes "
                     "after that, at {time}, {body}."),
    ("anchor_after_at", "Exactly {min} minutes after the {adev} in the {aroom} finishes and at "
                        "{time}, {body}."),
    ("anchor_wait", "When the {adev} in the {aroom} finishes, wait {min} minutes, then {body}."),
    ("anchor_wait", "Once the {adev} in the {aroom} is done, give it {min} minutes and then {body}."),
]

# ---- whole-sentence clauses: (intent, params, template) ----------------------------------------
SENTENCES: list[tuple[str, dict[str, Any], str]] = [
    # QT1: questions
    ("ask_state", {}, "What is the {state} in the {room} right now?"),
    ("ask_state", {}, "Can you tell me the current {state} of the {room}?"),
    ("ask_state", {}, "How is the {state} doing in the {room}?"),
    ("ask_state", {}, "I'd like to know the {state} in the {room}."),
    ("ask_device", {"attribute": "OnOff"}, "Is the {dev} in the {room} on or off?"),
    ("ask_device", {"attribute": "OnOff"}, "Did I leave the {dev} in the {room} on?"),
    ("ask_device", {"attribute": "CurrentLevel"}, "What level is the {dev} in the {room} set to?"),
    ("ask_device", {"attribute": "PercentCurrent"}, "What fan speed is the {dev} in the {room} running at?"),
    ("ask_device", {"attribute": "OccupiedCoolingSetpoint"},
     "What cooling setpoint is the {dev} in the {room} set to?"),
    # QT2: complaints (state, direction)
    ("complain", {"state": "humidity", "direction": "increase"}, "The {room} feels really dry."),
    ("complain", {"state": "humidity", "direction": "increase"},
     "My skin feels tight, the air in the {room} is so dry."),
    ("complain", {"state": "humidity", "direction": "decrease"}, "It's way too humid in the {room}."),
    ("complain", {"state": "humidity", "direction": "decrease"}, "The {room} feels damp and muggy."),
    ("complain", {"state": "pm10", "direction": "decrease"}, "The {room} feels dusty and my eyes are itching."),
    ("complain", {"state": "pm10", "direction": "decrease"}, "The air in the {room} seems full of dust."),
    ("complain", {"state": "temperature", "direction": "decrease"}, "It's too hot in the {room}."),
    ("complain", {"state": "temperature", "direction": "decrease"}, "The {room} feels like a sauna."),
    ("complain", {"state": "temperature", "direction": "increase"}, "It's freezing in the {room}."),
    ("complain", {"state": "temperature", "direction": "increase"}, "The {room} is way too chilly."),
    ("complain", {"state": "illuminance", "direction": "increase"}, "It's too dark in the {room}."),
    ("complain", {"state": "illuminance", "direction": "increase"}, "I can barely see anything in the {room}."),
    ("complain", {"state": "illuminance", "direction": "decrease"}, "The {room} is too bright."),
    ("complain", {"state": "illuminance", "direction": "decrease"}, "The light in the {room} is glaring."),
    # QT4-1-IF: the user's idea of the current time
    ("claim_now", {}, "It's {claimed} now, right?"),
    ("claim_now", {}, "It is {claimed} at the moment, isn't it?"),
    # QT4-3-IF: a deadline for two running appliances
    ("deadline", {}, "Make sure the {adev} in the {aroom} and the {dev} in the {room} are both done by {time}."),
    ("deadline", {}, "Guests arrive soon, so I need the {adev} in the {aroom} and the {dev} in the "
                     "{room} both finished by {time}."),
]

#: Context sentences that ask for nothing (they must match no clause).
FILLER: list[str] = [
    "I just got back from a long walk.", "Guests are coming over later tonight.",
    "I am sorting some boxes at the moment.", "The bread is rising on the counter.",
    "I want to read for a while.", "I am about to start working from home.",
    "The kids are finally asleep.", "I'm folding laundry right now.",
    "It has been a long day.", "I am trying to get the house ready for the evening.",
    "My plants have not looked great lately.", "I'm cooking dinner soon.",
]

_SLOT = {
    "room": r"(?P<room>[a-z]+(?: [a-z]+)?(?: \d+)?)",
    "aroom": r"(?P<aroom>[a-z]+(?: [a-z]+)?(?: \d+)?)",
    "level": r"(?P<level>\d+)", "pct": r"(?P<pct>\d+)", "deg": r"(?P<deg>\d+(?:\.\d+)?)",
    "min": r"(?P<min>\d+)", "n": r"(?P<n>\d+)", "mode": r"(?P<mode>[a-z]+)",
    "time": r"(?P<time>\d{1,2}:\d{2} ?(?:AM|PM))", "claimed": r"(?P<claimed>\d{1,2}:\d{2} ?(?:AM|PM))",
}


def _dev_regex(name: str) -> str:
    phrases = sorted((re.escape(p) for p in PHRASE_TYPES), key=len, reverse=True)
    return rf"(?P<{name}>(?:{'|'.join(phrases)}) \d+)"


def _state_regex() -> str:
    phrases = sorted((re.escape(p) for p in PHRASE_STATES), key=len, reverse=True)
    return rf"(?P<state>{'|'.join(phrases)})"


def _compile(template: str) -> re.Pattern[str]:
    out, pos = [], 0
    for m in re.finditer(r"\{(\w+)\}", template):
        out.append(re.escape(template[pos:m.start()]))
        slot = m.group(1)
        if slot in ("dev", "adev"):
            out.append(_dev_regex(slot))
        elif slot == "state":
            out.append(_state_regex())
        else:
            out.append(_SLOT[slot])
        pos = m.end()
    out.append(re.escape(template[pos:]))
    return re.compile("".join(out), re.IGNORECASE)


def _combine(wrapper: str, body: str) -> str:
    return wrapper.replace("{Body}", body[0].upper() + body[1:]).replace("{body}", body)


@dataclass(frozen=True)
class Pattern:
    intent: str
    action: str | None
    params: tuple[tuple[str, Any], ...]
    template: str
    regex: re.Pattern[str]


@lru_cache(maxsize=1)
def patterns() -> list[Pattern]:
    """Every clause template compiled; most literal text first, so specific beats generic."""
    out = [Pattern(intent, action, (), _combine(w, b), _compile(_combine(w, b)))
           for intent, w in WRAPPERS for action, b in BODIES]
    out += [Pattern(intent, None, tuple(sorted(params.items())), t, _compile(t))
            for intent, params, t in SENTENCES]
    return sorted(out, key=lambda p: -len(re.sub(r"\{\w+\}", "", p.template)))


@dataclass
class Clause:
    intent: str
    action: str | None
    slots: dict[str, Any]


def split_sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.?!])\s+", text.strip()) if s.strip()]


def parse_sentence(sentence: str) -> Clause | None:
    for p in patterns():
        m = p.regex.fullmatch(sentence.strip())
        if m:
            slots: dict[str, Any] = dict(p.params)
            for key, value in m.groupdict().items():
                if value is None:
                    continue
                if key in ("dev", "adev"):
                    phrase, _, n = value.rpartition(" ")
                    slots[key] = (PHRASE_TYPES[phrase.lower()], int(n))
                elif key == "state":
                    slots[key] = PHRASE_STATES[value.lower()]
                elif key in ("level", "pct", "min", "n"):
                    slots[key] = int(value)
                elif key == "deg":
                    slots[key] = float(value)
                else:
                    slots[key] = value.lower() if key in ("room", "aroom", "mode") else value
            return Clause(p.intent, p.action, slots)
    return None


def parse_query(text: str) -> list[Clause]:
    return [c for c in map(parse_sentence, split_sentences(text)) if c is not None]


def render(template: str, **slots: Any) -> str:
    """Fill a template; device slots take (type, ordinal), times take datetimes."""
    values: dict[str, Any] = {}
    for key, value in slots.items():
        if key in ("dev", "adev"):
            values[key] = f"{DEVICE_PHRASES[value[0]]} {value[1]}"
        elif isinstance(value, datetime):
            values[key] = clock_text(value)
        else:
            values[key] = value
    return template.format(**values)


def render_clause(wrapper: str, body: str, **slots: Any) -> str:
    return render(_combine(wrapper, body), **slots)


def clock_text(when: datetime) -> str:
    """"11:25 AM" (minutes, 12-hour clock)."""
    return f"{(when.hour % 12) or 12}:{when.minute:02d} {'AM' if when.hour < 12 else 'PM'}"


def room_phrase(name: str) -> str:
    return name.lower()


__all__ = ["BODIES", "WRAPPERS", "SENTENCES", "FILLER", "DEVICE_PHRASES", "STATE_PHRASES",
           "Clause", "parse_query", "parse_sentence", "render", "render_clause", "clock_text",
           "split_sentences", "room_phrase"]
