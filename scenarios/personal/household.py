"""A personalised household: residents living in a twin home, and the memory of what happened.

Residents (a home file's `residents:`, twin/schema.py) follow their habits day by day: they get
up, eat, go out and come back, cool the rooms they sit in, switch lights on when they come into
a room and off when they are the last to leave it, start the dishwasher, go to bed. Every such
act is a real tool call on the twin (bridge/tools.py, through `TwinBackend`), so the twin's
cluster servers and physics answer it. The household memory is the twin's own history:

- `action`: a resident's tool call and its result;
- `change`: a device value that changed, from the home's change stream (twin/changes.py),
  attributed to the resident whose act caused it (none: the home itself, e.g. a cycle ending);
- `event`: a Matter event a device emitted;
- `presence`: a resident moving between rooms, leaving or coming home;
- `room`: a room's temperature, humidity, illuminance or PM10 as the change stream samples it
  (hourly, and when a device in the room changes);
- `life`: a life event of the home file's `household:` (a sick day, guests, ...), in words, at
  the midnight of its day; it changes that day's acts (`EVENT_EDITS`), so the rest of the memory
  shows it too.

Nothing here reads the wall clock or the global RNG: the small jitter of habits comes from a
string-seeded `random.Random` per (seed, day, resident, act), so a day is the same whichever
way it is reached. `fork()` copies a household mid-run (the home through `Home.fork`), and
`counterfactual()` replays a day from its midnight checkpoint with one change (an act later, an
act skipped, another preferred temperature): the ground truth of counterfactual tasks.
"""
from __future__ import annotations

import copy
import json
import random
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

from bridge.backend import TIME_FORMAT
from bridge.tools import Session, call_tool
from bridge.twin_backend import TwinBackend
from scenarios.simuhome import actions as A
from twin.changes import ROOM_UNITS, ChangeStream
from twin.home import Home
from twin.schema import HomeSpec, HouseholdSpec, ResidentSpec, parse_file

AWAY = "away"
#: How often the change stream samples the rooms into memory (virtual seconds).
ROOM_SAMPLE_S = 3600.0
#: Habit times move by up to this many minutes either way, day by day.
JITTER_MIN = 12
DINNER = "19:00"
AFTER_DINNER_MIN = 40
LIGHTS = ("on_off_light", "dimmable_light")
#: Periodic meter reports (a record every few minutes from every meter): not household news.
QUIET_CLUSTERS = frozenset({"ElectricalEnergyMeasurement", "ElectricalPowerMeasurement"})
#: Room kinds residents eat in and sit in, most wanted first (a home without one uses its first room).
KITCHENS = ("kitchen", "studio", "dining_room", "living_room")
LOUNGES = ("living_room", "studio", "dining_room", "kitchen")
#: Life event -> [(act, minutes later or None: skipped)] for its resident ("*": everyone).
EVENT_EDITS: dict[str, list[tuple[str, int | None]]] = {
    "sick_day": [("leave", None), ("back", None)], "day_off": [("leave", None), ("back", None)],
    "late_return": [("back", 120)], "early_start": [("wake", -60), ("leave", -60)],
    "late_night": [("bed", 90)], "guests": [("*dinner", 45), ("*after_dinner", 45), ("*dishes", 45)]}
LATEST_BED = 23 * 60 + 59 - JITTER_MIN
#: Hobbies whose residents put music on when they come home, and the speaker volume they like.
MUSICAL = ("jazz", "dancing", "podcasts", "yoga", "cooking", "painting", "pottery", "knitting")
VOLUME = 120
#: Act names and how a question phrases them.
ACT_PHRASES = {"wake": "got up", "breakfast": "gone to breakfast", "leave": "left home",
               "back": "come home", "dinner": "gone to dinner", "dishes": "started the dishwasher",
               "bed": "gone to bed"}


@dataclass(frozen=True)
class Act:
    time: datetime
    resident: str
    name: str


def _clock(day: date, hhmm: str, minutes: int = 0) -> datetime:
    h, m = map(int, hhmm.split(":"))
    return datetime(day.year, day.month, day.day, h, m) + timedelta(minutes=minutes)


class HouseholdBackend:
    """The backend an agent is given: every device call goes to `backend` (the household's home
    in process, or served over Matter: scenarios/over_matter.py), and `household` is there for
    the reference solver's privileged counterfactual replay and day lived ahead, which no tool
    offers (the household tools get their household from `tools.household_tools`, not here)."""

    def __init__(self, household: Household, backend: Any):
        self.household = household
        self._backend = backend

    def __getattr__(self, name: str) -> Any:   # the Backend operations are the wrapped backend's
        return getattr(self._backend, name)


class Household:
    """Residents in a home, simulated in virtual time, with the memory of it."""

    def __init__(self, home: Home, residents: list[ResidentSpec], seed: int = 0,
                 household: HouseholdSpec | None = None):
        self.home = home
        self.residents = {r.id: r for r in residents}
        self.seed = seed
        self.household = household
        self.kitchen = self._room_of_kind(KITCHENS)
        self.lounge = self._room_of_kind(LOUNGES)
        #: The life events' changes to the acts (edits like the counterfactual ones, never replaced).
        self.life_edits = self._life_edits()
        self.backend = TwinBackend(home)   # the residents' own acts, in process
        self.memory: list[dict[str, Any]] = []
        first_room = next(iter(home.rooms))
        self.where: dict[str, str] = {r.id: r.bedroom or first_room for r in residents}
        #: Counterfactual changes in force: {"kind": "shift"|"skip"|"temperature", ...}.
        self.edits: list[dict[str, Any]] = []
        #: Midnight forks, by day: where counterfactual replays start.
        self.checkpoints: dict[date, Household] = {}
        #: Replays from this household as a checkpoint, by (edit, until): a replay is determined
        #: by its checkpoint, edit and end, so the generator, validator and reference share one.
        self.replays: dict[tuple[str, str], Household] = {}
        self._stream = ChangeStream(home)
        self._sub = self._stream.subscribe(ROOM_SAMPLE_S)
        self._take(None)   # the starting values are not news

    # ---- building ------------------------------------------------------------------
    @classmethod
    def from_spec(cls, spec: HomeSpec, seed: int | None = None, source: str = "<spec>") -> Household:
        home = Home.from_spec(spec, seed, source)
        return cls(home, list(spec.residents), home.seed, spec.household)

    @classmethod
    def load(cls, path: str | Path, seed: int | None = None) -> Household:
        """A household from a home file with `residents:`; errors are UserFileError."""
        return cls.from_spec(parse_file(path), seed, str(path))

    def fork(self) -> Household:
        """An independent copy that continues exactly as this household would."""
        twin = Household.__new__(Household)
        twin.home = self.home.fork()
        twin.residents = self.residents
        twin.seed = self.seed
        twin.household, twin.kitchen, twin.lounge = self.household, self.kitchen, self.lounge
        twin.life_edits = self.life_edits
        twin.backend = TwinBackend(twin.home)
        twin.memory = list(self.memory)       # records are never mutated: share them
        twin.where = dict(self.where)
        twin.edits = copy.deepcopy(self.edits)
        twin.checkpoints = dict(self.checkpoints)   # never run on: replays fork them
        twin.replays = {}
        twin._stream = ChangeStream(twin.home)
        twin._sub = twin._stream.subscribe(ROOM_SAMPLE_S)
        # The subscriber's memory of what it last sampled, so the copy reports what this would.
        for name in ("_sampled", "_next_sample", "_samples", "rooms_dirty"):
            setattr(twin._sub, name, copy.copy(getattr(self._sub, name)))
        return twin

    def _room_of_kind(self, kinds: tuple[str, ...]) -> str:
        rooms = self.home.rooms
        for kind in kinds:
            for room_id, room in rooms.items():
                if room.kind == kind or (room.kind is None and room_id == kind):
                    return room_id
        return next(iter(rooms))

    def _life_edits(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for event in self.household.events if self.household else []:
            for act, minutes in EVENT_EDITS[event.kind]:
                who = list(self.residents) if act.startswith("*") else [event.resident]
                for rid in who:
                    edit = {"resident": rid, "act": act.lstrip("*"), "day": event.day.isoformat()}
                    if minutes is None:
                        out.append({**edit, "kind": "skip"})
                        continue
                    if act == "bed":   # late, but still before midnight: the day ends asleep
                        h, m = map(int, self.residents[rid].preferences.bed.split(":"))
                        minutes = max(0, min(minutes, LATEST_BED - (h * 60 + m)))
                    out.append({**edit, "kind": "shift", "minutes": minutes})
        return out

    # ---- the residents' days ---------------------------------------------------------
    def jitter(self, day: date, resident: str, act: str) -> int:
        return random.Random(f"{self.seed}/{day.isoformat()}/{resident}/{act}").randint(-JITTER_MIN, JITTER_MIN)

    def acts(self, day: date) -> list[Act]:
        """The residents' acts of one day, in the order they happen (edits applied)."""
        out: list[Act] = []
        order = list(self.residents)
        dinner_j = self.jitter(day, "*", "dinner")
        for rid, person in self.residents.items():
            p = person.preferences
            times = {"wake": _clock(day, p.wake, self.jitter(day, rid, "wake")),
                     "bed": _clock(day, p.bed, self.jitter(day, rid, "bed"))}
            times["breakfast"] = times["wake"] + timedelta(minutes=25 + abs(self.jitter(day, rid, "breakfast")) // 2)
            if p.leave and p.back:
                times["leave"] = _clock(day, p.leave, self.jitter(day, rid, "leave"))
                times["back"] = _clock(day, p.back, self.jitter(day, rid, "back"))
            else:
                times["settle"] = times["breakfast"] + timedelta(minutes=30)
            times["dinner"] = _clock(day, DINNER, dinner_j + self.jitter(day, rid, "dinner") // 4)
            times["after_dinner"] = _clock(day, DINNER, dinner_j + AFTER_DINNER_MIN)
            if rid == self.cook():
                times["dishes"] = times["after_dinner"] + timedelta(minutes=5)
            for edit in self.life_edits + self.edits:
                if edit["resident"] != rid or edit.get("day") not in (None, day.isoformat()):
                    continue
                if edit["kind"] == "shift" and edit["act"] in times:
                    times[edit["act"]] += timedelta(minutes=edit["minutes"])
                elif edit["kind"] == "skip":
                    times.pop(edit["act"], None)
            out += [Act(t, rid, name) for name, t in times.items()]
        rank = {name: i for i, name in enumerate(("wake", "breakfast", "settle", "leave", "back", "dinner",
                                                  "after_dinner", "dishes", "bed"))}
        return sorted(out, key=lambda a: (a.time, rank[a.name], order.index(a.resident)))

    def cook(self) -> str:
        """Who starts the dishwasher: the first resident who likes cooking, else the oldest."""
        cooks = [r.id for r in self.residents.values() if any("cook" in h.lower() for h in r.preferences.hobbies)]
        return cooks[0] if cooks else max(self.residents.values(), key=lambda r: r.age).id

    def preference(self, rid: str, name: str) -> Any:
        for edit in self.edits:
            if edit["kind"] == name and edit["resident"] == rid:
                return edit["value"]
        return getattr(self.residents[rid].preferences, name)

    def simulate(self, until: datetime | str) -> None:
        """Live every act before `until`, then run the clock to it; a checkpoint at each midnight."""
        end = datetime.strptime(until, TIME_FORMAT) if isinstance(until, str) else until
        if end < self.home.now:
            raise ValueError(f"{end} is before the household's time {self.home.now}")
        while self.home.now < end:
            day = self.home.now.date()
            if self.home.now == datetime.combine(day, datetime.min.time()) and day not in self.checkpoints:
                self.checkpoints[day] = self.fork()
                for event in self.household.events if self.household else []:
                    if event.day == day:
                        self._record("life", event.resident, None, None, {"event": event.kind}, event.text)
            midnight = datetime.combine(day + timedelta(days=1), datetime.min.time())
            stop = min(end, midnight)
            for act in self.acts(day):
                if self.home.now <= act.time < stop:
                    self._run_to(act.time)
                    self._do(act)
            self._run_to(stop)

    def _run_to(self, when: datetime) -> None:
        """Run the clock to `when`, taking the room samples on the hour on the way."""
        while self.home.now < when:
            hour = (self.home.now + timedelta(hours=1)).replace(minute=0, second=0, microsecond=0)
            self.home.run_until(min(hour, when))
            self._take(None)

    def _do(self, act: Act) -> None:
        rid, name = act.resident, act.name
        here = self.where[rid]
        if name == "wake" and here != AWAY:
            self._light(rid, here, on=True)
            self._each(rid, here, "window_covering", "open")
        elif name == "breakfast" and here != AWAY:
            self._move(rid, self.kitchen)
        elif name in ("settle", "after_dinner") and here != AWAY:
            self._move(rid, self.lounge)
        elif name == "leave" and here != AWAY:
            self._move(rid, AWAY)
        elif name == "back" and here == AWAY:
            self._move(rid, self.lounge)
        elif name == "dinner" and here != AWAY:
            self._move(rid, self.kitchen)
        elif name == "dishes" and here != AWAY:
            for room in self.home.rooms:   # wherever the home has its dishwasher
                self._each(rid, room, "dishwasher", "start")
        elif name == "bed":
            bedroom = self.residents[rid].bedroom or next(iter(self.home.rooms))
            self._move(rid, bedroom)
            # Lights out to sleep (whoever is already asleep there is in the dark too).
            self._light(rid, bedroom, on=False)
            self._each(rid, bedroom, "window_covering", "close")
            for room in self.home.rooms:   # music off for the night
                self._each(rid, room, "speaker", "off", only_if_on=True)

    # ---- moving and acting ---------------------------------------------------------------
    def _move(self, rid: str, room: str) -> None:
        old = self.where[rid]
        if room not in self.home.rooms and room != AWAY:
            room = next(iter(self.home.rooms))
        if old == room:
            return
        self.where[rid] = room
        name = self.residents[rid].name
        text = (f"{name} left home" if room == AWAY else f"{name} came home to {room}" if old == AWAY
                else f"{name} moved from {old} to {room}")
        self._record("presence", rid, room if room != AWAY else old, None, {"from": old, "to": room}, text)
        if old != AWAY and not any(self.where[o] == old for o in self.residents):
            self._light(rid, old, on=False)
            for kind in ("air_conditioner", "tv"):
                self._each(rid, old, kind, "off", only_if_on=True)
        if room == AWAY:
            return
        self._light(rid, room, on=True)
        if old == AWAY:
            self._arrive(rid, room)
        if self.home.now.hour >= 17:
            pref = self.preference(rid, "temperature")
            if self.home.rooms[room].temperature > pref + 0.5:
                self._each(rid, room, "air_conditioner", "cool", slots={"pct": 60}, only_if_off=True)
                self._each(rid, room, "air_conditioner", "setpoint", slots={"deg": pref})
            if any("film" in h.lower() or "tv" in h.lower() for h in self.residents[rid].preferences.hobbies):
                self._each(rid, room, "tv", "on", only_if_off=True)

    def _arrive(self, rid: str, room: str) -> None:
        """Coming home: the home's thermostats to the resident's temperature (heat when the room is
        colder, else cool), and music on for those who like it."""
        pref = self.preference(rid, "temperature")
        heat = self.home.rooms[room].temperature < pref
        for device in sorted(self.home.devices):
            kind = self.home.device_info(device)["type"]
            if kind == "thermostat":
                setpoint = "OccupiedHeatingSetpoint" if heat else "OccupiedCoolingSetpoint"
                for attribute, value in (("SystemMode", 4 if heat else 3), (setpoint, round(pref * 100))):
                    self._call(rid, "write_attribute", A.write(device, "Thermostat", attribute, value)["args"])
        if any(h in MUSICAL for h in self.residents[rid].preferences.hobbies):
            speakers = [d for d in sorted(self.home.devices) if self.home.device_info(d)["type"] == "speaker"]
            for call in A.calls(speakers[0], "tv", "volume", {"level": VOLUME}) if speakers else []:
                self._call(rid, call["tool"], call["args"])

    def _light(self, rid: str, room: str, on: bool) -> None:
        level = self.preference(rid, "light_level")
        for kind in LIGHTS:
            action = ("level" if kind == "dimmable_light" else "on") if on else "off"
            self._each(rid, room, kind, action, slots={"level": level},
                       only_if_off=on and kind == "on_off_light", only_if_on=not on)

    def _each(self, rid: str, room: str, type_key: str, action: str, slots: dict[str, Any] | None = None,
              only_if_on: bool = False, only_if_off: bool = False) -> None:
        for device in self.home.devices_in(room):
            if self.home.device_info(device.id)["type"] != type_key:
                continue
            if only_if_on or only_if_off:
                on = self.backend.read_attribute(device.id, None, "OnOff", "OnOff")["value"]
                if (only_if_on and not on) or (only_if_off and on):
                    continue
            for call in A.calls(device.id, type_key, action, slots or {}):
                self._call(rid, call["tool"], call["args"])

    def _call(self, rid: str, tool: str, args: dict[str, Any]) -> None:
        session = Session()
        result = call_tool(self.backend, tool, args, session)
        device = args["device.id"]
        what = f"{args['cluster.id']}.{args.get('command.id') or args.get('attribute.id')}"
        value = args.get("value", args.get("args"))
        shown = "" if value in (None, {}) else f" {value}"
        outcome = "ok" if result["ok"] else f"failed: {result['error']['code']}"
        self._record("action", rid, self.home.room_of(device), device,
                     {"tool": tool, "feature": f"{device}.{what}", "value": value, "ok": result["ok"],
                      "args": args},
                     f"{self.residents[rid].name} {tool} {what}{shown} on {device} "
                     f"({self.home.device_info(device)['label']}): {outcome}")
        self._take(rid)

    # ---- memory ------------------------------------------------------------------------
    def _record(self, kind: str, actor: str | None, room: str | None, device: str | None,
                detail: dict[str, Any], text: str) -> None:
        self.memory.append({"time": self.home.clock.format(), "kind": kind, "actor": actor, "room": room,
                            "device": device, "detail": detail, "text": text})

    def _take(self, actor: str | None) -> None:
        """What the change stream saw since the last take, into memory (`actor` caused it)."""
        batch = self._sub.take(self.home.clock.tick / 10)
        if batch is None:
            return
        by = f" (by {self.residents[actor].name})" if actor else ""
        for change in batch.changes:
            kind = change.key[0]
            if kind == "room":
                _, room, quantity = change.key
                self._record("room", None, room, None, {"quantity": quantity, "value": change.value},
                             f"{room} {quantity} {change.value} {ROOM_UNITS[quantity]}")
                continue
            if kind == "message":   # news from outside the home (a lab session): kept as it came
                self._record("event", None, None, None, {"topic": change.key[1], "value": change.value},
                             f"{change.key[1]}: {change.value}")
                continue
            _, device, endpoint, cluster, name = change.key
            if cluster in QUIET_CLUSTERS:
                continue
            self._record("change" if kind == "attribute" else "event", actor, self.home.room_of(device), device,
                         {"endpoint": endpoint, "cluster": cluster, "name": name, "value": change.value},
                         f"{device} {cluster}.{name} = {change.value}{by}")

    # ---- what the household tools read ------------------------------------------------
    def about(self) -> dict[str, Any]:
        """The household's kind and pets (get_household_members gives them with the members)."""
        if self.household is None:
            return {}
        return {"kind": self.household.kind,
                "pets": [p.model_dump(exclude_none=True) for p in self.household.pets]}

    def members(self) -> list[dict[str, Any]]:
        """The members as the tools give them (a counterfactual's preferred temperature in force)."""
        return [{"id": r.id, "name": r.name, "age": r.age, "role": r.role, "persona": r.persona,
                 "bedroom": r.bedroom, "preferences": {**r.preferences.model_dump(exclude_none=True),
                                                       "temperature": self.preference(r.id, "temperature")},
                 "location": self.where[r.id]} for r in self.residents.values()]

    def present(self, room: str) -> list[str]:
        return [rid for rid, where in self.where.items() if where == room]

    def counterfactual(self, day: date | str, edit: dict[str, Any], until: datetime | str) -> Household:
        """Replay from `day`'s midnight checkpoint with `edit` in force, to `until`. The replay is
        kept on the checkpoint (forks share it): read it, or fork it to run on."""
        key = date.fromisoformat(day) if isinstance(day, str) else day
        if key not in self.checkpoints:
            raise ValueError(f"no checkpoint at {key}; checkpoints: {', '.join(map(str, sorted(self.checkpoints)))}")
        checkpoint = self.checkpoints[key]
        ident = (json.dumps(edit, sort_keys=True), str(until))
        if ident not in checkpoint.replays:
            replay = checkpoint.fork()
            replay.edits.append(dict(edit))
            replay.simulate(until)
            checkpoint.replays[ident] = replay
        return checkpoint.replays[ident]
