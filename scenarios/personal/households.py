"""Seeded households: residents, pets and life events in a HomeMaker home (twin/generator.py).

A household is a pure function of (seed, index). Its kind (single, couple, family, roommates,
multi-generation) sets who lives there and how many rooms the home has; the home comes from
`make_home` with PersonalHomeBench's five mandatory appliances plus 4-5 more drawn from about
forty appliance types, and a light in every room. The pools are our own words; a persona is one
sentence built from an occupation and two hobbies. Habits (times, preferred temperature and
light level) are drawn consistent (wake < leave < back < bed) and different between residents;
life events (a sick day, working late, guests, ...) change what residents do on one day, so the
household's history is personal. None of it is told to the twin: the household lives its days
on the twin (household.py) and its memory is what happened.
"""
from __future__ import annotations

import gzip
import json
import random
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

from twin.generator import make_home
from twin.schema import HomeSpec, UserFileError, parse_data, to_yaml

FIRST = ("Ada", "Ben", "Chloe", "Dev", "Esme", "Farid", "Greta", "Hugo", "Ines", "Jonas", "Kemi", "Luca",
         "Maya", "Nils", "Olga", "Pavel", "Queenie", "Rafa", "Sana", "Tomas", "Uma", "Viktor", "Wren", "Xiu",
         "Yara", "Zeno", "Amir", "Bea", "Cyrus", "Dalia", "Emil", "Fleur", "Gideon", "Hana", "Ivo", "Jade",
         "Kofi", "Lena", "Milo", "Noor", "Otto", "Priya", "Quinn", "Rosa", "Sami", "Tess", "Ugo", "Vera",
         "Wim", "Ximena", "Yusuf", "Zoe", "Anouk", "Bruno", "Carmen", "Dario", "Elif", "Finn", "Gala", "Hiro",
         "Ilse", "Joaquin", "Kira", "Leon", "Mira", "Nico", "Oona", "Pim", "Rania", "Stellan", "Talia", "Udo",
         "Valentina", "Wanda", "Yosef", "Zara", "Arjun", "Bianca", "Caspar", "Dora", "Eero", "Frida", "Goran",
         "Helga", "Idris", "Juno", "Kasper", "Liesel", "Mateo", "Nadia", "Oskar", "Petra", "Ruben", "Selma",
         "Theo", "Ulla", "Vince", "Willa", "Yannick", "Zsofia", "Aiko", "Bastian", "Clara", "Dmitri",
         "Edda", "Felix", "Gemma", "Hector", "Isla", "Jasper", "Karin", "Lorenzo", "Marta", "Nuno", "Odile",
         "Piet", "Rhea", "Sven", "Tilde", "Umar", "Vilma", "Walter", "Yuki", "Zlatan")
SURNAMES = ("Abara", "Berg", "Costa", "Dahl", "Evans", "Ferreira", "Gupta", "Holm", "Ibsen", "Janssen",
            "Kowalski", "Lindqvist", "Moreau", "Nakamura", "Okafor", "Petrov", "Quist", "Rossi", "Sato",
            "Tanaka", "Urbina", "Vogel", "Weber", "Yilmaz", "Zeller", "Alves", "Brandt", "Castillo",
            "Dimitrov", "Engel", "Fischer", "Garcia", "Haddad", "Iversen", "Jovanovic", "Kim", "Larsen",
            "Mendes", "Novak", "Olsen", "Park", "Ruiz", "Schmidt", "Torres", "Varga", "Wolff")
#: occupation -> out of the house on weekdays
OCCUPATIONS = {"nurse": True, "teacher": True, "software developer": False, "novelist": False,
               "bus driver": True, "pharmacist": True, "translator": False, "architect": True,
               "electrician": True, "accountant": True, "graphic designer": False, "chef": True,
               "lab technician": True, "journalist": True, "musician": False, "carpenter": True,
               "lawyer": True, "photographer": False, "postal worker": True, "data analyst": False,
               "physiotherapist": True, "shop owner": True, "student": True, "social worker": True}
HOBBIES = ("cooking", "films", "gardening", "reading", "running", "board games", "tv series", "baking",
           "cycling", "chess", "painting", "yoga", "knitting", "podcasts", "video games", "birdwatching",
           "photography", "hiking", "jazz", "pottery", "swimming", "crosswords", "dancing", "football")
PETS = {"dog": ("Biscuit", "Rex", "Luna", "Pepper", "Max", "Olive", "Bruno", "Nala"),
        "cat": ("Miso", "Tiger", "Cleo", "Smokey", "Mochi", "Felix", "Juniper", "Salem"),
        "rabbit": ("Clover", "Thumper", "Hazel"), "parrot": ("Kiwi", "Captain", "Rio"),
        "hamster": ("Nugget", "Peanut"), "tortoise": ("Sheldon", "Tank"), "fish": ("Bubbles", "Finn")}
#: PersonalHomeBench's appliances in every home.
MANDATORY = ("refrigerator", "thermostat", "microwave_oven", "speaker", "tv")
#: The appliance types a home draws its others from (with the mandatory ones: about forty).
APPLIANCES = ("air_conditioner", "air_purifier", "basic_video_player", "battery_storage", "cook_surface",
              "cooktop", "dehumidifier", "dimmable_plug", "dishwasher", "door_lock", "evse", "extractor_hood",
              "fan", "freezer", "generic_switch", "heat_pump", "humidifier", "laundry_dryer", "laundry_washer",
              "on_off_plug", "oven", "robot_vacuum_cleaner", "smoke_co_alarm", "solar_power",
              "water_heater", "water_leak_detector", "water_valve", "window_covering", "contact_sensor",
              "occupancy_sensor", "temperature_sensor", "humidity_sensor", "water_freeze_detector", "pump",
              "rain_sensor")
#: What the residents' days use most, drawn more often (a resident's acts need them to act).
FAVOURED = {"air_conditioner": 6, "dishwasher": 5, "window_covering": 4}
LIGHTS = ("dimmable_light", "on_off_light")
#: kind -> (weight, rooms drawn from)
KINDS = {"single": (28, (1, 2, 3, 4)), "couple": (27, (3, 4, 5, 6)), "family": (25, (5, 6, 7, 8)),
         "roommates": (10, (4, 5, 6, 7)), "multi-generation": (10, (6, 7, 8, 9))}
DAYS = 2                 # the days a household lives for the benchmark
FIRST_MONDAY = date(2025, 1, 6)
EVENT_TEXT = {
    "sick_day": "{name} was ill on {day} and stayed home all day",
    "late_return": "{name} worked late on {day} and came home two hours later than usual",
    "early_start": "{name} had an early start on {day}: up and out an hour earlier than usual",
    "late_night": "{name} stayed up late on {day} watching a film and went to bed 90 minutes later",
    "day_off": "{name} took {day} off and spent it at home",
    "guests": "{name} had friends over for dinner on {day}, so dinner was 45 minutes later",
}
#: Events that only happen to residents who go out on weekdays.
GOERS_ONLY = ("sick_day", "late_return", "early_start", "day_off")


def _hhmm(minutes: int) -> str:
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


def resident(rng: random.Random, rid: str, name: str, age: int, role: str, bedroom: str) -> dict[str, Any]:
    occupation, goes_out = rng.choice(sorted(OCCUPATIONS.items()))
    if age < 18:
        occupation, goes_out = "pupil", True
    elif age >= 67:
        occupation, goes_out = "retired " + occupation.removeprefix("retired "), False
    hobbies = rng.sample(HOBBIES, 2)
    wake = rng.randrange(6 * 60, 8 * 60, 5)
    prefs: dict[str, Any] = {"wake": _hhmm(wake), "bed": _hhmm(rng.randrange(21 * 60 + 30, 23 * 60 + 45, 5)),
                             "temperature": rng.choice((21.5, 22.0, 22.5, 23.0, 23.5, 24.0)),
                             "light_level": rng.randrange(90, 250, 10), "hobbies": hobbies}
    if goes_out:
        prefs["leave"] = _hhmm(wake + rng.randrange(60, 110, 5))
        prefs["back"] = _hhmm(rng.randrange(16 * 60, 18 * 60 + 30, 5))
    persona = (f"{name} is a {age}-year-old {occupation} ({role})"
               + f" who enjoys {hobbies[0]} and {hobbies[1]}"
               + (", out of the house on weekdays" if goes_out else ", mostly at home during the day") + ".")
    return {"id": rid, "name": name, "age": age, "role": role, "persona": persona, "bedroom": bedroom,
            "preferences": prefs}


def _members(rng: random.Random, kind: str) -> list[tuple[int, str]]:
    """[(age, role)] of a household of `kind`."""
    if kind == "single":
        return [(rng.randrange(21, 85), "single")]
    if kind == "couple":
        first = rng.randrange(22, 80)
        return [(first, "partner"), (max(19, first + rng.randrange(-6, 7)), "partner")]
    if kind == "roommates":
        return [(rng.randrange(19, 36), "roommate") for _ in range(rng.choice((2, 2, 3, 3, 4)))]
    parent = rng.randrange(28, 52)
    parents = [(parent, "parent")] + ([(parent + rng.randrange(-5, 6), "parent")] if rng.random() < 0.8 else [])
    children = [(rng.randrange(6, 18), "child") for _ in range(rng.choice((1, 1, 2, 2, 3)))]
    if kind == "family":
        return parents + children
    grand = parent + rng.randrange(24, 32)
    return ([(min(95, grand), "grandparent")] + ([(min(95, grand + rng.randrange(-4, 5)), "grandparent")]
                                                 if rng.random() < 0.5 else []) + parents + children[:2])


def make_household(seed: int, index: int) -> HomeSpec:
    """Household `index` of the set drawn from `seed`: a HomeMaker home with residents, pets and
    life events in its first DAYS days."""
    rng = random.Random(f"household/{seed}/{index}")
    kinds = sorted(KINDS)
    kind = rng.choices(kinds, weights=[KINDS[k][0] for k in kinds])[0]
    people = _members(rng, kind)
    rooms = rng.choice(KINDS[kind][1])
    wanted = MANDATORY + tuple(_draw_appliances(rng, rng.choices((4, 5, 5, 5, 3, 6), k=1)[0]))
    start = datetime.combine(FIRST_MONDAY + timedelta(weeks=rng.randrange(44)), datetime.min.time())
    home = make_home(rng.randrange(2**31), rooms=rooms, devices=len(wanted) + rooms, start_time=start,
                     types=list(wanted) + list(LIGHTS), required=list(wanted))
    sleeping = [r.id for r in home.rooms if r.kind in ("bedroom", "kids_room", "guest_room", "studio")] \
        or [home.rooms[-1].id]
    surname = rng.choice(SURNAMES)
    names = rng.sample(FIRST, len(people))
    residents, used_rooms = [], 0
    for i, ((age, role), name) in enumerate(zip(people, names, strict=True)):
        # Partners and parents share the first bedroom; everyone else gets the next one there is.
        shares = role in ("partner", "parent") and i > 0 and people[i - 1][1] == role
        if not shares and i:
            used_rooms += 1
        bedroom = sleeping[used_rooms % len(sleeping)]
        full = name if kind == "roommates" else f"{name} {surname}"
        residents.append(resident(rng, name.lower(), full, age, role, bedroom))
    household = {"kind": kind, "pets": _pets(rng, kind, residents), "events": _events(rng, residents, start)}
    data = home.model_dump(mode="json")
    data.update({"name": f"Household {index + 1} ({kind})", "residents": residents, "household": household})
    return parse_data(data, f"<household {index}>")


def _draw_appliances(rng: random.Random, count: int) -> list[str]:
    pool = sorted(APPLIANCES)
    weights = [FAVOURED.get(t, 1) for t in pool]
    out: list[str] = []
    while len(out) < count:
        pick = rng.choices(pool, weights=weights)[0]
        if pick not in out:
            out.append(pick)
    return out


def _pets(rng: random.Random, kind: str, residents: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Most households have none; families most often have some."""
    chance = {"family": 0.55, "multi-generation": 0.4, "couple": 0.3, "single": 0.25, "roommates": 0.15}[kind]
    pets = []
    while rng.random() < chance and len(pets) < 3:
        species = rng.choice(sorted(PETS))
        name = rng.choice(PETS[species])
        if any(p["name"] == name for p in pets):
            break
        pets.append({"name": name, "species": species, "age": rng.randrange(1, 14),
                     "carer": rng.choice(residents)["id"]})
        chance /= 2
    return pets


def _events(rng: random.Random, residents: list[dict[str, Any]], start: datetime) -> list[dict[str, Any]]:
    """Zero to two life events on the household's first DAYS days."""
    events = []
    for _ in range(rng.choice((0, 1, 1, 2))):
        person = rng.choice(residents)
        goes_out = "leave" in person["preferences"]
        kinds = [k for k in EVENT_TEXT if goes_out or k not in GOERS_ONLY]
        kind = rng.choice(kinds)
        day = (start + timedelta(days=rng.randrange(DAYS))).date()
        if any(e["resident"] == person["id"] and e["day"] == day.isoformat() for e in events):
            continue
        text = EVENT_TEXT[kind].format(name=person["name"].split()[0], day=day.isoformat())
        events.append({"day": day.isoformat(), "resident": person["id"], "kind": kind, "text": text})
    return events


# ---- the set on disk: one gzip JSONL pack -------------------------------------------------------
def pack_line(index: int, spec: HomeSpec) -> str:
    return json.dumps({"id": f"household-{index + 1:04d}", "home": spec.model_dump(mode="json")},
                      ensure_ascii=False, sort_keys=True)


def write_pack(path: Path, seed: int, count: int) -> list[str]:
    """The households as one gzip JSONL file, byte-identical for the same seed and count."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [pack_line(i, make_household(seed, i)) for i in range(count)]
    write_gzip(path, "".join(line + "\n" for line in lines))
    return [f"household-{i + 1:04d}" for i in range(count)]


def write_gzip(path: Path, text: str) -> None:
    # mtime=0 and no file name: the same text gives the same bytes.
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as out:
        out.write(text.encode("utf-8"))


def read_text(path: Path) -> str:
    """A text file, gunzipped when its name ends in .gz."""
    data = path.read_bytes()
    return (gzip.decompress(data) if path.suffix == ".gz" else data).decode("utf-8")


_PACKS: dict[Path, dict[str, Any]] = {}


def load_spec(base: Path, name: str) -> HomeSpec:
    """Household `name`: a home file in `base`, or a line of a households pack there."""
    path = base / name
    if path.exists():
        from twin.schema import parse_file
        return parse_file(path)
    for pack in sorted(base.glob("*households*.jsonl.gz")):
        key = pack.resolve()
        if key not in _PACKS:
            _PACKS[key] = {row["id"]: row["home"] for row in map(json.loads, read_text(pack).splitlines())}
        if name in _PACKS[key]:
            return parse_data(_PACKS[key][name], f"{pack}:{name}")
    raise UserFileError(str(path), "(file)", "cannot read: no such household file or households pack entry")


def write_households(directory: Path, seed: int, count: int, prefix: str = "personal_household") -> list[Path]:
    """The households as separate home files (small sets, to read and edit)."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for index in range(count):
        path = directory / f"{prefix}_{index + 1}.yaml"
        path.write_text("# A personalised household (twin bench personal generate): a HomeMaker home "
                        "with residents.\n" + to_yaml(make_household(seed, index)), encoding="utf-8")
        paths.append(path)
    return paths
