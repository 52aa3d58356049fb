"""Issue #32 item 1 over the wire: inside a test-created network namespace, a squatter sends a
node one well-formed PBKDFParamRequest a second and acknowledges the node's reply, then falls
silent (what held the node's only PASE slot for 60 s and refused 85 of 86 commissioners). While
it keeps at it, python-matter-server (the CHIP SDK controller) commissions the node at the first
try, and the window counted no failed attempt."""
from __future__ import annotations

import asyncio
import contextlib
import random
import socket
from pathlib import Path
from typing import Any

import pytest
from e2e_twin import twin_lab
from netns import ADDRESSES_V6
from test_node_handshake_flood_matter_server import open_window_node

pytestmark = pytest.mark.e2e   # a namespace and python-matter-server


async def squat(port: int, stop: asyncio.Event, sent: list[int]) -> None:
    """A datagram pair a second: a fresh PBKDFParamRequest, then the ack of the node's answer."""
    from matter_protocol.exchange import Deliver, MessageLayer, Send
    from matter_protocol.message import ProtocolId
    from matter_protocol.pase import PaseInitiator

    rng = random.Random(32)
    node = (ADDRESSES_V6[0], port)
    loop = asyncio.get_running_loop()
    with socket.socket(socket.AF_INET6, socket.SOCK_DGRAM) as sock:
        sock.setblocking(False)
        while not stop.is_set():
            layer = MessageLayer(random.Random(rng.getrandbits(64)))
            exchange = layer.new_exchange(layer.open_unsecured(node, 0), ProtocolId.SECURE_CHANNEL)
            (opcode, payload), = PaseInitiator(1, 0x200, rng=random.Random(rng.getrandbits(64))).start()
            for action in layer.send(exchange, opcode, payload, 0):
                if isinstance(action, Send):
                    sock.sendto(action.data, node)
            sent[0] += 1
            try:
                reply = await asyncio.wait_for(loop.sock_recv(sock, 2048), 0.5)
            except TimeoutError:
                reply = b""
            for event in layer.receive(reply, node, 1) if reply else []:
                if isinstance(event, Deliver):   # the PBKDFParamResponse: ack it, and say nothing more
                    for action in event.exchange.close(1):
                        if isinstance(action, Send):
                            sock.sendto(action.data, node)
                    sent[1] += 1
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), 1.0)


async def scenario(client: Any, twin: Any, state: Any) -> dict[str, Any]:
    stop, sent = asyncio.Event(), [0, 0]
    squatter = asyncio.create_task(squat(state["port"], stop, sent))
    await asyncio.sleep(3.0)   # the squatter holds a handshake when the commissioner comes
    try:
        node = await client.commission_with_code(state["qr"], network_only=True)
    finally:
        stop.set()
        await squatter
    return {"requests": sent[0], "acked": sent[1], "node_id": node.node_id, "available": node.available}


def test_commissioning_succeeds_at_once_beside_a_pase_squatter(tmp_path: Path):
    with twin_lab(tmp_path, "i32sq") as lab:
        target = open_window_node((tmp_path / "twin.log").read_text())
        got = lab.call("test_node_pase_squatter_matter_server", "scenario", target, timeout=240)
    print(target, got)
    assert got["requests"] >= 3 and got["acked"] >= 3, got   # the squatter was answered, and acked
    assert got["node_id"] >= 1 and got["available"], got
    log = (tmp_path / "twin.log").read_text()
    assert "Traceback" not in log, log[-3000:]
