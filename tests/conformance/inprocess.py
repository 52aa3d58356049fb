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
from chip.clusters.ClusterObjects import ALL_GENERATED_COMMANDS
from chip.clusters.Types import NullValue
from dut import DutStatusError
from test_node_im_server import Link

from twin.node.values import Typed, decode_typed
from twin.protocol.interaction import (
    AttributeData,
    AttributePath,
    CommandData,
    CommandPath,
    InvokeRequest,
    InvokeResponse,
    ReadRequest,
    ReportData,
    StatusResponse,
    TimedRequest,
    WriteRequest,
    WriteResponse,
)

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
