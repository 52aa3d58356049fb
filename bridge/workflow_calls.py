"""The workflow tools' backend side over a `twin.workflows.Workflows` table.

The in-process twin and the wall-clock backends keep their workflows in the same table
type; these functions turn its answers and refusals into the `Backend` JSON and ToolErrors,
once, so schedule_workflow and friends answer alike whichever backend runs them.
"""
from __future__ import annotations

import datetime as _dt
from typing import Any

from bridge.backend import INVALID_ARGUMENT, NOT_FOUND, TIME_FORMAT, ToolError
from clusters.status import Status
from twin.tool_arguments import ArgumentError
from twin.workflows import Workflow, Workflows


def schedule_workflow(table: Workflows, start_time: str, steps: list[dict[str, Any]],
                      tzinfo: _dt.tzinfo | None = None) -> dict[str, Any]:
    """Schedule at `start_time` ("YYYY-MM-DD HH:MM:SS", in the table clock's zone)."""
    try:
        start = _dt.datetime.strptime(start_time, TIME_FORMAT)
    except ValueError:
        raise ToolError(INVALID_ARGUMENT, f"start_time {start_time!r} is not \"YYYY-MM-DD HH:MM:SS\"") from None
    if tzinfo is not None:
        start = start.replace(tzinfo=tzinfo)
    try:
        return table.schedule(start, steps).to_json()
    except ArgumentError as err:
        raise ToolError(INVALID_ARGUMENT, err.message, err.accepted) from None
    except ValueError as err:  # in the past, no steps
        raise ToolError(INVALID_ARGUMENT, str(err)) from None


def _workflow(table: Workflows, workflow_id: str) -> Workflow:
    try:
        return table.get(workflow_id)
    except (KeyError, ValueError):
        raise ToolError(NOT_FOUND, f"there is no workflow {workflow_id!r}",
                        accepted=[w.id for w in table.list()]) from None


def cancel_workflow(table: Workflows, workflow_id: str) -> dict[str, Any]:
    _workflow(table, workflow_id)
    try:
        return table.cancel(workflow_id).to_json()
    except ValueError as err:  # already running, finished or cancelled
        raise ToolError(Status.INVALID_IN_STATE.name, str(err)) from None


def workflow_status(table: Workflows, workflow_id: str) -> dict[str, Any]:
    return _workflow(table, workflow_id).to_json()


def workflows(table: Workflows) -> list[dict[str, Any]]:
    return [w.to_json() for w in table.list()]
