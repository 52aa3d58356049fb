"""Issue #32 items 3 and 4 (sans-IO, the IM server fed by a real controller message layer):
TimedRequest is range-checked (uint16) and privilege-checked, and what a peer can make the node
hold open between messages (unanswered chunked reads, timed exchanges) is capped per session and
per node, the rest answered RESOURCE_EXHAUSTED at once."""
from __future__ import annotations

from test_node_im_server import Link, light

from clusters.status import Status
from matter_protocol.exchange import MAX_PEER_EXCHANGES_PER_SESSION
from matter_protocol.interaction import AttributePath, ReadRequest, ReportData, StatusResponse, TimedRequest
from twin.node.im.model import MAX_OPEN_PER_NODE, MAX_OPEN_PER_SESSION


def test_a_timed_request_beyond_uint16_is_invalid_action_and_holds_nothing():
    link = Link(light())
    for timeout in (0x10000, 2**32 - 1):
        assert link.request(TimedRequest(timeout)) == [StatusResponse(Status.INVALID_ACTION)]
    assert link.request(TimedRequest(0xFFFF)) == [StatusResponse(Status.SUCCESS)]
    assert len(link.im._timed) == 1
    link.advance(0xFFFF + 60_000)
    assert link.im._timed == {}


class NoEntry:
    """An ACL with no entry for the peer: every path denied, and `admits` (any privilege) false."""

    def __call__(self, kind, access, endpoint, cluster, item):
        return False

    def admits(self, access):
        return False


def test_a_peer_without_any_privilege_gets_no_timed_exchange():
    link = Link(light(), access_check=NoEntry())
    assert link.request(TimedRequest(500)) == [StatusResponse(Status.UNSUPPORTED_ACCESS)]
    assert link.im._timed == {}


def test_thousands_of_timed_requests_hold_a_bounded_number_of_exchanges():
    link = Link(light())
    answers = [link.request(TimedRequest(0xFFFF)) for _ in range(300)]
    assert answers.count([StatusResponse(Status.SUCCESS)]) == MAX_OPEN_PER_SESSION
    # The rest are refused: the peer acks each refusal (closing its exchange before the next
    # request), so only the held ones keep an exchange at the node.
    assert answers.count([StatusResponse(Status.RESOURCE_EXHAUSTED)]) == 300 - MAX_OPEN_PER_SESSION
    assert len(link.im._timed) == MAX_OPEN_PER_SESSION <= MAX_OPEN_PER_NODE
    assert len(link.b.exchanges()) <= MAX_PEER_EXCHANGES_PER_SESSION
    link.advance(0xFFFF + 60_000)   # they expire, and new ones are served again
    assert link.im._timed == {}
    assert link.request(TimedRequest(100)) == [StatusResponse(Status.SUCCESS)]


def test_unanswered_chunked_reads_are_capped():
    link = Link(light())
    link.auto_ack = False   # the peer never answers the first chunk with a StatusResponse
    firsts = [link.request(ReadRequest(attribute_requests=[AttributePath()])) for _ in range(100)]
    held = [m for m in firsts if m and isinstance(m[0], ReportData) and m[0].more_chunked]
    assert len(held) == MAX_OPEN_PER_SESSION and len(link.im._pending) == MAX_OPEN_PER_SESSION
    assert firsts.count([StatusResponse(Status.RESOURCE_EXHAUSTED)]) == 100 - MAX_OPEN_PER_SESSION
    link.advance(60_000)   # abandoned after the response timeout; reads are served again
    assert link.im._pending == {}
    link.auto_ack = True
    assert link.request(ReadRequest(attribute_requests=[AttributePath()]))[-1].more_chunked is False
