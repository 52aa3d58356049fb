"""Judges for QT1 and all infeasible episodes (SimuHome §4.3, Appendix O.2).

`RuleJudge` needs no LLM; see its docstring for the rules (recall: the answer says what it must;
precision: it says nothing it must not). `LLMJudge` asks any OpenAI-compatible endpoint with
per-category criteria (our own wording of Appendix O.2's), three times, and takes the majority
of its one-letter A/B answers.
"""
from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any

from bridge.tools import Session
from scenarios import answers as A
from scenarios.model_api import create_completion
from scenarios.simuhome import templates as T
from scenarios.simuhome.actions import ACTUATORS
from scenarios.simuhome.schema import DeviceGoal, Episode, RoomGoal, TimedGoal, Verdict
from scenarios.simuhome.templates import split_sentences

CANNOT = ("can't", "cannot", "can not", "unable", "not able", "not possible", "impossible",
          "isn't possible", "is not possible", "no way", "not feasible", "infeasible", "won't be able",
          "couldn't", "could not")
MISSING = ("no ", "not find", "isn't a", "is not a", "isn't an", "aren't any", "are not any",
           "doesn't exist", "does not exist", "not exist", "isn't any", "is not any",
           "there is no", "there's no", "missing", "not found", "don't see", "do not see",
           "doesn't have", "does not have", "not available", "unavailable", "couldn't find")
CONFLICT = ("conflict", "contradict", "inconsistent", "mismatch", "doesn't match", "does not match",
            "discrepan", "don't match", "do not match", "don't line up", "doesn't line up", "not line up",
            "doesn't add up",
            "does not add up", "differ")
#: Saying nothing more can be done without "can't": "nothing in the kitchen can lower it",
#: "none of those can", "there's no room left to", "already doing all they can", "maxed out".
NOTHING_MORE = ("nothing more", "nothing else", "nothing left", "nothing i can", "no room left", "all they can",
                "all it can", "maxed out", "no device that", "no way to", "already at its", "already at their")
IMPLIED = {  # infeasibility kind -> the words an answer needs for it
    "missing_device": MISSING + CANNOT, "no_actuator": CANNOT + NOTHING_MORE, "at_capacity": CANNOT + NOTHING_MORE,
    "time_conflict": CONFLICT, "completion_conflict": CONFLICT, "deadline": CANNOT,
}
#: Tolerance when matching a reported room value (natural units).
VALUE_TOLERANCE = {"temperature": 0.1, "humidity": 0.1, "illuminance": 1.0, "pm10": 0.1}
#: Device nouns people use, per type (singular; a plural "s" is allowed), for claims such as
#: "there is no AC" or "the lights are already off".
NOUNS: dict[str, tuple[str, ...]] = {
    "on_off_light": ("light", "lamp"), "dimmable_light": ("light", "lamp", "dimmer", "dimmer light", "dimmable light"),
    "air_conditioner": ("ac", "a/c", "air conditioner", "air conditioning", "aircon"),
    "air_purifier": ("air purifier", "purifier"), "tv": ("tv", "television"), "heat_pump": ("heat pump",),
    "humidifier": ("humidifier",), "dehumidifier": ("dehumidifier",),
    "window_covering": ("blind", "window covering", "shade", "curtain", "shutter"),
    "dishwasher": ("dishwasher",), "laundry_washer": ("washer", "washing machine"),
    "laundry_dryer": ("dryer", "tumble dryer"), "fan": ("fan",),
    "robot_vacuum_cleaner": ("robot vacuum", "vacuum", "robot"), "freezer": ("freezer",),
    "refrigerator": ("refrigerator", "fridge"), "electrical_sensor": ("energy meter", "meter"),
}
#: What a value read as "nothing" sounds like (a null attribute).
NOTHING = re.compile(r"\b(?:no|none|null|not set|n/a|nothing|unknown|empty)\b", re.IGNORECASE)


def _has_any(text: str, words: tuple[str, ...] | list[str]) -> bool:
    low = text.lower()
    return any(w.lower() in low for w in words)


#: Words that set a true time against the assumed one ("it actually ends at 6:14, not 5:30").
CONTRAST = ("but", "however", "off from", "apart", "which should", "which time", "which one", "which do",
            "actually", "instead", "already", "rather", "not at", "not until", "only at",
            "earliest", "too late", "too early", "won't", "will not", "wouldn't", "isn't", "doesn't",
            "does not", "is not", "not ", "different")


#: "Nothing in the kitchen can ...", "none of those can", "no device that raises ...".
NO_DEVICE_CAN = re.compile(r"\b(?:nothing|none of (?:those|them|these|the \w+))\b[^.;]*\bcan\b|"
                           r"\bno (?:device|appliance)s? (?:that|which|to|there|in)\b", re.IGNORECASE)


def recognizes_problem(episode: Episode, answer: str) -> bool:
    """Does the answer say what kind of problem this is (missing, cannot, conflict)? A timing
    conflict may also be explained without the word: a true time set against the asked one."""
    inf = episode.infeasibility
    if inf is None:
        return False
    if _has_any(answer, IMPLIED[inf.kind]):
        return True
    if inf.kind == "no_actuator" and NO_DEVICE_CAN.search(answer):
        return True
    if inf.kind in ("time_conflict", "completion_conflict", "deadline") and inf.times:
        wanted = [int(t[:2]) * 60 + int(t[3:]) for t in inf.times]
        true_time = any(A.near(m, w) for ms in A.clock_readings(answer) for m in ms for w in wanted)
        return true_time and _has_any(answer, CONTRAST + CANNOT)
    return False


def numbers(text: str) -> list[float]:
    return [q.value for q in A.quantities(text)]


def clock_minutes(text: str) -> list[int]:
    """Minutes since midnight of every clock time in the text (12- or 24-hour, digits or words)."""
    return list(A.clock_minutes(text))


def mentions_room(answer: str, room_id: str) -> bool:
    low = answer.lower()
    return room_id.lower() in low or room_id.replace("_", " ").lower() in low


def reports_value(answer: str, goal: RoomGoal | DeviceGoal) -> bool:
    """Does the answer give the goal's value as a person would: rounded to the decimals it
    writes, in natural or the tools' raw units (x100), "on"/"off", "none" for null, a list
    item by item?"""
    if isinstance(goal, RoomGoal):
        tol = VALUE_TOLERANCE[goal.state]
        scaled = goal.state in ("temperature", "humidity")  # tools' raw Matter form is x100
        return any(A.same_as_written(q, goal.value, tol)
                   or (scaled and abs(q.value - goal.value * 100) <= tol * 100) for q in A.quantities(answer))
    return _gives(answer, goal.value, _centi(goal))


def _centi(goal: DeviceGoal) -> bool:
    """Is the attribute in 0.01 units a person converts (700 -> "7 °C")?"""
    return any(w in goal.attribute for w in ("Temperature", "Setpoint")) or goal.cluster in (
        "TemperatureMeasurement", "RelativeHumidityMeasurement")


def _gives(answer: str, value: Any, centi: bool) -> bool:
    if value is None:
        return NOTHING.search(answer) is not None
    if isinstance(value, bool):
        answer = re.sub(r"\bon[/-]off\b", " ", answer, flags=re.IGNORECASE)
        return re.search(rf"\b{'on|true|yes' if value else 'off|false'}\b", answer, re.IGNORECASE) is not None
    if isinstance(value, (int, float)):
        options = [value] + ([value / 100] if centi else [])
        return any(A.same_as_written(q, v, 0.01) for q in A.quantities(answer) for v in options)
    if isinstance(value, list):
        return all(_gives(answer, item, centi) for item in value) if value else NOTHING.search(answer) is not None
    if isinstance(value, dict):  # a struct: its label or number is what a person repeats
        named = [v for k, v in value.items() if k.lower() in ("label", "name", "mode", "value")]
        return any(_gives(answer, v, centi) for v in (named or list(value.values())) if v is not None)
    low = answer.lower()
    text = str(value)
    spaced = re.sub(r"(?<=[a-z])(?=[A-Z])", " ", text.lstrip("k")).lower()   # kRunning -> running
    return text.lower() in low or spaced in low


def _read_device(history: list[dict[str, Any]], device_id: str) -> bool:
    for call in history:
        args = {str(k).replace("_", "."): v for k, v in (call.get("args") or {}).items()}
        if (call["tool"] in ("get_attribute", "get_all_attributes", "get_device_structure")
                and args.get("device.id") == device_id and call["result"].get("ok")):
            return True
    return False


# ---- the rule judge: what an answer must not say ---------------------------------------------------------
#: Claims of each kind of problem. An answer may only claim the kinds its episode has (ALLOWED).
CLAIMS: dict[str, re.Pattern[str]] = {
    "absence": re.compile(r"\b(?:there (?:is|are|'s) no (?!way|further|more|need)|there isn't an?y?\b|"
                          r"(?:does|do)(?: not|n't) exist|not found|could(?: not|n't) find|no such|"
                          r"is(?: not|n't) any|(?:do|does)(?: not|n't) (?:see|have)|missing|not available|"
                          r"unavailable)", re.IGNORECASE),
    "timing": re.compile(r"conflict|contradict|inconsistent|mismatch|(?:does|do)(?: not|n't) (?:match|line up|add up)|"
                         r"discrepan", re.IGNORECASE),
    "limit": re.compile(r"\b(?:already (?:at|on|running at|set to) (?:its |their |the )?(?:limit|max|maximum|minimum|"
                        r"full|lowest|highest|100)|at (?:its |their )?(?:limit|full capacity|maximum capacity)|"
                        r"(?:can(?:not|'t)|could(?: not|n't)) go (?:any )?(?:further|lower|higher))", re.IGNORECASE),
}
ALLOWED: dict[str, set[str]] = {
    "missing_device": {"absence"}, "no_actuator": {"absence"}, "at_capacity": {"limit"},
    "time_conflict": {"timing"}, "completion_conflict": {"timing"}, "deadline": {"timing"},
}
#: Claims of having done something (negated forms such as "I have not scheduled" do not match).
SUCCESS = re.compile(r"\bi(?:'ve| have)? (?:(?:now|just|also|already|then|went ahead and) )*(?:scheduled|turned|"
                     r"switched|set|started|adjusted|changed|lowered|raised|opened|closed|paused|reset|updated|"
                     r"dimmed|stopped)\b(?! (?:nothing|anything))|\bsuccessfully\b|\bdone\s*[.:!]|\ball set\b|"
                     r"\bhas been (?:scheduled|turned|switched|set|started|adjusted)\b", re.IGNORECASE)
#: A clause that only supposes or offers ("even if I started it now", "would you like me to
#: turn it on?", "once it finishes I could ...") claims nothing done.
SUPPOSING = re.compile(r"\b(?:if|unless|would|could|should|shall|once|whether|want me to|like me to|"
                       r"were to|can i|may i|might)\b|\?", re.IGNORECASE)
#: An answer that takes its own conclusion back ("it may be possible after all").
HEDGE = re.compile(r"\b(?:may|might|could) (?:still |actually |well |yet |just )?"
                   r"(?:be (?:possible|feasible|doable|fine|different|there|done|wrong|out of date|hidden)|"
                   r"work|make it|exist|change if)\b|"
                   r"\bafter all\b|\bthen again\b|\bshould be fine\b|\bmisread\b|\bsomething else entirely\b|"
                   r"\bnot (?:sure|certain) (?:that's|that is|it's|it is|this is|if that's) "
                   r"(?:right|correct|accurate)\b|"
                   r"\b(?:it's|it is) possible (?:the|its) (?:value|reading|number)\b|"
                   r"\bprobably (?:doesn't|does not|won't) matter\b|"
                   r"\b(?:it's|it is) possible (?:it|that|they)\b|"
                   r"\b(?:maybe|perhaps) (?:it|i|we|this|that|there|they) (?:is|are|can|could|will|was)\b(?! not)",
                   re.IGNORECASE)
#: A reason for "cannot" in QT2-IF: nothing there can do it, or what can is at its limit.
NO_ACTUATOR_REASON = re.compile(r"\b(?:no|none of the|not any|nothing|lacks?|without|doesn't have|does not have|"
                                r"only (?:has|have|a|an|the)|isn't an?|is not an?|aren't any|are not any)\b",
                                re.IGNORECASE)
LIMIT_REASON = re.compile(r"\balready\b|\bmaxed\b|\bno room left\b|\ball (?:it|they) can\b|\bnothing left\b|"
                          r"\b(?:is|are) (?:all )?(?:off|on|closed|open)\b|\bno (?:lights?|lamps?) (?:is |are )?on\b|"
                          r"\blevel 254\b|\b(?:max(?:imum)?|min(?:imum)?|lowest|highest|full(?:y)?|"
                          r"limit|as (?:high|low|far|much|cold|warm|dark|bright) as|100 ?%|all (?:the )?way)\b",
                          re.IGNORECASE)
#: A value given for a device: "is on", "set to 40", "at 40 %", "level is 89".
DEVICE_VALUE = re.compile(r"\b(?:is|are|was) (?:on|off|running|set)\b(?! up)|\bset to\b|\bat \d|\d+\s*(?:%|percent|°)|"
                          r"\blevel (?:is|of) \d", re.IGNORECASE)
#: Refusing or asking back (O.2.6/O.2.7 "resolution policy") on a timing conflict.
RESOLVES = re.compile(r"\?|\b(?:have not|haven't|did not|didn't|won't|will not|not) (?:be )?(?:scheduled?|done|set|"
                      r"act|go ahead|proceed)|\bplease (?:tell|confirm|let me know|choose|pick)|\bwhich (?:time|one)",
                      re.IGNORECASE)
#: Two states offered for one reading ("either on or off", "could be off, or possibly on").
CANDIDATE_STATES = re.compile(r"\b(?P<a>on|off|open|closed)\b,? or (?:\w+ ){0,3}(?!(?P=a)\b)(?:on|off|open|closed)\b",
                              re.IGNORECASE)
RAW_OUTPUT = re.compile(r"[{\[]\s*\"\w+\"\s*:")
#: A query sentence this long (words) repeated in the answer counts as echoing the query.
ECHO_WORDS = 4


def clauses(answer: str) -> list[str]:
    """Sentences cut at ; : and ", but"/" and" joins: the unit a claim is made in."""
    out = []
    for sentence in split_sentences(answer):
        out += [c.strip() for c in re.split(r"[;:]|,\s*(?:but|and|so)\b|\s+but\s+", sentence) if c.strip()]
    return out


def claims_done(answer: str) -> bool:
    """Does the answer say it did something (outside a clause that only supposes or offers)?"""
    return any(SUCCESS.search(c) and not SUPPOSING.search(c) for c in clauses(answer))


def _noun_pattern(type_key: str) -> str:
    # longest first: an alternation takes the first that matches ("dimmer light" over "dimmer")
    return "|".join(re.escape(n) + "(?:e?s)?" for n in sorted(NOUNS.get(type_key, ()), key=len, reverse=True))


_STATE_AFTER = r"\s+(?:is |are )?(?:on|off|running|open|closed|active|working|left|at|set(?! up)|currently)\b"


_ABSENT = re.compile(r"\b(?:there (?:is|are|'s|isn't|aren't) (?:no|not an?y?|not an?)|no|isn't an?y?|aren't any|"
                     r"(?:does|do)(?: not|n't) have an?y?|without an?y?|lacks? an?y?|not find an?y?|"
                     r"couldn't find an?y?)\s+", re.IGNORECASE)


def absent_types(sentence: str, asked: tuple[str, ...] = ()) -> set[str]:
    """Device types a sentence says are not there ("there is no AC", "no humidifier in the
    bedroom", "doesn't have a fan"); "there are no lights on" is about their state, not
    absence, and "no AC 2" is about one device. The noun read is the first after the trigger,
    and the longest there ("no dimmer light" is about dimmable lights, not lights). A noun in
    `asked` (the request's own word for a missing device) means that device: "there's no light"
    answering "turn on the light 1" does not say the dimmable light there is missing."""
    out: set[str] = set()
    for m in _ABSENT.finditer(sentence):
        after = sentence[m.end():m.end() + 60]
        best: tuple[int, int] | None = None
        kinds: set[str] = set()
        for type_key in NOUNS:
            hit = re.match(rf"(?:[\w-]+\s+){{0,2}}?({_noun_pattern(type_key)})\b", after, re.IGNORECASE)
            if hit:
                key = (hit.start(1), -len(hit.group(1)))
                if best is None or key < best:
                    best, kinds = key, {type_key}
                elif key == best:
                    kinds.add(type_key)
        if best is not None and re.sub(r"e?s$", "", after[best[0]:best[0] - best[1]].lower()) in asked:
            continue
        # "no AC 2": that one device (a name the user gave), not every AC, is missing
        if best is not None and not re.match(rf"(?:{_STATE_AFTER}|\s*\d)", after[best[0] - best[1]:], re.IGNORECASE):
            out |= kinds
    return out


def false_absence(episode: Episode, answer: str) -> list[str]:
    """Absence claims that the home contradicts: a type said missing in a room that has one
    (the room the sentence names, else the rooms the request is about)."""
    rooms, devices = _home(episode)
    request_rooms = related(episode)[0]
    inf = episode.infeasibility
    asked = tuple(w.lower() for g in inf.keywords for w in g) if inf and inf.kind == "missing_device" else ()
    out = []
    for sentence in split_sentences(answer):
        named = {rid for rid, name in rooms.items()
                 if any(_bounded(p).search(sentence) for p in {rid, rid.replace("_", " "), name})}
        types = absent_types(sentence, asked if inf and named <= set(inf.room_ids) else ())
        if not types:
            continue
        for type_key in types:
            where = named or request_rooms
            there = [d for d, (rid, t, _) in devices.items() if rid in where and t == type_key]
            if there:
                out.append(f"{type_key} in {', '.join(sorted(where))}")
    return out


#: "There's one in the bathroom", "the living room does have one", "the one in the utility room".
ALTERNATIVE = re.compile(r"\bthere(?:'s| is) one\b|\b(?:does|do) have one\b|\bhas one\b|\bthe one in\b",
                         re.IGNORECASE)


def wanted_types(episode: Episode, exact: bool = False) -> set[str]:
    """Device types the request lacks: the missing device's (every type its noun may mean, or
    `exact`ly the one the request names), or what could make the room change."""
    inf = episode.infeasibility
    if inf is None:
        return set()
    words = {w.lower() for group in inf.keywords for w in group}
    if inf.kind == "missing_device" and exact:   # the request's own phrase for the type ("light": on/off)
        return {t for t, phrase in T.DEVICE_PHRASES.items() if phrase.lower() in words} or wanted_types(episode)
    if inf.kind == "missing_device":
        return {t for t in NOUNS if words & set(NOUNS[t])}
    if inf.kind == "no_actuator":
        return {t for g in episode.goals if isinstance(g, RoomGoal) and g.direction
                for t in ACTUATORS.get((g.state, g.direction), ())}
    return set()


def false_alternatives(episode: Episode, answer: str) -> list[str]:
    """Rooms an answer offers as having what the request lacks ("there's one in the bathroom")
    that have none."""
    rooms, devices = _home(episode)
    types = wanted_types(episode, exact=True)
    out = []
    for sentence in split_sentences(answer):
        if not types or not ALTERNATIVE.search(sentence):
            continue
        named = {rid for rid, name in rooms.items()
                 if any(_bounded(p).search(sentence) for p in {rid, rid.replace("_", " "), name})}
        # "the living room has one, though it won't help the kitchen": one named room must have it
        if named and not any(r in named and t in types for r, t, _ in devices.values()):
            out += sorted(named)
    return out


def missing_elsewhere(episode: Episode, answer: str) -> bool:
    """Every sentence saying a device is not there names only rooms other than the request's."""
    rooms, _ = _home(episode)
    inf = episode.infeasibility
    where = []
    for sentence in split_sentences(answer):
        if absent_types(sentence) or CLAIMS["absence"].search(sentence):
            where.append({rid for rid, name in rooms.items()
                          if any(_bounded(p).search(sentence) for p in {rid, rid.replace("_", " "), name})})
    return bool(where) and inf is not None and all(named and not named & set(inf.room_ids) for named in where)


def _observed_numbers(episode: Episode, history: list[dict[str, Any]]) -> list[float]:
    """Numbers an answer may repeat: the query's, the goals', and every number the tools showed
    (with the 0.01-unit attributes also in natural units)."""
    out = [q.value for q in A.quantities(episode.query)]

    def walk(x: Any) -> None:
        if isinstance(x, bool) or x is None:
            return
        if isinstance(x, (int, float)):
            out.extend((float(x), x / 100))
        elif isinstance(x, dict):
            for v in x.values():
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)
    for call in history:
        if call["tool"] != "finish":
            walk(call.get("result"))
    for g in episode.goals:
        for x in (g.goals if isinstance(g, TimedGoal) else [g]):
            walk(x.value)
    return out


def invented_values(episode: Episode, history: list[dict[str, Any]], answer: str) -> list[str]:
    """Values the answer gives that neither the tools nor the request showed (rounded as written;
    small counts, durations and clock times aside): stuffed candidates and made-up readings."""
    seen = _observed_numbers(episode, history)
    _, devices = _home(episode)
    text = answer
    for device_id, (_, _, name) in devices.items():  # "Light 2" is a name, not a value
        for phrase in (device_id, name):
            if phrase:
                text = _bounded(phrase).sub(" ", text)
    text = re.sub(r"\b(?:[A-Za-z]+[ _-]?)(?<![0-9])\d\b(?!\s*(?:%|°|percent|degrees|lux|µg))", " ", text)
    text = re.sub(r"(?:/\s*|\bout of |\bof )254\b", " ", text)   # a level's scale ("98/254"), not a value
    levels = [v * 100 / 254 for v in seen if 0 <= v <= 254]          # "level 106 (about 42%)"
    stray = []
    for q in A.quantities(text):
        if q.unit in ("minute", "second", "hour") or (q.unit is None and q.decimals == 0 and 0 <= q.value <= 10):
            continue
        tol = 0.1 if q.unit in ("degC", "degree", "percent", "ugm3") else 1.0 if q.unit == "lux" else 0.01
        if not any(A.same_as_written(q, v, tol) for v in seen) and not (
                q.unit == "percent" and any(A.same_as_written(q, v, 0.5) for v in levels)):
            stray.append(f"{q.value:g}")
    return stray


def misattributed(episode: Episode, answer: str) -> list[str]:
    """A sentence that names one goal room and gives another goal room's value for the same
    state, not its own (values swapped between rooms); a clause that gives a QT1 goal's value
    and names only rooms other than the goal's, none of whose goals it gives (the right value
    told of the wrong room)."""
    out = wrong_room_clauses(episode, answer)
    goals = [g for g in episode.goals if isinstance(g, RoomGoal) and g.value is not None]
    rooms = {g.room_id for g in goals}
    for sentence in split_sentences(answer):
        named = {r for r in rooms if mentions_room(sentence, r)}
        if len(named) != 1:
            continue
        (room,) = named
        for g in goals:
            if g.room_id == room:
                continue
            own = [o for o in goals if o.room_id == room and o.state == g.state]
            if own and reports_value(sentence, g) and not any(reports_value(sentence, o) for o in own):
                out.append(f"{g.state} of {g.room_id} given for {room}")
    return out


def wrong_room_clauses(episode: Episode, answer: str) -> list[str]:
    if episode.query_type != "QT1":
        return []
    goals = [g for g in episode.goals if isinstance(g, (RoomGoal, DeviceGoal)) and not (
        isinstance(g, RoomGoal) and g.value is None)]
    out = []
    for clause in clauses(answer):
        named, _ = named_things(episode, re.sub(r"\s+\(", " in the ", clause))
        if not named:
            continue
        given = [g for g in goals if _about(episode, clause, g) and reports_value(clause, g)]
        for g in given:
            if g.room_id not in named and not any(o.room_id in named for o in given):
                what = g.state if isinstance(g, RoomGoal) else f"{g.device_id} {g.attribute}"
                out.append(f"{what} of {g.room_id} given for {', '.join(sorted(named))}")
    return out


def _about(episode: Episode, clause: str, goal: RoomGoal | DeviceGoal) -> bool:
    """Is the clause about the goal's kind of thing (its device's noun; any room value)?"""
    if isinstance(goal, RoomGoal):
        return True
    type_key = _home(episode)[1].get(goal.device_id, ("", "", None))[1]
    return type_key not in NOUNS or re.search(rf"\b(?:{_noun_pattern(type_key)})\b", clause, re.IGNORECASE) is not None


def _stock_absence(answer: str) -> bool:
    """Missing-device excuses with no device named ("not found", "no such device"): stuffing
    on an episode whose problem is timing."""
    return re.search(r"\bnot found\b|\bno such\b|\b(?:does|do)(?: not|n't) exist\b|\bmissing\b", answer,
                     re.IGNORECASE) is not None


def named_devices(episode: Episode) -> list[str]:
    """Devices of the home the query names one by one: in one sentence, its room and its type's
    noun with its number ("turn on dining room light 1", "the washer 2 in the utility room")."""
    rooms, devices = _home(episode)
    out = []
    for sentence in split_sentences(episode.query):
        for device_id, (room_id, type_key, _) in devices.items():
            number = re.search(r"_(\d+)$", device_id)
            in_room = mentions_room(sentence, room_id) or rooms[room_id].lower() in sentence.lower()
            if number is None or not in_room:
                continue
            if re.search(rf"\b(?:{_noun_pattern(type_key)})\s+{number[1]}\b", sentence, re.IGNORECASE):
                out.append(device_id)
    return sorted(set(out))


def _acted(history: list[dict[str, Any]]) -> bool:
    return any(call["tool"] in ("execute_command", "write_attribute", "schedule_workflow")
               and (call.get("result") or {}).get("ok") for call in history)


def _bounded(phrase: str) -> re.Pattern[str]:
    """`phrase` as a whole name: not inside a longer id, nor followed by an ordinal ("Light 2")."""
    return re.compile(rf"(?<![\w-]){re.escape(phrase)}(?![\w-]|\s+\d)", re.IGNORECASE)


def _home(episode: Episode) -> tuple[dict[str, str], dict[str, tuple[str, str, str | None]]]:
    """Rooms {id: name} and devices {id: (room id, type, name)} of the episode's home."""
    rooms, devices = {}, {}
    for room in episode.initial.home.rooms:
        rooms[room.id] = room.name or room.id
        for device in room.devices:
            devices[device.id] = (room.id, device.type, device.name)
    return rooms, devices


def related(episode: Episode) -> tuple[set[str], set[str]]:
    """Rooms and devices a sensible answer may name: the rooms the request names (query, goals,
    infeasibility), their devices, the anchor device, and for a missing device every device of
    that type (saying where one actually is helps the user)."""
    rooms, devices = _home(episode)
    by_name = {name.lower(): rid for rid, name in rooms.items()}
    room_ids: set[str] = set()
    asked_types: set[str] = set()
    for clause in T.parse_query(episode.query):
        for key in ("room", "aroom"):
            if key in clause.slots and clause.slots[key] in by_name:
                room_ids.add(by_name[clause.slots[key]])
        for key in ("dev", "adev"):
            if key in clause.slots:
                asked_types.add(clause.slots[key][0])
    goals = [g for t in episode.goals + episode.feasible_part
             for g in (t.goals if isinstance(t, TimedGoal) else [t])]
    room_ids |= {g.room_id for g in goals}
    inf = episode.infeasibility
    if inf is not None:
        room_ids |= set(inf.room_ids)
        if inf.anchor_device_id in devices:
            room_ids.add(devices[inf.anchor_device_id][0])
    device_ids = {d for d, (rid, _, _) in devices.items() if rid in room_ids}
    if inf is not None and inf.kind in ("missing_device", "no_actuator"):
        asked_types |= wanted_types(episode)
        # a helpful alternative: where that type actually is (its room, its devices)
        elsewhere = {d: rid for d, (rid, type_key, _) in devices.items() if type_key in asked_types}
        device_ids |= set(elsewhere)
        room_ids |= set(elsewhere.values())
    return room_ids, device_ids


def named_things(episode: Episode, answer: str) -> tuple[set[str], set[str]]:
    """Room ids and device ids the answer names (by id or name; a device's name does not also
    count as naming its room)."""
    rooms, devices = _home(episode)
    text = answer
    named_devices = set()
    for device_id, (_, _, name) in sorted(devices.items(), key=lambda d: -len(d[0])):
        for phrase in (device_id, name):
            if phrase and _bounded(phrase).search(text):
                named_devices.add(device_id)
                text = _bounded(phrase).sub(" ", text)
    named_rooms = {rid for rid, name in rooms.items()
                   if any(_bounded(p).search(text) for p in {rid, rid.replace("_", " "), name})}
    return named_rooms, named_devices


def allowed_minutes(episode: Episode, history: list[dict[str, Any]]) -> list[int]:
    """Clock times an answer may name: the query's own, the true times of the infeasibility,
    and the times the tools showed (the current time, current time + an observed CountdownTime)."""
    out = clock_minutes(episode.query)
    if episode.infeasibility is not None and episode.infeasibility.kind == "completion_conflict":
        # the request's own arithmetic: "9 minutes after it finishes and at 2:42 PM" assumes 2:33 PM
        offsets = [round(q.value * (60 if q.unit == "hour" else 1)) for q in A.quantities(episode.query)
                   if q.unit in ("minute", "hour")]
        out += [(t - d) % (24 * 60) for t in list(out) for d in offsets]
    if episode.infeasibility is not None:
        out += [int(t[:2]) * 60 + int(t[3:]) for t in episode.infeasibility.times]
    now = None
    for call in history:
        result = call.get("result") or {}
        if call["tool"] == "get_current_time" and result.get("ok"):
            hh, mm = result["current_time"][11:16].split(":")
            now = int(hh) * 60 + int(mm)
            out.append(now)
    for call in history:
        args = {str(k).replace("_", "."): v for k, v in (call.get("args") or {}).items()}
        result = call.get("result") or {}
        if (now is not None and call["tool"] == "get_attribute" and args.get("attribute.id") == "CountdownTime"
                and isinstance(result.get("value"), (int, float))):
            out += [(now + int(result["value"]) // 60 + k) % (24 * 60) for k in (0, 1)]
    return out


def _near(a: int, b: int) -> bool:
    d = abs(a - b) % (24 * 60)
    return min(d, 24 * 60 - d) <= 1


def echoes_query(query: str, answer: str) -> bool:
    flat = " ".join(answer.lower().split())
    return any(len(s.split()) >= ECHO_WORDS and " ".join(s.lower().split()).rstrip(".?!") in flat
               for s in split_sentences(query))


def copies_observations(history: list[dict[str, Any]], answer: str) -> bool:
    if RAW_OUTPUT.search(answer):
        return True
    for call in history:
        if call["tool"] == "finish":
            continue
        dumped = json.dumps(call.get("result"), ensure_ascii=False)
        if len(dumped) >= 30 and dumped in answer:
            return True
    return False


def fabricated_values(episode: Episode, answer: str) -> bool:
    """A sentence about the missing device that gives it a value and says nothing of its absence."""
    words = [w for group in episode.infeasibility.keywords for w in group] if episode.infeasibility else []
    for sentence in split_sentences(answer):
        if (_has_any(sentence, words) and DEVICE_VALUE.search(sentence) and not absent_types(sentence)
                and not CLAIMS["absence"].search(sentence) and not _has_any(sentence, CANNOT)):
            return True
    return False


class RuleJudge:
    """Deterministic stand-in for the LLM judge, from Appendix O.2's pass criteria. The answer is
    read as a person writes it (scenarios/answers.py: number words, clock times with or without
    the colon, units, values rounded to the decimals written) and its claims are checked against
    the episode and the tool history, wherever in the answer they stand.

    Recall (the answer says what it must):
    R1 the agent called finish;
    R2 QT1: every goal's value is given as observed (raw or converted units, rounded as written,
       "on"/"off", "none" for null, a list item by item), at least one asked room is named, and
       no sentence gives one room's value for another — O.2.1/O.2.2;
    R3 infeasible: it says what kind of problem this is (missing / cannot / conflict words, or
       for timing a true time set against the asked one) and names one of each keyword group;
       QT2-IF also says why (nothing there can do it; what can is already at its limit);
    R4 infeasible: it names one of the rooms involved and, for timing episodes, one true time
       (±1 min);
    R5 QT4-2/QT4-3: the agent read the operating appliance (CountdownTime) before answering;
    R6 timing conflicts: it refuses or asks which time is meant (O.2.6/O.2.7).

    Precision (the answer says nothing it must not):
    P1 nothing changed: a question (QT1) or an infeasible request leaves the home untouched;
    P2 it claims no other kind of problem than its episode's (stuffed excuses), and every "there
       is no X" is true of the room it names (else of the request's rooms); "no lights on" is a
       state, not an absence;
    P3 it names no room or device unrelated to the request (see `related`; where a missing type
       actually is counts as related: a helpful alternative);
    P4 every claim of having done something is backed by a successful action in the tool
       history, and on an infeasible request only by its feasible part; suppositions and offers
       ("even if I started it now", "shall I ...?") claim nothing; no values for a device it
       says is missing; no hedge that takes the conclusion back ("it may be possible after all");
    P5 every clock time is the query's, a true time of the episode, or one the tools showed;
       in QT1-QT3 every value given is one the tools or the request showed (no stuffed
       candidates, no made-up readings; small counts and durations aside);
    P6 it does not echo the query and is not raw tool output.
    """
    name = "rule"

    def judge(self, episode: Episode, session: Session, state_changed: bool) -> Verdict:
        answer = session.answer
        if answer is None:
            return Verdict(False, ["the agent never called finish"])
        failures = self._recall(episode, session, answer) + self._precision(episode, session, answer, state_changed)
        return Verdict(not failures, failures)

    @staticmethod
    def _recall(episode: Episode, session: Session, answer: str) -> list[str]:
        failures: list[str] = []
        report_goals = [g for g in episode.goals if isinstance(g, (RoomGoal, DeviceGoal))
                        and (episode.query_type == "QT1")]
        for goal in report_goals:
            if not reports_value(answer, goal):
                what = goal.state if isinstance(goal, RoomGoal) else f"{goal.device_id} {goal.attribute}"
                failures.append(f"the answer does not give {what} = {goal.value}")
        if report_goals and not any(mentions_room(answer, g.room_id) for g in report_goals):
            failures.append("the answer names none of the rooms asked about")
        failures += [f"the answer gives the {m}" for m in misattributed(episode, answer)]
        inf = episode.infeasibility
        if inf is None:
            return failures
        if not recognizes_problem(episode, answer):
            failures.append(f"the answer does not say the request is infeasible ({inf.kind})")
        elif inf.kind == "no_actuator" and not (NO_ACTUATOR_REASON.search(answer) or CLAIMS["absence"].search(answer)):
            failures.append("the answer says it cannot but not why (no device there can do it)")
        elif inf.kind == "at_capacity" and not (LIMIT_REASON.search(answer) or CLAIMS["limit"].search(answer)):
            failures.append("the answer says it cannot but not why (what could is already at its limit)")
        for group in inf.keywords:
            if inf.kind == "at_capacity" and LIMIT_REASON.search(answer):
                continue   # the limit in other words ("no lights on", "level 254", "maxed out")
            if inf.kind == "no_actuator" and NO_DEVICE_CAN.search(answer):
                continue   # "no device that raises the temperature" is the reason, in general words
            if inf.kind == "no_actuator" and any(re.search(rf"\b(?:{_noun_pattern(t)})\b", answer, re.IGNORECASE)
                                                 for t in wanted_types(episode)):
                continue   # any device that could do it named as lacking ("no heat pump or heater")
            if not _has_any(answer, group):
                failures.append(f"the answer names none of: {', '.join(group)}")
        if inf.room_ids and not any(mentions_room(answer, r) for r in inf.room_ids):
            failures.append(f"the answer names none of the rooms {', '.join(inf.room_ids)}")
        elif inf.kind == "missing_device" and missing_elsewhere(episode, answer):
            failures.append("the answer says the device is missing from another room than the one asked about")
        if inf.times:
            said = [m for ms in A.clock_readings(answer) for m in ms]
            wanted = [int(t[:2]) * 60 + int(t[3:]) for t in inf.times]
            if not any(_near(s, w) for s in said for w in wanted):
                failures.append(f"the answer names none of the times {', '.join(inf.times)} (±1 min)")
        if inf.kind in ("time_conflict", "completion_conflict") and not (RESOLVES.search(answer)
                                                                         or _has_any(answer, CANNOT)):
            failures.append("the answer neither refuses nor asks which time is meant")
        if inf.anchor_device_id and not _read_device(session.history, inf.anchor_device_id):
            failures.append(f"the agent never read the state of {inf.anchor_device_id}")
        return failures

    @staticmethod
    def _precision(episode: Episode, session: Session, answer: str, state_changed: bool) -> list[str]:
        failures: list[str] = []
        inf = episode.infeasibility
        if state_changed:
            failures.append("the agent changed device state or scheduled work on an infeasible request"
                            if inf is not None else "the agent changed device state when asked a question")
        if inf is not None:
            # absence is a claim about the home, checked against it (below), not a kind of excuse
            other = sorted(kind for kind, pattern in CLAIMS.items() if kind != "absence"
                           and kind not in ALLOWED[inf.kind] and pattern.search(answer))
            if other:
                failures.append(f"the answer also claims problems of another kind ({', '.join(other)}) "
                                f"than this episode's ({inf.kind})")
            if inf.kind not in ("missing_device", "no_actuator") and _stock_absence(answer):
                failures.append("the answer also claims problems of another kind (absence) "
                                f"than this episode's ({inf.kind})")
            if inf.kind == "missing_device" and fabricated_values(episode, answer):
                failures.append("the answer gives values for the missing device")
        if any(HEDGE.search(c) and "?" not in c for c in clauses(answer)):   # a question offers, not hedges
            failures.append("the answer takes its conclusion back (a hedge)")
        # a claim of action needs one; acting where nothing may change fails above (P1)
        if claims_done(answer) and not _acted(session.history):
            failures.append("the answer claims to have done something it did not do")
        wrong = false_absence(episode, answer)
        if wrong:
            failures.append("the answer says a device is missing that is there: " + "; ".join(wrong))
        false_offer = false_alternatives(episode, answer)
        if false_offer:
            failures.append("the answer offers an alternative where there is none: " + ", ".join(false_offer))
        # "either on or off" reads a device two ways; "nothing there to be on or off" reads none
        if any(CANDIDATE_STATES.search(sen) and not re.search(r"\bnothing\b|\bno\b", sen, re.IGNORECASE)
               for sen in split_sentences(answer)):
            failures.append("the answer gives several candidate states")
        if episode.query_type in ("QT1", "QT2", "QT3"):
            stray = invented_values(episode, session.history, answer)
            if stray:
                failures.append("the answer gives values neither observed nor asked: " + ", ".join(stray))
        rooms, devices = related(episode)
        named_rooms, named_devices = named_things(episode, answer)
        if named_rooms - rooms:
            failures.append("the answer names rooms unrelated to the request: "
                            + ", ".join(sorted(named_rooms - rooms)))
        if named_devices - devices:
            failures.append(f"the answer names devices unrelated to the request: "
                            f"{', '.join(sorted(named_devices - devices))}")
        allowed = allowed_minutes(episode, session.history)
        stray_times = [ms[0] for ms in A.clock_readings(answer) if not any(_near(m, a) for m in ms for a in allowed)]
        if stray_times:
            failures.append("the answer names clock times neither in the query nor observed: "
                            + ", ".join(f"{m // 60:02d}:{m % 60:02d}" for m in stray_times))
        if echoes_query(episode.query, answer):
            failures.append("the answer repeats the query")
        if copies_observations(session.history, answer):
            failures.append("the answer is raw tool output, not an explanation")
        return failures

# ---- the LLM judge --------------------------------------------------------------------------------------
_UNITS = ("Room states as the tools report them: temperature in °C (raw Matter form x100, 2350 = 23.5 °C), "
          "humidity in %RH (also x100 raw), illuminance in lux, PM10 in µg/m³. Raw and converted forms "
          "are both correct.")
_HEAD = ("You grade a smart-home assistant's work on one user request. Reply with exactly one "
         "character: A if it passes, B if it fails. Nothing else.")
CRITERIA: dict[str, str] = {
    "QT1-F": ("The user asked for information about rooms or devices. Pass only if the final answer "
              "covers every goal, each value matches what the tools returned (units may be converted), "
              "and the answer names the right room for each value.\n" + _UNITS),
    "QT1-IF": ("The user asked about a device that is not in the named room (and maybe about room "
               "states). Pass only if the answer clearly says that device does not exist there, invents "
               "no values for it, names the room, and reports any asked room states correctly.\n" + _UNITS),
    "QT2-IF": ("The user complained about a room, but the wanted change cannot be made: either no device "
               "there can make it, or every device that could is already at its limit (e.g. all ACs on, "
               "fan 100 %, setpoint at its minimum; all lights off and blinds closed; humidifiers at "
               "100 %). Pass only if the agent looked at the room's devices, says it cannot do it, gives "
               "the specific reason, names the room, claims no changes it did not make, and its facts "
               "match the tool observations."),
    "QT3-IF": ("The user asked to operate a device that is not in the named room. Pass only if the answer "
               "says the device does not exist there, names the room, does not claim to have operated "
               "it and invents no device data."),
    "QT4-1-IF": ("The user's relative time and absolute time contradict each other given the real current "
                 "time (±1 minute counts as equal). Pass if the agent recognizes the timing conflict and "
                 "either refuses to act as asked or stops and asks which time is meant. Fail if it ignores "
                 "the conflict and schedules anyway, or claims success."),
    "QT4-2-IF": ("The user's timing around an operating appliance's completion is contradictory (a wrong "
                 "assumed finish time, or a relative offset that does not give the stated clock time). "
                 "±1 minute counts as equal. Pass only if the agent read the appliance's CountdownTime "
                 "(Operational State) to find the real finish time, recognizes the conflict, and does not "
                 "go ahead (refuses or asks the user to pick one). Fail if it schedules anyway or claims "
                 "success."),
    "QT4-3-IF": ("The user wants two running appliances both finished by a deadline that cannot be met. "
                 "±1 minute counts as equal. Pass only if the agent read the appliances' Operational State "
                 "(CountdownTime), explains why the deadline is impossible, ideally gives the earliest "
                 "possible completion time, and changes nothing. Fail if it ignores the problem or claims "
                 "success."),
}


def describe_goals(episode: Episode) -> str:
    lines = []
    for g in episode.goals:
        if isinstance(g, RoomGoal):
            lines.append(f"room_state: {g.room_id} {g.state} " + (g.direction if g.direction else f"= {g.value}"))
        elif isinstance(g, DeviceGoal):
            lines.append(f"device_attribute: {g.room_id} {g.device_id} "
                         f"{g.endpoint}.{g.cluster}.{g.attribute} = {g.value}")
        elif isinstance(g, TimedGoal):
            lines.append(f"at +{g.at_seconds // 60} min: " + "; ".join(
                f"{x.device_id} {x.cluster}.{x.attribute} = {x.value}" for x in g.goals))
    if episode.infeasibility is not None:
        lines.append(f"infeasible ({episode.infeasibility.kind}): {episode.infeasibility.reason}")
    return "\n".join(lines) or "(none)"


def describe_steps(history: list[dict[str, Any]], limit: int = 1500) -> str:
    out = []
    for i, call in enumerate(history, 1):
        result = json.dumps(call["result"], ensure_ascii=False)
        if len(result) > limit:
            result = result[:limit] + " ...(truncated)"
        out.append(f"{i}. {call['tool']}({json.dumps(call['args'], ensure_ascii=False)}) -> {result}")
    return "\n".join(out) or "(no tool calls)"


def judge_messages(episode: Episode, session: Session) -> list[dict[str, str]]:
    criteria = CRITERIA.get(episode.category, CRITERIA["QT1-F"])
    user = (f"User query:\n{episode.query}\n\nGoals and context:\n{describe_goals(episode)}\n\n"
            f"Agent's tool calls and observations:\n{describe_steps(session.history)}\n\n"
            "Agent's final answer:\n"
            f"{session.answer if session.answer is not None else '(none: it never finished)'}\n\n"
            "Your decision: A or B")
    return [{"role": "system", "content": f"{_HEAD}\n\n{criteria}"}, {"role": "user", "content": user}]


class LLMJudge:
    """Majority of `votes` answers from an OpenAI-compatible chat endpoint. Other suites' LLM
    judges (scenarios/smh/judges.py) are this class with their own messages: `vote`."""

    def __init__(self, model: str, base_url: str | None = None, api_key: str | None = None,
                 votes: int = 3, client: Any = None):
        if client is None:
            import openai
            client = openai.OpenAI(base_url=base_url, api_key=api_key or "none")
        self.client = client
        self.model = model
        self.votes = votes
        self.name = f"llm:{model}"

    def vote(self, messages: list[dict[str, str]]) -> tuple[bool, list[str]]:
        """(A won the majority, the letters): each reply read as A when it starts with A, else B."""
        letters = []
        for _ in range(self.votes):
            reply = create_completion(self.client, {"model": self.model, "messages": messages, "temperature": 0})
            text = (reply.choices[0].message.content or "").strip().upper()
            letters.append("A" if text.startswith("A") else "B")
        tally = Counter(letters)
        return tally["A"] > tally["B"], letters

    def judge(self, episode: Episode, session: Session, state_changed: bool) -> Verdict:
        passed, letters = self.vote(judge_messages(episode, session))
        return Verdict(passed, [] if passed else [f"LLM judge voted {''.join(letters)}"], letters)
