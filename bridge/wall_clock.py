"""Workflows on the wall clock: the twin's workflow table, driven by a thread.

Backends whose devices live in real time (Matter, mixed) keep their workflows in the same
`twin.workflows.Workflows` table the in-process twin uses, so schedule_workflow validates,
records and reports alike everywhere. Only the clock differs: here it is the wall clock,
counted in the twin's ticks from when the backend started, and each step runs through the
tools against the backend.
"""
from __future__ import annotations

import datetime as _dt
import threading
from collections.abc import Callable
from typing import Any

from bridge import workflow_calls
from bridge.tools import call_tool
from twin.clock import TICKS_PER_SECOND, VirtualClock
from twin.workflows import StepFailed, Workflows


class WallClock:
    """The wall clock in `VirtualClock`'s terms (ticks since a start). Whole seconds only:
    start times are given to the second, so a start time is not "past" during its second."""

    def __init__(self, now: Callable[[], _dt.datetime]):
        self._now = now
        self._ticks = VirtualClock(self._second())

    def _second(self) -> _dt.datetime:
        return self._now().replace(microsecond=0)

    @property
    def tick(self) -> int:
        return self._ticks.tick_at(self._second())

    def tick_at(self, when: _dt.datetime | str) -> int:
        return self._ticks.tick_at(when)

    def format(self, tick: int | None = None) -> str:
        return self._ticks.format(self.tick if tick is None else tick)


class WallClockWorkflows:
    """A workflow table whose steps run on a thread at their wall-clock start time, through
    the tools against `backend`."""

    def __init__(self, backend: Any, now: Callable[[], _dt.datetime]):
        self._backend = backend
        self.clock = WallClock(now)
        self.table = Workflows(self.clock, self._run_step)
        self._lock = threading.Lock()  # the table is touched by callers and the thread
        self._wake = threading.Event()
        self._stop = False
        self._thread = threading.Thread(target=self._loop, daemon=True, name="bridge-workflows")
        self._thread.start()

    def _run_step(self, tool: str, args: dict[str, Any]) -> Any:
        result = call_tool(self._backend, tool, args)
        if not result["ok"]:
            raise StepFailed(f"{result['error']['code']}: {result['error']['message']}")
        return result.get("response") if tool == "execute_command" else None

    def _loop(self) -> None:
        while not self._stop:
            with self._lock:
                due = self.table.next_tick()
                now = self.clock.tick
                if due is not None and due <= now:
                    self.table.run_due(now)
                    continue
            wait = 1.0 if due is None else min(max((due - now) / TICKS_PER_SECOND, 0.01), 1.0)
            self._wake.wait(wait)
            self._wake.clear()

    def close(self) -> None:
        self._stop = True
        self._wake.set()
        self._thread.join(5)

    # ---- the Backend's workflow operations --------------------------------------------
    def schedule(self, start_time: str, steps: list[dict[str, Any]]) -> dict[str, Any]:
        with self._lock:
            out = workflow_calls.schedule_workflow(self.table, start_time, steps)
        self._wake.set()
        return out

    def cancel(self, workflow_id: str) -> dict[str, Any]:
        with self._lock:
            return workflow_calls.cancel_workflow(self.table, workflow_id)

    def get(self, workflow_id: str) -> dict[str, Any]:
        with self._lock:
            return workflow_calls.workflow_status(self.table, workflow_id)

    def list(self) -> list[dict[str, Any]]:
        with self._lock:
            return workflow_calls.workflows(self.table)


__all__ = ["WallClock", "WallClockWorkflows"]
