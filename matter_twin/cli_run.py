"""The Matter side of the `twin` CLI: `twin run` with nodes and HTTP.

`matter_twin/cli.py` holds the commands; the work is here. With Matter nodes (or `--http`) the home
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
import contextlib
import ipaddress
import logging
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any

import ifaddr
import uvicorn
from rich.console import Console
from rich.live import Live

from matter_twin.console import print_codes, room_table
from matter_twin.http import create_app
from matter_twin.http_edge import server_config
from matter_twin.mqtt import MqttBridge, MqttSettings, start_broker
from twin.clock import Pace
from twin.node.clock_loop import run_home
from twin.node.defaults import DEFAULT_WINDOW_TIMEOUT_S
from twin.node.manager import DEFAULT_BASE_PORT, NodeManager

DEFAULT_STORAGE = Path(".storage")

__all__ = ["DEFAULT_STORAGE", "matter_default", "run", "run_async"]


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
        class Server(uvicorn.Server):
            @contextlib.contextmanager
            def capture_signals(self):  # type: ignore[override]
                yield

        return Server(server_config(app, host, port, lifespan="off", timeout_graceful_shutdown=1))


async def run_async(home: Any, speed: float, end_tick: int | None, console: Console, *,
                    matter: bool = True, storage: Path = DEFAULT_STORAGE, reset_fabrics: bool = False,
                    base_port: int = DEFAULT_BASE_PORT, interface: str | None = None,
                    http_port: int | None = None, http_host: str = "127.0.0.1",
                    view: Any = None, as_bridge: bool = False, open_windows: str | list[str] = "all",
                    window_timeout_s: int | None = DEFAULT_WINDOW_TIMEOUT_S, runs_dir: Path | None = None,
                    home_file: Path | None = None, mqtt: MqttSettings | None = None) -> bool:
    """Run the home in real time (or at `speed`) with its nodes and/or the HTTP API.

    Returns True when stopped by Ctrl-C / SIGTERM, False when `end_tick` was reached.
    """
    lock: Any = threading.Lock()
    server = None
    manager = None
    pace = Pace(speed)   # the live page may pause it or change the speed
    if http_port is not None:
        app = create_app(home, pace=pace, runs_dir=runs_dir, home_file=home_file)
        lock = app.state.lock  # tool calls in worker threads hold it; so do we
    if matter:
        addresses, interfaces = interface_settings(interface)
        manager = NodeManager(home, storage, base_port=base_port, addresses=addresses,
                              interfaces=interfaces, lock=lock, reset_fabrics=reset_fabrics,
                              as_bridge=as_bridge, open_windows=open_windows, window_timeout_s=window_timeout_s)
        if http_port is not None:
            app.state.codes = manager.codes
            app.state.pair = manager.open_window   # POST /pair/{device}: `twin pair DEVICE`
            app.state.links = manager.link_counts  # GET /faults: each node's link counters
            app.state.can_save = manager.states.can_save   # a full disk: changing tools refused
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    http_task = None
    # One change stream for the page and MQTT (each its own subscription): one listener per server.
    stream = getattr(app.state, "change_stream", None) if http_port is not None else None
    mqtt_run = _MqttRun(home, lock, mqtt, pace, stream) if mqtt is not None else None
    if mqtt_run is not None and manager is not None:
        mqtt_run.bridge.can_save = manager.states.can_save
    try:
        if mqtt_run is not None:
            await mqtt_run.start()
            print(f"mqtt: {mqtt_run.where} under {mqtt_run.bridge.prefix}/", file=sys.stderr, flush=True)
        if manager is not None:
            await manager.start()
            rows = manager.codes()
            show_codes(console, rows, manager.window_plan.notice(), http_port)
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
            print(f"http: http://{http_host}:{http_port} (live page: http://{http_host}:{http_port}/)",
                  file=sys.stderr, flush=True)
        print(f"running {home.name!r}: {len(home.rooms)} rooms, {len(home.devices)} devices at speed "
              f"{speed:g} from {home.now}; Ctrl-C to stop", file=sys.stderr, flush=True)

        def on_step() -> None:
            if manager is not None:
                manager.poll()
            if view is not None:
                view()
        await run_home(home, pace, lock, on_step=on_step, end_tick=end_tick, stop=stop)
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
        if server is not None:
            app.state.live_closing = True   # open live pages' streams end
            server.should_exit = True
            if http_task is not None:
                await asyncio.gather(http_task, return_exceptions=True)
        if manager is not None:
            await manager.stop()
        if mqtt_run is not None:
            await mqtt_run.stop()
    return stop.is_set()


class _MqttRun:
    """`--mqtt`: the embedded broker (no URL) and the bridge, reconnecting if the broker goes away.
    The first connection must work (a wrong URL or password is an error at start)."""

    RETRY_S = 3.0

    def __init__(self, home: Any, lock: Any, settings: MqttSettings, pace: Pace, stream: Any = None):
        self.settings = settings
        self.bridge = MqttBridge(home, lock, settings, pace, stream)
        self.broker: Any = None
        self.done = asyncio.Event()
        self.task: asyncio.Task | None = None
        host, port, tls, _, _ = settings.endpoint()
        self.where = ("embedded broker " if settings.url is None else "") + f"{'mqtts' if tls else 'mqtt'}://{host}:{port}"

    async def start(self) -> None:
        if self.settings.url is None:
            self.broker = await start_broker(self.settings.listen)
        ready = asyncio.Event()
        first = asyncio.get_running_loop().create_task(self.bridge.run(self.done, ready))
        await asyncio.wait([first, asyncio.ensure_future(ready.wait())], timeout=15,
                           return_when=asyncio.FIRST_COMPLETED)
        if not ready.is_set():
            first.cancel()
            error = first.exception() if first.done() and not first.cancelled() else "no answer in 15 s"
            await self._stop_broker()
            raise OSError(f"MQTT: cannot connect to {self.where}: {error}")
        self.task = asyncio.get_running_loop().create_task(self._keep(first))

    async def _keep(self, running: asyncio.Task) -> None:
        while True:
            try:
                await running
            except Exception as err:   # the broker went away (aiomqtt.MqttError), or anything else
                logging.getLogger(__name__).warning("MQTT: connection to %s lost (%s); retrying", self.where, err)
            if self.done.is_set():
                return
            await asyncio.sleep(self.RETRY_S)
            running = asyncio.get_running_loop().create_task(self.bridge.run(self.done))

    async def stop(self) -> None:
        self.done.set()
        if self.task is not None:
            await asyncio.gather(self.task, return_exceptions=True)
        await self._stop_broker()

    async def _stop_broker(self) -> None:
        if self.broker is not None:
            await self.broker.shutdown()
            self.broker = None


def show_codes(console: Console, rows: list[dict[str, Any]], notice: str, http_port: int | None) -> None:
    """At start: the codes of the open windows (the only ones that work now), then one line on
    the others. On a terminal that fits a 24-line screen next to the room table."""
    open_rows = [r for r in rows if r.get("window", "").startswith("open")]
    if not console.is_terminal:
        print_codes(console, rows)      # logs and pipes: every node, with its window state
    elif open_rows:
        print_codes(console, open_rows, f"Commissioning windows open: {len(open_rows)} of {len(rows)} nodes")
    pair = f"`twin pair DEVICE --http {http_port}`" if http_port is not None else \
        "`twin pair DEVICE` (run with --http PORT)"
    hints = []
    if notice:
        hints.append(notice.replace("`twin pair DEVICE`", pair))
    elif len(open_rows) < len(rows):
        hints.append(f"{len(rows) - len(open_rows)} window(s) closed (commissioned, or not asked for): {pair} "
                     "opens one.")
    hints.append("One node's codes and QR code: `twin codes DEVICE`.")
    for hint in hints:
        console.print(hint, highlight=False, soft_wrap=not console.is_terminal)


def run(home: Any, speed: float, end_tick: int | None, console: Console, **options: Any) -> bool:
    """`run_async` from synchronous code, with a live room table on a terminal."""
    logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s", level=logging.WARNING)
    for name in ("twin.node.core", "twin.node.manager"):   # sessions established, PASE failures, reboots
        logging.getLogger(name).setLevel(logging.INFO)
    if not console.is_terminal:
        return asyncio.run(run_async(home, speed, end_tick, console, **options))
    # Transient: the caller prints the final table once; nothing half-drawn stays behind.
    with Live(room_table(home, f"{speed:g}"), console=console, refresh_per_second=4, transient=True) as live:
        return asyncio.run(run_async(home, speed, end_tick, console,
                                     view=lambda: live.update(room_table(home, f"{speed:g}")), **options))
