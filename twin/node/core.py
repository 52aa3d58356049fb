"""One Matter node, sans-IO: `NodeCore`.

Its message layer, the PASE/CASE responders on the Secure Channel protocol, the Interaction
Model server and the commissioning state. Fed datagrams, peer addresses and the time in ms; it
returns the actions to carry out (`Send` and notices). It has the `receive / on_timer /
next_timer` shape of a message layer, so the asyncio `UdpTransport` drives it unchanged.
"""
from __future__ import annotations

import contextlib
import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from chip.clusters import Objects as Clusters

from matter_protocol.case import CaseInitiator, CaseResponder
from matter_protocol.exchange import Action, Deliver, Exchange, ExchangeFailed, MessageLayer, Send, SessionClosed
from matter_protocol.interaction import (
    CommandData,
    InvokeRequest,
    InvokeResponse,
    Opcode,
    StatusResponse,
    decode_message,
)
from matter_protocol.mdns import Mrp
from matter_protocol.message import MessageHeader, ProtocolId, SecureChannelOpcode
from matter_protocol.pase import PaseResponder, initiator_random
from matter_protocol.session import SecureSession, UnsecuredSession
from matter_protocol.status_report import GeneralCode, SecureChannelStatus, StatusReport
from twin.node.checkins import CheckIns, CheckInTarget
from twin.node.pairing import Pairing
from twin.node.resumption import SubscriptionStore, record_of, subscription_of
from twin.ratelog import RateLimitedLog

log = logging.getLogger(__name__)
#: For what peers cause: rejected, replayed, evicted, abandoned handshakes (one line per kind and 10 s).
peer_log = RateLimitedLog(log)

# A PASE/CASE handshake that stops halfway is abandoned after this long, so a vanished
# commissioner cannot keep the node BUSY forever.
HANDSHAKE_TIMEOUT_MS = 60_000
# ... and as soon as the peer has been silent this long between two of its messages: the CHIP SDK
# waits 30 s for each PASE/CASE response (kSpake2p_Response_Timeout, kSigma_Response_Timeout).
HANDSHAKE_STEP_TIMEOUT_MS = 30_000
# At most this many PASE/CASE handshakes in progress per node; beyond it, a new one that got past
# its first message evicts the oldest other one (issue #12 item 2). Each one holds a reserved local
# session id, an ephemeral key pair and an exchange, so this also bounds reserved session ids.
# The CHIP SDK runs one CASE responder and one PASE at a time (its
# CHIP_CONFIG_SECURE_SESSION_POOL_SIZE keeps "1 reserved slot for CASEServer" and "1 for PASE" on
# top of 3 CASE sessions per fabric, Core spec 4.13.2.8); we let CASE handshakes run side by side,
# one for each of the spec's minimum 5 fabrics (SupportedFabrics >= 5) plus the PASE, with room to
# spare.
MAX_HANDSHAKES = 8
# PASE handshakes that may run side by side (issue #32 item 1). The CHIP SDK runs one: then anyone
# who sends one PBKDFParamRequest and falls silent holds the node BUSY for the whole timeout, and
# one such request a second keeps it uncommissionable. Here a new PBKDFParamRequest, when all are
# taken, preempts the one silent longest among those that have not made progress (no Pake1 yet: no
# passcode was tried, so it is no failed attempt); a genuine commissioner, which sends Pake1 a PBKDF
# computation after its request, is preempted only if this many requests arrive in between. Only
# when every slot has made progress is a new one answered BUSY. Any number of successful PASE
# sessions is harmless: the fail-safe binds commissioning to one of them (ArmFailSafe answers BUSY).
MAX_PASE_HANDSHAKES = 4
# Handshakes one peer address may have in progress without progress: a newer one from the same
# address replaces its own oldest, so one sender cannot push out everybody else's (issue #32:
# responder work bounded per peer). Addresses can be forged, so this is on top of the caps above.
MAX_HANDSHAKES_PER_PEER = 4
# Initiator randoms of recent handshakes, per node: a first message (Sigma1, PBKDFParamRequest) that
# repeats one is a replay, refused before any work (no Sigma2, no slot, nobody evicted; issue #32
# item 2). A genuine initiator draws a fresh 32-byte random for each handshake (Core spec 4.13.2.3);
# MRP retransmissions of the same message are caught earlier, by the message counter.
RECENT_RANDOMS = 64
# Minimum wait a BUSY StatusReport asks the initiator to observe (its ProtocolData, u16 ms).
BUSY_WAIT_MS = 1000
NODE_MRP = Mrp()


def session_parameters(mrp: Mrp) -> dict[str, int]:
    """The session parameters a node offers in PASE and CASE: its MRP intervals."""
    return {"SESSION_IDLE_INTERVAL": mrp.idle_interval_ms, "SESSION_ACTIVE_INTERVAL": mrp.active_interval_ms,
            "SESSION_ACTIVE_THRESHOLD": mrp.active_threshold_ms}


SESSION_PARAMETERS = session_parameters(NODE_MRP)


def node_mrp(device: Any) -> Mrp:
    """A node's MRP intervals: a sleepy device's (IcdManagement on endpoint 0: its slow and fast
    polling, clusters/icd.py) or the always-on default."""
    root = device.endpoints.get(0)
    icd = root.servers.get(Clusters.IcdManagement.id) if root is not None else None
    if icd is None or not hasattr(icd, "mrp"):
        return NODE_MRP
    idle, active, threshold = icd.mrp()
    return Mrp(idle, active, threshold, icd=icd.icd_txt() if hasattr(icd, "icd_txt") else None)
_MATTER_EPOCH_UNIX = 946684800  # 2000-01-01T00:00:00Z


def matter_epoch_now() -> int:
    """Wall-clock seconds since the Matter epoch, for certificate validity in CASE."""
    return int(time.time()) - _MATTER_EPOCH_UNIX


@dataclass(eq=False)
class _Handshake:
    kind: str                      # "PASE" or "CASE"
    responder: PaseResponder | CaseResponder | CaseInitiator
    exchange: Exchange
    started_ms: float
    resume: dict[str, Any] | None = None   # CASE we opened to resume this stored subscription
    then: list[CommandData] | None = None  # CASE we opened to send these commands (a Binding target)
    last_ms: float = 0.0                   # when the peer last sent a message on it

    def __post_init__(self) -> None:
        self.last_ms = max(self.last_ms, self.started_ms)

    @property
    def progressed(self) -> bool:
        """Past the point an unauthenticated stranger reaches for free: a PASE in which Pake1 came
        (a passcode is being tried, and its failure counts against the window), a CASE whose Sigma2
        the peer acknowledged (so it is no replay from a forged address), or one we opened that the
        peer answered."""
        responder = self.responder
        if isinstance(responder, PaseResponder):
            return responder.passcode_tried
        if isinstance(responder, CaseResponder):
            return responder.expecting == SecureChannelOpcode.CASE_Sigma3 and self.exchange.mrp.outstanding is None
        return responder.expecting != SecureChannelOpcode.CASE_Sigma2   # ours: the peer answered

    def deadline(self) -> float:
        return min(self.started_ms + HANDSHAKE_TIMEOUT_MS, self.last_ms + HANDSHAKE_STEP_TIMEOUT_MS)


def _peer_of(hs: _Handshake) -> Any:
    """The peer's IP address (not the port: a sender picks ports freely)."""
    address = hs.exchange.session.peer_address
    return address[0] if isinstance(address, tuple) else address


class NodeCore:
    """One node, sans-IO. `commissioning` (twin/node/commissioning.py `NodeCommissioning`) owns
    the window, the PASE verifier and the fabric table; `im` is the Interaction Model server
    (twin/node/im/). Their events (a fabric removed, the fail-safe expired) close the
    sessions the spec says must end.

    `lock` (any context manager) is held around every entry point: the HTTP tool API runs in
    other threads and touches the same cluster servers.
    """

    def __init__(self, pairing: Pairing, commissioning: Any, im: Any, rng: random.Random,
                 lock: Any = None, wall_clock: Callable[[], int] = matter_epoch_now,
                 session_params: dict[str, int] = SESSION_PARAMETERS):
        self.pairing = pairing
        self.session_params = session_params
        self.commissioning = commissioning
        self.im = im
        self.rng = rng
        self.lock = lock if lock is not None else contextlib.nullcontext()
        self.wall_clock = wall_clock
        self.layer = MessageLayer(rng)
        self.layer.register(ProtocolId.SECURE_CHANNEL, "secure channel")
        self.layer.register(ProtocolId.INTERACTION_MODEL, "interaction model")
        self._handshakes: dict[Exchange, _Handshake] = {}
        self._recent_randoms: dict[bytes, None] = {}   # insertion-ordered, at most RECENT_RANDOMS
        self._events: list[Any] = []  # NodeEvents from commissioning, handled between messages
        commissioning.listeners.append(self._events.append)
        #: Called (any thread) when `touched` is set, so the runtime re-derives only these nodes' records.
        self.on_touched: Callable[[], None] | None = None
        # Every commissioning event (window opened or closed, fabric added, updated or removed,
        # fail-safe rollback) may change what the node advertises.
        commissioning.listeners.append(self._touch)
        self.counts = {"PASE established": 0, "PASE failed": 0, "CASE established": 0,
                       "CASE failed": 0, "dropped": 0, "replayed": 0, "busy": 0}
        # Set when the commissioning state may have changed (a commissioning event, a commissioning
        # timer fired): the runtime then re-derives this node's mDNS records.
        self._touched = True
        #: Where subscriptions persist (None: nowhere); `to_resume` are the stored ones this node
        #: resumes on its first turn (`resume_subscriptions`).
        self.subscription_store: SubscriptionStore | None = None
        self.to_resume: list[dict[str, Any]] = []
        self._resuming: list[dict[str, Any]] = []
        self.stopping = False
        #: A sleepy device's Check-In messages (twin/node/checkins.py): when due, the targets go to
        #: `on_check_ins` (the asyncio shell finds their addresses, then calls `send_check_in`).
        self.check_ins = CheckIns(getattr(im, "device", None))
        self.on_check_ins: Callable[[list[CheckInTarget]], None] | None = None

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

    def _resume_subscriptions(self, now_ms: float) -> list[Action]:
        """Open CASE to each stored subscriber (the address its messages last came from); the
        subscription resumes when the session is up (`_finish`)."""
        records, self.to_resume = self.to_resume, []
        fabrics = {f.fabric_index: f for f in self.commissioning.to_case_fabrics()}
        actions: list[Action] = []
        for record in records:
            fabric = fabrics.get(record.get("fabric_index"))
            if fabric is None:
                continue   # the fabric was removed since
            try:
                local_id = self.layer.sessions.allocate_id()
            except RuntimeError:
                break
            initiator = CaseInitiator(fabric, int(record["node_id"]), local_id, rng=self.rng,
                                      session_params=self.session_params, at=self.wall_clock())
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
    def reboot(self, now_ms: float) -> list[Action]:
        """The device restarted: every session, handshake and subscription is gone (they lived in
        RAM; a subscriber finds out and subscribes again), an armed fail-safe rolls back, and
        RebootCount goes up. Fabrics, keys and counters stay: they are non-volatile."""
        with self.lock:
            actions: list[Action] = []
            for hs in list(self._handshakes.values()):
                self.layer.abort_exchange(hs.exchange)
                actions += self._finish(hs, now_ms)
            self.to_resume, self._resuming = [], []
            sessions: list[SecureSession | UnsecuredSession] = [*self.layer.sessions.secure_sessions(),
                                                                *self.layer.sessions.unsecured_sessions()]
            for session in sessions:
                actions += self.layer.close_session(session, now_ms, notify=False)
            if self.commissioning.failsafe.armed:
                self.commissioning.expire_failsafe()
            table = self.commissioning.table
            table.set_counter("reboot_count", table.counters.get("reboot_count", 0) + 1)
            self.check_ins.booted(now_ms)
            self.touched = True
            return self._process(actions, now_ms)

    # -- the message-layer shape UdpTransport drives ----------------------------------------
    def receive(self, datagram: bytes, peer_address: Any, now_ms: float,
                decoded: tuple[MessageHeader, int] | None = None) -> list[Action]:
        with self.lock:
            return self._process(self.layer.receive(datagram, peer_address, now_ms, decoded), now_ms)

    def on_timer(self, now_ms: float) -> list[Action]:
        with self.lock:
            actions = self.layer.on_timer(now_ms)
            if self.to_resume:
                actions += self._resume_subscriptions(now_ms)
            for hs in [h for h in self._handshakes.values() if now_ms >= h.deadline()]:
                peer_log.info("abandoned", now_ms, "%s: %s handshake abandoned: the peer was silent %d s",
                              self.pairing.device_id, hs.kind, (now_ms - hs.last_ms) // 1000)
                actions += self._finish(hs, now_ms)
            due = self.commissioning.next_timer()
            if due is not None and due <= now_ms:
                self.touched = True      # the window or the fail-safe may expire now
            self.commissioning.poll(int(now_ms))
            actions += self.im.on_timer(now_ms) or []
            if self.check_ins.is_due(now_ms):
                targets = self.check_ins.due(now_ms, list(self.im.subscriptions.values()),
                                             list(self.layer.sessions.secure_sessions()),
                                             self.commissioning.to_case_fabrics())
                if targets and self.on_check_ins is not None:
                    self.on_check_ins(targets)
            return self._process(actions, now_ms)

    def send_check_in(self, target: CheckInTarget, address: Any, now_ms: float) -> list[Action]:
        """The Check-In message to `target`, now that its address is known."""
        with self.lock:
            return self._process(self.check_ins.message(self.layer, target, address, now_ms), now_ms)

    # -- a controller's commands to its Binding targets ---------------------------------------
    def invoke_remote(self, fabric_index: int, node_id: int, address: Any, commands: list[CommandData],
                      now_ms: float) -> list[Action]:
        """Send `commands` to node `node_id` of our fabric `fabric_index` (at `address`), one
        InvokeRequest each, on a CASE session to it: the one we have, else one we open first (as a
        bound switch does, Core spec 9.6). Each answer is logged (`_invoke_answered`)."""
        with self.lock:
            live = [s for s in self.layer.sessions.find(peer_node_id=node_id, fabric_index=fabric_index)
                    if not s.closed]
            if live:
                return self._process(self._send_invokes(live[-1], commands, now_ms), now_ms)
            fabric = next((f for f in self.commissioning.to_case_fabrics() if f.fabric_index == fabric_index), None)
            if fabric is None:
                log.info("%s: no fabric %d to reach node %#x on", self.pairing.device_id, fabric_index, node_id)
                return []
            try:
                local_id = self.layer.sessions.allocate_id()
            except RuntimeError:
                log.warning("%s: no local session id left to reach node %#x", self.pairing.device_id, node_id)
                return []
            initiator = CaseInitiator(fabric, node_id, local_id, rng=self.rng,
                                      session_params=self.session_params, at=self.wall_clock())
            session = self.layer.open_unsecured(tuple(address), now_ms)
            session.pinned = True
            exchange = self.layer.new_exchange(session, ProtocolId.SECURE_CHANNEL, handler="secure channel")
            self._handshakes[exchange] = _Handshake("CASE", initiator, exchange, now_ms, then=commands)
            actions: list[Action] = []
            for opcode, payload in initiator.start():
                actions += exchange.send(opcode, payload, now_ms)
            return self._process(actions, now_ms)

    def _send_invokes(self, session: SecureSession, commands: list[CommandData], now_ms: float) -> list[Action]:
        actions: list[Action] = []
        for command in commands:
            exchange = self.layer.new_exchange(session, ProtocolId.INTERACTION_MODEL, handler="invoke client")
            actions += exchange.send(Opcode.InvokeRequest, InvokeRequest(invoke_requests=[command]).encode(), now_ms)
        return actions

    def _invoke_answered(self, event: Deliver, now_ms: float) -> list[Action]:
        """The target's answer to one of our InvokeRequests: log each command's status."""
        peer = f"node {event.session.peer_node_id:#x}"
        try:
            message = decode_message(event.opcode, event.payload)
        except Exception as err:   # a malformed answer is the target's problem, not ours
            log.warning("%s: unreadable answer from %s: %s", self.pairing.device_id, peer, err)
            message = None
        if isinstance(message, InvokeResponse):
            for ib in message.invoke_responses:
                status = getattr(ib, "status", None)
                path = status.path if status is not None else getattr(getattr(ib, "command", None), "path", None)
                code = status.status.status if status is not None and status.status is not None else 0
                log.info("%s: bound command %#x/%#x to %s endpoint %s: status %#x", self.pairing.device_id,
                         path.cluster if path else 0, path.command if path else 0, peer,
                         path.endpoint if path else "?", code)
        elif isinstance(message, StatusResponse):
            log.info("%s: bound command to %s: status %#x", self.pairing.device_id, peer, message.status)
        return event.exchange.close(now_ms) if not event.exchange.closed else []

    def next_timer(self) -> float | None:
        with self.lock:
            due = [self.layer.next_timer(), self.im.next_timer(), self.commissioning.next_timer(),
                   self.check_ins.next_ms, *(h.deadline() for h in self._handshakes.values())]
        due = [d for d in due if d is not None]
        return min(due) if due else None

    # -- dispatch -----------------------------------------------------------------------------
    def _process(self, actions: list[Action], now_ms: float) -> list[Action]:
        """Turn Deliver actions into the handlers' answers, recursively; keep the rest."""
        out: list[Action] = []
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

    def _deliver(self, event: Deliver, now_ms: float) -> list[Action]:
        if event.exchange.handler == "invoke client":
            return self._invoke_answered(event, now_ms)
        if event.exchange.handler == "interaction model":
            return self.im.handle(event.session, event.exchange, event.opcode, event.payload, now_ms) or []
        return self._secure_channel(event, now_ms)

    def _session_closed(self, session: Any, now_ms: float) -> list[Action]:
        # A handshake whose unsecured session was evicted from the session table goes with it.
        actions: list[Action] = []
        for hs in [h for h in self._handshakes.values() if h.exchange.session is session]:
            actions += self._finish(hs, now_ms)
        return actions + (self.im.session_closed(session, now_ms) or [])

    def _on_node_event(self, event: Any, now_ms: float) -> list[Action]:
        """Sessions that must end: a removed fabric's, and on fail-safe expiry the PASE
        sessions and those of the fabrics it rolled back (Core spec 11.10.7.2.2)."""
        if event.kind == "fabric_removed":
            doomed = self.layer.sessions.find(fabric_index=event.fabric_index)
        elif event.kind == "failsafe_expired":
            doomed = [s for s in self.layer.sessions.secure_sessions()
                      if s.peer_node_id is None or s.fabric_index in event.removed]
        else:
            return []
        actions: list[Action] = []
        for session in doomed:
            actions += self.layer.close_session(session, now_ms)
        return actions

    # -- Secure Channel: PASE and CASE --------------------------------------------------------
    def _secure_channel(self, event: Deliver, now_ms: float) -> list[Action]:
        exchange = event.exchange
        hs = self._handshakes.get(exchange)
        if hs is None:
            if event.session.is_secure:
                return exchange.close(now_ms)  # handshakes run on the unsecured session only
            if event.opcode not in (SecureChannelOpcode.PBKDFParamRequest, SecureChannelOpcode.CASE_Sigma1):
                return exchange.close(now_ms)
            refusal = self._refusal(event.opcode, event.payload, now_ms)
            if refusal is not None:
                return exchange.send(SecureChannelOpcode.StatusReport, refusal.encode(), now_ms) \
                    + exchange.close(now_ms)
            hs = self._start_handshake(event.opcode, exchange, now_ms)
            if hs is None:   # could not even start (no session id left): refuse, hold nothing
                report = StatusReport.secure_channel(GeneralCode.FAILURE, SecureChannelStatus.INVALID_PARAMETER)
                return exchange.send(SecureChannelOpcode.StatusReport, report.encode(), now_ms) \
                    + exchange.close(now_ms)
            self._handshakes[exchange] = hs
            if isinstance(exchange.session, UnsecuredSession):   # always: checked above
                exchange.session.pinned = True   # not evicted from the session table while it runs
        elif event.opcode == self._first_opcode(hs) and hs.responder.expecting != event.opcode:
            # The first message again, under a new message counter (a duplicate counter never gets
            # here): a replay aimed at this exchange. It is no step of the handshake, and a stranger
            # must not be able to end a genuine one with it.
            self.counts["replayed"] += 1
            peer_log.info("replayed", now_ms, "%s: a replayed first message on a %s handshake in progress ignored",
                          self.pairing.device_id, hs.kind)
            return []
        else:
            hs.last_ms = now_ms
        if exchange.mrp.outstanding is not None:
            # A message of the handshake before the ack of our last one (its ack was lost, or never
            # sent): each step answers the content of the one before, so it acknowledges it, and a
            # message that is no step ends the handshake anyway. Without this the reply would be a
            # second outstanding message on the exchange (an ExchangeError, and no StatusReport).
            exchange.mrp.implicit_ack()
        # Decoding and its failures live in one place, `Handshake.handle` (PASE and CASE alike): a
        # malformed message finishes the handshake with the StatusReport to send, and `_finish`
        # below frees its slot and session id at once. The guard is for bugs only.
        first = hs.responder.expecting in (SecureChannelOpcode.PBKDFParamRequest, SecureChannelOpcode.CASE_Sigma1)
        try:
            replies = hs.responder.handle(event.opcode, event.payload)
        except Exception as e:
            log.exception("%s: %s handshake failed unexpectedly", self.pairing.device_id, hs.kind)
            replies = hs.responder.abort(f"{type(e).__name__}: {e}")
        if first and hs.responder.error is None:
            self._remember_random(event.payload)
        actions: list[Action] = []
        try:
            for opcode, payload in replies:
                actions += exchange.send(opcode, payload, now_ms)
        finally:
            if hs.responder.finished:
                actions += self._finish(hs, now_ms)
        if not hs.responder.finished:
            actions += self._make_room(hs, now_ms)
        return actions

    @staticmethod
    def _first_opcode(hs: _Handshake) -> int:
        return SecureChannelOpcode.PBKDFParamRequest if hs.kind == "PASE" else SecureChannelOpcode.CASE_Sigma1

    def _remember_random(self, payload: bytes) -> None:
        random_ = initiator_random(payload)
        if random_ is not None:
            self._recent_randoms[random_] = None
            while len(self._recent_randoms) > RECENT_RANDOMS:
                del self._recent_randoms[next(iter(self._recent_randoms))]

    def _start_handshake(self, opcode: int, exchange: Exchange, now_ms: float) -> _Handshake | None:
        """A responder for a first PBKDFParamRequest or Sigma1, with a reserved local session id."""
        try:
            local_id = self.layer.sessions.allocate_id()
        except RuntimeError:
            peer_log.warning("no session id", now_ms, "%s: no local session id left for a handshake",
                             self.pairing.device_id)
            return None
        try:
            if opcode == SecureChannelOpcode.PBKDFParamRequest:
                pake = self.commissioning.pase_parameters()
                return _Handshake("PASE", PaseResponder(pake.verifier, pake.salt, pake.iterations, local_id,
                                                        rng=self.rng, session_params=self.session_params),
                                  exchange, now_ms)
            return _Handshake("CASE", CaseResponder(self.commissioning.to_case_fabrics(), local_id, rng=self.rng,
                                                    session_params=self.session_params, at=self.wall_clock()),
                              exchange, now_ms)
        except Exception:
            self.layer.sessions.release_id(local_id)
            raise

    def _make_room(self, keep: _Handshake, now_ms: float) -> list[Action]:
        """A new handshake got past its first message: beyond MAX_PASE_HANDSHAKES PASE ones or
        MAX_HANDSHAKES in all, evict the one silent longest among those that made no progress (its
        exchange dropped without a StatusReport, its session id freed). `_refusal` made sure there
        is one. A flood then costs a bounded amount of state, the newest peer, a genuine one too,
        gets a slot, and nobody who got further is pushed out. A first message that fails at once
        (malformed, replayed, unknown destination) never gets this far, so junk evicts nobody."""
        actions: list[Action] = []
        while True:
            pase = [h for h in self._handshakes.values() if h.kind == "PASE"]
            peer = [h for h in self._handshakes.values() if not h.progressed and _peer_of(h) == _peer_of(keep)]
            if len(peer) > MAX_HANDSHAKES_PER_PEER:
                pool = peer
            elif keep.kind == "PASE" and len(pase) > MAX_PASE_HANDSHAKES:
                pool = pase
            elif len(self._handshakes) > MAX_HANDSHAKES:
                pool = list(self._handshakes.values())
            else:
                return actions
            victims = [h for h in pool if h is not keep and not h.progressed] or [keep]
            victim = min(victims, key=lambda h: h.last_ms)
            peer_log.info("evicted", now_ms, "%s: %s handshake evicted by a new one: %d in progress",
                          self.pairing.device_id, victim.kind, len(self._handshakes))
            self.layer.abort_exchange(victim.exchange)
            actions += self._finish(victim, now_ms)
            if victim is keep:
                return actions

    def _refusal(self, opcode: int, payload: bytes, now_ms: float) -> StatusReport | None:
        """Why a new PBKDFParamRequest or Sigma1 is turned away now, as the StatusReport to send,
        decided before any work on it."""
        kind = "PASE" if opcode == SecureChannelOpcode.PBKDFParamRequest else "CASE"
        invalid = StatusReport.secure_channel(GeneralCode.FAILURE, SecureChannelStatus.INVALID_PARAMETER)
        if kind == "PASE" and self.commissioning.pase_parameters() is None:  # the window is closed
            return invalid
        random_ = initiator_random(payload)
        if random_ is not None and random_ in self._recent_randoms:
            self.counts["replayed"] += 1
            peer_log.info("replayed", now_ms, "%s: a replayed %s first message refused", self.pairing.device_id, kind)
            return invalid
        pase = [h for h in self._handshakes.values() if h.kind == "PASE"]
        full = ((kind == "PASE" and len(pase) >= MAX_PASE_HANDSHAKES and all(h.progressed for h in pase))
                or (len(self._handshakes) >= MAX_HANDSHAKES
                    and all(h.progressed for h in self._handshakes.values())))
        if full:
            self.counts["busy"] += 1
            peer_log.info("busy", now_ms, "%s: a new %s handshake answered BUSY: every slot is taken by one "
                          "that made progress", self.pairing.device_id, kind)
            return StatusReport(GeneralCode.BUSY, ProtocolId.SECURE_CHANNEL, SecureChannelStatus.BUSY,
                                BUSY_WAIT_MS.to_bytes(2, "little"))
        return None

    def _finish(self, hs: _Handshake, now_ms: float) -> list[Action]:
        """A handshake ended (success, failure or abandoned): install or release, close up."""
        self._handshakes.pop(hs.exchange, None)
        unsecured = hs.exchange.session
        if isinstance(unsecured, UnsecuredSession):
            unsecured.pinned = any(h.exchange.session is unsecured for h in self._handshakes.values())
        responder = hs.responder
        actions: list[Action] = []
        if responder.result is not None:
            case_fabric = None if isinstance(responder, PaseResponder) else responder.fabric  # set: CASE succeeded
            local_node_id = case_fabric.node_id if case_fabric is not None else 0
            session = self.layer.add_secure_session(responder.result, hs.exchange.session.peer_address,
                                                    now_ms, local_node_id=local_node_id)
            if not isinstance(responder, PaseResponder):
                session.peer_cats = responder.peer_cats
            else:
                self.commissioning.on_pase_established(session)
            if hs.resume is not None:
                self._resuming.remove(hs.resume)
                sub = subscription_of(hs.resume, session, self.layer, "interaction model")
                self.im.resume(sub, now_ms)
                self._save_subscriptions()
            if hs.then is not None:
                actions += self._send_invokes(session, hs.then, now_ms)
            self.counts[f"{hs.kind} established"] += 1
            log.info("%s: %s session %d established", self.pairing.device_id, hs.kind,
                     session.local_session_id)
        else:
            self.layer.sessions.release_id(responder.local_session_id)
            self.counts[f"{hs.kind} failed"] += 1
            peer_log.info(f"{hs.kind} failed", now_ms, "%s: %s failed: %s", self.pairing.device_id, hs.kind,
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
            if hs.then is not None:
                log.warning("%s: bound commands not sent: no CASE session to node %#x", self.pairing.device_id,
                            getattr(responder, "target_node_id", 0))
            if hs.resume is not None:   # the subscriber is gone or refused us: forget it
                self._resuming.remove(hs.resume)
                self._save_subscriptions()
        if not hs.exchange.closed:
            actions += hs.exchange.close(now_ms)
        return actions
