"""Lifelong runs (DomusMind): no-reset weeks of the twin home under preference and tool drift.
It has no fixed task set: routines (`routines.py`) propose the work step by step; the scenarios
(`config.py` presets or YAML files) are its inputs, `environment.py` runs, `report.py` scores."""
from __future__ import annotations

from pathlib import Path

from scenarios.lifelong.config import PRESETS, Scenario, scenario_named
from scenarios.suite import Suite


def _scenarios(path: Path) -> list[Scenario]:
    return [scenario_named(str(path))]


SUITE = Suite(name="lifelong",
              summary="DomusMind lifelong runs: no-reset weeks under preference and tool drift.",
              categories=tuple(PRESETS), default_tasks=None, load_tasks=_scenarios)
