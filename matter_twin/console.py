"""Terminal conventions of the `twin` command line: one-line errors, tables, progress.

Bad input (a missing file, JSON that does not parse, a file that does not validate) is a
`CliError`: one line on stderr, exit code 2, never a traceback.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Optional

import click
import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from twin.clock import TICKS_PER_SECOND
from twin.home import Home
from twin.schema import UserFileError
from twin.node.runtime import device_name, home_pairings, served_devices

FAST_FORWARD_CHUNK = 3000  # ticks per progress update (five virtual minutes)

err_console = Console(stderr=True)


# Typer may vendor its own click; catch usage errors from whichever one parses the line.
_CLICK_ERRORS = tuple({click.ClickException,
                       *(c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException")})


class CliError(*_CLICK_ERRORS):  # type: ignore[misc]  # the ClickException(s) typer handles
    """Bad input from the user: printed as one line, exit code 2 (the ClickException typer's
    own parser handles, so it is one line however a command is started: `twin`,
    `python -m matter_twin.cli`, or a sub-app invoked directly)."""
    exit_code = 2

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(str(message).split()))
_ABORTS = tuple({click.Abort, typer.Abort, KeyboardInterrupt})


class TwinApp(typer.Typer):
    """Typer, but every usage error and bad input is one line on stderr, never a traceback."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("standalone_mode", False)
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


def one_line(message: str) -> None:
    print("error: " + " ".join(str(message).split()), file=sys.stderr)



def load_home(home_file: Optional[Path], seed: Optional[int]) -> Any:
    """The home to run: from a file, or the built-in default. Bad files raise CliError."""
    if home_file is not None and not home_file.exists():
        raise CliError(f"{home_file}: no such file")
    try:
        if home_file is None:
            return Home.default(seed=0 if seed is None else seed)
        return Home.load(home_file, seed=seed)
    except UserFileError as err:
        raise CliError(str(err)) from None
    except (OSError, ValueError) as err:
        raise CliError(f"{home_file}: {err}") from None


def room_table(home: Any, speed: str = "") -> Table:
    title = f"{home.name} — {home.clock.format() if hasattr(home.clock, 'format') else home.now}"
    table = Table(title=title, caption=f"tick {home.clock.tick}" + (f" · speed {speed}" if speed else ""))
    table.add_column("Room")
    for column in ("Temperature °C", "Humidity %RH", "Illuminance lux", "PM10 µg/m³", "Devices"):
        table.add_column(column, justify="right")
    for room_id, room in home.rooms.items():
        table.add_row(room.name or room_id, f"{room.temperature:.2f}", f"{room.humidity:.2f}",
                      f"{room.illuminance:.0f}", f"{room.pm10:.1f}", str(len(home.devices_in(room_id))))
    return table


def fast_forward(home: Any, ticks: int, console: Console = err_console) -> None:
    """Step `ticks` ticks as fast as possible, with a progress bar on a terminal."""
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


def codes_rows(home: Any, seed: int | None = None) -> list[dict[str, Any]]:
    """Each node's pairing codes (no sockets opened): the home's devices, then each room's
    sensor node (`sensors@<room>`)."""
    devices = served_devices(home)
    return [{**p.to_json(), "name": device_name(home, devices[device_id])}
            for device_id, p in home_pairings(home, seed, devices).items()]


def codes_table(rows: list[dict[str, Any]], title: str = "Matter pairing codes") -> Table:
    table = Table(title=title)
    for column in ("Device", "Manual code", "QR payload", "Discriminator", "Port"):
        table.add_column(column, no_wrap=True)
    for row in rows:
        code = row["manual_code"]
        table.add_row(row["device"], f"{code[:4]}-{code[4:7]}-{code[7:]}", row["qr_code"],
                      str(row["discriminator"]), str(row.get("port", "")))
    return table


def print_codes(console: Console, rows: list[dict[str, Any]]) -> None:
    """A table on a terminal; one plain `pairing:` line per device otherwise (logs, pipes)."""
    if console.is_terminal:
        console.print(codes_table(rows))
        return
    for row in rows:
        port = f" port {row['port']}" if "port" in row else ""
        console.print(f"pairing: {row['device']} manual {row['manual_code']} qr {row['qr_code']} "
                      f"discriminator {row['discriminator']}{port}", soft_wrap=True, highlight=False)


