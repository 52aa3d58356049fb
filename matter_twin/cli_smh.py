"""`twin bench smh`: SMH-Bench's verbs (generate, validate, run)."""
from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer

from matter_twin.cli_simuhome import unusable_summary
from matter_twin.console import CliError, per_subcategory, progress_bar, report_validation, select_tasks
from matter_twin.extras import require, require_for_model
from matter_twin.sandbox import check_over_matter, rerun_over_matter, serving_over_matter
from scenarios.agent import Serve, in_process
from scenarios.model_api import ModelAPIError
from scenarios.runner import load_results
from scenarios.runner import run as run_all
from scenarios.simuhome.agreement import SPLITS, agreement_table
from scenarios.smh.agents import AGENTS, make_agent, make_direct
from scenarios.smh.agreement import DEFAULT_LABELS, FREE_LABELS, judge_labels, load_labels
from scenarios.smh.evaluate import run_dr, run_eia, summarize
from scenarios.smh.judges import make_judge
from scenarios.smh.tasks import CATEGORIES, DEFAULT_TASKS, SEED, SmhTask, dump_task, generate, load_tasks
from scenarios.smh.validate import bound_problems, shape, shape_problems
from scenarios.smh.validate import validate as check

smh_app = typer.Typer(help="SMH-Bench on the twin: 1,150 tasks in 7 capability categories and 22 subcategories "
                           "on homes of three tiers (up to 31 nested rooms and 135 devices), scored on the "
                           "simulator with irrelevant-state preservation, in the DR (whole home in the prompt, "
                           "one JSON answer) and EIA (tools, simulated user) settings.\n\n"
                           "Examples:\n\n"
                           "    twin bench smh validate --sample 3\n\n"
                           "    twin bench smh run --agent reference --setting both --out runs/smh-ref\n\n"
                           "    twin bench smh run --agent openai:gpt-4o-mini --limit 5 --out runs/smh\n\n"
                           "    twin bench smh generate --out /tmp/smh.jsonl",
                      no_args_is_help=True, rich_markup_mode="markdown")
TIERS = ("simple", "medium", "complex")


@smh_app.command("generate")
def generate_(out: Path = typer.Option(DEFAULT_TASKS, help="Tasks JSONL to write."),
              seed: int = typer.Option(SEED, help="Seed of the draws (the homes are fixed).")):
    """Draw the task set. With the defaults it rewrites scenarios/smh/data/tasks.jsonl byte for byte.

    Examples:

        twin bench smh generate --out /tmp/smh.jsonl

        twin bench smh generate --seed 7 --out /tmp/other.jsonl
    """
    t0 = time.perf_counter()
    with progress_bar("generating") as bar:
        job = bar.add_task("generate", total=1150)
        tasks = generate(seed, progress=lambda _: bar.advance(job))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(dump_task(t) + "\n" for t in tasks), encoding="utf-8")
    typer.echo(f"wrote {len(tasks)} tasks to {out} in {time.perf_counter() - t0:.1f} s: {json.dumps(shape(tasks))}")


@smh_app.command()
def validate(tasks: Path = typer.Option(DEFAULT_TASKS, help="Tasks JSONL."),
             sample: int | None = typer.Option(None, min=1, help="Only the first N tasks of every subcategory "
                                               "(the whole set's shape is still checked).")):
    """Check the set's shape (at least 1,100 tasks, 7 categories, 22 subcategories, 3 tiers), every
    task (its home replays, the reference solver passes it in DR and EIA, the null agent fails it)
    and the bounds (act-all, stuffer and copier at 0 % where they must fail).

    Examples:

        twin bench smh validate

        twin bench smh validate --sample 2
    """
    items = select_tasks(load_tasks, tasks, None, CATEGORIES, None)
    found = shape_problems(items)
    items = per_subcategory(items, sample)
    with progress_bar("validating") as bar:
        job = bar.add_task("validate", total=len(items) * 2)
        found += check(items, progress=lambda: bar.advance(job))
        bounds, scores = bound_problems(items, progress=lambda: bar.advance(job))
    found += bounds
    report_validation(found, scores, CATEGORIES, len(items),
                      "reference 100 % in DR and EIA, null and bound agents 0 % where they must be")


@smh_app.command("judge-agreement")
def judge_agreement(labels: list[Path] = typer.Option([DEFAULT_LABELS, FREE_LABELS], help="Labelled TC3/TC7 "
                                                      "replies JSONL (repeatable; by default the template "
                                                      "part and the free-wording part)."),
                    split: str | None = typer.Option(None, help="Only this part of the labels: "
                                                     + " | ".join(SPLITS) + "."),
                    tasks: Path = typer.Option(DEFAULT_TASKS, help="Tasks JSONL."),
                    judge: list[str] | None = typer.Option(None, help="Also measure this judge: openai:MODEL "
                                                           "(repeatable; the rule judge is always first)."),
                    base_url: str | None = typer.Option(None, envvar="OPENAI_BASE_URL",
                                                        help="OpenAI-compatible API base URL."),
                    api_key: str | None = typer.Option(None, envvar="OPENAI_API_KEY", help="API key.")):
    """Accuracy of the TC3/TC7 judges on labelled replies, per category and per kind of reply,
    for each part of the labels present: dev and heldout (template wording), dev2 and heldout2
    (free wording) (docs/judge-labels.md).

    Examples:

        twin bench smh judge-agreement

        twin bench smh judge-agreement --split dev2

        twin bench smh judge-agreement --judge openai:gpt-4o-mini
    """
    for spec in judge or []:
        require_for_model(spec, f"--judge {spec}")
    if split is not None and split not in SPLITS:
        raise CliError(f"unknown split {split!r}; accepted: {', '.join(SPLITS)}")
    try:
        rows = [r for path in labels for r in load_labels(path) if split is None or r.get("split") == split]
        if not rows:
            raise ValueError("no labelled replies" + (f" in the {split} part" if split else ""))
        items = load_tasks(tasks)
        judges = [make_judge("rule")] + [make_judge(spec, base_url, api_key) for spec in judge or [] if spec != "rule"]
        result = judge_labels(items, rows, judges)
    except (OSError, ValueError) as exc:
        raise CliError(str(exc)) from None
    except ModelAPIError as exc:
        raise CliError(str(exc)) from None
    typer.echo(agreement_table(result, [j.name for j in judges]))


#: Categories that need the twin's own automation table (not served over Matter).
NEEDS_TWIN = ("TC4",)


@smh_app.command()
def run(agent: str = typer.Option(..., help=" | ".join(AGENTS)),
        out: Path = typer.Option(..., help="Run directory (results.jsonl, summary.json; reruns resume)."),
        setting: str = typer.Option("eia", help="eia | dr | both."),
        tasks: Path = typer.Option(DEFAULT_TASKS, help="Tasks JSONL."),
        category: list[str] | None = typer.Option(None, help="Only these categories (repeatable)."),
        tier: list[str] | None = typer.Option(None, help="Only these tiers (repeatable)."),
        limit: int | None = typer.Option(None, min=1, help="At most this many tasks per category."),
        judge: str = typer.Option("rule", help="Judge of TC3 clarifications and TC7 answers: rule | "
                                  "openai:MODEL (majority of three)."),
        mode: str = typer.Option("json", help="ReAct protocol for openai agents in EIA: json | tools."),
        max_steps: int = typer.Option(30, min=1, help="Model turns per task (EIA)."),
        workers: int = typer.Option(2, min=1, help="Tasks run at once, each on its own twin."),
        over_matter: bool = typer.Option(False, "--over-matter", help="EIA over Matter: serve each task's home "
                                         "as one Matter bridge node, commission it into python-matter-server "
                                         "and drive the agent through it (TC4 needs the twin's automation "
                                         "table and is left out). Needs root: the run makes a network "
                                         "namespace with its own python-matter-server."),
        matter_server: str | None = typer.Option(None, help="With --over-matter: use this running "
                                                 "python-matter-server (ws://...); run inside the network "
                                                 "namespace where it finds the nodes (no root needed)."),
        ray: str | None = typer.Option(None, "--ray", metavar="ADDRESS", show_default=False,
                                       help="Run tasks as Ray tasks: 'local' starts a local Ray "
                                            "(loopback only, --workers CPUs); else a cluster address."),
        base_url: str | None = typer.Option(None, envvar="OPENAI_BASE_URL", help="OpenAI-compatible API base URL."),
        api_key: str | None = typer.Option(None, envvar="OPENAI_API_KEY", help="API key."),
        max_unusable: float = typer.Option(0.2, "--max-unusable", min=0.0, max=1.0, help="Fail the run (exit 1) "
                                           "when more than this share of an LLM agent's EIA replies could not "
                                           "be used (no step could be parsed).")):
    """Run an agent over the tasks in one or both settings; print success per setting, category and
    tier, and the error taxonomy. A rerun with the same `--out` resumes.

    As with `twin bench run`: an LLM API that cannot be reached or refuses the key stops the run
    with one line (exit 2), and the tasks it stopped are not recorded, so a rerun retries them.
    EIA replies that hold no usable step are counted in the summary; above `--max-unusable` the
    run fails (exit 1). An EIA task in which no reply could be used is not recorded, and three in
    a row stop the run. (A DR reply that does not parse is the model's answer, scored as such.)

    Results go to `--out`/eia and `--out`/dr (results.jsonl each, as `twin bench run` writes them).
    With `--over-matter` (EIA only) the agent reaches each home through python-matter-server
    and the home it changed is scored in process as usual.

    Examples:

        twin bench smh run --agent reference --setting both --out runs/smh-ref

        twin bench smh run --agent null --category TC4 --out runs/smh-null

        twin bench smh run --agent openai:qwen2.5-7b --base-url http://127.0.0.1:8000/v1 --setting dr --out runs/q

        twin bench smh run --agent openai:gpt-4o-mini --judge openai:gpt-4o --category TC7 --out runs/judged

        sudo twin bench smh run --agent reference --over-matter --category TC1 --limit 3 --out runs/smh-matter

        twin bench smh run --agent reference --ray local --workers 2 --out runs/smh-ray
    """
    if setting not in ("eia", "dr", "both"):
        raise CliError(f"unknown setting {setting!r}; accepted: eia, dr, both")
    require_for_model(agent, f"--agent {agent}")
    require_for_model(judge, f"--judge {judge}")
    if ray is not None:
        require("ray", "--ray")
    check_over_matter(over_matter, matter_server, ray)
    if over_matter and setting != "eia":
        raise CliError("--over-matter runs the EIA setting (DR replays one JSON answer in process); "
                       "use --setting eia")
    items = select_tasks(load_tasks, tasks, category, CATEGORIES, limit, tier, TIERS)
    settings = ("eia", "dr") if setting == "both" else (setting,)
    try:
        make_agent(agent, base_url, api_key, mode)
        make_judge(judge, base_url, api_key)
        if "dr" in settings:
            make_direct(agent, base_url, api_key)
    except ValueError as exc:
        raise CliError(str(exc)) from None
    if over_matter:
        left = [t for t in items if t.category in NEEDS_TWIN]
        if left and category:
            raise CliError("--over-matter leaves out TC4 (its rules live in the twin's automation table); "
                           "drop --category TC4")
        if left:
            typer.echo(f"over Matter: {len(left)} TC4 tasks left out (their rules live in the twin's automation "
                       "table)", err=True)
            items = [t for t in items if t.category not in NEEDS_TWIN]
        if matter_server is None:   # re-run this command inside a namespace with its own server
            args = ["bench", "smh", "run", "--agent", agent, "--out", str(out), "--tasks", str(tasks),
                    "--judge", judge, "--mode", mode, "--max-steps", str(max_steps),
                    *[a for c in category or [] for a in ("--category", c)],
                    *[a for t in tier or [] for a in ("--tier", t)],
                    *(["--limit", str(limit)] if limit is not None else []),
                    "--max-unusable", str(max_unusable)]
            raise typer.Exit(rerun_over_matter("bench", args, base_url, api_key))

    def one(setting_: str, serve: Serve) -> Callable[[SmhTask], dict[str, Any]]:
        def run_item(task: SmhTask) -> dict[str, Any]:   # built from strings: it may run on a Ray worker
            scorer = make_judge(judge, base_url, api_key)
            row = run_eia(task, make_agent(agent, base_url, api_key, mode), max_steps, scorer, serve) \
                if setting_ == "eia" else run_dr(task, make_direct(agent, base_url, api_key), agent, scorer)
            return {"episode_id": task.id, **row, "judge": scorer.name}
        return run_item
    results, new = [], []
    with serving_over_matter(matter_server if over_matter else None, "task homes", out) as serving:
        try:
            for s in settings:   # the one runner (scenarios/runner.py): resumable, in threads or on Ray
                new += run_all(items, None, None, out / s, workers=1 if serving else workers, ray_address=ray,
                               run_item=one(s, serving or in_process))
                ids = {t.id for t in items}
                results += [r for r in load_results(out / s) if r["episode_id"] in ids]
        except ModelAPIError as exc:
            raise CliError(f"{exc}; the tasks it stopped are not recorded: a rerun retries them") from None
        except RuntimeError as exc:   # Ray missing or unreachable
            raise CliError(str(exc)) from None
    summary = summarize(results)
    (out / "summary.json").write_text(json.dumps(summary, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    for key in ("setting", "category", "tier"):
        typer.echo(f"{key}: " + ", ".join(f"{k} {100 * v['success']:.1f} %" for k, v in summary[key].items()))
    if summary["errors"]:
        typer.echo("errors: " + ", ".join(f"{k} {v}" for k, v in summary["errors"].items()))
    typer.echo(f"{sum(r['success'] for r in results)}/{len(results)} succeeded; results in {out}")
    unusable_summary(new, max_unusable)
