"""A lifelong (DomusMind) run end to end over Matter: `twin bench lifelong --over-matter` serves the
run's home as one Matter bridge node in a network namespace the command makes, commissions it into
its own python-matter-server, and every routine read and executed call (lights, cooling, blinds,
the vacuum, the front door lock) goes through it, under tool drift that the home's fault engine
applies to the node's devices. The trajectory equals the in-process run's step for step.

Short on purpose: one seed, one policy, 24 virtual hours (failures from step 10).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from netns import REPO

from scenarios.lifelong import Scenario, make_policy, run_lifelong
from scenarios.lifelong.report import _rounded

pytestmark = pytest.mark.e2e   # a namespace and python-matter-server

SCENARIO = {"name": "matter", "steps": 24, "window": 6,
            "drift": [{"at_step": 10, "drift_type": "tool", "target": "failure_prob", "set": 0.6}]}
#: What the run decided at each step (the persona and tool parameters are the schedule's).
FIELDS = ("t", "obs", "suggestion", "action", "y", "x", "e", "success", "safety_violation", "feedback",
          "tool_outcome", "household", "cost")


def test_lifelong_run_over_matter_equals_in_process(tmp_path):
    scenario = Scenario.model_validate(SCENARIO)
    path = tmp_path / "matter.yaml"
    path.write_text(json.dumps(SCENARIO), encoding="utf-8")
    here = _rounded(run_lifelong(scenario, make_policy("ORACLE", scenario), seed=0))

    env = dict(os.environ, PYTHONPATH=str(REPO), COLUMNS="200",   # matter-server: beside this Python
               PATH=os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")]))
    done = subprocess.run([sys.executable, "-m", "matter_twin.cli", "bench", "lifelong", "--scenario", str(path),
                           "--policy", "ORACLE", "--seeds", "1", "--no-frontier", "--over-matter",
                           "--out", str(tmp_path / "out")],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "over Matter: 1 run homes served as bridge nodes" in done.stdout, done.stdout
    lines = (tmp_path / "out" / "trajectories" / "matter" / "ORACLE-seed0.jsonl").read_text().splitlines()
    there = [json.loads(line) for line in lines]
    assert len(there) == len(here) == 24
    for a, b in zip(here, there):
        assert {k: a.get(k) for k in FIELDS} == {k: b.get(k) for k in FIELDS}, (a["t"], a, b)
    acted = [s for s in there if s["suggestion"]]
    executed = [s for s in acted if s["x"]]
    assert len(acted) >= 8 and executed
    assert any(not s["e"] for s in executed if s["t"] >= 10)          # the drift's failures, over Matter
    assert all(s["e"] for s in executed if s["t"] < 10)
    assert {s["suggestion"]["template_id"].split(":")[0] for s in acted} & {"door_unlock", "delivery_unlock"}
