"""Run HomeFlow tasks and score them: SMH-Bench's verifier (scenarios/smh/evaluate.py) on the
task's HomeMaker home, through the tools (the EIA setting) with the simulated user answering.

`validate` checks a set: shape (5 groups, 18 subcategories, the four sizes, homes under 10 and
over 100 devices), every task (home replays, conditions build, the reference solver passes,
the null agent fails) and the bounds (act-all at 0 % on TC3, stuffer and copier at 0 %).
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from bridge.twin_backend import TwinBackend
from scenarios.agent import Agent, AgentOutput
from scenarios.homeflow.tasks import SUBCATEGORIES, HomeFlowTask, build_home, home_spec, prompt
from scenarios.smh.bounds import BOUND_AGENTS, ActOnEverything, AnswerCopier, KeywordStuffer
from scenarios.smh.evaluate import begin as smh_begin
from scenarios.smh.reference import ReferenceAgent
from scenarios.suite import Attempt
from twin.home import Home

#: name -> (agent, the groups it must score 0 on); the null agent everywhere.
BOUNDS: dict[str, tuple[Any, tuple[str, ...]]] = {
    "act-all": (ActOnEverything(), ("TC3",)),
    "stuffer": (KeywordStuffer(), tuple(SUBCATEGORIES)),
    "copier": (AnswerCopier(), tuple(SUBCATEGORIES)),
}


def begin(task: HomeFlowTask, start: Any = None) -> Attempt:
    """An attempt (scenarios.suite.Attempt) at a task: SMH-Bench's, told the scene too."""
    attempt = smh_begin(task, start if start is not None else build_home(task))
    attempt.query = prompt(task)
    return attempt


def run(task: HomeFlowTask, agent: Agent, max_steps: int = 30, start: Home | None = None) -> dict[str, Any]:
    """One agent on the task (`start`: its home already built, which the attempt forks)."""
    attempt = begin(task, start)
    session = attempt.session
    try:
        out = agent.run(attempt.query, TwinBackend(attempt.home), session, max_steps)
    except Exception as exc:   # an agent that crashes fails its task, with the reason kept
        out = AgentOutput(None, len(session.history), error=f"{type(exc).__name__}: {exc}")
    verdict = attempt.score()
    return {"task_id": task.id, "category": task.category, "subcategory": task.subcategory, "tier": task.tier,
            "agent": getattr(agent, "name", "agent"), **verdict, "answer": session.answer,
            "tool_calls": len(session.history), **({"agent_error": out.error} if out.error else {})}


def shape(tasks: list[HomeFlowTask]) -> dict[str, Any]:
    devices = [sum(len(r.devices) for r in home_spec(t.home).rooms) for t in tasks]
    return {"tasks": len(tasks), "categories": dict(sorted(Counter(t.category for t in tasks).items())),
            "subcategories": len({t.subcategory for t in tasks}),
            "sizes": dict(sorted(Counter(t.tier for t in tasks).items())),
            "devices": [min(devices), max(devices)] if devices else []}


def shape_problems(tasks: list[HomeFlowTask], minimum: int = 1678) -> list[str]:
    found, out = shape(tasks), []
    if found["tasks"] < minimum:
        out.append(f"{found['tasks']} tasks; the evaluation set has at least {minimum}")
    if set(found["categories"]) != set(SUBCATEGORIES):
        out.append(f"groups {sorted(found['categories'])}; expected {sorted(SUBCATEGORIES)}")
    if found["subcategories"] != 18:
        out.append(f"{found['subcategories']} subcategories; expected 18")
    if found["devices"] and not (found["devices"][0] < 10 and found["devices"][1] > 100):
        out.append(f"homes of {found['devices'][0]}-{found['devices'][1]} devices; expected under 10 to over 100")
    return out


def verify(task: HomeFlowTask, start: Home | None = None) -> str | None:
    """Verification on the twin: the reference solver passes, the null agent fails (`start`: the
    task's home already built)."""
    start = start if start is not None else build_home(task)   # built once, forked per agent
    ref = run(task, ReferenceAgent(), start=start)
    if not ref["success"]:
        return f"the reference solver fails ({ref['error']})"
    if run(task, BOUND_AGENTS["null"][0], start=start)["success"]:
        return "the null agent passes"
    return None


def problems(task: HomeFlowTask) -> list[str]:
    try:
        why = verify(task)
    except (ValueError, KeyError) as exc:
        return [f"{task.id}: {exc}"]
    return [] if why is None else [f"{task.id}: {why}"]


def validate(tasks: list[HomeFlowTask], progress: Callable[[], None] | None = None,
             each: bool = True) -> tuple[list[str], dict[str, Any]]:
    """Problems of every task (`each`; generating a task runs the same check) and the bounds,
    and {bound agent: {group: successes}}."""
    out: list[str] = []
    scores: dict[str, Counter[str]] = {name: Counter() for name in BOUNDS}
    for task in tasks:
        out += problems(task) if each else []
        start = build_home(task)   # built once, forked per agent
        for name, (agent, _) in BOUNDS.items():
            scores[name][task.category] += run(task, agent, start=start)["success"]
        if progress is not None:
            progress()
    out += [f"the {name} agent passes {n} {group} task(s); it must score 0 there"
            for name, counts in scores.items() for group, n in sorted(counts.items())
            if n and group in BOUNDS[name][1]]
    return out, {k: dict(v) for k, v in scores.items()}
