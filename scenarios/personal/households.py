"""Seeded households: the packaged default home with residents drawn from small pools.

The pools are our own words; a persona is one sentence built from a role, an occupation and a
hobby. Habits (times, preferred temperature and light level) are drawn so that they are
consistent (wake < leave < back < bed) and differ between residents, which is what makes the
household's history personal.
"""
from __future__ import annotations

import importlib.resources
import random
from pathlib import Path
from typing import Any

import yaml

from twin.schema import HomeSpec, parse_data, to_yaml

NAMES = ("Ada", "Ben", "Chloe", "Dev", "Esme", "Farid", "Greta", "Hugo", "Ines", "Jonas", "Kemi", "Luca")
OCCUPATIONS = {"nurse": True, "teacher": True, "software developer": False, "novelist": False,
               "bus driver": True, "pharmacist": True, "translator": False, "retired engineer": False}
HOBBIES = ("cooking", "films", "gardening", "reading", "running", "board games", "tv series", "baking")
START = "2025-06-02 00:00:00"   # a Monday at midnight: every simulated day is whole


def _hhmm(minutes: int) -> str:
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


def resident(rng: random.Random, rid: str, name: str, age: int, role: str) -> dict[str, Any]:
    occupation, goes_out = rng.choice(sorted(OCCUPATIONS.items()))
    if role == "child":
        occupation, goes_out = "pupil", True
    hobbies = rng.sample(HOBBIES, 2)
    wake = rng.randrange(6 * 60, 8 * 60, 5)
    prefs: dict[str, Any] = {"wake": _hhmm(wake), "bed": _hhmm(rng.randrange(21 * 60 + 30, 23 * 60 + 45, 5)),
                             "temperature": rng.choice((21.5, 22.0, 22.5, 23.0, 23.5, 24.0)),
                             "light_level": rng.randrange(90, 250, 10), "hobbies": hobbies}
    if goes_out:
        prefs["leave"] = _hhmm(wake + rng.randrange(60, 110, 5))
        prefs["back"] = _hhmm(rng.randrange(16 * 60, 18 * 60 + 30, 5))
    persona = (f"{name} is a {age}-year-old {occupation}" + ("" if role == "adult" else f" ({role})")
               + f" who enjoys {hobbies[0]} and {hobbies[1]}"
               + (", out of the house on weekdays" if goes_out else ", mostly at home during the day") + ".")
    return {"id": rid, "name": name, "age": age, "role": role, "persona": persona, "bedroom": "bedroom",
            "preferences": prefs}


def make_household(seed: int, index: int) -> HomeSpec:
    """The default home with 2-3 residents (a couple, sometimes with a child), seeded."""
    rng = random.Random(f"household/{seed}/{index}")
    data = yaml.safe_load((importlib.resources.files("twin") / "default_home.yaml").read_text(encoding="utf-8"))
    names = rng.sample(NAMES, 3)
    first = rng.randrange(30, 70)
    role = "parent" if index % 2 == 0 else "adult"
    people = [resident(rng, names[0].lower(), names[0], first, role),
              resident(rng, names[1].lower(), names[1], first + rng.randrange(-4, 5), role)]
    if index % 2 == 0:
        people.append(resident(rng, names[2].lower(), names[2], rng.randrange(8, 17), "child"))
    data.update({"name": f"Household {index + 1}", "seed": seed, "start_time": START, "residents": people})
    return parse_data(data, f"<household {index}>")


def write_households(directory: Path, seed: int, count: int, prefix: str = "personal_household") -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for index in range(count):
        path = directory / f"{prefix}_{index + 1}.yaml"
        path.write_text("# A personalised household (twin bench personal generate): the default home "
                        "with residents.\n" + to_yaml(make_household(seed, index)), encoding="utf-8")
        paths.append(path)
    return paths
