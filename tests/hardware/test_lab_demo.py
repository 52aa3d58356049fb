"""`twin lab demo` end to end: it creates its own network namespace, matter.js stand-ins and a
managed python-matter-server (the lab's own child, with the test PAA trusted), runs the
scripted session, replays it and writes the report."""
from __future__ import annotations

import json

import pytest

from hardware.demo import run_demo
from hardware.recording import Recording

pytestmark = pytest.mark.e2e


def test_the_demo_runs_the_whole_workflow(tmp_path):
    lines = list(run_demo(tmp_path))
    assert lines[-1].startswith("done.") and any(line.startswith("replay on the twin alone: ") for line in lines), lines
    rec = Recording(tmp_path / "demo-lab.session.sqlite")
    run = rec.run()
    assert run["devices"]["living_room_light"]["kind"] == "bound" and run["devices"]["bench_sensor"]["kind"] == "added"
    calls = rec.rows("calls", run["run"])
    assert calls and all(c["ok"] for c in calls), [c["result"] for c in calls if not c["ok"]]
    kitchen = next(c for c in calls if c["args"].get("room.id") == "kitchen")
    assert kitchen["result"]["temperature"] == 2150          # the stand-in sensor feeds the kitchen
    assert {r["source"] for r in rec.rows("reports", run["run"])} == {"real", "twin"}
    rec.close()
    assert (tmp_path / "controller" / "paa" / "Chip-Test-PAA-NoVID-Cert.der").exists()
    summary = json.loads((tmp_path / "report" / "summary.json").read_text())
    assert summary["diverged_twin_only"] == 0 and summary["latency"]["living_room_light"]["session"]["n"] >= 2
    assert (tmp_path / "report" / "report.md").exists()
