"""Training data (HomeFlow): trajectories exported from runs replay to the same tool results;
preference pairs; verifiable tasks kept only when solved, split with no leak."""
from __future__ import annotations

import json
import subprocess
import sys

from scenarios.runner import load_results, make_agent, make_judge, run
from scenarios.simuhome.export import chat_examples, preference_pairs, recorded_results, replay
from scenarios.simuhome.schema import CATEGORIES, DEFAULT_EPISODES, load_episodes
from scenarios.simuhome.tasks import fingerprint, generate_tasks, split_of

EPISODES = load_episodes(DEFAULT_EPISODES)
BY_ID = {e.id: e for e in EPISODES}
SAMPLE = [next(e for e in EPISODES if e.category == c) for c in CATEGORIES]


def runs(tmp_path):
    for agent in ("reference", "null"):
        run(SAMPLE, lambda a=agent: make_agent(a), make_judge("rule"), tmp_path / agent, workers=2, progress=False)
    return load_results(tmp_path / "reference") + load_results(tmp_path / "null")


def test_exported_trajectories_replay_to_the_same_tool_results(tmp_path):
    examples = chat_examples(runs(tmp_path), BY_ID)
    assert {e["metadata"]["episode_id"] for e in examples} == {e.id for e in SAMPLE}   # reference: all
    assert all(e["metadata"]["agent"] == "reference" for e in examples)                # null: none
    for example in examples:
        roles = [m["role"] for m in example["messages"]]
        assert roles[:2] == ["system", "user"] and roles[-1] == "assistant" and "tool" in roles
        assert example["tools"] and all(t["type"] == "function" for t in example["tools"])
        episode = BY_ID[example["metadata"]["episode_id"]]
        assert replay(example, episode) == recorded_results(example), episode.id


def test_preference_pairs_put_the_success_first(tmp_path):
    results = runs(tmp_path)
    pairs = preference_pairs(results, BY_ID)
    failed_by_null = {r["episode_id"] for r in results if r["agent"] == "null" and not r["success"]}
    assert {p["metadata"]["episode_id"] for p in pairs} == failed_by_null and pairs
    for pair in pairs:
        assert pair["metadata"]["preferred_agent"] == "reference"
        assert pair["input"]["messages"][1]["content"] == BY_ID[pair["metadata"]["episode_id"]].query
        assert any(m.get("tool_calls") for m in pair["preferred_output"])


def test_the_export_command_writes_both_files(tmp_path):
    runs(tmp_path)
    proc = subprocess.run([sys.executable, "-m", "matter_twin.cli", "bench", "export", str(tmp_path / "reference"),
                           str(tmp_path / "null"), "--out", str(tmp_path / "train.jsonl"),
                           "--pairs", str(tmp_path / "pairs.jsonl")], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert len((tmp_path / "train.jsonl").read_text().splitlines()) == len(SAMPLE)
    assert all(json.loads(line)["preferred_output"] for line in (tmp_path / "pairs.jsonl").read_text().splitlines())
    bad = subprocess.run([sys.executable, "-m", "matter_twin.cli", "bench", "export", str(tmp_path),
                          "--out", str(tmp_path / "x.jsonl")], capture_output=True, text=True, timeout=300)
    assert bad.returncode != 0 and "no results.jsonl" in bad.stderr + bad.stdout
    assert "Traceback" not in bad.stderr


def test_tasks_are_solved_new_and_split_by_content():
    made = generate_tasks(seed=5, per_category=3, categories=("QT1-F", "QT3-F", "QT3-IF"), heldout_fraction=0.5,
                          exclude=EPISODES)
    kept = made.train + made.heldout
    assert len(kept) + made.unsolved + made.duplicates == 9 and kept
    assert not {fingerprint(e) for e in kept} & {fingerprint(e) for e in EPISODES}
    assert all(split_of(e, 0.5) == "train" for e in made.train)
    assert all(split_of(e, 0.5) == "heldout" for e in made.heldout)
    # The split follows the content, not the seed: drawn again under another id, same split.
    again = kept[0].model_copy(update={"id": "renamed"})
    assert split_of(again, 0.5) == split_of(kept[0], 0.5)
    # Reproducible.
    assert generate_tasks(seed=5, per_category=3, categories=("QT1-F", "QT3-F", "QT3-IF"), heldout_fraction=0.5,
                          exclude=EPISODES).train == made.train


def test_a_task_from_the_excluded_set_is_never_emitted():
    committed = generate_tasks(seed=5, per_category=2, categories=("QT3-F",), heldout_fraction=0.0)
    assert len(committed.train) == 2
    again = generate_tasks(seed=5, per_category=2, categories=("QT3-F",), heldout_fraction=0.0,
                           exclude=committed.train)
    assert again.train == [] and again.duplicates == 2
