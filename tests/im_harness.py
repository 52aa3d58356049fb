"""In-memory controller <-> node link for the Interaction Model tests (two MessageLayers)."""
from __future__ import annotations

import random

from twin.node.exchange import Deliver, MessageLayer, Send, SessionClosed
from twin.node.im import InteractionModelServer
from twin.node.im_codec import Message, Opcode, ReportData, StatusResponse, decode_message
from twin.node.message import ProtocolId
from twin.node.session_types import EstablishedSession, SessionKeys

IM = ProtocolId.INTERACTION_MODEL
KEYS = SessionKeys(i2r_key=bytes(range(16)), r2i_key=bytes(range(16, 32)), attestation_challenge=bytes(16))
CTRL, NODE = ("fd00::1", 5540, 0, 0), ("fd00::2", 5540, 0, 0)


class Link:
    """Controller layer `a` talks to node layer `b`, whose IM server is `im`.

    Everything the controller receives is kept in `inbox` as (exchange, decoded message). With
    `auto_ack`, the controller answers every ReportData that asks for it with StatusResponse(ack_status).
    """

    def __init__(self, device, case=True, seed=1, ack_status=0, **im_options):
        self.a, self.b = MessageLayer(random.Random(seed)), MessageLayer(random.Random(seed + 100))
        node_a, node_b = (0x1111, 0x2222) if case else (None, None)
        self.sa = self.a.add_secure_session(EstablishedSession(10, 20, KEYS, True, node_b, 1 if case else None, None),
                                            NODE, 0, local_node_id=node_a or 0)
        self.sb = self.b.add_secure_session(EstablishedSession(20, 10, KEYS, False, node_a, 1 if case else None, None),
                                            CTRL, 0, local_node_id=node_b or 0)
        self.b.register(IM, handler="interaction model")
        self.im = InteractionModelServer(device, random.Random(seed + 7), **im_options)
        self.now = 0.0
        self.inbox: list[tuple[object, Message]] = []
        self.auto_ack = True
        self.ack_status = ack_status
        self.node_sends = 0

    # -- the node side -------------------------------------------------------------------------
    def _node(self, actions):
        out = []
        for action in actions:
            if isinstance(action, Deliver):
                out += self._node(self.im.handle(action.session, action.exchange, action.opcode,
                                                 action.payload, self.now))
            elif isinstance(action, SessionClosed):
                out += self._node(self.im.session_closed(action.session, self.now))
            elif isinstance(action, Send):
                self.node_sends += 1
                out.append(action)
        return out

    def _pump(self, to_node, to_ctrl=()):
        queue = [("b", s.data) for s in to_node if isinstance(s, Send)]
        queue += [("a", s.data) for s in to_ctrl if isinstance(s, Send)]
        while queue:
            side, data = queue.pop(0)
            if side == "b":
                queue += [("a", s.data) for s in self._node(self.b.receive(data, CTRL, self.now))]
                continue
            for action in self.a.receive(data, NODE, self.now):
                if isinstance(action, Send):
                    queue.append(("b", action.data))
                if not isinstance(action, Deliver):
                    continue
                message = decode_message(action.opcode, action.payload)
                self.inbox.append((action.exchange, message))
                if (self.auto_ack and isinstance(message, ReportData) and not message.suppress_response):
                    reply = StatusResponse(self.ack_status)
                    queue += [("b", s.data) for s in self.a.send(action.exchange, Opcode.StatusResponse,
                                                                  reply.encode(), self.now) if isinstance(s, Send)]

    # -- the controller side ---------------------------------------------------------------------
    def request(self, message: Message, exchange=None) -> list[Message]:
        """Send a request (on a new exchange unless given); returns the messages it brought back."""
        exchange = exchange or self.a.new_exchange(self.sa, IM)
        self.last_exchange = exchange
        start = len(self.inbox)
        self._pump(self.a.send(exchange, message.opcode, message.encode(), self.now))
        return [m for _, m in self.inbox[start:]]

    def raw(self, opcode: int, payload: bytes) -> list[Message]:
        exchange = self.a.new_exchange(self.sa, IM)
        start = len(self.inbox)
        self._pump(self.a.send(exchange, opcode, payload, self.now))
        return [m for _, m in self.inbox[start:]]

    def advance(self, ms: float) -> list[Message]:
        """Move the fake clock, firing every timer due on the way; returns what arrived."""
        start = len(self.inbox)
        target = self.now + ms
        while True:
            due = [t for t in (self.im.next_timer(), self.a.next_timer(), self.b.next_timer()) if t is not None]
            step = min([t for t in due if t <= target], default=None)
            self.now = max(self.now, step) if step is not None else target
            node = self._node(self.b.on_timer(self.now) + self.im.on_timer(self.now))
            self._pump(node, self.a.on_timer(self.now))
            if step is None:
                break
        return [m for _, m in self.inbox[start:]]
