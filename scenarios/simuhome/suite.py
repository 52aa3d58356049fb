"""SimuHome (Seo et al.): 600 seeded episodes in 12 query categories, scored on the simulator
and by judges. Generator `generate.py`, evaluator `evaluate.py` and `judges.py`, reference
solver `reference.py`, episode files `schema.py`, import of SimuHome's own files `importer.py`."""
from __future__ import annotations

from scenarios.simuhome.schema import CATEGORIES, DEFAULT_EPISODES, load_episodes
from scenarios.suite import Suite

SUITE = Suite(name="simuhome",
              summary="SimuHome: 600 seeded episodes in 12 categories, simulator and judge scoring.",
              categories=CATEGORIES, default_tasks=DEFAULT_EPISODES, load_tasks=load_episodes)
