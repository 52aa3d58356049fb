"""Message Reliability Protocol (Core spec ch. 4, "MRP"), sans-IO, one `ReliableState` per exchange.

At most one reliable message is outstanding per exchange, and at most one received message waits
for an acknowledgement. The pending ack rides on the next message sent on the exchange
(piggyback), or goes out as a standalone ack after MRP_STANDALONE_ACK_TIMEOUT. Retransmissions
resend the identical datagram after

    t = i * MRP_BACKOFF_MARGIN * MRP_BACKOFF_BASE^max(0, n - MRP_BACKOFF_THRESHOLD) * (1 + r * MRP_BACKOFF_JITTER)

where i is the peer's active or idle interval, n the number of retransmissions already sent and r
uniform in [0, 1) from the injected rng. After MRP_MAX_TRANSMISSIONS sends without an ack the
exchange gives up.
"""
from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, Protocol

MRP_MAX_TRANSMISSIONS = 5
MRP_BACKOFF_BASE = 1.6
MRP_BACKOFF_JITTER = 0.25
MRP_BACKOFF_MARGIN = 1.1
MRP_BACKOFF_THRESHOLD = 1
MRP_STANDALONE_ACK_TIMEOUT_MS = 200
# Defaults when the peer did not announce its session parameters (spec MRP parameter table).
SESSION_IDLE_INTERVAL_MS = 500
SESSION_ACTIVE_INTERVAL_MS = 300
SESSION_ACTIVE_THRESHOLD_MS = 4000


class PeerActivity(Protocol):
    """What the interval choice reads from a session (unsecured or secure)."""

    @property
    def peer_mrp(self) -> Mapping[str, int] | None: ...

    @property
    def last_peer_activity_ms(self) -> float: ...


def peer_intervals(peer_mrp: Mapping[str, int] | None) -> tuple[int, int, int]:
    """(idle interval, active interval, active threshold) in ms from the peer's session parameters,
    keyed by spec name (SESSION_IDLE_INTERVAL, SESSION_ACTIVE_INTERVAL, SESSION_ACTIVE_THRESHOLD)."""
    p = peer_mrp or {}
    return (int(p.get("SESSION_IDLE_INTERVAL", SESSION_IDLE_INTERVAL_MS)),
            int(p.get("SESSION_ACTIVE_INTERVAL", SESSION_ACTIVE_INTERVAL_MS)),
            int(p.get("SESSION_ACTIVE_THRESHOLD", SESSION_ACTIVE_THRESHOLD_MS)))


def base_interval(session: PeerActivity, now_ms: float) -> int:
    """The peer's active interval if we heard from it within its active threshold, else idle."""
    idle, active, threshold = peer_intervals(session.peer_mrp)
    return active if now_ms - session.last_peer_activity_ms < threshold else idle


def backoff_ms(interval_ms: float, retransmissions: int, rng: random.Random) -> float:
    """Spec retransmission backoff: wait before the next (re)transmission, `retransmissions` already sent."""
    exponent = max(0, retransmissions - MRP_BACKOFF_THRESHOLD)
    return (interval_ms * MRP_BACKOFF_MARGIN * MRP_BACKOFF_BASE ** exponent
            * (1.0 + rng.random() * MRP_BACKOFF_JITTER))


@dataclass
class Outstanding:
    counter: int  # message counter the peer must acknowledge
    datagram: bytes  # exact bytes to resend
    send_count: int  # transmissions so far, including the first
    due_ms: float  # when to retransmit or give up


class ReliableState:
    def __init__(self) -> None:
        self.pending_ack: int | None = None  # counter of a received message we still must ack
        self.ack_due_ms: float | None = None
        self.outstanding: Outstanding | None = None

    # -- receiving ---------------------------------------------------------------------------
    def on_ack(self, ack_counter: int) -> bool:
        """An ack arrived; True if it acknowledged our outstanding message."""
        if self.outstanding is not None and self.outstanding.counter == ack_counter:
            self.outstanding = None
            return True
        return False

    def implicit_ack(self) -> None:
        """The peer's answer to our outstanding message arrived without its ack (a lost standalone
        ack): the answer shows it was received, so stop retransmitting it."""
        self.outstanding = None

    def on_needs_ack(self, counter: int, now_ms: float) -> int | None:
        """A new message that needs an ack arrived. Returns a previously pending ack counter that
        must be flushed as a standalone ack now (only one pending ack is kept)."""
        flush = self.pending_ack if self.pending_ack is not None and self.pending_ack != counter else None
        self.pending_ack = counter
        self.ack_due_ms = now_ms + MRP_STANDALONE_ACK_TIMEOUT_MS
        return flush

    # -- sending -------------------------------------------------------------------------------
    def take_ack(self) -> int | None:
        """The pending ack to piggyback on an outgoing message (cleared)."""
        counter, self.pending_ack, self.ack_due_ms = self.pending_ack, None, None
        return counter

    def track(self, counter: int, datagram: bytes, now_ms: float, interval_ms: float, rng: random.Random) -> None:
        self.outstanding = Outstanding(counter, datagram, 1, now_ms + backoff_ms(interval_ms, 0, rng))

    # -- timers -----------------------------------------------------------------------------
    def next_deadline(self) -> float | None:
        due = self.outstanding.due_ms if self.outstanding is not None else None
        deadlines = [d for d in (self.ack_due_ms, due) if d is not None]
        return min(deadlines) if deadlines else None

    def ack_due(self, now_ms: float) -> bool:
        return self.ack_due_ms is not None and now_ms >= self.ack_due_ms

    def retransmit_due(self, now_ms: float, interval_ms: float, rng: random.Random) -> bytes | None | Literal[False]:
        """At the retransmission deadline: the datagram to resend, or False when MRP gives up
        (outstanding cleared). None when nothing is due."""
        out = self.outstanding
        if out is None or now_ms < out.due_ms:
            return None
        if out.send_count >= MRP_MAX_TRANSMISSIONS:
            self.outstanding = None
            return False
        out.due_ms = now_ms + backoff_ms(interval_ms, out.send_count, rng)
        out.send_count += 1
        return out.datagram
