"""`twin bench smh validate`: every task well formed and solvable as labelled, and the bounds.

Per task: its home replays; its goal predicates name things that exist; the reference solver
passes it in both settings (EIA through the tools, DR from the serialized home) with the same
verdict; the null agent fails it. Over the set: every bound agent (scenarios/smh/bounds.py)
scores 0 on the categories it must fail. Also the set's shape: 7 categories, 22 subcategories,
3 tiers.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from scenarios.smh.bounds import BOUND_AGENTS
from scenarios.smh.evaluate import run_dr, run_eia
from scenarios.smh.reference import ReferenceAgent, direct_reference
from scenarios.smh.tasks import SUBCATEGORIES, SmhTask, build_home
from twin.goals import Goal, GoalError


def shape(tasks: list[SmhTask]) -> dict[str, Any]:
    return {"tasks": len(tasks), "categories": dict(sorted(Counter(t.category for t in tasks).items())),
            "subcategories": len({t.subcategory for t in tasks}), "tiers": dict(Counter(t.tier for t in tasks))}


def shape_problems(tasks: list[SmhTask], minimum: int = 1100) -> list[str]:
    found = shape(tasks)
    out = []
    if found["tasks"] < minimum:
        out.append(f"{found['tasks']} tasks; the benchmark has at least {minimum}")
    if set(found["categories"]) != set(SUBCATEGORIES):
        out.append(f"categories {sorted(found['categories'])}; expected {sorted(SUBCATEGORIES)}")
    if found["subcategories"] != sum(map(len, SUBCATEGORIES.values())):
        out.append(f"{found['subcategories']} subcategories; expected 22")
    if set(found["tiers"]) != {"simple", "medium", "complex"}:
        out.append(f"tiers {sorted(found['tiers'])}; expected simple, medium, complex")
    return out


def problems(task: SmhTask) -> list[str]:
    try:
        home = build_home(task)
        if task.goal:
            Goal(home, [*task.goal, {"type": "unchanged", "except": list(task.targets)}])
    except (ValueError, GoalError) as exc:
        return [f"{task.id}: {exc}"]
    out = []   # one build of the start home for every run: each acts on its own fork
    eia, dr = run_eia(task, ReferenceAgent(), start=home), run_dr(task, direct_reference, "reference", start=home)
    for r in (eia, dr):
        if not r["success"]:
            out.append(f"{task.id}: the reference solver fails in {r['setting']} ({r['error']})")
    null = run_eia(task, BOUND_AGENTS["null"][0], start=home)
    if null["success"]:
        out.append(f"{task.id}: the null agent passes")
    return out


def bound_problems(tasks: list[SmhTask], progress: Callable[[], None] | None = None) -> tuple[list[str], dict]:
    """Problems, and {agent: {category: successes}} for every bound agent but null."""
    scores: dict[str, Counter[str]] = {name: Counter() for name in BOUND_AGENTS if name != "null"}
    for task in tasks:
        start = build_home(task)
        for name in scores:
            agent, _ = BOUND_AGENTS[name]
            scores[name][task.category] += run_eia(task, agent, start=start)["success"]
        if progress is not None:
            progress()
    out = [f"the {name} agent passes {n} {category} task(s); it must score 0 there"
           for name, counts in scores.items() for category, n in sorted(counts.items())
           if n and category in BOUND_AGENTS[name][1]]
    return out, {k: dict(v) for k, v in scores.items()}


def validate(tasks: list[SmhTask], progress: Callable[[], None] | None = None) -> list[str]:
    out = []
    for task in tasks:
        out += problems(task)
        if progress is not None:
            progress()
    return out
