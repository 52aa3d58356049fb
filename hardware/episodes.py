"""A lab session as a list of benchmark episodes that fit the hardware.

The lab file's `session.episodes` names episodes (ids from the committed set, or from
`file`). Each episode runs on a mixed home: the episode's own home (built as the benchmark
builds it) is the twin side, and the bench's real devices play the ids they are bound to
(`bind: living_room_light`), added ones join their rooms. An episode **fits the hardware**
when that mixture exists and can be scored:

- every bound device's id is in the episode's home, with the type the real product plays
  in the lab's home (a real dimmable light cannot play an episode's air conditioner);
- every added device's room is in the episode's home and its id is not taken there;
  every sensor binding's room is there too;
- it is not a scheduling episode (QT4): their goals fall minutes or hours ahead in virtual
  time, and a lab runs on the wall clock.

The others are dropped, each with its reason (in the summary and the recording). Each kept
episode is one run of the session's SQLite file (its start snapshot is the episode's home,
so `twin lab replay` works per episode), with its setup calls, the agent's calls and the
benchmark evaluator's result line (event `episode_score`).
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from hardware.controller import ManagedController
from hardware.labfile import Lab
from hardware.session import LabSession, load_twin_home
from scenarios.runner import make_agent, make_judge
from scenarios.simuhome.evaluate import build_home
from scenarios.simuhome.schema import DEFAULT_EPISODES, Episode, load_episodes
from twin.home import Home
from twin.schema import UserFileError


def lab_episodes(lab: Lab) -> list[Episode]:
    """The episodes the lab file names, in its order; an unknown id is a one-line error."""
    spec = lab.spec.session.episodes
    assert spec is not None
    path = lab.path(spec.file) if spec.file else DEFAULT_EPISODES
    try:
        by_id = {e.id: e for e in load_episodes(path)}
    except UserFileError as err:
        raise lab.error("session.episodes.file", str(err)) from None
    for i, episode_id in enumerate(spec.ids):
        if episode_id not in by_id:
            raise lab.error(f"session.episodes.ids[{i}]", f"no episode {episode_id!r} in {path}")
    return [by_id[i] for i in dict.fromkeys(spec.ids)]


def episode_devices(episode: Episode) -> dict[str, tuple[str, str]]:
    """The episode home's devices: id -> (type, room)."""
    return {d.id: (d.type, room.id) for room in episode.initial.home.rooms for d in room.devices}


def why_unfit(lab: Lab, real_types: dict[str, str], episode: Episode) -> str | None:
    """Why `episode` does not fit the bench (None: it fits). `real_types`: bound device id ->
    the device type its real product plays."""
    if episode.query_type.startswith("QT4"):
        return (f"{episode.query_type} schedules actions minutes ahead in virtual time; a lab runs "
                "on the wall clock")
    devices = episode_devices(episode)
    rooms = {room.id for room in episode.initial.home.rooms}
    for device in lab.spec.devices:
        if device.bind is not None:
            want = real_types[device.bind]
            if device.bind not in devices:
                return f"its home has no {device.bind} for the real {want} to play"
            if devices[device.bind][0] != want:
                return (f"its {device.bind} is a {devices[device.bind][0]}; the real device "
                        f"bound to it plays a {want}")
        else:
            if device.room not in rooms:
                return f"its home has no room {device.room} for the added real device {device.id}"
            if device.id in devices:
                return f"its home has a device {device.id}, the id of an added real device"
    for sensor in lab.spec.sensors:
        if sensor.room not in rooms:
            return f"its home has no room {sensor.room} for the {sensor.state} sensor"
    return None


def select_episodes(lab: Lab, episodes: list[Episode], lab_home: Home) -> tuple[list[Episode], list[dict[str, str]]]:
    """(the episodes that fit the bench, [{"episode_id", "reason"}] for the dropped ones)."""
    real_types = {d.bind: lab_home.device_info(d.bind)["type"] for d in lab.spec.devices if d.bind is not None}
    kept, dropped = [], []
    for episode in episodes:
        reason = why_unfit(lab, real_types, episode)
        if reason is None:
            kept.append(episode)
        else:
            dropped.append({"episode_id": episode.id, "reason": reason})
    return kept, dropped


def run_episodes(lab: Lab, recording: Path | None = None, log: Callable[[str], None] | None = None,
                 shadow_all: bool = False,
                 on_episode: Callable[[int, int, str], None] | None = None,
                 on_session: Callable[[LabSession], None] | None = None) -> dict[str, Any]:
    """Run the lab file's episodes that fit the bench, one session run each (one controller
    for all); the summary holds every result line and the dropped episodes with reasons."""
    spec = lab.spec.session.episodes
    assert spec is not None
    say = log or (lambda message: None)
    lab_home = load_twin_home(lab)
    for i, device in enumerate(lab.spec.devices):
        if device.bind is not None and device.bind not in lab_home.devices:
            raise lab.error(f"devices[{i}].bind", f"the twin home has no device {device.bind!r}")
    kept, dropped = select_episodes(lab, lab_episodes(lab), lab_home)
    for d in dropped:
        say(f"{d['episode_id']}: dropped: {d['reason']}")
    judge = make_judge(spec.judge, base_url=spec.base_url)
    controller = None
    url = lab.spec.controller.url
    results: list[dict[str, Any]] = []
    divergences = 0
    try:
        if url is None and kept and lab.spec.controller.start is not None:
            start = lab.spec.controller.start
            controller = ManagedController(lab.path(start.storage), start.port, start.listen)
            say(f"starting python-matter-server on port {start.port} (storage {controller.folder})")
            url = controller.start()
        for n, episode in enumerate(kept):
            if on_episode is not None:
                on_episode(n, len(kept), episode.id)
            with LabSession(lab, recording, shadow_all=shadow_all, log=log, home=build_home(episode),
                            controller_url=url) as session:
                if n == 0 and dropped:
                    session.note("episodes_dropped", dropped)
                if on_session is not None:
                    on_session(session)
                results.append(session.run_episode(episode, make_agent(spec.agent, base_url=spec.base_url),
                                                   judge, spec.max_steps, spec.settle))
                divergences += len(session.divergences)
    finally:
        if controller is not None:
            controller.stop()
    passed = sum(bool(r["success"]) for r in results)
    return {"episodes": len(results), "passed": passed, "dropped": dropped, "results": results,
            "calls": sum(r["steps"] for r in results), "expectation_failures": len(results) - passed,
            "divergences": divergences}


__all__ = ["episode_devices", "lab_episodes", "run_episodes", "select_episodes", "why_unfit"]
