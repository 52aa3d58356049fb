"""Judges for QT1 and all infeasible episodes (SimuHome §4.3, Appendix O.2).

`RuleJudge` needs no LLM. It passes an answer when the agent finished, changed nothing (for
infeasible episodes), named the rooms, gave every value asked for (QT1; raw or converted
units), said it cannot / the device is missing / the times conflict, named the conflicting
clock time (±1 min) and read the operating device it reasons about.

`LLMJudge` asks any OpenAI-compatible endpoint with per-category criteria (our own wording of
Appendix O.2's), three times, and takes the majority of its one-letter A/B answers.
"""
from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any

from bridge.tools import Session

from scenarios.schema import DeviceGoal, Episode, RoomGoal, TimedGoal, Verdict

CANNOT = ("can't", "cannot", "can not", "unable", "not able", "not possible", "impossible",
          "isn't possible", "is not possible", "no way", "not feasible", "infeasible", "won't be able",
          "couldn't", "could not")
MISSING = ("no ", "not find", "doesn't exist", "does not exist", "not exist", "isn't any", "is not any",
           "there is no", "there's no", "missing", "not found", "don't see", "do not see",
           "doesn't have", "does not have", "not available", "unavailable", "couldn't find")
CONFLICT = ("conflict", "contradict", "inconsistent", "mismatch", "doesn't match", "does not match",
            "discrepan", "don't line up", "doesn't line up", "not line up", "doesn't add up",
            "does not add up", "differ")
IMPLIED = {  # infeasibility kind -> the words an answer needs for it
    "missing_device": MISSING + CANNOT, "no_actuator": MISSING + CANNOT, "at_capacity": CANNOT,
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


class RuleJudge:
    """Deterministic stand-in for the LLM judge (see the module docstring)."""
    name = "rule"

    def judge(self, episode: Episode, session: Session, state_changed: bool) -> Verdict:
        answer = session.answer
        if answer is None:
            return Verdict(False, ["the agent never called finish"])
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
        if inf is not None:
            if state_changed:
                failures.append("the agent changed device state or scheduled work on an infeasible request")
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
                if not any(abs(s - w) <= 1 or abs(s - w) >= 24 * 60 - 1 for s in said for w in wanted):
                    failures.append(f"the answer names none of the times {', '.join(inf.times)} (±1 min)")
            if inf.anchor_device_id and not _read_device(session.history, inf.anchor_device_id):
                failures.append(f"the agent never read the state of {inf.anchor_device_id}")
        return Verdict(not failures, failures)


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
            lines.append(f"device_attribute: {g.room_id} {g.device_id} {g.endpoint}.{g.cluster}.{g.attribute} = {g.value}")
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
            f"Agent's final answer:\n{session.answer if session.answer is not None else '(none: it never finished)'}\n\n"
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
            reply = self.client.chat.completions.create(model=self.model, messages=messages, temperature=0)
            text = (reply.choices[0].message.content or "").strip().upper()
            letters.append("A" if text.startswith("A") else "B")
        tally = Counter(letters)
        passed = tally["A"] > tally["B"]
        return Verdict(passed, [] if passed else [f"LLM judge voted {''.join(letters)}"], letters)
