"""Exchange manager and the top-level sans-IO message layer (Core spec ch. 4: exchanges, MRP, sessions).

`MessageLayer` is fed datagrams, the peer address and the current time in ms; it returns actions:

- `Send(data, address)`: put these bytes on the wire (with the headers it was sealed with);
- `Deliver(exchange, protocol_id, opcode, payload, session)`: a new, authenticated, non-duplicate
  application message for the exchange's handler (`exchange.handler`);
- `Dropped(reason)`: the datagram was discarded (malformed, unknown session, bad MIC, duplicate...);
- `ExchangeFailed(exchange, reason)`: MRP gave up on the exchange's outstanding message;
- `SessionClosed(session, reason)`: a session ended (peer's CloseSession, local close, eviction).

It never reads the clock and never raises from `receive()` on bad input. Higher layers answer a
`Deliver` with `layer.send(exchange, opcode, payload, now_ms)` and end with `layer.close_exchange`.
Unsolicited messages (I flag, no matching exchange) open a responder exchange only for protocols
registered with `register()`.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from matter_protocol.message import (
    UNSPECIFIED_NODE_ID,
    CounterExhausted,
    MessageFormatError,
    MessageHeader,
    PayloadHeader,
    ProtocolId,
    SecureChannelOpcode,
    SessionType,
)
from matter_protocol.mrp import MRP_MAX_TRANSMISSIONS, ReliableState, base_interval
from matter_protocol.session import MIC_LENGTH, SecureSession, Session, SessionTable, UnsecuredSession
from matter_protocol.session_types import EstablishedSession
from matter_protocol.status_report import GeneralCode, SecureChannelStatus, StatusReport

# Spec: a message over UDP must fit the IPv6 minimum MTU.
MAX_UDP_MESSAGE_SIZE = 1280
# Exchanges a peer may open with unsolicited messages, per session and in all: beyond, a new one is
# dropped unacknowledged, as the CHIP SDK drops messages when its exchange pool
# (CHIP_CONFIG_MAX_EXCHANGE_CONTEXTS) is full. Each holds until its last message is acked or MRP
# gives up, so a peer that never acks could otherwise pile them up (issue #32).
MAX_PEER_EXCHANGES_PER_SESSION = 32
MAX_PEER_EXCHANGES = 512
# Ephemeral initiator node ids are drawn from the operational node id range (spec "Operational Node ID").
_MAX_OPERATIONAL_NODE_ID = 0xFFFFFFEFFFFFFFFF


class ExchangeError(Exception):
    """Misuse of an exchange by the caller (closed exchange or session, second outstanding message)."""


@dataclass(frozen=True)
class Send:
    data: bytes
    address: Any
    #: The headers the datagram was sealed with, when this layer made it (None: a retransmission
    #: of stored bytes): what the link's fault shell inspects, so it need not decode them again.
    header: MessageHeader | None = field(default=None, compare=False)
    payload_header: PayloadHeader | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Deliver:
    exchange: Exchange
    protocol_id: int
    opcode: int
    payload: bytes
    session: Session
    vendor_id: int = 0


@dataclass(frozen=True)
class Dropped:
    reason: str


@dataclass(frozen=True)
class ExchangeFailed:
    exchange: Exchange
    reason: str


@dataclass(frozen=True)
class SessionClosed:
    session: Session
    reason: str


Action = Send | Deliver | Dropped | ExchangeFailed | SessionClosed


@dataclass(eq=False)
class Exchange:
    layer: MessageLayer = field(repr=False)
    session: Session
    exchange_id: int
    is_initiator: bool
    protocol_id: int
    handler: Any = None
    vendor_id: int = 0
    mrp: ReliableState = field(default_factory=ReliableState, repr=False)
    closing: bool = False  # closed by its owner, waiting for the outstanding ack
    closed: bool = False

    @property
    def key(self) -> tuple[Session, int, bool]:
        return (self.session, self.exchange_id, self.is_initiator)

    def send(self, opcode: int, payload: bytes, now_ms: float, reliable: bool = True,
             protocol_id: int | None = None) -> list[Action]:
        return self.layer.send(self, opcode, payload, now_ms, reliable=reliable, protocol_id=protocol_id)

    def close(self, now_ms: float) -> list[Action]:
        return self.layer.close_exchange(self, now_ms)


class MessageLayer:
    def __init__(self, rng: random.Random, sessions: SessionTable | None = None):
        self.rng = rng
        self.sessions = sessions if sessions is not None else SessionTable(rng)
        self._handlers: dict[tuple[int, int], Any] = {}
        self._exchanges: dict[tuple[Session, int, bool], Exchange] = {}
        self._peer_opened: dict[Session, int] = {}   # responder exchanges open, per session
        self.max_peer_exchanges_per_session = MAX_PEER_EXCHANGES_PER_SESSION
        self.max_peer_exchanges = MAX_PEER_EXCHANGES
        self._next_exchange_id = rng.randint(0, 0xFFFF)
        self._events: list[Action] = []

    # -- registration and sessions ----------------------------------------------------------
    def register(self, protocol_id: int, handler: Any = None, vendor_id: int = 0) -> None:
        """Accept unsolicited messages of this protocol; their exchanges carry `handler`."""
        self._handlers[(vendor_id, protocol_id)] = handler

    def unregister(self, protocol_id: int, vendor_id: int = 0) -> None:
        self._handlers.pop((vendor_id, protocol_id), None)

    def add_secure_session(self, established: EstablishedSession, peer_address: Any, now_ms: float,
                           local_node_id: int = UNSPECIFIED_NODE_ID) -> SecureSession:
        """Install a session from PASE/CASE. local_node_id: our operational node id (CASE), 0 for PASE."""
        return self.sessions.add(established, peer_address, now_ms, local_node_id)

    def open_unsecured(self, peer_address: Any, now_ms: float) -> UnsecuredSession:
        """An unsecured session on which we initiate a handshake."""
        while True:
            ephemeral = self.rng.randint(1, _MAX_OPERATIONAL_NODE_ID)
            if self.sessions.get_unsecured(ephemeral, True) is None:
                return self.sessions.new_unsecured(ephemeral, True, peer_address, now_ms)

    def close_session(self, session: Session, now_ms: float, notify: bool = True) -> list[Action]:
        """End a session; for a secure one, tell the peer with a CloseSession StatusReport first."""
        actions: list[Action] = []
        if session.closed:
            return actions
        if notify and session.is_secure:
            exchange = self.new_exchange(session, ProtocolId.SECURE_CHANNEL)
            report = StatusReport.secure_channel(GeneralCode.SUCCESS, SecureChannelStatus.CLOSE_SESSION)
            actions += self.send(exchange, SecureChannelOpcode.StatusReport, report.encode(), now_ms, reliable=False)
        self.sessions.remove(session)
        self._purge(session)
        actions.append(SessionClosed(session, "closed locally"))
        return actions

    # -- exchanges ----------------------------------------------------------------------------
    def new_exchange(self, session: Session, protocol_id: int, handler: Any = None, vendor_id: int = 0) -> Exchange:
        """An exchange we initiate on `session`."""
        if session.closed:
            raise ExchangeError(f"{session!r} is closed; accepted: an open session")
        for _ in range(0x10000):
            exchange_id = self._next_exchange_id
            self._next_exchange_id = (exchange_id + 1) & 0xFFFF
            if (session, exchange_id, True) not in self._exchanges:
                exchange = Exchange(self, session, exchange_id, True, protocol_id, handler, vendor_id)
                self._exchanges[exchange.key] = exchange
                return exchange
        raise ExchangeError("all 65536 exchange ids are in use on this session")

    def exchanges(self) -> list[Exchange]:
        return list(self._exchanges.values())

    def send(self, exchange: Exchange, opcode: int, payload: bytes, now_ms: float, reliable: bool = True,
             protocol_id: int | None = None) -> list[Action]:
        """Send one message on the exchange, piggybacking any pending ack; reliable = MRP R flag."""
        session = exchange.session
        if exchange.closed or exchange.closing:
            raise ExchangeError(f"exchange {exchange.exchange_id} is closed; accepted: an open exchange")
        if session.closed:
            raise ExchangeError(f"{session!r} is closed; accepted: an open session")
        if reliable and exchange.mrp.outstanding is not None:
            raise ExchangeError(
                f"exchange {exchange.exchange_id} still waits for the ack of message "
                f"{exchange.mrp.outstanding.counter}; accepted: one outstanding reliable message per exchange")
        protocol = exchange.protocol_id if protocol_id is None else protocol_id
        header = PayloadHeader(exchange_id=exchange.exchange_id, protocol_id=protocol, opcode=opcode,
                               initiator=exchange.is_initiator, needs_ack=reliable,
                               ack_counter=exchange.mrp.pending_ack,
                               vendor_id=exchange.vendor_id or None)
        size = len(session.header(0).encode()) + len(header.encode()) + len(payload) + (
            MIC_LENGTH if session.is_secure else 0)
        if size > MAX_UDP_MESSAGE_SIZE:
            raise ExchangeError(f"message is {size} bytes; accepted: at most {MAX_UDP_MESSAGE_SIZE} over UDP")
        sealed = self._seal(session, header, payload)
        if sealed is None:
            raise ExchangeError(f"{session!r} closed: its message counter is exhausted")
        datagram, sent = sealed
        counter = sent.message_counter
        exchange.mrp.take_ack()
        if reliable:
            exchange.mrp.track(counter, datagram, now_ms, base_interval(session, now_ms), self.rng)
        session.last_activity_ms = now_ms
        return self._drain() + [Send(datagram, session.peer_address, sent, header)]

    def close_exchange(self, exchange: Exchange, now_ms: float) -> list[Action]:
        """Done with the exchange: flush a pending ack; keep it until its outstanding message is acked."""
        actions: list[Action] = []
        if exchange.closed:
            return actions
        exchange.closing = True
        ack = exchange.mrp.pending_ack
        if ack is not None and not exchange.session.closed:
            exchange.mrp.take_ack()
            actions += self._ack_now(exchange.session, exchange.exchange_id, exchange.is_initiator, ack)
        self._maybe_finish(exchange)
        return self._drain() + actions

    def abort_exchange(self, exchange: Exchange) -> None:
        """Forget the exchange now: no more retransmissions of its outstanding message, no ack.

        For state given up under load (an evicted half-open handshake): unlike `close_exchange`
        it keeps nothing alive until the peer acks."""
        exchange.closing = True
        self._remove(exchange)

    # -- timers ---------------------------------------------------------------------------------
    def next_timer(self) -> float | None:
        deadlines = [d for ex in self._exchanges.values() if (d := ex.mrp.next_deadline()) is not None]
        return min(deadlines) if deadlines else None

    def on_timer(self, now_ms: float) -> list[Action]:
        actions = self._drain()
        for exchange in list(self._exchanges.values()):
            if exchange.closed:
                continue
            session = exchange.session
            if exchange.mrp.ack_due(now_ms):
                ack = exchange.mrp.take_ack()
                if ack is not None:  # always: a due ack time is only set together with the pending ack
                    actions += self._ack_now(session, exchange.exchange_id, exchange.is_initiator, ack)
            result = exchange.mrp.retransmit_due(now_ms, base_interval(session, now_ms), self.rng)
            if result is False:
                self._remove(exchange)
                actions.append(ExchangeFailed(
                    exchange, f"no acknowledgement after {MRP_MAX_TRANSMISSIONS} transmissions"))
            elif result:
                actions.append(Send(result, session.peer_address))
            self._maybe_finish(exchange)
        return actions + self._drain()

    # -- receiving ----------------------------------------------------------------------------
    def receive(self, datagram: bytes, peer_address: Any, now_ms: float,
                decoded: tuple[MessageHeader, int] | None = None) -> list[Action]:
        """`decoded`: the datagram's message header and its length, when the caller (the UDP
        shell) has decoded it already; otherwise it is decoded here."""
        return self._drain() + self._receive(bytes(datagram), peer_address, now_ms, decoded) + self._drain()

    def _receive(self, data: bytes, peer_address: Any, now_ms: float,
                 decoded: tuple[MessageHeader, int] | None = None) -> list[Action]:
        try:
            header, header_len = decoded if decoded is not None else MessageHeader.decode(data)
        except MessageFormatError as e:
            return [Dropped(str(e))]
        if header.session_type is SessionType.GROUP:
            return [Dropped("group messages are not supported; accepted: unicast sessions")]
        if header.privacy or header.control:
            return [Dropped("privacy and control (MCSP) messages are not supported; accepted: P=0, C=0")]

        session: Session | None
        plain: bytes | None
        if header.session_id == 0:
            found = self._unsecured_for(header)
            if isinstance(found, Dropped):
                return [found]
            session = found
            plain = data[header_len:]
        else:
            session = self.sessions.get(header.session_id)
            if session is None:
                return [Dropped(f"unknown session id {header.session_id}")]
            plain = session.open(header, data, header_len)
            if plain is None:
                return [Dropped(f"MIC check failed on session {header.session_id}")]
        try:
            payload_header, payload_offset = PayloadHeader.decode(plain)
        except MessageFormatError as e:
            return [Dropped(str(e))]

        if session is None:  # first message of a handshake we respond to
            if not payload_header.initiator or header.source_node_id is None:
                return [Dropped("unsecured message for no known session and not from an initiator")]
            session = self.sessions.new_unsecured(header.source_node_id, False, peer_address, now_ms)

        # Authenticated (or unsecured, where there is nothing to authenticate): now counters move.
        counter = header.message_counter
        duplicate = session.reception.is_duplicate(counter)
        if not duplicate:
            session.reception.commit(counter)
            # Only fresh messages move the peer address: a replayed datagram must not redirect us.
            session.peer_address = peer_address
            session.last_peer_activity_ms = now_ms
            session.last_activity_ms = now_ms
        else:
            # MRP: a duplicate that asked for an ack is acked again at once, never delivered.
            actions: list[Action] = []
            if payload_header.needs_ack:
                actions += self._ack_now(session, payload_header.exchange_id, not payload_header.initiator, counter)
            return actions + [Dropped(f"duplicate message counter {counter}")]
        return self._dispatch(session, counter, payload_header, bytes(plain[payload_offset:]), now_ms)

    def _unsecured_for(self, header: MessageHeader) -> UnsecuredSession | None | Dropped:
        """The unsecured session a session-id-0 message belongs to; None = a responder session to create."""
        if header.dest_node_id is not None:
            session = self.sessions.get_unsecured(header.dest_node_id, True)
            if session is None:
                return Dropped(f"no unsecured session initiated as node 0x{header.dest_node_id:016x}")
            return session
        if header.source_node_id is not None:
            return self.sessions.get_unsecured(header.source_node_id, False)
        return Dropped("unsecured message without source or destination node id")

    def _dispatch(self, session: Session, counter: int, ph: PayloadHeader, payload: bytes,
                  now_ms: float) -> list[Action]:
        actions: list[Action] = []
        our_initiator = not ph.initiator
        if session.is_secure and _is_close_session(ph, payload):
            # CloseSession StatusReport: the peer ends the session; no protocol handler needs to be registered.
            if ph.needs_ack:
                actions += self._ack_now(session, ph.exchange_id, our_initiator, counter)
            self.sessions.remove(session)
            self._purge(session)
            return actions + [SessionClosed(session, "peer sent CloseSession")]
        exchange = self._exchanges.get((session, ph.exchange_id, our_initiator))
        if exchange is None:
            handler_key = (ph.vendor_id or 0, ph.protocol_id)
            if ph.initiator and not ph.is_standalone_ack and handler_key in self._handlers:
                if (self._peer_opened.get(session, 0) >= self.max_peer_exchanges_per_session
                        or sum(self._peer_opened.values()) >= self.max_peer_exchanges):
                    return actions + [Dropped(f"too many exchanges open (session {self._peer_opened.get(session, 0)}, "
                                              f"all {sum(self._peer_opened.values())}); new exchange dropped")]
                exchange = Exchange(self, session, ph.exchange_id, False, ph.protocol_id,
                                    self._handlers[handler_key], ph.vendor_id or 0)
                self._exchanges[exchange.key] = exchange
                self._peer_opened[session] = self._peer_opened.get(session, 0) + 1
            else:
                # Exchange manager: ack on an ephemeral exchange so the peer stops retransmitting.
                if ph.needs_ack:
                    actions += self._ack_now(session, ph.exchange_id, our_initiator, counter)
                return actions + [Dropped(
                    f"no exchange {ph.exchange_id} for protocol 0x{ph.protocol_id:04x} opcode 0x{ph.opcode:02x}")]

        if ph.ack_counter is not None:
            exchange.mrp.on_ack(ph.ack_counter)
        if ph.is_standalone_ack:
            self._maybe_finish(exchange)
            return actions
        if ph.needs_ack:
            if exchange.closing:
                actions += self._ack_now(session, ph.exchange_id, our_initiator, counter)
            else:
                flush = exchange.mrp.on_needs_ack(counter, now_ms)
                if flush is not None:
                    actions += self._ack_now(session, ph.exchange_id, our_initiator, flush)
        if exchange.closing:
            self._maybe_finish(exchange)
            return actions + [Dropped(f"exchange {ph.exchange_id} is closing")]

        return actions + [Deliver(exchange, ph.protocol_id, ph.opcode, payload, session, ph.vendor_id or 0)]

    # -- helpers --------------------------------------------------------------------------------
    def _seal(self, session: Session, ph: PayloadHeader, payload: bytes) -> tuple[bytes, MessageHeader] | None:
        try:
            counter = session.counter.next() if session.is_secure else self.sessions.unsecured_counter.next()
        except CounterExhausted:
            self.sessions.remove(session)
            self._purge(session)
            self._events.append(SessionClosed(session, "message counter exhausted"))
            return None
        header = session.header(counter)
        return session.seal(header, ph.encode() + payload), header

    def _ack_now(self, session: Session, exchange_id: int, our_initiator: bool, ack_counter: int) -> list[Action]:
        ph = PayloadHeader(exchange_id=exchange_id, protocol_id=ProtocolId.SECURE_CHANNEL,
                           opcode=SecureChannelOpcode.StandaloneAck, initiator=our_initiator, ack_counter=ack_counter)
        sealed = self._seal(session, ph, b"")
        return [] if sealed is None else [Send(sealed[0], session.peer_address, sealed[1], ph)]

    def _maybe_finish(self, exchange: Exchange) -> None:
        if exchange.closing and exchange.mrp.outstanding is None and exchange.mrp.pending_ack is None:
            self._remove(exchange)

    def _remove(self, exchange: Exchange) -> None:
        exchange.closed = True
        if self._exchanges.get(exchange.key) is exchange:
            del self._exchanges[exchange.key]
            if not exchange.is_initiator:
                left = self._peer_opened.get(exchange.session, 1) - 1
                if left > 0:
                    self._peer_opened[exchange.session] = left
                else:
                    self._peer_opened.pop(exchange.session, None)

    def _purge(self, session: Session) -> None:
        for exchange in [e for e in self._exchanges.values() if e.session is session]:
            self._remove(exchange)

    def _drain(self) -> list[Action]:
        """Report sessions evicted by the table since the last call, and queued events."""
        for session in self.sessions.evicted:
            self._purge(session)
            self._events.append(SessionClosed(session, "evicted from the session table"))
        self.sessions.evicted.clear()
        events, self._events = self._events, []
        return events


def _is_close_session(ph: PayloadHeader, payload: bytes) -> bool:
    if ph.protocol_id != ProtocolId.SECURE_CHANNEL or ph.vendor_id or ph.opcode != SecureChannelOpcode.StatusReport:
        return False
    try:
        return StatusReport.decode(payload).is_close_session
    except MessageFormatError:
        return False
