"""What drives a lab session: its script (with expectations), an agent, or a benchmark
episode, each call recorded with the twin's tick (see hardware/session.py)."""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from bridge.tools import Session
from hardware.shadow import dig


class LabRuns:
    """Part of LabSession (hardware/session.py): what drives a lab session."""

    def run_script(self, on_step: Callable[[int, int, str], None] | None = None) -> dict[str, Any]:
        steps = self.lab.spec.session.script
        calls = 0
        for i, step in enumerate(steps):
            if on_step is not None:
                on_step(i, len(steps), f"wait {step.wait:g} s" if step.wait is not None else str(step.tool))
            if step.wait is not None:
                self._stop.wait(step.wait)
                continue
            assert step.tool is not None
            result = self.call(step.tool, dict(step.args))
            calls += 1
            for path, expected in (step.expect or {}).items():
                try:
                    got = dig(result, path)
                except (KeyError, IndexError, ValueError):
                    got = "(absent)"
                if got != expected:
                    failure = {"script_step": i, "tool": step.tool, "path": path, "expected": expected, "got": got}
                    self.expectation_failures.append(failure)
                    self.log(f"expectation failed at step {i}: {path} is {got!r}, expected {expected!r}")
                    self._event("expectation_failed", None, failure)
        if self.lab.spec.shadow and any(self.mode(d) == "shadow" for d in self.real):
            self._stop.wait(self.lab.spec.shadow.compare_after + 0.5)  # the last comparisons
        return {"calls": calls, "expectation_failures": len(self.expectation_failures),
                "divergences": len(self.divergences)}

    def run_agent(self) -> dict[str, Any]:
        """Drive the lab file's agent through the tools against the mixed home; every call it
        makes is recorded (source "agent"); the goals are read back through the same tools."""
        from scenarios.runner import make_agent  # the benchmark's agents only when a session runs one
        spec = self.lab.spec.session.agent
        assert spec is not None
        session, _, error = self._drive(make_agent(spec.agent, base_url=spec.base_url), spec.query,
                                        spec.max_steps)
        failures = []
        for goal in spec.goals:
            args = {"device.id": goal.device, "cluster.id": goal.cluster, "attribute.id": goal.attribute}
            if goal.endpoint is not None:
                args["endpoint.id"] = goal.endpoint
            got = self.call("get_attribute", args, source="score")
            value = got.get("value") if got.get("ok") else got.get("error", {}).get("code")
            if value != goal.equals:
                failures.append({"goal": goal.model_dump(), "got": value})
        score = {"agent": spec.agent, "query": spec.query, "steps": len(session.history),
                 "answer": session.answer, "success": not failures and error is None,
                 "failures": failures, "agent_error": error}
        self._event("score", None, score)
        self.log(f"agent {spec.agent}: {'success' if score['success'] else 'failed'} "
                 f"in {score['steps']} steps" + (f"; {failures}" if failures else ""))
        return {"calls": len(session.history), "expectation_failures": len(failures),
                "divergences": len(self.divergences), "score": score}

    def _drive(self, agent: Any, query: str, max_steps: int) -> tuple[Session, Any, str | None]:
        """Run `agent` on `query` through the tools against the mixed home, every call
        recorded (source "agent"): (its tool session, its output or None, its error)."""
        from scenarios.simuhome.evaluate import agent_session  # as make_agent above
        assert self.backend is not None
        backend = _Timed(self.backend, self._tick)
        session = agent_session()
        session.history = _RecordedHistory(self, backend)
        try:
            out = agent.run(query, backend, session, max_steps)
            return session, out, out.error
        except Exception as err:  # noqa: BLE001 - an agent crash is a failed run, recorded
            return session, None, f"{type(err).__name__}: {err}"

    def run_episode(self, episode: Any, agent: Any, judge: Any, max_steps: int = 30,
                    settle: float = 1.0) -> dict[str, Any]:
        """One benchmark episode on this session's home (built from the episode): its setup
        calls that reach hardware are made on the real devices (source "setup"), the agent
        runs, and the benchmark's evaluator scores what the mixed home then holds (a coupled
        device's twin holds its product's reported state). The result line is recorded
        (event "episode_score") and returned."""
        from scenarios.simuhome.evaluate import score  # as make_agent above
        assert self.twin is not None
        setup = [c for c in episode.initial.setup if self._touches_real(c.tool, self._target(c.tool, c.args))]
        for call in setup:
            self.call(call.tool, dict(call.args), source="setup")
        if setup:
            self._stop.wait(settle)
        with self.twin.lock:
            self.twin.catch_up()
            start = self.twin.home.fork()
            start.own_devices()   # the live home keeps changing in the reporting threads
        self._event("episode_start", None, {"episode_id": episode.id, "category": episode.category,
                                            "query": episode.query, "agent": agent.name})
        session, out, error = self._drive(agent, episode.query, max_steps)
        self._stop.wait(settle)  # the products' last reports reach their twins
        with self.twin.lock:
            self.twin.catch_up()
            acted = self.twin.home.fork()
            acted.own_devices()
        answer = session.answer if session.answer is not None else getattr(out, "answer", None)
        record = {"episode_id": episode.id, "category": episode.category, "agent": agent.name,
                  **score(episode, start, acted, session, judge, answer), "agent_error": error}
        self._event("episode_score", None, record)
        self.log(f"{episode.id}: {'success' if record['success'] else 'failed'} in {record['steps']} steps"
                 + (f"; {'; '.join(record['failures'])}" if record["failures"] else ""))
        return record


class _Timed:
    """The backend as the agent sees it, noting when (wall, tick) each tool call first touches it."""

    def __init__(self, backend: Any, tick: Callable[[], int]):
        self._backend = backend
        self._tick = tick
        self.started: tuple[float, int] | None = None

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._backend, name)
        if not callable(attr):
            return attr

        def timed(*args: Any, **kwargs: Any) -> Any:
            if self.started is None:
                self.started = (time.time(), self._tick())
            return attr(*args, **kwargs)
        return timed


class _RecordedHistory(list):
    """The agent's tool-call history; each entry is recorded as it is appended."""

    def __init__(self, lab: Any, backend: _Timed):   # lab: the LabSession
        super().__init__()
        self._lab = lab
        self._backend = backend

    def append(self, entry: dict[str, Any]) -> None:
        super().append(entry)
        lab = self._lab
        now = time.time()
        wall, tick = self._backend.started or (now, lab._tick())
        self._backend.started = None
        lab._step += 1
        lab._record_call(lab._step, wall, tick, "agent", entry["tool"], entry["args"], entry["result"])
