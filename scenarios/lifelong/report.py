"""Run the baselines over scenarios and seeds; write report.json, report.md and the plots.

    run_report([PRESETS["pref-r"], PRESETS["tool-r"]], ["NoToM", "STATIC", "ONLINE", "ORACLE"],
               seeds=[0, 1, 2, 3, 4], out=Path("runs/lifelong"))

`report.json` holds only what the runs decide (no wall clock, floats rounded), written with
sorted keys: the same scenarios, policies and seeds give the same bytes. Trajectories go to
`trajectories/<scenario>/<policy>-seed<N>.jsonl` (the step-level log). Plots (with the `plots` extra;
without it the report is written and the plots are left out): `rolling.png` (seed-mean rolling
success with a ±1 std band over the seeds, drift onsets and revisits marked) and `frontier.png`
(ONLINE's success–confirmation curve over the τ grid, one line per scenario, so one per
severity in a sweep; none without a τ grid).

Budget regimes (`BUDGETS`) pick an operating point on each frontier: the τ with the highest
mean success whose confirmation rate stays within the budget; they change nothing in the runs.
"""
from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from statistics import fmean, pstdev
from typing import Any

from scenarios.lifelong.config import Scenario
from scenarios.lifelong.environment import lifelong_home, run_lifelong
from scenarios.lifelong.metrics import rolling_success, summarize
from scenarios.lifelong.policies import make_policy
from twin.home import Home

__all__ = ["run_report", "TAU_GRID", "DEFAULT_TAU", "DEFAULT_SEEDS", "BUDGETS", "run_count", "operating_points"]

TAU_GRID = tuple(i / 10 for i in range(11))
DEFAULT_TAU = 0.5
DEFAULT_SEEDS = 5
#: Budget regimes: the most confirmations per actionable step the household tolerates.
BUDGETS = {"tight": 0.1, "moderate": 0.3, "loose": 0.6}
#: Metrics averaged across seeds in the tables.
TABLE = ("success", "safevio_per_100", "cost", "pre_drift", "drift", "post_drift", "steady", "forgetting",
         "recover1", "recover2", "confirm_rate")


def _rounded(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, 4)
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    return value


def _stats(runs: list[dict[str, Any]], key: str) -> dict[str, float | int | None]:
    values = [r[key] for r in runs if r[key] is not None]
    if not values:
        return {"mean": None, "std": None, "n": 0}
    return {"mean": fmean(values), "std": pstdev(values), "n": len(values)}


def run_count(scenarios: list[Scenario], policies: list[str], seeds: list[int], taus: tuple[float, ...]) -> int:
    return len(scenarios) * len(seeds) * (len(policies) + len(taus))


def _findings(results: dict[str, Any]) -> list[dict[str, Any]]:
    """The paper's two qualitative claims, checked on our runs."""
    out = []
    for name, res in results.items():
        kinds = {e["drift_type"] for e in res["config"]["drift"]}
        pol = res["policies"]
        if "preference" in kinds and "ONLINE" in pol and "STATIC" in pol:
            online, static = pol["ONLINE"]["mean"]["post_drift"], pol["STATIC"]["mean"]["post_drift"]
            if online is not None and static is not None:
                out.append({"scenario": name, "claim": "ONLINE ahead of STATIC after preference drift (PostDrift)",
                            "online": online, "static": static, "holds": online > static})
        if "tool" in kinds and "ORACLE" in pol:
            runs = pol["ORACLE"]["runs"]
            failures = sum(r["execution_failures"] for r in runs)
            mean = pol["ORACLE"]["mean"]
            out.append({"scenario": name, "claim": "ORACLE still fails under tool drift",
                        "execution_failures": failures, "pre_drift": mean["pre_drift"],
                        "post_drift": mean["post_drift"],
                        "holds": failures > 0 and (mean["post_drift"] or 0) < (mean["pre_drift"] or 0)})
    return out


def operating_points(frontier: list[dict[str, Any]]) -> dict[str, dict[str, Any] | None]:
    """Per budget regime, the frontier point with the best success within its confirmation
    budget (the lower τ on a tie); None when no τ fits."""
    out: dict[str, dict[str, Any] | None] = {}
    for name, budget in BUDGETS.items():
        fits = [p for p in frontier if p["success"] is not None and p["confirm_rate"] is not None
                and p["confirm_rate"] <= budget]
        best = max(fits, key=lambda p: (p["success"], -p["tau"]), default=None)
        out[name] = None if best is None else {"budget": budget, **best}
    return out


def run_report(scenarios: list[Scenario], policies: list[str], seeds: list[int], out: Path,
               tau: float = DEFAULT_TAU, taus: tuple[float, ...] = TAU_GRID, base_url: str | None = None,
               api_key: str | None = None, advance: Callable[[str], None] | None = None,
               home: Path | None = None, serve: Any = None) -> dict[str, Any]:
    """Run everything, write the report files into `out`, return the report. `advance(label)` is
    called after each run (a progress bar). `home`: a home file (default: the packaged home),
    loaded afresh with each run's seed. `serve`: run every run over Matter (run_lifelong)."""

    def fresh(seed: int) -> Home:
        return Home.load(home, seed) if home is not None else lifelong_home(seed)

    out.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {}
    curves: dict[str, dict[str, list[list[tuple[int, float]]]]] = {}
    for scenario in scenarios:
        entry: dict[str, Any] = {"config": scenario.model_dump(mode="json"), "policies": {}, "frontier": []}
        curves[scenario.name] = {}
        folder = out / "trajectories" / scenario.name
        folder.mkdir(parents=True, exist_ok=True)
        for name in policies:
            runs, settings = [], None
            for seed in seeds:
                policy = make_policy(name, scenario, tau, base_url, api_key)
                trajectory = run_lifelong(scenario, policy, seed, fresh(seed), serve=serve)
                runs.append(summarize(trajectory, scenario.window, scenario.drift_step, scenario.revisit_at))
                curves[scenario.name].setdefault(policy.name, []).append(rolling_success(trajectory, scenario.window))
                safe = policy.name.replace(":", "_").replace("/", "_")
                (folder / f"{safe}-seed{seed}.jsonl").write_text(
                    "".join(json.dumps(_rounded(s), sort_keys=True) + "\n" for s in trajectory), encoding="utf-8")
                if hasattr(policy, "settings"):   # counts add up over the seeds
                    this = policy.settings()
                    settings = this if settings is None else {
                        **this, **{k: settings[k] + this[k] for k in ("parse_hits", "fallbacks") if k in this}}
                if advance is not None:
                    advance(f"{scenario.name} {policy.name} seed {seed}")
            entry["policies"][policy.name] = {
                "runs": runs, "mean": {k: _stats(runs, k)["mean"] for k in TABLE},
                "std": {k: _stats(runs, k)["std"] for k in TABLE}, **({"llm": settings} if settings else {})}
        for t in taus:
            runs = []
            for seed in seeds:
                trajectory = run_lifelong(scenario, make_policy("ONLINE", scenario, t), seed, fresh(seed), serve=serve)
                runs.append(summarize(trajectory, scenario.window, scenario.drift_step, scenario.revisit_at))
                if advance is not None:
                    advance(f"{scenario.name} ONLINE τ={t:g} seed {seed}")
            entry["frontier"].append({"tau": t, **{k: _stats(runs, k)["mean"]
                                                   for k in ("success", "confirm_rate", "safevio_per_100", "cost")}})
        entry["operating_points"] = operating_points(_rounded(entry["frontier"])) if entry["frontier"] else {}
        results[scenario.name] = entry
    report: dict[str, Any] = _rounded({
        "benchmark": "DomusMind lifelong (matter-twin)", "home": fresh(0).name, "seeds": list(seeds), "tau": tau,
        "tau_grid": list(taus),
        "policies": list(policies), "scenarios": results, "findings": _findings(results)})
    (out / "report.json").write_text(json.dumps(report, sort_keys=True, indent=1, ensure_ascii=False) + "\n",
                                     encoding="utf-8")
    (out / "report.md").write_text(markdown(report), encoding="utf-8")
    _plots(report, curves, out)
    return report


def _cell(stats_mean: Any, stats_std: Any, digits: int = 2) -> str:
    if stats_mean is None:
        return "–"
    return f"{stats_mean:.{digits}f}±{stats_std:.{digits}f}"


def markdown(report: dict[str, Any]) -> str:
    lines = [f"# DomusMind lifelong runs on the twin home ({report['home']})", "",
             f"Seeds {', '.join(map(str, report['seeds']))}; τ = {report['tau']} for STATIC, ONLINE and ORACLE; "
             "one step = one virtual hour; metrics on actionable steps (mean±std over seeds); "
             "recovery times in steps, '–' = not applicable or never recovered.", ""]
    headers = ["Policy", "Success", "r_safevio", "Cost", "PreDrift", "Drift", "PostDrift", "Steady", "F",
               "T_recover1", "T_recover2", "r_confirm"]
    for name, res in report["scenarios"].items():
        cfg = res["config"]
        lines += [f"## {name}", "",
                  f"{cfg['steps']} steps; drift at step {cfg['drift'][0]['at_step'] if cfg['drift'] else '–'}; "
                  f"revisit at {cfg['revisit_at'] or '–'}; severity {cfg['severity']:g}.", "",
                  "| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
        for policy, p in res["policies"].items():
            m, s = p["mean"], p["std"]
            lines.append("| " + " | ".join([policy] + [_cell(m[k], s[k], 1 if k in ("cost", "safevio_per_100",
                                                                                     "recover1", "recover2") else 2)
                                                        for k in TABLE]) + " |")
        if res["frontier"]:
            lines += ["", "Success–annoyance frontier (ONLINE, sweeping τ):", "",
                      "| τ | Success | r_confirm | r_safevio | Cost |", "|---|---|---|---|---|"]
        for point in res["frontier"]:
            vio = "–" if point["safevio_per_100"] is None else f"{point['safevio_per_100']:.1f}"
            lines.append(f"| {point['tau']:g} | {point['success']:.3f} | {point['confirm_rate']:.3f} | {vio} | "
                         f"{point['cost']:.1f} |")
        if res.get("operating_points"):
            lines += ["", "Operating points by budget (best success within the confirmation budget):", "",
                      "| budget | r_confirm ≤ | τ | Success | r_confirm |", "|---|---|---|---|---|"]
            for budget, point in res["operating_points"].items():
                lines.append(f"| {budget} | {BUDGETS[budget]:g} | " + (
                    "– | – | – |" if point is None else
                    f"{point['tau']:g} | {point['success']:.3f} | {point['confirm_rate']:.3f} |"))
        lines.append("")
    lines += ["## The paper's qualitative findings, measured", ""]
    for f in report["findings"]:
        detail = (f"ONLINE {f['online']:.2f} vs STATIC {f['static']:.2f}" if "online" in f else
                  f"{f['execution_failures']} failed executions; PreDrift {f['pre_drift']:.2f} → "
                  f"PostDrift {f['post_drift']:.2f}")
        lines.append(f"- {f['scenario']}: {f['claim']}: **{'holds' if f['holds'] else 'does not hold'}** ({detail})")
    if not report["findings"]:
        lines.append("- (no scenario with the drift and policies the claims need)")
    return "\n".join(lines) + "\n"


def _step_curve(rolls: list[list[tuple[int, float]]], steps: int) -> tuple[list[float | None], list[float | None]]:
    """Seed-mean and seed-std (population) of S_roll on every step (each run's value held from
    its last actionable step)."""
    held: list[list[float | None]] = []
    for roll in rolls:
        values: list[float | None] = []
        i, current = 0, None
        for t in range(1, steps + 1):
            while i < len(roll) and roll[i][0] <= t:
                current = roll[i][1]
                i += 1
            values.append(current)
        held.append(values)
    means: list[float | None] = []
    stds: list[float | None] = []
    for t in range(steps):
        at = [x for v in held if (x := v[t]) is not None]
        means.append(fmean(at) if at else None)
        stds.append(pstdev(at) if at else None)
    return means, stds


def _plots(report: dict[str, Any], curves: dict[str, dict[str, list[list[tuple[int, float]]]]], out: Path) -> None:
    try:
        import matplotlib
    except ImportError:    # the plots extra is optional: the report stands without its pictures
        return
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(report["scenarios"])
    fig, axes = plt.subplots(len(names), 1, figsize=(9, 3.2 * len(names)), squeeze=False)
    for ax, name in zip(axes[:, 0], names):
        cfg = report["scenarios"][name]["config"]
        xs = range(1, cfg["steps"] + 1)
        for policy, rolls in curves[name].items():
            means, stds = _step_curve(rolls, cfg["steps"])
            ys = [float("nan") if y is None else y for y in means]
            spread = [0.0 if d is None else d for d in stds]
            line, = ax.plot(xs, ys, label=f"{policy} (n={len(rolls)})")
            ax.fill_between(xs, [y - d for y, d in zip(ys, spread)], [y + d for y, d in zip(ys, spread)],
                            color=line.get_color(), alpha=0.15, linewidth=0)
        for i, event in enumerate(sorted({e["at_step"] for e in cfg["drift"]})):
            ax.axvline(event, color="red", linestyle="--", label="drift onset" if i == 0 else None)
        if cfg["revisit_at"]:
            ax.axvline(cfg["revisit_at"], color="green", linestyle=":", label="regime revisit")
        ax.set_title(f"{name}: rolling success, mean ± std over seeds (window {cfg['window']} actionable steps)")
        ax.set_xlabel("step (virtual hour)")
        ax.set_ylabel("S_roll")
        ax.set_ylim(0, 1.05)
        ax.legend(fontsize=7, loc="lower left")
    fig.tight_layout()
    fig.savefig(out / "rolling.png", dpi=90, metadata={"Software": None})
    plt.close(fig)

    if not any(report["scenarios"][name]["frontier"] for name in names):
        return   # no τ sweep, no frontier plot
    fig, ax = plt.subplots(figsize=(6, 4.5))
    for name in names:
        points = report["scenarios"][name]["frontier"]
        ax.plot([p["confirm_rate"] for p in points], [p["success"] for p in points], marker="o", label=name)
        for p in points:
            ax.annotate(f"{p['tau']:g}", (p["confirm_rate"], p["success"]), fontsize=6)
    ax.set_xlabel("confirmation rate r_confirm")
    ax.set_ylabel("mean success")
    ax.set_title("Success–annoyance frontier (ONLINE, τ grid)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "frontier.png", dpi=90, metadata={"Software": None})
    plt.close(fig)

