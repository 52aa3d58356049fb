"""How often PersonalHomeBench's scorer agrees with labelled answers
(scenarios/personal/data/judge_labels_independent.jsonl, written from the tasks alone by someone
who has not read the scorer; docs/judge-labels.md).

A row is a task's answer labelled pass or fail, with its `kind` and a `split` (dev: the scorer
may be tuned on it; heldout: measured only). A row passes under a judge when `score(...)`
succeeds for that answer as in a run: IG/CF by the rules (and, given a judge model, its
equivalence verdict where no rule matches), MC by the option chosen, FR by AP@1, PG by running
the plan on the household lived to the task's time. The table is SimuHome's
(scenarios.simuhome.agreement.agreement_table: accuracy per category and kind, Cohen's kappa).
"""
from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from scenarios.personal.evaluate import PersonalJudge, score
from scenarios.personal.household import Household
from scenarios.personal.households import load_spec
from scenarios.personal.tasks import PersonalTask
from scenarios.simuhome.agreement import SPLITS, VERDICTS

DEFAULT_LABELS = Path(__file__).parent / "data" / "judge_labels_independent.jsonl"
RULE = "rule"


def load_labels(path: str | Path = DEFAULT_LABELS) -> list[dict[str, Any]]:
    """Label rows; a bad one is one ValueError naming the file, the line and what is wrong."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"{path}: cannot read: {exc.strerror or exc}") from None
    rows = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}:{n}: not JSON: {exc.msg}") from None
        if not isinstance(row, dict) or not isinstance(row.get("task_id"), str) or not row["task_id"] \
                or row.get("label") not in VERDICTS:
            raise ValueError(f"{path}:{n}: needs task_id and a label in {', '.join(VERDICTS)}")
        if not isinstance(row.get("answer"), str):
            raise ValueError(f"{path}:{n}: answer must be a string")
        if row.get("split") is not None and row["split"] not in SPLITS:
            raise ValueError(f"{path}:{n}: split {row['split']!r} is not one of {', '.join(SPLITS)}")
        rows.append(row)
    return rows


def judge_labels(tasks: list[PersonalTask], labels: list[dict[str, Any]], base: Path,
                 judges: list[PersonalJudge] | None = None,
                 progress: Callable[[], None] | None = None) -> list[dict[str, Any]]:
    """One row per label: its category and difficulty, whether it should pass, and each judge's
    verdict ("rule" first, then each model's `llm:MODEL`). A model judges IG/CF equivalence only;
    its PG verdict is the rule's (the role-play score is no pass/fail), so it is not asked there.
    Households (`base`: the tasks' pack) live once, for the PG rows only, in time order."""
    by_id = {t.id: t for t in tasks}
    for row in labels:
        if row["task_id"] not in by_id:
            raise ValueError(f"labelled answer for unknown task {row['task_id']!r}")
    plans = _plan_verdicts([(i, by_id[r["task_id"]], r["answer"]) for i, r in enumerate(labels)
                            if by_id[r["task_id"]].category == "PG"], base)
    homes: dict[str, Household] = {}   # answers are read against the household's members and rooms
    out = []
    for i, row in enumerate(labels):
        task = by_id[row["task_id"]]
        if i in plans:
            rule, home = plans[i], None
        else:
            if task.household not in homes:
                homes[task.household] = Household.from_spec(load_spec(base, task.household), source=task.household)
            home = homes[task.household]
            rule = bool(score(task, row["answer"], home, decided=True)["success"])
        verdicts = {RULE: rule}
        for judge in judges or []:
            verdicts[judge.name] = rule if task.category not in ("IG", "CF") \
                else bool(score(task, row["answer"], home, judge, decided=True)["success"])
        out.append({**row, "category": task.category, "difficulty": task.difficulty,
                    "should_pass": row["label"] == "pass", "verdicts": verdicts})
        if progress is not None:
            progress()
    return out


def _plan_verdicts(rows: list[tuple[int, PersonalTask, str]], base: Path) -> dict[int, bool]:
    """The rule verdict on each (index, plan task, answer): each household lives once, its tasks
    in time order, every plan run on a fork (score_plan) as in a run."""
    groups: dict[str, list[tuple[int, PersonalTask, str]]] = {}
    for item in rows:
        groups.setdefault(item[1].household, []).append(item)
    out: dict[int, bool] = {}
    for name, group in groups.items():
        household = Household.from_spec(load_spec(base, name), source=name)
        for i, task, answer in sorted(group, key=lambda item: (item[1].at, item[1].id, item[0])):
            household.simulate(task.at)
            out[i] = bool(score(task, answer, household, decided=True)["success"])
    return out
