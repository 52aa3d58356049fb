"""Judge agreement with hand-written labelled answers (scenarios/simuhome/data/judge_labels.jsonl).

Each label row is an episode id, an answer, a label and a short reason. Labels: `correct` (meets
every Appendix O.2 criterion: it must pass), `wrong`, `evasive`, `stuffed`, `partially right`
(each must fail). An answer is judged as if an agent had made the reference solver's reads
(none of which change anything on judged episodes) and then finished with that answer.
"""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from bridge.tools import Session, call_tool
from scenarios.agent import AgentOutput
from scenarios.simuhome.evaluate import Judge, run_episode
from scenarios.simuhome.reference import ReferenceAgent
from scenarios.simuhome.schema import Episode

DEFAULT_LABELS = Path(__file__).parent / "data" / "judge_labels.jsonl"
LABELS = ("correct", "wrong", "evasive", "stuffed", "partially right")


def load_labels(path: str | Path = DEFAULT_LABELS) -> list[dict[str, str]]:
    rows = [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]
    for n, row in enumerate(rows, 1):
        if row.get("label") not in LABELS or not row.get("answer") or not row.get("episode_id"):
            raise ValueError(f"{path}:{n}: needs episode_id, answer and a label in {', '.join(LABELS)}")
    return rows


class CannedAnswerAgent:
    """The reference solver's tool calls, then `answer` instead of its own."""
    name = "canned"

    def __init__(self, answer: str):
        self.answer = answer

    def run(self, query: str, backend: Any, session: Session, max_steps: int) -> AgentOutput:
        scratch = Session()
        ReferenceAgent().run(query, backend, scratch, max_steps)
        session.history.extend(h for h in scratch.history if h["tool"] != "finish")
        call_tool(backend, "finish", {"answer": self.answer}, session)
        return AgentOutput(self.answer, len(session.history))


def judge_labels(episodes: list[Episode], labels: list[dict[str, str]], judges: list[Judge]) -> list[dict[str, Any]]:
    """One row per label: its category, whether it should pass, and each judge's verdict."""
    by_id = {e.id: e for e in episodes}
    out = []
    for row in labels:
        episode = by_id.get(row["episode_id"])
        if episode is None:
            raise ValueError(f"labelled answer for unknown episode {row['episode_id']!r}")
        verdicts = {j.name: run_episode(episode, CannedAnswerAgent(row["answer"]), j)["success"] for j in judges}
        out.append({**row, "category": episode.category, "should_pass": row["label"] == "correct",
                    "verdicts": verdicts})
    return out


def accuracy(rows: list[dict[str, Any]], judge: str) -> dict[str, tuple[int, int]]:
    """{label or "all": (judged as the label says, labelled)}."""
    right: Counter[str] = Counter()
    total: Counter[str] = Counter()
    for row in rows:
        for key in (row["label"], "all"):
            total[key] += 1
            right[key] += row["verdicts"][judge] == row["should_pass"]
    return {k: (right[k], total[k]) for k in (*LABELS, "all") if total[k]}


def cohen_kappa(a: list[bool], b: list[bool]) -> float:
    """Chance-corrected agreement of two pass/fail raters (1.0 when they agree on everything)."""
    n = len(a)
    if n == 0:
        return 1.0
    seen = sum(x == y for x, y in zip(a, b)) / n
    pa, pb = sum(a) / n, sum(b) / n
    chance = pa * pb + (1 - pa) * (1 - pb)
    return 1.0 if chance == 1 else (seen - chance) / (1 - chance)


def agreement_table(rows: list[dict[str, Any]], judges: list[str]) -> str:
    """Accuracy per label for each judge, then each judge's agreement with the first (rule) one."""
    lines = ["| label | n | " + " | ".join(judges) + " |", "|---|---|" + "---|" * len(judges)]
    tables = {j: accuracy(rows, j) for j in judges}
    for key in (*LABELS, "all"):
        if key not in tables[judges[0]]:
            continue
        n = tables[judges[0]][key][1]
        cells = [f"{tables[j][key][0]}/{n} ({100 * tables[j][key][0] / n:.0f} %)" for j in judges]
        lines.append(f"| {key} | {n} | " + " | ".join(cells) + " |")
    truth = [r["should_pass"] for r in rows]
    for j in judges:
        mine = [r["verdicts"][j] for r in rows]
        line = f"{j}: kappa with the labels {cohen_kappa(mine, truth):.3f}"
        if j != judges[0]:
            first = [r["verdicts"][judges[0]] for r in rows]
            same = sum(x == y for x, y in zip(mine, first))
            line += f"; agrees with {judges[0]} on {same}/{len(rows)}, kappa {cohen_kappa(mine, first):.3f}"
        lines.append(line)
    return "\n".join(lines)
