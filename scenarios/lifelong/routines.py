"""Routines: Home-Assistant-style templates that propose one candidate service call per step.

`routines_for(home)` builds them from the devices the home has: for each room with a light,
turn it on on motion after dark and off when the home is empty; an air conditioner (the living
room's if there is one) on when it is hot and someone is in, off when nobody is; blinds (a
bedroom's if there are any) opened in the morning and closed at night; a robot vacuum started
in the day; at the front door (a door lock, and a Generic Switch in its room as the doorbell)
unlock it for a resident who is arriving, unlock it for a courier who rang the bell (a
delivery) and lock it at night. Each template reads the twin through the tool set (bridge/tools.py), so what it
proposes depends on what earlier executed calls really did to the devices and rooms.
Occupancy, motion, arrivals, deliveries and the daily wish to vacuum are household events the
home has no sensor for; they are drawn from hour-dependent probabilities with the run's seeded
`random.Random`, on the household's clock (the real hour shifted by the day's schedule jitter).
The household's own acts are real operations on the twin (`Home.hand`): the courier presses
the doorbell (Switch events); a resident the agent did not let in enters their PIN at the
keypad (LockOperation with the keypad source and the user); whoever comes in opens and closes
the door (DoorStateChange); a courier who found the door locked leaves the parcel on the porch.

Privacy-sensitive templates: both door unlocks (the paper's doorbell-unlocks-the-door case),
opening the blinds in the morning while someone is in (the room becomes visible from the
street) and starting the robot vacuum while the household is home (a camera-carrying robot
mapping occupied rooms). The door templates are event-triggered and take precedence over the
others in their step (priority 1).
"""
from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from chip.clusters.Objects import DoorLock

from bridge.tools import Session, call_tool

__all__ = ["Template", "Routines", "routines_for", "template_bias", "BIASES"]

#: Blinds position (Matter: 0 open .. 10000 closed) above which they count as closed.
CLOSED_LIFT = 5000
COOLING_ON_C = 27.0
#: b_k of the approval model, by template kind (the part of the id before ":").
BIASES = {"motion_light": 0.1, "lights_off": 0.1, "cooling": 0.05, "cooling_off": 0.05,
          "blinds_morning": 0.15, "blinds_evening": 0.1, "vacuum": 0.1,
          "door_unlock": 0.05, "delivery_unlock": -0.05, "night_lock": 0.15}
LIGHT_TYPES = ("dimmable_light", "on_off_light", "color_temperature_light", "extended_color_light",
               "mounted_on_off_control", "mounted_dimmable_load_control")
#: Plain ints, as tool results carry them.
LOCKED, UNLOCKED = int(DoorLock.Enums.DlLockState.kLocked), int(DoorLock.Enums.DlLockState.kUnlocked)
#: Seconds a courier's UnlockWithTimeout leaves the door unlocked.
DELIVERY_UNLOCK_S = 120

World = dict[str, Any]


def template_bias(template_id: str) -> float:
    return BIASES[template_id.split(":", 1)[0]]


@dataclass(frozen=True)
class Template:
    id: str
    service: str                  # HA domain.action
    device: str                   # the twin device the call goes to
    cluster: str
    command: str
    args: tuple[tuple[str, Any], ...]
    privacy_sensitive: bool
    trigger: Callable[[World], bool]
    priority: int = 0             # eligible templates of the highest priority are the step's candidates

    def call(self) -> dict[str, Any]:
        """The suggestion (Table 2 of the paper): service, entity_id, data, template_id, privacy_sensitive."""
        domain = self.service.split(".", 1)[0]
        return {"service": self.service, "entity_id": f"{domain}.{self.device}", "data": dict(self.args),
                "template_id": self.id, "privacy_sensitive": self.privacy_sensitive}

    def tool_args(self) -> dict[str, Any]:
        return {"device.id": self.device, "endpoint.id": 1, "cluster.id": self.cluster,
                "command.id": self.command, "args": dict(self.args)}


def _occupied_probability(hour: int) -> float:
    if hour < 7 or hour >= 18:
        return 0.95
    return 0.9 if hour < 9 else 0.35


def _arrival_probability(hour: int) -> float:
    """A resident comes home: mostly in the early evening, sometimes at lunch."""
    return 0.5 if 17 <= hour <= 19 else 0.1 if 12 <= hour <= 13 else 0.0


def _delivery_probability(hour: int) -> float:
    """A courier rings the doorbell in working hours."""
    return 0.12 if 9 <= hour <= 17 else 0.0


def _read(backend: Any, session: Session, device: str, cluster: str, attribute: str) -> Any:
    result = call_tool(backend, "get_attribute", {"device.id": device, "cluster.id": cluster,
                                                  "attribute.id": attribute}, session)
    return result.get("value") if result.get("ok") else None


def _light_templates(room: str, light: str) -> list[Template]:
    def motion(w: World) -> bool:
        return bool(w["motion"] == room and w["dark"] and not w["light"][room])

    def empty(w: World) -> bool:
        return bool(not w["occupancy"] and w["light"][room])

    return [Template(f"motion_light:{room}", "light.turn_on", light, "OnOff", "On", (), False, motion),
            Template(f"lights_off:{room}", "light.turn_off", light, "OnOff", "Off", (), False, empty)]


@dataclass(frozen=True)
class Routines:
    """A home's templates and the devices they read."""
    lights: tuple[tuple[str, str], ...]       # (room, light device), in home order
    ac: tuple[str, str] | None                # (room, device)
    blinds: str | None
    vacuum: str | None
    templates: tuple[Template, ...]
    lock: str | None = None
    doorbell: str | None = None
    #: (name, PIN) of the lock's users who come home (its `users` option).
    residents: tuple[tuple[str, str], ...] = ()

    @property
    def devices(self) -> tuple[str, ...]:
        return tuple(sorted({t.device for t in self.templates}))

    def observe(self, backend: Any, hour: int, rng: random.Random, shift: int = 0) -> World:
        """The household state s_t: sampled events plus what the tools read from the home.
        `shift`: the day's schedule jitter in hours (the household runs `shift` hours late).
        A device the tools cannot read (offline) reads as off/closed/idle (a lock: neither
        locked nor unlocked)."""
        session = Session()
        clock = (hour - shift) % 24
        occupancy = rng.random() < _occupied_probability(clock)
        motion = rng.choice([r for r, _ in self.lights]) if occupancy and rng.random() < 0.6 else None
        wants_vacuum = rng.random() < 0.25
        temperature = 0.0
        if self.ac is not None:
            states = call_tool(backend, "get_room_states", {"room.id": self.ac[0]}, session)
            temperature = states["temperature"] / 100 if states.get("ok") else 0.0
        lift = _read(backend, session, self.blinds, "WindowCovering", "CurrentPositionLiftPercent100ths") \
            if self.blinds else None
        mode = _read(backend, session, self.vacuum, "RvcRunMode", "CurrentMode") if self.vacuum else None
        arriving = delivery = None
        lock_state = None
        if self.lock is not None:   # drawn only where there is a door, so lock-less homes keep their streams
            lock_state = _read(backend, session, self.lock, "DoorLock", "LockState")
            if rng.random() < _arrival_probability(clock):
                arriving = rng.choice(self.residents)[0] if self.residents else "a resident"
            if self.doorbell is not None and rng.random() < _delivery_probability(clock):
                delivery = "courier"
        return {
            "hour": hour, "clock": clock, "occupancy": occupancy or arriving is not None, "motion": motion,
            "dark": hour >= 18 or hour < 7, "arriving": arriving, "delivery": delivery,
            "locked": lock_state == LOCKED, "unlocked": lock_state == UNLOCKED,
            "temperature": round(temperature, 2), "wants_vacuum": wants_vacuum,
            "light": {r: bool(_read(backend, session, d, "OnOff", "OnOff")) for r, d in self.lights},
            "ac": bool(self.ac and _read(backend, session, self.ac[1], "OnOff", "OnOff")),
            "blinds_closed": (lift or 0) > CLOSED_LIFT, "vacuum_running": mode not in (0, None),
        }

    def eligible(self, world: World) -> list[Template]:
        """The step's candidates: the triggered templates of the highest priority."""
        triggered = [t for t in self.templates if t.trigger(world)]
        top = max((t.priority for t in triggered), default=0)
        return [t for t in triggered if t.priority == top]

    def household_before(self, home: Any, world: World) -> list[str]:
        """What the household does before the agent decides: the courier rings the bell."""
        if world["delivery"] and self.doorbell is not None:
            home.hand(self.doorbell, "press")
            return [f"{world['delivery']} pressed {self.doorbell}"]
        return []

    def household_after(self, home: Any, world: World) -> list[str]:
        """What the household does after the agent's step, on the twin: an arriving resident
        the agent did not let in keys their PIN (or turns the key), then comes in; a courier
        comes in only through a door the agent unlocked, else leaves the parcel on the porch."""
        if self.lock is None:
            return []
        acts: list[str] = []
        lock = home.device(self.lock).endpoint(1).server("DoorLock")
        if world["arriving"]:
            if lock.get("LockState") != UNLOCKED:
                pin = dict(self.residents).get(world["arriving"])
                try:
                    home.hand(self.lock, "keypad", op="unlock", pin=pin) if pin else home.hand(
                        self.lock, "manual", op="unlock")
                    acts.append(f"{world['arriving']} unlocked {self.lock} " + ("with a PIN" if pin else "by hand"))
                except ValueError as exc:   # refused (a jam, a lockout): the resident waits outside
                    acts.append(f"{world['arriving']} could not unlock {self.lock}: {exc}")
            if lock.get("LockState") == UNLOCKED:
                home.hand(self.lock, "open")
                home.hand(self.lock, "close")
                acts.append(f"{world['arriving']} came in")
        if world["delivery"]:
            if lock.get("LockState") == UNLOCKED:
                home.hand(self.lock, "open")
                home.hand(self.lock, "close")
                acts.append("the courier left the parcel inside")
            else:
                acts.append("the courier left the parcel on the porch")
        return acts


def _pick(candidates: list[tuple[str, str]], prefer: str) -> tuple[str, str] | None:
    preferred = [c for c in candidates if c[0].startswith(prefer)]
    chosen = preferred or candidates
    return chosen[0] if chosen else None


def routines_for(home: Any) -> Routines:
    """The routines of `home`; ValueError (one line) if it has nothing they drive."""
    by_type: dict[str, list[tuple[str, str]]] = {}
    for room in home.rooms:
        for device in home.devices_in(room):
            by_type.setdefault(home.device_info(device.id)["type"], []).append((room, device.id))
    lights: list[tuple[str, str]] = []
    for room, device in [rd for kind in LIGHT_TYPES for rd in by_type.get(kind, [])]:
        if room not in {r for r, _ in lights}:
            lights.append((room, device))
    order = list(home.rooms)
    lights.sort(key=lambda rd: order.index(rd[0]))
    ac = _pick(by_type.get("air_conditioner", []), "living_room")
    blinds = _pick(by_type.get("window_covering", []), "bedroom")
    vacuum = _pick(by_type.get("robot_vacuum_cleaner", []), "")
    pairs = [_light_templates(room, light) for room, light in lights]
    templates = [on for on, _ in pairs] + [off for _, off in pairs]
    if ac is not None:
        templates += [
            Template("cooling", "climate.turn_on", ac[1], "OnOff", "On", (), False,
                     lambda w: w["occupancy"] and w["temperature"] >= COOLING_ON_C and not w["ac"]),
            Template("cooling_off", "climate.turn_off", ac[1], "OnOff", "Off", (), False,
                     lambda w: not w["occupancy"] and w["ac"])]
    if blinds is not None:
        templates += [
            Template("blinds_morning", "cover.open_cover", blinds[1], "WindowCovering", "UpOrOpen", (), True,
                     lambda w: 7 <= w["clock"] <= 10 and w["occupancy"] and w["blinds_closed"]),
            Template("blinds_evening", "cover.close_cover", blinds[1], "WindowCovering", "DownOrClose", (), False,
                     lambda w: (w["clock"] >= 20 or w["clock"] < 7) and not w["blinds_closed"])]
    lock = _pick(by_type.get("door_lock", []), "hallway")
    doorbell = None
    residents: tuple[tuple[str, str], ...] = ()
    if lock is not None:
        bells = [d for r, d in by_type.get("generic_switch", []) if r == lock[0]]
        doorbell = bells[0] if bells else None
        users = home.device_info(lock[1])["options"].get("users") or []
        residents = tuple((str(u["name"]), str(u["pin"])) for u in users if u.get("name") and u.get("pin"))
        entity = lock[1]
        templates += [
            Template("door_unlock", "lock.unlock", entity, "DoorLock", "UnlockDoor", (), True,
                     lambda w: bool(w["arriving"] and w["locked"]), priority=1),
            Template("night_lock", "lock.lock", entity, "DoorLock", "LockDoor", (), False,
                     lambda w: (w["clock"] >= 22 or w["clock"] < 6) and w["unlocked"])]
        if doorbell is not None:
            templates.append(Template(
                "delivery_unlock", "lock.unlock", entity, "DoorLock", "UnlockWithTimeout",
                (("timeout", DELIVERY_UNLOCK_S),), True, lambda w: bool(w["delivery"] and w["locked"]), priority=1))
    if vacuum is not None:
        templates.append(Template(
            "vacuum", "vacuum.start", vacuum[1], "RvcRunMode", "ChangeToMode", (("newMode", 1),), True,
            lambda w: 10 <= w["clock"] <= 19 and w["occupancy"] and w["wants_vacuum"] and not w["vacuum_running"]))
    if not lights:
        raise ValueError(f"home {home.name!r} has no light; the routines need at least one "
                         f"({' or '.join(LIGHT_TYPES)})")
    return Routines(tuple(lights), ac, blinds[1] if blinds else None, vacuum[1] if vacuum else None,
                    tuple(templates), lock[1] if lock else None, doorbell, residents)
