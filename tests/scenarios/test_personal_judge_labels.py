"""PersonalHomeBench's independent labelled answers (docs/judge-labels.md): the committed file is
whole, consistent with the committed task set, and what its script writes."""
from __future__ import annotations

import importlib.util
import json
from collections import Counter
from pathlib import Path
from types import ModuleType

import pytest

from scenarios.personal.tasks import load_tasks

ROOT = Path(__file__).resolve().parents[2]
LABELS = ROOT / "scenarios/personal/data/judge_labels_independent.jsonl"
TASKS = ROOT / "scenarios/personal/data/personal.jsonl.gz"


@pytest.fixture(scope="module")
def writer() -> ModuleType:
    spec = importlib.util.spec_from_file_location("write_personal_judge_labels",
                                                  ROOT / "scripts/write_personal_judge_labels.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def lines() -> list[str]:
    return LABELS.read_text(encoding="utf-8").splitlines()


def test_file_is_whole_and_follows_the_task_set(writer: ModuleType, lines: list[str]) -> None:
    tasks = {t.id: t for t in load_tasks(TASKS)}
    heldout = {t.id for t in writer.parts(list(tasks.values()))[1]}
    rows = [json.loads(x) for x in lines]
    assert len(rows) >= 1500
    for r in rows:
        assert set(r) == {"task_id", "answer", "label", "kind", "reason", "split"}, r
        assert r["task_id"] in tasks, r["task_id"]
        assert r["label"] in ("pass", "fail") and r["kind"] and r["reason"] and r["answer"]
        assert r["split"] == ("heldout" if r["task_id"] in heldout else "dev"), r["task_id"]
    by = Counter((tasks[r["task_id"]].category, r["label"]) for r in rows)
    for cat in ("IG", "CF", "MC", "FR", "PG"):
        assert by[(cat, "pass")] and by[(cat, "fail")], cat
    cf = {tasks[r["task_id"]].counterfactual["changed"] for r in rows if tasks[r["task_id"]].category == "CF"}
    assert cf == {True, False}
    assert {tasks[r["task_id"]].difficulty for r in rows} >= {"easy", "medium", "hard"}
    assert {r["split"] for r in rows} == {"dev", "heldout"}
    # Answers differ within a task (one label per answer).
    assert len({(r["task_id"], r["answer"]) for r in rows}) == len(rows)


def test_the_draw_is_the_files_tasks(writer: ModuleType, lines: list[str]) -> None:
    tasks = load_tasks(TASKS)
    dev, heldout = writer.parts(tasks)
    assert not {t.id for t in dev} & {t.id for t in heldout}
    drawn = [t.id for part in writer.draws(tasks) for t in part]
    assert set(drawn) == {t.id for t in dev + heldout}
    assert drawn == list(dict.fromkeys(json.loads(x)["task_id"] for x in lines))


def test_the_heldout_part_is_fresh_and_covers_every_category(lines: list[str]) -> None:
    tasks = {t.id: t for t in load_tasks(TASKS)}
    rows = [json.loads(x) for x in lines]
    held = [r for r in rows if r["split"] == "heldout"]
    # Split by whole task: no held-out task has a dev answer.
    assert not {r["task_id"] for r in held} & {r["task_id"] for r in rows if r["split"] == "dev"}
    by = Counter(tasks[r["task_id"]].category for r in held)
    assert all(by[c] >= 70 for c in ("IG", "CF", "MC", "FR", "PG")), by
    for cat in ("IG", "CF", "MC"):
        assert {tasks[r["task_id"]].difficulty for r in held if tasks[r["task_id"]].category == cat} == \
            {"easy", "medium", "hard"}, cat
    assert {r["label"] for r in held} == {"pass", "fail"}


def test_script_rewrites_a_sample_byte_for_byte(writer: ModuleType, lines: list[str]) -> None:
    tasks = {t.id: t for t in load_tasks(TASKS)}
    ids = list(dict.fromkeys(json.loads(x)["task_id"] for x in lines))
    split = {json.loads(x)["task_id"]: json.loads(x)["split"] for x in lines}
    # One reactive, one FR and one PG task of the first part and of round 4's held-out part: the
    # three writers that read the household differently, in each part's shapes.
    for part in ("dev", "heldout"):
        sample = [next(i for i in ids if tasks[i].category == c and split[i] == part) for c in ("IG", "FR", "PG")]
        want = [x for x in lines if json.loads(x)["task_id"] in sample]
        assert writer.lines(TASKS.parent, [tasks[i] for i in sample], round4=part == "heldout") == want
