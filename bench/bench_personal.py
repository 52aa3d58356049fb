"""Personalised households: how fast households are made, live, and their tasks draw and verify.

    python bench/bench_personal.py [--households 20] [--jobs 2]
    python bench/bench_personal.py --whole [--jobs 2]

With --whole: regenerates the whole committed set (scenarios/personal/data: the 1,100
households and their 6,000 tasks, as `twin bench personal generate` does with its defaults),
checks it comes out byte for byte, and validates it; prints households generated per second and
tasks verified per second, and one summary line. The full suite validates a 1,000-task sample.

Prints: household specs made per second (`make_household`), households lived per second (their
DAYS days on the twin), tasks drawn per second (`twin bench personal generate` on the first
--households households, in the paper's proportions) and tasks verified per second (`validate`:
answers recomputed, counterfactuals replayed, reference and null bounds), each with wall and
CPU seconds (the CPU of every process: the machine is shared, so wall time depends on its load).
The whole set's time is extrapolated from these: households and tasks are independent.
"""
from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from collections import Counter
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from matter_twin.cli_personal import (  # noqa: E402
    COMMITTED_DRAW,
    COMMITTED_TASKS,
    HOUSEHOLDS,
    SEED,
    TASKS,
    counts_for,
)
from scenarios.personal.evaluate import Tally, bounds_line, validate  # noqa: E402
from scenarios.personal.household import Household  # noqa: E402
from scenarios.personal.households import DAYS, make_household, write_gzip, write_pack  # noqa: E402
from scenarios.personal.suite import DEFAULT_TASKS, HOUSEHOLDS_PACK  # noqa: E402
from scenarios.personal.tasks import CATEGORIES, dump_task, generate, load_tasks  # noqa: E402


def cpu() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def whole(jobs: int) -> None:
    """Validate the committed set, then regenerate it (compared byte for byte)."""
    print("load average at start: " + ", ".join(f"{x:.1f}" for x in os.getloadavg()))
    tasks = load_tasks(DEFAULT_TASKS)
    t0, c0 = time.perf_counter(), cpu()
    tally: Tally = {}
    problems = validate(tasks, DEFAULT_TASKS.parent, jobs=jobs, tally=tally)
    wall, used = time.perf_counter() - t0, cpu() - c0
    print(f"validate whole set: {len(tasks)} tasks in {wall:.1f} s wall, {used:.1f} s CPU ({jobs} jobs) = "
          f"{len(tasks) / wall:.2f} tasks verified/s wall, {len(tasks) / used:.2f} per core; "
          f"{len(problems)} problems")
    for p in problems[:20]:
        print(" ", p)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / DEFAULT_TASKS.name
        t0, c0 = time.perf_counter(), cpu()
        names = write_pack(out.parent / HOUSEHOLDS_PACK, SEED, HOUSEHOLDS)[:COMMITTED_DRAW]
        drawn = generate(out.parent, names, SEED, counts_for(COMMITTED_TASKS), DAYS, jobs)
        write_gzip(out, "".join(dump_task(t) + "\n" for t in drawn))
        wall, used = time.perf_counter() - t0, cpu() - c0
        same = all((Path(tmp) / f).read_bytes() == (DEFAULT_TASKS.parent / f).read_bytes()
                   for f in (DEFAULT_TASKS.name, HOUSEHOLDS_PACK))
    print(f"generate whole set: {len(drawn)} tasks from {len(names)} households in {wall:.1f} s wall, "
          f"{used:.1f} s CPU ({jobs} jobs) = {len(names) / wall:.2f} households generated/s wall, "
          f"{len(names) / used:.2f} per core; {'byte-identical to' if same else 'DIFFERENT from'} the committed set")
    counts: Counter[str] = Counter(t.category for t in tasks)
    levels = Counter(t.difficulty for t in tasks if t.difficulty)
    verdict = ("every answer recomputes" if not problems else f"{len(problems)} problems") + \
        f"; success rate per category (tasks run): {bounds_line(tally)}"
    print(f"summary: {len({t.household for t in tasks})} households, {len(tasks)} tasks ("
          + ", ".join(f"{c} {counts[c]}" for c in CATEGORIES) + "; "
          + ", ".join(f"{d} {levels[d]}" for d in ("easy", "medium", "hard"))
          + f"); {'regenerates byte for byte' if same else 'DOES NOT regenerate byte for byte'}; {verdict}")
    print("load average at end: " + ", ".join(f"{x:.1f}" for x in os.getloadavg()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--households", type=int, default=20, help="households to draw and verify (default 20)")
    parser.add_argument("--jobs", type=int, default=2, help="processes (default 2)")
    parser.add_argument("--whole", action="store_true", help="validate and regenerate the whole committed set")
    args = parser.parse_args()
    n = args.households
    if args.whole:
        whole(args.jobs)
        return

    t0, c0 = time.perf_counter(), cpu()
    specs = [make_household(SEED, i) for i in range(HOUSEHOLDS)]
    took = time.perf_counter() - t0
    print(f"make: {HOUSEHOLDS} households in {took:.2f} s = {HOUSEHOLDS / took:.0f} households/s")

    t0, c0 = time.perf_counter(), cpu()
    records = 0
    for spec in specs[:n]:
        household = Household.from_spec(spec)
        household.simulate(household.home.now + timedelta(days=DAYS))
        records += len(household.memory)
    wall, used = time.perf_counter() - t0, cpu() - c0
    print(f"live: {n} households x {DAYS} days in {wall:.1f} s wall, {used:.1f} s CPU = "
          f"{n / used:.2f} households/s per core; {records / n / DAYS:.0f} memory records a day")

    share = TASKS * n // HOUSEHOLDS
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        names = write_pack(base / HOUSEHOLDS_PACK, SEED, HOUSEHOLDS)[:n]
        t0, c0 = time.perf_counter(), cpu()
        tasks = generate(base, names, SEED, counts_for(max(6, share)), DAYS, args.jobs)
        wall, used = time.perf_counter() - t0, cpu() - c0
        print(f"generate: {len(tasks)} tasks from {n} households in {wall:.1f} s wall, {used:.1f} s CPU "
              f"({args.jobs} jobs) = {n / used:.2f} households/s per core; the whole set "
              f"({HOUSEHOLDS} households) ~{HOUSEHOLDS * used / n / args.jobs / 60:.1f} min on {args.jobs} "
              "free cores")
        t0, c0 = time.perf_counter(), cpu()
        problems = validate(tasks, base, jobs=args.jobs)
        wall, used = time.perf_counter() - t0, cpu() - c0
        print(f"validate: {len(tasks)} tasks in {wall:.1f} s wall, {used:.1f} s CPU = "
              f"{len(tasks) / used:.2f} tasks verified/s per core; {len(problems)} problems; "
              f"{TASKS} tasks ~{TASKS * used / len(tasks) / args.jobs / 60:.1f} min on {args.jobs} free cores")


if __name__ == "__main__":
    main()
