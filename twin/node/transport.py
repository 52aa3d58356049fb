"""Thin asyncio UDP shell around a sans-IO message layer (`DatagramEndpoint`): one socket (port) per node.

The socket is IPv6 dual-stack where the host allows it (IPv4 peers then appear as ::ffff:a.b.c.d),
else plain IPv4. Wall-clock time enters here, as the event loop's monotonic clock in ms, and only
here. Every non-Send action (Deliver, Dropped, ExchangeFailed, SessionClosed) goes to `on_event`.
A `link` (twin/node/faults.py) may drop or delay datagrams either way: the home's faults.
"""
from __future__ import annotations

import asyncio
import ipaddress
import logging
import socket
from collections.abc import Callable
from typing import Any, Protocol

from matter_protocol.exchange import Action, Exchange, MessageLayer, Send
from matter_protocol.message import MessageFormatError, MessageHeader
from twin.node.defaults import MATTER_PORT

log = logging.getLogger(__name__)


def _make_socket(host: str, port: int) -> socket.socket:
    try:
        family = socket.AF_INET6 if ipaddress.ip_address(host).version == 6 else socket.AF_INET
    except ValueError:
        raise ValueError(f"host {host!r}; accepted: an IPv4 or IPv6 address literal such as "
                         "'::', '::1', '127.0.0.1'") from None
    if family == socket.AF_INET6 and not socket.has_ipv6:
        family, host = socket.AF_INET, ("0.0.0.0" if host == "::" else host)
    sock = socket.socket(family, socket.SOCK_DGRAM)
    try:
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        sock.bind((host, port))
    except OSError as err:
        sock.close()
        if family == socket.AF_INET6 and host == "::":
            return _make_socket("0.0.0.0", port)  # no usable IPv6 here: fall back to IPv4
        raise OSError(err.errno, f"UDP port {port}: {err.strerror}") from None   # say which port
    sock.setblocking(False)
    return sock


class DatagramEndpoint(Protocol):
    """What the UDP shell drives: a sans-IO message layer (`MessageLayer`, or a node's core
    that wraps one). It takes datagrams and the time, and returns actions and its next timer."""

    def receive(self, datagram: bytes, peer_address: Any, now_ms: float,
                decoded: tuple[MessageHeader, int] | None = None) -> list[Action]: ...

    def on_timer(self, now_ms: float) -> list[Action]: ...

    def next_timer(self) -> float | None: ...


class TimerSlot:
    """When the shell's one timer should fire, given the layer's next deadline (sans-IO).

    Under a flood the socket is readable at every turn of the event loop, and every datagram
    re-asks the layer for its next deadline. Cancelling and re-arming the loop timer each time
    would push a due deadline behind the next datagram for as long as the flood lasts, so:

    - `arm(due)` says whether the loop timer must be (re)armed: only for a deadline earlier
      than the one already armed. A later or vanished deadline keeps the armed one (an early
      wake-up is harmless: `on_timer` acts only on what is due);
    - `due(now)` tells the shell to run the layer's timers before it handles a datagram, so
      expiries and retransmissions happen on time whatever the inbound load.
    """

    def __init__(self) -> None:
        self.armed_ms: float | None = None

    def arm(self, deadline_ms: float | None) -> bool:
        if deadline_ms is None or (self.armed_ms is not None and self.armed_ms <= deadline_ms):
            return False
        self.armed_ms = deadline_ms
        return True

    def due(self, now_ms: float) -> bool:
        return self.armed_ms is not None and self.armed_ms <= now_ms

    def fired(self) -> None:
        self.armed_ms = None


class UdpTransport(asyncio.DatagramProtocol):
    def __init__(self, layer: DatagramEndpoint, on_event: Callable[[Action], None]):
        self.layer = layer
        self.on_event = on_event
        self._transport: asyncio.DatagramTransport | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._slot = TimerSlot()
        self._loop: asyncio.AbstractEventLoop | None = None
        #: Faults on this link: `verdict(data, outbound)` is None (drop) or a delay in ms.
        self.link: Any = None

    @classmethod
    async def open(cls, layer: DatagramEndpoint, on_event: Callable[[Action], None], host: str = "::",
                   port: int = MATTER_PORT) -> UdpTransport:
        loop = asyncio.get_running_loop()
        sock = _make_socket(host, port)
        _, protocol = await loop.create_datagram_endpoint(lambda: cls(layer, on_event), sock=sock)
        return protocol

    @property
    def address(self) -> tuple[Any, ...]:
        assert self._transport is not None, "not connected yet"
        sockname: tuple[Any, ...] = self._transport.get_extra_info("sockname")
        return sockname

    @property
    def port(self) -> int:
        return int(self.address[1])

    def now_ms(self) -> float:
        assert self._loop is not None, "not connected yet"
        return self._loop.time() * 1000.0

    # -- asyncio callbacks ----------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport  # type: ignore[assignment]
        self._loop = asyncio.get_running_loop()

    def datagram_received(self, data: bytes, addr: Any) -> None:
        # The header is decoded once, here: the link's faults and the message layer both use it.
        try:
            decoded: tuple[MessageHeader, int] | None = MessageHeader.decode(data)
        except (MessageFormatError, ValueError, IndexError):
            decoded = None   # the layer decodes it again and drops it, saying why
        if self.link is not None:
            delay = self.link.verdict(data, outbound=False, header=decoded)
            if delay is None:
                return
            if delay > 0 and self._loop is not None:
                self._loop.call_later(delay / 1000.0, self._receive_late, data, addr, decoded)
                return
        self._receive(data, addr, decoded)

    def _receive_late(self, data: bytes, addr: Any, decoded: tuple[MessageHeader, int] | None) -> None:
        if self._transport is not None and not self._transport.is_closing():   # not closed meanwhile
            self._receive(data, addr, decoded)

    def _receive(self, data: bytes, addr: Any, decoded: tuple[MessageHeader, int] | None = None) -> None:
        now = self.now_ms()
        if self._slot.due(now):
            self._on_timer()   # timers first: a flood must not postpone what is due
        self._run(lambda: self.layer.receive(data, addr, now, decoded))

    def error_received(self, exc: Exception) -> None:
        log.debug("UDP error: %r", exc)

    def connection_lost(self, exc: Exception | None) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._slot.fired()

    # -- driving the layer ----------------------------------------------------------------------
    def send(self, exchange: Exchange, opcode: int, payload: bytes, reliable: bool = True) -> None:
        """Originate a message (a controller's side): only a bare `MessageLayer` opens exchanges."""
        layer = self.layer
        if not isinstance(layer, MessageLayer):
            raise TypeError(f"sending needs a MessageLayer, this transport drives a {type(layer).__name__}")
        self._run(lambda: layer.send(exchange, opcode, payload, self.now_ms(), reliable=reliable), raise_=True)

    def execute(self, actions: list[Action]) -> None:
        """Carry out actions the caller got from the layer directly (e.g. from close_session)."""
        for action in actions:
            if isinstance(action, Send):
                self._send_datagram(action)
            else:
                try:
                    self.on_event(action)
                except Exception:
                    log.exception("event handler failed on %r", action)
        self._arm_timer()

    def _send_datagram(self, send: Send) -> None:
        if self.link is not None:
            # The layer hands over the headers it sealed the datagram with: no decoding here.
            header = (send.header, 0) if send.header is not None else None   # length unused: payload_header given
            delay = self.link.verdict(send.data, outbound=True, header=header, payload_header=send.payload_header)
            if delay is None:
                return
            if delay > 0 and self._loop is not None:
                self._loop.call_later(delay / 1000.0, self._send_datagram_now, send.data, send.address)
                return
        self._send_datagram_now(send.data, send.address)

    def _send_datagram_now(self, data: bytes, address: Any) -> None:
        if self._transport is not None:
            self._transport.sendto(data, address)

    def close(self) -> None:
        if self._transport is not None:
            self._transport.close()

    def _run(self, step: Callable[[], list[Action]], raise_: bool = False) -> None:
        try:
            actions = step()
        except Exception:
            if raise_:
                raise
            # Bad input never gets here by design; a bug must not kill the node's socket.
            log.exception("message layer failed")
            return
        self.execute(actions)

    def _arm_timer(self) -> None:
        """(Re)arm the loop timer only for an earlier deadline (see `TimerSlot`)."""
        if self._loop is None or self._transport is None:
            return
        if self._slot.arm(self.layer.next_timer()) and self._slot.armed_ms is not None:
            if self._timer is not None:
                self._timer.cancel()
            self._timer = self._loop.call_at(self._slot.armed_ms / 1000.0, self._on_timer)

    def _on_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()   # when run early, from datagram_received
            self._timer = None
        self._slot.fired()
        self._run(lambda: self.layer.on_timer(self.now_ms()))
