"""`Dut` in process: one device of a home (or the home's bridge) behind our Interaction Model server.

Every call is a real IM message: a ReadRequest / WriteRequest / InvokeRequest (after a
TimedRequest when asked) is encoded, carried over two in-memory MessageLayers on a CASE-like
session (tests/node/test_node_im_server.py's `Link`), and the node's answer is decoded, so the
test cases see the encoding, status codes and constraints a controller would see. `wait()`
advances the home's virtual clock (and the link's timers with it).
"""
from __future__ import annotations

from typing import Any

from chip.clusters import Objects as C
from chip.clusters.ClusterObjects import ALL_CLUSTERS, ALL_GENERATED_COMMANDS
from chip.clusters.Types import NullValue
from dut import AttributeReport, DutEvent, DutStatusError, event_class
from test_node_im_server import Link

from matter_protocol.interaction import (
    AttributeData,
    AttributePath,
    CommandData,
    CommandPath,
    EventFilter,
    EventPath,
    InvokeRequest,
    InvokeResponse,
    ReadRequest,
    ReportData,
    StatusResponse,
    SubscribeRequest,
    SubscribeResponse,
    TimedRequest,
    WriteRequest,
    WriteResponse,
)
from twin.node.values import Typed, decode_typed

SUCCESS = 0


class InProcessDut:
    """One device (`device` is a clusters.device.Device, or a bridge) of `home`, spoken to over IM."""

    def __init__(self, home: Any, device: Any, name: str, device_type: str) -> None:
        self.home = home
        self.device = device
        self.name = name
        self.device_type = device_type
        self.link = Link(device)

    def __repr__(self) -> str:
        return f"InProcessDut({self.name!r}, {self.device_type!r})"

    # ---- reads ----------------------------------------------------------------------------
    def _read_raw(self, path: AttributePath) -> dict[int, Any]:
        """{attribute id: generic value or DutStatusError} for a read of `path` (chunks joined)."""
        messages = self.link.request(ReadRequest(attribute_requests=[path], fabric_filtered=True))
        if not messages or not all(isinstance(m, ReportData) for m in messages):
            raise DutStatusError(_status_of(messages), f"read {path}")
        got: dict[int, Any] = {}
        for message in messages:
            for report in message.attribute_reports or []:
                if report.attribute_status is not None:
                    status = report.attribute_status
                    got[status.path.attribute] = DutStatusError(status.status.status, f"read {status.path}")
                    continue
                data = report.attribute_data
                attribute = data.path.attribute
                if data.path.list_index is NullValue:     # a list item appended across chunks
                    got[attribute].append(data.data)
                else:
                    got[attribute] = data.data
        return got

    def read(self, endpoint: int, attribute: Any) -> Any:
        got = self._read_raw(AttributePath(endpoint, attribute.cluster_id, attribute.attribute_id))
        value = got.get(attribute.attribute_id)
        if isinstance(value, DutStatusError):
            raise value
        if attribute.attribute_id not in got:
            raise DutStatusError(0x01, f"read {attribute.__qualname__}: no report")   # FAILURE
        return decode_typed(attribute.attribute_type.Type, value, attribute.__qualname__)

    def read_cluster(self, endpoint: int, cluster: Any) -> dict[str, Any]:
        classes = _attribute_classes(cluster)
        out: dict[str, Any] = {}
        for attribute_id, value in self._read_raw(AttributePath(endpoint, cluster.id)).items():
            if isinstance(value, DutStatusError):
                raise value
            attribute = classes.get(attribute_id)
            if attribute is None:
                out[f"0x{attribute_id:04X}"] = value
            else:
                out[attribute.__name__] = decode_typed(attribute.attribute_type.Type, value, attribute.__name__)
        return out

    def endpoints(self) -> list[int]:
        return [0, *self.read(0, C.Descriptor.Attributes.PartsList)]

    # ---- events and subscriptions ---------------------------------------------------------
    def read_events(self, endpoint: int, event: Any, event_min: int | None = None,
                    fabric_filtered: bool = True) -> list[DutEvent]:
        filters = None if event_min is None else [EventFilter(event_min=event_min)]
        request = ReadRequest(event_requests=[EventPath(endpoint, event.cluster_id, event.event_id)],
                              event_filters=filters, fabric_filtered=fabric_filtered)
        messages = self.link.request(request)
        if not messages or not all(isinstance(m, ReportData) for m in messages):
            raise DutStatusError(_status_of(messages), f"read events {event.__qualname__}")
        return [item for m in messages for item in _decoded(m) if isinstance(item, DutEvent)]

    def subscribe(self, paths: list[tuple[int, Any]], min_interval: int, max_interval: int,
                  event_min: int | None = None) -> InProcessSubscription:
        attributes = [AttributePath(e, p.cluster_id, p.attribute_id) for e, p in paths if hasattr(p, "attribute_id")]
        events = [EventPath(e, p.cluster_id, p.event_id) for e, p in paths if hasattr(p, "event_id")]
        request = SubscribeRequest(min_interval, max_interval, keep_subscriptions=True,
                                   attribute_requests=attributes or None, event_requests=events or None,
                                   event_filters=None if event_min is None else [EventFilter(event_min=event_min)],
                                   fabric_filtered=True)
        start = len(self.link.inbox)
        messages = self.link.request(request)
        if not messages or not isinstance(messages[-1], SubscribeResponse):
            raise DutStatusError(_status_of(messages), "subscribe")
        return InProcessSubscription(self, messages[-1].subscription_id, messages[-1].max_interval, start)

    # ---- writes and invokes ---------------------------------------------------------------
    def _timed(self, timed_ms: int | None) -> Any:
        """The exchange to send the action on: a new one, or the one a TimedRequest opened."""
        if timed_ms is None:
            return None
        answer = self.link.request(TimedRequest(timed_ms))
        if answer != [StatusResponse(SUCCESS)]:
            raise DutStatusError(_status_of(answer), "TimedRequest")
        return self.link.exchange

    def write(self, endpoint: int, attribute: Any, value: Any, timed_ms: int | None = None) -> None:
        path = AttributePath(endpoint, attribute.cluster_id, attribute.attribute_id)
        exchange = self._timed(timed_ms)
        data = AttributeData(path, Typed(attribute.attribute_type.Type, value))
        messages = self.link.request(WriteRequest([data], timed_request=timed_ms is not None), exchange)
        what = f"write {attribute.__qualname__}"
        if len(messages) != 1 or not isinstance(messages[0], WriteResponse):
            raise DutStatusError(_status_of(messages), what)
        (result,) = messages[0].write_responses
        if result.status.status != SUCCESS:
            raise DutStatusError(result.status.status, what)

    def invoke(self, endpoint: int, command: Any, timed_ms: int | None = None) -> Any:
        path = CommandPath(endpoint, command.cluster_id, command.command_id)
        exchange = self._timed(timed_ms)
        request = CommandData(path, Typed(type(command), command))
        messages = self.link.request(InvokeRequest([request], timed_request=timed_ms is not None), exchange)
        what = f"invoke {type(command).__qualname__}"
        if len(messages) != 1 or not isinstance(messages[0], InvokeResponse):
            raise DutStatusError(_status_of(messages), what)
        (ib,) = messages[0].invoke_responses
        if ib.status is not None:
            if ib.status.status.status != SUCCESS:
                raise DutStatusError(ib.status.status.status, what)
            return None
        response = _command_class(command.cluster_id, ib.command.path.command)
        return decode_typed(response, ib.command.fields, response.__qualname__)

    # ---- time -----------------------------------------------------------------------------
    def wait(self, seconds: float) -> None:
        self.home.advance(seconds)
        self.link.advance(seconds * 1000)

    def hand(self, action: str, **args: Any) -> Any:
        return self.home.hand(self.name, action, **args)

    def presence(self, person: str, here: bool) -> None:
        self.home.set_presence(person, self.home.room_of(self.name) if here else None)


class InProcessSubscription:
    """A subscription of an InProcessDut: its reports are the link's inbox messages carrying its id."""

    def __init__(self, dut: InProcessDut, subscription_id: int, max_interval: int, seen: int) -> None:
        self.dut = dut
        self.id = subscription_id
        self.max_interval = max_interval
        self.seen = seen   # inbox messages before this index are polled already

    def poll(self, timeout: float) -> list[AttributeReport | DutEvent]:
        waited = 0.0
        while True:
            inbox = self.dut.link.inbox
            got = [item for _, m in inbox[self.seen:]
                   if isinstance(m, ReportData) and m.subscription_id == self.id for item in _decoded(m)]
            self.seen = len(inbox)
            if got or waited >= timeout:
                return got
            step = min(1.0, timeout - waited)   # one virtual second at a time, so the first report ends the wait
            self.dut.wait(step)
            waited += step

    def close(self) -> None:
        # What a controller that forgets a subscription causes: the node drops it.
        self.dut.link.im.subscriptions.pop(self.id, None)


def _decoded(report: ReportData) -> list[AttributeReport | DutEvent]:
    """A ReportData's attribute values and events, decoded with the Objects classes."""
    out: list[AttributeReport | DutEvent] = []
    for a in report.attribute_reports or []:
        if a.attribute_data is None:
            continue
        path = a.attribute_data.path
        attribute = _attribute_classes(ALL_CLUSTERS[path.cluster]).get(path.attribute)
        if attribute is not None and path.list_index is not NullValue:
            value = decode_typed(attribute.attribute_type.Type, a.attribute_data.data, attribute.__qualname__)
            out.append(AttributeReport(path.endpoint, attribute, value))
    for e in report.event_reports or []:
        if e.event_status is not None:
            raise DutStatusError(e.event_status.status.status, f"event {e.event_status.path}")
        data = e.event_data
        event = event_class(data.path.cluster, data.path.event)
        out.append(DutEvent(data.path.endpoint, event, data.event_number, data.priority,
                            decode_typed(event, data.data, event.__qualname__)))
    return out


def _status_of(messages: list[Any]) -> int:
    """The status of an interaction the node refused as a whole (StatusResponse), else FAILURE."""
    if len(messages) == 1 and isinstance(messages[0], StatusResponse):
        return int(messages[0].status)
    return 0x01


def _attribute_classes(cluster: Any) -> dict[int, Any]:
    return {a.attribute_id: a for a in vars(cluster.Attributes).values()
            if isinstance(a, type) and hasattr(a, "attribute_id")}


def _command_class(cluster_id: int, command_id: int) -> Any:
    try:
        return ALL_GENERATED_COMMANDS[cluster_id][command_id]
    except KeyError:
        raise DutStatusError(0x01, f"unknown response command 0x{cluster_id:04X}/0x{command_id:02X}") from None
