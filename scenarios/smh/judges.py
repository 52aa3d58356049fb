"""SMH-Bench's judges: the replies no state check decides, TC7 answers (is the answer right?)
and TC3 clarifications (was the question the right one to ask?). As for SimuHome, two judges
with one interface (`answer`, `clarification`: (passed, error label)):

- `RuleJudge`, the default: TC7 by `judge_answer`'s rules below, TC3 by `judge_clarification`'s
  (that the question came before any change is the verifier's rule, for every judge).
- `LLMJudge`: any OpenAI-compatible model, SimuHome's LLM judge (scenarios.simuhome.judges:
  the same client, temperature 0, the majority of three A/B votes) asked with our own criteria.
"""
from __future__ import annotations

import functools
import json
import re
from typing import Any, Protocol

from scenarios.answers import quantities, same_as_written
from scenarios.simuhome.judges import LLMJudge as _Voter
from scenarios.smh.tasks import SmhTask
from twin.home import Home

_RAW = re.compile(r"[{\[]\s*\"\w+\"\s*:")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
#: Doubt that takes a stated finding back ("but I can't be sure", "it could be something else").
_DOUBT = re.compile(r"\bnot (?:sure|certain)\b|\bcan'?t be (?:sure|certain)\b|\b(?:may|might|could) (?:well )?be\b|"
                    r"\bprobably\b|\bi think\b|\bactually\b|\bit depends\b")
_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")
#: Yes/no questions by how they end -> (the state that means yes, the states that mean no).
_STATES = ((r" on$", "on", "off"), (r" locked$", "locked", "unlocked|not locked"),
           (r"^is charging enabled on ", "enabled", "disabled|not enabled|switched off|off"),
           (r" charging right now$", "charging", "not charging|discharging|idle"))


class Judge(Protocol):
    name: str

    def answer(self, task: SmhTask, reply: str, home: Home) -> tuple[bool, str]:
        ...

    def clarification(self, task: SmhTask, questions: list[str], home: Home | None = None) -> tuple[bool, str]:
        ...


def _names(home: Home) -> list[str]:
    names = [(spec.name or r).lower() for r, spec in home.rooms.items()]
    names += [home.device_info(d)["name"].lower() for d in home.devices.objects]
    return sorted(set(names), key=len, reverse=True)


def _statements(answer: str) -> str:
    """The reply without its questions (an offer such as "could it be anything else?" claims nothing)."""
    return " ".join(p for p in re.split(r"(?<=[.!?])\s+", answer) if not p.rstrip().endswith("?"))


def judge_answer(task: SmhTask, answer: str | None, home: Home) -> tuple[bool, str]:
    """The rule judge for TC7 replies: (passed, why not). A reply must state the expected value
    and nothing that contradicts it, and no doubt that takes it back ("not sure", "could be",
    "probably", "I think", "actually"); raw tool output (JSON) is not an answer.
    - yes/no: exactly one of the two words, or without either, "it is <state>" for the state the
      question asks about ("Is the lamp on?": "it is on" / "it is off");
    - a number: at least one number (names of rooms and devices and the numbers of the question
      left out; number words count, "none" is 0; °F is read as °C) and every number equal to it,
      or to it rounded to the decimals written ("about 23 degrees" for 23.4; ±0.15 for decimals);
    - a room: its name and no other room's."""
    assert task.answer is not None
    if not answer or not answer.strip():
        return False, "missing_response"
    if _RAW.search(answer):
        return False, "raw_output"
    text = f" {_statements(answer).lower()} "
    if _DOUBT.search(text):
        return False, "wrong_answer"
    kind, value = task.answer["kind"], task.answer["value"]
    if kind == "yesno":
        said = {w for w in ("yes", "no") if re.search(rf"\b{w}\b", text)}
        if not said:
            said = _state_said(task.query, text, home)
        return (said == {"yes" if value else "no"}), "wrong_answer"
    if kind == "room":
        rooms = sorted(((spec.name or r).lower(), r) for r, spec in home.rooms.items())
        mentioned = set()
        for name, room_id in sorted(rooms, key=lambda x: len(x[0]), reverse=True):
            if re.search(rf"\b{re.escape(name)}\b", text):
                mentioned.add(room_id)
                text = re.sub(rf"\b{re.escape(name)}\b", " ", text)
        return mentioned == {value}, "wrong_answer"
    for name in _names(home):
        text = text.replace(name, " ")
    asked = {float(n) for n in _NUMBER.findall(task.query)}
    tolerance = 0.15 if isinstance(value, float) else 0.0
    said = [q for q in quantities(text) if q.value not in asked or q.value == float(value)]
    if not said:
        words = re.findall(r"\b(none|no|" + "|".join(_WORDS) + r")\b", text)
        if len(words) == 1:   # "none", "three"
            return (0 if words[0] in ("none", "no") else _WORDS.index(words[0])) == value, "wrong_answer"
    ok = bool(said) and all(same_as_written(q, float(value), tolerance) for q in said)
    return ok, "wrong_answer"


def _state_said(question: str, text: str, home: Home) -> set[str]:
    """{"yes"} / {"no"} when the reply says "it is <state>" of the state a yes/no question asks about."""
    q = question.lower().rstrip("?").strip()
    for ending, yes, no in _STATES:
        if re.search(ending, q):
            subject = r"(?:it|the [\w ]+?|charging)(?:'s| is)(?: currently| now| still| right now)?"
            if re.search(rf"{subject} (?:{no})\b", text):
                return {"no"}
            if re.search(rf"{subject} {yes}\b", text):
                return {"yes"}
    return set()


def _request_places(task: SmhTask, home: Home) -> tuple[set[str], dict[str, str], list[tuple[str, str]]]:
    """(the rooms the request names, device name -> room, room names longest first)."""
    rooms = sorted((((spec.name or r).lower(), r) for r, spec in home.rooms.items()), key=lambda x: -len(x[0]))
    devices = {home.device_info(d)["name"].lower(): home.device_info(d)["room"] for d in home.devices.objects}
    query, named = f" {task.query.lower()} ", set()
    for name, room in rooms:
        if re.search(rf"\b{re.escape(name)}\b", query):
            named.add(room)
            query = re.sub(rf"\b{re.escape(name)}\b", " ", query)
    return named, devices, rooms


_OPEN = re.compile(r"^\W*(?:sure\W+)?(?:what|which|how)\b.*\b(?:should|would you like|do you want|change|adjust)\b")


def judge_clarification(task: SmhTask, questions: list[str], home: Home | None) -> tuple[bool, str]:
    """The rule judge for TC3: (passed, why not). Some question (a sentence ending in "?") must ask
    about what the request leaves open: a missing setting (slot_missing) by one of its words
    ("brightness", "speed", ...); a complaint or a scene by naming the request's room, one of
    its devices or a device the user means, or by asking openly what to change ("which devices
    should change, and how?") without naming anything elsewhere. Without the home (no names to
    read) any question counts."""
    asked = [q.strip().lower() for q in questions if q.strip().endswith("?")]
    if not asked:
        return False, "clarification_missing"
    slots = ((task.user or {}).get("slots") or {}).get("value")
    if slots:   # device names out first: "colour" in "the colour light" asks for nothing
        names = _names(home) if home is not None else []
        bare = [functools.reduce(lambda q, n: q.replace(n, " "), names, q) for q in asked]
        ok = any(re.search(rf"\b{re.escape(word)}", q) for q in bare for word in slots["keywords"])
        return ok, "" if ok else "clarification_inappropriate"
    if home is None:
        return True, ""
    here, devices, rooms = _request_places(task, home)
    targets = {home.device_info(d)["name"].lower() for d in task.targets}
    for question in asked:
        text, elsewhere, related = f" {question} ", False, False
        for name in sorted(devices, key=len, reverse=True):
            if re.search(rf"\b{re.escape(name)}\b", text):
                related |= devices[name] in here or name in targets
                elsewhere |= devices[name] not in here and name not in targets
                text = re.sub(rf"\b{re.escape(name)}\b", " ", text)
        for name, room in rooms:
            if re.search(rf"\b{re.escape(name)}\b", text):
                related |= room in here
                elsewhere |= room not in here
                text = re.sub(rf"\b{re.escape(name)}\b", " ", text)
        if related or (not elsewhere and _OPEN.search(question)):
            return True, ""
    return False, "clarification_inappropriate"


class RuleJudge:
    name = "rule"

    def answer(self, task: SmhTask, reply: str, home: Home) -> tuple[bool, str]:
        return judge_answer(task, reply, home)

    def clarification(self, task: SmhTask, questions: list[str], home: Home | None = None) -> tuple[bool, str]:
        return judge_clarification(task, questions, home)


_HEAD = ("You grade a smart-home assistant's reply to one user request. Reply with exactly one "
         "character: A if it passes, B if it fails. Nothing else.")
ANSWER_CRITERIA = ("The user asked about the current state of their home. You are given the question, the "
                   "correct answer (computed from the home's state) and the assistant's reply. Pass only if "
                   "the reply states the correct answer (numbers may be rounded to the question's precision "
                   "or converted to other units) and says nothing that contradicts it. Fail an empty reply, "
                   "raw tool output instead of an answer, or a reply that hedges between answers.")
CLARIFY_CRITERIA = ("The user's request leaves open what exactly they want (a complaint, a scene, or a missing "
                    "setting). You are given the request, what the user actually wants (hidden from the "
                    "assistant) and the questions the assistant asked the user before acting. Pass only if the "
                    "questions ask about what the request leaves open, so that the user's answer would tell "
                    "the assistant what to do. Fail if nothing was asked, or the questions are unrelated, or "
                    "only ask for confirmation of a guess the request gives no ground for.")


class LLMJudge:
    """An OpenAI-compatible model judging TC7 answers and TC3 clarifications."""

    def __init__(self, model: str, base_url: str | None = None, api_key: str | None = None,
                 votes: int = 3, client: Any = None):
        self.voter = _Voter(model, base_url=base_url, api_key=api_key, votes=votes, client=client)
        self.name = f"llm:{model}"

    def _ask(self, criteria: str, user: str) -> tuple[bool, str]:
        passed, letters = self.voter.vote([{"role": "system", "content": f"{_HEAD}\n\n{criteria}"},
                                           {"role": "user", "content": user + "\n\nYour decision: A or B"}])
        return passed, "" if passed else f"judge_{''.join(letters)}"

    def answer(self, task: SmhTask, reply: str, home: Home) -> tuple[bool, str]:
        assert task.answer is not None
        ok, why = self._ask(ANSWER_CRITERIA, f"Question:\n{task.query}\n\nCorrect answer:\n"
                            f"{json.dumps(task.answer['value'], ensure_ascii=False)}\n\nAssistant's reply:\n{reply}")
        return ok, "" if ok else "wrong_answer"

    def clarification(self, task: SmhTask, questions: list[str], home: Home | None = None) -> tuple[bool, str]:
        wanted = (task.user or {}).get("goal", "")
        asked = "\n".join(f"- {q}" for q in questions) or "(none)"
        ok, _ = self._ask(CLARIFY_CRITERIA, f"Request:\n{task.query}\n\nWhat the user actually wants:\n{wanted}\n\n"
                          f"Questions the assistant asked:\n{asked}")
        return ok, "" if ok else "clarification_inappropriate"


RULE_JUDGE = RuleJudge()


def make_judge(spec: str, base_url: str | None = None, api_key: str | None = None) -> Judge:
    """`rule` or `openai:MODEL` (base URL and key as for agents)."""
    if spec == "rule":
        return RULE_JUDGE
    if spec.startswith("openai:") and len(spec) > len("openai:"):
        import os
        return LLMJudge(spec[len("openai:"):], base_url=base_url or os.environ.get("OPENAI_BASE_URL"),
                        api_key=api_key or os.environ.get("OPENAI_API_KEY"))
    raise ValueError(f"unknown judge {spec!r}; accepted: rule, openai:MODEL")
