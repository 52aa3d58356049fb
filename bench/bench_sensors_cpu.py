"""CPU cost of fast-forward with and without the home-driven locks and sensors (docs/devices.md).

    python bench/bench_sensors_cpu.py [--hours 6] [--repeats 3]

1. the generated 135-device home (SimuHome's types, bench/bench_fastforward.py's busy day):
   CPU seconds (`time.process_time`, so a loaded machine counts less) for --hours fast-forward;
2. the same home plus, in every room, a contact sensor on a window covering, an occupancy
   sensor, a smoke alarm and a door lock (relocking after a minute), under the outdoor weather,
   a resident moving on every 20 minutes (unlocking that room's door, opening its window).
Prints the best of --repeats for each, and their ratio.
"""
from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_fastforward import make_busy  # noqa: E402
from twin.generator import generate_home  # noqa: E402
from twin.home import Home  # noqa: E402


def with_sensors(home: Home) -> None:
    home.set_weather({})
    for room in list(home.rooms):
        home.add_device(f"{room}_window", "window_covering", room)
        home.add_device(f"{room}_contact", "contact_sensor", room, options={"mounted_on": f"{room}_window"})
        home.add_device(f"{room}_motion", "occupancy_sensor", room)
        home.add_device(f"{room}_smoke", "smoke_co_alarm", room)
        home.add_device(f"{room}_lock", "door_lock", room, options={"auto_relock_s": 60})


def cpu(build: Callable[[], Home], hours: int, repeats: int, residents: bool) -> float:
    """Best CPU seconds of --hours fast-forward, in 20-minute legs; with `residents`, someone
    moves to the next room, unlocks its door and opens its window at each leg."""
    best = []
    for _ in range(repeats):
        home = build()
        rooms = list(home.rooms)
        start = time.process_time()
        for leg in range(hours * 3):
            if residents:
                room = rooms[leg % len(rooms)]
                home.set_presence("resident", room)
                home.device(f"{room}_lock").invoke("DoorLock", "UnlockDoor", {})
                home.device(f"{room}_window").invoke("WindowCovering", "UpOrOpen")
            home.advance(1200)
        best.append(time.process_time() - start)
    return min(best)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hours", type=int, default=6)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    spec = generate_home(1, 30, 135)

    def plain() -> Home:
        home = Home.from_spec(spec)
        make_busy(home, args.hours)
        return home

    def sensed() -> Home:
        home = plain()
        with_sensors(home)
        return home

    base = cpu(plain, args.hours, args.repeats, residents=False)
    more = cpu(sensed, args.hours, args.repeats, residents=True)
    print(f"135-device home, {args.hours} h fast-forward: {base:.3f} s CPU; with 30 rooms x (lock, contact on a "
          f"covering, occupancy, smoke) under weather: {more:.3f} s CPU ({more / base:.2f}x)")


if __name__ == "__main__":
    main()
