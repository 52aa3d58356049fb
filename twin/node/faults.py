"""A node's link under the home's faults (twin/faults.py): what its UDP shell does to each datagram.

The engine says what is wrong with a device now; `LinkFaults` turns that into a verdict per
datagram, in both directions, at the node's transport (twin/node/transport.py):

- offline, or down in a reboot: every datagram is dropped (the node neither hears nor answers);
  a reboot takes the link down only once the node has had its last turn (`boots` caught up
  with the engine's), so a graceful reboot's ShutDown report goes out first;
- loss: each datagram is dropped with the fault's probability, so the peers' MRP really
  retransmits (and ours does too);
- latency: each datagram waits the fault's milliseconds;
- commissioning_slow / commissioning_failure: the same, for PASE messages only (unsecured,
  Secure Channel opcodes PBKDFParamRequest..Pake3), so CASE and operation are untouched.

It also counts what it saw: datagrams each way, drops, delays, and MRP retransmissions
(a message counter of the same session and sender seen again, in either direction), which is
how a test shows retransmissions happening. The draws come from a generator seeded with the
home seed and the node id; wall-clock timing on a real network is never reproducible, the
fault schedule is.
"""
from __future__ import annotations

import collections
import random
import time
from collections.abc import Callable
from typing import Any

from matter_protocol.message import MessageFormatError, MessageHeader, PayloadHeader, ProtocolId, SecureChannelOpcode
from twin.faults import FAULT_KINDS, parse_fault

__all__ = ["LinkFaults", "FaultTriggers", "TEST_EVENT_BASE", "trigger_code"]

#: Our GeneralDiagnostics TestEventTrigger codes: TEST_EVENT_BASE | kind << 32 | seconds, where
#: kind is 1 + the index in FAULT_KINDS and seconds the duration (0: until cleared);
#: TEST_EVENT_BASE alone clears every fault of the node.
TEST_EVENT_BASE = 0xFA17 << 48

_PASE_OPCODES = frozenset(range(SecureChannelOpcode.PBKDFParamRequest, SecureChannelOpcode.PASE_Pake3 + 1))
#: Message counters remembered per direction to recognise retransmissions. MRP resends within
#: seconds, so the last few suffice; each costs ~250 bytes, on every node's link, faults or not
#: (4,096 came to ~2 MB a node once filled by keepalives: the 1,000-node soak's RSS growth).
_REMEMBERED = 64


class LinkFaults:
    """The fault verdicts of one node's link. `verdict(data, outbound)` is None to drop the
    datagram, else the delay in ms (0: at once). `boots` counts the reboots the node has gone
    through; the node manager raises it once a rebooting node's last turn is over."""

    def __init__(self, engine: Any, device_id: str, seed: int, poll: tuple[int, int] | None = None,
                 clock: Callable[[], float] = time.monotonic):
        """`poll`: a sleepy device's (slow poll interval, active threshold) in ms: a datagram to it
        waits for its next poll unless it is still active from an exchange (clusters/icd.py).
        `clock`: wall-clock seconds (the network is real time)."""
        self.poll = poll
        self.clock = clock
        self._epoch = clock()          # the device polls at epoch + k * interval
        self._active_until = -1.0      # wall-clock second until which it polls fast (Active mode)
        self.engine = engine
        self.device_id = device_id
        #: This node's faults, kept up to date by the engine (pushed, not scanned per datagram).
        self.faults = engine.faults_on(device_id)
        self.rng = random.Random(f"matter-twin link|{seed}|{device_id}")
        self.boots = engine.boots(device_id)
        self.counts = {"received": 0, "sent": 0, "dropped in": 0, "dropped out": 0, "delayed": 0,
                       "retransmissions in": 0, "retransmissions out": 0, "held for poll": 0}
        self._seen: dict[bool, collections.OrderedDict[tuple[int, int | None, int], None]] = {
            False: collections.OrderedDict(), True: collections.OrderedDict()}

    def stay_active(self, ms: int) -> None:
        """The device promised to stay awake this long (IcdManagement.StayActiveRequest)."""
        self._active_until = max(self._active_until, self.clock() + ms / 1000.0)

    def down(self) -> bool:
        """Offline, or down in a reboot the node has begun (its last turn is over)."""
        engine, device = self.engine, self.device_id
        return bool(engine.active(device, "offline")) or (
            bool(engine.active(device, "reboot")) and self.boots >= engine.boots(device))

    def _sleep(self, outbound: bool) -> float:
        """A sleepy device's wait (ms) for a datagram: an inbound one waits for the next poll while
        the device is idle; any exchange keeps it active (fast polling) for the threshold."""
        if self.poll is None:
            return 0.0
        interval, threshold = self.poll[0] / 1000.0, self.poll[1] / 1000.0
        now = self.clock()
        wait = 0.0
        if not outbound and now >= self._active_until:
            wait = (-(now - self._epoch)) % interval       # to the next poll of the grid
            self.counts["held for poll"] += 1
        self._active_until = max(self._active_until, now + wait + threshold)
        return wait * 1000.0

    def verdict(self, data: bytes, outbound: bool, header: tuple[MessageHeader, int] | None = None,
                payload_header: PayloadHeader | None = None) -> float | None:
        """`header` (the message header and its length) and `payload_header`: what the caller
        has decoded of `data` already (the transport, or the layer that sealed it)."""
        way = "out" if outbound else "in"
        self.counts["sent" if outbound else "received"] += 1
        pase = self._inspect(data, outbound, header, payload_header)
        sleep = self._sleep(outbound)
        if not self.faults:
            return sleep
        engine, device = self.engine, self.device_id
        if self.down() or (pase and engine.active(device, "commissioning_failure")):
            self.counts[f"dropped {way}"] += 1
            return None
        loss = engine.strength(device, "loss")
        if loss > 0 and self.rng.random() < loss:
            self.counts[f"dropped {way}"] += 1
            return None
        delay = engine.strength(device, "latency")
        if pase:
            delay += engine.strength(device, "commissioning_slow")
        if delay > 0:
            self.counts["delayed"] += 1
        return float(delay) + sleep

    def _inspect(self, data: bytes, outbound: bool, decoded: tuple[MessageHeader, int] | None,
                 payload: PayloadHeader | None) -> bool:
        """Count a retransmission; whether this is a PASE message."""
        try:
            header, length = decoded if decoded is not None else MessageHeader.decode(data)
        except (MessageFormatError, ValueError, IndexError):
            return False
        key = (header.session_id, header.source_node_id, header.message_counter)
        seen = self._seen[outbound]
        if key in seen:
            self.counts["retransmissions out" if outbound else "retransmissions in"] += 1
        else:
            seen[key] = None
            if len(seen) > _REMEMBERED:
                seen.popitem(last=False)
        if header.session_id != 0:
            return False
        if payload is None:   # an unsecured message (a handshake): its payload header is plain
            try:
                payload, _ = PayloadHeader.decode(data[length:])
            except (MessageFormatError, ValueError, IndexError):
                return False
        return payload.protocol_id == ProtocolId.SECURE_CHANNEL and payload.opcode in _PASE_OPCODES


def trigger_code(kind: str | None, seconds: int = 0) -> int:
    """The eventTrigger that starts `kind` on the node for `seconds` (None: clear its faults)."""
    return TEST_EVENT_BASE if kind is None else TEST_EVENT_BASE | (FAULT_KINDS.index(kind) + 1) << 32 | seconds


class FaultTriggers:
    """A node's TestEventTrigger delegate (GeneralDiagnostics): with the home's enable key, the
    trigger codes above start or clear faults on this node, as certification tools trigger test
    events on a CHIP SDK device."""

    def __init__(self, engine: Any, device_id: str):
        self.engine = engine
        self.device_id = device_id

    @property
    def key(self) -> bytes | None:
        key: bytes | None = self.engine.test_event_key
        return key

    def trigger(self, code: int) -> bool:
        """Start or clear a fault; False for a code this node does not handle."""
        if code >> 48 != TEST_EVENT_BASE >> 48 or (code >> 40) & 0xFF:
            return False
        kind, seconds = (code >> 32) & 0xFF, code & 0xFFFFFFFF
        if kind == 0:
            if seconds:
                return False
            for fault_id, fault in list(self.engine.faults.items()):
                if fault.spec.device == self.device_id:
                    self.engine.clear(fault_id)
            return True
        if kind > len(FAULT_KINDS):
            return False
        spec: dict[str, Any] = {"device": self.device_id, "kind": FAULT_KINDS[kind - 1]}
        if seconds:
            spec["duration"] = seconds
        try:
            self.engine.add(parse_fault(spec))
        except ValueError:   # a kind this node cannot have (a sensor fault on a light)
            return False
        return True
