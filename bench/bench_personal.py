"""Personalised households: how fast residents live, replay and the task set builds.

    python bench/bench_personal.py [--days 7]

Prints: virtual days a household lives per wall second (and memory records per day), one
counterfactual day replay from its midnight checkpoint, generating the committed task set
(`twin bench personal generate`), and the reference and null runs over it.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from matter_twin.cli_personal import DAYS, DEFAULT_TASKS, HOUSEHOLDS, PER_CATEGORY, SEED  # noqa: E402
from scenarios.personal.evaluate import make_agent, run, summarize  # noqa: E402
from scenarios.personal.household import Household  # noqa: E402
from scenarios.personal.households import make_household, write_households  # noqa: E402
from scenarios.personal.tasks import generate, load_tasks  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, default=7, help="virtual days to live (default 7)")
    days = parser.parse_args().days

    household = Household.from_spec(make_household(SEED, 0))
    end = household.home.now + timedelta(days=days)
    t0 = time.perf_counter()
    household.simulate(end)
    lived = time.perf_counter() - t0
    print(f"live: {days} virtual days in {lived:.2f} s = {days / lived:.1f} days/s; "
          f"{len(household.memory) / days:.0f} memory records per day")

    day = sorted(household.checkpoints)[1]
    t0 = time.perf_counter()
    household.counterfactual(day, {"kind": "shift", "resident": next(iter(household.residents)), "act": "wake",
                                   "minutes": 60}, household.checkpoints[day].home.now + timedelta(days=1))
    print(f"counterfactual: one day replayed from its checkpoint in {(time.perf_counter() - t0) * 1000:.0f} ms")

    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        tasks = generate(write_households(Path(tmp), SEED, HOUSEHOLDS), SEED, DAYS, PER_CATEGORY)
        print(f"generate: {len(tasks)} tasks from {HOUSEHOLDS} households in {time.perf_counter() - t0:.1f} s")
    committed = load_tasks(DEFAULT_TASKS)
    for agent in ("reference", "null"):
        with tempfile.TemporaryDirectory() as tmp:
            t0 = time.perf_counter()
            results = run(committed, lambda task, agent=agent: make_agent(agent, task), Path(tmp), DEFAULT_TASKS.parent)
            took = time.perf_counter() - t0
        print(f"{agent}: {len(committed)} tasks in {took:.1f} s; {summarize(results)}")


if __name__ == "__main__":
    main()
