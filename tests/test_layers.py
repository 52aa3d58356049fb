"""The house rules, checked on the code: layers import one way and no module closes a circle.

Every folder is one layer; LAYERS lists them lowest first (docs/architecture.md). A module may
import its own layer and the layers below it, never above. Every import counts: top-level,
inside functions and under TYPE_CHECKING, so an upward dependency cannot hide in a lazy import.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
#: The layers, lowest first, each a folder; a module's layer is the deepest folder holding it.
LAYERS = (
    "matter_protocol",  # pure Matter protocol: no IO, imports no other layer
    "clusters",         # cluster servers and device compositions
    "twin",             # the home: rooms, clock, physics, workflows, snapshots
    "twin/node",        # node glue: runtime, IM server, commissioning, storage, transport
    "bridge",           # the agent-facing tool API and its backends
    "scenarios",        # the benchmarks
    "hardware",         # lab sessions (may run benchmark episodes)
    "matter_twin",      # the application: CLI, HTTP and MCP assembly; nothing imports it
)
PACKAGES = tuple(folder for folder in LAYERS if "/" not in folder)
#: Standard-library and third-party modules that do IO: the protocol package may not import them.
IO_MODULES = {"socket", "asyncio", "zeroconf", "ifaddr", "subprocess", "shutil", "tempfile", "os", "pathlib",
              "threading", "selectors"}


def layer(module: str) -> int:
    """The rank of the deepest layer folder that holds `module` (a dotted name)."""
    path = module.replace(".", "/")
    return max((rank for rank, folder in enumerate(LAYERS) if path == folder or path.startswith(folder + "/")),
               key=lambda rank: len(LAYERS[rank]))


def project_modules(root: Path = REPO) -> dict[str, Path]:
    mods = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            mods[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return mods


def imports_of(module: str, path: Path, known: set[str]) -> dict[str, int]:
    """Every module this one imports -> the line of the first such import (absolute names)."""
    tree = ast.parse(path.read_text(), str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: dict[str, int] = {}
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                head = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(head + ([node.module] if node.module else []))
            names = [base] + [f"{base}.{a.name}" for a in node.names]
        for name in names:
            # `from pkg import module` imports the submodule; `from module import name` the module.
            target = name if name in known else name.rpartition(".")[0] if name.rpartition(".")[0] in known else name
            found.setdefault(target, node.lineno)
    return found


def graph(root: Path = REPO) -> tuple[dict[str, dict[str, int]], dict[str, Path]]:
    mods = project_modules(root)
    known = set(mods)
    return {m: imports_of(m, p, known) for m, p in mods.items()}, mods


def upward_imports(edges: dict[str, dict[str, int]], mods: dict[str, Path]) -> list[str]:
    bad = []
    for mod, targets in edges.items():
        for target, line in targets.items():
            if target in mods and target != mod and layer(target) > layer(mod):
                bad.append(f"{mods[mod]}:{line}: {mod} (layer {layer(mod)}) imports {target} (layer {layer(target)})")
            # The protocol package stands alone: it imports no other layer.
            if layer(mod) == 0 and target in mods and layer(target) != 0:
                bad.append(f"{mods[mod]}:{line}: the protocol module {mod} imports {target}")
    return bad


def circles(edges: dict[str, dict[str, int]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each a circle of imports."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, {}):
            if w not in edges or w == v:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            # A package __init__ importing its own submodules is not a circle of design.
            real = [m for m in component if not any(o.startswith(m + ".") for o in component)]
            if len(real) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_no_import_runs_against_the_layer_order():
    edges, mods = graph()
    assert upward_imports(edges, mods) == []


def test_every_package_is_a_layer():
    """A new top-level package must take its place in LAYERS (tests/ and bench/ are no packages)."""
    packages = {p.parent.name for p in REPO.glob("*/__init__.py")}
    assert packages == set(PACKAGES)


def test_no_circles():
    edges, _ = graph()
    assert circles(edges) == []


def test_the_protocol_package_does_no_io():
    edges, mods = graph()
    offenders = []
    for mod, targets in edges.items():
        if layer(mod) != 0:
            continue
        offenders += [f"{mod} imports {t}" for t in targets if t.split(".")[0] in IO_MODULES]
        tree = ast.parse(mods[mod].read_text())
        offenders += [f"{mod}:{n.lineno} calls open()" for n in ast.walk(tree)
                      if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "open"]
    assert offenders == []


@pytest.fixture
def fake_tree(tmp_path: Path) -> Path:
    for package in PACKAGES:
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text("")
    return tmp_path


def test_the_checker_catches_an_upward_import_even_inside_a_function(fake_tree: Path):
    (fake_tree / "clusters" / "a.py").write_text("def f():\n    from bridge import b\n")
    (fake_tree / "bridge" / "b.py").write_text("")
    (fake_tree / "matter_protocol" / "p.py").write_text("from clusters import a\nimport socket\n")
    edges, mods = graph(fake_tree)
    bad = "\n".join(upward_imports(edges, mods))
    assert "clusters.a (layer 1) imports bridge.b (layer 4)" in bad
    assert "the protocol module matter_protocol.p imports clusters.a" in bad


def test_the_checker_catches_a_circle_even_under_type_checking(fake_tree: Path):
    (fake_tree / "twin" / "home.py").write_text("from twin.workflows import W\n")
    (fake_tree / "twin" / "workflows.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from twin.home import Home\nW = 1\n")
    edges, _ = graph(fake_tree)
    assert circles(edges) == [["twin.home", "twin.workflows"]]
