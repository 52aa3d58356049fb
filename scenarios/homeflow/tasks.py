"""HomeFlow tasks: SmartHome-Bench's 5 groups and 18 subcategories on HomeMaker homes, each
drawn from a Blueprint (scenarios/homeflow/blueprint.py), filtered and verified on the twin.

A task is an SMH-Bench task (scenarios/smh/tasks.py: setup, history, memory, query, goal
predicates, the simulated user's hidden intent) plus its blueprint: the profile, the scene
and the point of the perturbation space. Its home is a HomeMaker home named by its arguments,
`hm:<seed>:<rooms>:<devices>:<hour>`, rebuilt from them (twin.generator.make_home).

Groups (the paper's Table 10): TC1 atomic control, TC2 compositional control, TC3 ambiguous
intent, TC4 context-aware multi-turn, TC5 personalized memory. The paper's table is cut after
TC5's first template ("Short-term Memory"); its other two are ours: `long_term` (a routine
phrase, "as usual") and `preference` (a stored preference of the profile, "how I like it").
Sizes: small (< 10 devices), medium (15-40), large (50-95), xl (> 100). The evaluation set's
per-group counts (379/540/279/385/95 = 1,678) are those the paper's success rates imply.

Generation (generate.py): subcategory s, task k draws from `Random(f"{seed}:{s}:{k}:{attempt}")`; a candidate
that fails a filter or verification is redrawn (the next attempt), so a set regenerates byte
for byte. `draw(category, seed)` makes one procedural task on a fresh HomeMaker home.
"""
from __future__ import annotations

import functools
import gzip
import json
import random
from pathlib import Path
from typing import Any, Literal

from scenarios.smh import tasks as smh
from scenarios.smh.tasks import SmhTask
from twin.clock import DEFAULT_START
from twin.generator import make_home
from twin.home import Home
from twin.schema import HomeSpec, load_jsonl

SEED = 20260701
SUBCATEGORIES: dict[str, tuple[str, ...]] = {
    "TC1": ("clear", "colloquial", "noisy"),
    "TC2": ("multi_device", "batch", "state_dependent", "room_dependent", "top_n"),
    "TC3": ("state_ambiguity", "scene_ambiguity", "slot_missing"),
    "TC4": ("continuation", "topic_shift", "coreference", "correction"),
    "TC5": ("short_term", "long_term", "preference"),
}
CATEGORIES = tuple(SUBCATEGORIES)
PER_CATEGORY = {"TC1": 379, "TC2": 540, "TC3": 279, "TC4": 385, "TC5": 95}
#: size -> (rooms low-high, devices low-high); the set's shares 4:3:2:1
SIZES = {"small": ((3, 6), (4, 9)), "medium": ((7, 12), (15, 40)), "large": ((14, 24), (50, 95)),
         "xl": ((26, 34), (101, 140))}
SIZE_SHARE = (("small", 4), ("medium", 3), ("large", 2), ("xl", 1))
#: How many homes of each size the evaluation set draws from.
POOL = {"small": 24, "medium": 16, "large": 10, "xl": 6}
DEFAULT_TASKS = Path(__file__).parent / "data" / "tasks.jsonl.gz"
MAX_ATTEMPTS = 400
#: Subcategories a small home (under 10 devices) rarely fits draw from medium homes instead
#: (top_n needs three lit dimmable lights).
NOT_SMALL = ("top_n",)


class HomeFlowTask(SmhTask):
    tier: Literal["small", "medium", "large", "xl"]   # type: ignore[assignment]
    profile: dict[str, Any]
    scene: dict[str, Any]
    perturbation: dict[str, str]


# ---- homes ----------------------------------------------------------------------------------
def home_id(seed: int, rooms: int, devices: int, hour: int) -> str:
    return f"hm:{seed}:{rooms}:{devices}:{hour}"


def _params(home: str) -> tuple[int, int, int, int]:
    parts = home.split(":")
    if len(parts) != 5 or parts[0] != "hm" or not all(p.isdigit() for p in parts[1:]):
        raise ValueError(f"home {home!r} is not hm:<seed>:<rooms>:<devices>:<hour>")
    seed, rooms, devices, hour = map(int, parts[1:])
    return seed, rooms, devices, hour


@functools.lru_cache(maxsize=128)
def home_spec(home: str) -> HomeSpec:
    seed, rooms, devices, hour = _params(home)
    return make_home(seed, rooms=rooms, devices=devices, start_time=DEFAULT_START.replace(hour=hour))


@functools.lru_cache(maxsize=128)
def _base(home: str) -> Home:
    return Home.from_spec(home_spec(home))


def fresh_home(home: str) -> Home:
    """The HomeMaker home as generated (a fork of one cached copy)."""
    return _base(home).fork()


def pick_home(rng: random.Random, size: str, pool: bool) -> str:
    """A home of a size: one of the evaluation pool's (`pool`), or a fresh HomeMaker home."""
    source = random.Random(f"homeflow-home:{size}:{rng.randrange(POOL[size])}") if pool else rng
    (r_lo, r_hi), (d_lo, d_hi) = SIZES[size]
    rooms, devices = source.randint(r_lo, r_hi), source.randint(d_lo, d_hi)
    return home_id(source.randrange(1 << 30), rooms, devices, source.randrange(24))


def build_home(task: SmhTask) -> Home:
    return smh.build_home(task, fresh_home)


def prompt(task: HomeFlowTask) -> str:
    """The scene (the agent's view of the user's situation), then what SMH-Bench's prompt holds."""
    return f"Scene: {task.scene['text']}\n\n{smh.prompt(task)}"


# ---- files ----------------------------------------------------------------------------------
def dump_task(task: HomeFlowTask) -> str:
    return json.dumps(task.model_dump(mode="json", exclude_defaults=True), ensure_ascii=False, sort_keys=True)


def dump_tasks(tasks: list[HomeFlowTask], path: Path) -> None:
    """JSONL; gzip (with no time stamp, so the bytes repeat) when the name ends in .gz."""
    data = "".join(dump_task(t) + "\n" for t in tasks).encode("utf-8")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(data, compresslevel=9, mtime=0) if path.suffix == ".gz" else data)


def load_tasks(path: str | Path = DEFAULT_TASKS) -> list[HomeFlowTask]:
    """Tasks from JSONL (or .jsonl.gz); a bad line is one UserFileError naming the line and field."""
    return load_jsonl(path, HomeFlowTask, "(task)")
