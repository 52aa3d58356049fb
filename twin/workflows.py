"""Scheduled workflows: a list of tool steps run in order at one tick of a clock.

Steps are the SimuHome tool calls `execute_command` and `write_attribute`, validated by the
tools' own argument models (twin/tool_arguments.py), so a step has the tools' spelling and a bad
step the tools' error. The table knows nothing of homes or networks: it is given a clock
and a function that runs one step. The Home runs steps through `Device.invoke` /
`Device.write` (the entry point of the tools and the Matter node, so the cross-cluster
rules apply identically); the Matter backend runs them through the tools against itself
and moves the clock with the wall clock. Scheduling only checks the shape of the steps
(as in SimuHome, success means "scheduled", not "will succeed"); the first failing step
marks the workflow failed with its error and the remaining steps are recorded as skipped.
"""
from __future__ import annotations

import copy
from collections.abc import Callable
from datetime import datetime
from typing import Any, Protocol

from twin.clock import parse_time
from twin.schema import UnknownIdError
from twin.tool_arguments import parse_step

STATUSES = ("scheduled", "running", "completed", "failed", "cancelled")


class Clock(Protocol):
    """What the table needs of a clock: the current tick, and the tick of a time."""
    @property
    def tick(self) -> int: ...

    def tick_at(self, when: datetime | str) -> int: ...

    def format(self, tick: int | None = None) -> str: ...


class StepFailed(Exception):
    """A step that ran and failed; `str()` is what the workflow records as its error."""


#: Runs one step: (tool, arguments with underscore names) -> JSON result; raises StepFailed.
RunStep = Callable[[str, dict[str, Any]], Any]


def normalize_step(step: Any, index: int) -> dict[str, Any]:
    """Validate one step (an `ArgumentError`, a ValueError, if bad); return
    {"tool", "args"} with underscore argument names, as workflows store them."""
    tool, args = parse_step(step, index)
    return {"tool": tool, "args": args.model_dump(exclude_unset=True)}


class Workflow:
    def __init__(self, workflow_id: str, start_tick: int, start_time: datetime,
                 steps: list[dict[str, Any]]):
        self.id = workflow_id
        self.start_tick = start_tick
        self.start_time = start_time
        self.steps = steps
        self.status = "scheduled"
        self.results: list[dict[str, Any]] = [{"status": "pending"} for _ in steps]
        self.finished_tick: int | None = None
        self.error: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "workflow_id": self.id,
            "start_time": self.start_time.isoformat(sep=" "),
            "start_tick": self.start_tick,
            "status": self.status,
            "error": self.error,
            "finished_tick": self.finished_tick,
            # copies, so callers (and snapshots) never share mutable state with the table
            "steps": [copy.deepcopy({**step, **result}) for step, result in zip(self.steps, self.results)],
        }

    def state(self) -> dict[str, Any]:
        return self.to_json()

    def copy(self) -> Workflow:
        """An independent copy (for Home.fork): steps are never mutated after scheduling,
        and results are replaced per step, so sharing their contents is safe."""
        new = copy.copy(self)
        new.results = list(self.results)
        return new

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> Workflow:
        wf = cls(state["id"], state["start_tick"], datetime.fromisoformat(state["start_time"]),
                 [{"tool": s["tool"], "args": s["args"]} for s in state["steps"]])
        wf.status = state["status"]
        wf.error = state["error"]
        wf.finished_tick = state["finished_tick"]
        wf.results = [{k: v for k, v in s.items() if k not in ("tool", "args")}
                      for s in state["steps"]]
        return wf


class Workflows:
    """A workflow table (the home's, or a Matter backend's). Ids are w1, w2, ... in
    scheduling order."""

    def __init__(self, clock: Clock, run_step: RunStep):
        self._clock = clock
        self._run_step = run_step
        self._items: dict[str, Workflow] = {}
        self._counter = 0

    def schedule(self, start: datetime | str, steps: list[dict[str, Any]]) -> Workflow:
        clock = self._clock
        when = parse_time(start)
        tick = clock.tick_at(when)
        if tick < clock.tick:
            raise ValueError(f"start_time {when.isoformat(sep=' ')} is in the past; the current "
                             f"virtual time is {clock.format()}")
        if not isinstance(steps, list) or not steps:
            raise ValueError("steps must be a non-empty list of {'tool', 'args'} objects")
        normalized = [normalize_step(step, i) for i, step in enumerate(steps)]
        self._counter += 1
        wf = Workflow(f"w{self._counter}", tick, when, normalized)
        self._items[wf.id] = wf
        return wf

    def get(self, workflow_id: str) -> Workflow:
        try:
            return self._items[workflow_id]
        except (KeyError, TypeError):
            raise UnknownIdError(f"no workflow {workflow_id!r}; known: "
                           + (", ".join(self._items) or "none")) from None

    def cancel(self, workflow_id: str) -> Workflow:
        wf = self.get(workflow_id)
        if wf.status != "scheduled":
            raise ValueError(f"workflow {workflow_id} is {wf.status}; only scheduled workflows "
                             "can be cancelled")
        wf.status = "cancelled"
        wf.results = [{"status": "skipped"} for _ in wf.steps]
        return wf

    def list(self) -> list[Workflow]:
        return list(self._items.values())

    # ---- driven by the clock's owner -----------------------------------------------------
    def next_tick(self) -> int | None:
        ticks = [wf.start_tick for wf in self._items.values() if wf.status == "scheduled"]
        return min(ticks) if ticks else None

    def run_due(self, tick: int) -> bool:
        """Run every scheduled workflow due at or before `tick` (by start tick, then id)."""
        due = sorted((wf for wf in self._items.values()
                      if wf.status == "scheduled" and wf.start_tick <= tick),
                     key=lambda wf: (wf.start_tick, int(wf.id[1:])))
        for wf in due:
            self._run(wf, tick)
        return bool(due)

    def _run(self, wf: Workflow, tick: int) -> None:
        wf.status = "running"
        for i, step in enumerate(wf.steps):
            if wf.status == "failed":
                wf.results[i] = {"status": "skipped"}
                continue
            try:
                result = self._run_step(step["tool"], step["args"])
            except StepFailed as exc:
                message = str(exc)
                wf.results[i] = {"status": "error", "error": message, "tick": tick}
                wf.status = "failed"
                wf.error = f"step {i + 1} ({step['tool']}): {message}"
            else:
                wf.results[i] = {"status": "ok", "result": result, "tick": tick}
        if wf.status == "running":
            wf.status = "completed"
        wf.finished_tick = tick

    # ---- persistence ------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        return {"counter": self._counter, "items": [wf.state() for wf in self._items.values()]}

    def load_state(self, state: dict[str, Any]) -> None:
        self._counter = state["counter"]
        self._items = {s["id"]: Workflow.from_state(s) for s in state["items"]}
