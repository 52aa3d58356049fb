"""Message layer: header codec byte vectors, AES-CCM nonce/AAD, counters, replay windows, StatusReport."""
import random
import struct

import pytest
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from matter_protocol.exchange import MessageLayer
from matter_protocol.message import (
    COUNTER_INIT_MAX,
    MAX_UINT32,
    CounterExhausted,
    CounterMode,
    MessageCounter,
    MessageFormatError,
    MessageHeader,
    PayloadHeader,
    ProtocolId,
    ReceptionState,
    SecureChannelOpcode,
    SessionType,
)
from matter_protocol.session import SecureSession, SessionTable, make_nonce
from matter_protocol.session_types import EstablishedSession, SessionKeys
from matter_protocol.status_report import GeneralCode, SecureChannelStatus, StatusReport

H = bytes.fromhex


# --- message header vectors, laid out by hand from the spec's field table (4.4.1) ----------------

HEADER_VECTORS = [
    # unsecured, from the initiator: flags S=1, session 0, sec flags 0, counter, source node id
    (MessageHeader(session_id=0, message_counter=0x01020304, source_node_id=0x1122334455667788),
     H("04 0000 00 04030201 8877665544332211")),
    # unsecured, from the responder: DSIZ=1 and the ephemeral id as destination
    (MessageHeader(session_id=0, message_counter=0xFFFFFFFF, dest_node_id=0x0102030405060708),
     H("01 0000 00 ffffffff 0807060504030201")),
    # secure unicast: no node ids
    (MessageHeader(session_id=0xABCD, message_counter=1), H("00 cdab 00 01000000")),
    # group: S=1, DSIZ=2, session type 1
    (MessageHeader(session_id=0x1234, message_counter=7, session_type=SessionType.GROUP,
                   source_node_id=0xAA, dest_group_id=0x0102),
     H("06 3412 01 07000000 aa00000000000000 0201")),
    # message extensions: MX flag and a 2-byte length
    (MessageHeader(session_id=5, message_counter=2, message_extensions=b"\x99\x98\x97"),
     H("00 0500 20 02000000 0300 999897")),
    # privacy and control flags
    (MessageHeader(session_id=5, message_counter=2, privacy=True, control=True), H("00 0500 c0 02000000")),
]


@pytest.mark.parametrize("header,wire", HEADER_VECTORS)
def test_message_header_vectors(header, wire):
    assert header.encode() == wire
    decoded, length = MessageHeader.decode(wire + b"payload")
    assert decoded == header and length == len(wire)


PAYLOAD_VECTORS = [
    # I|R|A, PBKDFParamRequest, exchange 0x1234, protocol 0, ack counter
    (PayloadHeader(exchange_id=0x1234, protocol_id=0, opcode=0x20, initiator=True, needs_ack=True,
                   ack_counter=0xAABBCCDD), H("07 20 3412 0000 ddccbbaa")),
    # standalone ack from the responder: A only
    (PayloadHeader(exchange_id=1, protocol_id=0, opcode=0x10, ack_counter=5), H("02 10 0100 0000 05000000")),
    # vendor id comes before the protocol id
    (PayloadHeader(exchange_id=2, protocol_id=0x0001, opcode=0x08, vendor_id=0xFFF1), H("10 08 0200 f1ff 0100")),
    # secured extensions after the ack counter
    (PayloadHeader(exchange_id=3, protocol_id=1, opcode=2, ack_counter=1, secured_extensions=b"\x01\x02"),
     H("0a 02 0300 0100 01000000 0200 0102")),
]


@pytest.mark.parametrize("header,wire", PAYLOAD_VECTORS)
def test_payload_header_vectors(header, wire):
    assert header.encode() == wire
    decoded, length = PayloadHeader.decode(wire + b"\x15\x18")
    assert decoded == header and length == len(wire)


def test_standalone_ack_recognised_only_for_secure_channel():
    assert PayloadHeader(exchange_id=1, protocol_id=0, opcode=0x10).is_standalone_ack
    assert not PayloadHeader(exchange_id=1, protocol_id=1, opcode=0x10).is_standalone_ack
    assert not PayloadHeader(exchange_id=1, protocol_id=0, opcode=0x10, vendor_id=0xFFF1).is_standalone_ack


@pytest.mark.parametrize("wire,field", [
    (H("04 0000 00 04030201 88776655"), "source node id"),
    (H("01 0000 00 04030201"), "destination node id"),
    (H("02 0000 00 04030201 01"), "destination group id"),
    (H("00 0100 20 04030201 0500 0102"), "message extensions"),
    (H("00 0100 00 040302"), "message header"),
])
def test_truncated_message_headers_name_the_field(wire, field):
    with pytest.raises(MessageFormatError, match=field):
        MessageHeader.decode(wire)


def test_bad_version_dsiz_and_session_type_rejected():
    with pytest.raises(MessageFormatError, match="version 1"):
        MessageHeader.decode(H("10 0000 00 01000000"))
    with pytest.raises(MessageFormatError, match="DSIZ"):
        MessageHeader.decode(H("03 0000 00 01000000 0000000000000000"))
    with pytest.raises(MessageFormatError, match="session type 2"):
        MessageHeader.decode(H("00 0000 02 01000000"))


@pytest.mark.parametrize("wire,field", [
    (H("07 20 34"), "protocol header"),
    (H("10 20 3412 f1"), "vendor id"),
    (H("02 20 3412 0000 ddcc"), "acknowledged message counter"),
    (H("08 20 3412 0000 0300 01"), "secured extensions"),
])
def test_truncated_payload_headers_name_the_field(wire, field):
    with pytest.raises(MessageFormatError, match=field):
        PayloadHeader.decode(wire)


def test_encode_rejects_out_of_range_fields():
    with pytest.raises(MessageFormatError, match="session id"):
        MessageHeader(session_id=0x10000, message_counter=0).encode()
    with pytest.raises(MessageFormatError, match="not both"):
        MessageHeader(session_id=1, message_counter=0, dest_node_id=1, dest_group_id=1).encode()
    with pytest.raises(MessageFormatError, match="opcode"):
        PayloadHeader(exchange_id=1, protocol_id=0, opcode=256).encode()


# --- AES-CCM: our sessions against an independent CCM built from AES blocks (SP 800-38C) -----------

def _ccm_reference(key: bytes, nonce: bytes, aad: bytes, plaintext: bytes, tag_len: int = 16) -> bytes:
    encrypt_block = Cipher(algorithms.AES(key), modes.ECB()).encryptor().update
    xor = lambda a, b: bytes(x ^ y for x, y in zip(a, b))  # noqa: E731
    q = 15 - len(nonce)
    b0 = bytes([(0x40 if aad else 0) | ((tag_len - 2) // 2) << 3 | (q - 1)]) + nonce + len(plaintext).to_bytes(q, "big")
    a = (len(aad).to_bytes(2, "big") + aad) if aad else b""
    a += bytes(-len(a) % 16)
    p = plaintext + bytes(-len(plaintext) % 16)
    mac = encrypt_block(b0)
    for i in range(0, len(a + p), 16):
        mac = encrypt_block(xor(mac, (a + p)[i:i + 16]))
    counter_block = lambda i: bytes([q - 1]) + nonce + i.to_bytes(q, "big")  # noqa: E731
    stream = b"".join(encrypt_block(counter_block(i + 1)) for i in range(len(p) // 16))
    return xor(plaintext, stream) + xor(mac[:tag_len], encrypt_block(counter_block(0)))


I2R = H("5eded244e5532b3cdc23409dbad052d2")
R2I = H("a9e011b1737c6d4b70e4c0a2fe660476")
KEYS = SessionKeys(i2r_key=I2R, r2i_key=R2I, attestation_challenge=bytes(16))


def test_nonce_layout_is_flags_counter_node_id_little_endian():
    assert make_nonce(0x00, 0x01020304, 0x1122334455667788) == H("00 04030201 8877665544332211")
    assert len(make_nonce(0x01, 0, 0)) == 13


def test_secure_session_seal_matches_reference_ccm_and_opens_on_peer():
    node_a, node_b = 0x0000000000000001, 0x00000000DEADBEEF
    initiator = SecureSession(EstablishedSession(1, 2, KEYS, True, node_b, 1, None), "b", 0, random.Random(1),
                              local_node_id=node_a)
    responder = SecureSession(EstablishedSession(2, 1, KEYS, False, node_a, 1, None), "a", 0, random.Random(2),
                              local_node_id=node_b)
    header = MessageHeader(session_id=2, message_counter=0x00012345)
    plain = PayloadHeader(exchange_id=9, protocol_id=1, opcode=2, initiator=True, needs_ack=True).encode() + b"\x15\x18"
    wire = initiator.seal(header, plain)
    aad = H("00 0200 00 45230100")
    assert wire[:8] == aad
    # initiator -> responder uses I2R and the sender's (initiator's) node id in the nonce
    assert wire[8:] == _ccm_reference(I2R, H("00 45230100 0100000000000000"), aad, plain)
    assert responder.open(header, wire, 8) == plain
    # the reverse direction uses R2I
    back = responder.seal(header, plain)
    assert back[8:] == _ccm_reference(R2I, H("00 45230100 efbeadde00000000"), aad, plain)
    assert initiator.open(header, back, 8) == plain


def test_open_rejects_tampering_wrong_node_id_and_short_input():
    initiator = SecureSession(EstablishedSession(1, 2, KEYS, True, None, None, None), "b", 0, random.Random(1))
    responder = SecureSession(EstablishedSession(2, 1, KEYS, False, None, None, None), "a", 0, random.Random(2))
    header = MessageHeader(session_id=2, message_counter=77)
    wire = bytearray(initiator.seal(header, b"hello world"))
    assert responder.open(header, bytes(wire), 8) == b"hello world"
    wire[-1] ^= 1
    assert responder.open(header, bytes(wire), 8) is None
    assert responder.open(header, bytes(wire[:20]), 8) is None
    # PASE uses node id 0 in the nonce: a responder expecting a CASE peer node id cannot open it
    case_view = SecureSession(EstablishedSession(2, 1, KEYS, False, 5, 1, None), "a", 0, random.Random(2))
    assert case_view.open(header, initiator.seal(header, b"x"), 8) is None


def test_session_keys_must_be_16_bytes():
    with pytest.raises(ValueError, match="i2r_key is 15 bytes"):
        SecureSession(EstablishedSession(1, 2, SessionKeys(bytes(15), bytes(16), bytes(16)), True, None, None, None),
                      "b", 0, random.Random(1))


# --- counters -------------------------------------------------------------------------------

def test_counter_initial_value_comes_from_injected_rng():
    values = [MessageCounter(random.Random(seed), rollover=True).value for seed in range(50)]
    assert values == [MessageCounter(random.Random(seed), rollover=True).value for seed in range(50)]
    assert all(1 <= v <= COUNTER_INIT_MAX for v in values) and len(set(values)) > 40


def test_global_counter_rolls_over_and_session_counter_is_exhausted():
    glob = MessageCounter(random.Random(0), rollover=True, value=MAX_UINT32)
    assert [glob.next(), glob.next(), glob.next()] == [MAX_UINT32, 0, 1]
    sess = MessageCounter(random.Random(0), rollover=False, value=MAX_UINT32 - 1)
    assert sess.next() == MAX_UINT32 - 1
    with pytest.raises(CounterExhausted):
        sess.next()


# --- duplicate detection (4.6.5) -------------------------------------------------------------

def _accepts(state, counters):
    return [state.check_and_commit(c) for c in counters]


def test_encrypted_unicast_window():
    s = ReceptionState(CounterMode.ENCRYPTED_UNICAST)
    assert s.is_duplicate(0)  # synchronised at 0: counter 0 is never new
    assert _accepts(s, [100, 100, 99, 99, 68, 67, 101, 150]) == [True, False, True, False, True, False, True, True]
    # 150 is max: 118..149 is the window, 117 and below are too old
    assert _accepts(s, [118, 118, 117, 149, 151, 0xFFFFFFFF]) == [True, False, False, True, True, True]
    # no rollover: after a huge counter, small ones are old
    assert _accepts(s, [5]) == [False]


def test_window_bits_track_individual_counters():
    s = ReceptionState(CounterMode.ENCRYPTED_UNICAST)
    assert _accepts(s, [10, 12, 14]) == [True, True, True]
    assert [s.is_duplicate(c) for c in range(9, 15)] == [False, True, False, True, False, True]
    assert _accepts(s, [50]) == [True]  # jump beyond the window clears the bitmap
    # window is 18..49, all unseen; 17 and below (including the seen 14) are too old
    assert [s.is_duplicate(c) for c in (14, 17, 18, 49, 50)] == [True, True, False, False, True]


def test_group_window_trusts_first_and_rolls_over():
    s = ReceptionState(CounterMode.ENCRYPTED_GROUP)
    assert _accepts(s, [0xFFFFFFF0, 0xFFFFFFF0, 3, 0xFFFFFFF0, 0xFFFFFFF5]) == [True, False, True, False, True]
    assert s.max_counter == 3
    assert _accepts(s, [0xFFFFFFC0]) == [False]  # behind the window: duplicate for group
    assert s.max_counter == 3


def test_unencrypted_window_accepts_behind_window_as_reboot():
    s = ReceptionState(CounterMode.UNENCRYPTED)
    assert _accepts(s, [1000, 1000, 990, 990]) == [True, False, True, False]
    assert _accepts(s, [5]) == [True]  # peer restarted: window moves back
    assert s.max_counter == 5 and s.window == 0
    assert _accepts(s, [5, 6]) == [False, True]


def test_session_table_ids_reservation_and_lru_eviction():
    table = SessionTable(random.Random(3), max_secure=2)
    ids = {table.allocate_id() for _ in range(100)}
    assert len(ids) == 100 and 0 not in ids and all(1 <= i <= 0xFFFF for i in ids)
    table.release_id(min(ids))
    a = table.add(EstablishedSession(min(ids), 7, KEYS, False, None, None, None), "x", now_ms=10)
    b = table.add(EstablishedSession(max(ids), 8, KEYS, False, None, None, None), "y", now_ms=20)
    assert table.get(a.local_session_id) is a and len(table) == 2
    a.last_activity_ms = 30  # a used recently, so b is the least recently used
    c = table.add(EstablishedSession(sorted(ids)[1], 9, KEYS, False, None, None, None), "z", now_ms=40)
    assert table.get(b.local_session_id) is None and b.closed and table.evicted == [b]
    assert table.get(c.local_session_id) is c
    with pytest.raises(ValueError, match="already in use"):
        table.add(EstablishedSession(c.local_session_id, 1, KEYS, False, None, None, None), "z", now_ms=50)


def test_eviction_is_reported_by_the_layer():
    layer = MessageLayer(random.Random(4), SessionTable(random.Random(4), max_secure=1))
    first = layer.add_secure_session(EstablishedSession(1, 1, KEYS, False, None, None, None), "a", 0)
    layer.add_secure_session(EstablishedSession(2, 2, KEYS, False, None, None, None), "b", 1)
    events = layer.on_timer(2)
    assert [(type(e).__name__, e.session) for e in events] == [("SessionClosed", first)]
    assert layer.on_timer(3) == []


# --- StatusReport ----------------------------------------------------------------------------------

def test_status_report_vectors():
    close = StatusReport.secure_channel(GeneralCode.SUCCESS, SecureChannelStatus.CLOSE_SESSION)
    assert close.encode() == H("0000 00000000 0300")
    assert StatusReport.decode(H("0000 00000000 0300")).is_close_session
    busy = StatusReport(GeneralCode.BUSY, ProtocolId.SECURE_CHANNEL, SecureChannelStatus.BUSY, struct.pack("<H", 500))
    assert busy.encode() == H("0800 00000000 0400 f401")
    vendor = StatusReport(GeneralCode.FAILURE, 0x0002, 0x0013, b"", vendor_id=0xFFF1)
    assert vendor.encode() == H("0100 0200f1ff 1300")
    assert StatusReport.decode(vendor.encode()) == vendor and not vendor.is_close_session
    with pytest.raises(MessageFormatError, match="at least 8"):
        StatusReport.decode(H("0000 000000"))


def test_opcode_values():
    assert SecureChannelOpcode.StandaloneAck == 0x10 and SecureChannelOpcode.StatusReport == 0x40
    assert SecureChannelOpcode.CASE_Sigma1 == 0x30 and SecureChannelOpcode.PBKDFParamRequest == 0x20
