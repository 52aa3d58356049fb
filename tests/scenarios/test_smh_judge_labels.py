"""SMH-Bench's labelled replies (docs/judge-labels.md): the free-wording parts are whole, lie on
the tasks their draws name (round 4 split by task hash, its wordings apart from every earlier
reply), and are what the script writes; the template part is unchanged by the script."""
from __future__ import annotations

import hashlib
import importlib.util
import json
from collections import Counter
from pathlib import Path
from types import ModuleType
from typing import Any

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
def rounds(writer: ModuleType, tasks: dict[str, SmhTask]) -> tuple[list[str], list[str], list[str]]:
    """The task ids of the earlier parts (sets A and B, set C) and of round 4, in file order."""
    ts = list(tasks.values())
    return ([t.id for t in writer.free_draw(ts)], [t.id for t in writer.fresh_draw(ts)],
            [t.id for t in writer.round4_draw(ts)])


def _reply(row: dict[str, Any]) -> str:
    return row["answer"] if "answer" in row else "\n".join(row["questions"])


def _runs(ids: list[str]) -> list[str]:
    return [x for k, x in enumerate(ids) if k == 0 or ids[k - 1] != x]


def _split4(task_id: str) -> str:
    return "heldout2" if int(hashlib.sha256(task_id.encode()).hexdigest(), 16) % 10 < 4 else "dev2"


def test_free_parts_are_whole_and_apart(tasks: dict[str, SmhTask], free: list[str],
                                        rounds: tuple[list[str], list[str], list[str]]) -> None:
    rows = [json.loads(x) for x in free]
    r4 = set(rounds[2])
    first4 = next(k for k, r in enumerate(rows) if k >= len(rows) - 8 * len(r4) and r["task_id"] in r4)
    assert first4 == len(rows) - 8 * len(r4)   # eight replies per round-4 task, at the file's end
    earlier, fourth = rows[:first4], rows[first4:]
    for r in rows:
        task = tasks[r["task_id"]]
        reply = "questions" if task.category == "TC3" else "answer"
        assert set(r) == {"task_id", reply, "label", "kind", "reason", "split"}, r
        assert r["label"] in ("pass", "fail") and r["kind"] and r["reason"]
    # earlier parts are all burnt (dev2); round 4 splits by whole task on the task hash
    assert all(r["split"] == "dev2" for r in earlier)
    assert all(r["split"] == _split4(r["task_id"]) for r in fourth)
    by = Counter((tasks[r["task_id"]].category, r["split"], r["label"]) for r in fourth)
    for cat in ("TC3", "TC7"):
        for part in PARTS:
            assert by[(cat, part, "pass")] >= 50 and by[(cat, part, "fail")] >= 50, (cat, part)
        assert by[(cat, "heldout2", "pass")] + by[(cat, "heldout2", "fail")] >= 100, cat
    assert sum(v for k, v in by.items() if k[0] == "TC7") * 2 >= len(fourth)
    assert len({(r["task_id"], _reply(r)) for r in rows}) == len(rows)   # one label per reply
    # round 4's wordings are its own: none is an earlier free or template reply
    template = {_reply(json.loads(x)) for x in (DATA / "judge_labels.jsonl").read_text(encoding="utf-8").splitlines()}
    older = {_reply(r) for r in earlier}
    assert not older & template
    assert not {_reply(r) for r in fourth} & (older | template)


def test_the_draw_is_the_files_tasks(tasks: dict[str, SmhTask], free: list[str],
                                     rounds: tuple[list[str], list[str], list[str]]) -> None:
    # no task twice within a round; round 4 takes every judged task no earlier part used
    assert all(len(set(ids)) == len(ids) for ids in rounds)
    judged = {i for i, t in tasks.items() if t.category in ("TC3", "TC7")}
    assert judged - set(rounds[0]) - set(rounds[1]) <= set(rounds[2])
    assert _runs(rounds[0] + rounds[1] + rounds[2]) == _runs([json.loads(x)["task_id"] for x in free])
    assert not set(rounds[0]) & set(rounds[1])


def test_script_rewrites_a_sample_byte_for_byte(writer: ModuleType, tasks: dict[str, SmhTask], free: list[str],
                                                rounds: tuple[list[str], list[str], list[str]]) -> None:
    first, fresh, r4 = rounds

    def rows_of(task_id: str, start: int) -> list[str]:
        at = next(k for k in range(start, len(free)) if json.loads(free[k])["task_id"] == task_id)
        end = next((k for k in range(at, len(free)) if json.loads(free[k])["task_id"] != task_id), len(free))
        return free[at:end]

    def dumps(rows: list[dict[str, Any]]) -> list[str]:
        return [json.dumps(r, ensure_ascii=False, sort_keys=True) for r in rows]

    # one TC3 and one TC7 task of set A, one of set B, one of set C, and one of each category and part in round 4
    a = [next(i for i in first if i.startswith(cat) and not _old_heldout(i)) for cat in ("tc3", "tc7")]
    b = next(i for i in first if _old_heldout(i))
    c = [next(i for i in fresh if i.startswith(cat)) for cat in ("tc3", "tc7")]
    for i in a + [b]:
        assert dumps(writer.free_replies(tasks[i])) == rows_of(i, 0)
    start3 = sum(len(rows_of(i, 0)) for i in first)
    for i in c:
        assert dumps(writer.free_replies(tasks[i], fresh=True)) == rows_of(i, start3)
    start4 = len(free) - 8 * len(r4)
    for cat in ("tc3", "tc7"):
        for part in PARTS:
            i = next(x for x in r4 if x.startswith(cat) and _split4(x) == part)
            assert dumps(writer.round4_replies(tasks[i])) == rows_of(i, start4)
    old = (DATA / "judge_labels.jsonl").read_text(encoding="utf-8").splitlines()
    assert writer.lines([tasks[i] for i in a]) == [x for x in old if json.loads(x)["task_id"] in a]
