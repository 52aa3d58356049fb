"""SMH-Bench (Li et al. 2026, our own implementation from its definitions): seven capability
categories in 22 subcategories on homes of three tiers (up to 31 nested rooms and 135 devices),
scored on the simulator with irrelevant-state preservation, in the DR and EIA settings.
Homes are HomeMaker's tiers (`tasks.home_spec`); wording `language.py`, generator `tasks.py`,
verifier `evaluate.py`, reference solver `reference.py`, bound agents `bounds.py`, checks
`validate.py`. Its agents get the home tools (query_home, automations) beside SimuHome's."""
from __future__ import annotations

from typing import Any

from bridge.home_tools import HOME_TOOLS
from bridge.tools import ToolSet
from scenarios.smh.evaluate import begin, follow_up
from scenarios.smh.tasks import CATEGORIES, DEFAULT_TASKS, load_tasks
from scenarios.suite import Suite


def tools_for(task: Any) -> ToolSet:
    return HOME_TOOLS


SUITE = Suite(name="smh", title="SMH-Bench",
              summary="SMH-Bench: 7 capability categories, 22 subcategories, homes up to 135 devices; DR and EIA.",
              categories=CATEGORIES, default_tasks=DEFAULT_TASKS, load_tasks=load_tasks, tools=tools_for,
              attempt=begin, follow_up=follow_up)
