"""Markdown report and charts from run directories (SimuHome Table 1 and Table 3 layouts).

`write_report([dir, ...], out)` reads each run's results.jsonl (one agent per run) and writes
`report.md` plus `success_by_category.png` and `latency.png` into `out`.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path
from statistics import mean
from typing import Any

from scenarios.runner import load_results
from scenarios.simuhome.schema import CATEGORIES, QUERY_TYPES

FEASIBLE_ERRORS = ("EP", "II", "DC", "AP", "TR")
INFEASIBLE_ERRORS = ("CM", "CB", "LJ")


def _method_mark(category: str) -> str:
    """J for judge-scored, S for simulator-scored (the paper's superscripts)."""
    return "S" if category.endswith("-F") and not category.startswith("QT1") else "J"


def success_table(runs: dict[str, list[dict[str, Any]]]) -> list[str]:
    head = "| Agent | " + " | ".join(f"{qt} F<sup>{_method_mark(qt + '-F')}</sup> | {qt} IF<sup>J</sup>"
                                     for qt in QUERY_TYPES) + " | All |"
    lines = [head, "|" + "---|" * (2 + 2 * len(QUERY_TYPES))]
    for agent, results in runs.items():
        by = defaultdict(list)
        for r in results:
            by[r["category"]].append(bool(r["success"]))
        cells = [f"{100 * mean(by[c]):.0f} ({len(by[c])})" if by[c] else "-" for c in CATEGORIES]
        total = [bool(r["success"]) for r in results]
        lines.append(f"| {agent} | " + " | ".join(cells) + f" | {100 * mean(total):.1f} |")
    return lines


def latency_table(runs: dict[str, list[dict[str, Any]]]) -> list[str]:
    lines = ["| Agent | Category | Episodes | Avg latency (s) | Max latency (s) | Avg steps | Prompt tokens "
             "| Completion tokens |",
             "|---|---|---|---|---|---|---|---|"]
    for agent, results in runs.items():
        by = defaultdict(list)
        for r in results:
            by[r["category"]].append(r)
        for c in [c for c in CATEGORIES if by[c]] + ["all"]:
            rs = results if c == "all" else by[c]
            lat = [r.get("latency_s") or 0.0 for r in rs]
            pt = [r["prompt_tokens"] for r in rs if r.get("prompt_tokens") is not None]
            ct = [r["completion_tokens"] for r in rs if r.get("completion_tokens") is not None]
            lines.append(f"| {agent} | {c} | {len(rs)} | {mean(lat):.3f} | {max(lat):.3f} | "
                         f"{mean(r.get('steps', 0) for r in rs):.1f} | {sum(pt) if pt else '-'} | "
                         f"{sum(ct) if ct else '-'} |")
    return lines


def error_table(runs: dict[str, list[dict[str, Any]]]) -> list[str]:
    lines = ["| Agent | Query type | " + " | ".join(FEASIBLE_ERRORS + INFEASIBLE_ERRORS) + " |",
             "|---|---|" + "---|" * (len(FEASIBLE_ERRORS) + len(INFEASIBLE_ERRORS))]
    for agent, results in runs.items():
        for qt in QUERY_TYPES:
            counts = Counter(r.get("error_type") for r in results
                             if r["category"].rpartition("-")[0] == qt and not r["success"])
            lines.append(f"| {agent} | {qt} | " + " | ".join(
                str(counts.get(e, 0)) if e != "LJ" else "n/a" for e in FEASIBLE_ERRORS + INFEASIBLE_ERRORS) + " |")
    return lines


def charts(runs: dict[str, list[dict[str, Any]]], out: Path) -> list[str]:
    import matplotlib
    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt
    width = 0.8 / max(1, len(runs))
    fig, ax = plt.subplots(figsize=(12, 4.5))
    for i, (agent, results) in enumerate(runs.items()):
        by = defaultdict(list)
        for r in results:
            by[r["category"]].append(bool(r["success"]))
        ax.bar([k + i * width for k in range(len(CATEGORIES))],
               [100 * mean(by[c]) if by[c] else 0 for c in CATEGORIES], width, label=agent)
    ax.set_xticks([k + width * (len(runs) - 1) / 2 for k in range(len(CATEGORIES))], CATEGORIES, rotation=45)
    ax.set_ylabel("success (%)")
    ax.set_ylim(0, 105)
    ax.set_title("Success by category")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out / "success_by_category.png", dpi=100)
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(8, 4))
    for agent, results in runs.items():
        ax.hist([r.get("latency_s") or 0.0 for r in results], bins=30, alpha=0.6, label=agent)
    ax.set_xlabel("latency per episode (s, wall clock)")
    ax.set_ylabel("episodes")
    ax.set_title("Latency distribution")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out / "latency.png", dpi=100)
    plt.close(fig)
    return ["success_by_category.png", "latency.png"]


def write_report(dirs: list[str | Path], out: str | Path | None = None) -> Path:
    runs: dict[str, list[dict[str, Any]]] = {}
    for d in dirs:
        results = load_results(d)
        if not results:
            raise ValueError(f"{d}: no results.jsonl with results in it")
        name = results[0].get("agent") or Path(d).name
        key = name if name not in runs else f"{name} ({Path(d).name})"
        runs[key] = results
    out = Path(out or dirs[0])
    out.mkdir(parents=True, exist_ok=True)
    images = charts(runs, out)
    text = ["# SimuHome benchmark report", "",
            "Success rates in % (episodes in brackets). F = feasible, IF = infeasible; "
            "<sup>S</sup> simulator-scored, <sup>J</sup> judge-scored (SimuHome Table 1 layout).", "",
            *success_table(runs), "",
            "## Latency, steps and tokens (Table 3)", "",
            "Latency is wall-clock time per episode; steps are tool calls (finish included).", "",
            *latency_table(runs), "",
            "## Error taxonomy (Appendix E), failed episodes", "",
            "Derived from the records: EP perception, II intent (no action taken), DC device control, "
            "AP action planning (part of the goals met), TR temporal reasoning (a schedule that misses "
            "its tick); CM contradiction mishandled, CB contradiction blindness (acted without naming "
            "the problem). LJ (judge errors) needs a human review and is not derived.", "",
            *error_table(runs), "",
            "## Charts", "", *[f"![{i}]({i})" for i in images], ""]
    path = out / "report.md"
    path.write_text("\n".join(text), encoding="utf-8")
    return path
