"""Cost of HomeMaker homes of 10, 50 and 135 devices: generate, build, memory, step, check.

    python bench/bench_homemaker.py [--sizes 10,50,135] [--seeds 5]

For each size (rooms: 4, 12 and 31), over --seeds seeds (medians):
1. `make_home` (layout, priors, weather, initial state) and `to_yaml`;
2. `Home.from_spec` (every device built and checked), and its traced memory;
3. one tick of `Home.step` (mean over 600 ticks) and `fork()`;
4. one goal check after a step: a device predicate, an every-lights predicate and
   irrelevant-state preservation against the counterfactual (`twin.goals.Goal.check`),
   with one device changed, as a step-wise RL environment checks after every step.
Prints the figures and a markdown table for docs/home.md.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from twin.generator import make_home, to_yaml  # noqa: E402
from twin.goals import Goal  # noqa: E402
from twin.home import Home  # noqa: E402

ROOMS = {10: 4, 50: 12, 135: 31}


def timed(fn, repeat: int = 1) -> float:
    start = time.perf_counter()
    for _ in range(repeat):
        fn()
    return (time.perf_counter() - start) / repeat


def measure(devices: int, seed: int) -> dict[str, float]:
    rooms = ROOMS.get(devices, max(1, devices // 4))
    out = {"generate_ms": timed(lambda: to_yaml(make_home(seed, rooms, devices))) * 1e3}
    spec = make_home(seed, rooms, devices)
    out["build_ms"] = timed(lambda: Home.from_spec(spec)) * 1e3
    tracemalloc.start()
    home = Home.from_spec(spec)
    out["memory_mb"] = tracemalloc.get_traced_memory()[1] / 1e6
    tracemalloc.stop()
    out["step_us"] = timed(lambda: home.step(1), 600) * 1e6
    out["fork_us"] = timed(home.fork, 50) * 1e6
    light = next(d for d in home.devices if home.device_info(d)["type"].endswith("light"))
    goal = Goal(home, [
        {"type": "device", "device_id": light, "cluster_id": "OnOff", "attribute_id": "OnOff", "op": "==",
         "value": True},
        {"type": "every", "devices": {"category": "lighting"},
         "check": {"cluster_id": "OnOff", "attribute_id": "OnOff", "op": "==", "value": True}},
        {"type": "unchanged", "except": [light]}])
    agent = home.fork()
    agent.device(light).invoke("OnOff", "Toggle", {})
    agent.step(1)
    out["check_us"] = timed(lambda: goal.check(agent), 200) * 1e6
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="10,50,135")
    parser.add_argument("--seeds", type=int, default=5)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    rows = []
    for devices in sizes:
        runs = [measure(devices, seed) for seed in range(args.seeds)]
        med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        rows.append((devices, med))
        print(f"{devices:>4} devices ({ROOMS.get(devices, devices // 4)} rooms): generate {med['generate_ms']:.1f} ms, "
              f"build {med['build_ms']:.1f} ms, memory {med['memory_mb']:.1f} MB, step {med['step_us']:.0f} µs, "
              f"fork {med['fork_us']:.0f} µs, goal check {med['check_us']:.0f} µs")
    print("\n| devices | rooms | generate | build | memory | step (1 tick) | fork | goal check |")
    print("|---|---|---|---|---|---|---|---|")
    for devices, m in rows:
        print(f"| {devices} | {ROOMS.get(devices, devices // 4)} | {m['generate_ms']:.1f} ms | {m['build_ms']:.1f} ms "
              f"| {m['memory_mb']:.1f} MB | {m['step_us']:.0f} µs | {m['fork_us']:.0f} µs | {m['check_us']:.0f} µs |")


if __name__ == "__main__":
    main()
