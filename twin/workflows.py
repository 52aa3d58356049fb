"""Scheduled workflows: a list of tool steps run in order at one virtual tick.

Steps are the SimuHome tool calls `execute_command` and `write_attribute`, with the tools'
argument names in dotted (`device.id`) or underscore (`device_id`) form. They run through
`Device.invoke` / `Device.write`, the same entry point as the tools and the Matter node,
so the cross-cluster rules apply identically. Scheduling only checks the shape of the steps
(as in SimuHome, success means "scheduled", not "will succeed"); the first failing step
marks the workflow failed with its error and the remaining steps are recorded as skipped.
"""
from __future__ import annotations

import copy
from datetime import datetime
from typing import TYPE_CHECKING, Any

from clusters.status import MatterError
from clusters.values import to_json

from twin.clock import parse_time
from twin.schema import UnknownIdError

if TYPE_CHECKING:
    from twin.home import Home

STATUSES = ("scheduled", "running", "completed", "failed", "cancelled")

#: tool -> (required argument names, optional argument names), canonical underscore form.
TOOLS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "execute_command": (("device_id", "endpoint_id", "cluster_id", "command_id"), ("args",)),
    "write_attribute": (("device_id", "cluster_id", "attribute_id", "value"), ("endpoint_id",)),
}


def normalize_step(step: Any, index: int) -> dict[str, Any]:
    """Validate one step's shape; return {"tool", "args"} with underscore argument names."""
    where = f"step {index + 1}"
    if not isinstance(step, dict) or "tool" not in step or "args" not in step:
        raise ValueError(f"{where}: expected {{'tool': ..., 'args': {{...}}}}, got {step!r}")
    extra = set(step) - {"tool", "args"}
    if extra:
        raise ValueError(f"{where}: unknown key(s) {', '.join(sorted(map(str, extra)))}; "
                         "a step has only 'tool' and 'args'")
    tool = step["tool"]
    if tool not in TOOLS:
        raise ValueError(f"{where}: tool {tool!r} cannot be scheduled; accepted: "
                         + ", ".join(TOOLS))
    raw = step["args"]
    if not isinstance(raw, dict):
        raise ValueError(f"{where}: args must be an object, got {raw!r}")
    required, optional = TOOLS[tool]
    args: dict[str, Any] = {}
    for key, value in raw.items():
        name = str(key).replace(".", "_")
        if name not in required + optional:
            raise ValueError(f"{where}: {tool} has no argument {key!r}; accepted: "
                             + ", ".join(n.replace("_", ".", 1) for n in required + optional))
        if name in args:
            raise ValueError(f"{where}: argument {key!r} given twice")
        args[name] = value
    missing = [n for n in required if n not in args]
    if missing:
        raise ValueError(f"{where}: {tool} is missing " + ", ".join(
            n.replace("_", ".", 1) for n in missing))
    if not isinstance(args["device_id"], str):
        raise ValueError(f"{where}: device.id must be a string, got {args['device_id']!r}")
    for name in ("endpoint_id", "cluster_id", "command_id", "attribute_id"):
        value = args.get(name)
        if name in args and (isinstance(value, bool) or not isinstance(value, (str, int))):
            raise ValueError(f"{where}: {name.replace('_', '.', 1)} must be a name or a number, "
                             f"got {value!r}")
    if tool == "execute_command":
        args.setdefault("args", {})
        if args["args"] is None:
            args["args"] = {}
        if not isinstance(args["args"], dict):
            raise ValueError(f"{where}: args.args must be an object of command fields, "
                             f"got {args['args']!r}")
    return {"tool": tool, "args": args}


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

    def copy(self) -> "Workflow":
        """An independent copy (for Home.fork): steps are never mutated after scheduling,
        and results are replaced per step, so sharing their contents is safe."""
        new = copy.copy(self)
        new.results = list(self.results)
        return new

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> "Workflow":
        wf = cls(state["id"], state["start_tick"], datetime.fromisoformat(state["start_time"]),
                 [{"tool": s["tool"], "args": s["args"]} for s in state["steps"]])
        wf.status = state["status"]
        wf.error = state["error"]
        wf.finished_tick = state["finished_tick"]
        wf.results = [{k: v for k, v in s.items() if k not in ("tool", "args")}
                      for s in state["steps"]]
        return wf


class Workflows:
    """The home's workflow table. Ids are w1, w2, ... in scheduling order."""

    def __init__(self, home: "Home"):
        self._home = home
        self._items: dict[str, Workflow] = {}
        self._counter = 0

    def schedule(self, start: datetime | str, steps: list[dict[str, Any]]) -> Workflow:
        clock = self._home.clock
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

    # ---- driven by the home's time loop -----------------------------------------------
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
                result = self._execute(step)
            except (MatterError, UnknownIdError) as exc:
                message = str(exc)
                wf.results[i] = {"status": "error", "error": message, "tick": tick}
                wf.status = "failed"
                wf.error = f"step {i + 1} ({step['tool']}): {message}"
            else:
                wf.results[i] = {"status": "ok", "result": result, "tick": tick}
        if wf.status == "running":
            wf.status = "completed"
        wf.finished_tick = tick

    def _execute(self, step: dict[str, Any]) -> Any:
        args = step["args"]
        device = self._home.device(args["device_id"])
        if step["tool"] == "execute_command":
            response = device.invoke(args["cluster_id"], args["command_id"], args["args"],
                                     endpoint_id=args["endpoint_id"])
            return to_json(response) if response is not None else None
        device.write(args["cluster_id"], args["attribute_id"], args["value"],
                     endpoint_id=args.get("endpoint_id"))
        return None

    # ---- persistence ------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        return {"counter": self._counter, "items": [wf.state() for wf in self._items.values()]}

    def load_state(self, state: dict[str, Any]) -> None:
        self._counter = state["counter"]
        self._items = {s["id"]: Workflow.from_state(s) for s in state["items"]}
