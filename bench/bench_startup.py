"""Start-up time of the `twin` command line, next to the bare interpreter in the same run.

    python bench/bench_startup.py            # 7 runs of each, the median
    python bench/bench_startup.py --runs 15

Each command runs as a new process, as a user starts it: `python -c pass` (the floor), then
`twin --help`, `twin tool get_current_time '{}'` and `twin run --no-matter --duration 1`
(a one-second real-time run: one second of it is the run itself), and last the tool call
again with the Matter data model imported whole (TWIN_LAZY_MODEL=0), as before it was built
class by class (clusters/lazy_objects.py). Bytecode is written (PYTHONDONTWRITEBYTECODE is
dropped), as an installed package has it. Prints each median wall
time and its excess over the bare interpreter, and the median CPU time (user + system) the
process used, which a busy machine disturbs much less than the wall time. Targets: --help under 0.3 s above the
interpreter, a tool call under 0.5 s.
"""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TWIN = [sys.executable, "-m", "matter_twin.cli"]
COMMANDS = [
    ("python -c pass", [sys.executable, "-c", "pass"], {}),
    ("twin --help", [*TWIN, "--help"], {}),
    ("twin --version", [*TWIN, "--version"], {}),
    ("twin tool get_current_time '{}'", [*TWIN, "tool", "get_current_time", "{}"], {}),
    ("twin run --no-matter --duration 1", [*TWIN, "run", "--no-matter", "--duration", "1"], {}),
    # the same tool call with the Matter data model imported whole (clusters/lazy_objects.py)
    ("TWIN_LAZY_MODEL=0 twin tool get_current_time '{}'", [*TWIN, "tool", "get_current_time", "{}"],
     {"TWIN_LAZY_MODEL": "0"}),
]


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds of one run of `argv`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed: {done.stderr.strip()[-500:]}")
    return elapsed, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7, help="runs of each command (the median is shown)")
    runs = parser.parse_args().runs
    env = dict(os.environ, PYTHONPATH=str(REPO), COLUMNS="100")
    env.pop("PYTHONDONTWRITEBYTECODE", None)   # as installed: compiled once, then from bytecode
    env.pop("TWIN_LAZY_MODEL", None)
    for _, argv, extra in COMMANDS:   # warm the file cache, the bytecode and the model's cache first
        timed(argv, {**env, **extra})
    walls: dict[str, list[float]] = {}
    cpus: dict[str, list[float]] = {}
    for _ in range(runs):      # interleaved, so load on the machine hits every command alike
        for label, argv, extra in COMMANDS:
            wall, cpu = timed(argv, {**env, **extra})
            walls.setdefault(label, []).append(wall)
            cpus.setdefault(label, []).append(cpu)
    floor, cpu_floor = statistics.median(walls["python -c pass"]), statistics.median(cpus["python -c pass"])
    print(f"{runs} runs each, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the end")
    print("| command | wall s | above python | CPU s | above python |\n|---|---:|---:|---:|---:|")
    for label in walls:
        wall, cpu = statistics.median(walls[label]), statistics.median(cpus[label])
        print(f"| `{label}` | {wall:.3f} | {wall - floor:.3f} | {cpu:.3f} | {cpu - cpu_floor:.3f} |")


if __name__ == "__main__":
    main()
