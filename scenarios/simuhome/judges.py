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
from scenarios.model_api import create_completion
from scenarios.simuhome import templates as T
from scenarios.simuhome.schema import DeviceGoal, Episode, RoomGoal, TimedGoal, Verdict
from scenarios.simuhome.templates import split_sentences

CANNOT = ("can't", "cannot", "can not", "unable", "not able", "not possible", "impossible",
          "isn't possible", "is not possible", "no way", "not feasible", "infeasible", "won't be able",
          "couldn't", "could not")
MISSING = ("no ", "not find", "doesn't exist", "does not exist", "not exist", "isn't any", "is not any",
           "there is no", "there's no", "missing", "not found", "don't see", "do not see",
           "doesn't have", "does not have", "not available", "unavailable", "couldn't find")
CONFLICT = ("conflict", "contradict", "inconsistent", "mismatch", "doesn't match", "does not match",
            "discrepan", "don't match", "do not match", "don't line up", "doesn't line up", "not line up",
            "doesn't add up",
            "does not add up", "differ")
IMPLIED = {  # infeasibility kind -> the words an answer needs for it
    "missing_device": MISSING + CANNOT, "no_actuator": CANNOT, "at_capacity": CANNOT,
    "time_conflict": CONFLICT, "completion_conflict": CONFLICT, "deadline": CANNOT,
}
#: Tolerance when matching a reported room value (natural units).
VALUE_TOLERANCE = {"temperature": 0.1, "humidity": 0.1, "illuminance": 1.0, "pm10": 0.1}
_NUMBER = re.compile(r"-?\d+(?:[.,]\d+)?")
_CLOCK = re.compile(r"\b(\d{1,2}):(\d{2})(?::\d{2})?\s*([ap]\.?m\.?)?", re.IGNORECASE)


def _has_any(text: str, words: tuple[str, ...] | list[str]) -> bool:
    low = text.lower()
    return any(w.lower() in low for w in words)


def recognizes_problem(episode: Episode, answer: str) -> bool:
    """Does the answer say what kind of problem this is (missing, cannot, conflict)?"""
    return episode.infeasibility is not None and _has_any(answer, IMPLIED[episode.infeasibility.kind])


def numbers(text: str) -> list[float]:
    return [float(n.replace(",", ".")) for n in _NUMBER.findall(text)]


def clock_minutes(text: str) -> list[int]:
    """Minutes since midnight of every clock time in the text (12- or 24-hour)."""
    out = []
    for h, m, ampm in _CLOCK.findall(text):
        hour = int(h) % 24
        if ampm:
            hour = hour % 12 + (12 if ampm.lower().startswith("p") else 0)
        out.append(hour * 60 + int(m))
    return out


def mentions_room(answer: str, room_id: str) -> bool:
    low = answer.lower()
    return room_id.lower() in low or room_id.replace("_", " ").lower() in low


def reports_value(answer: str, goal: RoomGoal | DeviceGoal) -> bool:
    found = numbers(answer)
    if isinstance(goal, RoomGoal):
        tol = VALUE_TOLERANCE[goal.state]
        scaled = goal.state in ("temperature", "humidity")  # tools' raw Matter form is x100
        return any(abs(x - goal.value) <= tol or (scaled and abs(x - goal.value * 100) <= tol * 100)
                   for x in found)
    if isinstance(goal.value, bool):
        return re.search(rf"\b{'on' if goal.value else 'off'}\b", answer, re.IGNORECASE) is not None
    if isinstance(goal.value, (int, float)):
        options = [goal.value] + ([goal.value / 100] if goal.attribute.endswith("Setpoint") else [])
        return any(abs(x - v) < 0.01 for x in found for v in options)
    return str(goal.value).lower() in answer.lower()


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
SUCCESS = re.compile(r"\bi(?:'ve| have)? (?:now |just )?(?:scheduled|turned|switched|set|started|adjusted|changed|"
                     r"lowered|raised|opened|closed|paused|started)\b|\bsuccessfully\b|\bdone\s*[.:!]|\ball set\b|"
                     r"\bhas been (?:scheduled|turned|switched|set|started|adjusted)\b", re.IGNORECASE)
#: A value given for a device: "is on", "set to 40", "at 40 %", "level is 89".
DEVICE_VALUE = re.compile(r"\b(?:is|are|was) (?:on|off|running|set)\b|\bset to\b|\bat \d|\d+\s*(?:%|percent|°)|"
                          r"\blevel (?:is|of) \d", re.IGNORECASE)
#: Refusing or asking back (O.2.6/O.2.7 "resolution policy") on a timing conflict.
RESOLVES = re.compile(r"\?|\b(?:have not|haven't|did not|didn't|won't|will not|not) (?:be )?(?:scheduled?|done|set|"
                      r"act|go ahead|proceed)|\bplease (?:tell|confirm|let me know|choose|pick)|\bwhich (?:time|one)",
                      re.IGNORECASE)
RAW_OUTPUT = re.compile(r"[{\[]\s*\"\w+\"\s*:")
#: A query sentence this long (words) repeated in the answer counts as echoing the query.
ECHO_WORDS = 4


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
    if inf is not None and inf.kind == "missing_device":
        device_ids |= {d for d, (_, type_key, _) in devices.items() if type_key in asked_types}
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
        if (_has_any(sentence, words) and DEVICE_VALUE.search(sentence)
                and not CLAIMS["absence"].search(sentence) and not _has_any(sentence, CANNOT)):
            return True
    return False


class RuleJudge:
    """Deterministic stand-in for the LLM judge, from Appendix O.2's pass criteria.

    Recall (the answer says what it must):
    R1 the agent called finish;
    R2 QT1: for every goal the answer names its room and gives its value as observed (raw or
       converted units) — O.2.1/O.2.2 "goal fulfilment", "room state accuracy", "room name";
    R3 infeasible: it says what kind of problem this is (missing / cannot / conflict words) and
       names one of each keyword group (the device type, the limit) — "infeasibility recognition",
       "specific reasoning", "device analysis";
    R4 infeasible: it names the rooms involved and, for timing episodes, one true time (±1 min);
    R5 QT4-2/QT4-3: the agent read the operating appliance (CountdownTime) before answering;
    R6 QT2-IF no actuator: it says it cannot (O.2.4 "explicitly states it CANNOT"), not only
       that a device is missing; timing conflicts: it refuses or asks which time is meant
       (O.2.6/O.2.7 "resolution policy").

    Precision (the answer says nothing it must not):
    P1 nothing changed: a question (QT1) or an infeasible request leaves the home untouched —
       "no false operations", "does not proceed with execution";
    P2 it claims no other kind of problem than its episode's (a missing-device answer talks of no
       timing conflict or limit, a timing answer of no missing device, ...) — a stuffed list of
       excuses is not a "specific explanation";
    P3 it names no room, and no device, unrelated to the request (see `related`): the rooms the
       request names, their devices, the anchor, and for a missing device where that type is;
    P4 it claims no success ("I have scheduled", "Done.") on an infeasible request (unless the
       episode has a feasible part, which must be done: imported SimuHome QT3-IF), and gives no
       values for a device it says is missing — "no fake confirmation", "no fabricated data";
    P5 every clock time it names is the query's, a true time of the episode, or one the tools
       showed (±1 min) — "factual claims match the tool observations";
    P6 it does not echo the query (a query sentence of 4+ words repeated) and is not raw tool
       output (JSON, or an observation copied verbatim): an answer must explain.
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
            if not mentions_room(answer, goal.room_id):
                failures.append(f"the answer does not name the room {goal.room_id}")
            if not reports_value(answer, goal):
                what = goal.state if isinstance(goal, RoomGoal) else f"{goal.device_id} {goal.attribute}"
                failures.append(f"the answer does not give {what} = {goal.value}")
        inf = episode.infeasibility
        if inf is None:
            return failures
        if not recognizes_problem(episode, answer):
            failures.append(f"the answer does not say the request is infeasible ({inf.kind})")
        for group in inf.keywords:
            if not _has_any(answer, group):
                failures.append(f"the answer names none of: {', '.join(group)}")
        for room_id in inf.room_ids:
            if not mentions_room(answer, room_id):
                failures.append(f"the answer does not name the room {room_id}")
        if inf.times:
            said = clock_minutes(answer)
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
            other = sorted(kind for kind, pattern in CLAIMS.items()
                           if kind not in ALLOWED[inf.kind] and pattern.search(answer))
            if other:
                failures.append(f"the answer also claims problems of another kind ({', '.join(other)}) "
                                f"than this episode's ({inf.kind})")
            if SUCCESS.search(answer) and not episode.feasible_part:  # the feasible part may be reported done
                failures.append("the answer claims to have done something on an infeasible request")
            if inf.kind == "missing_device" and fabricated_values(episode, answer):
                failures.append("the answer gives values for the missing device")
        rooms, devices = related(episode)
        named_rooms, named_devices = named_things(episode, answer)
        if named_rooms - rooms:
            failures.append("the answer names rooms unrelated to the request: "
                            + ", ".join(sorted(named_rooms - rooms)))
        if named_devices - devices:
            failures.append(f"the answer names devices unrelated to the request: "
                            f"{', '.join(sorted(named_devices - devices))}")
        allowed = allowed_minutes(episode, session.history)
        stray = [m for m in clock_minutes(answer) if not any(_near(m, a) for a in allowed)]
        if stray:
            failures.append("the answer names clock times neither in the query nor observed: "
                            + ", ".join(f"{m // 60:02d}:{m % 60:02d}" for m in stray))
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
    """Majority of `votes` answers from an OpenAI-compatible chat endpoint."""

    def __init__(self, model: str, base_url: str | None = None, api_key: str | None = None,
                 votes: int = 3, client: Any = None):
        if client is None:
            import openai
            client = openai.OpenAI(base_url=base_url, api_key=api_key or "none")
        self.client = client
        self.model = model
        self.votes = votes
        self.name = f"llm:{model}"

    def judge(self, episode: Episode, session: Session, state_changed: bool) -> Verdict:
        messages = judge_messages(episode, session)
        letters = []
        for _ in range(self.votes):
            reply = create_completion(self.client, {"model": self.model, "messages": messages, "temperature": 0})
            text = (reply.choices[0].message.content or "").strip().upper()
            letters.append("A" if text.startswith("A") else "B")
        tally = Counter(letters)
        passed = tally["A"] > tally["B"]
        return Verdict(passed, [] if passed else [f"LLM judge voted {''.join(letters)}"], letters)
