"""`twin bench`: generate, run, report and validate the SimuHome benchmark.

Mounted in twin/cli.py as `app.add_typer(bench_app, name="bench")`.
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Optional

import typer

from scenarios.schema import CATEGORIES, DEFAULT_EPISODES, EpisodeFileError, dump_episode, load_episodes


bench_app = typer.Typer(help="The SimuHome benchmark: 600 seeded episodes in 12 categories, agents, "
                             "simulator and judge scoring, reports.", no_args_is_help=True)


def _fail(message: str) -> None:
    typer.secho(message, fg="red", err=True)
    raise typer.Exit(1)


def _episodes(path: Path, categories: list[str] | None, limit: int | None):
    try:
        episodes = load_episodes(path)
    except EpisodeFileError as exc:
        _fail(str(exc))
    unknown = [c for c in categories or [] if c not in CATEGORIES]
    if unknown:
        _fail(f"unknown category {', '.join(unknown)}; accepted: {', '.join(CATEGORIES)}")
    if categories:
        episodes = [e for e in episodes if e.category in categories]
    if limit is not None:
        per: dict[str, int] = {}
        kept = []
        for e in episodes:
            per[e.category] = per.get(e.category, 0) + 1
            if per[e.category] <= limit:
                kept.append(e)
        episodes = kept
    return episodes


@bench_app.command()
def generate(out: Path = typer.Option(DEFAULT_EPISODES, help="JSONL file to write."),
             seed: int = typer.Option(None, help="Generator seed (default: the benchmark's fixed seed)."),
             per_category: int = typer.Option(50, min=1, help="Episodes per category."),
             category: Optional[list[str]] = typer.Option(None, help="Only these categories (repeatable).")):
    """Generate the episode set. With the defaults it reproduces scenarios/data/episodes.jsonl byte for byte."""
    from scenarios.generate import SEED
    from scenarios.generate import generate as gen
    if category and any(c not in CATEGORIES for c in category):
        _fail(f"unknown category; accepted: {', '.join(CATEGORIES)}")
    t0 = time.perf_counter()
    episodes = gen(SEED if seed is None else seed, per_category, tuple(category or CATEGORIES))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(dump_episode(e) + "\n" for e in episodes), encoding="utf-8")
    typer.echo(f"wrote {len(episodes)} episodes to {out} in {time.perf_counter() - t0:.1f} s")


@bench_app.command()
def validate(episodes: Path = typer.Option(DEFAULT_EPISODES, help="Episodes JSONL."),
             solve: bool = typer.Option(True, help="Also run the reference solver and the null agent.")):
    """Check every episode: schema, replay, goal ids, reference solves it, null agent does not."""
    from scenarios.validate import validate as check
    items = _episodes(episodes, None, None)
    found = check(items, solve)
    for p in found:
        typer.echo(p)
    if found:
        _fail(f"{len(found)} problem(s) in {len(items)} episodes")
    typer.echo(f"{len(items)} episodes valid")


@bench_app.command()
def run(agent: str = typer.Option(..., help="reference | null | openai:MODEL"),
        out: Path = typer.Option(..., help="Run directory (results.jsonl; reruns resume)."),
        episodes: Path = typer.Option(DEFAULT_EPISODES, help="Episodes JSONL."),
        workers: int = typer.Option(4, min=1, help="Episodes run at once, each on its own twin."),
        judge: str = typer.Option("rule", help="rule | openai:MODEL (majority of three)."),
        mode: str = typer.Option("json", help="ReAct protocol for openai agents: json | tools."),
        base_url: Optional[str] = typer.Option(None, envvar="OPENAI_BASE_URL", help="OpenAI-compatible API base URL."),
        api_key: Optional[str] = typer.Option(None, envvar="OPENAI_API_KEY", help="API key."),
        max_steps: int = typer.Option(30, min=1, help="Model turns per episode."),
        category: Optional[list[str]] = typer.Option(None, help="Only these categories (repeatable)."),
        limit: Optional[int] = typer.Option(None, min=1, help="At most this many episodes per category.")):
    """Run an agent over the episodes and score them."""
    from scenarios.runner import load_results, make_agent, make_judge
    from scenarios.runner import run as run_all
    items = _episodes(episodes, category, limit)
    try:
        make_agent(agent, base_url, api_key, mode)
        scorer = make_judge(judge, base_url, api_key)
    except ValueError as exc:
        _fail(str(exc))
    run_all(items, lambda: make_agent(agent, base_url, api_key, mode), scorer, out, workers, max_steps)
    results = [r for r in load_results(out) if r["episode_id"] in {e.id for e in items}]
    ok = sum(bool(r["success"]) for r in results)
    typer.echo(f"{ok}/{len(results)} episodes succeeded; results in {out / 'results.jsonl'}")


@bench_app.command()
def report(dirs: list[Path] = typer.Argument(..., help="Run directories (one agent each)."),
           out: Optional[Path] = typer.Option(None, help="Where to write report.md and charts (default: the first run).")):
    """Write report.md (Table 1 and Table 3 layouts, error taxonomy) and PNG charts."""
    from scenarios.report import write_report
    try:
        path = write_report(dirs, out)
    except ValueError as exc:
        _fail(str(exc))
    typer.echo(f"wrote {path}")
