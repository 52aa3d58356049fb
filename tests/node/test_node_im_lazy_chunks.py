"""Reads and subscriptions encode lazily, one chunk per StatusResponse (issue #12 item 4).

A ReadRequest of many full wildcards used to be expanded and encoded whole inside one
`receive()` (seconds on the event loop every node of the process shares), and all its chunks
queued until acknowledged. Now the first ReportData is encoded when the request comes in and
each next one when the client's StatusResponse to the previous one does: at most one chunk
(plus the one item that did not fit it) is encoded ahead, and the chunks together carry
exactly what one unbounded message would.
"""
from __future__ import annotations

from chip.clusters import Objects as C
from test_node_events import dishwasher, events
from test_node_im_server import Link, reports

from clusters.devices import create_device
from clusters.status import Status
from matter_protocol.interaction import (
    AttributePath,
    EventPath,
    Opcode,
    ReadRequest,
    ReportData,
    StatusResponse,
    SubscribeRequest,
    SubscribeResponse,
)
from twin.node import im as im_module

WILDCARDS = [AttributePath()] * im_module.MAX_PATHS_PER_REQUEST   # the most one request may carry


def counting_items(link: Link) -> list[int]:
    """Count the attributes the node encodes (each `_items` call encodes one)."""
    calls = [0]
    encode = link.im._items

    def counted(*args, **kwargs):
        calls[0] += 1
        return encode(*args, **kwargs)
    link.im._items = counted
    return calls


def ack(link: Link, exchange) -> list:
    """The controller answers the last chunk with SUCCESS; what the node sent back."""
    start = len(link.inbox)
    link._pump(link.a.send(exchange, Opcode.StatusResponse, StatusResponse(Status.SUCCESS).encode(), link.now))
    return [m for _, m in link.inbox[start:]]


def paths_of(messages) -> list[tuple[int, int, int]]:
    """The (endpoint, cluster, attribute) of every AttributeDataIB, in arrival order."""
    return [(r.attribute_data.path.endpoint, r.attribute_data.path.cluster, r.attribute_data.path.attribute)
            for r in reports(messages) if r.attribute_data is not None]


def heat_pump():
    return create_device("hp", "heat_pump")


def test_a_read_of_many_wildcards_encodes_one_chunk_per_status_response():
    link = Link(heat_pump())
    encoded = counting_items(link)
    link.auto_ack = False
    (first,) = link.request(ReadRequest(attribute_requests=WILDCARDS))
    assert isinstance(first, ReportData) and first.more_chunked
    # What the first message carries, plus the one attribute that did not fit it: nothing more.
    assert encoded[0] == len(first.attribute_reports) + 1
    exchange = link.inbox[-1][0]
    (pending,) = link.im._pending.values()
    assert pending.kind == "read" and pending.more
    received = [first]
    while received[-1].more_chunked:
        before = encoded[0]
        (chunk,) = ack(link, exchange)
        assert isinstance(chunk, ReportData)
        # Each StatusResponse encodes about one message's worth, never the rest of the read.
        assert encoded[0] - before <= len(chunk.attribute_reports)
        received.append(chunk)
    assert received[-1].suppress_response and link.im._pending == {}
    assert len(received) > 50    # the whole node, 32 times over

    # Together the chunks carry exactly the items of the whole read built at once (eagerly, on a
    # twin device of its own).
    other = Link(heat_pump())
    eager = list(other.im._read_items(WILDCARDS, [], False, other.im._access(other.sb)))
    assert [r.element() for r in reports(received)] == eager


def test_a_huge_read_leaves_the_node_free_for_other_interactions():
    """While a read waits for its client's next StatusResponse, the node holds no encoded
    backlog: another client's read on the same node is answered at once and in full."""
    device = heat_pump()
    link = Link(device)
    link.auto_ack = False
    (first,) = link.request(ReadRequest(attribute_requests=WILDCARDS))
    assert first.more_chunked and len(link.im._pending) == 1
    link.auto_ack = True
    (other,) = link.request(ReadRequest(attribute_requests=[AttributePath(0, C.BasicInformation.id, 0)]))
    assert isinstance(other, ReportData) and other.suppress_response and len(other.attribute_reports) == 1
    assert len(link.im._pending) == 1   # the big read is still where it was, waiting


def test_subscription_priming_is_lazy_and_ends_with_subscribe_response():
    link = Link(heat_pump())
    encoded = counting_items(link)
    link.auto_ack = False
    (first,) = link.request(SubscribeRequest(1, 60, attribute_requests=WILDCARDS[:4]))
    assert isinstance(first, ReportData) and first.more_chunked and first.subscription_id is not None
    assert encoded[0] == len(first.attribute_reports) + 1
    exchange = link.inbox[-1][0]
    received = [first]
    while True:
        (answer,) = ack(link, exchange)
        if isinstance(answer, SubscribeResponse):
            break
        assert isinstance(answer, ReportData) and answer.subscription_id == first.subscription_id
        received.append(answer)
    assert not received[-1].more_chunked and answer.subscription_id == first.subscription_id
    other = Link(heat_pump())
    eager = list(other.im._read_items(WILDCARDS[:4], [], False, other.im._access(other.sb)))
    assert [r.element() for r in reports(received)] == eager


def test_what_changes_during_a_chunked_priming_is_reported_once_after_it():
    """An event logged or an attribute changed while the priming is still being sent is not
    lost (it comes in the first report after it) and an event is not sent twice."""
    home, device = dishwasher()
    link = Link(device)
    link.auto_ack = False
    (first,) = link.request(SubscribeRequest(1, 60, attribute_requests=WILDCARDS[:8],
                                             event_requests=[EventPath()]))
    assert first.more_chunked
    exchange = link.inbox[-1][0]
    device.invoke("OperationalState", "Start")   # an OperationStart... and OperationalState changes
    device.invoke("OperationalState", "Stop")    # OperationCompletion
    priming = [first]
    while not isinstance(priming[-1], SubscribeResponse):
        (answer,) = ack(link, exchange)
        priming.append(answer)
    primed = [e[0] for e in events(priming)]
    assert primed == [0]                          # StartUp, logged before the request: nothing newer
    link.auto_ack = True
    later = link.advance(2_000)
    reported = [e[0] for e in events(later)]
    assert reported and reported[0] == 1 and len(reported) == len(set(reported))
    state = (1, C.OperationalState.id, C.OperationalState.Attributes.OperationalState.attribute_id)
    assert state in paths_of(later)
    assert events(link.advance(120_000)) == []     # each event once
