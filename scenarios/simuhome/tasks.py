"""Verifiable training tasks at scale (HomeFlow): seeded episodes from the generators, each kept
only when the reference solver solves it, split into train and held-out so nothing leaks.

- The split of a task is a function of its content (a hash of query and initial state), not of
  the seed or the order it was drawn in: the same task drawn twice, under any seed, always lands
  in the same split, so a held-out task can never reach training data.
- Tasks identical to an excluded set (by default the committed benchmark) are dropped, so
  training data never contains the benchmark's own episodes.
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from scenarios.simuhome.evaluate import run_episode
from scenarios.simuhome.generate import generate_category
from scenarios.simuhome.judges import RuleJudge
from scenarios.simuhome.reference import ReferenceAgent
from scenarios.simuhome.schema import CATEGORIES, Episode


def fingerprint(episode: Episode) -> str:
    """What makes a task the same task: its query and its initial state (not its id)."""
    content = {"query": episode.query, "initial": episode.initial.model_dump(mode="json")}
    return hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()


def split_of(episode: Episode, heldout_fraction: float) -> str:
    """"heldout" for a fixed `heldout_fraction` of all possible tasks, by content hash."""
    bucket = int(fingerprint(episode)[:8], 16) / 0x1_0000_0000
    return "heldout" if bucket < heldout_fraction else "train"


@dataclass
class TaskSet:
    train: list[Episode] = field(default_factory=list)
    heldout: list[Episode] = field(default_factory=list)
    #: Drawn but not kept: the reference solver failed, or it duplicates an excluded/earlier task.
    unsolved: int = 0
    duplicates: int = 0


def generate_tasks(seed: int, per_category: int, categories: Iterable[str] = CATEGORIES,
                   heldout_fraction: float = 0.1, exclude: Iterable[Episode] = (),
                   progress: Callable[[str], None] | None = None) -> TaskSet:
    """`per_category` drawn tasks per category (seeded), solved by the reference, split."""
    if not 0.0 <= heldout_fraction < 1.0:
        raise ValueError(f"heldout_fraction must be in [0, 1), got {heldout_fraction}")
    unknown = [c for c in categories if c not in CATEGORIES]
    if unknown:
        raise ValueError(f"unknown category {', '.join(unknown)}; accepted: {', '.join(CATEGORIES)}")
    seen = {fingerprint(e) for e in exclude}
    tasks = TaskSet()
    judge = RuleJudge()
    for category in categories:
        for k, drawn in enumerate(generate_category(category, seed, per_category), 1):
            episode = drawn.model_copy(update={"id": f"{category.lower()}-s{seed}-{k:04d}"})
            key = fingerprint(episode)
            if key in seen:
                tasks.duplicates += 1
            elif not run_episode(episode, ReferenceAgent(), judge)["success"]:
                tasks.unsolved += 1
            else:
                seen.add(key)
                getattr(tasks, split_of(episode, heldout_fraction)).append(episode)
            if progress is not None:
                progress(category)
    return tasks
