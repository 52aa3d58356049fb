"""Device state across `twin run` restarts: each served device's attributes in its node's storage.

A restart is a power cycle. `DeviceStateStore` keeps, per device, what its cluster servers
would keep in non-volatile memory (`ClusterServer.saved_state`: stored attribute values, moving
things sampled where they are, DataVersion) in `<storage>/<device id>/state.json`. At the next
start, before the nodes come up, `restore` hands each server its saved state
(`ClusterServer.power_up`), which stops anything that was moving and applies the cluster's StartUp
semantics (OnOff.StartUpOnOff, LevelControl.StartUpCurrentLevel, ModeBase StartUpMode; null keeps
the previous value).

There is no second copy of device state: the files are written from the servers, and read only
at start. Writes: a server's change marks its device dirty (a listener); `flush` rewrites the
dirty devices' files, each atomically (temp file + rename: a kill -9 leaves the old or the new
file, never half of one), without fsync (a killed process loses nothing the kernel has; `stop`
flushes with fsync). The caller decides when to flush (the runtime: at most once a second, from
the wall clock at the edge); the simulation never reads the clock for it, so it stays
deterministic.

A full disk (issue #32): the first failed write logs one warning, the next ones nothing, and a
line says when saving works again. While it fails, or while the disk has less than
`MIN_FREE_BYTES` free, `can_save()` is False and the nodes refuse writes and commands
(RESOURCE_EXHAUSTED), so no change is acknowledged that a restart would lose without the client
having been told.
"""
from __future__ import annotations

import json
import logging
import os
import tempfile
from pathlib import Path
from typing import Any

from twin.node.files import write_atomic

log = logging.getLogger(__name__)

STATE_FILE = "state.json"
STATE_FORMAT = 1
#: Below this much free space a change is refused before it is made (a state file is a few kB).
MIN_FREE_BYTES = 256 * 1024


def _write_replace(path: Path, data: bytes) -> None:
    """Atomic against a killed process (temp file, rename), without the fsyncs."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def device_saved_state(device: Any) -> dict[str, Any]:
    """The JSON a device keeps across a restart (servers that persist only)."""
    return {"format": STATE_FORMAT, "device": device.id, "type": device.type.key,
            "servers": {f"{ep.id}/{s.name}": s.saved_state()
                        for ep in device.endpoints.values() for s in ep.servers.values() if s.persists}}


def power_up_device(device: Any, saved: dict[str, Any]) -> int:
    """Give each persisting server of `device` its saved state; returns how many servers got one.
    A file of another format or device type changes nothing."""
    if saved.get("format") != STATE_FORMAT or saved.get("type") != device.type.key:
        return 0
    restored = 0
    for ep in device.endpoints.values():
        for server in ep.servers.values():
            state = saved.get("servers", {}).get(f"{ep.id}/{server.name}")
            if state is not None and server.persists:
                server.power_up(state)
                restored += 1
    return restored


class DeviceStateStore:
    """The saved state of `devices` (id -> Device) under `storage_dir/<device id>/state.json`."""

    def __init__(self, storage_dir: str | Path, devices: dict[str, Any]) -> None:
        self.storage_dir = Path(storage_dir)
        self.devices = devices
        self.dirty: set[str] = set()
        self._listening: list[tuple[Any, Any]] = []
        #: Why the last write failed (None: saving works).
        self.failing: str | None = None

    def can_save(self) -> bool:
        """Whether a change made now can be saved: the last write worked and the disk has room."""
        if self.failing is not None:
            return False
        try:
            stat = os.statvfs(self.storage_dir)
        except OSError:
            return True   # no directory yet: the first flush creates it (and says if it cannot)
        return stat.f_bavail * stat.f_frsize >= MIN_FREE_BYTES

    def path(self, device_id: str) -> Path:
        return self.storage_dir / device_id / STATE_FILE

    def restore(self) -> list[str]:
        """Power every device up from its file (those that have one); returns their ids.
        A file that cannot be read is logged and ignored (the device starts as the home says)."""
        restored = []
        for device_id, device in self.devices.items():
            path = self.path(device_id)
            if not path.exists():
                continue
            try:
                saved = json.loads(path.read_text())
            except (OSError, ValueError) as err:
                log.warning("%s: saved state %s not usable (%s); starting from the home's", device_id, path, err)
                continue
            if power_up_device(device, saved):
                restored.append(device_id)
        return restored

    def watch(self) -> None:
        """Mark a device dirty whenever one of its persisting servers changes."""
        for device_id, device in self.devices.items():
            for ep in device.endpoints.values():
                for server in ep.servers.values():
                    if server.persists:
                        listener = self._marker(device_id)
                        server.listeners.append(listener)
                        self._listening.append((server, listener))
        self.dirty.update(self.devices)   # the first flush writes every file

    def _marker(self, device_id: str) -> Any:
        dirty = self.dirty

        def mark(server: Any, attribute: str) -> None:
            dirty.add(device_id)
        return mark

    def unwatch(self) -> None:
        for server, listener in self._listening:
            if listener in server.listeners:
                server.listeners.remove(listener)
        self._listening.clear()

    def flush(self, durable: bool = False, limit: int | None = None) -> int:
        """Write the dirty devices' files (at most `limit` of them; the others stay dirty for the
        next flush); returns how many were written. Errors are logged (a full disk must not stop
        the nodes) and the device stays dirty."""
        written = 0
        for device_id in sorted(self.dirty)[:limit]:
            device = self.devices.get(device_id)
            if device is None:
                self.dirty.discard(device_id)
                continue
            path = self.path(device_id)
            data = json.dumps(device_saved_state(device), sort_keys=True, separators=(",", ":")).encode()
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                (write_atomic if durable else _write_replace)(path, data)
            except OSError as err:
                if self.failing is None:
                    log.warning("device state cannot be saved (%s: %s); %d device(s) unsaved; the nodes refuse "
                                "writes and commands until it can", path, err.strerror or err, len(self.dirty))
                self.failing = str(err.strerror or err)
                break   # the others would fail alike; the next flush tries again
            self.dirty.discard(device_id)
            written += 1
            if self.failing is not None:
                log.warning("device state is saved again (%s)", path)
                self.failing = None
        return written
