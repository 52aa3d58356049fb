"""`twin bench homeflow`: HomeFlow's verbs (generate, validate, run)."""
from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

import typer

from matter_twin.console import CliError, per_subcategory, progress_bar, report_validation, select_tasks
from matter_twin.extras import require_for_model
from scenarios.homeflow.blueprint import llm_narrator
from scenarios.homeflow.evaluate import run as run_task
from scenarios.homeflow.evaluate import shape, shape_problems
from scenarios.homeflow.evaluate import validate as check
from scenarios.homeflow.generate import generate, generate_procedural
from scenarios.homeflow.tasks import (
    CATEGORIES,
    DEFAULT_TASKS,
    PER_CATEGORY,
    SEED,
    SIZES,
    HomeFlowTask,
    dump_tasks,
    load_tasks,
)
from scenarios.model_api import ModelAPIError
from scenarios.runner import load_results
from scenarios.runner import run as run_all
from scenarios.smh.agents import AGENTS, make_agent
from scenarios.smh.evaluate import summarize

homeflow_app = typer.Typer(help="HomeFlow on the twin: tasks drawn from Blueprints (a user profile, a HomeMaker "
                                "home, a scene, intents and their conditions), perturbed, filtered three ways and "
                                "verified on the twin; its evaluation set has 1,678 tasks in 5 groups and 18 "
                                "subcategories on homes from under 10 to over 100 devices.\n\n"
                                "Examples:\n\n"
                                "    twin bench homeflow generate --seed 7 -n 20 --out /tmp/hf.jsonl\n\n"
                                "    twin bench homeflow validate --sample 2\n\n"
                                "    twin bench homeflow run --agent reference --limit 5 --out runs/homeflow",
                           no_args_is_help=True, rich_markup_mode="markdown")


@homeflow_app.command("generate")
def generate_(out: Path = typer.Option(DEFAULT_TASKS, help="Tasks file to write (.jsonl, or .jsonl.gz)."),
              seed: int = typer.Option(SEED, help="Seed of every draw."),
              n: int | None = typer.Option(None, "-n", min=1, help="N procedural tasks on fresh HomeMaker homes "
                                           "(default: the evaluation set, on its pool of homes)."),
              llm: str | None = typer.Option(None, help="openai:MODEL: a model rewrites each scene's description "
                                             "(with -n only; the goals and their verification stay the same)."),
              base_url: str | None = typer.Option(None, envvar="OPENAI_BASE_URL", help="OpenAI-compatible API URL."),
              api_key: str | None = typer.Option(None, envvar="OPENAI_API_KEY", help="API key.")) -> None:
    """Draw verified tasks from Blueprints. Without -n it rewrites the evaluation set
    (scenarios/homeflow/data/tasks.jsonl.gz) byte for byte; with -n, N training tasks.
    Prints how many candidates each filter dropped.

    Examples:

        twin bench homeflow generate --seed 7 -n 20 --out /tmp/hf.jsonl

        twin bench homeflow generate --out /tmp/eval.jsonl.gz

        twin bench homeflow generate -n 5 --llm openai:gpt-4o-mini --out /tmp/hf-llm.jsonl
    """
    narrate = None
    if llm is not None:
        if n is None:
            raise CliError("--llm rewrites the scenes of procedural tasks only; give -n N (the evaluation set is "
                           "the templates')")
        if not llm.startswith("openai:") or len(llm) == len("openai:"):
            raise CliError(f"--llm must be openai:MODEL, got {llm!r}")
        require_for_model(llm, f"--llm {llm}")
        narrate = llm_narrator(llm[len("openai:"):], base_url, api_key)
    t0 = time.perf_counter()
    rejected: Counter[str] = Counter()
    with progress_bar("generating") as bar:
        job = bar.add_task("generate", total=n or sum(PER_CATEGORY.values()))
        if n is None:
            tasks = generate(seed, progress=lambda _: bar.advance(job), rejected=rejected)
        else:
            try:
                tasks = generate_procedural(seed, n, progress=lambda _: bar.advance(job), rejected=rejected,
                                            narrate=narrate)
            except ModelAPIError as exc:   # the model's endpoint failed: one line, nothing written
                raise CliError(str(exc)) from None
    dump_tasks(tasks, out)
    typer.echo(f"wrote {len(tasks)} verified tasks to {out} in {time.perf_counter() - t0:.1f} s: "
               f"{json.dumps(shape(tasks))}")
    typer.echo("candidates dropped: " + (", ".join(f"{k} {v}" for k, v in sorted(rejected.items())) or "none"))


@homeflow_app.command()
def validate(tasks: Path = typer.Option(DEFAULT_TASKS, help="Tasks file (.jsonl or .jsonl.gz)."),
             sample: int | None = typer.Option(None, min=1, help="Only the first N tasks of every subcategory "
                                               "(the whole set's shape is still checked).")) -> None:
    """Check the set's shape (at least 1,678 tasks, 5 groups, 18 subcategories, homes under 10 to
    over 100 devices), every task (its home replays, the reference solver passes, the null agent
    fails) and the bounds (act-all 0 % on TC3, stuffer and copier 0 %).

    Examples:

        twin bench homeflow validate

        twin bench homeflow validate --sample 2
    """
    items = select_tasks(load_tasks, tasks, None, CATEGORIES, None)
    found = shape_problems(items)
    items = per_subcategory(items, sample)
    with progress_bar("validating") as bar:
        job = bar.add_task("validate", total=len(items))
        problems, scores = check(items, progress=lambda: bar.advance(job))
    found += problems
    report_validation(found, scores, CATEGORIES, len(items),
                      "reference 100 %, null 0 %, bound agents 0 % where they must be")


@homeflow_app.command()
def run(agent: str = typer.Option(..., help=" | ".join(AGENTS)),
        out: Path = typer.Option(..., help="Run directory (results.jsonl, summary.json; reruns resume)."),
        tasks: Path = typer.Option(DEFAULT_TASKS, help="Tasks file (.jsonl or .jsonl.gz)."),
        category: list[str] | None = typer.Option(None, help="Only these groups (repeatable)."),
        size: list[str] | None = typer.Option(None, help="Only these home sizes (repeatable)."),
        limit: int | None = typer.Option(None, min=1, help="At most this many tasks per group."),
        mode: str = typer.Option("json", help="ReAct protocol for openai agents: json | tools."),
        max_steps: int = typer.Option(30, min=1, help="Model turns per task."),
        workers: int = typer.Option(2, min=1, help="Tasks run at once, each on its own twin."),
        base_url: str | None = typer.Option(None, envvar="OPENAI_BASE_URL", help="OpenAI-compatible API base URL."),
        api_key: str | None = typer.Option(None, envvar="OPENAI_API_KEY", help="API key.")) -> None:
    """Run an agent over the tasks through the tools (the simulated user answers its questions);
    print success per group and size. A rerun with the same `--out` resumes.

    Examples:

        twin bench homeflow run --agent reference --limit 5 --out runs/homeflow

        twin bench homeflow run --agent openai:gpt-4o-mini --category TC3 --out runs/hf
    """
    require_for_model(agent, f"--agent {agent}")
    items = select_tasks(load_tasks, tasks, category, CATEGORIES, limit, size, SIZES, "size")
    try:
        make_agent(agent, base_url, api_key, mode)
    except ValueError as exc:
        raise CliError(str(exc)) from None

    def run_item(task: HomeFlowTask) -> dict[str, Any]:
        return {"episode_id": task.id, "setting": "EIA",
                **run_task(task, make_agent(agent, base_url, api_key, mode), max_steps)}
    run_all(items, None, None, out, workers=workers, run_item=run_item)
    ids = {t.id for t in items}
    results = [r for r in load_results(out) if r["episode_id"] in ids]
    summary = summarize(results)
    (out / "summary.json").write_text(json.dumps(summary, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    for key in ("category", "tier"):
        typer.echo(f"{key}: " + ", ".join(f"{k} {100 * v['success']:.1f} %" for k, v in summary[key].items()))
    if summary["errors"]:
        typer.echo("errors: " + ", ".join(f"{k} {v}" for k, v in summary["errors"].items()))
    typer.echo(f"{sum(r['success'] for r in results)}/{len(results)} succeeded; results in {out}")


@homeflow_app.command("flow")
def flow_(out: Path = typer.Option(..., help="Directory for sft-{train,heldout}.jsonl and preferences-{...}.jsonl."),
          seed: int = typer.Option(SEED, help="Seed of the tasks (with -n) and of the search."),
          n: int = typer.Option(10, "-n", min=1, help="Procedural tasks to search (ignored with --tasks)."),
          tasks: Path | None = typer.Option(None, help="Search these tasks instead (.jsonl or .jsonl.gz)."),
          rollouts: int = typer.Option(24, min=1, help="MCTS-Flow rollouts per task."),
          workers: int = typer.Option(1, min=1, help="Ray workers (with --ray)."),
          ray: str | None = typer.Option(None, help="Run each task's search on Ray: 'local' or a cluster address."),
          agent: str = typer.Option("reference", help="reference (three policies on the reference solver) | "
                                    "openai:MODEL (its samples play the agent turns)."),
          samples: int = typer.Option(3, min=1, help="k_agent with openai:MODEL: samples at temperature 0.7."),
          user: str = typer.Option("scripted", help="scripted (the simulated user's fixed sentences) | "
                                   "openai:MODEL (an LLM plays the user: its later turns and its answers)."),
          base_url: str | None = typer.Option(None, envvar="OPENAI_BASE_URL", help="OpenAI-compatible API URL."),
          api_key: str | None = typer.Option(None, envvar="OPENAI_API_KEY", help="API key.")) -> None:
    """MCTS-Flow with the reference policy: verified multi-turn SFT dialogues (OpenAI chat format,
    tool schemas included) and preference pairs, split train/heldout by content hash. Every record
    is replayed on the twin before it is written; the files are the same bytes for any --workers.

    Examples:

        twin bench homeflow flow --seed 7 -n 20 --out /tmp/flow

        twin bench homeflow flow --tasks /tmp/hf.jsonl --ray local --workers 2 --out /tmp/flow-ray
    """
    from scenarios.homeflow.flow import LLMUserSpec, flow, replay
    agents = None
    if agent != "reference":
        if not agent.startswith("openai:") or len(agent) == len("openai:"):
            raise CliError(f"--agent must be reference or openai:MODEL, got {agent!r}")
        require_for_model(agent, f"--agent {agent}")
        agents = []
        for i in range(samples):   # SMH-Bench's ReAct agent and prompt, sampled
            sampled = make_agent(agent, base_url, api_key)
            sampled.temperature = 0.7
            agents.append((f"{agent}#{i}", sampled))
    player = None
    if user != "scripted":
        if not user.startswith("openai:") or len(user) == len("openai:"):
            raise CliError(f"--user must be scripted or openai:MODEL, got {user!r}")
        require_for_model(user, f"--user {user}")
        player = LLMUserSpec(user.removeprefix("openai:"), base_url, api_key, seed)
    t0 = time.perf_counter()
    items = (select_tasks(load_tasks, tasks, None, CATEGORIES, None) if tasks is not None
             else generate_procedural(seed, n))
    try:
        sft, prefs = flow(items, seed, rollouts, workers, ray, agents, player)
        by_id = {t.id: t for t in items}
        broken = [r["id"] for r in sft if not replay(by_id[r["task_id"]], r["messages"], player)]
        broken += [p["id"] for p in prefs if not replay(by_id[p["task_id"]], p["prompt"] + p["chosen"], player)]
    except (RuntimeError, ModelAPIError) as exc:   # Ray or the model's API unreachable: one line
        raise CliError(str(exc)) from None
    if broken:
        raise CliError(f"{len(broken)} record(s) do not replay: {', '.join(broken[:5])}")
    out.mkdir(parents=True, exist_ok=True)
    for name, rows in (("sft", sft), ("preferences", prefs)):
        for split in ("train", "heldout"):
            (out / f"{name}-{split}.jsonl").write_text(
                "".join(json.dumps(r, sort_keys=True, ensure_ascii=False) + "\n" for r in rows if r["split"] == split),
                encoding="utf-8")
    typer.echo(f"{len(sft)} verified dialogues and {len(prefs)} preference pairs from {len(items)} tasks in "
               f"{time.perf_counter() - t0:.1f} s, all replayed; in {out}")
