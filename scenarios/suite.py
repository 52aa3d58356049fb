"""What a benchmark suite declares (scenarios/<name>/suite.py); the registry is scenarios/suites.py."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bridge.tools import NO_TOOLS, Session, ToolSet
from twin.home import Home


def _no_tools(task: Any) -> ToolSet:
    return NO_TOOLS


@dataclass
class Attempt:
    """One task being worked on: what the agent is told, its own copy of the home, its tool
    session (the suite's tools and simulated user), and the suite's verdict on what has been
    done so far (a dict with at least "success"). Runners and the gym environments drive
    every suite through this."""
    task_id: str
    category: str
    query: str
    home: Home
    session: Session
    score: Callable[[], dict[str, Any]]
    #: What the attempt started from (a Home, a household): given back to `Suite.attempt` as
    #: `start=` for the same task, the next attempt forks it instead of rebuilding it.
    start: Any = None


@dataclass(frozen=True)
class Suite:
    name: str                                   # the CLI word: `twin bench <name> ...`
    summary: str                                # one line, shown by `twin bench --help`
    categories: tuple[str, ...]                 # task categories, in report order
    #: The committed task set (None: the suite draws its work at run time, as lifelong does).
    default_tasks: Path | None
    #: Loads a task file (the committed one by default); bad files raise UserFileError.
    load_tasks: Callable[[Path], list[Any]]
    #: The suite's own tools for one task (the session carries them): none by default.
    tools: Callable[[Any], ToolSet] = _no_tools
    #: A display name (the gym id is `MatterTwin/<title>-v0`); default: the name.
    title: str = ""
    #: `attempt(task, start=None)`: starts an `Attempt` at one task (None: the suite has no
    #: per-task episodes, as lifelong).
    attempt: Callable[..., Attempt] | None = None
    #: `draw(category, seed)`: one fresh task of a category from a seed (None: not offered).
    draw: Callable[[str, int], Any] | None = None
    #: `follow_up(task, attempt)`: what the simulated user says when the agent finished short of
    #: success (what is still unmet), or None (nothing to add; also: not offered).
    follow_up: Callable[[Any, Attempt], str | None] | None = None

    def tasks(self, path: Path | None = None) -> list[Any]:
        source = path if path is not None else self.default_tasks
        return [] if source is None else self.load_tasks(source)
