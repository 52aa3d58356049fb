"""Full 600-episode reference run: wall time (target < 60 s on 2 cores).

    python bench/bench_scenarios.py [--workers 2] [--null]

Rebuilds every episode's home from its spec and setup calls, runs the reference solver on a
fork, scores it (simulator or rule judge) and prints the figures. The null agent run, with
--null, is the lower bound measured the same way.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections import Counter

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from scenarios.agents.simple import NullAgent  # noqa: E402
from scenarios.runner import run  # noqa: E402
from scenarios.simuhome.judges import RuleJudge  # noqa: E402
from scenarios.simuhome.reference import ReferenceAgent  # noqa: E402
from scenarios.simuhome.schema import (
    DEFAULT_EPISODES,  # noqa: E402
    load_episodes,  # noqa: E402
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--null", action="store_true", help="also time the null agent")
    args = parser.parse_args()
    t0 = time.perf_counter()
    episodes = load_episodes(DEFAULT_EPISODES)
    load_s = time.perf_counter() - t0
    agents = [("reference", ReferenceAgent)] + ([("null", NullAgent)] if args.null else [])
    print(f"loaded {len(episodes)} episodes in {load_s:.2f} s; {os.cpu_count()} cpu(s), {args.workers} worker(s)")
    for name, factory in agents:
        with tempfile.TemporaryDirectory() as out:
            t0 = time.perf_counter()
            results = run(episodes, factory, RuleJudge(), out, workers=args.workers, progress=False)
            wall = time.perf_counter() - t0
        ok = Counter(r["category"] for r in results if r["success"])
        print(f"{name}: {len(results)} episodes in {wall:.1f} s ({1000 * wall / len(results):.1f} ms/episode), "
              f"{sum(ok.values())} succeeded")
        print("  per category: " + ", ".join(f"{c} {ok.get(c, 0)}" for c in sorted({r['category'] for r in results})))


if __name__ == "__main__":
    main()
