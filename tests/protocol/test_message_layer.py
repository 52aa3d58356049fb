"""MessageLayer end to end in memory: exchanges, MRP (acks, piggyback, retransmission, give-up),
replay and tamper handling, unsecured handshakes, CloseSession, and fuzzed input."""
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from matter_protocol.exchange import (
    MAX_PEER_EXCHANGES_PER_SESSION,
    MAX_UDP_MESSAGE_SIZE,
    Deliver,
    Dropped,
    ExchangeError,
    ExchangeFailed,
    MessageLayer,
    Send,
    SessionClosed,
)
from matter_protocol.message import MessageHeader, PayloadHeader, ProtocolId, SecureChannelOpcode
from matter_protocol.mrp import (
    MRP_BACKOFF_BASE,
    MRP_BACKOFF_MARGIN,
    MRP_MAX_TRANSMISSIONS,
    MRP_STANDALONE_ACK_TIMEOUT_MS,
    ReliableState,
    backoff_ms,
    base_interval,
)
from matter_protocol.session_types import EstablishedSession, SessionKeys

IM = ProtocolId.INTERACTION_MODEL
KEYS = SessionKeys(i2r_key=bytes(range(16)), r2i_key=bytes(range(16, 32)), attestation_challenge=bytes(16))
CTRL, NODE = ("fd00::1", 5540, 0, 0), ("fd00::2", 5540, 0, 0)


def pair(seed=1, peer_mrp=None, case=False):
    """Controller layer `a` and node layer `b` sharing a test-keyed secure session."""
    a, b = MessageLayer(random.Random(seed)), MessageLayer(random.Random(seed + 100))
    node_a, node_b = (0x1111, 0x2222) if case else (None, None)
    sa = a.add_secure_session(EstablishedSession(10, 20, KEYS, True, node_b, 1 if case else None, peer_mrp),
                              NODE, 0, local_node_id=node_a or 0)
    sb = b.add_secure_session(EstablishedSession(20, 10, KEYS, False, node_a, 1 if case else None, peer_mrp),
                              CTRL, 0, local_node_id=node_b or 0)
    b.register(IM, handler="im-server")
    return a, b, sa, sb


def sends(actions):
    return [x for x in actions if isinstance(x, Send)]


def kinds(actions):
    return [type(x).__name__ for x in actions]


def decode(datagram, session):
    """Open a datagram with the receiving session (test helper, no state change)."""
    header, n = MessageHeader.decode(datagram)
    plain = session.open(header, datagram, n) if session.is_secure else datagram[n:]
    ph, m = PayloadHeader.decode(plain)
    return header, ph, plain[m:]


@pytest.mark.parametrize("case", [False, True])
def test_request_response_with_piggybacked_ack(case):
    a, b, sa, sb = pair(case=case)
    ex = a.new_exchange(sa, IM)
    out = a.send(ex, 0x02, b"read", now_ms=0)
    assert kinds(out) == ["Send"] and out[0].address == NODE
    got = b.receive(out[0].data, CTRL, now_ms=5)
    assert kinds(got) == ["Deliver"]
    d = got[0]
    assert (d.protocol_id, d.opcode, d.payload, d.session, d.exchange.handler) == (IM, 0x02, b"read", sb, "im-server")
    assert not d.exchange.is_initiator and d.exchange.exchange_id == ex.exchange_id
    assert b.next_timer() == 5 + MRP_STANDALONE_ACK_TIMEOUT_MS  # pending ack

    reply = b.send(d.exchange, 0x05, b"report", now_ms=50)
    _, ph, _ = decode(reply[0].data, sa)
    assert ph.ack_counter == decode(out[0].data, sb)[0].message_counter  # piggybacked ack
    assert ph.needs_ack and not ph.initiator
    assert b.on_timer(300) == []  # the ack rode on the report: no standalone ack
    back = a.receive(reply[0].data, NODE, now_ms=60)
    assert kinds(back) == ["Deliver"] and back[0].exchange is ex
    assert ex.mrp.outstanding is None  # our request is acked
    # a closes: its pending ack for the report goes out at once as a standalone ack
    done = a.close_exchange(ex, now_ms=61)
    assert kinds(done) == ["Send"]
    _, ack_ph, _ = decode(done[0].data, sb)
    assert ack_ph.is_standalone_ack and ack_ph.initiator and not ack_ph.needs_ack
    assert ex.closed and a.next_timer() is None
    assert b.receive(done[0].data, CTRL, now_ms=70) == []
    assert d.exchange.mrp.outstanding is None and b.next_timer() is None


def test_standalone_ack_after_timeout_and_no_duplicate_delivery():
    a, b, sa, sb = pair()
    ex = a.new_exchange(sa, IM)
    req = a.send(ex, 0x08, b"invoke", now_ms=0)[0]
    assert kinds(b.receive(req.data, CTRL, 1)) == ["Deliver"]
    assert b.on_timer(1 + MRP_STANDALONE_ACK_TIMEOUT_MS - 1) == []
    acks = b.on_timer(1 + MRP_STANDALONE_ACK_TIMEOUT_MS)
    assert kinds(acks) == ["Send"]
    _, ph, payload = decode(acks[0].data, sa)
    assert ph.is_standalone_ack and payload == b"" and ph.exchange_id == ex.exchange_id
    assert a.receive(acks[0].data, NODE, 250) == []
    assert ex.mrp.outstanding is None and a.next_timer() is None
    # the same ack again is a duplicate and never re-acked (standalone acks do not ask for acks)
    assert kinds(a.receive(acks[0].data, NODE, 251)) == ["Dropped"]


def test_retransmission_schedule_then_give_up():
    mrp = {"SESSION_IDLE_INTERVAL": 800, "SESSION_ACTIVE_INTERVAL": 250, "SESSION_ACTIVE_THRESHOLD": 60_000}
    a, b, sa, sb = pair(peer_mrp=mrp)
    ex = a.new_exchange(sa, IM)
    twin_rng = random.Random()
    twin_rng.setstate(a.rng.getstate())
    expected = [backoff_ms(250, n, twin_rng) for n in range(MRP_MAX_TRANSMISSIONS)]
    first = a.send(ex, 0x02, b"read", now_ms=1000)[0]
    times, now = [], 1000
    for n in range(MRP_MAX_TRANSMISSIONS - 1):
        due = a.next_timer()
        assert due == pytest.approx(now + expected[n])
        assert a.on_timer(due - 0.5) == []
        out = a.on_timer(due)
        assert out == [Send(first.data, NODE)]  # the identical datagram
        times.append(due - now)
        now = due
    due = a.next_timer()
    assert due == pytest.approx(now + expected[-1])
    failed = a.on_timer(due)
    assert kinds(failed) == ["ExchangeFailed"] and failed[0].exchange is ex and "5 transmissions" in failed[0].reason
    assert ex.closed and a.next_timer() is None
    # the formula: margin * base^max(0, n-1) * i, with jitter of at most +25%
    for n, t in enumerate(times + [due - now]):
        low = 250 * MRP_BACKOFF_MARGIN * MRP_BACKOFF_BASE ** max(0, n - 1)
        assert low <= t < low * 1.25


def test_base_interval_follows_peer_activity():
    a, b, sa, sb = pair(peer_mrp={"SESSION_IDLE_INTERVAL": 5000, "SESSION_ACTIVE_INTERVAL": 100,
                                  "SESSION_ACTIVE_THRESHOLD": 1000})
    assert base_interval(sa, 999) == 100 and base_interval(sa, 1000) == 5000
    default_a, _, default_sa, _ = pair()
    assert base_interval(default_sa, 0) == 300 and base_interval(default_sa, 4000) == 500
    ex = a.new_exchange(sa, IM)
    a.send(ex, 1, b"", now_ms=2000)  # peer idle now: the first wait is at least 1.1 * 5000
    assert a.next_timer() >= 2000 + 5500


def test_retransmitted_duplicate_is_reacked_at_once_and_not_redelivered():
    a, b, sa, sb = pair()
    ex = a.new_exchange(sa, IM)
    req = a.send(ex, 0x02, b"read", now_ms=0)[0]
    assert kinds(b.receive(req.data, CTRL, 1)) == ["Deliver"]
    again = a.on_timer(a.next_timer())  # b's ack was "lost"; a retransmits
    assert again == [req]
    got = b.receive(again[0].data, CTRL, 400)
    assert kinds(got) == ["Send", "Dropped"] and "duplicate" in got[1].reason
    _, ph, _ = decode(got[0].data, sa)
    assert ph.is_standalone_ack and ph.ack_counter == decode(req.data, sb)[0].message_counter
    assert a.receive(got[0].data, NODE, 401) == [] and ex.mrp.outstanding is None


def test_tampered_or_forged_message_does_not_move_counters():
    a, b, sa, sb = pair()
    ex = a.new_exchange(sa, IM)
    ok = a.send(ex, 0x02, b"x", now_ms=0, reliable=False)[0].data
    header, n = MessageHeader.decode(ok)
    # forge a header with a much higher counter: MIC fails, window must not move
    forged_header = MessageHeader(session_id=header.session_id, message_counter=header.message_counter + 1000)
    forged = forged_header.encode() + ok[n:]
    assert kinds(b.receive(forged, CTRL, 1)) == ["Dropped"]
    assert sb.reception.max_counter == 0
    flipped = bytearray(ok)
    flipped[-3] ^= 0x40
    assert "MIC" in b.receive(bytes(flipped), CTRL, 2)[0].reason
    assert sb.peer_address == CTRL
    assert kinds(b.receive(ok, ("fd00::9", 1), 3)) == ["Deliver"]  # the genuine one still passes
    assert sb.peer_address == ("fd00::9", 1)  # address follows authenticated traffic
    assert "duplicate" in b.receive(ok, CTRL, 4)[0].reason  # unreliable replay: dropped, no ack
    assert sb.peer_address == ("fd00::9", 1)  # a replay from elsewhere does not redirect the session


def test_unknown_session_and_unregistered_protocol():
    a, b, sa, sb = pair()
    wrong = a.new_exchange(sa, 0x0004)
    out = a.send(wrong, 1, b"", now_ms=0)[0]
    got = b.receive(out.data, CTRL, 1)
    assert kinds(got) == ["Send", "Dropped"] and "no exchange" in got[1].reason  # acked so a stops retrying
    assert decode(got[0].data, sa)[1].is_standalone_ack
    stranger = MessageLayer(random.Random(9))
    assert "unknown session id 20" in stranger.receive(out.data, CTRL, 1)[0].reason
    # a message from a responder on an exchange we never opened
    bex = b.new_exchange(sb, IM)
    bex.is_initiator = False  # pretend: a responder message to an unknown exchange
    lost = b.send(bex, 1, b"", now_ms=2, reliable=False)[0]
    assert kinds(a.receive(lost.data, NODE, 3)) == ["Dropped"]


def test_one_outstanding_reliable_message_per_exchange_and_size_limit():
    a, b, sa, sb = pair()
    ex = a.new_exchange(sa, IM)
    a.send(ex, 1, b"", now_ms=0)
    with pytest.raises(ExchangeError, match="one outstanding"):
        a.send(ex, 2, b"", now_ms=1)
    a.send(ex, 3, b"", now_ms=1, reliable=False)  # unreliable is fine
    other = a.new_exchange(sa, IM)
    with pytest.raises(ExchangeError, match="at most 1280"):
        a.send(other, 1, bytes(MAX_UDP_MESSAGE_SIZE), now_ms=2)
    assert other.mrp.outstanding is None
    a.close_exchange(other, 3)
    with pytest.raises(ExchangeError, match="closed"):
        a.send(other, 1, b"", now_ms=4)


def test_exchange_ids_are_distinct_and_roles_separate():
    a, b, sa, sb = pair()
    ids = [a.new_exchange(sa, IM).exchange_id for _ in range(50)]
    assert len(set(ids)) == 50
    # b initiating with the same id as a's exchange is a different exchange (role differs)
    a_ex = a.new_exchange(sa, IM)
    a.register(IM, handler="client")
    b._next_exchange_id = a_ex.exchange_id
    b_ex = b.new_exchange(sb, IM)
    got = a.receive(b.send(b_ex, 7, b"event", now_ms=0)[0].data, NODE, 1)
    assert kinds(got) == ["Deliver"] and got[0].exchange is not a_ex and got[0].exchange.handler == "client"


def test_close_session_both_sides():
    a, b, sa, sb = pair()
    out = a.close_session(sa, now_ms=0)
    assert kinds(out) == ["Send", "SessionClosed"] and sa.closed
    _, ph, payload = decode(out[0].data, sb)
    assert (ph.protocol_id, ph.opcode) == (0, SecureChannelOpcode.StatusReport)
    assert payload == bytes.fromhex("0000000000000300")
    got = b.receive(out[0].data, CTRL, 1)
    assert kinds(got) == ["SessionClosed"] and got[0].session is sb and sb.closed
    assert b.sessions.get(20) is None
    assert "unknown session" in b.receive(out[0].data, CTRL, 2)[0].reason
    with pytest.raises(ExchangeError, match="closed"):
        a.new_exchange(sa, IM)


def test_unsecured_handshake_messages_and_replay():
    ctrl, node = MessageLayer(random.Random(5)), MessageLayer(random.Random(6))
    node.register(ProtocolId.SECURE_CHANNEL, handler="pase")
    session = ctrl.open_unsecured(NODE, now_ms=0)
    ex = ctrl.new_exchange(session, ProtocolId.SECURE_CHANNEL)
    req = ctrl.send(ex, SecureChannelOpcode.PBKDFParamRequest, b"\x15\x18", now_ms=0)[0]
    header, _ = MessageHeader.decode(req.data)
    assert header.session_id == 0 and header.source_node_id == session.ephemeral_node_id
    assert header.dest_node_id is None
    got = node.receive(req.data, CTRL, 1)
    assert kinds(got) == ["Deliver"] and got[0].exchange.handler == "pase" and not got[0].session.is_secure
    resp = node.send(got[0].exchange, SecureChannelOpcode.PBKDFParamResponse, b"\x15\x18", now_ms=2)[0]
    rheader, _ = MessageHeader.decode(resp.data)
    assert rheader.dest_node_id == session.ephemeral_node_id and rheader.source_node_id is None
    back = ctrl.receive(resp.data, NODE, 3)
    assert kinds(back) == ["Deliver"] and back[0].opcode == SecureChannelOpcode.PBKDFParamResponse
    assert ex.mrp.outstanding is None
    # replay of the request: duplicate, re-acked, not delivered
    dup = node.receive(req.data, CTRL, 4)
    assert kinds(dup) == ["Send", "Dropped"]
    # the unsecured counter is one node-wide counter
    counters = [MessageHeader.decode(x.data)[0].message_counter
                for x in (req, ctrl.send(ctrl.new_exchange(ctrl.open_unsecured(NODE, 5), 0), 0x20, b"", 5)[0])]
    assert counters[1] == counters[0] + 1  # ctrl sent nothing in between (its ack is still pending)
    # a response to an ephemeral id nobody initiated is dropped
    assert "no unsecured session" in MessageLayer(random.Random(7)).receive(resp.data, NODE, 5)[0].reason
    # a non-initiator message with only a source id opens nothing
    stray = MessageHeader(session_id=0, message_counter=1, source_node_id=42).encode() + PayloadHeader(
        exchange_id=1, protocol_id=0, opcode=0x20).encode()
    assert "not from an initiator" in node.receive(stray, CTRL, 6)[0].reason


def test_reliable_state_flushes_an_older_pending_ack():
    st_ = ReliableState()
    assert st_.on_needs_ack(5, 0) is None
    assert st_.on_needs_ack(6, 10) == 5 and st_.pending_ack == 6 and st_.ack_due_ms == 210
    assert st_.take_ack() == 6 and st_.take_ack() is None


def test_counter_exhaustion_closes_session():
    a, b, sa, sb = pair()
    sa.counter.value = 0xFFFFFFFF
    ex = a.new_exchange(sa, IM)
    with pytest.raises(ExchangeError, match="exhausted"):
        a.send(ex, 1, b"", now_ms=0)
    assert sa.closed and [type(e) for e in a.on_timer(1)] == [SessionClosed]


def test_lossy_link_delivers_exactly_once_in_order():
    """20 request/response rounds over a link that drops 25% of datagrams (seeded). Every round either
    completes or reports ExchangeFailed; nothing is delivered twice or out of order."""
    a, b, sa, sb = pair(seed=11)
    loss = random.Random(99)
    now = 0.0
    layers = {NODE: b, CTRL: a}
    delivered_b, delivered_a, in_flight = [], [], []
    round_failed = {}

    def pump(actions, sender_addr, rnd):
        for act in actions:
            if isinstance(act, Send) and loss.random() >= 0.25:
                in_flight.append((act.address, sender_addr, act.data))
            elif isinstance(act, Deliver):
                if act.exchange.layer is b:
                    delivered_b.append(act.payload)
                    pump(b.send(act.exchange, 5, b"re:" + act.payload, now), NODE, rnd)
                    pump(b.close_exchange(act.exchange, now), NODE, rnd)
                else:
                    delivered_a.append(act.payload)
                    pump(a.close_exchange(act.exchange, now), CTRL, rnd)
            elif isinstance(act, ExchangeFailed):
                round_failed[rnd] = act

    for rnd in range(20):
        pump(a.send(a.new_exchange(sa, IM), 2, b"req%d" % rnd, now), CTRL, rnd)
        while in_flight or a.next_timer() is not None or b.next_timer() is not None:
            if in_flight:
                to, frm, data = in_flight.pop(0)
                now += 1
                pump(layers[to].receive(data, frm, now), to, rnd)
                continue
            now = min(t for t in (a.next_timer(), b.next_timer()) if t is not None)
            pump(a.on_timer(now), CTRL, rnd)
            pump(b.on_timer(now), NODE, rnd)
        assert b"re:req%d" % rnd in delivered_a or rnd in round_failed

    requests = [b"req%d" % i for i in range(20)]
    assert delivered_b == [r for r in requests if r in delivered_b]  # in order, each at most once
    assert delivered_a == [b"re:" + r for r in delivered_b if b"re:" + r in delivered_a]
    assert len(delivered_a) >= 16 and len(delivered_a) + len(round_failed) >= 20


# --- fuzzing: nothing raises out of receive() ------------------------------------------------------

def _fuzz_target():
    a, b, sa, sb = pair(seed=3)
    b.register(ProtocolId.SECURE_CHANNEL, handler="sc")
    sample = a.send(a.new_exchange(sa, IM), 2, b"\x15\x18", now_ms=0)[0].data
    return b, sb, sample


FUZZ_LAYER, FUZZ_SESSION, FUZZ_SAMPLE = _fuzz_target()


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=200))
def test_fuzz_random_bytes_never_raise(data):
    actions = FUZZ_LAYER.receive(data, CTRL, 1)
    assert all(isinstance(x, (Send, Deliver, Dropped, SessionClosed)) for x in actions)
    assert not any(isinstance(x, Deliver) and x.session.is_secure for x in actions)  # no MIC, no delivery


@settings(max_examples=400, deadline=None)
@given(st.integers(min_value=0, max_value=len(FUZZ_SAMPLE) - 1), st.integers(min_value=1, max_value=255),
       st.integers(min_value=0, max_value=len(FUZZ_SAMPLE)))
def test_fuzz_mutated_secure_datagrams_are_dropped(pos, xor, cut):
    data = bytearray(FUZZ_SAMPLE)
    data[pos] ^= xor
    before = (FUZZ_SESSION.reception.max_counter, FUZZ_SESSION.reception.window)
    actions = FUZZ_LAYER.receive(bytes(data[:max(cut, pos + 1)]), CTRL, 1)
    assert kinds(actions) == ["Dropped"]
    assert (FUZZ_SESSION.reception.max_counter, FUZZ_SESSION.reception.window) == before


@settings(max_examples=400, deadline=None)
@given(st.binary(min_size=8, max_size=8), st.binary(max_size=60))
def test_fuzz_unsecured_headers_with_random_payloads(payload_head, tail):
    # a valid unsecured initiator header followed by arbitrary protocol header bytes
    header = MessageHeader(session_id=0, message_counter=int.from_bytes(payload_head[:4], "little"),
                           source_node_id=int.from_bytes(payload_head, "little") or 1).encode()
    actions = FUZZ_LAYER.receive(header + tail, CTRL, 2)
    # SessionClosed: older unsecured sessions are evicted once the table (16) is full
    assert all(isinstance(x, (Send, Deliver, Dropped, SessionClosed)) for x in actions)
    assert len(list(FUZZ_LAYER.sessions.unsecured_sessions())) <= FUZZ_LAYER.sessions.max_unsecured


def test_a_peer_that_never_acks_holds_a_bounded_number_of_exchanges():
    """Issue #32: each request the node answers keeps its exchange until the answer is acked;
    a peer that never acks gets at most MAX_PEER_EXCHANGES_PER_SESSION, then its new exchanges
    are dropped (a full exchange pool in the CHIP SDK does the same), and another session is
    still served."""
    a, b, sa, sb = pair()
    delivered = 0
    for _ in range(100):
        request = a.send(a.new_exchange(sa, IM), 0x02, b"read", now_ms=0)[0]
        for event in b.receive(request.data, CTRL, 1):
            if isinstance(event, Deliver):
                delivered += 1
                b.send(event.exchange, 0x05, b"report", now_ms=1)   # never acked by `a`
                b.close_exchange(event.exchange, now_ms=1)
    assert delivered == MAX_PEER_EXCHANGES_PER_SESSION == len(b.exchanges())
    # Another peer's session is served meanwhile.
    other = MessageLayer(random.Random(7))
    so = other.add_secure_session(EstablishedSession(11, 21, KEYS, True, None, None, None), NODE, 0)
    b.add_secure_session(EstablishedSession(21, 11, KEYS, False, None, None, None), ("fd00::3", 5540, 0, 0), 0)
    request = other.send(other.new_exchange(so, IM), 0x02, b"read", now_ms=0)[0]
    assert "Deliver" in kinds(b.receive(request.data, ("fd00::3", 5540, 0, 0), 2))
    # MRP gives up on the unacked answers: the session may open exchanges again.
    now = 2
    while (due := b.next_timer()) is not None:
        now = max(now, due)
        b.on_timer(now)
    assert [e for e in b.exchanges() if e.session is sb] == []
    request = a.send(a.new_exchange(sa, IM), 0x02, b"read", now_ms=now)[0]
    assert "Deliver" in kinds(b.receive(request.data, CTRL, now + 1))
