"""What a benchmark suite declares (scenarios/<name>/suite.py); the registry is scenarios/suites.py."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bridge.tools import NO_TOOLS, ToolSet


def _no_tools(task: Any) -> ToolSet:
    return NO_TOOLS


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

    def tasks(self, path: Path | None = None) -> list[Any]:
        source = path if path is not None else self.default_tasks
        return [] if source is None else self.load_tasks(source)
