"""SMH-Bench's judges: the replies no state check decides, TC7 answers (is the answer right?)
and TC3 clarifications (was the question the right one to ask?). As for SimuHome, two judges
with one interface (`answer`, `clarification`: (passed, error label)):

- `RuleJudge`, the default: TC7 by `judge_answer`'s rules below; TC3, any question counts (that
  it came before any change is the verifier's rule, for every judge).
- `LLMJudge`: any OpenAI-compatible model, SimuHome's LLM judge (scenarios.simuhome.judges:
  the same client, temperature 0, the majority of three A/B votes) asked with our own criteria.
"""
from __future__ import annotations

import json
import re
from typing import Any, Protocol

from scenarios.simuhome.judges import LLMJudge as _Voter
from scenarios.smh.tasks import SmhTask
from twin.home import Home

_RAW = re.compile(r"[{\[]\s*\"\w+\"\s*:")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


class Judge(Protocol):
    name: str

    def answer(self, task: SmhTask, reply: str, home: Home) -> tuple[bool, str]:
        ...

    def clarification(self, task: SmhTask, questions: list[str]) -> tuple[bool, str]:
        ...


def _names(home: Home) -> list[str]:
    names = [(spec.name or r).lower() for r, spec in home.rooms.items()]
    names += [home.device_info(d)["name"].lower() for d in home.devices.objects]
    return sorted(set(names), key=len, reverse=True)


def judge_answer(task: SmhTask, answer: str | None, home: Home) -> tuple[bool, str]:
    """The rule judge for TC7 replies: (passed, why not). A reply must state the expected value
    and nothing that contradicts it: for yes/no exactly one of the two words; for a number, at
    least one number (names of rooms and devices and the numbers of the question left out)
    and every number equal to it (±0.15 for decimals); for a room, its name and no other room's.
    Raw tool output (JSON) is not an answer."""
    assert task.answer is not None
    if not answer or not answer.strip():
        return False, "missing_response"
    if _RAW.search(answer):
        return False, "raw_output"
    text = f" {answer.lower()} "
    kind, value = task.answer["kind"], task.answer["value"]
    if kind == "yesno":
        said = {w for w in ("yes", "no") if re.search(rf"\b{w}\b", text)}
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
    numbers = [float(n) for n in _NUMBER.findall(text) if float(n) not in asked or float(n) == float(value)]
    tolerance = 0.15 if isinstance(value, float) else 0.0
    ok = bool(numbers) and all(abs(n - float(value)) <= tolerance for n in numbers)
    return ok, "wrong_answer"


class RuleJudge:
    name = "rule"

    def answer(self, task: SmhTask, reply: str, home: Home) -> tuple[bool, str]:
        return judge_answer(task, reply, home)

    def clarification(self, task: SmhTask, questions: list[str]) -> tuple[bool, str]:
        ok = any(q.strip() for q in questions)
        return ok, "" if ok else "clarification_missing"


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

    def clarification(self, task: SmhTask, questions: list[str]) -> tuple[bool, str]:
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
