"""SMH-Bench's labelled replies (docs/judge-labels.md): the free-wording parts are whole, lie on
the tasks their draw names, keep held-out tasks and wordings apart from dev ones, and are what
the script writes; the template part is unchanged by the script."""
from __future__ import annotations

import hashlib
import importlib.util
import json
from collections import Counter
from pathlib import Path
from types import ModuleType

import pytest

from scenarios.smh.tasks import SmhTask, load_tasks

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "scenarios/smh/data"
PARTS = ("dev2", "heldout2")


@pytest.fixture(scope="module")
def writer() -> ModuleType:
    spec = importlib.util.spec_from_file_location("write_smh_judge_labels",
                                                  ROOT / "scripts/write_smh_judge_labels.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def tasks() -> dict[str, SmhTask]:
    return {t.id: t for t in load_tasks()}


@pytest.fixture(scope="module")
def free() -> list[str]:
    return (DATA / "judge_labels_free.jsonl").read_text(encoding="utf-8").splitlines()


def _old_heldout(task_id: str) -> bool:
    return int(hashlib.sha256(task_id.encode()).hexdigest(), 16) % 10 < 3


@pytest.fixture(scope="module")
def fresh(writer: ModuleType, tasks: dict[str, SmhTask]) -> set[str]:
    return {t.id for t in writer.fresh_draw(list(tasks.values()))}


def _reply(row: dict) -> str:
    return row["answer"] if "answer" in row else "\n".join(row["questions"])


def test_free_parts_are_whole_and_apart(tasks: dict[str, SmhTask], free: list[str], fresh: set[str]) -> None:
    rows = [json.loads(x) for x in free]
    assert len(rows) >= 500 * len(PARTS)
    for r in rows:
        task = tasks[r["task_id"]]
        reply = "questions" if task.category == "TC3" else "answer"
        assert set(r) == {"task_id", reply, "label", "kind", "reason", "split"}, r
        assert r["label"] in ("pass", "fail") and r["kind"] and r["reason"]
        # heldout2 lies on its own draw of old-dev tasks, none of them a dev2 task
        assert r["split"] == ("heldout2" if r["task_id"] in fresh else "dev2"), r["task_id"]
        assert r["task_id"] not in fresh or not _old_heldout(r["task_id"])
    by = Counter((tasks[r["task_id"]].category, r["split"], r["label"]) for r in rows)
    for cat in ("TC3", "TC7"):
        for part in PARTS:
            least = 100 if part == "dev2" else 80
            assert by[(cat, part, "pass")] >= least and by[(cat, part, "fail")] >= least, (cat, part)
    assert len({(r["task_id"], _reply(r)) for r in rows}) == len(rows)   # one label per reply
    # heldout2 wordings are their own: none is a dev2 or template reply
    template = {_reply(json.loads(x)) for x in (DATA / "judge_labels.jsonl").read_text(encoding="utf-8").splitlines()}
    dev2 = {_reply(r) for r in rows if r["split"] == "dev2"}
    assert not dev2 & template
    assert not {_reply(r) for r in rows if r["split"] == "heldout2"} & (dev2 | template)


def test_the_draw_is_the_files_tasks(writer: ModuleType, tasks: dict[str, SmhTask], free: list[str]) -> None:
    drawn = [t.id for t in writer.free_draw(list(tasks.values())) + writer.fresh_draw(list(tasks.values()))]
    assert drawn == list(dict.fromkeys(json.loads(x)["task_id"] for x in free))


def test_script_rewrites_a_sample_byte_for_byte(writer: ModuleType, tasks: dict[str, SmhTask],
                                                free: list[str]) -> None:
    rows = [json.loads(x) for x in free]
    # one TC3 and one TC7 task of each part, and the template rows of two of them
    sample = [next(r["task_id"] for r in rows if r["split"] == part and r["task_id"].startswith(cat))
              for part in PARTS for cat in ("tc3", "tc7")]
    want = [x for x in free if json.loads(x)["task_id"] in sample]
    got = [json.dumps(r, ensure_ascii=False, sort_keys=True) for k, i in enumerate(sample)
           for r in writer.free_replies(tasks[i], fresh=k >= 2)]
    assert got == want
    # and one task of set B (the old heldout2 part, dev2 now)
    b = next(r["task_id"] for r in rows if r["split"] == "dev2" and _old_heldout(r["task_id"]))
    assert [json.dumps(r, ensure_ascii=False, sort_keys=True) for r in writer.free_replies(tasks[b])] == \
        [x for x in free if json.loads(x)["task_id"] == b]
    old = (DATA / "judge_labels.jsonl").read_text(encoding="utf-8").splitlines()
    assert writer.lines([tasks[i] for i in sample[:2]]) == [x for x in old if json.loads(x)["task_id"] in sample[:2]]
