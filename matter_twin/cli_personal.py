"""`twin bench personal`: PersonalHomeBench on the twin (personalised households).

Mounted by matter_twin/cli_bench.py as the personal suite's verbs (`twin bench personal ...`).
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

import typer

from matter_twin.cli_simuhome import unusable_summary
from matter_twin.console import CliError, one_line, progress_bar, select_tasks
from matter_twin.extras import require_for_model
from matter_twin.sandbox import check_over_matter, rerun_over_matter, serving_over_matter
from scenarios.agent import in_process
from scenarios.model_api import ModelAPIError
from scenarios.personal.agreement import DEFAULT_LABELS, judge_labels, load_labels
from scenarios.personal.evaluate import PersonalJudge, Tally, bounds_line, make_agent, summarize, win_rates
from scenarios.personal.evaluate import run as run_all
from scenarios.personal.evaluate import validate as check
from scenarios.personal.households import DAYS, write_gzip, write_pack
from scenarios.personal.suite import DEFAULT_TASKS, HOUSEHOLDS_PACK
from scenarios.personal.tasks import CATEGORIES, PersonalTask, dump_task, generate, load_tasks
from scenarios.runner import load_results
from scenarios.simuhome.agreement import SPLITS, agreement_table
from twin.schema import UserFileError

SEED = 16
HOUSEHOLDS = 1100
TASKS = 6000
JOBS = 2
#: The committed set is the paper's scale: `generate` with its defaults rewrites it.
COMMITTED_TASKS, COMMITTED_DRAW = TASKS, HOUSEHOLDS


def counts_for(total: int) -> dict[str, int]:
    """`total` tasks in the paper's proportions (IG, MC, FR, PG one sixth each, CF a third, in pairs)."""
    share = total // 6
    return {c: 2 * share if c == "CF" else share for c in CATEGORIES} if share else \
        {c: (2 if c == "CF" else 1) for c in CATEGORIES}

personal_app = typer.Typer(help="PersonalHomeBench on the twin: residents with personas and habits live in the "
                                "home for a few virtual days; questions (IG, CF, MC) and proactive tasks (FR, "
                                "PG) are drawn from that history and scored by rules (counterfactuals by "
                                "replaying the day).\n\n"
                                "Examples:\n\n"
                                "    twin bench personal run --agent reference --out runs/personal-ref\n\n"
                                "    twin bench personal run --agent openai:gpt-4o-mini --out runs/personal-mini\n\n"
                                "    twin bench personal validate\n\n"
                                "    twin bench personal generate --seed 3 --out /tmp/personal.jsonl",
                           no_args_is_help=True, rich_markup_mode="markdown")


@personal_app.command("generate")
def generate_(out: Path = typer.Option(DEFAULT_TASKS, help="Tasks file to write (.jsonl, or .jsonl.gz); the "
                                       "households pack goes beside it."),
              seed: int = typer.Option(SEED, help="Seed of the households and of the draws."),
              households: int = typer.Option(HOUSEHOLDS, min=1, max=5000, help="How many households."),
              tasks: int = typer.Option(TASKS, min=6, help="How many tasks, in the paper's proportions."),
              draw_from: int | None = typer.Option(None, min=1, help="Draw the tasks from the first N households "
                                                   "only (default: all of them)."),
              days: int = typer.Option(DAYS, min=2, max=14, help="Virtual days each household lives."),
              jobs: int = typer.Option(JOBS, min=1, max=64, help="Processes drawing the households' tasks "
                                       "(the result does not depend on it).")):
    """Write the households (HomeMaker homes with residents, pets and life events) as one pack, let
    each live its days on the twin, and draw the five task categories from that history. With the
    defaults it rewrites scenarios/personal/data/personal.jsonl.gz and its households pack byte for byte.

    Examples:

        twin bench personal generate --out /tmp/personal.jsonl.gz

        twin bench personal generate --seed 3 --households 4 --tasks 24 --out /tmp/small.jsonl
    """
    t0 = time.perf_counter()
    names = write_pack(out.parent / HOUSEHOLDS_PACK, seed, households)[:draw_from]
    with progress_bar("generating") as bar:
        job = bar.add_task("generate", total=len(names))
        drawn = generate(out.parent, names, seed, counts_for(tasks), days, jobs,
                         progress=lambda _: bar.advance(job))
    text = "".join(dump_task(t) + "\n" for t in drawn)
    if out.suffix == ".gz":
        write_gzip(out, text)
    else:
        out.write_text(text, encoding="utf-8")
    counts = ", ".join(f"{c} {sum(t.category == c for t in drawn)}" for c in CATEGORIES)
    typer.echo(f"wrote {len(drawn)} tasks ({counts}) from {len(names)} of {households} households to {out.parent} "
               f"in {time.perf_counter() - t0:.1f} s")


@personal_app.command()
def validate(tasks: Path = typer.Option(DEFAULT_TASKS, help="Tasks JSONL (or .jsonl.gz)."),
             jobs: int = typer.Option(JOBS, min=1, max=64, help="Processes sharing the households.")):
    """Check every task: its answer recomputes from the simulation (CF by replaying the day with the
    change), and the bounds hold (the reference solves every task of every category; the null agent
    solves nothing; the stuffer and copier nothing in IG, CF, MC and PG). Ends with each agent's
    success rate per category.

    Examples:

        twin bench personal validate

        twin bench personal validate --tasks /tmp/small.jsonl
    """
    items = select_tasks(load_tasks, tasks, None, CATEGORIES, None)
    tally: Tally = {}
    with progress_bar("validating") as bar:
        job = bar.add_task("validate", total=len(items))
        try:
            problems = check(items, tasks.parent, progress=lambda: bar.advance(job), jobs=jobs, tally=tally)
        except UserFileError as exc:   # a household file that does not load
            raise CliError(str(exc)) from None
    for p in problems:
        one_line(p)
    typer.echo(f"success rate per category (tasks run): {bounds_line(tally)}")
    if problems:
        one_line(f"{len(problems)} problem(s) in {len(items)} tasks")
        raise typer.Exit(1)
    typer.echo(f"{len(items)} tasks valid; every bound holds")


@personal_app.command()
def run(agent: str = typer.Option(..., help="reference | null | stuffer | copier | openai:MODEL"),
        out: Path = typer.Option(..., help="Run directory (results.jsonl; reruns resume)."),
        tasks: Path = typer.Option(DEFAULT_TASKS, help="Tasks JSONL."),
        judge: str | None = typer.Option(None, help="openai:MODEL: the semantic-equivalence judge for IG/CF "
                                         "answers no rule matches, and the role-playing judge for PG plans."),
        mode: str = typer.Option("json", help="ReAct protocol for openai agents: json | tools."),
        base_url: str | None = typer.Option(None, envvar="OPENAI_BASE_URL", help="OpenAI-compatible API base URL."),
        api_key: str | None = typer.Option(None, envvar="OPENAI_API_KEY", help="API key."),
        max_steps: int = typer.Option(15, min=1, help="Model turns per task (the paper's budget: 15)."),
        category: list[str] | None = typer.Option(None, help="Only these categories (repeatable)."),
        limit: int | None = typer.Option(None, min=1, help="At most this many tasks per category."),
        max_unusable: float = typer.Option(0.2, "--max-unusable", min=0.0, max=1.0, help="Fail the run (exit 1) "
                                           "when more than this share of an LLM agent's replies could not be "
                                           "used (no step could be parsed)."),
        tools: bool = typer.Option(True, "--tools/--no-tools", help="With-Tools (default), or the paper's "
                                   "No-Tools sole reasoning: the household's members and memory in the prompt, "
                                   "finish the only tool."),
        anonymised: bool = typer.Option(False, "--anonymised", help="Ask the ID-based questions (member ids "
                                        "for names) instead of the personalised ones."),
        reflect: bool = typer.Option(False, "--reflect", help="Reflection: a failed task is tried once more, "
                                     "with the first answer and the judge's verdict on it."),
        over_matter: bool = typer.Option(False, "--over-matter", help="Serve each task's household home as one "
                                         "Matter bridge node, commission it into python-matter-server and drive "
                                         "the agent's device tools through it (the household tools answer in "
                                         "process). Needs root: the run makes a network namespace with its own "
                                         "python-matter-server."),
        matter_server: str | None = typer.Option(None, help="With --over-matter: use this running "
                                                 "python-matter-server (ws://...) instead; run inside the network "
                                                 "namespace where it finds the nodes (no root needed).")):
    """Run an agent on the personalised tasks and print the paper's figures per category (the
    reactive ones per difficulty, and the tool-usage error taxonomy). `--no-tools` and
    `--anonymised` select the paper's settings; use one run directory per setting.

    As with `twin bench run`: an LLM API that cannot be reached or refuses the key stops the run
    with one line (exit 2), and the tasks it stopped are not recorded, so a rerun retries them.
    Unusable replies are counted in the summary; above `--max-unusable` the run fails (exit 1). A
    task in which no reply could be used is not recorded, and three in a row stop the run.

    With `--over-matter` each task's household home is served as a Matter bridge node (one
    commissioning per task) and the agent's device tools go through python-matter-server; the
    answer is scored in process as usual, so results compare task by task with an in-process run.

    Examples:

        twin bench personal run --agent reference --out runs/personal-ref

        twin bench personal run --agent openai:gpt-4o-mini --judge openai:gpt-4o --out runs/personal-mini --limit 3

        sudo twin bench personal run --agent reference --over-matter --limit 1 --out runs/personal-matter
    """
    require_for_model(agent, f"--agent {agent}")
    require_for_model(judge, f"--judge {judge}")
    check_over_matter(over_matter, matter_server)
    items = select_tasks(load_tasks, tasks, category, CATEGORIES, limit)
    try:
        make_agent(agent, items[0] if items else PersonalTask(id="-", category="IG", household="-", at="-",
                                                               question="-"), base_url, api_key, mode, tools)
    except ValueError as exc:
        raise CliError(str(exc)) from None
    scorer = None
    if judge is not None:
        if not judge.startswith("openai:") or judge == "openai:":
            raise CliError(f"unknown judge {judge!r}; accepted: openai:MODEL")
        scorer = PersonalJudge(judge[len("openai:"):], base_url=base_url or os.environ.get("OPENAI_BASE_URL"),
                               api_key=api_key or os.environ.get("OPENAI_API_KEY"))
    if over_matter and matter_server is None:   # run this very command again inside a namespace with its server
        args = ["bench", "personal", "run", "--agent", agent, "--out", str(out), "--tasks", str(tasks),
                *(["--judge", judge] if judge is not None else []), "--mode", mode, "--max-steps", str(max_steps),
                *[a for c in category or [] for a in ("--category", c)],
                *(["--limit", str(limit)] if limit is not None else []), "--max-unusable", str(max_unusable),
                "--tools" if tools else "--no-tools", *(["--anonymised"] if anonymised else []),
                *(["--reflect"] if reflect else [])]
        raise typer.Exit(rerun_over_matter("personal", args, base_url, api_key))
    with serving_over_matter(matter_server, "household homes", out) as serving:
        try:
            new = run_all(items, lambda t: make_agent(agent, t, base_url, api_key, mode, tools), out, tasks.parent,
                          scorer, max_steps, progress=True, tools=tools, anonymise=anonymised, reflect=reflect,
                          serve=serving or in_process)
        except UserFileError as exc:   # a household file that does not load
            raise CliError(str(exc)) from None
        except ModelAPIError as exc:   # the tasks it stopped are not recorded: a rerun retries them
            raise CliError(f"{exc}; the tasks not done are not recorded: a rerun retries them") from None
    ids = {t.id for t in items}
    results = [r for r in load_results(out) if r["episode_id"] in ids]
    summary = summarize(results)
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    for category, figures in summary.items():
        if category == "tool_errors":   # the taxonomy: only the types that occurred, per task
            made = [f"{c} " + ", ".join(f"{k} {v}" for k, v in kinds.items() if v) for c, kinds in figures.items()
                    if any(kinds.values())]
            typer.echo("tool errors per task: " + ("; ".join(made) or "none"))
            continue
        typer.echo(f"{category}: " + ", ".join(f"{k} {v}" for k, v in figures.items()))
    typer.echo(f"{sum(bool(r['success']) for r in results)}/{len(results)} tasks succeeded; "
               f"results in {out / 'results.jsonl'}")
    unusable_summary(new, max_unusable)


@personal_app.command("judge-agreement")
def judge_agreement(labels: Path = typer.Option(DEFAULT_LABELS, help="Labelled answers JSONL: task_id, answer, "
                                                "label pass|fail, kind, split dev|heldout."),
                    tasks: Path = typer.Option(DEFAULT_TASKS, help="Tasks JSONL (or .jsonl.gz) the labels are "
                                               "about; their households pack beside it."),
                    split: str | None = typer.Option(None, help="Only this part of the labels: dev | heldout."),
                    judge: list[str] | None = typer.Option(None, help="Also measure this judge: openai:MODEL, the "
                                                           "equivalence judge of IG/CF answers no rule matches "
                                                           "(repeatable; the rules are always first)."),
                    base_url: str | None = typer.Option(None, envvar="OPENAI_BASE_URL",
                                                        help="OpenAI-compatible API base URL."),
                    api_key: str | None = typer.Option(None, envvar="OPENAI_API_KEY", help="API key.")):
    """Accuracy and Cohen's kappa of the scorer on labelled answers, per category and per kind of
    answer, for the dev and the held-out part (docs/judge-labels.md). A row passes when the task's
    score succeeds for that answer as in a run (a plan is run on the household lived to the task's
    time). A model judge decides IG/CF answers no rule matches; elsewhere its verdict is the rules'.

    Examples:

        twin bench personal judge-agreement

        twin bench personal judge-agreement --split dev

        twin bench personal judge-agreement --judge openai:gpt-4o-mini --base-url http://127.0.0.1:8000/v1
    """
    for spec in judge or []:
        require_for_model(spec, f"--judge {spec}")
        if not spec.startswith("openai:") or spec == "openai:":
            raise CliError(f"unknown judge {spec!r}; accepted: openai:MODEL")
    if split is not None and split not in SPLITS:
        raise CliError(f"unknown split {split!r}; accepted: {', '.join(SPLITS)}")
    try:
        rows = [r for r in load_labels(labels) if split is None or r.get("split") == split]
        items = load_tasks(tasks)
        judges = [PersonalJudge(spec[len("openai:"):], base_url=base_url or os.environ.get("OPENAI_BASE_URL"),
                                api_key=api_key or os.environ.get("OPENAI_API_KEY")) for spec in judge or []]
        with progress_bar("judging") as bar:
            job = bar.add_task("judge", total=len(rows))
            result = judge_labels(items, rows, tasks.parent, judges, progress=lambda: bar.advance(job))
    except (UserFileError, ValueError, ModelAPIError) as exc:
        raise CliError(str(exc)) from None
    if not result:
        raise CliError(f"{labels}: no labelled answers" + (f" in the {split} part" if split else ""))
    typer.echo(agreement_table(result, ["rule"] + [j.name for j in judges]))


@personal_app.command()
def compare(runs: list[Path] = typer.Option(..., "--run", help="A run directory of `twin bench personal run` "
                                           "(repeat: two or more)."),
            judge: str = typer.Option(..., help="openai:MODEL: the relative role-play judge."),
            tasks: Path = typer.Option(DEFAULT_TASKS, help="Tasks JSONL the runs ran."),
            base_url: str | None = typer.Option(None, envvar="OPENAI_BASE_URL", help="OpenAI-compatible API base URL."),
            api_key: str | None = typer.Option(None, envvar="OPENAI_API_KEY", help="API key.")):
    """The paper's relative role-play judge: for each plan-generation task every run answered, the
    judge ranks the runs' plans; prints each run's win rate (the share of tasks it ranked first).

    Example:

        twin bench personal compare --run runs/personal-mini --run runs/personal-4o --judge openai:gpt-4o
    """
    require_for_model(judge, f"--judge {judge}")
    if not judge.startswith("openai:") or judge == "openai:":
        raise CliError(f"unknown judge {judge!r}; accepted: openai:MODEL")
    if len(runs) < 2:
        raise CliError("compare needs two or more --run directories")
    found = {}
    for run_dir in runs:
        if not (run_dir / "results.jsonl").is_file():
            raise CliError(f"{run_dir}: no results.jsonl (not a run directory)")
        found[str(run_dir)] = load_results(run_dir)
    items = select_tasks(load_tasks, tasks, ["PG"], CATEGORIES, None)
    scorer = PersonalJudge(judge[len("openai:"):], base_url=base_url or os.environ.get("OPENAI_BASE_URL"),
                           api_key=api_key or os.environ.get("OPENAI_API_KEY"))
    try:
        rates = win_rates(items, found, tasks.parent, scorer)
    except UserFileError as exc:
        raise CliError(str(exc)) from None
    except ModelAPIError as exc:
        raise CliError(str(exc)) from None
    for name, rate in rates["win_rate"].items():
        typer.echo(f"{name}: win rate {rate}")
    typer.echo(f"{rates['tasks']} plan tasks ranked, {rates['undecided']} undecided")
