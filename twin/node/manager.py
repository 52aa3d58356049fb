"""The node runtime: every device of a `twin.home.Home` as a commissionable Matter node.

Three layers, from the inside out:

- `NodeCore` (twin/node/core.py, sans-IO): one node's message layer, PASE/CASE, Interaction
  Model server and commissioning state.
- `MatterNode`: the asyncio `UdpTransport` plus a core, on one UDP port.
- `NodeManager`: a node per device (`base_port + index`), pairing codes from the home seed
  (twin/node/pairing.py), attestation credentials and fabrics in a storage directory, and the
  mDNS advertisements (commissionable while the window is open, operational per fabric),
  withdrawn on stop. `run_home` (twin/node/clock_loop.py) moves the clock between its turns.

The cores read and write the very cluster servers the simulation steps: there is no second
copy of device state. The simulation and the nodes share one thread (the asyncio loop);
other threads that touch the home (the HTTP tool API) hold the same `lock`.
"""
from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import random
import resource
import time
from pathlib import Path
from typing import Any

from chip.clusters import Objects as Clusters

from matter_protocol.interaction import CommandData, CommandPath
from matter_protocol.mdns import Commissionable, Operational
from twin.aggregator import BRIDGE_ID, build_bridge
from twin.node.advertiser import Advertiser
from twin.node.checkins import CheckInTarget
from twin.node.commissioning import NodeCommissioning
from twin.node.core import (
    NODE_MRP,
    NodeCore,
    node_mrp,
    session_parameters,
)
from twin.node.credentials import DeviceCredentials
from twin.node.defaults import DEFAULT_BASE_PORT, DEFAULT_WINDOW_TIMEOUT_S, WINDOW_CHOICES
from twin.node.device_state import DeviceStateStore
from twin.node.fabrics import FabricTable
from twin.node.faults import FaultTriggers, LinkFaults
from twin.node.files import FileStorage, write_atomic
from twin.node.home_view import NodeHome
from twin.node.im import EventNumbers, InteractionModelServer
from twin.node.pairing import (
    Pairing,
    WindowPlan,
    _basic_information,
    device_name,
    home_pairings,
    pairing_order,
    plan_windows,
    served_devices,
)
from twin.node.resumption import SubscriptionStore
from twin.node.transport import UdpTransport
from twin.node.values import Typed
from twin.node.window import CommissioningWindow, WindowStatus

log = logging.getLogger(__name__)

#: How long a gracefully rebooting node waits at most for its subscribers to answer its last
#: reports (ShutDown among them) before it goes down.
SHUTDOWN_GRACE_S = 1.0
#: Device state files are rewritten at most this often (seconds of wall clock; at stop, always),
STATE_FLUSH_S = 1.0
#: ... and at most this many per step, so a thousand dirty devices (the first flush of a big home)
#: never hold the event loop all nodes share for long.
STATE_FLUSH_BATCH = 64
#: A node's subscriptions, resumed after a restart (twin/node/resumption.py).
SUBSCRIPTIONS_FILE = "subscriptions.json"
#: Descriptors a node process opens besides one UDP socket per node: mDNS, HTTP and its clients,
#: the storage files being written, logs.
SPARE_OPEN_FILES = 256


def ensure_open_files(nodes: int) -> None:
    """Every node holds a UDP socket: raise the soft RLIMIT_NOFILE (often 1,024, which a home of
    about a thousand nodes exceeds) up to what `nodes` need, within the hard limit. A hard limit
    too low is an OSError naming the fix, before any port is opened."""
    needed = nodes + SPARE_OPEN_FILES
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= needed:
        return
    if hard != resource.RLIM_INFINITY and hard < needed:
        raise OSError(f"{nodes} nodes need about {needed} open files, but this process may open at most "
                      f"{hard} (hard RLIMIT_NOFILE): raise it (ulimit -Hn, or LimitNOFILE= in a systemd "
                      f"unit) or serve fewer nodes")
    resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard))


class MatterNode:
    """A `NodeCore` on its own UDP port (IPv6 dual-stack, IPv4 where IPv6 is missing)."""

    def __init__(self, device: Any, core: NodeCore, port: int, host: str = "::"):
        self.device = device
        self.core = core
        self.port = port
        self.host = host
        self.transport: UdpTransport | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake_pending = False

    @property
    def link(self) -> LinkFaults | None:
        return self.transport.link if self.transport is not None else None

    @link.setter
    def link(self, link: LinkFaults | None) -> None:
        if self.transport is not None:
            self.transport.link = link

    @property
    def loop(self) -> asyncio.AbstractEventLoop | None:
        return self._loop

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self.transport = await UdpTransport.open(self.core, self._on_event, self.host, self.port)
        self.port = self.transport.port

    def poll(self) -> None:
        """Give the core a turn now (reports that are due go out; expiries fire)."""
        self._wake_pending = False
        if self.transport is not None:
            self.transport.execute(self.core.on_timer(self.transport.now_ms()))

    def wake(self) -> None:
        """Thread-safe: poll soon on the loop (a subscribed attribute changed somewhere)."""
        if self._loop is not None and not self._wake_pending:
            self._wake_pending = True
            with contextlib.suppress(RuntimeError):  # the loop already closed: nothing to wake
                self._loop.call_soon_threadsafe(self.poll)

    def _on_event(self, action: Any) -> None:
        log.debug("%s: %r", self.device.id, action)

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()
            self.transport = None


def _truncate_utf8(text: str, limit: int) -> str:
    data = text.encode()[:limit]
    return data.decode(errors="ignore")


class NodeManager:
    """A Matter node for every device of `home`, with codes, credentials, fabrics and mDNS.

    storage_dir/<device id>/ holds each node's DAC, fabrics and counters; storage_dir/pai/
    the PAI they share. `addresses` are advertised in mDNS (default: every non-loopback
    address); `interfaces` restricts the interfaces zeroconf uses (zeroconf's InterfaceChoice
    or a list of addresses / interface indexes). `rng` feeds the protocol (session ids,
    randoms, keys); it defaults to the OS CSPRNG, since those must not be predictable.
    """

    def __init__(self, home: NodeHome, storage_dir: str | Path, base_port: int = DEFAULT_BASE_PORT,
                 host: str = "::", addresses: list[str] | None = None, interfaces: Any = None,
                 seed: int | None = None, lock: Any = None, rng: random.Random | None = None,
                 reset_fabrics: bool = False, room_sensors: bool = True, as_bridge: bool = False,
                 open_windows: str | list[str] = "all", window_timeout_s: int | None = DEFAULT_WINDOW_TIMEOUT_S):
        self.home = home
        self.storage_dir = Path(storage_dir)
        # Device state from the last run (a power cycle: StartUp semantics apply), before any
        # node exists; from now on every change is saved (`poll` and `stop` flush).
        self.states = DeviceStateStore(self.storage_dir, dict(home.devices))
        with lock if lock is not None else contextlib.nullcontext():
            self.restored = self.states.restore()
        self._next_flush = 0.0
        self.bridge: Any = None
        if as_bridge:
            self.bridge = build_bridge(home, room_sensors=room_sensors, allocation=self._load_allocation())
            self.devices = {self.bridge.id: self.bridge}
        else:
            self.devices = served_devices(home, room_sensors)
        count = len(self.devices)
        if not 1 <= base_port <= 0xFFFF - max(count - 1, 0):
            raise ValueError(f"base port {base_port}: the {count} nodes need ports "
                             f"{base_port}..{base_port + count - 1}; accepted: 1..65535")
        self.base_port = base_port
        self.host = host
        self.lock = lock if lock is not None else contextlib.nullcontext()
        self.rng = rng if rng is not None else random.SystemRandom()
        self.reset_fabrics = reset_fabrics
        self.pairings = home_pairings(home, seed, self.devices)
        self.window_timeout_s = self._check_timeout(window_timeout_s)
        if isinstance(open_windows, str) and open_windows in WINDOW_CHOICES:
            self.open_windows: str | list[str] = open_windows
        else:
            names = [open_windows] if isinstance(open_windows, str) else list(open_windows)
            unknown = [n for n in names if n not in self.devices]
            if unknown:
                raise ValueError(f"open windows: no node {', '.join(map(repr, unknown))}; accepted: all, all-qr, none, "
                                 f"or node ids ({', '.join(self.devices)})")
            self.open_windows = list(dict.fromkeys(names))
        self.window_plan = WindowPlan((), {}, 0)
        # "all-qr" (for controllers that pair by QR code, e.g. test labs): every window opens, and
        # the manual codes of nodes sharing a short discriminator are marked unusable instead.
        self.exclusive_windows = open_windows != "all-qr"
        self.nodes: dict[str, MatterNode] = {}
        advertiser_options: dict[str, Any] = {"addresses": addresses}
        if interfaces is not None:
            advertiser_options["interfaces"] = interfaces
        self.advertiser = Advertiser(random.Random(self.rng.getrandbits(64)), **advertiser_options)
        self._wanted: dict[str, dict[tuple[Any, ...], Any]] = {}
        self._closed_for: dict[str, list[str]] = {}   # opened node -> windows its opening closed
        self._published: dict[str, dict[tuple[Any, ...], Any]] = {}
        self._reconcilers: dict[str, asyncio.Task[None]] = {}
        #: Nodes whose records may have changed since the last sync (added to from any thread).
        self._touched: set[str] = set()
        self._shutting_down: dict[str, float] = {}   # rebooting node -> when its last turn ends at the latest
        self._unreachable: set[str] = set()   # nodes an offline or reboot fault holds down now
        self._check_in_tasks: set[asyncio.Task[None]] = set()
        self._home_bridged = set(home.devices)     # bridge mode: the home devices bridged
        self._unstepped: list[Any] = []
        self._find_unstepped()
        if self.bridge is not None:
            self._save_allocation()
            self.bridge.composition_listeners.append(self._recomposed)

    def _find_unstepped(self) -> None:
        """Servers the home does not step (room sensors, a bridge's own): `poll` runs their
        discrete events (an Identify that ends, say), so listeners hear it when it happens."""
        stepped = {id(s) for d in self.home.devices.values() for s in d.servers()}
        found: dict[int, Any] = {}
        for device in self.devices.values():
            for endpoint in device.endpoints.values():
                for server in endpoint.servers.values():
                    if id(server) not in stepped:
                        found[id(server)] = server
        self._unstepped = list(found.values())

    def _settle_unstepped(self) -> None:
        tick = self.home.clock.tick
        with self.lock:
            for server in self._unstepped:
                due = server.next_event_tick()
                if due is not None and due <= tick:
                    server.advance_to(tick)

    # -- bridge mode ----------------------------------------------------------------------------
    def _allocation_path(self) -> Path:
        return self._node_dir(BRIDGE_ID) / "bridge.json"

    def _load_allocation(self) -> dict[str, Any] | None:
        """The saved endpoint assignment, so controllers keep their endpoint ids."""
        path = self._allocation_path()
        if not path.exists():
            return None
        try:
            saved: dict[str, Any] = json.loads(path.read_text())
            return saved
        except (OSError, ValueError) as exc:
            raise ValueError(f"{path}: not a saved bridge endpoint allocation ({exc}); "
                             "delete it to number the bridged endpoints afresh") from exc

    def _save_allocation(self) -> None:

        path = self._allocation_path()
        path.parent.mkdir(parents=True, exist_ok=True)
        data = json.dumps(self.bridge.allocation(), indent=1, sort_keys=True).encode()
        if not path.exists() or path.read_bytes() != data:
            write_atomic(path, data)

    def _recomposed(self, bridge: Any) -> None:
        """A device was bridged or unbridged: keep its ids, and let the IM hear the new
        servers and report the changed tree (PartsList, wildcard paths) to subscribers."""
        self._save_allocation()
        node = self.nodes.get(bridge.id)
        if node is not None:
            node.core.im._watch()   # listen to the new endpoints' servers (the IM has no public hook)
            node.core.im.changed()

    def _sync_bridge(self) -> None:
        """Bridge devices added to the home at run time; unbridge those gone from it.
        (The home has no add/remove hook; comparing key sets each step costs next to nothing.)"""
        if self.home.devices.keys() == self._home_bridged:
            return
        with self.lock:
            for device_id in [d for d in self._home_bridged if d not in self.home.devices]:
                self.bridge.remove_device(device_id)
                self._home_bridged.discard(device_id)
            for device_id, device in list(self.home.devices.items()):
                if device_id not in self._home_bridged:
                    self.bridge.add_device(device)
                    self._home_bridged.add(device_id)

    def codes(self) -> list[dict[str, Any]]:
        """Pairing codes and ports of every node, in the home's device order."""
        return [self._codes_row(index, device_id) for index, device_id in enumerate(self.pairings)]

    def _codes_row(self, index: int, device_id: str) -> dict[str, Any]:
        node = self.nodes.get(device_id)
        return {**self.pairings[device_id].to_json(), "name": device_name(self.home, self.devices[device_id]),
                "port": node.port if node is not None else self.base_port + index, **self._window_state(node)}

    def _window_state(self, node: MatterNode | None) -> dict[str, Any]:
        """No lock taken: `GET /codes` calls `codes()` with the (non-reentrant) lock held."""
        if node is None:
            return {}
        window = node.core.commissioning.window
        discriminator, expires = window.discriminator, window.expires_ms
        if discriminator is None:
            return {"window": "closed"}
        left = None
        if expires is not None:
            left = max(0, (expires - node.core.commissioning.now_ms() + 999) // 1000)
        # An administrator's enhanced window has a discriminator (and code) of its own.
        own = discriminator == node.core.pairing.discriminator
        shared = any(other is not node and (other.core.commissioning.window.discriminator or -256) >> 8
                     == discriminator >> 8 for other in self.nodes.values())
        state = "open" if own else "open (administrator's code)"
        return {"window": state, "window_closes_in_s": left, "manual_code_usable": own and not shared}

    # -- commissioning windows --------------------------------------------------------------
    @staticmethod
    def _check_timeout(timeout_s: int | None) -> int | None:
        low, high = CommissioningWindow.MIN_TIMEOUT_S, CommissioningWindow.MAX_TIMEOUT_S
        if timeout_s is not None and not low <= timeout_s <= high:
            raise ValueError(f"commissioning window timeout {timeout_s} s: the spec allows {low}..{high} s")
        return timeout_s

    def _apply_window_plan(self) -> None:
        """At start: open the windows asked for (`open_windows`), as many as keep every open
        window's manual code unique; close the rest."""
        order = pairing_order(self.home, self.devices)
        with self.lock:
            if self.open_windows in ("all", "all-qr"):   # every node without a fabric, as at power-on
                wanted = [d for d in order if not len(self.nodes[d].core.commissioning.table)]
            elif self.open_windows == "none":
                wanted = []
            else:
                wanted = list(self.open_windows)
            if self.exclusive_windows:
                self.window_plan = plan_windows(self.pairings, wanted)
            else:
                self.window_plan = WindowPlan(tuple(wanted), {}, len(wanted))
            opened = set(self.window_plan.opened)
            for device_id, node in self.nodes.items():
                commissioning = node.core.commissioning
                if commissioning.window.is_open and device_id not in opened:
                    commissioning.window.close()
                    commissioning.window_changed()
            for device_id in self.window_plan.opened:
                self._open_window(device_id, self.window_timeout_s)
        if self.window_plan.held:
            log.debug("%s", self.window_plan.notice())   # `twin run` prints it with the codes

    def _open_window(self, device_id: str, timeout_s: int | None) -> list[str]:
        """Open `device_id`'s window with its own codes (lock held); close the open windows
        whose manual codes would also find it. Returns those closed."""
        node = self.nodes[device_id]
        commissioning = node.core.commissioning
        commissioning.window.open_initial(commissioning.now_ms(), timeout_s)
        commissioning.window_changed()   # the window listener closes the clashing ones
        node.core.touched = True
        closed = self._closed_for.pop(device_id, [])
        node.wake()                      # arm the timeout on the node's own timer
        return closed

    def open_window(self, device_id: str, timeout_s: int | None = None) -> dict[str, Any]:
        """`twin pair DEVICE`: open the node's commissioning window with its own codes for
        `timeout_s` (default the manager's), as a button press on a real product does. Any other
        open window with the same short discriminator closes (the latest opening wins), so the
        manual code reaches this node. Thread-safe. Returns its codes row plus `closed`."""
        if device_id not in self.nodes:
            raise ValueError(f"no node {device_id!r}; accepted: {', '.join(self.nodes)}")
        timeout_s = self._check_timeout(self.window_timeout_s if timeout_s is None else timeout_s)
        with self.lock:
            closed = self._open_window(device_id, timeout_s)
        for other in closed:
            log.info("%s: commissioning window closed: %s opened one with the same short discriminator",
                     other, device_id)
        row = self._codes_row(list(self.pairings).index(device_id), device_id)   # not all rows: QR codes cost
        return {**row, "closed": closed}

    def _window_event(self, device_id: str, event: Any) -> None:
        """A node's window opened (twin pair, an administrator, the last fabric removed): the
        latest opening wins, so close every other open window with the same short
        discriminator. Runs inside the commissioning state, with the lock held."""
        if event.kind != "window_changed" or not self.exclusive_windows:
            return
        node = self.nodes.get(device_id)
        discriminator = node.core.commissioning.window.discriminator if node is not None else None
        if node is None or discriminator is None:
            return
        node.core.touched = True
        for other_id, other in self.nodes.items():
            window = other.core.commissioning.window
            if other_id != device_id and window.is_open and window.discriminator >> 8 == discriminator >> 8:
                window.close()
                other.core.commissioning.window_changed()
                other.core.touched = True
                self._closed_for.setdefault(device_id, []).append(other_id)

    # -- lifecycle --------------------------------------------------------------------------
    async def start(self) -> None:
        """Build every node, open its UDP port and advertise it. On failure nothing stays open."""
        ensure_open_files(len(self.devices))
        with self.lock:
            self.states.watch()
        try:
            for index, (device_id, device) in enumerate(self.devices.items()):
                core = self._build_core(device, self.pairings[device_id])
                node = MatterNode(device, core, self.base_port + index, self.host)
                await node.start()
                mrp = node_mrp(device)
                sleepy = (mrp.idle_interval_ms, mrp.active_threshold_ms) if mrp != NODE_MRP else None
                node.link = LinkFaults(self.home.faults, device_id, self.home.seed, poll=sleepy)
                self._follow_icd(device_id, node)
                # Listeners fire in whatever thread changed the attribute (HTTP tools too).
                core.im.on_dirty = node.wake
                core.check_ins.wake = node.wake
                self._adopt(device_id, node)
                if core.to_resume:
                    node.wake()
            self._apply_window_plan()
            self.sync_advertisements()
            self.home.bound_sender = self._send_bound
        except BaseException:
            await self.stop()
            raise

    def _adopt(self, device_id: str, node: MatterNode) -> None:
        self.nodes[device_id] = node
        node.core.commissioning.listeners.append(functools.partial(self._window_event, device_id))
        touch = functools.partial(self._touched.add, device_id)
        node.core.on_touched = touch
        node.core.on_check_ins = functools.partial(self._check_in, device_id)
        touch()
        # The advertised name is the NodeLabel: a label written by a tool or a controller shows
        # at the next sync, without re-deriving every node's records now and then.
        basic = node.device.endpoint(0).server(Clusters.BasicInformation)
        basic.listeners.append(lambda server, name: touch() if name == "NodeLabel" else None)

    async def stop(self) -> None:
        """Withdraw every advertisement (mDNS goodbyes), then close the ports; the device state
        is saved (durably) first."""
        with self.lock:
            self.states.flush(durable=True)
        for task in self._reconcilers.values():
            task.cancel()
        for task in self._reconcilers.values():
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._reconcilers.clear()
        if self.home.bound_sender == self._send_bound:
            self.home.bound_sender = None
        for task in list(self._check_in_tasks):
            task.cancel()
        for node in self.nodes.values():
            node.core.stopping = True   # the subscriptions stay stored: the next start resumes them
        self._announce_shutdown()
        try:
            await self.advertiser.close()
        finally:
            for node in self.nodes.values():
                node.close()
            self.nodes.clear()
            self._published.clear()

    def _announce_shutdown(self) -> None:
        """Log BasicInformation ShutDown on every node and send it to the subscribers that
        asked for it (best effort: the ports close right after). A node that will resume its
        subscriptions at the next start is restarting, not leaving (ShutDown is a SHOULD): a
        controller that saw ShutDown would hold the node unavailable until it subscribed anew,
        which the resumed subscription postpones."""
        with self.lock:
            for node in self.nodes.values():
                if not node.core.resumes_subscriptions():
                    node.core.im.shutdown()
        for node in self.nodes.values():
            node.poll()

    def poll(self) -> None:
        """Called after each simulation step: the servers the home does not step run their
        due events, then mDNS follows for the nodes whose commissioning state or label may have
        changed (touched), not all of them: with a thousand nodes a scan at every step was most
        of the idle CPU. Nodes are not polled: each runs on its own timer, and a change a
        subscriber wants wakes its node (`on_dirty`)."""
        if self.bridge is not None:
            self._sync_bridge()
        self._settle_unstepped()
        self._follow_faults()
        if self.states.dirty and time.monotonic() >= self._next_flush:
            with self.lock:
                self.states.flush(limit=STATE_FLUSH_BATCH)
            backlog = self.states.dirty and self.states.failing is None
            self._next_flush = time.monotonic() + (0 if backlog else STATE_FLUSH_S)
        self.sync_advertisements(everything=False)

    # -- faults (twin/faults.py; the link's own verdicts are in twin/node/faults.py) -----------
    def _follow_faults(self) -> None:
        """Reboot the nodes whose device started a reboot since the last poll (after one last
        turn with the link open: a graceful reboot's ShutDown goes out), and announce afresh
        the nodes coming back from offline or a reboot."""
        engine = self.home.faults
        if not engine.faults:
            return
        for device_id, node in self.nodes.items():
            boots = engine.boots(device_id)
            link = node.link   # None until the node's transport is open
            if link is not None and boots > link.boots:
                self._reboot(device_id, node, boots)
            down = engine.unreachable(device_id) is not None
            if down != (device_id in self._unreachable):
                self._unreachable.symmetric_difference_update({device_id})
                if not down:
                    self._reannounce(device_id)

    def _reboot(self, device_id: str, node: MatterNode, boots: int) -> None:
        """A reboot began: a graceful one logs ShutDown, made due at once, and the node keeps
        its link for last turns until its subscribers have answered every report (a report
        still unanswered would hold ShutDown back) or SHUTDOWN_GRACE_S passed. Then the link
        goes down and the core restarts: its sessions and subscriptions end."""
        deadline = self._shutting_down.get(device_id)
        if deadline is None:
            log.info("%s: rebooting (fault)", device_id)
            graceful = self.home.faults.graceful_reboot(device_id)
            if graceful:
                with self.lock:
                    node.core.im.shutdown()
            deadline = self._shutting_down[device_id] = time.monotonic() + (SHUTDOWN_GRACE_S if graceful else 0)
        node.poll()
        if node.core.im.reporting() and time.monotonic() < deadline:
            return   # the next poll tries again
        del self._shutting_down[device_id]
        if node.link is not None:
            node.link.boots = boots
        if node.transport is not None:
            node.transport.execute(node.core.reboot(node.transport.now_ms()))

    def _reannounce(self, device_id: str) -> None:
        """Back on the network: withdraw the node's records and publish them again, as a device
        whose network comes up announces itself, so a controller waiting to resubscribe tries
        now. (While down the records stay: other hosts' caches keep them too.)"""
        running = self._reconcilers.get(device_id)

        async def again() -> None:
            if running is not None and not running.done():
                await asyncio.gather(running, return_exceptions=True)
            published = self._published.setdefault(device_id, {})
            try:
                for key in list(published):
                    await self.advertiser.withdraw(device_id, published.pop(key))
            except Exception:
                log.exception("%s: mDNS withdrawal failed", device_id)
            self._wanted.pop(device_id, None)
            node = self.nodes.get(device_id)
            if node is not None:
                node.core.touched = True   # the next sync publishes the records again
        self._reconcilers[device_id] = asyncio.get_running_loop().create_task(again(), name=f"mdns {device_id}")

    def _follow_icd(self, device_id: str, node: MatterNode) -> None:
        """A LIT ICD switching between SIT and LIT operation (clients registered or not) changes
        how long a message waits for its poll and what it advertises; StayActiveRequest keeps
        its link awake."""
        icd = node.device.endpoint(0).servers.get(Clusters.IcdManagement.id) if 0 in node.device.endpoints else None
        if icd is None or getattr(icd, "lit_slow_poll_ms", None) is None:
            return

        def changed(server: Any, name: str) -> None:
            link = node.link
            if name == "OperatingMode" and link is not None:
                mrp = node_mrp(node.device)
                link.poll = (mrp.idle_interval_ms, mrp.active_threshold_ms)
                self._touched.add(device_id)
        icd.listeners.append(changed)
        icd.on_stay_active = lambda ms: node.link.stay_active(ms) if node.link is not None else None

    # -- Check-In messages of sleepy devices (twin/node/checkins.py) ---------------------------
    def _check_in(self, device_id: str, targets: list[CheckInTarget]) -> None:
        """Check-Ins are due (called in whatever thread gave the node its turn): send them from
        the loop, each once its client's address is found."""
        node = self.nodes.get(device_id)
        loop = node.loop if node is not None else None
        if loop is None:
            return

        def start() -> None:
            task = loop.create_task(self._send_check_ins(device_id, targets), name=f"check-in {device_id}")
            self._check_in_tasks.add(task)
            task.add_done_callback(self._check_in_done)
        with contextlib.suppress(RuntimeError):   # the loop already closed: the node is gone
            loop.call_soon_threadsafe(start)

    def _check_in_done(self, task: asyncio.Task[None]) -> None:
        self._check_in_tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("%s failed", task.get_name(), exc_info=task.exception())

    async def _send_check_ins(self, device_id: str, targets: list[CheckInTarget]) -> None:
        """Each client's address by operational discovery of its node id, else its last session's."""
        for target in targets:
            try:
                found = await self.advertiser.resolve_operational(target.compressed_fabric_id, target.node_id)
            except Exception:   # mDNS trouble: fall back on the last session's address
                log.exception("%s: resolving Check-In client %#x failed", device_id, target.node_id)
                found = []
            node = self.nodes.get(device_id)
            if node is None or node.transport is None:
                return
            address: Any = target.last_address
            if found:
                host, port = found[0]
                if len(node.transport.address) == 4 and ":" not in host:
                    host = f"::ffff:{host}"   # an IPv4 client from the dual-stack socket
                address = (host, port)
            if address is None:
                log.info("%s: no address for Check-In client %#x", device_id, target.node_id)
                continue
            node.transport.execute(node.core.send_check_in(target, address, node.transport.now_ms()))
            log.info("%s: Check-In sent to client %#x at %s", device_id, target.node_id, address)

    # -- a switch's commands to Binding targets on other nodes ---------------------------------
    def _send_bound(self, device_id: str, sends: list[dict[str, Any]]) -> None:
        """A hand pressed a switch whose Binding names other nodes (`Home.press`, any thread):
        from the loop, find each target node by operational discovery and have the switch's
        node invoke the commands there, over CASE as its own initiator."""
        node = self.nodes.get(device_id)
        loop = node.loop if node is not None else None
        if loop is None:
            log.info("%s: bound commands not sent: it is not served as its own node", device_id)
            return

        def start() -> None:
            task = loop.create_task(self._invoke_bound(device_id, sends), name=f"bound {device_id}")
            self._check_in_tasks.add(task)
            task.add_done_callback(self._check_in_done)
        with contextlib.suppress(RuntimeError):   # the loop already closed: the node is gone
            loop.call_soon_threadsafe(start)

    async def _invoke_bound(self, device_id: str, sends: list[dict[str, Any]]) -> None:
        by_target: dict[tuple[int, int], list[CommandData]] = {}
        for send in sends:
            cluster = getattr(Clusters, send["cluster"])
            command = getattr(cluster.Commands, send["command"])(**send["fields"])
            by_target.setdefault((send["fabric_index"], send["node"]), []).append(CommandData(
                CommandPath(send["endpoint"], cluster.id, command.command_id), Typed(type(command), command)))
        for (fabric_index, node_id), commands in by_target.items():
            node = self.nodes.get(device_id)
            if node is None or node.transport is None:
                return
            with self.lock:
                fabric = next((f for f in node.core.commissioning.to_case_fabrics()
                               if f.fabric_index == fabric_index), None)
            if fabric is None:
                log.info("%s: bound node %#x: fabric %d is gone", device_id, node_id, fabric_index)
                continue
            try:
                found = await self.advertiser.resolve_operational(fabric.compressed_fabric_id, node_id)
            except Exception:
                log.exception("%s: resolving bound node %#x failed", device_id, node_id)
                found = []
            if not found or node.transport is None:
                log.info("%s: bound node %#x not found on fabric %d", device_id, node_id, fabric_index)
                continue
            host, port = found[0]
            if len(node.transport.address) == 4 and ":" not in host:
                host = f"::ffff:{host}"   # an IPv4 node from the dual-stack socket
            node.transport.execute(node.core.invoke_remote(fabric_index, node_id, (host, port), commands,
                                                           node.transport.now_ms()))
            log.info("%s: %d bound command(s) sent to node %#x at %s", device_id, len(commands), node_id, host)

    def link_counts(self) -> dict[str, dict[str, int]]:
        """Per node: datagrams each way, drops, delays and MRP retransmissions its link saw."""
        return {device_id: dict(node.link.counts) for device_id, node in self.nodes.items() if node.link is not None}

    # -- building one node --------------------------------------------------------------------
    def _node_dir(self, device_id: str) -> Path:
        return self.storage_dir / device_id

    def _build_core(self, device: Any, pairing: Pairing) -> NodeCore:
        node_dir = self._node_dir(device.id)
        if self.reset_fabrics:
            FabricTable.reset(node_dir)
        # Keys from the OS CSPRNG: attestation identities must not be predictable from a seed.
        credentials = DeviceCredentials.load_or_create(node_dir, pairing.vendor_id, pairing.product_id,
                                                       pai_dir=self.storage_dir / "pai")
        loop = asyncio.get_running_loop()
        with self.lock:
            commissioning = NodeCommissioning(node_dir, device, credentials, pairing.passcode,
                                              pairing.discriminator, self.rng,
                                              now_ms=lambda: int(loop.time() * 1000))
            table = commissioning.table
            # Event numbers keep rising across restarts (Core spec): blocks reserved in storage.
            event_numbers = EventNumbers(table.counters.get("event_number", 0),
                                         persist=functools.partial(table.set_counter, "event_number"))
            im = InteractionModelServer(device, self.rng, event_numbers=event_numbers)
            im.can_change = self.states.can_save   # a full disk: refuse what could not be saved
            commissioning.diagnostics.test_events = FaultTriggers(self.home.faults, device.id)
            core = NodeCore(pairing, commissioning, im, self.rng, self.lock,
                            session_params=session_parameters(node_mrp(device)))
            core.keep_subscriptions(SubscriptionStore(FileStorage(node_dir / SUBSCRIPTIONS_FILE)))
        return core

    # -- mDNS ---------------------------------------------------------------------------------
    def _services(self, node: MatterNode) -> dict[tuple[Any, ...], Any]:
        pairing = node.core.pairing
        with self.lock:
            window = node.core.commissioning.window
            discriminator = window.discriminator  # None: window closed
            # CM=2 for a window an administrator opened with a new passcode (OpenCommissioningWindow),
            # CM=1 for one that takes the onboarding passcode (the initial or a basic window).
            mode = 2 if window.status == WindowStatus.kEnhancedWindowOpen else 1
            fabrics = node.core.commissioning.to_case_fabrics()
            label = str(_basic_information(node.device, "NodeLabel") or node.device.type.label)
        services: list[Any] = []
        if discriminator is not None:
            services.append(Commissionable(
                port=node.port, discriminator=discriminator, vendor_id=pairing.vendor_id,
                product_id=pairing.product_id, device_type=node.device.type.device_type_id,
                commissioning_mode=mode, device_name=_truncate_utf8(label, 32), mrp=node_mrp(node.device)))
        for fabric in fabrics:
            services.append(Operational(port=node.port, compressed_fabric_id=fabric.compressed_fabric_id,
                                        node_id=fabric.node_id, mrp=node_mrp(node.device)))
        return {s.key(): s for s in services}

    def sync_advertisements(self, everything: bool = True) -> None:
        """Start bringing each node's mDNS records in line with its state, where they differ
        (`everything=False`: only nodes touched since the last sync; deriving the records of
        every node at every step would be most of the idle CPU of a big home)."""
        if everything:
            self._touched.update(self.nodes)
        while self._touched:
            device_id = self._touched.pop()
            node = self.nodes.get(device_id)
            if node is None:
                continue
            node.core.touched = False
            wanted = self._services(node)
            if wanted == self._wanted.get(device_id):
                continue
            self._wanted[device_id] = wanted
            task = self._reconcilers.get(device_id)
            if task is None or task.done():
                self._reconcilers[device_id] = asyncio.get_running_loop().create_task(
                    self._reconcile(device_id), name=f"mdns {device_id}")

    async def _reconcile(self, device_id: str) -> None:
        published = self._published.setdefault(device_id, {})
        try:
            while published != self._wanted[device_id]:
                wanted = self._wanted[device_id]
                for key in [k for k in published if k not in wanted]:
                    await self.advertiser.withdraw(device_id, published.pop(key))
                for key, service in wanted.items():
                    if published.get(key) != service:
                        await self.advertiser.publish(device_id, service)
                        published[key] = service
        except Exception:
            # mDNS trouble must not stop the node: it still answers on its port.
            log.exception("%s: mDNS advertisement failed", device_id)
