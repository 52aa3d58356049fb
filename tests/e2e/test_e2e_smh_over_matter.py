"""SMH-Bench over Matter and on Ray, as SimuHome's runs: `twin bench smh run --over-matter` serves
each task's home as one Matter bridge node in a network namespace the command makes, commissions
it into its own python-matter-server and drives the reference solver through the Matter backend;
`--ray local` runs the tasks as Ray tasks. Both give the in-process run's verdicts.

Four small-home tasks (TC1, TC2, TC5, TC7): commissioning grows with the home.
"""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
from netns import REPO

from scenarios.runner import load_results
from scenarios.smh.tasks import DEFAULT_TASKS, dump_task, load_tasks

pytestmark = pytest.mark.e2e   # a namespace and python-matter-server; Ray


def chosen() -> list:
    tasks = load_tasks(DEFAULT_TASKS)
    return [next(t for t in tasks if t.subcategory == s and t.tier == "simple")
            for s in ("clear", "multi_device", "topic_shift", "status")]


def _run(tmp_path, name: str, *extra: str) -> subprocess.CompletedProcess:
    path = tmp_path / "tasks.jsonl"
    path.write_text("".join(dump_task(t) + "\n" for t in chosen()), encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=str(REPO), COLUMNS="200")
    return subprocess.run([sys.executable, "-m", "matter_twin.cli", "bench", "smh", "run", "--agent", "reference",
                           "--tasks", str(path), "--out", str(tmp_path / name), *extra],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)


def verdicts(out) -> dict:
    return {r["episode_id"]: (r["success"], r["error"], r["answer"]) for r in load_results(out / "eia")}


def test_reference_over_matter_and_on_ray_equals_in_process(tmp_path):
    local = _run(tmp_path, "local")
    assert local.returncode == 0 and "4/4 succeeded" in local.stdout, local.stdout + local.stderr
    matter = _run(tmp_path, "matter", "--over-matter")
    assert matter.returncode == 0, matter.stdout[-3000:] + matter.stderr[-3000:]
    assert "4/4 succeeded" in matter.stdout and "over Matter: 4 task homes served as bridge nodes" in matter.stdout
    ray = _run(tmp_path, "ray", "--ray", "local", "--workers", "1")
    assert ray.returncode == 0 and "4/4 succeeded" in ray.stdout, ray.stdout + ray.stderr
    assert verdicts(tmp_path / "local") == verdicts(tmp_path / "matter") == verdicts(tmp_path / "ray")
