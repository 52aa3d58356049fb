"""The asyncio UDP shell: two nodes on loopback (::1 and 127.0.0.1 only) exchanging real datagrams,
including a retransmission driven by the shell's timer."""
import asyncio
import random

import pytest

from matter_protocol.exchange import Deliver, ExchangeFailed, MessageLayer
from matter_protocol.message import ProtocolId
from matter_protocol.session_types import EstablishedSession, SessionKeys
from twin.node.transport import UdpTransport, _make_socket

KEYS = SessionKeys(i2r_key=bytes(range(16)), r2i_key=bytes(range(16, 32)), attestation_challenge=bytes(16))
IM = ProtocolId.INTERACTION_MODEL


async def _two_nodes(host):
    ctrl_layer, node_layer = MessageLayer(random.Random(1)), MessageLayer(random.Random(2))
    ctrl_events, node_events = [], []
    ctrl = await UdpTransport.open(ctrl_layer, ctrl_events.append, host=host, port=0)
    node = await UdpTransport.open(node_layer, node_events.append, host=host, port=0)
    sa = ctrl_layer.add_secure_session(EstablishedSession(10, 20, KEYS, True, None, None, None),
                                       node.address, ctrl.now_ms())
    node_layer.add_secure_session(EstablishedSession(20, 10, KEYS, False, None, None, None), None, node.now_ms())
    return ctrl, node, ctrl_events, node_events, sa


async def _wait_for(predicate, timeout=5.0):
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not predicate():
        assert loop.time() < end, "timed out"
        await asyncio.sleep(0.005)


@pytest.mark.parametrize("host", ["::1", "127.0.0.1"])
async def test_request_response_over_loopback(host):
    ctrl, node, ctrl_events, node_events, sa = await _two_nodes(host)
    try:
        node.layer.register(IM, handler="server")

        def answer(event):
            node_events.append(event)
            if isinstance(event, Deliver):
                node.send(event.exchange, 0x05, b"pong:" + event.payload)

        node.on_event = answer
        ex = ctrl.layer.new_exchange(sa, IM)
        ctrl.send(ex, 0x02, b"ping")
        await _wait_for(lambda: any(isinstance(e, Deliver) for e in ctrl_events))
        reply = next(e for e in ctrl_events if isinstance(e, Deliver))
        assert reply.payload == b"pong:ping" and reply.exchange is ex
        assert ex.mrp.outstanding is None  # acked by piggyback
        # ctrl's pending ack for the reply goes out as a standalone ack on the shell's 200 ms timer
        node_exchange = next(e for e in node_events if isinstance(e, Deliver)).exchange
        await _wait_for(lambda: node_exchange.mrp.outstanding is None)
        assert node_exchange.session.peer_address[:2] == ctrl.address[:2]  # learnt from the datagram
    finally:
        ctrl.close()
        node.close()


async def test_retransmits_until_peer_appears_then_gives_up_without_one():
    ctrl_layer = MessageLayer(random.Random(3))
    events = []
    ctrl = await UdpTransport.open(ctrl_layer, events.append, host="127.0.0.1", port=0)
    # a bound socket that never answers, so datagrams are counted but not acked
    silent = _make_socket("127.0.0.1", 0)
    try:
        session = ctrl_layer.add_secure_session(
            EstablishedSession(10, 20, KEYS, True, None, None,
                               {"SESSION_ACTIVE_INTERVAL": 10, "SESSION_IDLE_INTERVAL": 10}),
            silent.getsockname(), ctrl.now_ms())
        ex = ctrl_layer.new_exchange(session, IM)
        ctrl.send(ex, 0x02, b"ping")
        await _wait_for(lambda: any(isinstance(e, ExchangeFailed) for e in events))
        received = []
        while True:
            try:
                received.append(silent.recv(2048))
            except BlockingIOError:
                break
        assert len(received) == 5 and len(set(received)) == 1  # 1 send + 4 identical retransmissions
    finally:
        silent.close()
        ctrl.close()


def test_host_must_be_an_address_literal():
    with pytest.raises(ValueError, match="accepted: an IPv4 or IPv6 address literal"):
        _make_socket("localhost", 0)
