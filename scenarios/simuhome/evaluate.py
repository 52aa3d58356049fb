"""Run one episode and score it (SimuHome §4.3).

- Feasible QT2-QT4 are scored on the simulator: the agent acts on its own copy of the
  episode's home (virtual time stands still while it works), then the home is fast-forwarded
  to each goal time and compared with the goal. Device attributes must match exactly; a room
  direction goal is met when the room's value at the horizon differs from the value in the
  same home left alone, with the right sign; a timed goal must hold at its tick and not all
  hold one tick before. Required actions must appear in the tool-call history.
- QT1 and every infeasible episode go to a judge (scenarios/simuhome/judges.py): rule-based or LLM.
"""
from __future__ import annotations

import contextlib
import time
from datetime import timedelta
from typing import Any, Protocol

from bridge.backend import Backend
from bridge.tools import Session, call_tool
from bridge.twin_backend import TwinBackend
from clusters.values import to_json
from scenarios.agent import Agent, AgentOutput, Serve, in_process
from scenarios.model_api import ModelAPIError
from scenarios.simuhome.judges import named_devices, recognizes_problem
from scenarios.simuhome.names import our_endpoint
from scenarios.simuhome.schema import DeviceGoal, Episode, InitialState, RoomGoal, TimedGoal, Verdict
from twin.home import Home

#: Smallest change that counts as a direction, per room state (natural units).
DIRECTION_EPSILON = {"temperature": 0.01, "humidity": 0.01, "pm10": 0.01, "illuminance": 0.5}
#: What the simulated user answers when the agent calls ask_user.
USER_REPLY = "I'm not sure. Please go with what you found, and tell me if something is off."


def agent_session() -> Session:
    """A tool session whose simulated user answers every ask_user with USER_REPLY."""
    return Session(ask_user=lambda question: USER_REPLY)


STATE_TOOLS = ("execute_command", "write_attribute", "schedule_workflow", "cancel_workflow")


class EpisodeError(Exception):
    """An episode whose initial state cannot be rebuilt (a bad setup call or start time)."""


class Judge(Protocol):
    name: str

    def judge(self, episode: Episode, session: Session, state_changed: bool) -> Verdict:
        ...


# ---- the initial home ----------------------------------------------------------------------
def replay(initial: InitialState) -> Home:
    """The home at `initial.start_time`: layout, then the setup calls, each at its offset."""
    home = Home.from_spec(initial.home)
    backend = TwinBackend(home)
    session = Session()
    for i, call in enumerate(initial.setup):
        home.run_until(initial.home.start_time + timedelta(seconds=call.at_seconds))
        result = call_tool(backend, call.tool, call.args, session)
        if not result.get("ok"):
            raise EpisodeError(f"initial.setup[{i}] ({call.tool}) failed: "
                               f"{result.get('error', {}).get('message')}")
    home.run_until(initial.start_time)
    for room_id, values in initial.rooms_at_start.items():
        home.set_room_state(room_id, **values)
    return home


def build_home(episode: Episode) -> Home:
    try:
        return replay(episode.initial)
    except EpisodeError as exc:
        raise EpisodeError(f"{episode.id}: {exc}") from None


def feasible_part_devices(episode: Episode) -> frozenset[str]:
    """Devices the feasible part of an infeasible request may change: its goals', and in a
    QT3-IF request the devices it names that do exist (SimuHome's agents do that half and
    report the rest; the judge then needs the answer to say what could not be done)."""
    names = set(named_devices(episode)) if episode.category == "QT3-IF" else set()
    for goal in episode.feasible_part:
        for g in goal.goals if isinstance(goal, TimedGoal) else [goal]:
            if isinstance(g, DeviceGoal):
                names.add(g.device_id)
    return frozenset(names)


def endpoint_alias(episode: Episode) -> Any:
    """Imported SimuHome episodes accept SimuHome's endpoint ids (see scenarios/simuhome/importer.py)."""
    return our_endpoint if episode.source == "simuhome" else None


def device_states(home: Home, ignore: frozenset[str] = frozenset()) -> dict[str, Any]:
    """Every device attribute value plus the live workflows: what "no state changed" compares
    (devices in `ignore` left out)."""
    backend = TwinBackend(home)
    return {"devices": {d: backend.read_all_attributes(d) for d in sorted(home.devices) if d not in ignore},
            "workflows": [w.to_json()["steps"] for w in home.workflows.list() if w.status != "cancelled"]}


def read_goal(home: Home, goal: DeviceGoal) -> Any:
    """The goal's attribute as the tools report it; "CurrentChannel.MajorNumber" descends
    into a struct's field (field names compared without case, as SimuHome spells them)."""
    attribute, *fields = goal.attribute.split(".")
    device = home.device(goal.device_id)
    value = to_json(device.read(goal.cluster, attribute, endpoint_id=goal.endpoint))
    for name in fields:
        if not isinstance(value, dict):
            raise KeyError(f"{goal.attribute}: {name} of a non-struct value")
        matches = [k for k in value if k.lower() == name.lower()]
        if not matches:
            raise KeyError(f"{goal.attribute}: no field {name}")
        value = value[matches[0]]
    return value


def goal_holds(home: Home, goal: DeviceGoal) -> bool:
    try:
        return read_goal(home, goal) == goal.value
    except Exception:  # a goal on a device that no longer answers simply does not hold
        return False


# ---- required actions ----------------------------------------------------------------------
def _norm(value: Any) -> Any:
    return value.strip().lower() if isinstance(value, str) else value


def missing_actions(episode: Episode, history: list[dict[str, Any]]) -> list[str]:
    missing = []
    for req in episode.required_actions:
        want = {k.replace("_", "."): _norm(v) for k, v in req.args.items()}
        found = False
        for call in history:
            if call["tool"] != req.tool or not call["result"].get("ok"):
                continue
            args = {str(k).replace("_", "."): _norm(v) for k, v in (call["args"] or {}).items()}
            if all(args.get(k) == v for k, v in want.items()):
                found = True
                break
        if not found:
            missing.append(f"required action {req.tool}({', '.join(f'{k}={v}' for k, v in req.args.items())}) "
                           "not in the tool history")
    return missing


# ---- simulator-based scoring ---------------------------------------------------------------
def score_on_simulator(episode: Episode, start: Home, acted: Home,
                       goals: list[DeviceGoal | RoomGoal | TimedGoal] | None = None) -> Verdict:
    """Fast-forward `acted` (and an untouched copy of `start` for room goals) through the goal
    checkpoints of `goals` (default: the episode's). Both homes are at the episode start tick
    on entry; `acted` is consumed."""
    goals = episode.goals if goals is None else goals
    t0 = acted.clock.tick
    baseline = start.fork() if any(isinstance(g, RoomGoal) for g in goals) else None
    checks: list[tuple[int, int, Any]] = []  # (tick, order, goal)
    for i, goal in enumerate(goals):
        if isinstance(goal, DeviceGoal):
            checks.append((t0 + episode.settle_seconds * 10, i, goal))
        elif isinstance(goal, RoomGoal):
            checks.append((t0 + episode.horizon_seconds * 10, i, goal))
        elif goal.tolerance_seconds is not None:
            checks.append((t0 + max(0, goal.at_seconds - goal.tolerance_seconds) * 10, i, ("window", goal)))
        else:
            checks.append((t0 + goal.at_seconds * 10 - 1, i, ("before", goal)))
            checks.append((t0 + goal.at_seconds * 10, i, goal))
    failures: list[str] = []
    for tick, _, goal in sorted(checks, key=lambda c: (c[0], c[1])):
        # A window walked for an earlier goal may have gone past this check's tick: SimuHome's
        # checkpoints only move forward too (what has been checked is not re-run).
        when = acted.clock.time_at(max(tick, acted.clock.tick))
        acted.run_until(when)
        if isinstance(goal, DeviceGoal):
            if not goal_holds(acted, goal):
                failures.append(f"{goal.device_id} {goal.endpoint}.{goal.cluster}.{goal.attribute} is "
                                f"{_safe_read(acted, goal)!r}, expected {goal.value!r}")
        elif isinstance(goal, RoomGoal):
            baseline.run_until(when)
            got = getattr(acted.rooms[goal.room_id], goal.state)
            ref = getattr(baseline.rooms[goal.room_id], goal.state)
            delta = got - ref
            eps = DIRECTION_EPSILON[goal.state]
            ok = delta > eps if goal.direction == "increase" else delta < -eps
            if not ok:
                failures.append(f"{goal.room_id} {goal.state} should {goal.direction}: "
                                f"{got:.3f} vs {ref:.3f} untouched")
        elif isinstance(goal, tuple) and goal[0] == "window":
            timed = goal[1]
            if not _holds_within(acted, timed, t0):
                failures.append(f"at +{timed.at_seconds} s ±{timed.tolerance_seconds} s: never all hold together: "
                                + "; ".join(f"{g.device_id} {g.endpoint}.{g.cluster}.{g.attribute} is "
                                            f"{_safe_read(acted, g)!r}, expected {g.value!r}" for g in timed.goals))
        elif isinstance(goal, tuple):  # one tick before a timed goal: not all may hold yet
            timed = goal[1]
            if all(goal_holds(acted, g) for g in timed.goals):
                failures.append(f"goals due at +{timed.at_seconds} s already hold one tick earlier")
        else:
            for g in goal.goals:
                if not goal_holds(acted, g):
                    failures.append(f"at +{goal.at_seconds} s: {g.device_id} {g.endpoint}.{g.cluster}."
                                    f"{g.attribute} is {_safe_read(acted, g)!r}, expected {g.value!r}")
    return Verdict(not failures, failures)


def _holds_within(home: Home, timed: TimedGoal, t0: int) -> bool:
    """Walk `home` tick by tick through the rest of the goal's window (it is at the window's
    start or later) and stop at the first tick where every goal holds; SimuHome checks the
    same ticks."""
    assert timed.tolerance_seconds is not None
    last = t0 + (timed.at_seconds + timed.tolerance_seconds) * 10
    while home.clock.tick <= last:
        if all(goal_holds(home, g) for g in timed.goals):
            return True
        if home.clock.tick == last:
            break
        home.run_until(home.clock.time_at(home.clock.tick + 1))
    return False


def _safe_read(home: Home, goal: DeviceGoal) -> Any:
    try:
        return read_goal(home, goal)
    except Exception as exc:
        return f"<{exc}>"


# ---- one episode, end to end -----------------------------------------------------------------
def score(episode: Episode, start: Home, acted: Home, session: Session, judge: Judge,
          answer: str | None) -> dict[str, Any]:
    """The verdict on what an agent left in `acted` (consumed) starting from `start`: the same
    rules whoever drove the tools (an agent run, a gymnasium environment, a replay)."""
    missing = missing_actions(episode, session.history)
    allowed = feasible_part_devices(episode)
    changed = device_states(acted, allowed) != device_states(start, allowed)
    if episode.simulator_scored:
        verdict = score_on_simulator(episode, start, acted)
        method = "simulator"
    else:
        verdict = judge.judge(episode, session, changed)
        method = judge.name
        if episode.feasible_part:  # the feasible part must be done as well as explained
            done = score_on_simulator(episode, start, acted, episode.feasible_part)
            verdict = Verdict(verdict.passed and done.passed, verdict.failures + done.failures, verdict.votes)
            method += "+simulator"
    failures = missing + verdict.failures
    success = not failures and verdict.passed
    record = {
        "success": success, "method": method, "failures": failures, "judge_votes": verdict.votes,
        "answer": answer, "steps": len(session.history), "state_changed": changed,
        # Every call with its full result: what trajectory export replays and trains on; an
        # LLM agent's text before a call ("thought") only where there is one.
        "history": [{"tool": h["tool"], "args": h["args"], "ok": bool(h["result"].get("ok")),
                     "result": h["result"], **({"thought": h["thought"]} if h.get("thought") else {})}
                    for h in session.history],
    }
    record["error_type"] = None if success else classify_error(episode, record, missing, verdict)
    return record


def run_episode(episode: Episode, agent: Agent, judge: Judge, max_steps: int = 30,
                start: Home | None = None, serve: Serve = in_process) -> dict[str, Any]:
    """Run `agent` on its own fork of the episode's home, reached through `serve`, and score
    that home. Returns a result record (`latency_s`, the only wall-clock figure, is the
    runner's to keep apart)."""
    start = start if start is not None else build_home(episode)
    acted = start.fork()
    alias = endpoint_alias(episode)
    if serve is in_process and alias is not None:  # over Matter, nodes answer strictly as products do
        def serve(home: Home) -> contextlib.AbstractContextManager[Backend]:
            return contextlib.nullcontext(TwinBackend(home, endpoint_alias=alias))
    session = agent_session()
    with serve(acted) as backend:
        wall = time.perf_counter()
        try:
            out = agent.run(episode.query, backend, session, max_steps)
        except ModelAPIError:
            raise
        except Exception as exc:  # an agent crash is a failed episode, not a failed run
            out = AgentOutput(None, len(session.history), error=f"{type(exc).__name__}: {exc}")
        latency = time.perf_counter() - wall
    answer = session.answer if session.answer is not None else out.answer
    return {"episode_id": episode.id, "category": episode.category, "agent": agent.name,
            **score(episode, start, acted, session, judge, answer),
            "latency_s": round(latency, 4), "prompt_tokens": out.prompt_tokens,
            "completion_tokens": out.completion_tokens, "agent_error": out.error,
            **({"replies": out.replies, "unusable_replies": out.unusable_replies} if out.replies is not None else {})}


def classify_error(episode: Episode, record: dict[str, Any], missing: list[str], verdict: Verdict) -> str:
    """Appendix E error type, where the record lets us tell (LJ needs a human: never derived)."""
    acted = any(h["tool"] in STATE_TOOLS and h["ok"] for h in record["history"])
    if not episode.feasible:
        if record["state_changed"] and not recognizes_problem(episode, record["answer"] or ""):
            return "CB"
        return "CM"
    if episode.query_type == "QT1":
        return "EP"
    if not acted:
        return "II"
    if not verdict.failures and missing:
        return "EP"  # goals met but the agent skipped the checks it had to make
    timed = [g for g in episode.goals if isinstance(g, TimedGoal)]
    scheduled = any(h["tool"] == "schedule_workflow" and h["ok"] for h in record["history"])
    if timed and scheduled and any(f.startswith("at +") or "earlier" in f for f in verdict.failures):
        return "TR"  # it planned a schedule, but the goals are not there at their ticks
    n_goals = sum(len(g.goals) if isinstance(g, TimedGoal) else 1 for g in episode.goals)
    if 0 < len(verdict.failures) < n_goals:
        return "AP"
    return "DC"
