"""The episode validator: every episode must be well formed, replayable and solvable as labelled.

Checks per episode: the home replays (every setup call succeeds) and lands on `start_time`;
goals and required actions name rooms and devices that exist (infeasible episodes may name a
missing device only in their query); the reference solver succeeds (simulator or rule judge)
and, for state-changing episodes, the null agent fails.

Then the validity bounds over the whole set (`score_bounds`): the reference solver must pass
every episode, and the null agent and the adversarial agents (scenarios/simuhome/adversarial.py)
must score 0 on every category they must fail — a judge that lets one through is not valid.
"""
from __future__ import annotations

import os
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from scenarios.agents.simple import NullAgent
from scenarios.simuhome.adversarial import ActOnEverything, AnswerCopier, KeywordStuffer
from scenarios.simuhome.evaluate import EpisodeError, build_home, run_episode
from scenarios.simuhome.judges import RuleJudge
from scenarios.simuhome.reference import ReferenceAgent
from scenarios.simuhome.schema import CATEGORIES, DeviceGoal, Episode, RoomGoal, TimedGoal


def problems(episode: Episode, solve: bool = True) -> list[str]:
    try:
        home = build_home(episode)
    except EpisodeError as exc:
        return [str(exc)]
    out = []
    if home.now != episode.initial.start_time:
        out.append(f"{episode.id}: replay ends at {home.now}, not start_time {episode.initial.start_time}")
    goals = [g for t in episode.goals for g in (t.goals if isinstance(t, TimedGoal) else [t])]
    for g in goals:
        if g.room_id not in home.rooms:
            out.append(f"{episode.id}: goal names unknown room {g.room_id!r}")
        if isinstance(g, DeviceGoal) and (g.device_id not in home.devices or home.room_of(g.device_id) != g.room_id):
            out.append(f"{episode.id}: goal device {g.device_id!r} is not in room {g.room_id!r}")
        if isinstance(g, RoomGoal) and episode.query_type not in ("QT1", "QT2"):
            out.append(f"{episode.id}: room_state goals belong to QT1/QT2")
    for req in episode.required_actions:
        room = req.args.get("room.id")
        if room is not None and room not in home.rooms:
            out.append(f"{episode.id}: required action names unknown room {room!r}")
    if out or not solve:
        return out
    judge = RuleJudge()
    ref = run_episode(episode, ReferenceAgent(), judge, start=home)
    if not ref["success"]:
        out.append(f"{episode.id}: the reference solver fails: {'; '.join(ref['failures'])}")
    if episode.simulator_scored and run_episode(episode, NullAgent(), judge, start=home)["success"]:
        out.append(f"{episode.id}: the null agent succeeds, so the goal asks for no change")
    return out


def validate(episodes: list[Episode], solve: bool = True) -> list[str]:
    found = []
    for episode in episodes:
        found += problems(episode, solve)
    return found


# ---- validity bounds: who must solve what, who must fail what ---------------------------------------------
def bound_agents() -> dict[str, tuple[Any, tuple[str, ...]]]:
    """{name: (agent class, categories it must fail)}; the reference must pass everything."""
    return {"reference": (ReferenceAgent, ()), "null": (NullAgent, CATEGORIES),
            "stuffer": (KeywordStuffer, KeywordStuffer.must_fail),
            "act-all": (ActOnEverything, ActOnEverything.must_fail),
            "copier": (AnswerCopier, AnswerCopier.must_fail)}


def _bound_successes(episode: Episode) -> dict[str, bool]:
    """Whether each bound agent succeeds on one episode (rule judge; one start home shared)."""
    judge = RuleJudge()
    start = build_home(episode)
    return {name: bool(run_episode(episode, agent(), judge, start=start)["success"])
            for name, (agent, _) in bound_agents().items()}


def score_bounds(episodes: list[Episode], workers: int | None = None) -> dict[str, Counter[str]]:
    """Successes per category of every bound agent, scored by the rule judge. Episodes are
    independent, so they run on every core (the counts do not depend on the order)."""
    scores: dict[str, Counter[str]] = {name: Counter() for name in bound_agents()}
    with ProcessPoolExecutor(max_workers=workers or os.cpu_count() or 1) as pool:
        for episode, successes in zip(episodes, pool.map(_bound_successes, episodes, chunksize=10)):
            for name, success in successes.items():
                scores[name][episode.category] += success
    return scores


def bound_problems(episodes: list[Episode], scores: dict[str, Counter[str]]) -> list[str]:
    total: Counter[str] = Counter(e.category for e in episodes)
    out = [f"reference solves {scores['reference'][c]}/{total[c]} of {c}"
           for c in CATEGORIES if scores["reference"][c] < total[c]]
    for name, (_, must_fail) in bound_agents().items():
        out += [f"{name} passes {scores[name][c]}/{total[c]} of {c}, where it must fail every one"
                for c in must_fail if scores[name][c]]
    return out


def bounds_table(episodes: list[Episode], scores: dict[str, Counter[str]]) -> str:
    """Successes per agent and category; `*` marks a category the agent must fail entirely."""
    total: Counter[str] = Counter(e.category for e in episodes)
    cats = [c for c in CATEGORIES if total[c]]
    lines = ["agent      " + " ".join(f"{c:>9}" for c in cats)]
    for name, (_, must_fail) in bound_agents().items():
        lines.append(f"{name:10} " + " ".join(f"{str(scores[name][c]) + ('*' if c in must_fail else ''):>9}"
                                              for c in cats))
    lines.append(f"{'episodes':10} " + " ".join(f"{total[c]:>9}" for c in cats))
    lines.append("* = must score 0 (null: does nothing; stuffer: every excuse and name; act-all: acts on "
                 "everything, then answers like the reference; copier: raw tool output)")
    return "\n".join(lines)
