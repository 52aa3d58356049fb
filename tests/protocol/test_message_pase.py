"""The seam between the message layer and the handshakes: a PASE run carried by two MessageLayers over
an unsecured session (with MRP acks and a lossy first attempt), then an encrypted exchange on the
resulting secure session using the peer's announced MRP parameters."""
import random

from matter_protocol.exchange import Deliver, MessageLayer, Send
from matter_protocol.message import MessageHeader, ProtocolId
from matter_protocol.pase import PaseInitiator, PaseResponder
from matter_protocol.spake2p import make_verifier

SALT, ITER, PASSCODE = b"SPAKE2P Key Salt", 1000, 20202021
CTRL, NODE = ("fd00::1", 5541), ("fd00::2", 5540)
IM = ProtocolId.INTERACTION_MODEL


class Wire:
    """Moves Send actions between two layers; handlers react to Deliver; time jumps to timers."""

    def __init__(self, ctrl, node, on_deliver, drop_first=0):
        self.layers = {CTRL: ctrl, NODE: node}
        self.on_deliver = on_deliver
        self.queue, self.now, self.drop = [], 0.0, drop_first
        self.datagrams, self.times = [], []

    def feed(self, actions, sender):
        for act in actions:
            if isinstance(act, Send):
                self.datagrams.append(act.data)
                self.times.append(self.now)
                if self.drop > 0:
                    self.drop -= 1
                    continue
                self.queue.append((act.address, sender, act.data))
            elif isinstance(act, Deliver):
                self.feed(self.on_deliver(act, self.now), sender)

    def run(self):
        while True:
            if self.queue:
                to, frm, data = self.queue.pop(0)
                self.now += 1
                self.feed(self.layers[to].receive(data, frm, self.now), to)
                continue
            timers = [t for t in (layer.next_timer() for layer in self.layers.values()) if t is not None]
            if not timers:
                return
            self.now = max(self.now, min(timers))
            for addr, layer in self.layers.items():
                self.feed(layer.on_timer(self.now), addr)


def test_pase_over_message_layers_then_secure_traffic():
    ctrl, node = MessageLayer(random.Random(1)), MessageLayer(random.Random(2))
    node.register(ProtocolId.SECURE_CHANNEL, handler="pase")
    node.register(IM, handler="im")
    responder = PaseResponder(make_verifier(PASSCODE, SALT, ITER), SALT, ITER, node.sessions.allocate_id(),
                              rng=random.Random(3), session_params={"SESSION_ACTIVE_INTERVAL": 50,
                                                                   "SESSION_IDLE_INTERVAL": 70})
    initiator = PaseInitiator(PASSCODE, ctrl.sessions.allocate_id(), rng=random.Random(4))
    replies = []

    def on_deliver(event, now):
        layer = event.exchange.layer
        if event.exchange.handler == "pase":
            out = []
            for opcode, payload in responder.handle(event.opcode, event.payload):
                out += layer.send(event.exchange, opcode, payload, now)
            return out
        if event.exchange.handler == "im":
            return layer.send(event.exchange, 0x05, b"report:" + event.payload, now)
        # the controller side: PASE replies, then IM responses
        if event.protocol_id == ProtocolId.SECURE_CHANNEL:
            out = []
            for opcode, payload in initiator.handle(event.opcode, event.payload):
                out += layer.send(event.exchange, opcode, payload, now)
            if initiator.result is not None:
                out += layer.close_exchange(event.exchange, now)
            return out
        replies.append(event.payload)
        return layer.close_exchange(event.exchange, now)

    unsecured = ctrl.open_unsecured(NODE, now_ms=0)
    exchange = ctrl.new_exchange(unsecured, ProtocolId.SECURE_CHANNEL)
    wire = Wire(ctrl, node, on_deliver, drop_first=1)  # the first PBKDFParamRequest is lost: MRP resends it
    (opcode, payload), = initiator.start()
    wire.feed(ctrl.send(exchange, opcode, payload, 0), CTRL)
    wire.run()
    assert initiator.error is None and responder.error is None
    assert initiator.result is not None and responder.result is not None
    assert wire.datagrams[0] == wire.datagrams[1]  # the retransmission is byte-identical
    assert all(MessageHeader.decode(d)[0].session_id == 0 for d in wire.datagrams)

    # install the sessions the handshake produced; PASE: no node ids, nonce node id 0
    sc = ctrl.add_secure_session(initiator.result, NODE, wire.now)
    sn = node.add_secure_session(responder.result, CTRL, wire.now)
    assert sc.peer_mrp == {"SESSION_ACTIVE_INTERVAL": 50, "SESSION_IDLE_INTERVAL": 70}
    im = ctrl.new_exchange(sc, IM)
    start = wire.now
    wire.drop = 1  # lose the first encrypted request too: retried after 50 ms * 1.1 (+ jitter)
    wire.feed(ctrl.send(im, 0x02, b"read-request", wire.now), CTRL)
    wire.run()
    assert replies == [b"report:read-request"]
    to_node = [(t, d) for t, d in zip(wire.times, wire.datagrams)
               if MessageHeader.decode(d)[0].session_id == sn.local_session_id]
    (t0, first), (t1, again) = to_node[:2]
    assert first == again and t0 == start
    assert 55 <= t1 - t0 < 55 * 1.25  # the peer's 50 ms active interval, not the 300 ms default
    assert im.closed and ctrl.next_timer() is None and node.next_timer() is None
