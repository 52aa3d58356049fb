"""Routines: Home-Assistant-style templates that propose one candidate service call per step.

Each template reads the twin home through the tool set (bridge/tools.py), so what it proposes
depends on what earlier executed calls really did to the devices and rooms. Occupancy, motion
and the daily vacuum wish are household events the home has no sensor for; they are drawn
from hour-dependent probabilities with the run's seeded `random.Random`.

Privacy-sensitive templates (the default home has no door lock, so the paper's
doorbell-unlocks-the-door case has no device here): opening the bedroom blinds while someone
is in (the bedroom becomes visible from the street) and starting the robot vacuum while the
household is home (a camera-carrying robot mapping occupied rooms).
"""
from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bridge.tools import Session, call_tool

__all__ = ["Template", "TEMPLATES", "observe_world", "eligible", "ROUTINE_DEVICES"]

LIGHT_ROOMS = ("living_room", "kitchen", "bedroom", "bathroom", "utility_room")
#: Blinds position (Matter: 0 open .. 10000 closed) above which they count as closed.
CLOSED_LIFT = 5000
COOLING_ON_C = 27.0


@dataclass(frozen=True)
class Template:
    id: str
    service: str                  # HA domain.action
    device: str                   # the twin device the call goes to
    cluster: str
    command: str
    args: tuple[tuple[str, Any], ...]
    privacy_sensitive: bool
    bias: float                   # b_k of the approval model
    trigger: Callable[[dict[str, Any]], bool]

    def call(self) -> dict[str, Any]:
        """The suggestion (Table 2 of the paper): service, entity_id, data, template_id, privacy_sensitive."""
        domain = self.service.split(".", 1)[0]
        return {"service": self.service, "entity_id": f"{domain}.{self.device}", "data": dict(self.args),
                "template_id": self.id, "privacy_sensitive": self.privacy_sensitive}

    def tool_args(self) -> dict[str, Any]:
        return {"device.id": self.device, "endpoint.id": 1, "cluster.id": self.cluster,
                "command.id": self.command, "args": dict(self.args)}


def _light(room: str, on: bool) -> Template:
    def motion(w: dict[str, Any]) -> bool:
        return bool(w["motion"] == room and w["dark"] and not w["light"][room])

    def empty(w: dict[str, Any]) -> bool:
        return bool(not w["occupancy"] and w["light"][room])

    if on:
        return Template(f"motion_light:{room}", "light.turn_on", f"{room}_light", "OnOff", "On", (), False, 0.1,
                        motion)
    return Template(f"lights_off:{room}", "light.turn_off", f"{room}_light", "OnOff", "Off", (), False, 0.1, empty)


TEMPLATES: tuple[Template, ...] = (
    *(_light(room, True) for room in LIGHT_ROOMS),
    *(_light(room, False) for room in LIGHT_ROOMS),
    Template("cooling", "climate.turn_on", "living_room_ac", "OnOff", "On", (), False, 0.05,
             lambda w: w["occupancy"] and w["temperature"] >= COOLING_ON_C and not w["ac"]),
    Template("cooling_off", "climate.turn_off", "living_room_ac", "OnOff", "Off", (), False, 0.05,
             lambda w: not w["occupancy"] and w["ac"]),
    Template("blinds_morning", "cover.open_cover", "bedroom_blinds", "WindowCovering", "UpOrOpen", (), True, 0.15,
             lambda w: 7 <= w["hour"] <= 10 and w["occupancy"] and w["blinds_closed"]),
    Template("blinds_evening", "cover.close_cover", "bedroom_blinds", "WindowCovering", "DownOrClose", (),
             False, 0.1, lambda w: (w["hour"] >= 20 or w["hour"] < 7) and not w["blinds_closed"]),
    Template("vacuum", "vacuum.start", "utility_room_vacuum", "RvcRunMode", "ChangeToMode",
             (("newMode", 1),), True, 0.1,
             lambda w: 10 <= w["hour"] <= 19 and w["occupancy"] and w["wants_vacuum"] and not w["vacuum_running"]),
)
ROUTINE_DEVICES: tuple[str, ...] = tuple(sorted({t.device for t in TEMPLATES}))


def _occupied_probability(hour: int) -> float:
    if hour < 7 or hour >= 18:
        return 0.95
    return 0.9 if hour < 9 else 0.35


def _read(backend: Any, session: Session, device: str, cluster: str, attribute: str) -> Any:
    result = call_tool(backend, "get_attribute", {"device.id": device, "cluster.id": cluster,
                                                  "attribute.id": attribute}, session)
    return result.get("value") if result.get("ok") else None


def observe_world(backend: Any, hour: int, rng: random.Random) -> dict[str, Any]:
    """The household state s_t: sampled events plus what the tools read from the home.
    A device the tools cannot read (offline) reads as off/closed/idle."""
    session = Session()
    occupancy = rng.random() < _occupied_probability(hour)
    motion = rng.choice(LIGHT_ROOMS) if occupancy and rng.random() < 0.6 else None
    wants_vacuum = rng.random() < 0.25
    states = call_tool(backend, "get_room_states", {"room.id": "living_room"}, session)
    temperature = states["temperature"] / 100 if states.get("ok") else 0.0
    return {
        "hour": hour, "occupancy": occupancy, "motion": motion, "dark": hour >= 18 or hour < 7,
        "temperature": round(temperature, 2), "wants_vacuum": wants_vacuum,
        "light": {r: bool(_read(backend, session, f"{r}_light", "OnOff", "OnOff")) for r in LIGHT_ROOMS},
        "ac": bool(_read(backend, session, "living_room_ac", "OnOff", "OnOff")),
        "blinds_closed": (_read(backend, session, "bedroom_blinds", "WindowCovering",
                                "CurrentPositionLiftPercent100ths") or 0) > CLOSED_LIFT,
        "vacuum_running": _read(backend, session, "utility_room_vacuum", "RvcRunMode", "CurrentMode") not in (0, None),
    }


def eligible(world: dict[str, Any]) -> list[Template]:
    return [t for t in TEMPLATES if t.trigger(world)]
