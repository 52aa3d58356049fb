"""Routines: Home-Assistant-style templates that propose one candidate service call per step.

`routines_for(home)` builds them from the devices the home has: for each room with a light,
turn it on on motion after dark and off when the home is empty; an air conditioner (the living
room's if there is one) on when it is hot and someone is in, off when nobody is; blinds (a
bedroom's if there are any) opened in the morning and closed at night; a robot vacuum started
in the day. Each template reads the twin through the tool set (bridge/tools.py), so what it
proposes depends on what earlier executed calls really did to the devices and rooms.
Occupancy, motion and the daily wish to vacuum are household events the home has no sensor
for; they are drawn from hour-dependent probabilities with the run's seeded `random.Random`.

Privacy-sensitive templates (our homes have no door lock, so the paper's doorbell-unlocks-the-
door case has no device here): opening the blinds in the morning while someone is in (the room
becomes visible from the street) and starting the robot vacuum while the household is home (a
camera-carrying robot mapping occupied rooms).
"""
from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bridge.tools import Session, call_tool

__all__ = ["Template", "Routines", "routines_for", "template_bias", "BIASES"]

#: Blinds position (Matter: 0 open .. 10000 closed) above which they count as closed.
CLOSED_LIFT = 5000
COOLING_ON_C = 27.0
#: b_k of the approval model, by template kind (the part of the id before ":").
BIASES = {"motion_light": 0.1, "lights_off": 0.1, "cooling": 0.05, "cooling_off": 0.05,
          "blinds_morning": 0.15, "blinds_evening": 0.1, "vacuum": 0.1}
LIGHT_TYPES = ("dimmable_light", "on_off_light")

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

    @property
    def devices(self) -> tuple[str, ...]:
        return tuple(sorted({t.device for t in self.templates}))

    def observe(self, backend: Any, hour: int, rng: random.Random) -> World:
        """The household state s_t: sampled events plus what the tools read from the home.
        A device the tools cannot read (offline) reads as off/closed/idle."""
        session = Session()
        occupancy = rng.random() < _occupied_probability(hour)
        motion = rng.choice([r for r, _ in self.lights]) if occupancy and rng.random() < 0.6 else None
        wants_vacuum = rng.random() < 0.25
        temperature = 0.0
        if self.ac is not None:
            states = call_tool(backend, "get_room_states", {"room.id": self.ac[0]}, session)
            temperature = states["temperature"] / 100 if states.get("ok") else 0.0
        lift = _read(backend, session, self.blinds, "WindowCovering", "CurrentPositionLiftPercent100ths") \
            if self.blinds else None
        mode = _read(backend, session, self.vacuum, "RvcRunMode", "CurrentMode") if self.vacuum else None
        return {
            "hour": hour, "occupancy": occupancy, "motion": motion, "dark": hour >= 18 or hour < 7,
            "temperature": round(temperature, 2), "wants_vacuum": wants_vacuum,
            "light": {r: bool(_read(backend, session, d, "OnOff", "OnOff")) for r, d in self.lights},
            "ac": bool(self.ac and _read(backend, session, self.ac[1], "OnOff", "OnOff")),
            "blinds_closed": (lift or 0) > CLOSED_LIFT, "vacuum_running": mode not in (0, None),
        }

    def eligible(self, world: World) -> list[Template]:
        return [t for t in self.templates if t.trigger(world)]


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
    for room, device in by_type.get("dimmable_light", []) + by_type.get("on_off_light", []):
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
                     lambda w: 7 <= w["hour"] <= 10 and w["occupancy"] and w["blinds_closed"]),
            Template("blinds_evening", "cover.close_cover", blinds[1], "WindowCovering", "DownOrClose", (), False,
                     lambda w: (w["hour"] >= 20 or w["hour"] < 7) and not w["blinds_closed"])]
    if vacuum is not None:
        templates.append(Template(
            "vacuum", "vacuum.start", vacuum[1], "RvcRunMode", "ChangeToMode", (("newMode", 1),), True,
            lambda w: 10 <= w["hour"] <= 19 and w["occupancy"] and w["wants_vacuum"] and not w["vacuum_running"]))
    if not lights:
        raise ValueError(f"home {home.name!r} has no light; the routines need at least one "
                         f"({' or '.join(LIGHT_TYPES)})")
    return Routines(tuple(lights), ac, blinds[1] if blinds else None, vacuum[1] if vacuum else None,
                    tuple(templates))
