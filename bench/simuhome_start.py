"""Do imported SimuHome episodes start where SimuHome starts? For every file, the agent's
first `get_room_states` of each room against the file's initial room values, at the
resolution the tool shows (temperature and humidity in 0.01, illuminance in lux, PM10 in
0.01 µg/m³; one step of rounding allowed), and against the judges' tolerance.

    python bench/simuhome_start.py ~/SimuHome/data/benchmark [--show 10]
"""
from __future__ import annotations

import argparse
import collections
import json
import time
from pathlib import Path

from bridge.tools import Session, call_tool
from bridge.twin_backend import TwinBackend
from scenarios.simuhome.evaluate import build_home
from scenarios.simuhome.importer import ImportError_, import_dir, import_file
from scenarios.simuhome.judges import VALUE_TOLERANCE

#: SimuHome's room values -> the tool's units (its files keep temperature and humidity x100).
STEP = {"temperature": 1, "humidity": 1, "illuminance": 1, "pm10": 0.01}
NATURAL = {"temperature": 100, "humidity": 100, "illuminance": 1, "pm10": 1}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("directory", type=Path)
    parser.add_argument("--show", type=int, default=10, help="differences to print")
    args = parser.parse_args()
    t0 = time.perf_counter()
    files = import_dir(args.directory)
    shown = collections.Counter[str]()
    off_display, off_tolerance, worst = [], [], collections.defaultdict(float)
    for path in files:
        try:
            episode = import_file(path).episode
        except ImportError_ as exc:
            print(f"not imported: {exc}")
            continue
        rooms = json.loads(path.read_text(encoding="utf-8"))["initial_home_config"]["rooms"]
        backend, session = TwinBackend(build_home(episode)), Session()
        display = tolerance = False
        for room_id, room in rooms.items():
            ours = call_tool(backend, "get_room_states", {"room.id": room_id}, session)
            for state, theirs in room["state"].items():
                diff = abs(ours[state] / NATURAL[state] - theirs / NATURAL[state])
                worst[state] = max(worst[state], diff)
                if abs(ours[state] - theirs) > STEP[state] * 1.0001:
                    display = True
                    if shown["d"] < args.show:
                        shown["d"] += 1
                        print(f"  {path.name} {room_id} {state}: SimuHome {theirs}, first read {ours[state]}")
                if diff > VALUE_TOLERANCE[state]:
                    tolerance = True
        off_display += [path.name] if display else []
        off_tolerance += [path.name] if tolerance else []
    print(f"{len(files)} files in {time.perf_counter() - t0:.0f} s; first room reads differing from SimuHome's "
          f"initial values by more than the display step: {len(off_display)}, by more than the judge's "
          f"tolerance: {len(off_tolerance)}")
    print("largest difference (natural units): " + ", ".join(f"{k} {v:.3g}" for k, v in sorted(worst.items())))


if __name__ == "__main__":
    main()
