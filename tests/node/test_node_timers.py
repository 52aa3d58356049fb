"""Timers fire on time whatever the inbound load (issue #12 item 3).

A node's socket that never empties used to cancel and re-arm the node's one loop timer at
every datagram, so a due deadline (a handshake's expiry, the fail-safe, an MRP retransmission)
waited until the flood stopped. Here: the sans-IO timer logic (`TimerSlot`), the shell under a
socket-free flood of datagrams, and (e2e, in a network namespace) real nodes flooded over UDP.
"""
from __future__ import annotations

import asyncio
import random
import socket
import subprocess
import sys
import threading
import time

import pytest

from twin.node.transport import TimerSlot, UdpTransport


def test_timer_slot_never_lets_a_later_deadline_postpone_an_armed_one():
    slot = TimerSlot()
    assert not slot.due(0)
    assert slot.arm(100)            # first deadline: arm
    assert not slot.arm(100)        # the same again: keep the armed timer, no cancel/re-arm
    assert not slot.arm(150)        # a later one: keep the earlier (an early wake-up is harmless)
    assert not slot.arm(None)       # nothing due any more: keep it too
    assert slot.armed_ms == 100
    assert slot.arm(60)             # an earlier one: re-arm
    assert not slot.due(59) and slot.due(60) and slot.due(1000)
    slot.fired()
    assert slot.armed_ms is None and not slot.due(1000)
    assert slot.arm(150)


class _FakeDatagramTransport:
    def __init__(self):
        self.sent = 0

    def sendto(self, data, address):
        self.sent += 1

    def get_extra_info(self, name):
        return ("::1", 0)

    def close(self):
        pass


class _Layer:
    """A layer with one deadline `delay_ms` after the first datagram; counts receives."""

    def __init__(self, delay_ms):
        self.delay_ms = delay_ms
        self.deadline = None
        self.fired_at = None
        self.received = 0

    def receive(self, datagram, peer_address, now_ms, decoded=None):
        self.received += 1
        if self.deadline is None and self.fired_at is None:
            self.deadline = now_ms + self.delay_ms
        return []

    def on_timer(self, now_ms):
        if self.deadline is not None and now_ms >= self.deadline:
            self.fired_at, self.deadline = now_ms, None
        return []

    def next_timer(self):
        return self.deadline


async def test_a_flood_of_datagrams_does_not_postpone_a_due_timer():
    """The socket stays readable at every turn of the loop (a datagram per turn, as asyncio's
    datagram transport delivers them); the deadline 50 ms on fires within the flood."""
    loop = asyncio.get_running_loop()
    layer = _Layer(delay_ms=50)
    shell = UdpTransport(layer, lambda action: None)
    shell.connection_made(_FakeDatagramTransport())
    start = loop.time()
    done = loop.create_future()

    def flood():
        if loop.time() - start > 0.5:
            done.set_result(None)
            return
        shell.datagram_received(b"x", ("::1", 1))
        loop.call_soon(flood)

    loop.call_soon(flood)
    await done
    assert layer.received > 100
    assert layer.fired_at is not None, "the due timer never fired while datagrams kept coming"
    assert layer.fired_at / 1000 - start < 0.25
    shell.connection_lost(None)


# --- e2e: real nodes, a real flood, in a network namespace -------------------------------------

FLOODER = r"""
import socket, sys, time
port, seconds, packets = int(sys.argv[1]), float(sys.argv[2]), [bytes.fromhex(h) for h in sys.argv[3].split(",")]
s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 16)
end, sent, n = time.monotonic() + seconds, 0, len(packets)
while time.monotonic() < end:
    for _ in range(256):
        try:
            s.sendto(packets[sent % n], ("::1", port))
        except BlockingIOError:
            pass
        sent += 1
print(sent / seconds, flush=True)
"""


def run_flood(tmp: str, timeout_ms: int, flood_s: float) -> dict:
    """Inside the namespace: two real nodes (NodeCore on UdpTransport) in this process; a PASE
    handshake is started on each by a controller that then falls silent, and node A is flooded
    from another process with ack-requesting messages. Returns when each node's PBKDFParamResponse
    was (re)transmitted and when each abandoned its handshake, in s after the start."""
    from pathlib import Path

    from test_node_runtime import make_core

    import twin.node.core as core
    from matter_protocol.exchange import MessageLayer, Send
    from matter_protocol.message import ProtocolId
    from matter_protocol.pase import PaseInitiator
    from twin.node.manager import MatterNode

    core.HANDSHAKE_TIMEOUT_MS = timeout_ms

    def initial_request(port, seed):
        ctrl = MessageLayer(random.Random(seed))
        session = ctrl.open_unsecured(("::1", port), 0)
        exchange = ctrl.new_exchange(session, ProtocolId.SECURE_CHANNEL)
        (opcode, payload), = PaseInitiator(20202021, 1, rng=random.Random(seed)).start()
        (send,) = [a for a in ctrl.send(exchange, opcode, payload, 0) if isinstance(a, Send)]
        return send.data

    def flood_packets(seed, count=64):
        """Unsecured messages asking for an ack, on an exchange nobody serves: acked and dropped."""
        ctrl = MessageLayer(random.Random(seed))
        session = ctrl.open_unsecured(("::1", 1), 0)
        out = []
        for _ in range(count):
            exchange = ctrl.new_exchange(session, ProtocolId.SECURE_CHANNEL)
            out += [a.data for a in ctrl.send(exchange, 0x7F, b"", 0) if isinstance(a, Send)]
        return out

    async def main():
        loop = asyncio.get_running_loop()
        nodes = []
        for name in ("a", "b"):
            core, _ = make_core(Path(tmp) / name)
            node = MatterNode(core.im.device, core, 0, "::1")
            await node.start()
            nodes.append(node)
        heard = {name: [] for name in "ab"}
        sockets = {}
        start = loop.time()
        for name, node in zip("ab", nodes):
            sock = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
            sock.bind(("::1", 0))
            sock.settimeout(0.2)
            sockets[name] = sock
            sock.sendto(initial_request(node.port, 3 if name == "a" else 4), ("::1", node.port))

        stop = threading.Event()

        def listen(name, sock):
            while not stop.is_set():
                try:
                    sock.recv(2048)
                except OSError:
                    continue
                heard[name].append(time.monotonic() - wall_start)

        wall_start = time.monotonic()
        threads = [threading.Thread(target=listen, args=item, daemon=True) for item in sockets.items()]
        for t in threads:
            t.start()
        packets = ",".join(p.hex() for p in flood_packets(9))
        flooder = subprocess.Popen([sys.executable, "-c", FLOODER, str(nodes[0].port), str(flood_s), packets],
                                   stdout=subprocess.PIPE, text=True)
        abandoned = {}
        while loop.time() - start < flood_s + 1 and len(abandoned) < 2:
            for name, node in zip("ab", nodes):
                if name not in abandoned and node.core.counts["PASE failed"]:
                    abandoned[name] = loop.time() - start
            await asyncio.sleep(0.01)
        rate = float(flooder.communicate(timeout=flood_s + 30)[0].strip() or 0)
        stop.set()
        for t in threads:
            t.join()
        for node in nodes:
            node.close()
        return {"abandoned": abandoned, "heard": heard, "flood_rate": rate,
                "received": nodes[0].core.counts}

    return asyncio.run(main())


@pytest.mark.e2e
def test_a_flooded_node_and_its_neighbour_keep_their_timers(netns, tmp_path):
    timeout_ms, flood_s = 2000, 6.0
    result = netns.call(run_flood, str(tmp_path), timeout_ms, flood_s, timeout=90)
    abandoned, heard = result["abandoned"], result["heard"]
    assert result["flood_rate"] > 10_000, result
    for name in "ab":
        # Each handshake is abandoned at its deadline, not when the flood ends (6 s).
        assert name in abandoned, result
        assert timeout_ms / 1000 - 0.05 <= abandoned[name] < timeout_ms / 1000 + 0.5, result
        # MRP retransmitted the unanswered PBKDFParamResponse on its schedule meanwhile (the
        # first retries come about 0.4 s and 0.8 s after it; the flood used to hold them back).
        assert len([t for t in heard[name] if t < 1.5]) >= 3, result
