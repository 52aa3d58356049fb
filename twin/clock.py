"""Virtual time: an integer tick count (0.1 s each) from a naive local start datetime.

The clock only moves when the Home moves it (`Home.step`, `Home.advance`, `Home.run_until`).
Nothing in the simulation reads the wall clock; `Pacer` is the one place where wall time
(passed in by the caller, never read here) is turned into a target tick, for real-time and
speed-factor runners at the edge.
"""
from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from clusters.base import TICKS_PER_SECOND as TICKS_PER_SECOND  # re-exported: one tick is 0.1 s

TICK = timedelta(milliseconds=100)
DEFAULT_START = datetime(2025, 6, 1, 9, 0, 0)
TIME_FORMAT = "%Y-%m-%d %H:%M:%S"


def parse_time(value: datetime | str) -> datetime:
    """A naive datetime from a datetime or an ISO string ("YYYY-MM-DD HH:MM:SS[.f]")."""
    if isinstance(value, datetime):
        when = value
    elif isinstance(value, str):
        try:
            when = datetime.fromisoformat(value.strip())
        except ValueError:
            raise ValueError(f"time {value!r} is not a date and time; expected "
                             "'YYYY-MM-DD HH:MM:SS'") from None
    else:
        raise ValueError(f"time {value!r} is not a date and time; expected 'YYYY-MM-DD HH:MM:SS'")
    if when.tzinfo is not None:
        raise ValueError(f"time {value!r} has a time zone; virtual time is naive local time")
    return when


class VirtualClock:
    """`tick` counts 0.1 s steps since `start`; `now` is the datetime at that tick."""

    def __init__(self, start: datetime = DEFAULT_START, tick: int = 0):
        self.start = parse_time(start)
        self.tick = int(tick)

    @property
    def now(self) -> datetime:
        return self.time_at(self.tick)

    def time_at(self, tick: int) -> datetime:
        return self.start + tick * TICK

    def tick_at(self, when: datetime | str) -> int:
        """The first tick at or after `when` (times between ticks round up)."""
        delta = parse_time(when) - self.start
        ticks, rest = divmod(delta, TICK)
        return ticks + (1 if rest else 0)

    def format(self, tick: int | None = None) -> str:
        """Human time at `tick` (default now), with tenths only when they are not zero."""
        when = self.time_at(self.tick if tick is None else tick)
        text = when.strftime(TIME_FORMAT)
        return f"{text}.{when.microsecond // 100000}" if when.microsecond else text

    def state(self) -> dict[str, Any]:
        return {"start": self.start.isoformat(), "tick": self.tick}

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> VirtualClock:
        return cls(datetime.fromisoformat(state["start"]), state["tick"])


class Pacer:
    """Maps wall-clock seconds (given by the caller) to a target tick at a speed factor.

    `speed=1` is real time, `speed=60` one virtual minute per wall second. The runner
    calls `target(wall_now)` and advances the home to that tick.
    """

    def __init__(self, speed: float, wall_start: float, tick_start: int):
        if not speed > 0:
            raise ValueError(f"speed {speed!r} must be a positive number")
        self.speed = float(speed)
        self.wall_start = float(wall_start)
        self.tick_start = int(tick_start)

    def target(self, wall_now: float) -> int:
        elapsed = max(0.0, wall_now - self.wall_start)
        return self.tick_start + int(elapsed * self.speed * TICKS_PER_SECOND)

    def wall_time_of(self, tick: int) -> float:
        """Wall time at which `tick` is due (for sleeping until the next event)."""
        return self.wall_start + (tick - self.tick_start) / (self.speed * TICKS_PER_SECOND)


class Pace:
    """A runner's speed, changeable while it runs (the web page's clock): `speed` virtual
    seconds per wall second, or `paused`. A runner re-anchors its Pacer whenever `version`
    moves, so a change takes effect from the moment it is made."""

    def __init__(self, speed: float = 1.0, paused: bool = False):
        self.speed = 1.0
        self.paused = False
        self.version = 0
        self.set(speed, paused)

    def set(self, speed: float | None = None, paused: bool | None = None) -> None:
        """Change speed and/or pause; a bad speed raises ValueError and changes nothing."""
        if speed is not None:
            if isinstance(speed, bool) or not isinstance(speed, (int, float)) or not 0 < speed < float("inf"):
                raise ValueError(f"speed {speed!r} must be a positive number")
        if paused is not None and not isinstance(paused, bool):
            raise ValueError(f"paused {paused!r} must be true or false")
        if speed is not None:
            self.speed = float(speed)
        if paused is not None:
            self.paused = paused
        self.version += 1

    def to_json(self) -> dict[str, Any]:
        return {"speed": self.speed, "paused": self.paused}
