"""How often an SMH-Bench judge agrees with labelled replies (scenarios/smh/data/judge_labels.jsonl,
the template part, and judge_labels_free.jsonl, the free-wording part; both written by
scripts/write_smh_judge_labels.py; docs/judge-labels.md).

A row is a TC7 task's reply (`answer`) or the questions an agent asked on a TC3 task
(`questions`), labelled pass or fail, with its `kind` and a `split` (dev: rules may be tuned on
it; heldout: measured only; dev2 and heldout2 likewise for the free-wording part). The judge
decides each row as it does in a run: `answer(task, reply, the task's start home)` and
`clarification(task, questions, the start home)`. The table is SimuHome's
(scenarios.simuhome.agreement.agreement_table: accuracy per category and kind, Cohen's kappa).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from scenarios.simuhome.agreement import SPLITS, VERDICTS
from scenarios.smh.judges import Judge
from scenarios.smh.tasks import SmhTask, build_home

DEFAULT_LABELS = Path(__file__).parent / "data" / "judge_labels.jsonl"
FREE_LABELS = DEFAULT_LABELS.with_name("judge_labels_free.jsonl")


def load_labels(path: str | Path = DEFAULT_LABELS) -> list[dict[str, Any]]:
    """Label rows; a bad one is one ValueError naming the file, the line and what is wrong."""
    try:
        rows = [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: line {exc.lineno}: not JSON: {exc.msg}") from None
    for n, row in enumerate(rows, 1):
        if not isinstance(row, dict) or not row.get("task_id") or row.get("label") not in VERDICTS:
            raise ValueError(f"{path}:{n}: needs task_id and a label in {', '.join(VERDICTS)}")
        if ("answer" in row) == ("questions" in row):
            raise ValueError(f"{path}:{n}: give either answer (TC7) or questions (TC3)")
        if "questions" in row and not (isinstance(row["questions"], list)
                                       and all(isinstance(q, str) for q in row["questions"])):
            raise ValueError(f"{path}:{n}: questions must be a list of strings")
        if "answer" in row and not isinstance(row["answer"], str):
            raise ValueError(f"{path}:{n}: answer must be a string")
        if row.get("split") is not None and row["split"] not in SPLITS:
            raise ValueError(f"{path}:{n}: split {row['split']!r} is not one of {', '.join(SPLITS)}")
    return rows


def judge_labels(tasks: list[SmhTask], labels: list[dict[str, Any]], judges: list[Judge]) -> list[dict[str, Any]]:
    """One row per label: its category, whether it should pass, and each judge's verdict."""
    by_id = {t.id: t for t in tasks}
    homes: dict[str, Any] = {}
    out = []
    for row in labels:
        task = by_id.get(row["task_id"])
        if task is None:
            raise ValueError(f"labelled reply for unknown task {row['task_id']!r}")
        if "answer" in row:
            if task.expect != "answer":
                raise ValueError(f"{task.id} is not a query task (TC7): a labelled answer needs one")
            if task.id not in homes:
                homes[task.id] = build_home(task)
            verdicts = {j.name: j.answer(task, row["answer"], homes[task.id])[0] for j in judges}
        else:
            if task.expect != "clarify":
                raise ValueError(f"{task.id} is not a clarification task (TC3): labelled questions need one")
            if task.id not in homes:
                homes[task.id] = build_home(task)
            verdicts = {j.name: j.clarification(task, row["questions"], homes[task.id])[0] for j in judges}
        out.append({**row, "category": task.category, "should_pass": row["label"] == "pass", "verdicts": verdicts})
    return out
