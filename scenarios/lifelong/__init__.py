"""Lifelong runs of the twin home under preference and tool drift (DomusMind).

    from scenarios.lifelong import PRESETS, make_policy, run_lifelong, summarize
"""
from scenarios.lifelong.config import PRESETS, Scenario, load_scenario, scenario_named
from scenarios.lifelong.environment import run_lifelong
from scenarios.lifelong.metrics import rolling_success, summarize
from scenarios.lifelong.policies import make_policy

__all__ = ["PRESETS", "Scenario", "load_scenario", "scenario_named", "run_lifelong", "rolling_success",
           "summarize", "make_policy"]
