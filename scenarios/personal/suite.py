"""PersonalHomeBench: residents live in the twin for a few virtual days; questions and proactive
tasks are drawn from that history. Households `household.py`/`households.py`, generator
`tasks.py`, evaluator and agents `evaluate.py`, the household tools `tools.py`."""
from __future__ import annotations

from pathlib import Path

from scenarios.personal.tasks import CATEGORIES, PersonalTask, load_tasks
from scenarios.personal.tools import household_tools
from scenarios.suite import Suite

DEFAULT_TASKS = Path(__file__).parent / "data" / "personal.jsonl"


SUITE = Suite(name="personal",
              summary="PersonalHomeBench: questions and plans from a simulated household's own history.",
              categories=CATEGORIES, default_tasks=DEFAULT_TASKS, load_tasks=load_tasks, tools=household_tools)

__all__ = ["SUITE", "DEFAULT_TASKS", "PersonalTask"]
