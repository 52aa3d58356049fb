"""The node runtime: every device of a `twin.home.Home` as a commissionable Matter node.

Three layers, from the inside out:

- `NodeCore` (sans-IO): one node's `MessageLayer`, the PASE/CASE responders on the Secure
  Channel protocol, the Interaction Model server and the commissioning state. Fed datagrams,
  peer addresses and the time in ms; returns the actions to carry out (`Send` and notices).
  It has the `receive / on_timer / next_timer` shape of a message layer, so the existing
  asyncio `UdpTransport` drives it unchanged.
- `MatterNode`: that transport plus a core, on one UDP port.
- `NodeManager`: a node per device (`base_port + index`), pairing codes from the home seed,
  attestation credentials and fabrics in a storage directory, and the mDNS advertisements
  (commissionable while the window is open, operational per fabric), withdrawn on stop.

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
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chip.clusters import Objects as Clusters

from matter_protocol.case import CaseInitiator, CaseResponder
from matter_protocol.exchange import Deliver, Exchange, ExchangeFailed, MessageLayer, Send, SessionClosed
from matter_protocol.mdns import Commissionable, Mrp, Operational
from matter_protocol.message import ProtocolId, SecureChannelOpcode
from matter_protocol.pairing import DiscoveryCapabilities, SetupPayload, passcode_and_discriminator
from matter_protocol.pase import PaseResponder
from matter_protocol.session import UnsecuredSession
from matter_protocol.status_report import GeneralCode, SecureChannelStatus, StatusReport
from twin.aggregator import BRIDGE_ID, build_bridge
from twin.clock import TICKS_PER_SECOND, Pace, Pacer
from twin.node.advertiser import Advertiser
from twin.node.commissioning import NodeCommissioning
from twin.node.credentials import DeviceCredentials
from twin.node.device_state import DeviceStateStore
from twin.node.fabrics import FabricTable
from twin.node.faults import FaultTriggers, LinkFaults
from twin.node.files import FileStorage, write_atomic
from twin.node.im import EventNumbers, InteractionModelServer
from twin.node.resumption import SubscriptionStore, record_of, subscription_of
from twin.node.transport import MATTER_PORT, UdpTransport
from twin.node.window import CommissioningWindow, WindowStatus
from twin.room_sensors import room_sensor_devices

log = logging.getLogger(__name__)

__all__ = ["Pairing", "home_pairings", "pairing_order", "served_devices", "WindowPlan", "plan_windows",
           "device_name", "NodeCore", "MatterNode", "NodeManager", "run_home",
           "DEFAULT_BASE_PORT", "DEFAULT_WINDOW_TIMEOUT_S", "SHORT_DISCRIMINATORS"]

DEFAULT_BASE_PORT = MATTER_PORT   # the first node on Matter's port, the others above it
# A manual code carries 4 bits of the discriminator: at most this many open windows can each
# be found by their own manual code.
SHORT_DISCRIMINATORS = 16
# A PASE/CASE handshake that stops halfway is abandoned after this long, so a vanished
# commissioner cannot keep the node BUSY forever.
HANDSHAKE_TIMEOUT_MS = 60_000
#: How long a gracefully rebooting node waits at most for its subscribers to answer its last
#: reports (ShutDown among them) before it goes down.
SHUTDOWN_GRACE_S = 1.0
# At most this many PASE/CASE handshakes in progress per node; beyond it, a new one that got past
# its first message evicts the oldest other one (issue #12 item 2). Each one holds a reserved local
# session id, an ephemeral key pair and an exchange, so this also bounds reserved session ids.
# The CHIP SDK runs one CASE responder and one PASE at a time (its
# CHIP_CONFIG_SECURE_SESSION_POOL_SIZE keeps "1 reserved slot for CASEServer" and "1 for PASE" on
# top of 3 CASE sessions per fabric, Core spec 4.13.2.8); we let CASE handshakes run side by side,
# one for each of the spec's minimum 5 fabrics (SupportedFabrics >= 5) plus the PASE, with room to
# spare. PASE stays one at a time (BUSY).
MAX_HANDSHAKES = 8
#: `--open-windows` keywords; anything else is a list of node ids.
WINDOW_CHOICES = ("all", "all-qr", "none")
# Minimum wait a BUSY StatusReport asks the initiator to observe (its ProtocolData, u16 ms).
BUSY_WAIT_MS = 1000
NODE_MRP = Mrp()
#: Device state files are rewritten at most this often (seconds of wall clock; at stop, always),
STATE_FLUSH_S = 1.0
#: ... and at most this many per step, so a thousand dirty devices (the first flush of a big home)
#: never hold the event loop all nodes share for long.
STATE_FLUSH_BATCH = 64
#: A node's subscriptions, resumed after a restart (twin/node/resumption.py).
SUBSCRIPTIONS_FILE = "subscriptions.json"
SESSION_PARAMETERS = {"SESSION_IDLE_INTERVAL": NODE_MRP.idle_interval_ms,
                      "SESSION_ACTIVE_INTERVAL": NODE_MRP.active_interval_ms,
                      "SESSION_ACTIVE_THRESHOLD": NODE_MRP.active_threshold_ms}
_MATTER_EPOCH_UNIX = 946684800  # 2000-01-01T00:00:00Z


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


def matter_epoch_now() -> int:
    """Wall-clock seconds since the Matter epoch, for certificate validity in CASE."""
    return int(time.time()) - _MATTER_EPOCH_UNIX


# --- pairing codes ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Pairing:
    """What a node's commissioner needs, and what the node keeps to check it."""
    device_id: str
    passcode: int
    discriminator: int
    vendor_id: int
    product_id: int

    @property
    def setup_payload(self) -> SetupPayload:
        return SetupPayload(passcode=self.passcode, discriminator=self.discriminator,
                            vendor_id=self.vendor_id, product_id=self.product_id,
                            discovery=DiscoveryCapabilities.ON_NETWORK)

    @property
    def manual_code(self) -> str:
        return self.setup_payload.manual_code()

    @property
    def qr_code(self) -> str:
        return self.setup_payload.qr_code()

    def to_json(self) -> dict[str, Any]:
        return {"device": self.device_id, "manual_code": self.manual_code, "qr_code": self.qr_code,
                "discriminator": self.discriminator, "passcode": self.passcode,
                "vendor_id": self.vendor_id, "product_id": self.product_id}


def _basic_information(device: Any, attribute: str) -> Any:
    return device.endpoint(0).server(Clusters.BasicInformation).read(attribute)


def home_pairings(home: Any, seed: int | None = None,
                  devices: dict[str, Any] | None = None) -> dict[str, Pairing]:
    """Each device's passcode and discriminator, from the home seed and device id.

    `devices` (id -> Device) are the nodes to pair, default the home's devices; see
    `served_devices` for what the runtime serves.

    A device's codes depend only on (seed, device id) and the ids before it in `pairing_order`,
    so adding a device moves no earlier device's codes. Two rules move a drawn discriminator:
    - the first 16 nodes in that order get 16 different short discriminators (its upper 4 bits,
      all a manual code carries), so a home of up to 16 nodes can open every window at once and
      each manual code still finds exactly its own node (the lower 8 bits are kept);
    - no two nodes share a 12-bit discriminator (a QR code must find exactly one node): a clash
      moves the later id to the next free value.
    """
    seed = home.seed if seed is None else int(seed)
    devices = home.devices if devices is None else devices
    taken: set[int] = set()
    shorts: set[int] = set()
    found: dict[str, Pairing] = {}
    for device_id in pairing_order(home, devices):
        device = devices[device_id]
        # A str seed is hashed with SHA-512 by `random`: stable across runs and processes.
        rng = random.Random(f"matter-twin pairing|{seed}|{device_id}")
        passcode, discriminator = passcode_and_discriminator(rng)
        if len(shorts) < SHORT_DISCRIMINATORS:
            short = discriminator >> 8
            while short in shorts:
                short = (short + 1) % SHORT_DISCRIMINATORS
            discriminator = (short << 8) | (discriminator & 0xFF)
        while discriminator in taken:
            discriminator = (discriminator + 1) & 0xFFF
        taken.add(discriminator)
        shorts.add(discriminator >> 8)
        found[device_id] = Pairing(device_id, passcode, discriminator,
                                   int(_basic_information(device, "VendorID")),
                                   int(_basic_information(device, "ProductID")))
    return {device_id: found[device_id] for device_id in devices}  # the given order


def pairing_order(home: Any, devices: Any) -> list[str]:
    """The order codes are assigned in, and windows opened at start: the home's devices by id,
    then the extra nodes (room sensors) by id, so those never move a device's codes."""
    return sorted(devices, key=lambda i: (i not in home.devices, i))


def served_devices(home: Any, room_sensors: bool = True) -> dict[str, Any]:
    """The devices served as nodes: the home's, then one sensor node per room (ids
    `sensors@<room>`, twin/room_sensors.py), so a controller reads rooms as real sensors."""
    devices = dict(home.devices)
    if room_sensors:
        devices.update((d.id, d) for d in room_sensor_devices(home).values())
    return devices


def device_name(home: Any, device: Any) -> str:
    """A node's display name: the home's name for its devices, NodeLabel for the others."""
    if device.id in home.devices:
        return home.device_info(device.id).get("name") or device.type.label
    return str(_basic_information(device, "NodeLabel") or device.type.label)


# --- which commissioning windows may be open together ---------------------------------------

DEFAULT_WINDOW_TIMEOUT_S = 900   # the spec's longest commissioning timeout (15 min)


@dataclass(frozen=True)
class WindowPlan:
    """Which of the asked-for windows open (`opened`, in order) and which stay closed because an
    earlier one holds their short discriminator (`held`: node -> the node holding it)."""
    opened: tuple[str, ...]
    held: dict[str, str]
    asked: int

    def notice(self) -> str:
        """One line for the user when some stay closed ("" when all opened)."""
        if not self.held:
            return ""
        more = (f"{self.asked} windows asked for, but a manual code carries only 4 bits of the discriminator, "
                f"so at most {SHORT_DISCRIMINATORS} can be open with every manual code reaching its own node. "
                if self.asked > SHORT_DISCRIMINATORS else "")
        return (f"{more}{len(self.held)} commissioning window(s) stay closed, each sharing its manual code's "
                f"short discriminator with an open one: {', '.join(sorted(self.held))}. "
                "Open one with `twin pair DEVICE`, or use its QR code then.")


def plan_windows(pairings: dict[str, Pairing], wanted: list[str],
                 already_open: dict[str, int] | None = None) -> WindowPlan:
    """Open the windows of `wanted` in order, skipping a node whose short discriminator an open
    window (one of `already_open`, node -> discriminator, or an earlier one of `wanted`) has:
    its manual code would find both nodes, and a controller may run PASE with the wrong one."""
    holders = {d >> 8: node for node, d in (already_open or {}).items()}
    opened: list[str] = []
    held: dict[str, str] = {}
    for node in wanted:
        short = pairings[node].discriminator >> 8
        if short in holders and holders[short] != node:
            held[node] = holders[short]
            continue
        holders[short] = node
        opened.append(node)
    return WindowPlan(tuple(opened), held, len(wanted))


# --- the sans-IO node ----------------------------------------------------------------------

@dataclass(eq=False)
class _Handshake:
    kind: str                      # "PASE" or "CASE"
    responder: PaseResponder | CaseResponder | CaseInitiator
    exchange: Exchange
    started_ms: float
    resume: dict[str, Any] | None = None   # CASE we opened to resume this stored subscription


class NodeCore:
    """One node, sans-IO. `commissioning` (twin/node/commissioning.py `NodeCommissioning`) owns
    the window, the PASE verifier and the fabric table; `im` is the Interaction Model server
    (twin/node/im.py). Their events (a fabric removed, the fail-safe expired) close the
    sessions the spec says must end.

    `lock` (any context manager) is held around every entry point: the HTTP tool API runs in
    other threads and touches the same cluster servers.
    """

    def __init__(self, pairing: Pairing, commissioning: Any, im: Any, rng: random.Random,
                 lock: Any = None, wall_clock: Callable[[], int] = matter_epoch_now):
        self.pairing = pairing
        self.commissioning = commissioning
        self.im = im
        self.rng = rng
        self.lock = lock if lock is not None else contextlib.nullcontext()
        self.wall_clock = wall_clock
        self.layer = MessageLayer(rng)
        self.layer.register(ProtocolId.SECURE_CHANNEL, "secure channel")
        self.layer.register(ProtocolId.INTERACTION_MODEL, "interaction model")
        self._handshakes: dict[Exchange, _Handshake] = {}
        self._events: list[Any] = []  # NodeEvents from commissioning, handled between messages
        commissioning.listeners.append(self._events.append)
        #: Called (any thread) when `touched` is set, so the runtime re-derives only these nodes' records.
        self.on_touched: Callable[[], None] | None = None
        # Every commissioning event (window opened or closed, fabric added, updated or removed,
        # fail-safe rollback) may change what the node advertises.
        commissioning.listeners.append(self._touch)
        self.counts = {"PASE established": 0, "PASE failed": 0, "CASE established": 0,
                       "CASE failed": 0, "dropped": 0}
        # Set when the commissioning state may have changed (a commissioning event, a commissioning
        # timer fired): the runtime then re-derives this node's mDNS records.
        self._touched = True
        #: Where subscriptions persist (None: nowhere); `to_resume` are the stored ones this node
        #: resumes on its first turn (`resume_subscriptions`).
        self.subscription_store: SubscriptionStore | None = None
        self.to_resume: list[dict[str, Any]] = []
        self._resuming: list[dict[str, Any]] = []
        self.stopping = False

    @property
    def touched(self) -> bool:
        return self._touched

    @touched.setter
    def touched(self, value: bool) -> None:
        self._touched = value
        if value and self.on_touched is not None:
            self.on_touched()

    def _touch(self, event: Any = None) -> None:
        self.touched = True

    # -- subscriptions across restarts --------------------------------------------------------
    def keep_subscriptions(self, store: SubscriptionStore) -> None:
        """Persist this node's subscriptions in `store` and resume the ones it holds."""
        self.subscription_store = store
        self.to_resume = store.load()
        self.im.on_subscriptions = self._save_subscriptions

    def resumes_subscriptions(self) -> bool:
        """Whether the next start resumes subscriptions of this node (it keeps them stored)."""
        return self.subscription_store is not None and any(
            record_of(s) is not None for s in self.im.subscriptions.values())

    def _save_subscriptions(self) -> None:
        if self.subscription_store is None or self.stopping:
            return   # going down: what is stored is what the next start resumes
        records = [r for s in self.im.subscriptions.values() if (r := record_of(s)) is not None]
        live = {r["id"] for r in records}
        records += [r for r in self._resuming if r["id"] not in live]   # still being resumed
        try:
            self.subscription_store.save(records)
        except OSError as err:
            log.warning("%s: could not store subscriptions: %s", self.pairing.device_id, err)

    def _resume_subscriptions(self, now_ms: float) -> list:
        """Open CASE to each stored subscriber (the address its messages last came from); the
        subscription resumes when the session is up (`_finish`)."""
        records, self.to_resume = self.to_resume, []
        fabrics = {f.fabric_index: f for f in self.commissioning.to_case_fabrics()}
        actions: list = []
        for record in records:
            fabric = fabrics.get(record.get("fabric_index"))
            if fabric is None:
                continue   # the fabric was removed since
            try:
                local_id = self.layer.sessions.allocate_id()
            except RuntimeError:
                break
            initiator = CaseInitiator(fabric, int(record["node_id"]), local_id, rng=self.rng,
                                      session_params=SESSION_PARAMETERS, at=self.wall_clock())
            session = self.layer.open_unsecured(tuple(record["address"]), now_ms)
            session.pinned = True
            exchange = self.layer.new_exchange(session, ProtocolId.SECURE_CHANNEL, handler="secure channel")
            self._handshakes[exchange] = _Handshake("CASE", initiator, exchange, now_ms, resume=record)
            self._resuming.append(record)
            log.info("%s: resuming subscription 0x%08x of node %#x", self.pairing.device_id, record["id"],
                     record["node_id"])
            for opcode, payload in initiator.start():
                actions += exchange.send(opcode, payload, now_ms)
        return actions

    # -- a reboot fault (twin/faults.py) ---------------------------------------------------
    def reboot(self, now_ms: float) -> list:
        """The device restarted: every session, handshake and subscription is gone (they lived in
        RAM; a subscriber finds out and subscribes again), an armed fail-safe rolls back, and
        RebootCount goes up. Fabrics, keys and counters stay: they are non-volatile."""
        with self.lock:
            actions: list = []
            for hs in list(self._handshakes.values()):
                self.layer.abort_exchange(hs.exchange)
                actions += self._finish(hs, now_ms)
            self.to_resume, self._resuming = [], []
            sessions = [*self.layer.sessions.secure_sessions(), *self.layer.sessions.unsecured_sessions()]
            for session in sessions:
                actions += self.layer.close_session(session, now_ms, notify=False)
            if self.commissioning.failsafe.armed:
                self.commissioning.expire_failsafe()
            table = self.commissioning.table
            table.set_counter("reboot_count", table.counters.get("reboot_count", 0) + 1)
            self.touched = True
            return self._process(actions, now_ms)

    # -- the message-layer shape UdpTransport drives ----------------------------------------
    def receive(self, datagram: bytes, peer_address: Any, now_ms: float) -> list:
        with self.lock:
            return self._process(self.layer.receive(datagram, peer_address, now_ms), now_ms)

    def on_timer(self, now_ms: float) -> list:
        with self.lock:
            actions = self.layer.on_timer(now_ms)
            if self.to_resume:
                actions += self._resume_subscriptions(now_ms)
            for hs in [h for h in self._handshakes.values()
                       if now_ms - h.started_ms >= HANDSHAKE_TIMEOUT_MS]:
                log.info("%s: %s handshake abandoned after %d s", self.pairing.device_id, hs.kind,
                         HANDSHAKE_TIMEOUT_MS // 1000)
                actions += self._finish(hs, now_ms)
            due = self.commissioning.next_timer()
            if due is not None and due <= now_ms:
                self.touched = True      # the window or the fail-safe may expire now
            self.commissioning.poll(int(now_ms))
            actions += self.im.on_timer(now_ms) or []
            return self._process(actions, now_ms)

    def next_timer(self) -> float | None:
        with self.lock:
            due = [self.layer.next_timer(), self.im.next_timer(), self.commissioning.next_timer(),
                   *(h.started_ms + HANDSHAKE_TIMEOUT_MS for h in self._handshakes.values())]
        due = [d for d in due if d is not None]
        return min(due) if due else None

    # -- dispatch -----------------------------------------------------------------------------
    def _process(self, actions: list, now_ms: float) -> list:
        """Turn Deliver actions into the handlers' answers, recursively; keep the rest."""
        out: list = []
        pending = list(actions)
        while pending or self._events:
            if not pending:
                pending = self._on_node_event(self._events.pop(0), now_ms)
                continue
            action = pending.pop(0)
            if isinstance(action, Deliver):
                try:
                    pending[:0] = self._deliver(action, now_ms)
                except Exception:
                    # A bug in a handler must not take the node (or its neighbours) down.
                    log.exception("%s: handling %r failed", self.pairing.device_id, action)
                    pending[:0] = action.exchange.close(now_ms) if not action.exchange.closed else []
                continue
            if isinstance(action, ExchangeFailed):
                hs = self._handshakes.get(action.exchange)
                if hs is not None:
                    pending[:0] = self._finish(hs, now_ms)
                else:
                    pending[:0] = self.im.exchange_failed(action.exchange, now_ms) or []
            elif isinstance(action, SessionClosed):
                pending[:0] = self._session_closed(action.session, now_ms)
            elif not isinstance(action, Send):
                self.counts["dropped"] += 1
            out.append(action)
        return out

    def _deliver(self, event: Deliver, now_ms: float) -> list:
        if event.exchange.handler == "interaction model":
            return self.im.handle(event.session, event.exchange, event.opcode, event.payload, now_ms) or []
        return self._secure_channel(event, now_ms)

    def _session_closed(self, session: Any, now_ms: float) -> list:
        # A handshake whose unsecured session was evicted from the session table goes with it.
        actions: list = []
        for hs in [h for h in self._handshakes.values() if h.exchange.session is session]:
            actions += self._finish(hs, now_ms)
        return actions + (self.im.session_closed(session, now_ms) or [])

    def _on_node_event(self, event: Any, now_ms: float) -> list:
        """Sessions that must end: a removed fabric's, and on fail-safe expiry the PASE
        sessions and those of the fabrics it rolled back (Core spec 11.10.7.2.2)."""
        if event.kind == "fabric_removed":
            doomed = self.layer.sessions.find(fabric_index=event.fabric_index)
        elif event.kind == "failsafe_expired":
            doomed = [s for s in self.layer.sessions.secure_sessions()
                      if s.peer_node_id is None or s.fabric_index in event.removed]
        else:
            return []
        actions: list = []
        for session in doomed:
            actions += self.layer.close_session(session, now_ms)
        return actions

    # -- Secure Channel: PASE and CASE --------------------------------------------------------
    def _secure_channel(self, event: Deliver, now_ms: float) -> list:
        exchange = event.exchange
        hs = self._handshakes.get(exchange)
        if hs is None:
            if event.session.is_secure:
                return exchange.close(now_ms)  # handshakes run on the unsecured session only
            if event.opcode == SecureChannelOpcode.PBKDFParamRequest:
                refusal = self._pase_refusal()
                if refusal is not None:
                    return exchange.send(SecureChannelOpcode.StatusReport, refusal.encode(), now_ms) \
                        + exchange.close(now_ms)
            elif event.opcode != SecureChannelOpcode.CASE_Sigma1:
                return exchange.close(now_ms)
            hs = self._start_handshake(event.opcode, exchange, now_ms)
            if hs is None:   # could not even start (no session id left): refuse, hold nothing
                report = StatusReport.secure_channel(GeneralCode.FAILURE, SecureChannelStatus.INVALID_PARAMETER)
                return exchange.send(SecureChannelOpcode.StatusReport, report.encode(), now_ms) \
                    + exchange.close(now_ms)
            self._handshakes[exchange] = hs
            if isinstance(exchange.session, UnsecuredSession):   # always: checked above
                exchange.session.pinned = True   # not evicted from the session table while it runs
        # Decoding and its failures live in one place, `Handshake.handle` (PASE and CASE alike): a
        # malformed message finishes the handshake with the StatusReport to send, and `_finish`
        # below frees its slot and session id at once. The guard is for bugs only.
        try:
            replies = hs.responder.handle(event.opcode, event.payload)
        except Exception as e:
            log.exception("%s: %s handshake failed unexpectedly", self.pairing.device_id, hs.kind)
            replies = hs.responder.abort(f"{type(e).__name__}: {e}")
        actions: list = []
        try:
            for opcode, payload in replies:
                actions += exchange.send(opcode, payload, now_ms)
        finally:
            if hs.responder.finished:
                actions += self._finish(hs, now_ms)
        if not hs.responder.finished:
            actions += self._make_room(hs, now_ms)
        return actions

    def _start_handshake(self, opcode: int, exchange: Exchange, now_ms: float) -> _Handshake | None:
        """A responder for a first PBKDFParamRequest or Sigma1, with a reserved local session id."""
        try:
            local_id = self.layer.sessions.allocate_id()
        except RuntimeError:
            log.warning("%s: no local session id left for a handshake", self.pairing.device_id)
            return None
        try:
            if opcode == SecureChannelOpcode.PBKDFParamRequest:
                pake = self.commissioning.pase_parameters()
                return _Handshake("PASE", PaseResponder(pake.verifier, pake.salt, pake.iterations, local_id,
                                                        rng=self.rng, session_params=SESSION_PARAMETERS),
                                  exchange, now_ms)
            return _Handshake("CASE", CaseResponder(self.commissioning.to_case_fabrics(), local_id, rng=self.rng,
                                                    session_params=SESSION_PARAMETERS, at=self.wall_clock()),
                              exchange, now_ms)
        except Exception:
            self.layer.sessions.release_id(local_id)
            raise

    def _make_room(self, keep: _Handshake, now_ms: float) -> list:
        """A new handshake got past its first message: beyond MAX_HANDSHAKES, evict the oldest other
        one in progress (its exchange dropped without a StatusReport, its session id freed). A flood
        of replayed Sigma1s then costs a bounded amount of state, and the newest peer, a genuine one
        too, always gets a slot. A first message that fails at once (malformed, unknown destination)
        never gets this far, so junk evicts nobody."""
        actions: list = []
        while len(self._handshakes) > MAX_HANDSHAKES:
            oldest = min((h for h in self._handshakes.values() if h is not keep), key=lambda h: h.started_ms)
            log.info("%s: %s handshake evicted: %d in progress", self.pairing.device_id, oldest.kind,
                     len(self._handshakes))
            self.layer.abort_exchange(oldest.exchange)
            actions += self._finish(oldest, now_ms)
        return actions

    def _pase_refusal(self) -> StatusReport | None:
        """Why a new PBKDFParamRequest is turned away now, as the StatusReport to send."""
        if self.commissioning.pase_parameters() is None:  # the commissioning window is closed
            return StatusReport.secure_channel(GeneralCode.FAILURE, SecureChannelStatus.INVALID_PARAMETER)
        if any(h.kind == "PASE" for h in self._handshakes.values()):
            return StatusReport(GeneralCode.BUSY, ProtocolId.SECURE_CHANNEL, SecureChannelStatus.BUSY,
                                BUSY_WAIT_MS.to_bytes(2, "little"))
        return None

    def _finish(self, hs: _Handshake, now_ms: float) -> list:
        """A handshake ended (success, failure or abandoned): install or release, close up."""
        self._handshakes.pop(hs.exchange, None)
        unsecured = hs.exchange.session
        if isinstance(unsecured, UnsecuredSession):
            unsecured.pinned = any(h.exchange.session is unsecured for h in self._handshakes.values())
        responder = hs.responder
        actions: list = []
        if responder.result is not None:
            local_node_id = responder.fabric.node_id if hs.kind == "CASE" else 0
            session = self.layer.add_secure_session(responder.result, hs.exchange.session.peer_address,
                                                    now_ms, local_node_id=local_node_id)
            # The commissioning servers read the attestation challenge as `session.keys`.
            session.keys = responder.result.keys
            if hs.kind == "CASE":
                session.peer_cats = responder.peer_cats  # CASE Authenticated Tags, for access control
            else:
                self.commissioning.on_pase_established(session)
            if hs.resume is not None:
                self._resuming.remove(hs.resume)
                sub = subscription_of(hs.resume, session, self.layer, "interaction model")
                self.im.resume(sub, now_ms)
                self._save_subscriptions()
            self.counts[f"{hs.kind} established"] += 1
            log.info("%s: %s session %d established", self.pairing.device_id, hs.kind,
                     session.local_session_id)
        else:
            self.layer.sessions.release_id(responder.local_session_id)
            self.counts[f"{hs.kind} failed"] += 1
            log.info("%s: %s failed: %s", self.pairing.device_id, hs.kind,
                     responder.error_message or "abandoned")
            # A failed commissioning attempt (Core spec 5.5, the SDK cites 13.3: 20 close the window) is a
            # PASE in which a passcode was tried: the node answered Pake1 with Pake2, and from cB
            # the peer can check the passcode it committed to in pA. Then it counts however the
            # exchange ends without a session: wrong cA in Pake3, the commissioner's error
            # StatusReport after it saw cB mismatch (the spec's test plan TC-CADMIN-1.9 case), a
            # malformed Pake3, abandoned, or evicted. A message that fails to parse before that
            # tested no passcode and does not count: otherwise 20 junk datagrams from anyone would
            # close the window. (The CHIP SDK counts every PASE error and timeout; we count only
            # the ones that can serve a brute force, which is what the limit is for.)
            if isinstance(responder, PaseResponder) and responder.passcode_tried:
                self.commissioning.on_pase_failed()
            if hs.resume is not None:   # the subscriber is gone or refused us: forget it
                self._resuming.remove(hs.resume)
                self._save_subscriptions()
        if not hs.exchange.closed:
            actions += hs.exchange.close(now_ms)
        return actions


# --- the asyncio shell -----------------------------------------------------------------------

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


# --- all the nodes of a home -------------------------------------------------------------------

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

    def __init__(self, home: Any, storage_dir: str | Path, base_port: int = DEFAULT_BASE_PORT,
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
        self._wanted: dict[str, dict[tuple, Any]] = {}
        self._closed_for: dict[str, list[str]] = {}   # opened node -> windows its opening closed
        self._published: dict[str, dict[tuple, Any]] = {}
        self._reconcilers: dict[str, asyncio.Task] = {}
        #: Nodes whose records may have changed since the last sync (added to from any thread).
        self._touched: set[str] = set()
        self._shutting_down: dict[str, float] = {}   # rebooting node -> when its last turn ends at the latest
        self._unreachable: set[str] = set()   # nodes an offline or reboot fault holds down now
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
            return json.loads(path.read_text())
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
            node.core.im._watch()   # listen to the new endpoints' servers (im.py has no public hook)
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

    def _open_now(self) -> dict[str, int]:
        return {device_id: node.core.commissioning.window.discriminator
                for device_id, node in self.nodes.items() if node.core.commissioning.window.is_open}

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
        if discriminator is None:
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
                node.link = LinkFaults(self.home.faults, device_id, self.home.seed)
                # Listeners fire in whatever thread changed the attribute (HTTP tools too).
                core.im.on_dirty = node.wake
                self._adopt(device_id, node)
                if core.to_resume:
                    node.wake()
            self._apply_window_plan()
            self.sync_advertisements()
        except BaseException:
            await self.stop()
            raise

    def _adopt(self, device_id: str, node: MatterNode) -> None:
        self.nodes[device_id] = node
        node.core.commissioning.listeners.append(functools.partial(self._window_event, device_id))
        touch = functools.partial(self._touched.add, device_id)
        node.core.on_touched = touch
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
            self._next_flush = time.monotonic() + (STATE_FLUSH_S if not self.states.dirty else 0)
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
            if boots > node.link.boots:
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
            commissioning.diagnostics.test_events = FaultTriggers(self.home.faults, device.id)
            core = NodeCore(pairing, commissioning, im, self.rng, self.lock)
            core.keep_subscriptions(SubscriptionStore(FileStorage(node_dir / SUBSCRIPTIONS_FILE)))
        return core

    # -- mDNS ---------------------------------------------------------------------------------
    def _services(self, node: MatterNode) -> dict[tuple, Any]:
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
                commissioning_mode=mode, device_name=_truncate_utf8(label, 32), mrp=NODE_MRP))
        for fabric in fabrics:
            services.append(Operational(port=node.port, compressed_fabric_id=fabric.compressed_fabric_id,
                                        node_id=fabric.node_id, mrp=NODE_MRP))
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


# --- the simulation clock in the loop ----------------------------------------------------------

async def run_home(home: Any, speed: float | Pace, lock: Any = None, on_step: Callable[[], None] | None = None,
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
