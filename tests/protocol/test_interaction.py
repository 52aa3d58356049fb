"""TLV codec and IM messages: byte vectors built by hand from the spec's TLV tables, round trips
of every message and IB, strict decoding, fuzzed input, and the `write_tlv` hook."""
from __future__ import annotations

import pytest
from chip import tlv as chip_tlv
from chip.clusters import Objects as C
from chip.clusters.Types import NullValue
from hypothesis import given, settings
from hypothesis import strategies as st

from clusters.status import Status
from matter_protocol.interaction import (
    INTERACTION_MODEL_REVISION,
    MESSAGES,
    AttributeData,
    AttributePath,
    AttributeReport,
    AttributeStatus,
    ClusterPath,
    CommandData,
    CommandPath,
    CommandStatus,
    DataVersionFilter,
    EventData,
    EventFilter,
    EventPath,
    EventReport,
    EventStatus,
    InvokeRequest,
    InvokeResponse,
    InvokeResponseIB,
    Opcode,
    ReadRequest,
    ReportData,
    StatusIB,
    StatusResponse,
    SubscribeRequest,
    SubscribeResponse,
    TimedRequest,
    WriteRequest,
    WriteResponse,
    decode_message,
)
from matter_protocol.tlv import CodecError, Fields, Raw, Struct, TagList, TLVWriter, decode_tlv, encode_tlv, retag
from twin.node.values import encode_value

REV = "24ff0b"  # InteractionModelRevision: context tag 0xFF, uint8 11


def h(text: str) -> bytes:
    return bytes.fromhex(text.replace(" ", ""))


# ---- hand-built vectors (Core spec, Interaction Model Encoding; TLV control bytes) ----------------
VECTORS = [
    # ReadRequestMessage { AttributeRequests[0] = [ AttributePathIB(list){Endpoint 1, Cluster 6, Attribute 0} ],
    #                      FabricFiltered[3] = false }
    (ReadRequest(attribute_requests=[AttributePath(1, 6, 0)]),
     "15 3600 17 240201 240306 240400 18 18 2803" + REV + "18"),
    # StatusResponseMessage { Status[0] = SUCCESS }
    (StatusResponse(Status.SUCCESS), "15 240000" + REV + "18"),
    # SubscribeResponseMessage { SubscriptionId[0] = 0x12345678 (uint32), MaxInterval[2] = 60 }
    (SubscribeResponse(0x12345678, 60), "15 2600 78563412 24023c" + REV + "18"),
    # TimedRequestMessage { Timeout[0] = 500 ms (uint16) }
    (TimedRequest(500), "15 2500 f401" + REV + "18"),
    # InvokeResponseMessage { SuppressResponse[0] = false, InvokeResponses[1] = [ InvokeResponseIB {
    #   Status[1] = CommandStatusIB { CommandPath[0] = [Endpoint 1, Cluster 6, Command 2], Status[1] = {0} } } ] }
    (InvokeResponse([InvokeResponseIB(status=CommandStatus(CommandPath(1, 6, 2), StatusIB(0)))]),
     "15 2800 3601 15 3501 3700 240001 240106 240202 18 3501 240000 18 18 18 18" + REV + "18"),
    # InvokeRequestMessage { SuppressResponse false, TimedRequest false, InvokeRequests[2] = [ CommandDataIB {
    #   CommandPath[0] = [1, 8, 0],
    #   CommandFields[1] = {Level 100, TransitionTime 0, OptionsMask 0, OptionsOverride 0} } ] }
    (InvokeRequest([CommandData(CommandPath(1, 8, 0), Struct({0: chip_tlv.uint(100), 1: chip_tlv.uint(0),
                                                               2: chip_tlv.uint(0), 3: chip_tlv.uint(0)}))]),
     "15 2800 2801 3602 15 3700 240001 240108 240200 18 3501 240064 240100 240200 240300 18 18 18" + REV + "18"),
    # WriteRequestMessage { ..., WriteRequests[2] = [ AttributeDataIB { DataVersion[0] 7, Path[1] [1, 8, 0x11],
    #   Data[2] = null } ] }
    (WriteRequest([AttributeData(AttributePath(1, 8, 0x11), None, 7)]),
     "15 2800 2801 3602 15 240007 3701 240201 240308 240411 18 3402 18 18" + REV + "18"),
    # ReportDataMessage { SubscriptionId 1, AttributeReports[1] = [ AttributeReportIB { AttributeStatus[0] =
    #   { Path [0, 0x28, 0x99], Status { 0x86 } } } ], MoreChunkedMessages[3] = true }
    (ReportData(1, [AttributeReport(attribute_status=AttributeStatus(AttributePath(0, 0x28, 0x99),
                                                                     StatusIB(Status.UNSUPPORTED_ATTRIBUTE)))],
                more_chunked=True),
     "15 240001 3601 15 3500 3700 240200 240328 240499 18 3501 240086 18 18 18 18 2903" + REV + "18"),
    # AttributePathIB with ListIndex[5] = null (append one item)
    (ReportData(attribute_reports=[AttributeReport(attribute_data=AttributeData(
        AttributePath(1, 0x41, 0, list_index=NullValue), Struct({0: "a", 1: "b"}), 3))]),
     "15 3601 15 3501 240003 3701 240201 240341 240400 3405 18 3502 2c0001 61 2c0101 62 18 18 18 18" + REV + "18"),
]


@pytest.mark.parametrize("message, hex_text", VECTORS)
def test_hand_built_vectors(message, hex_text):
    assert message.encode() == h(hex_text)
    assert decode_message(message.opcode, h(hex_text)) == message


def test_every_message_and_ib_round_trips():
    path = AttributePath(2, 0x0101, 5, node=0x1122334455667788, wildcard_flags=3, enable_tag_compression=True)
    event_path = EventPath(1, 0x28, 0, node=9, is_urgent=True)
    messages = [
        ReadRequest([path, AttributePath()], [event_path], [EventFilter(17, node=9)], True,
                    [DataVersionFilter(ClusterPath(1, 6, node=3), 0xFFFFFFFF)]),
        SubscribeRequest(1, 3600, True, [path], [EventPath()], [EventFilter(0)], True,
                         [DataVersionFilter(ClusterPath(0, 0x28), 1)]),
        SubscribeResponse(0xFFFFFFFF, 3600),
        ReportData(5, [AttributeReport(attribute_data=AttributeData(path, [chip_tlv.uint(1), -2, True], 9))],
                   [EventReport(event_data=EventData(event_path, 77, 1, epoch_timestamp=123, data=Struct({0: 1}))),
                    EventReport(event_status=EventStatus(event_path, StatusIB(0xC7)))], True, True),
        WriteRequest([AttributeData(path, "x")], True, True, True),
        WriteResponse([AttributeStatus(path, StatusIB(0x87, 0x02))]),
        InvokeRequest([CommandData(CommandPath(1, 6, 2), None, 4)], True, True),
        InvokeResponse([InvokeResponseIB(command=CommandData(CommandPath(1, 6, 2), Struct({0: b"\x01"}), 4))],
                       True, True),
        TimedRequest(0xFFFF),
        StatusResponse(Status.NEEDS_TIMED_INTERACTION),
    ]
    assert {type(m) for m in messages} == set(MESSAGES.values())
    for message in messages:
        assert decode_message(message.opcode, message.encode()) == message, type(message).__name__


def test_raw_items_splice_into_arrays_and_take_tags():
    item = AttributeReport(attribute_data=AttributeData(AttributePath(1, 6, 0), True, 2))
    by_object = ReportData(3, [item]).encode()
    assert ReportData(3, [Raw(item.element())]).encode() == by_object
    value = encode_value(C.OnOff.Attributes.OnOff.attribute_type.Type, True)
    spliced = AttributeReport(attribute_data=AttributeData(AttributePath(1, 6, 0), Raw(value), 2))
    assert spliced.element() == item.element()
    assert retag(h("0401"), 7) == h("240701")
    with pytest.raises(CodecError):
        retag(h("240701"), 2)


# ---- strict TLV -----------------------------------------------------------------------------------
@pytest.mark.parametrize("hex_text, message", [
    ("", "truncated"),
    ("15 2400", "truncated"),
    ("15 240001", "truncated"),                  # no end of container
    ("15 240001 18 00", "trailing"),
    ("15 240001 240002 18", "duplicate"),
    ("15 0401 18", "anonymous"),
    ("16 240001 18", "tagged"),
    ("0c 02 ff fe", "UTF-8"),
    ("1f", "unknown"),
    ("18", "end-of-container"),
    ("16" * 20 + "18" * 20, "deeper"),
])
def test_malformed_tlv_is_a_codec_error(hex_text, message):
    with pytest.raises(CodecError, match=message):
        decode_tlv(h(hex_text))


def test_tlv_reader_handles_every_element_form():
    value = Struct({0: -1, 1: chip_tlv.uint(2**40), 2: 2.5, 3: chip_tlv.float32(0.5), 4: "é" * 200,
                    5: b"\x00" * 300, 6: None, 7: False, 8: TagList({1: True}), 9: [Struct(), []]})
    data = encode_tlv(value)
    back = decode_tlv(data)
    assert back == value and isinstance(back[1], chip_tlv.uint) and isinstance(back[3], chip_tlv.float32)
    assert isinstance(back[8], TagList) and not isinstance(back[2], chip_tlv.float32)
    # Profile tags (not used by the IM) are read, not rejected.
    assert decode_tlv(h("15 44 0100 01 18")) == Struct({(0, 1): chip_tlv.uint(1)})
    assert decode_tlv(h("15 c4 0000 0100 0500 05 18")) == Struct({(1, 5): chip_tlv.uint(5)})


def test_chip_tlv_reads_what_we_write():
    """chip's own TLV reader (a different implementation) agrees with our encoding."""
    message = ReadRequest([AttributePath(1, 6, 0), AttributePath(endpoint=2)], fabric_filtered=True)
    parsed = chip_tlv.TLVReader(message.encode()).get()["Any"]
    assert [list(p) for p in parsed[0]] == [[(2, 1), (3, 6), (4, 0)], [(2, 2)]] and parsed[3] is True
    assert parsed[0xFF] == INTERACTION_MODEL_REVISION


@pytest.mark.parametrize("cls, payload, missing", [
    (SubscribeRequest, "15 2800 240100 18", "max_interval_ceiling"),
    (InvokeRequest, "15 2800 2801 18", "invoke_requests"),
    (WriteRequest, "15 3602 15 3701 18 18 18 18", "data"),
    (StatusResponse, "15 24ff0b 18", "status"),
    (ReadRequest, "15 3600 15 18 18 18", "not a TLV list"),   # a path sent as a structure
    (ReadRequest, "15 3600 17 2c0201 61 18 18 18", "not an unsigned"),
])
def test_messages_missing_fields_are_codec_errors(cls, payload, missing):
    with pytest.raises(CodecError, match=missing):
        decode_message(cls.opcode, h(payload))


def test_unknown_opcode():
    with pytest.raises(CodecError, match="opcode"):
        decode_message(0x42, StatusResponse().encode())


@settings(max_examples=400, deadline=None)
@given(opcode=st.sampled_from(list(Opcode)), data=st.binary(max_size=80))
def test_fuzzed_payloads_only_ever_raise_codec_errors(opcode, data):
    try:
        decode_message(opcode, data)
    except CodecError:
        pass


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_fuzzed_mutations_of_valid_messages(data):
    message = data.draw(st.sampled_from([m for m, _ in VECTORS]))
    raw = bytearray(message.encode())
    for _ in range(data.draw(st.integers(1, 4))):
        raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
    try:
        decode_message(message.opcode, bytes(raw))
    except CodecError:
        pass


class _Celsius:
    """A value object that knows its own TLV form (the hook the node's typed values use)."""

    def __init__(self, centi: int) -> None:
        self.centi = centi

    def write_tlv(self, writer: TLVWriter, tag: int | None) -> None:
        writer.sint(tag, self.centi)


def test_values_with_a_write_tlv_hook_encode_themselves():
    assert encode_tlv(_Celsius(-2)) == h("00fe")
    assert encode_tlv(Struct({1: _Celsius(5)})) == h("15 2001 05 18")
    assert encode_tlv([_Celsius(1), Raw(h("0401"))]) == h("16 0001 0401 18")


def test_ordered_decoding_keeps_wire_order_and_repeated_tags():
    data = h("15 2416 01 2411 02 2416 03 18")
    with pytest.raises(CodecError, match="duplicate tag 22"):
        decode_tlv(data)
    fields = decode_tlv(data, ordered=True)
    assert isinstance(fields, Fields) and fields.kind == "struct"
    assert list(fields) == [(0x16, 1), (0x11, 2), (0x16, 3)]
