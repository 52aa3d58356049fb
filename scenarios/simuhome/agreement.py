"""Judge agreement with hand-written labelled answers (scenarios/simuhome/data/judge_labels.jsonl).

Each label row is an episode id, an answer, a label and a short reason. Labels: `correct` (meets
every Appendix O.2 criterion: it must pass), `wrong`, `evasive`, `stuffed`, `partially right`
(each must fail). An answer is judged as if an agent had made the reference solver's reads
(none of which change anything on judged episodes), then the actions its label's kind says it
made (`stated_actions`: a file of answers carries no tool history), and then finished with that answer.
"""
from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

from bridge.tools import Session, call_tool
from scenarios.agent import AgentOutput
from scenarios.simuhome.evaluate import Judge, run_episode
from scenarios.simuhome.judges import NOUNS
from scenarios.simuhome.reference import ReferenceAgent
from scenarios.simuhome.schema import Episode

DEFAULT_LABELS = Path(__file__).parent / "data" / "judge_labels.jsonl"
LABELS = ("correct", "wrong", "evasive", "stuffed", "partially right")


#: Independent sets label pass/fail and say which kind of answer it is; `split` marks the parts
#: the rules may be tuned on ("dev", and "dev2", a later set in free wording) and the held-out
#: ones ("heldout", "heldout2"). Tables list the parts in this order.
VERDICTS = ("pass", "fail")
SPLITS = ("dev", "heldout", "dev2", "heldout2")


def load_labels(path: str | Path = DEFAULT_LABELS) -> list[dict[str, Any]]:
    """Label rows: `label` one of LABELS (the hand-written set), or "pass"/"fail" with a free
    `kind` (an independent set); an optional `split` of SPLITS."""
    try:
        rows = [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: line {exc.lineno}: not JSON: {exc.msg}") from None
    for n, row in enumerate(rows, 1):
        if not isinstance(row, dict) or row.get("label") not in LABELS + VERDICTS or not row.get("answer") \
                or not row.get("episode_id"):
            raise ValueError(f"{path}:{n}: needs episode_id, answer and a label in {', '.join(LABELS + VERDICTS)}")
        if row.get("split") is not None and row["split"] not in SPLITS:
            raise ValueError(f"{path}:{n}: split {row['split']!r} is not one of {', '.join(SPLITS)}")
    return rows


def kind(row: dict[str, Any]) -> str:
    """What kind of answer a row is: its label, or for pass/fail rows their `kind`."""
    return str(row.get("kind") or row["label"]) if row["label"] in VERDICTS else str(row["label"])


def stated_actions(episode: Episode, row: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The tool calls a label's kind says the agent made, so the judge sees what the labeller
    assumed. `partly_done` (QT4-3-IF): it started the appliance that can meet the deadline, i.e.
    each running appliance of the request (started by the episode's setup) but the anchor."""
    inf = episode.infeasibility
    if kind(row) != "partly_done" or inf is None or not inf.anchor_device_id:
        return []
    started = {(c.args["device.id"], c.args.get("endpoint.id", 1)) for c in episode.initial.setup
               if c.tool == "execute_command" and c.args.get("cluster.id") == "OperationalState"
               and c.args.get("command.id") == "Start"}
    return [("execute_command", {"device.id": d, "endpoint.id": ep, "cluster.id": "OperationalState",
                                 "command.id": "Start", "args": {}})
            for d, ep in sorted(started) if d != inf.anchor_device_id and _asked_for(episode, d)]


def _asked_for(episode: Episode, device_id: str) -> bool:
    """Does the query name the device as "the dryer 1 in the utility room" (id suffix = number)?"""
    room, device = next((r, d) for r in episode.initial.home.rooms for d in r.devices if d.id == device_id)
    suffix = re.search(r"_(\d+)$", device_id)
    nouns = "|".join(re.escape(n) for n in sorted(NOUNS.get(device.type, ()), key=len, reverse=True))
    return re.search(rf"\b(?:{nouns}) {suffix[1] if suffix else 1} in the {re.escape(room.name or room.id)}\b",
                     episode.query, re.IGNORECASE) is not None


class CannedAnswerAgent:
    """The reference solver's reads, then `actions` (tool, args), then `answer` instead of its own."""
    name = "canned"

    def __init__(self, answer: str, actions: list[tuple[str, dict[str, Any]]] | None = None):
        self.answer = answer
        self.actions = actions or []

    def run(self, query: str, backend: Any, session: Session, max_steps: int) -> AgentOutput:
        scratch = Session()
        ReferenceAgent().run(query, backend, scratch, max_steps)
        session.history.extend(h for h in scratch.history if h["tool"] != "finish")
        for tool, args in self.actions:
            call_tool(backend, tool, args, session)
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
        actions = stated_actions(episode, row)
        verdicts = {j.name: run_episode(episode, CannedAnswerAgent(row["answer"], actions), j)["success"]
                    for j in judges}
        out.append({**row, "category": episode.category, "should_pass": row["label"] in ("correct", "pass"),
                    "verdicts": verdicts})
    return out


def accuracy(rows: list[dict[str, Any]], judge: str, by: str = "label") -> dict[str, tuple[int, int]]:
    """{label (or kind, or category) or "all": (judged as the label says, labelled)}."""
    right: Counter[str] = Counter()
    total: Counter[str] = Counter()
    for row in rows:
        group = kind(row) if by == "label" else str(row[by])
        for key in (group, "all"):
            total[key] += 1
            right[key] += row["verdicts"][judge] == row["should_pass"]
    order = [k for k in LABELS if total[k]] + sorted(k for k in total if k not in LABELS and k != "all")
    return {k: (right[k], total[k]) for k in (*order, "all") if total[k]}


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
    """Accuracy per label for each judge, then each judge's agreement with the first (rule) one;
    a set with a `split` gets this for each part, and per category."""
    parts = [p for p in SPLITS if any(r.get("split") == p for r in rows)]
    if not parts:
        return _table(rows, judges, "label")
    out = []
    for part in parts:
        mine = [r for r in rows if r.get("split") == part]
        out += [f"### {part} ({len(mine)} answers)", _table(mine, judges, "category"), "",
                _table(mine, judges, "label"), ""]
    return "\n".join(out).rstrip()


def _table(rows: list[dict[str, Any]], judges: list[str], by: str) -> str:
    lines = [f"| {by} | n | " + " | ".join(judges) + " |", "|---|---|" + "---|" * len(judges)]
    tables = {j: accuracy(rows, j, by) for j in judges}
    for key in tables[judges[0]]:
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
