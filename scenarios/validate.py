"""The episode validator: every episode must be well formed, replayable and solvable as labelled.

Checks per episode: the home replays (every setup call succeeds) and lands on `start_time`;
goals and required actions name rooms and devices that exist (infeasible episodes may name a
missing device only in their query); the reference solver succeeds (simulator or rule judge)
and, for state-changing episodes, the null agent fails.
"""
from __future__ import annotations

from scenarios.evaluate import EpisodeError, build_home, run_episode
from scenarios.schema import DeviceGoal, Episode, RoomGoal, TimedGoal


def problems(episode: Episode, solve: bool = True) -> list[str]:
    from scenarios.agents.reference import ReferenceAgent
    from scenarios.agents.simple import NullAgent
    from scenarios.judges import RuleJudge
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
