"""Replay imported SimuHome episodes with an oracle that reads their goals, and count how
many our evaluator scores as SimuHome would (the oracle meets every goal there).

    twin bench import simuhome ~/SimuHome/data/benchmark --out simuhome.jsonl
    python bench/simuhome_oracle.py simuhome.jsonl [--show 10]

Simulator-scored episodes (feasible QT2-QT4) and the feasible part of QT3-IF are replayed;
QT1 and the infeasible ones are judged on the answer: the oracle makes the reads an answer
stands on and answers from SimuHome's released ground truth (the goals, the labelled kind of
infeasibility and its times) in each of `PHRASINGS` wordings, and the rule judge scores them.
"""
from __future__ import annotations

import argparse
import collections
import time

from scenarios.agents.simple import ScriptedAgent
from scenarios.simuhome.evaluate import run_episode
from scenarios.simuhome.importer import PHRASINGS, oracle_answer, oracle_plan, oracle_reads
from scenarios.simuhome.judges import RuleJudge
from scenarios.simuhome.schema import load_episodes


def _part_failures(record: dict) -> list[str]:
    return [f for f in record["failures"] if "expected" in f or f.startswith("required action")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("episodes")
    parser.add_argument("--show", type=int, default=10, help="disagreements to print")
    args = parser.parse_args()
    everything = load_episodes(args.episodes)
    episodes = [e for e in everything if e.simulator_scored or e.feasible_part]
    t0 = time.perf_counter()
    per: collections.Counter[str] = collections.Counter()
    agree: collections.Counter[str] = collections.Counter()
    bad = []
    for episode in episodes:
        record = run_episode(episode, ScriptedAgent(oracle_plan(episode)), RuleJudge())
        per[episode.category] += 1
        # Infeasible: only the feasible part is the oracle's to meet (the answer is judged).
        done = record["success"] if episode.feasible else not any(f in record["failures"] for f in
                                                                  _part_failures(record))
        agree[episode.category] += done
        if not done:
            bad.append((episode.id, record["failures"][:2]))
    for category in sorted(per):
        print(f"{category:9s} {agree[category]:3d}/{per[category]:3d} agree")
    print(f"total     {sum(agree.values())}/{len(episodes)} agree in {time.perf_counter() - t0:.1f} s")
    for episode_id, failures in bad[:args.show]:
        print(f"  {episode_id}: {'; '.join(failures)}"[:300])
    judged = [e for e in everything if not e.simulator_scored]
    passed: collections.Counter[str] = collections.Counter()
    count: collections.Counter[str] = collections.Counter()
    wrong = []
    for episode in judged:
        for phrasing in range(PHRASINGS):
            answer = oracle_answer(episode, phrasing)
            record = run_episode(episode, ScriptedAgent(oracle_reads(episode), answer), RuleJudge())
            count[episode.category] += 1
            passed[episode.category] += record["success"]
            if not record["success"]:
                wrong.append((episode.id, phrasing, answer, record["failures"][:2]))
    for category in sorted(count):
        print(f"{category:9s} {passed[category]:3d}/{count[category]:3d} oracle answers pass the rule judge")
    print(f"judged    {sum(passed.values())}/{sum(count.values())} answers ({len(judged)} episodes x {PHRASINGS} "
          f"phrasings) pass in {time.perf_counter() - t0:.1f} s")
    for episode_id, phrasing, answer, failures in wrong[:args.show]:
        print(f"  {episode_id} #{phrasing}: {answer[:160]} -- {'; '.join(failures)}"[:400])


if __name__ == "__main__":
    main()
