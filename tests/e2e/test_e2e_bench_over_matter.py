"""Acceptance (#14 item 5): the benchmark carries over to Matter. `twin bench run --over-matter`
serves each episode's home as one Matter bridge node, commissions it into python-matter-server
(started by the command itself, in a network namespace it creates) and drives the reference
solver through the Matter backend; every per-episode result equals the in-process run's.

30 episodes: 5 feasible and 5 infeasible per QT1-QT3 category, the 5 with the smallest homes
in each (commissioning and the controller's interview grow with the home; QT4 needs virtual time
to pass while the agent works, see scenarios/over_matter.py).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from netns import REPO

from scenarios.runner import load_results, run
from scenarios.simuhome.judges import RuleJudge
from scenarios.simuhome.reference import ReferenceAgent
from scenarios.simuhome.schema import DEFAULT_EPISODES, dump_episode, load_episodes

pytestmark = pytest.mark.e2e   # a namespace, python-matter-server or matter.js

CATEGORIES = ("QT1-F", "QT1-IF", "QT2-F", "QT2-IF", "QT3-F", "QT3-IF")
PER_CATEGORY = 5


def smallest_homes() -> list:
    episodes = load_episodes(DEFAULT_EPISODES)
    chosen = []
    for category in CATEGORIES:
        mine = [e for e in episodes if e.category == category]
        mine.sort(key=lambda e: (sum(len(r.devices) for r in e.initial.home.rooms), e.id))
        chosen += mine[:PER_CATEGORY]
    return chosen


def comparable(record: dict) -> dict:
    """What the run decided: the verdict and every call with its outcome. Wall time differs, of
    course, and so may a tool result's last digit: a room's illuminance read over Matter comes
    through IlluminanceMeasurement's log encoding (784 lux in process read 785 once)."""
    calls = [{k: v for k, v in call.items() if k != "result"} for call in record.get("history", [])]
    return {**{k: v for k, v in record.items() if k != "latency_s"}, "history": calls}


def test_reference_scores_over_matter_equal_in_process(tmp_path):
    episodes = smallest_homes()
    path = tmp_path / "episodes.jsonl"
    path.write_text("".join(dump_episode(e) + "\n" for e in episodes), encoding="utf-8")

    run(episodes, ReferenceAgent, RuleJudge(), tmp_path / "in-process", workers=1, progress=False)
    env = dict(os.environ, PYTHONPATH=str(REPO), COLUMNS="200")
    done = subprocess.run([sys.executable, "-m", "matter_twin.cli", "bench", "run", "--agent", "reference",
                           "--episodes", str(path), "--out", str(tmp_path / "matter"), "--over-matter"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert f"{len(episodes)}/{len(episodes)} episodes succeeded" in done.stdout, done.stdout
    assert f"over Matter: {len(episodes)} episode homes served as bridge nodes" in done.stdout, done.stdout

    here = {r["episode_id"]: comparable(r) for r in load_results(tmp_path / "in-process")}
    there = {r["episode_id"]: comparable(r) for r in load_results(tmp_path / "matter")}
    assert len(here) == len(there) == 30
    assert sorted({r["category"] for r in there.values()}) == sorted(CATEGORIES)
    different = {i: (here[i], there.get(i)) for i in here if here[i] != there.get(i)}
    assert not different, json.dumps(different, indent=1)
    # The runs did work through the tools: every episode read the home, most changed or reported it.
    assert all(r["steps"] > 2 and r["success"] for r in there.values())
    assert sum(r["state_changed"] for r in there.values()) >= 10
