"""HomeFlow: Blueprint tasks (profile, scene, intents, conditions) on HomeMaker homes from under
10 to over 100 devices, in SmartHome-Bench's 5 groups and 18 subcategories, each verified on the
twin. Blueprints `blueprint.py`, tasks `tasks.py`, running and validation `evaluate.py`; the
verifier, request language and reference solver are SMH-Bench's. Agents get the home tools."""
from __future__ import annotations

from typing import Any

from bridge.home_tools import HOME_TOOLS
from bridge.tools import ToolSet
from scenarios.homeflow.evaluate import begin
from scenarios.homeflow.generate import draw
from scenarios.homeflow.tasks import CATEGORIES, DEFAULT_TASKS, load_tasks
from scenarios.smh.evaluate import follow_up
from scenarios.suite import Suite


def tools_for(task: Any) -> ToolSet:
    return HOME_TOOLS


SUITE = Suite(name="homeflow", title="HomeFlow",
              summary="HomeFlow: Blueprint tasks on HomeMaker homes (<10 to >100 devices), 5 groups, 18 subcategories.",
              categories=CATEGORIES, default_tasks=DEFAULT_TASKS, load_tasks=load_tasks, tools=tools_for,
              attempt=begin, draw=draw, follow_up=follow_up)
