"""The optional extras of pyproject.toml, checked before a command does any work.

The base install runs the twin, its Matter nodes, the tools, HTTP and MCP. A command that
needs more calls `require(extra, what)` first: when a module of that extra is missing it
stops with one line (exit 2) naming the extra and the pip command that installs it, instead
of a traceback after the work is done.
"""
from __future__ import annotations

import importlib.util
import shlex
import sys
from pathlib import Path

#: extra -> the modules it installs (kept in step with [project.optional-dependencies]).
EXTRA_MODULES: dict[str, tuple[str, ...]] = {
    "llm": ("openai",),
    "plots": ("matplotlib",),
    "matter-server": ("matter_server.client",),
    "lab": ("matter_server.server", "chip.ChipDeviceCtrl"),
    "gym": ("gymnasium",),
    "ray": ("ray",),
    "mqtt": ("aiomqtt", "amqtt"),
}


def _present(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):   # a parent package is missing
        return False


def missing(extra: str) -> bool:
    return not all(_present(m) for m in EXTRA_MODULES[extra])


def pip_command(extra: str) -> str:
    """The exact command that installs `extra` into the running interpreter: from the source
    tree when this is an editable install of a clone, else by the distribution's name."""
    root = Path(__file__).resolve().parent.parent
    target = f"{root}[{extra}]" if (root / "pyproject.toml").is_file() else f"matter-twin[{extra}]"
    editable = ["-e"] if (root / "pyproject.toml").is_file() else []
    return shlex.join([sys.executable, "-m", "pip", "install", *editable, target])


def require(extra: str, what: str) -> None:
    """Stop with one line (CliError, exit 2) unless `extra` is installed; `what` names the
    command or option that needs it."""
    if missing(extra):
        from matter_twin.console import CliError
        raise CliError(f"{what} needs the `{extra}` extra: {pip_command(extra)}")


def require_for_model(spec: str | None, what: str) -> None:
    """`openai:MODEL` agents, judges and policies need the `llm` extra."""
    if spec is not None and spec.startswith("openai:"):
        require("llm", what)
