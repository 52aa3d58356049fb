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
from matter_twin.console import CliError, one_line
from twin.schema import UserFileError, parse_file


def calibrate(recording: Path = typer.Argument(..., help="The trace: a CSV file (format below) or a lab "
                                             "session's SQLite recording (`twin lab run`; its last run)."),
              home: Path = typer.Option(..., "--home", help="The home file the trace was recorded in."),
              output: Path | None = typer.Option(None, "-o", "--output", show_default=False,
                                                 help="Where to write the calibrated home (default: beside --home, "
                                                 "as NAME.calibrated.yaml)."),
              in_place: bool = typer.Option(False, "--in-place", help="Write the calibrated values over --home."),
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

    The calibrated home goes to a new file (`-o`, default NAME.calibrated.yaml beside the home)
    unless `--in-place`. A fitted coefficient that is not positive or moved more than
    100-fold from its value is outside physical bounds (the trace does not pin it down): then
    nothing is written and the command exits 1.

        time,target,quantity,value
        0,living_room,temperature,27.5
        0,living_room_ac,1/OnOff/OnOff,true
        0,living_room_ac,1/FanControl/PercentCurrent,100
        60,living_room,temperature,27.31

    Examples:

        twin calibrate lab-trace.csv --home lab.yaml          # writes lab.calibrated.yaml

        twin calibrate lab-trace.csv --home lab.yaml -o lab-calibrated.yaml --json

        twin calibrate lab-trace.csv --home lab.yaml --in-place

        twin calibrate lab-trace.csv --home lab.yaml --dry-run
    """
    if not recording.exists():
        raise CliError(f"{recording}: no such file")
    if not home.exists():
        raise CliError(f"{home}: no such file")
    if in_place and output is not None:
        raise CliError("--in-place writes over --home; it does not go with -o")
    target = home if in_place else output or home.with_name(f"{home.stem}.calibrated{home.suffix}")
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
    implausible = out_of_bounds(result)
    if not dry_run and not implausible:
        try:
            written = write_home(home, result.overrides, result.timings, target, result.travel, result.transitions)
            parse_file(written)   # what we wrote must load
        except (OSError, UserFileError) as err:
            raise CliError(f"{target}: {err}") from None
    if as_json:
        print(json.dumps({**report_json(result, written), "out_of_bounds": implausible}, indent=2))
    else:
        print_report(result, written)
    if implausible:
        one_line(f"fit outside physical bounds, nothing written: {'; '.join(implausible)} (the trace does not pin "
                 f"{'it' if len(implausible) == 1 else 'them'} down: record longer, or with the device working)")
        raise typer.Exit(1)


#: A fitted coefficient more than this factor away from its value is not a calibration.
BOUND_FACTOR = 100.0


def out_of_bounds(result: Fit) -> list[str]:
    """The fitted coefficients that are not physical: not positive, or moved more than
    BOUND_FACTOR-fold (a least-squares fit drives an unobservable one anywhere, e.g. 7.8e-25)."""
    bad = []
    for key, value in result.coefficients.items():
        before = result.previous.get(key) or 0.0
        if not value > 0 or (before > 0 and not before / BOUND_FACTOR <= value <= before * BOUND_FACTOR):
            bad.append(f"{key} {before:.3g} -> {value:.3g}")
    return bad


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
