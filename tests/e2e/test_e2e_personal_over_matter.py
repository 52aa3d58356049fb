"""PersonalHomeBench over Matter: `twin bench personal run --over-matter` serves each task's
household home as one Matter bridge node in a network namespace the command makes, commissions it
into its own python-matter-server and drives the agent's device tools through it; the household
tools answer in process and the answers are scored in process. The reference gives the in-process
run's results in all five categories; the stuffer, whose plan switches on every device it lists
through get_rooms and get_room_devices, gives the in-process plan, so the devices read over Matter
are the twin's.

One task per category from the committed set (the stuffer: one plan task): each task's household
lives its days first, and each commissioning grows with the home.
"""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
from netns import REPO

from scenarios.runner import load_results

pytestmark = pytest.mark.e2e   # a namespace and python-matter-server


def _run(tmp_path, name: str, *extra: str, agent: str = "reference") -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO), COLUMNS="200")
    return subprocess.run([sys.executable, "-m", "matter_twin.cli", "bench", "personal", "run", "--agent", agent,
                           "--limit", "1", "--out", str(tmp_path / name), *extra],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)


def results(out) -> dict:
    return {r["episode_id"]: r for r in load_results(out)}


def test_reference_over_matter_equals_in_process(tmp_path):
    local = _run(tmp_path, "local")
    assert local.returncode == 0 and "5/5 tasks succeeded" in local.stdout, local.stdout + local.stderr
    matter = _run(tmp_path, "matter", "--over-matter")
    assert matter.returncode == 0, matter.stdout[-3000:] + matter.stderr[-3000:]
    assert "5/5 tasks succeeded" in matter.stdout, matter.stdout
    assert "over Matter: 5 household homes served as bridge nodes" in matter.stdout, matter.stdout
    here, there = results(tmp_path / "local"), results(tmp_path / "matter")
    assert {r["category"] for r in here.values()} == {"IG", "CF", "MC", "FR", "PG"}
    assert there == here


def test_the_stuffers_plan_over_matter_lists_the_twins_devices(tmp_path):
    runs = {}
    for name, extra in (("local", ()), ("matter", ("--over-matter",))):
        done = _run(tmp_path, name, "--category", "PG", *extra, agent="stuffer")
        assert done.returncode == 0 and "0/1 tasks succeeded" in done.stdout, done.stdout[-3000:] + done.stderr[-3000:]
        runs[name] = results(tmp_path / name)
    assert "over Matter: 1 household homes served as bridge nodes" in done.stdout, done.stdout
    (row,) = runs["local"].values()
    assert row["category"] == "PG" and row["steps"] == 1 and '"device.id"' in row["answer"]
    assert runs["matter"] == runs["local"]
