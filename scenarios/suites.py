"""The benchmark suites, one registry: `twin bench <suite> ...`, the gym environments and the
docs list suites from `SUITES` and nothing else.

A suite lives in `scenarios/<name>/` and declares itself in its `suite.py` as a `Suite`: its
name and one-line summary, its categories, where its committed tasks are and how to load them,
and the extra tools its agents get (a `bridge.tools.ToolSet` built for one task; none: the core
SimuHome tools only). Its generator, evaluator and agents are modules of its package; its CLI
verbs are one Typer app in the application layer (matter_twin/cli_bench.py mounts one per
registered suite and refuses to start if the two lists differ). The `Suite` shape is in
scenarios/suite.py; docs/benchmarks.md says how to add one.
"""
from __future__ import annotations

from scenarios.homeflow.suite import SUITE as HOMEFLOW
from scenarios.lifelong.suite import SUITE as LIFELONG
from scenarios.personal.suite import SUITE as PERSONAL
from scenarios.simuhome.suite import SUITE as SIMUHOME
from scenarios.smh.suite import SUITE as SMH
from scenarios.suite import Suite

#: Every suite, by name, in the order `twin bench --help` shows them.
SUITES: dict[str, Suite] = {s.name: s for s in (SIMUHOME, LIFELONG, PERSONAL, SMH, HOMEFLOW)}


def suite_named(name: str) -> Suite:
    """The registered suite `name`; an unknown name is one ValueError line listing the suites."""
    if name not in SUITES:
        raise ValueError(f"unknown suite {name!r}; accepted: {', '.join(SUITES)}")
    return SUITES[name]
