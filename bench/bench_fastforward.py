"""Fast-forward speed, tick-by-tick peer, and fork time on a generated 135-device home.

    python bench/bench_fastforward.py [--rooms 30] [--devices 135] [--hours 24] [--step-minutes 10]
    python bench/bench_fastforward.py --all-types      # a HomeMaker home with every device type
    python bench/bench_fastforward.py --home modern    # an embedded home (the typical modern household)

Phases (same home, same run):
1. tick-by-tick (`Home.step`) for --step-minutes of virtual time, on a fork;
2. fast-forward (`Home.advance`) over the same span on another fork; the two snapshots
   must be byte-identical (asserted);
3. fast-forward --hours of virtual time (lights, ACs, purifiers, workflows every 20 min);
4. `fork()` timed 50 times (median), after the day's run.
Prints the figures and one markdown table row for docs/performance.md.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rich.console import Console  # noqa: E402
from rich.progress import Progress  # noqa: E402

from clusters.status import MatterError  # noqa: E402
from twin.generator import every_type_home, generate_home  # noqa: E402
from twin.home import Home  # noqa: E402

LIGHTS = ("on_off_light", "dimmable_light")
FANNED = ("air_purifier", "humidifier", "dehumidifier", "fan")


def make_busy(home: Home, hours: int) -> int:
    """Switch things on and schedule workflows all day; returns how many calls were refused."""
    refused = 0

    def attempt(fn, *args, **kwargs):
        nonlocal refused
        try:
            fn(*args, **kwargs)
        except MatterError:
            refused += 1

    for device in home.devices.values():
        key = device.type.key
        if key == "air_conditioner":
            attempt(device.invoke, "OnOff", "On")
            attempt(device.write, "FanControl", "PercentSetting", 100)
            attempt(device.write, "Thermostat", "SystemMode", 3)
            attempt(device.write, "Thermostat", "OccupiedCoolingSetpoint", 2350)
        elif key == "heat_pump":
            attempt(device.write, "Thermostat", "SystemMode", 4)
            attempt(device.write, "Thermostat", "OccupiedHeatingSetpoint", 2400)
        elif key in LIGHTS:
            attempt(device.invoke, "OnOff", "On")
        elif key in FANNED:
            attempt(device.invoke, "OnOff", "On")
            attempt(device.write, "FanControl", "PercentSetting", 50)
    dimmables = [d.id for d in home.devices.values() if d.type.key == "dimmable_light"]
    acs = [d.id for d in home.devices.values() if d.type.key == "air_conditioner"]
    for n in range(1, hours * 3 + 1):  # every 20 minutes
        steps = [{"tool": "execute_command", "args": {
            "device.id": d, "endpoint.id": 1, "cluster.id": "LevelControl", "command.id": "MoveToLevel",
            "args": {"level": 40 + (n * 37) % 200, "transitionTime": 600, "optionsMask": 0,
                     "optionsOverride": 0}}} for d in dimmables]
        steps += [{"tool": "write_attribute", "args": {
            "device_id": d, "cluster_id": "FanControl", "attribute_id": "PercentSetting",
            "value": 30 if n % 2 else 100}} for d in acs]
        if steps:
            home.workflows.schedule(home.now + timedelta(minutes=20 * n, seconds=n), steps)
    return refused


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rooms", type=int, default=30)
    parser.add_argument("--devices", type=int, default=135)
    parser.add_argument("--hours", type=int, default=24)
    parser.add_argument("--step-minutes", type=float, default=10.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--all-types", action="store_true", help="one device of every device type, the rest "
                        "drawn by room kind (HomeMaker), not SimuHome's 17")
    parser.add_argument("--home", help="an embedded home by name (e.g. modern) instead of a generated one")
    args = parser.parse_args()
    console = Console()

    if args.home:
        home = Home.embedded(args.home)
    elif args.all_types:
        home = Home.from_spec(every_type_home(args.seed, args.rooms, args.devices))
    else:
        home = Home.from_spec(generate_home(args.seed, args.rooms, args.devices))
    refused = make_busy(home, args.hours)
    console.print(f"home: {len(home.rooms)} rooms, {len(home.devices)} devices, "
                  f"{sum(len(list(d.servers())) for d in home.devices.values())} cluster servers, "
                  f"{len(home.workflows.list())} workflows ({refused} setup calls refused)")

    # 1 + 2: tick-by-tick against fast-forward over the same span
    span_ticks = int(args.step_minutes * 600)
    stepped, jumped = home.fork(), home.fork()
    with Progress(console=console, transient=True) as progress:
        task = progress.add_task("tick-by-tick", total=span_ticks)
        t0 = time.perf_counter()
        done = 0
        while done < span_ticks:
            n = min(600, span_ticks - done)
            stepped.step(n)
            done += n
            progress.update(task, completed=done)
        step_wall = time.perf_counter() - t0
    t0 = time.perf_counter()
    jumped.advance(span_ticks / 10)
    jump_wall = time.perf_counter() - t0
    same = json.dumps(stepped.snapshot(), sort_keys=True) == json.dumps(jumped.snapshot(), sort_keys=True)
    assert same, "fast-forward and tick-by-tick diverged"
    step_rate = (span_ticks / 10) / step_wall  # simulated seconds per wall second
    console.print(f"tick-by-tick: {span_ticks} ticks in {step_wall:.2f} s = {step_rate:,.0f}x real time "
                  f"({step_wall / span_ticks * 1e6:.0f} µs/tick); fast-forward same span "
                  f"{jump_wall * 1000:.1f} ms; snapshots identical: {same}")

    # 3: a whole day, event-driven
    day = home.fork()
    total = args.hours * 3600
    with Progress(console=console, transient=True) as progress:
        task = progress.add_task(f"fast-forward {args.hours} h", total=total)
        t0 = time.perf_counter()
        for _ in range(args.hours * 4):
            day.advance(900)
            progress.advance(task, 900)
        ff_wall = time.perf_counter() - t0
    ff_rate = total / ff_wall
    failed = sum(w.status == "failed" for w in day.workflows.list())
    console.print(f"fast-forward: {args.hours} h in {ff_wall:.2f} s = {ff_rate:,.0f}x real time; "
                  f"{ff_rate / step_rate:,.0f}x the tick-by-tick rate; workflows run "
                  f"{sum(w.status != 'scheduled' for w in day.workflows.list())} ({failed} failed)")

    # 4: fork
    times = []
    for _ in range(50):
        t0 = time.perf_counter()
        day.fork()
        times.append(time.perf_counter() - t0)
    fork_ms = statistics.median(times) * 1000
    t0 = time.perf_counter()
    snap = day.snapshot()
    snap_ms = (time.perf_counter() - t0) * 1000
    console.print(f"fork: median {fork_ms:.2f} ms over 50 (snapshot alone {snap_ms:.1f} ms, "
                  f"{len(json.dumps(snap)) / 1024:.0f} KiB JSON)")

    ok = ff_rate >= 10_000 and fork_ms < 5
    console.print(f"targets (>= 10,000x real time, fork < 5 ms): {'met' if ok else 'NOT met'}")
    print("\n| devices | rooms | fast-forward 24 h (wall) | speed (sim s / wall s) "
          "| tick-by-tick speed | fast-forward / tick-by-tick | fork |")
    print("|---|---|---|---|---|---|---|")
    print(f"| {len(home.devices)} | {len(home.rooms)} | {ff_wall:.2f} s | {ff_rate:,.0f}x "
          f"| {step_rate:,.0f}x | {ff_rate / step_rate:,.0f}x | {fork_ms:.2f} ms |")


if __name__ == "__main__":
    main()
