"""SimuHome (Seo et al.): 600 seeded episodes in 12 query categories, scored on the simulator
and by judges. Generator `generate.py`, evaluator `evaluate.py` and `judges.py`, reference
solver `reference.py`, episode files `schema.py`, import of SimuHome's own files `importer.py`."""
from __future__ import annotations

from typing import Any

from scenarios.simuhome.evaluate import Judge, agent_session, build_home, score
from scenarios.simuhome.generate import generate_category
from scenarios.simuhome.judges import RuleJudge
from scenarios.simuhome.schema import CATEGORIES, DEFAULT_EPISODES, Episode, load_episodes
from scenarios.suite import Attempt, Suite


def attempt(episode: Episode, start: Any = None, judge: Judge | None = None) -> Attempt:
    """The episode's home (or a fork of `start`, its already built home), SimuHome's session
    (a user who says to go ahead), scored as `twin bench run` scores it (rule judge by default)."""
    home = start if start is not None else build_home(episode)
    acted, session = home.fork(), agent_session()
    return Attempt(episode.id, episode.category, episode.query, acted, session,
                   lambda: score(episode, home, acted.fork(), session, judge or RuleJudge(), session.answer), home)


def draw(category: str, seed: int) -> Episode:
    """A fresh verifiable episode of `category` from `seed` (the generator checks it)."""
    return generate_category(category, seed, 1)[0].model_copy(update={"id": f"{category.lower()}-seed-{seed}"})


SUITE = Suite(name="simuhome", title="SimuHome",
              summary="SimuHome: 600 seeded episodes in 12 categories, simulator and judge scoring.",
              categories=CATEGORIES, default_tasks=DEFAULT_EPISODES, load_tasks=load_episodes, attempt=attempt,
              draw=draw)
