"""The simulation clock in the asyncio loop: `run_home` advances a home with the wall clock,
giving the node manager its turn after every step."""
from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

from twin.clock import TICKS_PER_SECOND, Pace, Pacer
from twin.node.home_view import NodeHome


async def run_home(home: NodeHome, speed: float | Pace, lock: Any = None, on_step: Callable[[], None] | None = None,
                   end_tick: int | None = None, stop: asyncio.Event | None = None,
                   max_sleep: float = 0.1) -> None:
    """Advance `home` with the wall clock at `speed` until `end_tick` or `stop` is set.

    `speed` may be a `Pace`, changed while this runs (pause, speed up). After every step
    `on_step()` runs (the node manager's turn). It wakes at least every `max_sleep` seconds,
    so the simulation keeps pace with the wall clock.
    """
    lock = lock if lock is not None else contextlib.nullcontext()
    loop = asyncio.get_running_loop()
    pace = speed if isinstance(speed, Pace) else Pace(speed)
    version = pace.version
    pacer = Pacer(pace.speed, loop.time(), home.clock.tick)
    stop = stop if stop is not None else asyncio.Event()
    while not stop.is_set() and (end_tick is None or home.clock.tick < end_tick):
        now = loop.time()
        with lock:
            target = pacer.target(now)
            if home.clock.tick > target or pace.version != version or pace.paused:
                # Someone moved the clock ahead (POST /clock/advance), or changed the pace:
                # go on from here.
                version = pace.version
                pacer = Pacer(pace.speed, now, home.clock.tick)
                target = home.clock.tick
            if end_tick is not None:
                target = min(target, end_tick)
            if target > home.clock.tick:
                home.advance((target - home.clock.tick) / TICKS_PER_SECOND)
        if on_step is not None:
            on_step()
        wake = pacer.wall_time_of(home.clock.tick + 1) - loop.time()
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(stop.wait(), min(max(wake, 0.0), max_sleep))
