"""Terminal conventions of the `twin` command line: one-line errors, tables, progress.

Bad input (a missing file, JSON that does not parse, a file that does not validate) is a
`CliError`: one line on stderr, exit code 2, never a traceback.

Every command imports this module, so it imports only typer at the top: rich (30 ms), the
home, the nodes and the QR encoder are imported by the functions that use them (start-up
time); `err_console` is made on first use.
"""
from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from typer.core import TyperCommand, TyperGroup

if TYPE_CHECKING:
    import click
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    err_console: Console   # rich's Console on stderr, made by __getattr__ on first use

FAST_FORWARD_CHUNK = 3000  # ticks per progress update (five virtual minutes)


def __getattr__(name: str) -> Any:
    if name == "err_console":
        from rich.console import Console
        console = globals()["err_console"] = Console(stderr=True)
        return console
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _flag_type(self: Any, ctx: Any) -> Any:
    """Typer >= 0.20 labels flags `<bool>` in help (`--json <bool>`): a flag takes no value."""
    return None if getattr(self, "is_flag", False) else _TYPER_DISPLAY_TYPE(self, ctx)


_TYPER_DISPLAY_TYPE = getattr(getattr(typer.core, "TyperOption", None), "display_type_rich", None)
if _TYPER_DISPLAY_TYPE is not None:
    typer.core.TyperOption.display_type_rich = _flag_type  # type: ignore[method-assign]


# Typer may vendor its own click; catch usage errors from whichever one parses the line (the
# one typer's own exceptions derive from: click itself is not imported, start-up time).
_CLICK_ERRORS = tuple(c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException")


class CliError(*_CLICK_ERRORS):  # type: ignore[misc]  # the ClickException(s) typer handles
    """Bad input from the user: printed as one line, exit code 2 (the ClickException typer's
    own parser handles, so it is one line however a command is started: `twin`,
    `python -m matter_twin.cli`, or a sub-app invoked directly)."""
    exit_code = 2

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(str(message).split()))
_ABORTS = (typer.Abort, KeyboardInterrupt)   # typer.Abort is click's where typer uses click


class TwinApp(typer.Typer):
    """Typer, but every usage error and bad input is one line on stderr, never a traceback.

    `optional_values` maps options whose value may be left out (`twin run --mqtt [URL]`) to the
    value they then take; typer has no such options, so the command line is completed first."""

    optional_values: dict[str, str] = {}

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("standalone_mode", False)
        if self.optional_values:
            if args:   # app(["run", ...]) as well as app(args=[...]) and app()
                args = (with_optional_values(list(args[0]), self.optional_values), *args[1:])
            else:
                argv = kwargs["args"] if kwargs.get("args") is not None else sys.argv[1:]
                kwargs["args"] = with_optional_values(list(argv), self.optional_values)
        try:
            code = super().__call__(*args, **kwargs)
        except CliError as err:
            one_line(str(err))
            sys.exit(2)
        except _CLICK_ERRORS as err:
            if err.format_message():  # empty after no_args_is_help printed the help
                one_line(err.format_message())
            sys.exit(err.exit_code)
        except _ABORTS:
            one_line("interrupted")
            sys.exit(130)
        if isinstance(code, int):
            sys.exit(code)
        return code


class LazyGroup(TyperGroup):
    """A command group whose `lazy` subcommands ("name": "module:attribute", a Typer app or a
    command function) are imported only when one of them runs, so `twin --help` and `twin tool`
    do not import every command's modules. Its help lists them with the help their source
    gives, read from the source without importing it."""

    lazy: dict[str, str] = {}

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [*super().list_commands(ctx), *(n for n in self.lazy if n not in self.commands)]

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in self.commands or name not in self.lazy:
            return super().get_command(ctx, name)
        return _Deferred(name, self)

    def load(self, name: str) -> click.Command:
        """The real command `name`, imported now (and kept)."""
        if name not in self.commands:
            module, _, attribute = self.lazy[name].partition(":")
            target = getattr(importlib.import_module(module), attribute)
            if isinstance(target, typer.Typer):   # a group, even with one command (`bridge init`)
                command: click.Command = typer.main.get_group(target)
            else:                                 # a command function
                app = TwinApp(rich_markup_mode="markdown")
                app.command(name)(target)
                command = typer.main.get_command(app)
            command.name = name
            self.add_command(command, name)
        return self.commands[name]


class _Deferred(TyperCommand):
    """A lazy subcommand as its group's help lists it; it imports the real one to run."""

    def __init__(self, name: str, group: LazyGroup) -> None:
        super().__init__(name, help=_source_help(group.lazy[name]))
        self.group = group

    def make_context(self, info_name: str | None, args: list[str], parent: click.Context | None = None,
                     **extra: Any) -> click.Context:
        return self.group.load(self.name or "").make_context(info_name, args, parent=parent, **extra)


def _source_help(target: str) -> str:
    """The help of "module:attribute" from its source: a function's docstring, or the `help=`
    of the `Typer(...)` assigned to that name."""
    module, _, attribute = target.partition(":")
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        return ""
    for node in ast.parse(Path(spec.origin).read_text(encoding="utf-8")).body:
        if isinstance(node, ast.FunctionDef) and node.name == attribute:
            return inspect.cleandoc(ast.get_docstring(node) or "")
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == attribute for t in node.targets) \
                and isinstance(node.value, ast.Call):
            for keyword in node.value.keywords:
                if keyword.arg == "help":
                    return inspect.cleandoc(ast.literal_eval(keyword.value))
    return ""


def check_tcp_port(host: str, port: int, option: str) -> None:
    """One CliError line, before any work, when a server could not listen on host:port (a port
    another program holds), instead of the server's own log lines and exit code."""
    import socket
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)   # as the server binds
        try:
            probe.bind((host, port))
        except OSError as err:
            raise CliError(f"cannot listen on {host}:{port} ({err.strerror}): another program has it; "
                           f"choose another with {option} PORT") from None


def with_optional_values(argv: list[str], optional: dict[str, str]) -> list[str]:
    """`--mqtt` given without a value (last, or before another option) gets its default one."""
    out: list[str] = []
    for i, arg in enumerate(argv):
        out.append(arg)
        if arg == "--":
            return out + argv[i + 1:]
        if arg in optional and (i + 1 == len(argv) or argv[i + 1].startswith("-")):
            out.append(optional[arg])
    return out


def one_line(message: str) -> None:
    print("error: " + " ".join(str(message).split()), file=sys.stderr)


def progress_bar(label: str) -> Any:
    """The progress bar of the suites' long verbs (generate, validate): gone when done."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    return Progress(TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), transient=True)


def select_tasks(load: Any, path: Path, categories: list[str] | None, accepted: tuple[str, ...] | list[str],
                 limit: int | None, tiers: list[str] | None = None, accepted_tiers: tuple[str, ...] = (),
                 tier_word: str = "tier") -> list[Any]:
    """A suite's task file (read by `load`), cut to the given tiers and categories (`by_category`);
    a bad file, tier or category is one line."""
    from twin.schema import UserFileError  # imported here: the schema is heavy (start-up time)
    try:
        items = load(path)
    except UserFileError as exc:
        raise CliError(str(exc)) from None
    if tiers:
        unknown = [t for t in tiers if t not in accepted_tiers]
        if unknown:
            raise CliError(f"unknown {tier_word} {', '.join(unknown)}; accepted: {', '.join(accepted_tiers)}")
        items = [item for item in items if item.tier in tiers]
    return by_category(items, categories, limit, accepted)


def per_subcategory(items: list[Any], sample: int | None) -> list[Any]:
    """The first `sample` items of each subcategory, in file order (all of them for None)."""
    if sample is None:
        return items
    seen: dict[str, int] = {}
    chosen = []
    for item in items:
        seen[item.subcategory] = seen.get(item.subcategory, 0) + 1
        if seen[item.subcategory] <= sample:
            chosen.append(item)
    return chosen


def report_validation(found: list[str], scores: dict[str, dict[str, int]], categories: tuple[str, ...] | list[str],
                      count: int, valid: str) -> None:
    """A suite's `validate` verdict: each bound agent's passes per category, the problems; exit 1
    with one line if there are any, else `count` and what `valid` says held."""
    for agent, counts in scores.items():
        typer.echo(f"{agent}: " + ", ".join(f"{c} {counts.get(c, 0)}" for c in categories))
    for problem in found:
        typer.echo(problem)
    if found:
        one_line(f"{len(found)} problem(s) in {count} tasks")
        raise typer.Exit(1)
    typer.echo(f"{count} tasks valid: {valid}")


def by_category(items: list[Any], categories: list[str] | None, limit: int | None,
                accepted: tuple[str, ...] | list[str]) -> list[Any]:
    """Items (episodes, tasks) of the given categories, at most `limit` of each, in file order."""
    unknown = [c for c in categories or [] if c not in accepted]
    if unknown:
        raise CliError(f"unknown category {', '.join(unknown)}; accepted: {', '.join(accepted)}")
    if categories:
        items = [item for item in items if item.category in categories]
    if limit is None:
        return items
    seen: dict[str, int] = {}
    kept = []
    for item in items:
        seen[item.category] = seen.get(item.category, 0) + 1
        if seen[item.category] <= limit:
            kept.append(item)
    return kept


def load_home(home_file: Path | None, seed: int | None) -> Any:
    """The home to run: from a file, an embedded home by name ("modern"), or the built-in
    default. Bad files raise CliError."""
    from twin.home import EMBEDDED_HOMES, Home
    from twin.schema import UserFileError
    if home_file is not None and not home_file.exists() and str(home_file) in EMBEDDED_HOMES:
        return Home.embedded(str(home_file), seed=seed)
    if home_file is not None and not home_file.exists():
        raise CliError(f"{home_file}: no such file (nor an embedded home: {', '.join(EMBEDDED_HOMES)})")
    try:
        if home_file is None:
            return Home.default(seed=0 if seed is None else seed)
        return Home.load(home_file, seed=seed)
    except UserFileError as err:
        raise CliError(str(err)) from None
    except (OSError, ValueError) as err:
        raise CliError(f"{home_file}: {err}") from None


def room_table(home: Any, speed: str = "") -> Table:
    from rich.table import Table
    title = f"{home.name} — {home.clock.format() if hasattr(home.clock, 'format') else home.now}"
    table = Table(title=title, caption=f"tick {home.clock.tick}" + (f" · speed {speed}" if speed else ""))
    table.add_column("Room")
    for column in ("Temperature °C", "Humidity %RH", "Illuminance lux", "PM10 µg/m³", "Devices"):
        table.add_column(column, justify="right")
    for room_id, room in home.rooms.items():
        table.add_row(room.name or room_id, f"{room.temperature:.2f}", f"{room.humidity:.2f}",
                      f"{room.illuminance:.0f}", f"{room.pm10:.1f}", str(len(home.devices_in(room_id))))
    return table


def fast_forward(home: Any, ticks: int, console: Console | None = None) -> None:
    """Step `ticks` ticks as fast as possible, with a progress bar on a terminal (stderr's unless
    `console` is given)."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

    from twin.clock import TICKS_PER_SECOND
    if console is None:
        from matter_twin.console import err_console as console
    columns = (TextColumn("fast-forward"), BarColumn(), TextColumn("{task.fields[time]}"),
               TimeRemainingColumn())
    with Progress(*columns, console=console, transient=True,
                  disable=not console.is_terminal or ticks < 10 * FAST_FORWARD_CHUNK) as progress:
        task = progress.add_task("ff", total=ticks, time="")
        done = 0
        while done < ticks:
            n = min(FAST_FORWARD_CHUNK, ticks - done)
            home.advance(n / TICKS_PER_SECOND)  # event-driven: jumps between events
            done += n
            progress.update(task, completed=done, time=str(home.now))


def codes_rows(home: Any, seed: int | None = None, aggregator: bool = False) -> list[dict[str, Any]]:
    """Each node's pairing codes (no sockets opened): the home's devices, then each room's
    sensor node (`sensors@<room>`); with `aggregator`, the one bridge node `twin run
    --aggregator` serves (`@bridge`)."""
    from twin.node.pairing import device_name, home_pairings, served_devices
    if aggregator:
        from twin.aggregator import build_bridge
        bridge = build_bridge(home)
        devices = {bridge.id: bridge}
    else:
        devices = served_devices(home)
    return [{**p.to_json(), "name": device_name(home, devices[device_id])}
            for device_id, p in home_pairings(home, seed, devices).items()]


def dashed(code: str) -> str:
    """A manual code as people read it: 2365-661-8706 (21-digit codes: 4-3-4-5-5)."""
    parts = [code[:4], code[4:7], code[7:11], code[11:16], code[16:]]
    return "-".join(p for p in parts if p)


def window_text(row: dict[str, Any]) -> str:
    """`open 14:59`, `open`, `closed`, or "" when the row has no window state (`twin codes`)."""
    state = row.get("window")
    if state is None:
        return ""
    left = row.get("window_closes_in_s")
    return f"{state} {left // 60}:{left % 60:02d}" if state == "open" and left is not None else state


def manual_text(row: dict[str, Any]) -> str:
    """The dashed manual code, or `QR only` where another open window shares its short
    discriminator (`twin run --open-windows all-qr`): that code could reach the other node."""
    return dashed(row["manual_code"]) if row.get("manual_code_usable", True) else "QR only"


# Below this width the codes table becomes one block per device: the codes are never cut.
_WIDE_CODES = 60


def codes_table(rows: list[dict[str, Any]], title: str | None = "Matter pairing codes") -> Table:
    """Device, manual code, QR payload (and the window, when known). The codes never wrap or
    truncate; a long device id folds instead."""
    from rich.table import Table
    table = Table(title=title, box=None, pad_edge=False, header_style="bold", title_justify="left")
    table.add_column("Device", overflow="fold", min_width=8)
    table.add_column("Manual code", no_wrap=True, min_width=13)
    table.add_column("QR payload", no_wrap=True, min_width=22)
    windows = any("window" in row for row in rows)
    if windows:
        table.add_column("Window", no_wrap=True)
    for row in rows:
        cells = [row["device"], manual_text(row), row["qr_code"]]
        table.add_row(*cells, *([window_text(row)] if windows else []))
    return table


def print_code_blocks(console: Console, rows: list[dict[str, Any]]) -> None:
    """Narrow terminals: a few short lines per device instead of a table."""
    for row in rows:
        window = window_text(row)
        console.print(f"[bold]{row['device']}[/bold]" + (f"  (window {window})" if window else ""),
                      overflow="fold", highlight=False)
        # Label and code on one line where they fit (31 columns), else on lines of their own.
        gap = "\n" if console.width < 9 + len(row["qr_code"]) else ""
        console.print(f"  manual {gap}{manual_text(row)}", highlight=False, no_wrap=True, crop=False)
        console.print(f"  QR     {gap}{row['qr_code']}", highlight=False, no_wrap=True, crop=False)


def print_codes(console: Console, rows: list[dict[str, Any]], title: str | None = "Matter pairing codes") -> None:
    """A table on a terminal (blocks below 60 columns); one plain `pairing:` line per device
    otherwise (logs, pipes)."""
    if console.is_terminal:
        if console.width >= _WIDE_CODES:
            console.print(codes_table(rows, title))
        else:
            if title:
                console.print(f"[bold]{title}[/bold]")
            print_code_blocks(console, rows)
        return
    for row in rows:
        port = f" port {row['port']}" if "port" in row else ""
        window = f" window {window_text(row).replace(' ', '=')}" if "window" in row else ""
        manual = row["manual_code"] if row.get("manual_code_usable", True) else "QR-only"
        console.print(f"pairing: {row['device']} manual {manual} qr {row['qr_code']} "
                      f"discriminator {row['discriminator']}{port}{window}", soft_wrap=True, highlight=False)


def qr_matrix(payload: str, border: int = 2) -> list[list[bool]]:
    """The QR symbol of `payload` as rows of modules (True: dark), quiet zone included."""
    import segno
    qr = segno.make(payload, error="m", micro=False)
    return [[bool(m) for m in row] for row in qr.matrix_iter(scale=1, border=border)]


def qr_text(payload: str, color: bool = True, border: int = 2) -> Text:
    """A scannable QR code in text, two module rows per line (half blocks), so a version-2
    symbol takes 29 columns and 15 lines. `color`: dark modules black on white whatever the
    terminal's colours; without it "█" is a dark module (for light backgrounds and paper)."""
    from rich.text import Text
    matrix = qr_matrix(payload, border)
    if len(matrix) % 2:
        matrix.append([False] * len(matrix[0]))
    text = Text(no_wrap=True, overflow="ignore")
    for top, bottom in zip(matrix[::2], matrix[1::2]):
        for up, down in zip(top, bottom):
            if color:
                text.append("▀", style=f"{'black' if up else 'bright_white'} on {'black' if down else 'bright_white'}")
            else:
                text.append(_HALF_BLOCKS[(up, down)])
        text.append("\n")
    return text


_HALF_BLOCKS = {(False, False): " ", (True, False): "▀", (False, True): "▄", (True, True): "█"}


def print_device_code(console: Console, row: dict[str, Any]) -> None:
    """One device's codes with its QR code drawn (`twin codes DEVICE`, `twin pair DEVICE`)."""
    window = window_text(row)
    name = f" ({row['name']})" if row.get("name") and row["name"] != row["device"] else ""
    console.print(f"[bold]{row['device']}[/bold]{name}", overflow="fold", highlight=False)
    if window:
        console.print(f"  window  {window}", highlight=False)
    console.print(f"  manual  {manual_text(row)}", highlight=False, no_wrap=True, crop=False)
    console.print(f"  QR      {row['qr_code']}", highlight=False, no_wrap=True, crop=False)
    console.print(qr_text(row["qr_code"], color=console.is_terminal), end="", crop=False)


