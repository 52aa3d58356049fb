"""`twin bench lifelong`: the lifelong suite's one verb (DomusMind runs and their report)."""
from __future__ import annotations

from pathlib import Path

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from matter_twin.console import CliError, one_line
from matter_twin.extras import missing, require_for_model
from matter_twin.sandbox import check_over_matter, rerun_over_matter
from scenarios.lifelong import PRESETS, scenario_named
from scenarios.lifelong.config import SEVERITIES, with_severity
from scenarios.lifelong.environment import lifelong_home
from scenarios.lifelong.policies import make_policy as make_lifelong_policy
from scenarios.lifelong.report import DEFAULT_SEEDS, TAU_GRID
from scenarios.lifelong.report import run_count as lifelong_run_count
from scenarios.lifelong.report import run_report as run_lifelong_report
from scenarios.lifelong.routines import routines_for
from scenarios.model_api import ModelAPIError
from scenarios.over_matter import MatterServing, MatterServingError
from twin.home import Home
from twin.schema import UserFileError


def parse_sweep(text: str | None) -> list[float]:
    """`--sweep 0.25,0.5,1` (or the names mild, strong): the drift severities; ValueError (one line)."""
    if text is None:
        return []
    values = []
    for part in (p.strip() for p in text.split(",")):
        try:
            value = SEVERITIES[part] if part in SEVERITIES else float(part)
        except ValueError:
            raise ValueError(f"--sweep: {part!r} is not a severity (a number 0..2, or "
                             f"{', '.join(SEVERITIES)}); e.g. --sweep 0.25,0.5,1") from None
        if not 0 <= value <= 2:
            raise ValueError(f"--sweep: severity {value:g} is outside 0..2")
        if value not in values:
            values.append(value)
    return values


def lifelong(scenario: list[str] = typer.Option(["pref-r", "tool-r", "mixed-r"], help="Preset "
                                               f"({', '.join(PRESETS)}; plain names are strong drift, -mild "
                                               "half as strong) or a scenario YAML file (repeatable)."),
             policy: list[str] = typer.Option(["NoToM", "STATIC", "ONLINE", "ORACLE"],
                                              help="NoToM | STATIC | ONLINE | ORACLE | openai:MODEL (repeatable)."),
             seeds: int = typer.Option(DEFAULT_SEEDS, min=1, help="Seeds 0..N-1 per scenario and policy "
                                       "(tables and plots show mean ± std over them)."),
             sweep: str | None = typer.Option(None, help="Drift severities to sweep, e.g. 0.25,0.5,1 (or mild,strong): "
                                              "each scenario runs at each severity (named NAME@SEVERITY), with "
                                              "its own τ frontier."),
             tau: float = typer.Option(0.5, min=0.0, max=1.0, help="Confirmation threshold τ of STATIC, "
                                       "ONLINE and ORACLE (larger: more confirmations)."),
             frontier: bool = typer.Option(True, help="Sweep τ over 0, 0.1 .. 1 for ONLINE (the frontier)."),
             out: Path = typer.Option(..., help="Directory for report.json, report.md, the PNG plots and "
                                      "the trajectories."),
             home: Path | None = typer.Option(None, help="Home file (YAML/JSON, e.g. from `twin home generate`); "
                                              "default: the suite's home (lights, cooling, blinds, a vacuum, a "
                                              "front door lock and a doorbell)."),
             base_url: str | None = typer.Option(None, envvar="OPENAI_BASE_URL", help="OpenAI-compatible API "
                                                 "base URL (openai:MODEL policies)."),
             api_key: str | None = typer.Option(None, envvar="OPENAI_API_KEY", help="API key."),
             max_unusable: float = typer.Option(0.2, "--max-unusable", min=0.0, max=1.0, help="Fail (exit 1) when "
                                                "more than this share of an openai:MODEL policy's replies held no "
                                                "action word (each became NOOP)."),
             over_matter: bool = typer.Option(False, "--over-matter", help="Serve each run's home as one Matter "
                                              "bridge node, commission it into python-matter-server and make every "
                                              "routine read and executed call through it. Needs root: the run makes "
                                              "a network namespace with its own python-matter-server."),
             matter_server: str | None = typer.Option(None, help="With --over-matter: use this running "
                                                      "python-matter-server (ws://...) instead; run inside the network "
                                                      "namespace where it finds the nodes (no root needed).")):
    """Lifelong runs (DomusMind): no-reset weeks of the twin home under preference and tool drift.
    Routines propose service calls; the policy executes, asks, delays or skips; a latent persona
    approves or not; tool drift is the home's fault engine. Reports step success, confirmation
    rate, safety violations, rolling success (PreDrift/Drift/PostDrift/Steady), recovery time,
    forgetting, cost and the success–annoyance frontier. Same seeds: byte-identical report.json.

    Examples:

        twin bench lifelong --out runs/lifelong

        twin bench lifelong --scenario pref-r --seeds 1 --no-frontier --out runs/pref

        twin bench lifelong --scenario tool-r --sweep 0.25,0.5,1 --policy ONLINE --policy ORACLE --out runs/sweep

        twin bench lifelong --home my_home.yaml --scenario tool-r --no-frontier --out runs/my_home

        twin bench lifelong --scenario my_drift.yaml --policy ONLINE --policy ORACLE --tau 0.7 --out runs/mine

        twin bench lifelong --scenario mixed --policy openai:gpt-4o-mini --seeds 1 --no-frontier --out runs/llm

        sudo twin bench lifelong --scenario tool --policy ONLINE --seeds 1 --no-frontier --over-matter --out runs/m
    """
    for name in policy:
        require_for_model(name, f"--policy {name}")
    try:
        scenarios = [scenario_named(s) for s in scenario]
        severities = parse_sweep(sweep)
        if severities:
            scenarios = [with_severity(s, v) for s in scenarios for v in severities]
        routines_for(Home.load(home) if home is not None else lifelong_home())
        for s in scenarios:
            for name in policy:
                make_lifelong_policy(name, s, tau, base_url, api_key)
    except (UserFileError, ValueError) as exc:
        raise CliError(str(exc)) from None
    if len({s.name for s in scenarios}) < len(scenarios):
        raise CliError("two scenarios share a name; give each scenario file its own `name:`")
    check_over_matter(over_matter, matter_server)
    serving = None
    if over_matter:
        if matter_server is None:   # run this very command again inside a namespace with its own server
            args = ["bench", "lifelong", *[a for x in scenario for a in ("--scenario", x)],
                    *[a for x in policy for a in ("--policy", x)], "--seeds", str(seeds), "--tau", str(tau),
                    "--frontier" if frontier else "--no-frontier", "--out", str(out),
                    *(["--home", str(home)] if home is not None else []), *(["--sweep", sweep] if sweep else []),
                    "--max-unusable", str(max_unusable)]
            raise typer.Exit(rerun_over_matter("lifelong", args, base_url, api_key))
        serving = MatterServing(matter_server)
    try:
        if serving is not None:
            serving.wait_for_server()
        report = _run(scenarios, policy, seeds, out, tau, frontier, base_url, api_key, home, serving)
    except MatterServingError as exc:
        raise CliError(f"over Matter: {exc}") from None
    finally:
        if serving is not None:
            serving.close()
    if serving is not None:
        typer.echo(f"over Matter: {serving.commissioned} run homes served as bridge nodes, each commissioned "
                   f"into python-matter-server at {matter_server}")
    _summary(report, out, frontier, max_unusable)


def _run(scenarios: list, policy: list[str], seeds: int, out: Path, tau: float, frontier: bool,
         base_url: str | None, api_key: str | None, home: Path | None, serving: MatterServing | None) -> dict:
    taus = TAU_GRID if frontier else ()
    total = lifelong_run_count(scenarios, policy, list(range(seeds)), taus)
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, transient=True) as bar:
        task = bar.add_task("lifelong runs", total=total)
        try:
            report = run_lifelong_report(scenarios, policy, list(range(seeds)), out, tau, taus, base_url, api_key,
                                         advance=lambda label: bar.update(task, advance=1, description=label),
                                         home=home, serve=serving)
        except OSError as exc:
            raise CliError(f"{out}: {exc.strerror or exc}") from None
        except ModelAPIError as exc:   # an LLM endpoint that fails: one line, not a traceback
            raise CliError(f"the policy's {exc}") from None
    return report


def _summary(report: dict, out: Path, frontier: bool, max_unusable: float) -> None:
    taus = TAU_GRID if frontier else ()
    for f in report["findings"]:
        typer.echo(f"{f['scenario']}: {f['claim']}: {'holds' if f['holds'] else 'does not hold'}")
    plots = "rolling.png, frontier.png" if taus else "rolling.png"
    if missing("plots"):
        plots = f"none (the `plots` extra is not installed; install it for {plots})"
    typer.echo(f"report in {out / 'report.md'} and {out / 'report.json'}; plots {plots}")
    too_many = []
    for scenario_name, entry in report["scenarios"].items():
        for policy_name, figures in entry["policies"].items():
            llm = figures.get("llm")
            if llm is None:
                continue
            replies = llm["parse_hits"] + llm["fallbacks"]
            typer.echo(f"{scenario_name} {policy_name}: {llm['fallbacks']} of {replies} replies held no action "
                       "word and became NOOP")
            if llm["fallbacks"] > max_unusable * replies:
                too_many.append(f"{scenario_name} {policy_name}")
    if too_many:
        one_line(f"more than {max_unusable:g} of the replies could not be used (--max-unusable) in: "
                 + ", ".join(too_many))
        raise typer.Exit(1)
