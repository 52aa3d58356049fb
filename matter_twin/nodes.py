"""The Matter side of the `twin` CLI: `twin codes`, and `twin run` with nodes and HTTP.

`twin/cli.py` holds the commands; the work is here. With Matter nodes (or `--http`) the home
runs in an asyncio loop that also carries every node's UDP port, mDNS and the HTTP tool API,
so the simulation, the nodes and the tools see one home; tool calls from HTTP worker threads
hold the same lock as the loop.

Storage: `--storage DIR` (default `./.storage`) keeps each node's attestation material
(DAC and key, shared PAI), fabrics, NOCs, ACLs and counters, in `DIR/<device id>/`. A
restart with the same directory keeps every commissioning; `--reset-fabrics` forgets them
(the DACs stay). The credentials are development ones, chained to the public test PAA.
"""
from __future__ import annotations

import asyncio
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

DEFAULT_STORAGE = Path(".storage")

__all__ = ["DEFAULT_STORAGE", "codes_table", "codes_rows", "print_codes", "matter_default", "run", "run_async"]


def codes_rows(home: Any, seed: int | None = None) -> list[dict[str, Any]]:
    """Each node's pairing codes (no sockets opened): the home's devices, then each room's
    sensor node (`sensors@<room>`)."""
    from twin.node.runtime import device_name, home_pairings, served_devices
    devices = served_devices(home)
    return [{**p.to_json(), "name": device_name(home, devices[device_id])}
            for device_id, p in home_pairings(home, seed, devices).items()]


def codes_table(rows: list[dict[str, Any]], title: str = "Matter pairing codes") -> Table:
    table = Table(title=title)
    for column in ("Device", "Manual code", "QR payload", "Discriminator", "Port"):
        table.add_column(column, no_wrap=True)
    for row in rows:
        code = row["manual_code"]
        table.add_row(row["device"], f"{code[:4]}-{code[4:7]}-{code[7:]}", row["qr_code"],
                      str(row["discriminator"]), str(row.get("port", "")))
    return table


def print_codes(console: Console, rows: list[dict[str, Any]]) -> None:
    """A table on a terminal; one plain `pairing:` line per device otherwise (logs, pipes)."""
    if console.is_terminal:
        console.print(codes_table(rows))
        return
    for row in rows:
        port = f" port {row['port']}" if "port" in row else ""
        console.print(f"pairing: {row['device']} manual {row['manual_code']} qr {row['qr_code']} "
                      f"discriminator {row['discriminator']}{port}", soft_wrap=True, highlight=False)


def _in_initial_network_namespace() -> bool:
    try:
        return os.stat("/proc/self/ns/net").st_ino == os.stat("/proc/1/ns/net").st_ino
    except OSError:
        return True  # cannot tell: assume the machine's own network


def matter_default() -> tuple[bool, str]:
    """Whether `twin run` starts Matter nodes when neither --matter nor --no-matter is given.

    On, as users expect; but never from inside a test run (pytest exports
    PYTEST_CURRENT_TEST to the processes it starts) in the machine's own network namespace,
    where mDNS would reach the real network. Tests that want nodes pass --matter inside a
    namespace they created.
    """
    if os.environ.get("PYTEST_CURRENT_TEST") and _in_initial_network_namespace():
        return False, "Matter nodes off: running under pytest in the machine's own network namespace"
    return True, ""


def interface_settings(name: str | None) -> tuple[list[str] | None, Any]:
    """(addresses to advertise, zeroconf interfaces) for `--interface NAME` (None: all)."""
    if name is None:
        return None, None
    import ipaddress

    import ifaddr
    for adapter in ifaddr.get_adapters():
        if adapter.nice_name == name or adapter.name == name:
            addresses, interfaces = [], []
            for ip in adapter.ips:
                if isinstance(ip.ip, tuple):  # IPv6: (address, flowinfo, scope id)
                    addresses.append(ip.ip[0])
                    if adapter.index not in interfaces:
                        interfaces.append(adapter.index)
                else:
                    addresses.append(ip.ip)
                    interfaces.append(ip.ip)
            addresses = [a for a in addresses if not ipaddress.ip_address(a).is_loopback]
            if not addresses:
                raise ValueError(f"--interface {name}: it has no usable address")
            return addresses, interfaces
    names = sorted(a.nice_name for a in ifaddr.get_adapters())
    raise ValueError(f"--interface {name!r}: no such interface; accepted: {', '.join(names)}")


class _QuietServer:
    """uvicorn's Server without its own signal handling: Ctrl-C belongs to the runner."""

    @staticmethod
    def make(app: Any, host: str, port: int) -> Any:
        import contextlib

        import uvicorn

        class Server(uvicorn.Server):
            @contextlib.contextmanager
            def capture_signals(self):  # type: ignore[override]
                yield

        return Server(uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="off"))


async def run_async(home: Any, speed: float, end_tick: int | None, console: Console, *,
                    matter: bool = True, storage: Path = DEFAULT_STORAGE, reset_fabrics: bool = False,
                    base_port: int = 5540, interface: str | None = None,
                    http_port: int | None = None, http_host: str = "127.0.0.1",
                    view: Any = None, as_bridge: bool = False) -> bool:
    """Run the home in real time (or at `speed`) with its nodes and/or the HTTP API.

    Returns True when stopped by Ctrl-C / SIGTERM, False when `end_tick` was reached.
    """
    from twin.node.runtime import NodeManager, run_home
    lock: Any = threading.Lock()
    server = None
    manager = None
    if http_port is not None:
        from matter_twin.http import create_app
        from bridge.twin_backend import TwinBackend
        app = create_app(TwinBackend(home))
        lock = app.state.lock  # tool calls in worker threads hold it; so do we
    if matter:
        addresses, interfaces = interface_settings(interface)
        manager = NodeManager(home, storage, base_port=base_port, addresses=addresses,
                              interfaces=interfaces, lock=lock, reset_fabrics=reset_fabrics,
                              as_bridge=as_bridge)
        if http_port is not None:
            app.state.codes = manager.codes
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    http_task = None
    try:
        if manager is not None:
            await manager.start()
            rows = manager.codes()
            print_codes(console, rows)
            what = f"bridge of {len(manager.bridge.bridged)} devices" if as_bridge else f"{len(rows)} nodes"
            print(f"matter: {what} on UDP ports {base_port}-{base_port + len(rows) - 1}, "
                  f"storage {storage}", file=sys.stderr, flush=True)
        if http_port is not None:
            server = _QuietServer.make(app, http_host, http_port)
            http_task = loop.create_task(server.serve(), name="http")
            while not server.started:
                if http_task.done():
                    http_task.result()
                    raise OSError(f"HTTP server on {http_host}:{http_port} did not start")
                await asyncio.sleep(0.02)
            print(f"http: http://{http_host}:{http_port}", file=sys.stderr, flush=True)
        print(f"running {home.name!r}: {len(home.rooms)} rooms, {len(home.devices)} devices at speed "
              f"{speed:g} from {home.now}; Ctrl-C to stop", file=sys.stderr, flush=True)

        def on_step() -> None:
            if manager is not None:
                manager.poll()
            if view is not None:
                view()
        await run_home(home, speed, lock, on_step=on_step, end_tick=end_tick, stop=stop)
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
        if server is not None:
            server.should_exit = True
            if http_task is not None:
                await asyncio.gather(http_task, return_exceptions=True)
        if manager is not None:
            await manager.stop()
    return stop.is_set()


def run(home: Any, speed: float, end_tick: int | None, console: Console, **options: Any) -> bool:
    """`run_async` from synchronous code, with a live room table on a terminal."""
    import logging
    logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s", level=logging.WARNING)
    logging.getLogger("twin.node.runtime").setLevel(logging.INFO)  # sessions established, PASE failures
    if not console.is_terminal:
        return asyncio.run(run_async(home, speed, end_tick, console, **options))
    from rich.live import Live

    from matter_twin.cli import room_table
    with Live(room_table(home, f"{speed:g}"), console=console, refresh_per_second=4) as live:
        return asyncio.run(run_async(home, speed, end_tick, console,
                                     view=lambda: live.update(room_table(home, f"{speed:g}")), **options))
