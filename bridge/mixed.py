"""Mixed homes: some devices are twins in this process, some are Matter nodes.

`MixedBackend(config)` routes each configured device to where it lives: a twin device
(through `TwinBackend`, so the twin's cluster constraints and cross-cluster rules apply) or a
Matter node (through python-matter-server, as `MatterBackend`). Rooms come from the config.
Room states come from the room's configured sensors and, for the states no sensor covers,
from the twin room the config links (`rooms[].twin: {home, room}`).

Time is the wall clock, since real devices live in it: twin homes follow it (each is caught up
to the wall clock, at speed 1, before anyone touches it), and workflows run on the wall clock
too, their steps routed like any other call.

    backend = load_backend("bridge.yaml")      # MatterBackend or MixedBackend, by the config
"""
from __future__ import annotations

import datetime as _dt
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bridge.backend import DeviceLink
from bridge.config import DeviceConfig, LoadedConfig, load_config
from bridge.matter_backend import MatterBackend, wall_now
from bridge.twin_backend import TwinBackend
from twin.clock import TICKS_PER_SECOND
from twin.home import Home
from twin.schema import UserFileError


class TwinHome:
    """One twin home, paced by the wall clock: `catch_up()` moves it to "now"."""

    def __init__(self, home: Home, now: Callable[[], _dt.datetime]):
        self.home = home
        self.backend = TwinBackend(home)
        self.lock = threading.RLock()  # the workflow thread and callers share the home
        self._now = now
        self._wall0 = now()
        self._tick0 = home.clock.tick

    def catch_up(self) -> None:
        elapsed = (self._now() - self._wall0).total_seconds()
        target = self._tick0 + int(elapsed * TICKS_PER_SECOND)
        if target > self.home.clock.tick:
            self.home.advance((target - self.home.clock.tick) / TICKS_PER_SECOND)


class TwinDevice:
    """A configured device that is a twin device: the same operations as `MatterDevice`."""

    def __init__(self, spec: DeviceConfig, twin: TwinHome):
        if spec.twin is None:
            raise ValueError(f"device {spec.id!r} is not a twin device")
        self.spec = spec
        self.twin = twin
        self.inner = spec.twin.device

    def _call(self, fn: Callable[..., dict[str, Any]], *args: Any) -> dict[str, Any]:
        with self.twin.lock:
            self.twin.catch_up()
            return fn(self.inner, *args)

    def summary(self) -> dict[str, Any]:
        def get(inner: str) -> dict[str, Any]:
            device = self.twin.home.device(inner)
            return {"device_type": device.type.key, "label": device.type.label,
                    "endpoints": sorted(e for e in device.endpoints if e != 0)}
        return self._call(get)

    def structure(self) -> dict[str, Any]:
        return self._call(self.twin.backend.device_structure)

    def read(self, endpoint_id: int | None, cluster: Any, attribute: Any) -> dict[str, Any]:
        return self._call(self.twin.backend.read_attribute, endpoint_id, cluster, attribute)

    def read_all(self) -> dict[str, Any]:
        return self._call(self.twin.backend.read_all_attributes)

    def write(self, endpoint_id: int | None, cluster: Any, attribute: Any, value: Any) -> dict[str, Any]:
        return self._call(self.twin.backend.write_attribute, endpoint_id, cluster, attribute, value)

    def invoke(self, endpoint_id: int | None, cluster: Any, command: Any, args: dict[str, Any]) -> dict[str, Any]:
        return self._call(self.twin.backend.invoke, endpoint_id, cluster, command, args)


class MixedBackend(MatterBackend):
    """Implements `bridge.backend.Backend` for any bridge config: twin devices in process,
    Matter devices through python-matter-server, one home."""

    def __init__(self, loaded: LoadedConfig, now: Callable[[], _dt.datetime] = wall_now,
                 homes: dict[str, Home] | None = None):
        """`homes`: twin homes already built, by the name the config gives them (a lab runs a
        benchmark episode's home under its lab file's home name)."""
        self._now = now
        self.loaded = loaded
        self._homes = {loaded.home_path(name): TwinHome(home, now) for name, home in (homes or {}).items()}
        for i, room in enumerate(loaded.config.rooms):
            if room.twin is not None:
                twin = self._home(room.twin.home, f"rooms[{i}].twin.home")
                if room.twin.room not in twin.home.rooms:
                    raise UserFileError(loaded.source, f"rooms[{i}].twin.room", f"home has no room "
                                      f"{room.twin.room!r}; rooms: {', '.join(twin.home.rooms)}")
        super().__init__(loaded, now)

    def _home(self, name: str, where: str) -> TwinHome:
        path = self.loaded.home_path(name)
        if path not in self._homes:
            try:
                home = Home.default() if path == "default" else Home.load(path)
            except UserFileError as err:
                raise UserFileError(self.loaded.source, where, str(err)) from None
            except (OSError, ValueError) as err:
                raise UserFileError(self.loaded.source, where, f"cannot load home {path}: {err}") from None
            self._homes[path] = TwinHome(home, self._now)
        return self._homes[path]

    def _make_device(self, spec: DeviceConfig) -> DeviceLink:
        if spec.twin is None:
            return super()._make_device(spec)
        index = self.config.devices.index(spec)
        twin = self._home(spec.twin.home, f"devices[{index}].twin.home")
        if spec.twin.device not in twin.home.devices:
            raise UserFileError(self.loaded.source, f"devices[{index}].twin.device",
                              f"home has no device {spec.twin.device!r}; devices: "
                              + ", ".join(sorted(twin.home.devices)))
        return TwinDevice(spec, twin)

    def _fallback_states(self, room: Any, missing: list[str]) -> dict[str, float]:
        if room.twin is None:
            return {}
        twin = self._home(room.twin.home, "rooms.twin.home")
        with twin.lock:
            twin.catch_up()
            states = twin.backend.room_states(room.twin.room)
        return {s: states[s] for s in missing}

    def twin_home(self, name: str) -> TwinHome:
        """The wall-clock-paced twin home behind `name` ("default" or a home file path)."""
        return self._home(name, "home")

    def twin_homes(self) -> dict[str, Any]:
        """The twin homes behind this backend (path or "default" -> Home)."""
        return {path: twin.home for path, twin in self._homes.items()}


def load_backend(config_path: str | Path) -> MatterBackend:
    """The backend a bridge config describes: `MatterBackend` when every device is a Matter
    node, else `MixedBackend`. Config problems raise `UserFileError` (one line)."""
    loaded = load_config(config_path)
    config = loaded.config
    if any(d.twin is not None for d in config.devices) or any(r.twin is not None for r in config.rooms):
        return MixedBackend(loaded)
    return MatterBackend(loaded)


__all__ = ["MixedBackend", "TwinDevice", "TwinHome", "load_backend"]
