"""PersonalHomeBench: residents live in the twin for a few virtual days; questions and proactive
tasks are drawn from that history. Households `household.py`/`households.py`, generator
`tasks.py`, evaluator and agents `evaluate.py`, the household tools `tools.py`."""
from __future__ import annotations

from pathlib import Path

from bridge.tools import Session
from scenarios.personal.evaluate import lived, score
from scenarios.personal.household import Household
from scenarios.personal.tasks import CATEGORIES, PersonalTask, load_tasks
from scenarios.personal.tools import household_tools
from scenarios.suite import Attempt, Suite

DEFAULT_TASKS = Path(__file__).parent / "data" / "personal.jsonl.gz"
#: The households the committed tasks are about, beside them (scenarios/personal/households.py).
HOUSEHOLDS_PACK = "personal_households.jsonl.gz"


def attempt(task: PersonalTask, start: Household | None = None) -> Attempt:
    """The task's household lived to the task's time (its files beside the committed tasks; or a
    fork of `start`, that household already lived), a session with its household tools, scored
    by the rules (no judge model)."""
    lived_once = start if start is not None else lived(task, DEFAULT_TASKS.parent)
    household = lived_once.fork()
    session = Session(tools=household_tools(household))
    return Attempt(task.id, task.category, task.question, household.home, session,
                   lambda: score(task, session.answer, household), lived_once)


SUITE = Suite(name="personal", title="PersonalHomeBench",
              summary="PersonalHomeBench: questions and plans from a simulated household's own history.",
              categories=CATEGORIES, default_tasks=DEFAULT_TASKS, load_tasks=load_tasks, tools=household_tools,
              attempt=attempt)

__all__ = ["SUITE", "DEFAULT_TASKS", "PersonalTask"]
