"""`twin calibrate RECORDING --home HOME`: fit physics coefficients and cycle timings to a
recorded trace and write them into the home file (hardware/calibrate.py does the work)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import typer
from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from hardware.calibrate import Fit, TraceError, check_trace, fit, read_trace, write_home
from matter_twin.console import CliError
from twin.schema import UserFileError, parse_file


def calibrate(recording: Path = typer.Argument(..., help="The trace: a CSV file (format below) or a lab "
                                             "session's SQLite recording (`twin lab run`; its last run)."),
              home: Path = typer.Option(..., "--home", help="The home file the trace was recorded in; "
                                        "the fitted values are written into it."),
              output: Path | None = typer.Option(None, "-o", "--output",
                                                 help="Write the calibrated home here instead of over --home."),
              dry_run: bool = typer.Option(False, "--dry-run", help="Report the fit, write nothing."),
              as_json: bool = typer.Option(False, "--json", help="Print the report as JSON.")) -> None:
    """Fit the physics coefficients and appliance cycle timings to a recorded trace.

    The trace is CSV with the header `time,target,quantity,value`: `time` in seconds since
    the home's start_time; `target` a room or device id; `quantity` a room's `temperature`
    (°C), `humidity` (%RH), `pm10` (µg/m³) or `illuminance` (lux), or a device attribute
    `endpoint/Cluster/Attribute` whose JSON `value` the device took then. Device rows are
    replayed into the twin; the coefficients the trace exercises are fitted by least squares
    on the room rows, and each appliance's phase durations are measured per mode. The result
    goes into the home file as `physics:`, each appliance's `options.cycles`, each window
    covering's `options.lift_travel_s` / `tilt_travel_s`, and each light's transition time
    (how long its fades took, as its `attributes` OnOffTransitionTime, in 0.1 s).

    A lab recording (SQLite, from `twin lab run`) works too: its real devices' reports are the
    inputs and its room samples the observations.

        time,target,quantity,value
        0,living_room,temperature,27.5
        0,living_room_ac,1/OnOff/OnOff,true
        0,living_room_ac,1/FanControl/PercentCurrent,100
        60,living_room,temperature,27.31

    Examples:

        twin calibrate lab-trace.csv --home lab.yaml

        twin calibrate lab-trace.csv --home lab.yaml -o lab-calibrated.yaml --json

        twin calibrate lab-trace.csv --home lab.yaml --dry-run
    """
    if not recording.exists():
        raise CliError(f"{recording}: no such file")
    if not home.exists():
        raise CliError(f"{home}: no such file")
    try:
        spec = parse_file(home)
        trace = read_trace(recording)
        check_trace(spec, trace, str(home))
        with Progress(console=Console(stderr=True), transient=True, disable=as_json) as progress:
            task = progress.add_task("fitting", total=None)
            result = fit(spec, trace, str(home),
                         progress=lambda i, cost: progress.update(task, description=f"fitting: iteration {i}, "
                                                                  f"cost {cost:.3g}"))
    except (TraceError, UserFileError) as err:
        raise CliError(str(err)) from None
    written = None
    if not dry_run:
        try:
            written = write_home(home, result.overrides, result.timings, output, result.travel, result.transitions)
            parse_file(written)   # what we wrote must load
        except (OSError, UserFileError) as err:
            raise CliError(f"{output or home}: {err}") from None
    if as_json:
        print(json.dumps(report_json(result, written), indent=2))
    else:
        print_report(result, written)


def report_json(result: Fit, written: Path | None) -> dict:
    return {"coefficients": {k: {"previous": result.previous[k], "fitted": v}
                             for k, v in result.coefficients.items()},
            "unexercised": result.unexercised, "observations": result.observations,
            "rms_before": result.rms_before, "rms_after": result.rms_after,
            "cycles": result.timings, "travel": result.travel, "transitions": result.transitions,
            "written": str(written) if written else None}


def print_report(result: Fit, written: Path | None) -> None:
    console = Console()
    table = Table(title="physics coefficients (per 0.1 s tick; lux for lights)")
    for column in ("coefficient", "previous", "fitted", "change"):
        table.add_column(column, justify="left" if column == "coefficient" else "right")
    for key, value in result.coefficients.items():
        before = result.previous[key]
        change = f"{(value - before) / before:+.1%}" if before else "-"
        table.add_row(key, f"{before:.4g}", f"{value:.4g}", change)
    console.print(table)
    fit_table = Table(title="fit (root mean square error)")
    for column in ("quantity", "observations", "before", "after"):
        fit_table.add_column(column, justify="left" if column == "quantity" else "right")
    for quantity, count in sorted(result.observations.items()):
        fit_table.add_row(quantity, str(count), f"{result.rms_before[quantity]:.4g}",
                          f"{result.rms_after[quantity]:.4g}")
    console.print(fit_table)
    if result.unexercised:
        console.print("not exercised by this trace (unchanged): " + ", ".join(result.unexercised))
    for device, cycles in result.timings.items():
        for mode, phases in cycles.items():
            console.print(f"{device} {mode}: " + ", ".join(f"{p} {s} s" for p, s in phases))
    for device, travel in result.travel.items():
        console.print(f"{device}: " + ", ".join(f"{k} {v:g}" for k, v in travel.items()))
    for device, transition in result.transitions.items():
        console.print(f"{device}: " + ", ".join(f"{k} {v / 10:g} s" for k, v in transition.items()))
    if written is not None:
        print(f"wrote {written}", file=sys.stderr)


__all__ = ["calibrate"]
