"""SMH-Bench: the time to score every committed task with the reference solver, and what one
step costs in the 135-device tier.

    python bench/bench_smh.py [--workers 2] [--setting eia|dr|both]

Prints: the wall time to run and score all tasks with the reference solver (a process per
worker; target on 2 cores: under a minute) and the CPU time it took (what an unshared machine
would need), its success rate, and in a complex home (31 rooms,
135 devices): one query_home over the whole home, one execute_command, one goal check with
irrelevant-state preservation, and one simulated second (10 ticks).
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from bridge.tools import Session, call_tool  # noqa: E402
from bridge.twin_backend import TwinBackend  # noqa: E402
from scenarios.smh import language as L  # noqa: E402
from scenarios.smh.evaluate import run_dr, run_eia  # noqa: E402
from scenarios.smh.reference import ReferenceAgent, direct_reference  # noqa: E402
from scenarios.smh.suite import SUITE  # noqa: E402
from scenarios.smh.tasks import build_home, load_tasks  # noqa: E402
from twin.goals import Goal  # noqa: E402


def _score(args: tuple[int, int, str]) -> tuple[int, int, float]:
    start, step, setting = args
    cpu = time.process_time()
    tasks = load_tasks()[start::step]
    ok = 0
    for task in tasks:
        if setting in ("eia", "both"):
            ok += run_eia(task, ReferenceAgent())["success"]
        if setting in ("dr", "both"):
            ok += run_dr(task, direct_reference, "reference")["success"]
    return ok, len(tasks) * (2 if setting == "both" else 1), time.process_time() - cpu


def _mean(fn, n: int) -> float:
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t0) / n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--setting", default="eia", choices=("eia", "dr", "both"))
    parser.add_argument("--steps-only", action="store_true", help="only the per-step costs")
    opts = parser.parse_args()
    if not opts.steps_only:
        score_all(opts.workers, opts.setting)
    step_costs()


def score_all(workers: int, setting: str) -> None:
    t0 = time.perf_counter()
    with ProcessPoolExecutor(workers) as pool:
        done = list(pool.map(_score, [(k, workers, setting) for k in range(workers)]))
    wall = time.perf_counter() - t0
    ok, runs = sum(d[0] for d in done), sum(d[1] for d in done)
    cpu = sum(d[2] for d in done)
    print(f"score all: {runs} reference runs ({setting}) in {wall:.1f} s on {workers} workers "
          f"({cpu:.1f} s of CPU in all, {cpu / workers:.1f} s per worker; load average {os.getloadavg()[0]:.1f}); "
          f"{ok}/{runs} succeed")


def step_costs() -> None:

    task = next(t for t in load_tasks() if t.tier == "complex" and t.subcategory == "clear")
    home = build_home(task)
    backend, session = TwinBackend(home), Session(tools=SUITE.tools(task))
    query = _mean(lambda: call_tool(backend, "query_home", {}, session), 20)
    # Devices with OnOff (a water heater or a battery has none: its Toggle would be an error call).
    switchable = [d for d in home.devices.objects if home.device_info(d)["type"] in L.OP_TYPES["on"]]
    device = switchable[0]
    command = _mean(lambda: call_tool(backend, "execute_command", {
        "device.id": device, "endpoint.id": 1, "cluster.id": "OnOff", "command.id": "Toggle", "args": {}}, session), 50)
    # A goal made before ten devices change: preservation compares all 135 against the baseline.
    goal = Goal(home, [*task.goal, {"type": "unchanged", "except": task.targets}])
    for other in switchable[:10]:
        call_tool(backend, "execute_command", {"device.id": other, "endpoint.id": 1, "cluster.id": "OnOff",
                                               "command.id": "Toggle", "args": {}}, session)
    check = _mean(lambda: goal.check(home), 20)
    second = _mean(lambda: home.advance(1.0), 20)
    print(f"complex home ({len(home.rooms)} rooms, {len(home.devices.objects)} devices): query_home "
          f"{query * 1e3:.1f} ms, execute_command {command * 1e3:.3f} ms, goal check with preservation "
          f"(10 devices changed) {check * 1e3:.2f} ms, one simulated second {second * 1e3:.1f} ms; "
          f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
