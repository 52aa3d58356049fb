"""Drawing HomeFlow tasks: a Blueprint per candidate, the three filters, verification on the
twin (reference passes, null fails); a candidate that fails is redrawn. See tasks.py for the
task shape and the seeds."""
from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable
from typing import Any

from scenarios.homeflow import blueprint as B
from scenarios.homeflow.evaluate import verify
from scenarios.homeflow.tasks import (
    MAX_ATTEMPTS,
    NOT_SMALL,
    PER_CATEGORY,
    SEED,
    SIZE_SHARE,
    SIZES,
    SUBCATEGORIES,
    HomeFlowTask,
    build_home,
    fresh_home,
    home_spec,
    pick_home,
)
from scenarios.smh import language as L
from scenarios.smh import tasks as smh
from scenarios.smh.tasks import act
from twin.goals import Goal, GoalError


# ---- TC5's preference template (ours) --------------------------------------------------------
def tc5_preference(draft: B.BlueprintDraft) -> dict[str, Any] | None:
    kinds = sorted(k for k in L.VALUES if B.preferred(draft.profile, k) is not None)
    for kind in draft.rng.sample(kinds, len(kinds)):
        devs = [d for d in sorted(draft.types) if draft.types[d] in L.OP_TYPES[kind]]
        if not devs:
            continue
        dev = draft.rng.choice(devs)
        liked = B.preferred(draft.profile, kind) or 0
        value = min(L.VALUES[kind], key=lambda v: (abs(v - liked), v))
        op = {"op": kind, "device": dev, "value": value}
        if draft.holds(op):
            continue
        phrase = f"set the {draft.names[dev].lower()} how I like it"
        memory = [f"When the user says \"{phrase}\", they want you to {L.say(op, draft.names)}."]
        return act(draft, [op], phrase[0].upper() + phrase[1:] + ".", memory=memory)
    return None


GENERATORS: dict[str, Callable[[Any], dict[str, Any] | None]] = {
    **{s: smh.GENERATORS[s] for subs in SUBCATEGORIES.values() for s in subs if s in smh.GENERATORS},
    "short_term": smh.tc6_short, "long_term": smh.tc6_long, "preference": tc5_preference,
}
assert set(GENERATORS) == {s for subs in SUBCATEGORIES.values() for s in subs}
_CATEGORY_OF = {s: c for c, subs in SUBCATEGORIES.items() for s in subs}


# ---- one task: blueprint, filters, verification ----------------------------------------------
def candidate(rng: random.Random, sub: str, size: str, pool: bool, k: int, seen: set[str],
              rejected: Counter[str], narrate: B.Narrator | None = None) -> HomeFlowTask | None:
    """One candidate from a blueprint; None (and the filter counted) if it is not kept."""
    home = pick_home(rng, size, pool)
    profile = B.make_profile(rng)
    draft = B.BlueprintDraft(rng, size, (home, home_spec(home), fresh_home(home)), profile)
    scene = B.make_scene(rng, profile, draft.spec, draft.home)
    draft.scene_room = scene["room"]
    if narrate is not None:
        scene["text"] = " ".join(narrate(profile, scene).split("\n\n"))   # one block in the prompt
    made = GENERATORS[sub](draft)
    if made is None:
        rejected["no fitting intent"] += 1
        return None
    noisy = sub not in ("noisy", "clear") and rng.random() < 0.2
    if noisy:
        made["query"] = B.add_noise(rng, made["query"])
    if B.consistency_problem(made):
        rejected["consistency"] += 1
        return None
    category = _CATEGORY_OF[sub]
    task = HomeFlowTask(id=f"{category.lower()}-{sub}-{k:04d}", category=category, subcategory=sub,
                        tier=size,  # type: ignore[arg-type]
                        home=home, setup=draft.setup, profile=profile, scene=scene,
                        perturbation=B.perturbation(sub, made, noisy), **made)
    try:   # executability and boundary validity: the setup replays, the conditions build on the home
        start = build_home(task)
        Goal(start, [*task.goal, {"type": "unchanged", "except": list(task.targets)}])
    except (ValueError, GoalError):
        rejected["executability"] += 1
        return None
    key = B.content_key(made, home)
    if key in seen:
        rejected["diversity"] += 1
        return None
    if verify(task, start) is not None:
        rejected["verified"] += 1
        return None
    seen.add(key)
    return task


def generate_one(seed: int, sub: str, k: int, size: str, pool: bool, seen: set[str],
                 rejected: Counter[str], narrate: B.Narrator | None = None) -> HomeFlowTask:
    for attempt in range(MAX_ATTEMPTS):
        made = candidate(random.Random(f"{seed}:{sub}:{k}:{attempt}"), sub, size, pool, k, seen, rejected,
                         narrate)
        if made is not None:
            return made
    raise RuntimeError(f"{sub} #{k} ({size}): no task kept in {MAX_ATTEMPTS} draws")


def sizes_for(count: int) -> list[str]:
    """`count` tasks split over the sizes 4:3:2:1 (small first)."""
    total = sum(w for _, w in SIZE_SHARE)
    shares = [count * w // total for _, w in SIZE_SHARE[1:]]
    return ["small"] * (count - sum(shares)) + [s for (s, _), n in zip(SIZE_SHARE[1:], shares) for _ in range(n)]


def generate(seed: int = SEED, per_category: dict[str, int] | None = None,
             progress: Callable[[str], None] | None = None,
             rejected: Counter[str] | None = None) -> list[HomeFlowTask]:
    """The evaluation set: each group's count split evenly over its subcategories, each
    subcategory's 4:3:2:1 over the sizes, on the pool's homes."""
    out: list[HomeFlowTask] = []
    seen: set[str] = set()
    rejected = rejected if rejected is not None else Counter()
    for category, subs in SUBCATEGORIES.items():
        count = (per_category or PER_CATEGORY)[category]
        for i, sub in enumerate(subs):
            n = count // len(subs) + (i < count % len(subs))
            for k, size in enumerate(sizes_for(n), 1):
                size = "medium" if size == "small" and sub in NOT_SMALL else size
                out.append(generate_one(seed, sub, k, size, True, seen, rejected))
                if progress is not None:
                    progress(sub)
    return out


def generate_procedural(seed: int, n: int, progress: Callable[[str], None] | None = None,
                        rejected: Counter[str] | None = None, narrate: B.Narrator | None = None) -> list[HomeFlowTask]:
    """N training tasks on fresh HomeMaker homes: task k's subcategory and size are drawn from
    `Random(f"{seed}:{k}")`, uniformly over the 18 subcategories and the four sizes."""
    subs = [s for group in SUBCATEGORIES.values() for s in group]
    out: list[HomeFlowTask] = []
    seen: set[str] = set()
    rejected = rejected if rejected is not None else Counter()
    for k in range(1, n + 1):
        rng = random.Random(f"{seed}:{k}")
        sub, size = rng.choice(subs), rng.choice(list(SIZES))
        size = "medium" if size == "small" and sub in NOT_SMALL else size
        out.append(generate_one(seed, sub, k, size, False, seen, rejected, narrate))
        if progress is not None:
            progress(sub)
    return out


def draw(category: str, seed: int) -> HomeFlowTask:
    """One fresh procedural task of a group (the gym's `reset(options={"generate": ...})`)."""
    if category not in SUBCATEGORIES:
        raise ValueError(f"unknown category {category!r}; accepted: {', '.join(SUBCATEGORIES)}")
    rng = random.Random(f"draw:{seed}")
    sub, size = rng.choice(SUBCATEGORIES[category]), rng.choice(list(SIZES))
    size = "medium" if size == "small" and sub in NOT_SMALL else size
    return generate_one(seed, sub, 1, size, False, set(), Counter())


