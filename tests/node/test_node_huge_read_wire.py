"""A huge wildcard read over the wire leaves the process's other nodes and the read node's own
timers alone (issue #12 item 4, end to end, in a network namespace).

Two real nodes (NodeCore on UdpTransport) share one event loop, as a home's nodes do. A client
process opens PASE with node A and sends it a read of 600 full-wildcard paths (one datagram;
refused PATHS_EXHAUSTED at once) and then, back to back, reads of as many full wildcards as a
request may carry, acknowledging every chunk as fast as it can. Meanwhile another client process
reads one attribute of node B every 20 ms. The issue saw 400 wildcards make node B answer in
1.8 s instead of 0.01 s. Node A's fail-safe, armed by PASE for 3 s here, must expire on time
under that load (it ends the PASE session, which ends the huge reads).
"""
from __future__ import annotations

import asyncio
import json
import random
import socket
import statistics
import sys
import time

import pytest
from chip.clusters import Objects as C

FAILSAFE_S = 3
PASSCODE = 20202021
VENDOR_NAME = (0, C.BasicInformation.id, C.BasicInformation.Attributes.VendorName.attribute_id)


class Client:
    """A blocking controller over UDP: our own MessageLayer and PASE initiator, one node."""

    def __init__(self, port: int, seed: int):
        from matter_protocol.exchange import MessageLayer
        self.address = ("::1", port)
        self.sock = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
        self.sock.bind(("::1", 0))
        self.sock.settimeout(10)
        self.layer = MessageLayer(random.Random(seed))
        self.seed = seed
        self.secure = None
        self.closed_at = None     # when the node ended the session (CloseSession)

    @staticmethod
    def now() -> float:
        return time.monotonic() * 1000

    def out(self, actions) -> None:
        from matter_protocol.exchange import Send
        for action in actions:
            if isinstance(action, Send):
                self.sock.sendto(action.data, self.address)

    def next_delivery(self):
        """The next message for one of our exchanges; None once the node closed the session."""
        from matter_protocol.exchange import Deliver, SessionClosed
        while True:
            data = self.sock.recv(2048)
            actions = self.layer.receive(data, self.address, self.now())
            self.out(actions)
            for action in actions:
                if isinstance(action, SessionClosed):
                    self.closed_at = time.monotonic()
                    return None
                if isinstance(action, Deliver):
                    return action

    def pase(self) -> None:
        from matter_protocol.message import ProtocolId
        from matter_protocol.pase import PaseInitiator
        initiator = PaseInitiator(PASSCODE, self.layer.sessions.allocate_id(), rng=random.Random(self.seed))
        exchange = self.layer.new_exchange(self.layer.open_unsecured(self.address, self.now()),
                                           ProtocolId.SECURE_CHANNEL)
        (opcode, payload), = initiator.start()
        self.out(self.layer.send(exchange, opcode, payload, self.now()))
        while not initiator.finished:
            event = self.next_delivery()
            for opcode, payload in initiator.handle(event.opcode, event.payload):
                self.out(event.exchange.send(opcode, payload, self.now()))
        assert initiator.error is None, initiator.error
        self.out(exchange.close(self.now()))
        self.secure = self.layer.add_secure_session(initiator.result, self.address, self.now())

    def read(self, paths) -> tuple[object, int] | None:
        """One ReadRequest, every chunk acknowledged; (the last message, chunks), or None if the
        session closed meanwhile."""
        from clusters.status import Status
        from matter_protocol.interaction import (
            Opcode,
            ReadRequest,
            ReportData,
            StatusResponse,
            decode_message,
        )
        from matter_protocol.message import ProtocolId
        exchange = self.layer.new_exchange(self.secure, ProtocolId.INTERACTION_MODEL)
        self.out(self.layer.send(exchange, Opcode.ReadRequest, ReadRequest(attribute_requests=paths).encode(),
                                 self.now()))
        chunks = 0
        while True:
            event = self.next_delivery()
            if event is None:
                return None
            message = decode_message(event.opcode, event.payload)
            chunks += 1
            if isinstance(message, ReportData) and message.more_chunked:
                self.out(event.exchange.send(Opcode.StatusResponse, StatusResponse(Status.SUCCESS).encode(),
                                             self.now()))
                continue
            self.out(event.exchange.close(self.now()))
            return message, chunks


def huge_reader(port: int, seconds: float) -> None:
    """Node A's client: the 600-wildcard read, then full-wildcard reads back to back until the
    node closes the session (or `seconds`); prints what it saw as one JSON line."""
    from clusters.status import Status
    from matter_protocol.interaction import AttributePath, StatusResponse
    from twin.node.im import MAX_PATHS_PER_REQUEST
    client = Client(port, seed=21)
    client.pase()
    opened = time.monotonic()
    answer, _ = client.read([AttributePath()] * 600)
    refused = isinstance(answer, StatusResponse) and answer.status == Status.PATHS_EXHAUSTED
    reads = chunks = 0
    while time.monotonic() - opened < seconds:
        result = client.read([AttributePath()] * MAX_PATHS_PER_REQUEST)
        if result is None:
            break
        reads, chunks = reads + 1, chunks + result[1]
    print(json.dumps({"opened": opened, "closed": client.closed_at, "refused_600": refused,
                      "reads": reads, "chunks": chunks}), flush=True)


def prober(port: int, seconds: float) -> None:
    """Node B's client: one small read every 20 ms for `seconds`; prints (start, latency) pairs."""
    from matter_protocol.interaction import AttributePath
    client = Client(port, seed=22)
    client.pase()
    print("ready", flush=True)
    samples, end = [], time.monotonic() + seconds
    while time.monotonic() < end:
        start = time.monotonic()
        message, _ = client.read([AttributePath(*VENDOR_NAME)])
        assert message.attribute_reports[0].attribute_data.data == "matter-twin"
        samples.append((start, time.monotonic() - start))
        time.sleep(0.02)
    print(json.dumps(samples), flush=True)


def run_huge_read(tmp: str) -> dict:
    """Inside the namespace: nodes A (a heat pump: many attributes) and B (a light) in this
    process, the two clients in their own processes. Returns their reports and when node A's
    fail-safe was armed and expired (monotonic s)."""
    from pathlib import Path

    from clusters.devices import create_device
    from twin.node.commissioning import NodeCommissioning
    from twin.node.core import NodeCore
    from twin.node.im import InteractionModelServer
    from twin.node.manager import MatterNode
    from twin.node.pairing import Pairing

    async def node(name: str, device_type: str, failsafe_s: int | None = None):
        loop = asyncio.get_running_loop()
        device = create_device(name, device_type)
        rng = random.Random(name)
        pairing = Pairing(name, passcode=PASSCODE, discriminator=3840, vendor_id=0xFFF1, product_id=0x8001)
        commissioning = NodeCommissioning(Path(tmp) / name, device, None, PASSCODE, 3840, rng,
                                          now_ms=lambda: int(loop.time() * 1000))
        if failsafe_s is not None:
            commissioning.PASE_FAILSAFE_S = failsafe_s
        core = NodeCore(pairing, commissioning, InteractionModelServer(device, rng), rng)
        matter_node = MatterNode(device, core, 0, "::1")
        await matter_node.start()
        return matter_node

    def client(role: str, port: int, seconds: float):
        code = f"import test_node_huge_read_wire as t; t.{role}({port}, {seconds})"
        return asyncio.create_subprocess_exec(sys.executable, "-c", code, stdout=asyncio.subprocess.PIPE)

    async def main() -> dict:
        a = await node("a", "heat_pump", FAILSAFE_S)
        b = await node("b", "dimmable_light")
        probe = await client("prober", b.port, FAILSAFE_S + 4)
        assert (await asyncio.wait_for(probe.stdout.readline(), 30)).strip() == b"ready"
        reader = await client("huge_reader", a.port, FAILSAFE_S + 10)
        failsafe = a.core.commissioning.failsafe
        armed = expired = None
        deadline = time.monotonic() + FAILSAFE_S + 20
        while expired is None and time.monotonic() < deadline:
            if armed is None and failsafe.armed:
                armed = time.monotonic()
            elif armed is not None and not failsafe.armed:
                expired = time.monotonic()
            await asyncio.sleep(0.01)
        read_out, _ = await asyncio.wait_for(reader.communicate(), 30)
        probe_out, _ = await asyncio.wait_for(probe.communicate(), 30)
        a.close()
        b.close()
        return {"armed": armed, "expired": expired, "reader": json.loads(read_out),
                "probes": json.loads(probe_out)}

    return asyncio.run(main())


@pytest.mark.e2e
def test_a_huge_read_leaves_the_other_node_fast_and_the_read_nodes_timers_on_time(netns, tmp_path):
    result = netns.call(run_huge_read, str(tmp_path), timeout=120)
    reader, armed, expired = result["reader"], result["armed"], result["expired"]
    assert reader["refused_600"], result            # 600 paths: PATHS_EXHAUSTED, nothing expanded
    # Node A was busy the whole time: many chunked full-wildcard reads until its fail-safe ended them.
    assert reader["chunks"] >= 100, reader
    print(json.dumps({k: v for k, v in result.items() if k != "probes"}))
    assert reader["closed"] is not None, reader
    # A's fail-safe (armed by PASE) expired on time under the load, and closed the reader's session.
    assert armed is not None and expired is not None, result
    # (A timer held back by the load would wait for the reads to stop: FAILSAFE_S + 10 s.)
    assert FAILSAFE_S - 0.05 <= expired - armed < FAILSAFE_S + 1.0, result
    # Node B, on the same event loop, answered every small read promptly while A served the reads.
    during = [latency for start, latency in result["probes"] if reader["opened"] <= start <= reader["closed"]]
    assert len(during) >= 20, result["probes"]
    print(f"{len(during)} reads of node B during node A's huge reads: "
          f"median {statistics.median(during) * 1000:.1f} ms, max {max(during) * 1000:.1f} ms")
    # Generous bounds for a loaded machine: measured median 5 ms and max 16 ms; the issue saw 1.8 s.
    assert statistics.median(during) < 0.1 and max(during) < 1.0, sorted(during)[-5:]
