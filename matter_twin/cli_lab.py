"""`twin lab`: hardware-in-the-loop lab sessions (hardware/).

Bad input (a lab file that does not validate, a controller that cannot be reached, a pairing
code that fails, a recording that is not one) is one line and exit code 2. `run` and `shadow`
exit 1 when an expectation failed or the twin diverged; `replay` exits 1 above the threshold.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

import typer
from rich.console import Group
from rich.live import Live
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from hardware.controller import ControllerError
from hardware.labfile import Lab, example_lab, load_lab
from hardware.network import NetworkError
from hardware.recording import RecordingError
from hardware.session import LabError, LabSession
from matter_twin.console import CliError, err_console
from matter_twin.extras import require, require_for_model
from twin.schema import UserFileError

lab_app = typer.Typer(
    name="lab", no_args_is_help=True, rich_markup_mode="markdown",
    help="Hardware-in-the-loop lab sessions: real Matter devices beside (or in place of) twin "
         "devices, recorded to one SQLite file, replayed on the twin alone to measure where the "
         "twin differs from the product.\n\nExamples:\n\n"
         "    twin lab init -o bench.yaml --server ws://127.0.0.1:5580/ws\n\n"
         "    twin lab run bench.yaml                       # scripted session, live table\n\n"
         "    twin lab shadow bench.yaml                    # every bound device shadowed\n\n"
         "    twin lab replay bench.session.sqlite --threshold 0.1 -o report/\n\n"
         "    twin lab report bench.session.sqlite\n\n"
         "    sudo twin lab demo                            # matter.js stand-ins, no hardware")

ERRORS = (UserFileError, LabError, ControllerError, NetworkError, RecordingError)

LabArg = typer.Argument(..., help="The lab file (YAML).", show_default=False)
RecordingOption = typer.Option(None, "--recording", "-r", help="The session file (SQLite). Default: "
                               "the lab file's name with .session.sqlite, beside it; an existing file "
                               "gets a new run appended.", show_default=False)


@lab_app.command("init")
def init(output: Path = typer.Option(Path("lab.yaml"), "--output", "-o", help="Where to write."),
         server: str | None = typer.Option(None, "--server", help="A running python-matter-server "
                                           "(default: the lab starts its own).", show_default=False),
         force: bool = typer.Option(False, "--force", help="Overwrite an existing file.")) -> None:
    """Write a commented lab file to start from.

    Examples:

        twin lab init -o bench.yaml --server ws://127.0.0.1:5580/ws
    """
    if output.exists() and not force:
        raise CliError(f"{output}: exists (use --force to overwrite)")
    output.write_text(example_lab(server), encoding="utf-8")
    try:
        load_lab(output)  # what we write must load
    except UserFileError as err:
        raise CliError(str(err)) from None
    print(f"wrote {output}; add your devices, then: twin lab run {output}")


def _live_view(session: LabSession, status: str) -> Group:
    table = Table(title="real vs twin", expand=False)
    for name in ("device", "attribute", "real", "twin"):
        table.add_column(name)
    for row in session.live_rows():
        style = "red" if row[2] != row[3] else None
        table.add_row(*row, style=style)
    return Group(status, table)


class _LiveView:
    def __init__(self, session: LabSession):
        self.session = session
        self.status = "starting"

    def __rich__(self) -> Group:
        return _live_view(self.session, self.status)


def _run_episodes(lab: Lab, recording: Path | None, shadow: bool) -> None:
    """The lab file's benchmark episodes that fit the bench, one run each, with a progress bar."""
    from hardware.episodes import run_episodes
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=err_console, transient=True) as bar:
        task = bar.add_task("episodes", total=None)

        def on_episode(i: int, total: int, episode_id: str) -> None:
            bar.update(task, total=total, completed=i, description=episode_id)
        try:
            summary = run_episodes(lab, recording, log=lambda m: err_console.print(m), shadow_all=shadow,
                                   on_episode=on_episode)
        except ERRORS as err:
            raise CliError(str(err)) from None
    for r in summary["results"]:
        print(f"{r['episode_id']} ({r['category']}): {'pass' if r['success'] else 'FAIL'} in {r['steps']} steps"
              + (f": {'; '.join(r['failures'])}" if r["failures"] else ""))
    for d in summary["dropped"]:
        print(f"{d['episode_id']}: dropped ({d['reason']})")
    print(f"{summary['passed']}/{summary['episodes']} episodes passed, {len(summary['dropped'])} dropped; "
          f"recording: {recording or lab.default_recording()}")
    if summary["passed"] < summary["episodes"]:
        raise typer.Exit(1)


def _run(lab_file: Path, recording: Path | None, shadow: bool, http: int | None = None,
         host: str = "127.0.0.1") -> None:
    if not lab_file.exists():
        raise CliError(f"{lab_file}: no such file")
    try:
        lab = load_lab(lab_file)
    except ERRORS as err:
        raise CliError(str(err)) from None
    if lab.spec.devices:   # real devices come through python-matter-server
        require("matter-server", "a lab with devices")
        if lab.spec.controller.start is not None:
            require("lab", "controller.start (a managed python-matter-server)")
    for who in (lab.spec.session.agent, lab.spec.session.episodes):
        require_for_model(getattr(who, "agent", None), "the lab session's agent")
        require_for_model(getattr(who, "judge", None), "the lab session's judge")
    if lab.spec.session.episodes is not None:
        if http is not None:
            raise CliError(f"{lab_file}: --http shows one session's home; episodes run one home each "
                           "(watch them with twin lab report)")
        _run_episodes(lab, recording, shadow)
        return
    try:
        session = LabSession(lab, recording, shadow_all=shadow, log=lambda m: err_console.print(m))
        session.open()
    except ERRORS as err:
        raise CliError(str(err)) from None
    page = None
    try:
        if http is not None:
            from matter_twin.live_lab import PageServer
            page = PageServer(session, http, host)
            try:
                page.start()
            except OSError as err:
                raise CliError(str(err)) from None
            err_console.print(f"live page: {page.url}")
        view = _LiveView(session)   # rebuilt at every refresh: reports show up during waits too
        with Live(view, console=err_console, refresh_per_second=4, transient=True):
            def on_step(i: int, total: int, what: str) -> None:
                view.status = f"step {i + 1}/{total}: {what}"
            if lab.spec.session.agent is not None:
                view.status = f"agent {lab.spec.session.agent.agent} is working"
                summary = session.run_agent()
            else:
                summary = session.run_script(on_step)
        err_console.print(_live_view(session, f"session done: {summary['calls']} calls, "
                                     f"{summary['expectation_failures']} failed expectations, "
                                     f"{summary['divergences']} shadow divergences (real vs its shadowing twin)"))
    finally:
        if page is not None:
            page.stop()
        session.close()
    print(f"recording: {session.recording_path}")
    if summary["expectation_failures"] or summary["divergences"] or \
            (summary.get("score") and not summary["score"]["success"]):
        raise typer.Exit(1)


HttpOption = typer.Option(None, "--http", help="Serve the live page on this port while the session runs: "
                          "real vs twin per bound device, divergences, the call log.", show_default=False)
HostOption = typer.Option("127.0.0.1", "--host", help="Address the page listens on.")


@lab_app.command("run")
def run(lab_file: Path = LabArg, recording: Path | None = RecordingOption, http: int | None = HttpOption,
        host: str = HostOption) -> None:
    """Run the lab file's session: connect (or commission) the real devices, couple them to
    the twin, run the script, the agent or the benchmark episodes that fit the bench (the
    others are listed as dropped, with why), record everything. Exit 1 if an expectation, an
    agent's goal or an episode failed.

    Examples:

        twin lab run bench.yaml

        twin lab run bench.yaml -r sessions/monday.sqlite    # appends a run if it exists

        twin lab run bench.yaml --http 8080                  # watch it at http://127.0.0.1:8080/
    """
    _run(lab_file, recording, shadow=False, http=http, host=host)


@lab_app.command("shadow")
def shadow(lab_file: Path = LabArg, recording: Path | None = RecordingOption, http: int | None = HttpOption,
           host: str = HostOption) -> None:
    """Like `run`, with every bound device in shadow mode: each command also goes to its twin,
    and `shadow.compare_after` seconds later real and twin are compared; differences are
    flagged live and recorded. Exit 1 if any diverged.

    Examples:

        twin lab shadow bench.yaml

        twin lab shadow bench.yaml --http 8080     # divergences on the live page as they are flagged
    """
    _run(lab_file, recording, shadow=True, http=http, host=host)


@lab_app.command("replay")
def replay(recording: Path = typer.Argument(..., help="A session file (SQLite).", show_default=False),
           run_number: int | None = typer.Option(None, "--run", help="Which run (default: the last).",
                                                 show_default=False),
           output: Path | None = typer.Option(None, "--output", "-o", help="Report folder (default: "
                                              "the recording's name with .replay, beside it).", show_default=False),
           fmt: str = typer.Option("md", "--format", help="md or html."),
           threshold: float = typer.Option(0.0, "--threshold", help="Exit 1 when the divergence "
                                           "score (share of compared steps that differ) is above this.")) -> None:
    """Rerun the recorded tool calls on the twin alone, from the same start state,
    fast-forwarded, and write the divergence report (Markdown or HTML, PNG overlays, JSON summary).

    Examples:

        twin lab replay bench.session.sqlite --threshold 0.2 -o report/

        twin lab replay bench.session.sqlite --run 1 --format html
    """
    from hardware.replay import replay_session, write_report
    if fmt not in ("md", "html"):
        raise CliError(f"--format {fmt!r}: accepted: md, html")
    if not recording.exists():
        raise CliError(f"{recording}: no such recording")
    out = output or recording.with_suffix(".replay")
    try:
        result = replay_session(recording, run_number)
        paths = write_report(result, out, fmt)
    except ERRORS as err:
        raise CliError(str(err)) from None
    summary = result["summary"]
    print(f"run {summary['run']} replayed on the twin alone: {summary['compared_steps']} steps compared, "
          f"{summary['diverged_steps']} answered differently (score {summary['score']:.3f}, threshold {threshold:g}); "
          f"twin-only devices: {summary['diverged_twin_only']} differ")
    for path in paths:
        print(f"wrote {path}")
    if summary["score"] > threshold:
        raise typer.Exit(1)


@lab_app.command("report")
def report(recording: Path = typer.Argument(..., help="A session file (SQLite).", show_default=False),
           run_number: int | None = typer.Option(None, "--run", help="Which run (default: the last).",
                                                 show_default=False)) -> None:
    """Summarise a recording: runs, counts, events (nodes gone, divergences, netem), and the
    real devices' command-to-report latencies. Works on a file a session is still writing.

    Examples:

        twin lab report bench.session.sqlite --run 2
    """
    from hardware.replay import session_summary
    if not recording.exists():
        raise CliError(f"{recording}: no such recording")
    try:
        text = session_summary(recording, run_number)
    except ERRORS as err:
        raise CliError(str(err)) from None
    print(text)


@lab_app.command("demo")
def demo(folder: Path = typer.Option(Path("lab-demo"), "--folder", help="Where the demo's files "
                                     "go (lab file, recording, report, logs).")) -> None:
    """A lab without hardware: matter.js devices (a dimmable light, a thermostat, a temperature
    sensor) stand in for products, in a network namespace the demo creates; a managed
    python-matter-server commissions them; a scripted session runs, is replayed, and the report
    is written. Needs root (it creates a network namespace), Node.js and the `lab` extra;
    matter.js is installed on first use into ~/.cache/matter-twin/matterjs (about 150 MB).

    Examples:

        twin lab demo --folder /tmp/lab-demo          # as root

        sudo .venv/bin/twin lab demo                   # with sudo: name the venv's twin
    """
    require("lab", "twin lab demo")
    from hardware.demo import DemoError, run_demo
    if os.geteuid() != 0:
        raise CliError("twin lab demo needs root: it creates a network namespace (as a user with sudo: "
                       f"sudo {sys.argv[0] if os.path.isabs(sys.argv[0]) else 'PATH/TO/venv/bin/twin'} lab demo)")
    try:
        for line in run_demo(folder.resolve()):
            err_console.print(line)
    except (DemoError, *ERRORS) as err:
        raise CliError(str(err)) from None
