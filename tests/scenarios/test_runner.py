"""The runner: result lines hold only what the run decides (byte-identical across runs and
executors), wall-clock timings live beside them, and runs resume."""
from __future__ import annotations

import json

import pytest

from scenarios.runner import RESULTS, TIMINGS, load_results, make_agent, make_judge, run
from scenarios.simuhome.schema import CATEGORIES, DEFAULT_EPISODES, load_episodes

EPISODES = load_episodes(DEFAULT_EPISODES)
#: Two episodes of every category.
SAMPLE = [e for c in CATEGORIES for e in [x for x in EPISODES if x.category == c][:2]]


def reference_run(out, episodes=SAMPLE, **kwargs):
    return run(episodes, lambda: make_agent("reference"), make_judge("rule"), out, workers=2, progress=False,
               **kwargs)


def test_two_runs_give_byte_identical_results_and_keep_timings_apart(tmp_path):
    reference_run(tmp_path / "a")
    reference_run(tmp_path / "b")
    a, b = ((tmp_path / d / RESULTS).read_text().splitlines() for d in "ab")
    assert sorted(a) == sorted(b) and len(a) == len(SAMPLE)
    assert all("latency_s" not in json.loads(line) for line in a)
    timings = [json.loads(line) for line in (tmp_path / "a" / TIMINGS).read_text().splitlines()]
    assert {t["episode_id"] for t in timings} == {e.id for e in SAMPLE}
    merged = load_results(tmp_path / "a")
    assert all(isinstance(r["latency_s"], float) and r["success"] for r in merged)
    # Every call is kept with its full result: what trajectory export replays.
    assert all(h["result"]["ok"] == h["ok"] for r in merged for h in r["history"])


def test_a_rerun_resumes_after_a_line_cut_short(tmp_path):
    reference_run(tmp_path, SAMPLE[:3])
    path = tmp_path / RESULTS
    lines = path.read_text().splitlines()
    path.write_text("\n".join(lines[:2]) + "\n" + lines[2][:40])   # a crash mid-line
    new = reference_run(tmp_path, SAMPLE[:3])
    assert len(new) == 1
    assert len(load_results(tmp_path)) == 3


@pytest.mark.e2e
def test_the_600_reference_episodes_on_ray_equal_the_local_run(tmp_path):
    """A local Ray (loopback only) runs every committed episode as a task: results.jsonl sorted
    by episode id is byte-identical to the thread-pool run."""
    reference_run(tmp_path / "local", EPISODES)
    reference_run(tmp_path / "ray", EPISODES, ray_address="local")
    import ray
    ray.shutdown()
    local, on_ray = (sorted((tmp_path / d / RESULTS).read_text().splitlines()) for d in ("local", "ray"))
    assert len(local) == 600 and local == on_ray
    assert all(json.loads(line)["success"] for line in local)
