"""The benchmark over Matter: each episode's home served as one Matter bridge node, the agent
driving it through python-matter-server (`twin bench run --over-matter`).

`MatterServing(server_url)` is the `serve` hook of `scenarios.simuhome.evaluate.run_episode`. Per
episode it:

1. serves the agent's copy of the home (the very `Home` the evaluator scores afterwards) as a
   bridge node (twin/aggregator.py: every device and room sensor a bridged endpoint), in this
   process, on an event loop of its own;
2. commissions it into python-matter-server by its QR code (one commissioning per episode);
3. hands the agent a `MatterBackend` in which each home device is its bridged endpoints, shown
   with the twin's own endpoint ids and names, and each room reads its bridged room sensor;
4. afterwards removes the node from the server's fabric and stops it.

Virtual time stands still while the agent works, exactly as in process: the node answers on
the wall clock, but nothing advances the home's clock, and the backend's current time is the
home's. So the evaluator judges the state the twin reached through Matter, fast-forwarded in
process as usual. Workflows scheduled over Matter live in the backend on that frozen clock and
never run, so the scheduling categories (QT4) do not run over Matter.

The nodes advertise over mDNS: run this inside a network namespace (the CLI makes one).
"""
from __future__ import annotations

import asyncio
import contextlib
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from chip.clusters import Objects as Clusters

from bridge.backend import ToolError
from bridge.config import parse_config
from bridge.matter_backend import MatterBackend
from bridge.matter_connection import MatterConnection
from twin.aggregator import BRIDGE_ID
from twin.node.manager import DEFAULT_BASE_PORT, NodeManager
from twin.room_sensors import room_sensor_id

#: Categories that need virtual time to pass while the agent works (waits, schedules).
NEEDS_TIME = ("QT4",)
POLL_S = 0.05          # how often the node's mDNS and unstepped servers are looked after
COMMISSION_TIMEOUT = 120.0


class MatterServingError(Exception):
    """The Matter side could not be set up (server unreachable, commissioning failed): the
    run stops, since no episode could be scored fairly."""


def runs_over_matter(category: str) -> bool:
    return not category.startswith(NEEDS_TIME)


class MatterServing:
    """Serves episode homes as bridge nodes and commissions them into one python-matter-server."""

    def __init__(self, server_url: str, storage: str | Path | None = None,
                 base_port: int = DEFAULT_BASE_PORT, timeout: float = 15.0):
        self.url = server_url
        self.base_port = base_port
        self.timeout = timeout
        self._own_storage = storage is None
        self.storage = Path(tempfile.mkdtemp(prefix="bench-over-matter-") if storage is None else storage)
        self.connection = MatterConnection(server_url, timeout)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True, name="episode-nodes")
        self._thread.start()
        self._episodes = 0
        self.lock: Any = contextlib.nullcontext()   # the current episode's home lock
        self.commissioned = 0      # episodes whose home was commissioned into the server

    def wait_for_server(self, seconds: float = 60.0) -> None:
        """Until python-matter-server answers (it takes ~10 s to start)."""
        deadline = time.monotonic() + seconds
        while True:
            try:
                self.connection.nodes()
                return
            except ToolError as err:
                if time.monotonic() > deadline:
                    raise MatterServingError(f"python-matter-server at {self.url} did not answer in "
                                             f"{seconds:g} s: {err.message}") from None
                time.sleep(0.5)

    def _on_loop(self, coro: Any, timeout: float = 60.0) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    @contextlib.contextmanager
    def __call__(self, home: Any) -> Iterator[MatterBackend]:
        """Serve `home` for one episode; yields the agent's backend."""
        self._episodes += 1
        storage = self.storage / f"episode-{self._episodes}"
        lock = threading.RLock()
        self.lock = lock    # held by a caller that changes the home itself meanwhile (lifelong runs)

        async def start() -> tuple[NodeManager, asyncio.Task]:
            manager = NodeManager(home, storage, base_port=self.base_port, lock=lock, as_bridge=True)
            await manager.start()

            async def look_after() -> None:   # what run_home does each step, minus the clock
                while True:
                    manager.poll()
                    await asyncio.sleep(POLL_S)
            return manager, asyncio.get_running_loop().create_task(look_after())

        try:
            manager, poller = self._on_loop(start())
        except (OSError, ValueError) as err:   # a port in use, storage not writable
            raise MatterServingError(f"cannot serve the episode's home as a Matter node: {err}") from None
        node_id = None
        backend = None
        try:
            node_id = self._commission(manager.codes()[0]["qr_code"])
            self.commissioned += 1
            backend = MatterBackend(self._config(home, manager.bridge, node_id), now=lambda: home.now,
                                    connection=self.connection)
            yield backend
        finally:
            if backend is not None:
                backend.close()
            if node_id is not None:
                with contextlib.suppress(ToolError):   # leaving the fabric is best effort
                    self.connection.call(lambda c: c.remove_node(node_id), "remove the episode's node",
                                         node_id)

            async def stop() -> None:
                poller.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await poller
                await manager.stop()
            self._on_loop(stop())
            shutil.rmtree(storage, ignore_errors=True)

    def _commission(self, qr_code: str) -> int:
        async def commission(client: Any) -> int:
            return (await client.commission_with_code(qr_code, network_only=True)).node_id
        try:
            return int(self.connection.call(commission, "commission the episode's bridge node",
                                            timeout=COMMISSION_TIMEOUT))
        except ToolError as err:
            raise MatterServingError(f"commissioning the episode's bridge node failed: {err.message}") from None

    def _config(self, home: Any, bridge: Any, node_id: int) -> Any:
        """The bridge config of the served home: the twin's rooms and device names, each device
        at its bridged endpoints renumbered to its own, each room read from its sensor."""
        rooms = []
        for room_id, room in home.rooms.items():
            sensor = bridge.bridged[room_sensor_id(room_id)]
            at = dict(zip(sorted(e for e in sensor.endpoints if e != 0), bridge.endpoint_ids(sensor.id)))
            sensors = {}
            for state, (cluster, _) in MatterBackend._SENSORS.items():
                cluster_id = getattr(Clusters, cluster).id
                own = next(e for e in sorted(at) if cluster_id in sensor.endpoints[e].servers)
                sensors[state] = {"node_id": node_id, "endpoint": at[own]}
            rooms.append({"id": room_id, "name": room.name, "sensors": sensors})
        devices = []
        for device_id, device in home.devices.items():
            own = sorted(e for e in device.endpoints if e != 0)
            bridged = bridge.endpoint_ids(device_id)
            devices.append({"id": device_id, "room": home.room_of(device_id),
                            "name": home.device_info(device_id)["label"],
                            "matter": {"node_id": node_id, "endpoint": bridged[0],
                                       "renumber": dict(zip(bridged, own))}})
        data = {"name": str(home.name), "server": self.url, "timeout": self.timeout,
                "rooms": rooms, "devices": devices}
        return parse_config(data, f"<{BRIDGE_ID} of {home.name}>")

    def close(self) -> None:
        self.connection.close()
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        if self._own_storage:
            shutil.rmtree(self.storage, ignore_errors=True)


__all__ = ["MatterServing", "MatterServingError", "NEEDS_TIME", "runs_over_matter"]
