"""HomeFlow's Blueprints (Gu et al. 2026, our implementation from its definitions): a user
profile, a HomeMaker home in its initial state, a slice-of-life scene and the task's atomic
intents with their goal conditions, B = <U, s0, I, Phi>.

- Profiles are drawn from seeded distributions with the paper's consistency constraints: health
  follows age (arthritis and poor vision with age, asthma and allergies at any age), preferences
  follow health and habits (poor vision: brighter light; hearing loss: louder; feeling the cold:
  a warmer setpoint; a night owl: warm white light).
- A scene is an activity fitting the home's hour and the profile's habits, in a room of a kind
  the activity happens in, described with the room's state as HomeMaker set it (templates; an
  OpenAI-compatible model may rewrite the description, `--llm`, which never changes the goal).
- Intents are operations of the request language (scenarios/smh/language.py), drawn by
  `BlueprintDraft`: devices of the scene's room first, values the profile prefers.
- The query is a point of the perturbation space (`PERTURBATION`): intent clarity x noise x
  device scope x execution dependency.
- The three filters (`FILTERS`), then verification on the twin, decide what is kept.
"""
from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable
from typing import Any

from scenarios.smh import language as L
from scenarios.smh.tasks import Draft
from twin.home import Home
from twin.schema import HomeSpec

#: The query perturbation space (the paper's Table 6).
PERTURBATION: dict[str, tuple[str, ...]] = {
    "clarity": ("clear", "ambiguous", "missing-slot"),
    "noise": ("clean", "noisy"),
    "scope": ("single-device", "multi-device", "batch-device"),
    "dependency": ("independent", "dependent"),
}
#: Filters in the order they run (the paper's Table 5), then verification on the twin.
FILTERS = ("consistency", "executability", "diversity", "verified")

AGE_BANDS = (("young adult", 18, 29), ("adult", 30, 49), ("middle-aged", 50, 64), ("senior", 65, 90))
#: condition -> weight per age band (young adult, adult, middle-aged, senior)
HEALTH: dict[str, tuple[int, int, int, int]] = {
    "none": (8, 7, 5, 2), "asthma": (1, 1, 1, 1), "allergies": (2, 2, 1, 1), "insomnia": (1, 2, 2, 2),
    "arthritis": (0, 0, 2, 4), "poor vision": (0, 0, 1, 4), "hearing loss": (0, 0, 1, 3),
    "feels the cold": (1, 1, 2, 3),
}
HABITS = ("early riser", "night owl", "works from home", "cooks often", "exercises at home", "film lover",
          "reads in the evening")
NAMES = ("Alex", "Sam", "Robin", "Jordan", "Kim", "Lee", "Morgan", "Taylor", "Casey", "Jamie", "Noor", "Ari")
#: activity -> (room kinds it happens in, hours it fits, the habit that makes it likelier)
ACTIVITIES: dict[str, tuple[tuple[str, ...], tuple[int, ...], str | None]] = {
    "reading": (("living_room", "bedroom", "office", "studio", "guest_room"), tuple(range(8, 24)),
                "reads in the evening"),
    "working": (("office", "studio", "living_room", "dining_room"), tuple(range(7, 20)), "works from home"),
    "watching a film": (("living_room", "bedroom", "studio", "kids_room"), tuple(range(12, 24)), "film lover"),
    "cooking": (("kitchen", "dining_room"), tuple(range(6, 22)), "cooks often"),
    "getting ready for bed": (("bedroom", "studio", "kids_room", "guest_room", "bathroom"),
                              (*range(20, 24), *range(0, 3)), "night owl"),
    "waking up": (("bedroom", "studio", "bathroom", "kitchen"), tuple(range(5, 11)), "early riser"),
    "exercising": (("living_room", "guest_room", "garage", "office", "studio"), tuple(range(6, 22)),
                   "exercises at home"),
    "tidying up": (("living_room", "kitchen", "hallway", "utility_room", "storage", "kids_room"),
                   tuple(range(8, 22)), None),
    "resting": (("living_room", "bedroom", "studio", "balcony", "garden"), tuple(range(0, 24)), None),
}


def _weighted(rng: random.Random, weights: dict[str, int]) -> str:
    keys = sorted(k for k, w in weights.items() if w > 0)
    return rng.choices(keys, weights=[weights[k] for k in keys])[0]


def make_profile(rng: random.Random) -> dict[str, Any]:
    """A user profile (the paper's Table 4 attributes), internally consistent."""
    band = rng.randrange(len(AGE_BANDS))
    label, lo, hi = AGE_BANDS[band]
    age = rng.randint(lo, hi)
    health = _weighted(rng, {k: w[band] for k, w in HEALTH.items()})
    habits = sorted(rng.sample(HABITS, 2))
    height = rng.randint(150, 195)
    prefs = {
        "temperature": 25 if health == "feels the cold" else rng.choice((22, 23, 24, 25)),
        "brightness": rng.choice((80, 90, 100)) if health == "poor vision" else rng.choice((30, 40, 50, 60, 70)),
        "color_temperature": 2700 if "night owl" in habits else rng.choice((3000, 4000, 5000)),
        "volume": rng.choice((40, 50, 60)) if health == "hearing loss" else rng.choice((10, 15, 20, 30)),
        "fan_speed": rng.choice((60, 70, 80)) if health in ("asthma", "allergies") else rng.choice((20, 30, 40, 50)),
    }
    return {"name": rng.choice(NAMES), "age": age, "age_band": label, "gender": rng.choice(("woman", "man")),
            "height_cm": height, "weight_kg": round(rng.uniform(0.33, 0.45) * height), "health": health,
            "habits": habits, "preferences": prefs}


def make_scene(rng: random.Random, profile: dict[str, Any], spec: HomeSpec, home: Home) -> dict[str, Any]:
    """A slice of life at the home's hour, in a room of a kind it happens in (any room if none)."""
    hour = spec.start_time.hour
    kinds = {r.id: r.kind or "" for r in spec.rooms}
    weights = {}
    for activity, (rooms, hours, habit) in ACTIVITIES.items():
        if hour in hours and any(k in rooms for k in kinds.values()):
            weights[activity] = 3 if habit in profile["habits"] else 1
    activity = _weighted(rng, weights) if weights else "resting"
    fitting = sorted(r for r, k in kinds.items() if k in ACTIVITIES[activity][0]) or sorted(kinds)
    room_id = rng.choice(fitting)
    room = home.rooms[room_id]
    name = (room.name or room_id).lower()
    text = (f"At {hour:02d}:00, {profile['name']} ({profile['age']}, {profile['health']}) is {activity} in the "
            f"{name}; it is {room.temperature:.1f} °C and {room.humidity:.0f} % humidity there.")
    return {"hour": hour, "activity": activity, "room": room_id, "text": text}


def preferred(profile: dict[str, Any], kind: str) -> int | None:
    """The profile's preferred value for an operation (its cooling setpoint is "temperature")."""
    value = profile["preferences"].get("temperature" if kind == "cool" else kind)
    return None if value is None or kind not in L.VALUES else int(value)


#: (profile, scene) -> the scene's description in other words
Narrator = Callable[[dict[str, Any], dict[str, Any]], str]
NARRATE_PROMPT = ("Rewrite this smart-home scene as two or three natural sentences in the third person. Keep "
                  "the person, the time, the room, the activity and the numbers; add nothing a device should "
                  "do.\nProfile: {profile}\nScene: {text}")


def llm_narrator(model: str, base_url: str | None = None, api_key: str | None = None) -> Narrator:
    """Scene descriptions from an OpenAI-compatible model (temperature 0); the goal, the query
    and the verification never depend on it."""
    import openai

    from scenarios.model_api import create_completion
    client = openai.OpenAI(base_url=base_url, api_key=api_key or "none", timeout=120.0)

    def narrate(profile: dict[str, Any], scene: dict[str, Any]) -> str:
        reply = create_completion(client, {"model": model, "temperature": 0.0, "messages": [
            {"role": "user", "content": NARRATE_PROMPT.format(profile=json.dumps(profile), text=scene["text"])}]})
        text = " ".join((reply.choices[0].message.content or "").split())
        return text or scene["text"]
    return narrate


class BlueprintDraft(Draft):
    """A task being drafted from a blueprint: devices in the scene's room are drawn first and
    values are the profile's preferred ones (the nearest the request language has)."""

    def __init__(self, rng: random.Random, tier: str, home: tuple[str, HomeSpec, Home], profile: dict[str, Any]):
        self.profile = profile
        self.scene_room: str | None = None   # set once the scene is drawn (after the lived-in start)
        super().__init__(rng, tier, home)

    def random_op(self, dev: str, kind: str) -> dict[str, Any]:
        op = super().random_op(dev, kind)
        liked = preferred(self.profile, kind)
        if liked is not None and self.scene_room is not None and self.rng.random() < 0.6:
            op["value"] = min(L.VALUES[kind], key=lambda v: (abs(v - liked), v))
        return op

    def changing_op(self, devices: list[str] | None = None, kinds: tuple[str, ...] | None = None,
                    avoid: set[str] = frozenset()) -> dict[str, Any] | None:  # type: ignore[assignment]
        if devices is None and self.scene_room is not None and self.rng.random() < 0.7:
            here = [d for d in sorted(self.types) if self.room_of[d] == self.scene_room]
            if here:
                op = super().changing_op(here, kinds, avoid)
                if op is not None:
                    return op
        return super().changing_op(devices, kinds, avoid)


def perturbation(sub: str, made: dict[str, Any], noisy: bool) -> dict[str, str]:
    """Where a drafted query lies in the perturbation space."""
    clarity = {"state_ambiguity": "ambiguous", "scene_ambiguity": "ambiguous", "slot_missing": "missing-slot"}
    batch = ("batch", "state_dependent", "room_dependent")
    dependent = ("state_dependent", "room_dependent", "top_n", "continuation", "topic_shift", "coreference",
                 "correction", "short_term")
    targets = made.get("targets") or []
    scope = "batch-device" if sub in batch else "multi-device" if len(targets) > 1 else "single-device"
    return {"clarity": clarity.get(sub, "clear"), "noise": "noisy" if noisy or sub == "noisy" else "clean",
            "scope": scope, "dependency": "dependent" if sub in dependent else "independent"}


def add_noise(rng: random.Random, query: str) -> str:
    """Spoken-style noise the request language reads past: a filler word or two."""
    words = query.split(" ")
    for _ in range(rng.choice((1, 2))):
        at = rng.randrange(1, len(words)) if len(words) > 1 else 0
        words.insert(at, rng.choice(L.FILLERS) + ",")
    return " ".join(words)


# ---- the three filters ---------------------------------------------------------------------------
def consistency_problem(made: dict[str, Any]) -> str | None:
    """Logical consistency: no two conditions ask one attribute for different things, every
    condition is about a device the intents target, and there is a request at all."""
    if not str(made.get("query", "")).strip():
        return "empty request"
    wanted: dict[tuple[Any, ...], Any] = {}
    for p in made.get("goal") or []:
        if p.get("type") != "device":
            continue
        key = (p["device_id"], p.get("endpoint_id"), p["cluster_id"], p["attribute_id"])
        if key in wanted and wanted[key] != (p["op"], p["value"]):
            return f"two conditions on {'/'.join(map(str, key))}"
        wanted[key] = (p["op"], p["value"])
        if made.get("targets") and p["device_id"] not in made["targets"]:
            return f"a condition on {p['device_id']}, which no intent targets"
    return None


def content_key(made: dict[str, Any], home_id: str) -> str:
    """Diversity: what makes two candidates the same task (home, request, goal)."""
    text = json.dumps([home_id, L.normalize(made["query"]), made.get("goal"), made.get("history"),
                       made.get("rule"), made.get("answer")], sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


__all__ = ["FILTERS", "PERTURBATION", "BlueprintDraft", "add_noise", "consistency_problem", "content_key",
           "llm_narrator", "make_profile", "make_scene", "perturbation", "preferred"]
