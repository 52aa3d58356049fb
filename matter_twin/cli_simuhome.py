"""`twin bench simuhome`: generate, run, report and validate the SimuHome benchmark.

Mounted by matter_twin/cli_bench.py as the simuhome suite's verbs (and, as before suites had
their own word, at `twin bench` itself: `twin bench run` is `twin bench simuhome run`).
"""
from __future__ import annotations

import json
import time
from pathlib import Path

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from matter_twin.console import CliError, by_category, one_line
from matter_twin.extras import require, require_for_model
from matter_twin.sandbox import check_over_matter, rerun_over_matter
from scenarios.model_api import ModelAPIError
from scenarios.over_matter import MatterServing, MatterServingError, runs_over_matter
from scenarios.report import write_report
from scenarios.runner import load_results, make_agent, make_judge, no_usable_reply
from scenarios.runner import run as run_all
from scenarios.simuhome.agreement import DEFAULT_LABELS, agreement_table, judge_labels, load_labels
from scenarios.simuhome.export import ExportError, chat_examples, preference_pairs
from scenarios.simuhome.generate import SEED
from scenarios.simuhome.generate import generate as gen
from scenarios.simuhome.importer import ImportError_, import_dir, import_file
from scenarios.simuhome.judges import LLMJudge, RuleJudge
from scenarios.simuhome.schema import CATEGORIES, DEFAULT_EPISODES, dump_episode, load_episodes
from scenarios.simuhome.tasks import generate_tasks
from scenarios.simuhome.validate import bound_problems, bounds_table, score_bounds
from scenarios.simuhome.validate import validate as check
from twin.schema import UserFileError

simuhome_app = typer.Typer(help="The SimuHome benchmark: 600 seeded episodes in 12 categories, agents, "
                                "simulator and judge scoring, reports. Every verb also answers at "
                                "`twin bench VERB` (`twin bench run` is `twin bench simuhome run`).\n\n"
                                "Examples:\n\n"
                                "    twin bench simuhome run --agent reference --out runs/reference\n\n"
                                "    twin bench simuhome run --agent openai:gpt-4o-mini --out runs/mini --limit 5\n\n"
                                "    twin bench simuhome report runs/reference runs/mini\n\n"
                                "    twin bench simuhome validate --no-solve\n\n"
                                "    twin bench simuhome import simuhome ~/SimuHome/data/benchmark --out sh.jsonl\n\n"
                                "    twin bench simuhome export runs/reference --out train.jsonl",
                           no_args_is_help=True, rich_markup_mode="markdown")


def _fail(message: str) -> None:
    """A check that did not pass (not bad input): one line, exit code 1."""
    one_line(message)
    raise typer.Exit(1)


def _episodes(path: Path, categories: list[str] | None, limit: int | None):
    try:
        episodes = load_episodes(path)
    except UserFileError as exc:
        raise CliError(str(exc)) from None
    return by_category(episodes, categories, limit, CATEGORIES)


@simuhome_app.command()
def generate(out: Path = typer.Option(DEFAULT_EPISODES, help="JSONL file to write."),
             seed: int = typer.Option(None, help="Generator seed (default: the benchmark's fixed seed)."),
             per_category: int = typer.Option(50, min=1, help="Episodes per category."),
             category: list[str] | None = typer.Option(None, help="Only these categories (repeatable).")):
    """Generate the episode set. With the defaults it reproduces scenarios/simuhome/data/episodes.jsonl byte for byte.

    Examples:

        twin bench generate --out /tmp/episodes.jsonl

        twin bench generate --seed 7 --per-category 5 --category QT1-F --out small.jsonl
    """
    if category and any(c not in CATEGORIES for c in category):
        raise CliError(f"unknown category; accepted: {', '.join(CATEGORIES)}")
    t0 = time.perf_counter()
    episodes = gen(SEED if seed is None else seed, per_category, tuple(category or CATEGORIES))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(dump_episode(e) + "\n" for e in episodes), encoding="utf-8")
    typer.echo(f"wrote {len(episodes)} episodes to {out} in {time.perf_counter() - t0:.1f} s")


@simuhome_app.command()
def validate(episodes: Path = typer.Option(DEFAULT_EPISODES, help="Episodes JSONL."),
             solve: bool = typer.Option(True, help="Also run the reference solver, the null agent and the "
                                                   "adversarial agents (validity bounds).")):
    """Check every episode (schema, replay, goal ids, reference solves it, null agent does not), then the
    validity bounds: reference 100 %, null and adversarial agents 0 % where they must fail.

    Examples:

        twin bench validate

        twin bench validate --episodes small.jsonl --no-solve
    """
    items = _episodes(episodes, None, None)
    found = check(items, solve)
    if solve and not found:
        scores = score_bounds(items)
        typer.echo(bounds_table(items, scores))
        found = bound_problems(items, scores)
    for p in found:
        typer.echo(p)
    if found:
        _fail(f"{len(found)} problem(s) in {len(items)} episodes")
    typer.echo(f"{len(items)} episodes valid" + ("; every bound holds" if solve else ""))


@simuhome_app.command("judge-agreement")
def judge_agreement(labels: Path = typer.Option(None, help="Labelled answers JSONL (default: the committed set)."),
                    episodes: Path = typer.Option(DEFAULT_EPISODES, help="Episodes JSONL."),
                    llm_url: str | None = typer.Option(None, help="OpenAI-compatible base URL: also measure an "
                                                                  "LLM judge."),
                    model: str | None = typer.Option(None, help="Model name of the LLM judge."),
                    api_key: str | None = typer.Option(None, envvar="OPENAI_API_KEY", help="API key.")):
    """Accuracy of the rule judge (and an LLM judge, if given) on hand-labelled answers, per label.

    Examples:

        twin bench judge-agreement

        twin bench judge-agreement --llm-url http://127.0.0.1:8000/v1 --model qwen2.5-7b
    """
    if (llm_url is None) != (model is None):
        raise CliError("--llm-url and --model go together")
    if model is not None:
        require("llm", "an LLM judge (--model)")
    try:
        rows = load_labels(labels or DEFAULT_LABELS)
    except (OSError, ValueError) as exc:
        raise CliError(str(exc)) from None
    judges = [RuleJudge()] + ([LLMJudge(model, base_url=llm_url, api_key=api_key)] if model else [])
    result = judge_labels(_episodes(episodes, None, None), rows, judges)
    typer.echo(agreement_table(result, [j.name for j in judges]))


@simuhome_app.command()
def run(agent: str = typer.Option(..., help="reference | null | openai:MODEL"),
        out: Path = typer.Option(..., help="Run directory (results.jsonl; reruns resume)."),
        episodes: Path = typer.Option(DEFAULT_EPISODES, help="Episodes JSONL."),
        workers: int = typer.Option(4, min=1, help="Episodes run at once, each on its own twin."),
        judge: str = typer.Option("rule", help="rule | openai:MODEL (majority of three)."),
        mode: str = typer.Option("json", help="ReAct protocol for openai agents: json | tools."),
        base_url: str | None = typer.Option(None, envvar="OPENAI_BASE_URL", help="OpenAI-compatible API base URL."),
        api_key: str | None = typer.Option(None, envvar="OPENAI_API_KEY", help="API key."),
        max_steps: int = typer.Option(30, min=1, help="Model turns per episode."),
        category: list[str] | None = typer.Option(None, help="Only these categories (repeatable)."),
        limit: int | None = typer.Option(None, min=1, help="At most this many episodes per category."),
        over_matter: bool = typer.Option(False, "--over-matter", help="Serve each episode's home as one "
                                         "Matter bridge node, commission it into python-matter-server and "
                                         "drive the agent through it (QT1-QT3; QT4 needs virtual time to "
                                         "pass). Needs root: the run makes a network namespace with its own "
                                         "python-matter-server."),
        matter_server: str | None = typer.Option(None, help="With --over-matter: use this running "
                                                 "python-matter-server (ws://...) instead; run inside the "
                                                 "network namespace where it finds the nodes (no root needed)."),
        ray: str | None = typer.Option(None, "--ray", metavar="ADDRESS", show_default=False,
                                       help="Run episodes as Ray tasks: 'local' starts a local Ray "
                                            "(loopback only, --workers CPUs); else a cluster address."),
        max_unusable: float = typer.Option(0.2, "--max-unusable", min=0.0, max=1.0, help="Fail the run (exit 1) "
                                           "when more than this share of an LLM agent's replies could not be "
                                           "used (no step could be parsed).")):
    """Run an agent over the episodes and score them. Results go to `--out`/results.jsonl (what the
    run decided: identical across reruns and executors; wall-clock latencies in timings.jsonl); a
    rerun with the same `--out` resumes where it stopped.

    An LLM agent's API that cannot be reached, refuses the key or does not know the model stops
    the run with one line (exit 2); the episodes it stopped are not recorded, so a rerun
    retries them. Replies that hold no usable step are counted in the summary; above
    `--max-unusable` the run fails (exit 1). An episode in which no reply at all could be used
    is not recorded either, and three in a row stop the run.

    With `--over-matter` every episode's home is served as a Matter bridge node (one
    commissioning per episode) and the agent works through python-matter-server; the home it
    changed is then scored in process as usual, so results compare episode by episode with an
    in-process run. Virtual time stands still while the agent works, as in process.

    Examples:

        twin bench run --agent reference --out runs/reference

        twin bench run --agent openai:gpt-4o-mini --out runs/mini --category QT1-F --limit 5

        twin bench run --agent openai:qwen2.5-7b --base-url http://127.0.0.1:8000/v1 --out runs/qwen --mode tools

        sudo twin bench run --agent reference --over-matter --category QT2-F --limit 5 --out runs/matter

        twin bench run --agent reference --out runs/ray --ray local --workers 2

        twin bench run --agent reference --out runs/cluster --ray ray://head.example:10001
    """
    require_for_model(agent, f"--agent {agent}")
    require_for_model(judge, f"--judge {judge}")
    if ray is not None:
        require("ray", "--ray")
    check_over_matter(over_matter, matter_server, ray, items="episodes")
    items = _episodes(episodes, category, limit)
    try:
        make_agent(agent, base_url, api_key, mode)
        scorer = make_judge(judge, base_url, api_key)
    except ValueError as exc:
        raise CliError(str(exc)) from None
    if over_matter:
        timed = [e for e in items if not runs_over_matter(e.category)]
        if timed and category:
            raise CliError(f"--over-matter runs QT1-QT3 only (QT4 needs virtual time to pass while the "
                           f"agent works); drop --category {', '.join(sorted({e.category for e in timed}))}")
        if timed:
            typer.echo(f"over Matter: {len(timed)} QT4 episodes left out (they need virtual time to pass)",
                       err=True)
            items = [e for e in items if runs_over_matter(e.category)]
        if matter_server is None:
            args = ["bench", "run", "--agent", agent, "--out", str(out), "--episodes", str(episodes),
                    "--judge", judge, "--mode", mode, "--max-steps", str(max_steps),
                    *[a for c in category or [] for a in ("--category", c)],
                    *(["--limit", str(limit)] if limit is not None else []),
                    "--max-unusable", str(max_unusable)]
            raise typer.Exit(rerun_over_matter("bench", args, base_url, api_key))
        serving = MatterServing(matter_server)
        try:
            serving.wait_for_server()
            new = run_all(items, lambda: make_agent(agent, base_url, api_key, mode), scorer, out, 1, max_steps,
                          serve=serving, fatal=(MatterServingError,))
            typer.echo(f"over Matter: {serving.commissioned} episode homes served as bridge nodes, each "
                       f"commissioned into python-matter-server at {matter_server}")
        except MatterServingError as exc:
            _fail(f"over Matter: {exc} (results so far are in {out / 'results.jsonl'}; a rerun resumes)")
        except ModelAPIError as exc:
            raise CliError(f"{exc}; the episodes it stopped are not recorded: a rerun retries them") from None
        finally:
            serving.close()
    else:
        try:
            new = run_all(items, lambda: make_agent(agent, base_url, api_key, mode), scorer, out, workers, max_steps,
                          ray_address=ray)
        except ModelAPIError as exc:
            raise CliError(f"{exc}; the episodes it stopped are not recorded: a rerun retries them") from None
        except RuntimeError as exc:   # Ray missing or unreachable
            raise CliError(str(exc)) from None
    results = [r for r in load_results(out) if r["episode_id"] in {e.id for e in items}]
    ok = sum(bool(r["success"]) for r in results)
    typer.echo(f"{ok}/{len(results)} episodes succeeded; results in {out / 'results.jsonl'}")
    unusable_summary(new, max_unusable)


def unusable_summary(new: list[dict], max_unusable: float) -> None:
    """An LLM agent's unusable replies in this run: counted, and over the threshold a failure (exit 1).
    Shared by every suite that runs through scenarios/runner.py."""
    replies = sum(r.get("replies") or 0 for r in new)
    if not replies:
        return
    unusable = sum(r.get("unusable_replies") or 0 for r in new)
    skipped = sum(no_usable_reply(r) for r in new)
    typer.echo(f"{unusable} of {replies} model replies could not be used"
               + (f"; {skipped} episodes without one usable reply were not recorded (a rerun retries them)"
                  if skipped else ""))
    if unusable > max_unusable * replies:
        one_line(f"{unusable / replies:.0%} of the model's replies could not be used, above --max-unusable "
                 f"{max_unusable:g}")
        raise typer.Exit(1)


@simuhome_app.command()
def export(runs: list[Path] = typer.Argument(..., help="Run directories of `twin bench run` (any agents)."),
           out: Path = typer.Option(..., help="Chat fine-tuning JSONL: one line per successful episode."),
           pairs: Path | None = typer.Option(None, help="Also write preference pairs (a success and a failure "
                                                        "on the same episode) to this JSONL."),
           episodes: Path = typer.Option(DEFAULT_EPISODES, help="The episodes the runs used.")):
    """Export runs as training data: OpenAI chat fine-tuning JSONL (messages with tool calls and
    the recorded tool results) and, with --pairs, preference pairs.

    Examples:

        twin bench export runs/reference --out train.jsonl

        twin bench export runs/reference runs/mini --out train.jsonl --pairs pairs.jsonl
    """
    by_id = {e.id: e for e in _episodes(episodes, None, None)}
    results = []
    for run_dir in runs:
        if not (run_dir / "results.jsonl").is_file():
            raise CliError(f"{run_dir}: no results.jsonl (not a `twin bench run` directory)")
        results.extend(load_results(run_dir))
    try:
        examples = chat_examples(results, by_id)
        pair_rows = preference_pairs(results, by_id) if pairs is not None else []
    except ExportError as exc:
        raise CliError(str(exc)) from None
    _write_jsonl(out, examples)
    typer.echo(f"wrote {len(examples)} successful trajectories to {out}")
    if pairs is not None:
        _write_jsonl(pairs, pair_rows)
        typer.echo(f"wrote {len(pair_rows)} preference pairs to {pairs}")


@simuhome_app.command()
def tasks(out: Path = typer.Option(..., help="Directory for train.jsonl and heldout.jsonl."),
          seed: int = typer.Option(1, help="Generator seed (the committed benchmark uses another)."),
          per_category: int = typer.Option(10, min=1, help="Tasks drawn per category."),
          category: list[str] | None = typer.Option(None, help="Only these categories (repeatable)."),
          heldout: float = typer.Option(0.1, min=0.0, max=0.99, help="Share of tasks held out (by content hash)."),
          exclude: Path = typer.Option(DEFAULT_EPISODES, help="Episodes never to emit (default: the benchmark).")):
    """Generate verifiable training tasks: seeded episodes, each kept only if the reference solver
    solves it, split into train and held-out by a hash of their content (a held-out task can
    never land in train, whatever the seed), none equal to an excluded episode.

    Examples:

        twin bench tasks --out data/tasks --seed 7 --per-category 100

        twin bench tasks --out data/qt3 --category QT3-F --category QT3-IF --heldout 0.2
    """
    categories = tuple(category or CATEGORIES)
    excluded = _episodes(exclude, None, None)
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn()) as bar:
        job = bar.add_task("drawing and solving tasks", total=per_category * len(categories))
        try:
            made = generate_tasks(seed, per_category, categories, heldout, excluded,
                                  progress=lambda _: bar.advance(job))
        except (ValueError, RuntimeError) as exc:
            raise CliError(str(exc)) from None
    out.mkdir(parents=True, exist_ok=True)
    for name, items in (("train", made.train), ("heldout", made.heldout)):
        (out / f"{name}.jsonl").write_text("".join(dump_episode(e) + "\n" for e in items), encoding="utf-8")
    typer.echo(f"{len(made.train)} train and {len(made.heldout)} held-out tasks in {out} "
               f"({made.unsolved} unsolved and {made.duplicates} duplicates left out)")


def _write_jsonl(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in rows),
                    encoding="utf-8")


@simuhome_app.command()
def report(dirs: list[Path] = typer.Argument(..., help="Run directories (one agent each)."),
           out: Path | None = typer.Option(None, help="Where to write report.md and charts (default: the first run).")):
    """Write report.md (Table 1 and Table 3 layouts, error taxonomy) and PNG charts.

    Examples:

        twin bench report runs/reference

        twin bench report runs/reference runs/mini --out reports/
    """
    require("plots", "twin bench report (its charts)")
    try:
        path = write_report(dirs, out)
    except ValueError as exc:
        raise CliError(str(exc)) from None
    typer.echo(f"wrote {path}")


@simuhome_app.command("import")
def import_(source: str = typer.Argument(..., help="Whose episodes: simuhome."),
            directory: Path = typer.Argument(..., help="Directory of the episode files (SimuHome's data/benchmark)."),
            out: Path = typer.Option(Path("simuhome.jsonl"), help="JSONL file to write our episodes to."),
            differences: Path | None = typer.Option(None, help="Also write, as JSON, the initial values each "
                                                              "episode could not take as given.")):
    """Convert another benchmark's released episodes into ours, for `twin bench run --episodes`.

    SimuHome's files are yours to bring (its licence forbids redistributing them). Every file
    that cannot be converted is named on one line, with why; the others are written. Exits 1
    if any file was bad. docs/simuhome.md says how SimuHome and the Matter spec differ and
    what the import does about each.

    Examples:

        twin bench import simuhome ~/SimuHome/data/benchmark --out simuhome.jsonl

        twin bench run --agent openai:gpt-4.1-mini --episodes simuhome.jsonl --out runs/simuhome
    """
    if source.lower() != "simuhome":
        raise CliError(f"unknown source {source!r}; accepted: simuhome")
    try:
        files = import_dir(directory)
    except ImportError_ as exc:
        raise CliError(str(exc)) from None
    if not files:
        raise CliError(f"{directory}: no *.json episode files")
    lines, bad, diffs = [], 0, {}
    with Progress(TextColumn("importing"), BarColumn(), MofNCompleteColumn(),
                  TextColumn("bad {task.fields[bad]}"), transient=True) as bar:
        task = bar.add_task("import", total=len(files), bad=0)
        for path in files:
            try:
                imported = import_file(path)
            except ImportError_ as exc:
                bad += 1
                one_line(str(exc))
            else:
                lines.append(dump_episode(imported.episode) + "\n")
                if imported.differences:
                    diffs[imported.episode.id] = imported.differences
            bar.update(task, advance=1, bad=bad)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(lines), encoding="utf-8")
    if differences is not None:
        differences.write_text(json.dumps(diffs, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    typer.echo(f"imported {len(lines)} of {len(files)} files into {out}; {len(diffs)} start with initial "
               "values the twin could not take exactly" + (f" (listed in {differences})" if differences else ""))
    if bad:
        raise typer.Exit(1)
