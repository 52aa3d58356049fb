"""Invoke (Core spec 8.8): one or more commands, CommandRef, chunked responses."""
from __future__ import annotations

import logging

from chip.clusters.ClusterObjects import ClusterCommand

from clusters.base import AccessContext
from clusters.status import MatterError, Status
from matter_protocol.exchange import Action, Exchange
from matter_protocol.interaction import (
    CommandData,
    CommandPath,
    CommandStatus,
    InvokeRequest,
    InvokeResponse,
    InvokeResponseIB,
    Opcode,
    StatusIB,
)
from matter_protocol.tlv import Raw, Struct
from twin.node.im.model import concrete
from twin.node.im.parts import Part
from twin.node.values import Typed, decode_typed

log = logging.getLogger(__name__)


class Invokes(Part):
    """Part of InteractionModelServer (server.py): the invoke interaction, on its state."""

    def _max_paths_per_invoke(self) -> int:
        basic = self._basic_information()   # the root's server itself: no lookup per Invoke
        try:
            return int(basic.read("MaxPathsPerInvoke")) if basic is not None else 1
        except MatterError:
            return 1

    def _invoke(self, exchange: Exchange, message: InvokeRequest, timed: bool, access: AccessContext,
                now_ms: float) -> list[Action]:
        requests = message.invoke_requests or []
        refs = [r.ref for r in requests]
        # Decoding required each path's cluster and command; a wildcard endpoint (a group
        # command) is refused here, so every target is concrete.
        targets = [concrete(r.path.endpoint, r.path.cluster, r.path.command) if r.path else None for r in requests]
        if (not requests or len(requests) > self._max_paths_per_invoke()
                or any(t is None for t in targets)
                or (len(requests) > 1 and (None in refs or len(set(refs)) != len(refs)))):
            return self._status(exchange, Status.INVALID_ACTION, now_ms)
        responses = [self._invoke_one(r, t, timed, access) for r, t in zip(requests, targets) if t is not None]
        if message.suppress_response:
            return exchange.close(now_ms)
        items = []
        for response in responses:
            item = response.element()
            answer = response.command or response.status
            if len(item) > self._item_budget and answer is not None:   # a response that cannot fit any message
                path = answer.path or CommandPath()
                item = InvokeResponseIB(status=CommandStatus(
                    CommandPath(path.endpoint, path.cluster, path.command), StatusIB(Status.RESOURCE_EXHAUSTED),
                    answer.ref)).element()
            items.append(item)
        batches: list[list[bytes]] = [[]]
        size = 0
        for item in items:
            if batches[-1] and size + len(item) > self._item_budget:
                batches.append([])
                size = 0
            batches[-1].append(item)
            size += len(item)
        last = len(batches) - 1
        chunks = ((Opcode.InvokeResponse, InvokeResponse([Raw(b) for b in batch], more_chunked=i < last).encode(),
                   i < last) for i, batch in enumerate(batches))
        return self._start(exchange, "invoke", chunks, now_ms, expect_last=False)

    def _invoke_one(self, request: CommandData, target: tuple[int, int, int], timed: bool,
                    access: AccessContext) -> InvokeResponseIB:
        endpoint, cluster, command_id = target
        path = CommandPath(endpoint, cluster, command_id)

        def status(code: int, cluster_status: int | None = None) -> InvokeResponseIB:
            return InvokeResponseIB(status=CommandStatus(path, StatusIB(code, cluster_status), request.ref))

        try:
            server = self.device.locate(cluster, endpoint)
            name = server.resolve_command(command_id)
            if not self._allowed("invoke", access, endpoint, cluster, command_id):
                raise MatterError(Status.UNSUPPORTED_ACCESS, f"{server.name}.{name} may not be invoked by this peer")
            cls = server.command_class(name)
            if cls.must_use_timed_invoke and not timed:
                raise MatterError(Status.NEEDS_TIMED_INTERACTION, f"{server.name}.{name} needs a timed invoke")
            fields = Struct() if request.fields is None else request.fields   # no fields: an empty struct
            command = decode_typed(cls, fields, f"{server.name}.{name}", bad=Status.INVALID_COMMAND)
            result = self._as(access, self.device.invoke_on, server, name, command)
        except MatterError as e:
            return status(e.status, e.cluster_status)
        except Exception:
            log.exception("invoke %s failed", path)
            return status(Status.FAILURE)
        if result is None:
            return status(Status.SUCCESS)
        if not isinstance(result, ClusterCommand):
            log.error("%s returned %r; accepted: None or a response command", path, result)
            return status(Status.FAILURE)
        return InvokeResponseIB(command=CommandData(
            CommandPath(endpoint, cluster, result.command_id), Typed(type(result), result), request.ref))
