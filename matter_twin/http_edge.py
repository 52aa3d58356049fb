"""The HTTP edge: what keeps clients from stalling the Matter nodes that share the event loop.

Issue #32 items 5 and 6: a 64 MB body read whole and scanned on the loop stalled every node's
acks for seconds; idle connections (no read timeout, no limit) used up the descriptors, timed out
every call and wrote a traceback per failed accept. Here, for every server the app runs:

- request bodies are read with a size limit (413 at once when Content-Length says more, and as
  soon as the bytes do), a read timeout (408), and a client that goes away is no traceback;
- JSON is parsed off the loop, through `twin.schema.load_text` (depth, size, aliases);
- tool calls run one at a time (`one_at_a_time`), so one worker thread at most competes with the
  loop for the home's lock;
- the connection is guarded (`GuardedH11Protocol`): at most MAX_CONNECTIONS open (beyond, a new one
  is closed at once, before it holds a descriptor for long; at most BACKLOG are accepted per turn
  of the loop), a request head must arrive within HEAD_TIMEOUT_S, idle keep-alive connections
  close after KEEP_ALIVE_S;
- what the server and asyncio log per bad request or failed accept is rate-limited.
"""
from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any

import uvicorn
from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect, Request
from uvicorn.protocols.http.h11_impl import H11Protocol

from twin.schema import UserFileError, load_text

__all__ = ["BadBody", "read_json", "server_config", "run_server", "GuardedH11Protocol",
           "MAX_BODY_BYTES", "MAX_CONNECTIONS", "HEAD_TIMEOUT_S", "BODY_TIMEOUT_S", "KEEP_ALIVE_S"]

#: The largest request body accepted (a home file of a thousand devices is some hundred kB).
MAX_BODY_BYTES = 4 * 1024 * 1024
#: HTTP connections open at once; the API's clients are a few agents, a page and scripts.
MAX_CONNECTIONS = 128
#: The listen backlog, which is also how many connections asyncio accepts in one turn of the loop
#: before the surplus ones are closed: uvicorn's 2,048 let a burst of 1,100 connections be
#: accepted in one turn (a stall of most of a second, and "Too many open files" at the common
#: limit of 1,024 descriptors).
BACKLOG = 64
#: From the connection (or the end of the last response) to a complete request head.
HEAD_TIMEOUT_S = 10.0
#: To receive a whole request body.
BODY_TIMEOUT_S = 30.0
#: An idle keep-alive connection is closed after this long.
KEEP_ALIVE_S = 5


class BadBody(ValueError):
    """A request body refused: `status` is the HTTP status to answer, str() says why."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


async def read_json(request: Request) -> Any:
    """The request's JSON body ({} when empty), read within the limits above and parsed in a
    worker thread; BadBody (400, 408 or 413) when it is refused."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise BadBody(413, f"the request body is {int(declared)} bytes; accepted: at most {MAX_BODY_BYTES}")
    chunks: list[bytes] = []
    size = 0
    try:
        async with asyncio.timeout(BODY_TIMEOUT_S):
            async for chunk in request.stream():
                size += len(chunk)
                if size > MAX_BODY_BYTES:
                    raise BadBody(413, f"the request body is over {MAX_BODY_BYTES} bytes; "
                                       f"accepted: at most {MAX_BODY_BYTES}")
                chunks.append(chunk)
    except TimeoutError:
        raise BadBody(408, f"the request body did not arrive within {BODY_TIMEOUT_S:g} s") from None
    except ClientDisconnect:
        raise BadBody(400, "the client went away before its request body arrived") from None
    raw = b"".join(chunks)
    if not raw.strip():
        return {}
    try:
        return await run_in_threadpool(load_text, raw, "request body", True)
    except UserFileError as err:
        raise BadBody(400, f"request body is not JSON or not accepted: {err.problem}"
                           + (f" ({err.path})" if err.path not in ("", "(file)") else "")) from None


def one_at_a_time() -> asyncio.Semaphore:
    """Tool calls take this before their worker thread takes the home's lock."""
    return asyncio.Semaphore(1)


# --- the connection -----------------------------------------------------------------------------

class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a connection limit and a request-head timeout."""

    _head_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if len(self.connections) > MAX_CONNECTIONS:
            edge_log.warning("connections", "HTTP: %d connections open, the most accepted; new ones are closed "
                             "until some end", len(self.connections) - 1)
            transport.abort()
            return
        self._arm_head_timer()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self._waiting_for_head():
            self._arm_head_timer()
        else:
            self._cancel_head_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_head_timer()
        super().connection_lost(exc)

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._cancel_head_timer()   # the keep-alive timer takes over until the next request starts

    def _waiting_for_head(self) -> bool:
        return self.cycle is None or self.cycle.response_complete

    def _arm_head_timer(self) -> None:
        if self._head_timer is None and not self.transport.is_closing():
            self._head_timer = self.loop.call_later(HEAD_TIMEOUT_S, self._head_timeout)

    def _cancel_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_timeout(self) -> None:
        self._head_timer = None
        if self._waiting_for_head() and not self.transport.is_closing():
            edge_log.warning("head timeout", "HTTP: a connection sent no complete request within %g s: closed",
                             HEAD_TIMEOUT_S)
            self.transport.abort()


class CloseOnRefusal:
    """ASGI wrapper: a 408 or 413 answer ends the connection (`Connection: close`), so a client
    refused mid-upload cannot keep streaming the rest of its body through the loop."""

    def __init__(self, app: Any):
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)

        async def refusing_send(message: Any) -> None:
            if message["type"] == "http.response.start" and message["status"] in (408, 413):
                message = {**message, "headers": [*message.get("headers", []), (b"connection", b"close")]}
            await send(message)
        await self.app(scope, receive, refusing_send)


# --- logging -------------------------------------------------------------------------------------

class _EdgeLog:
    """Rate-limited lines of the edge (wall clock: this is IO code, not the simulation)."""

    def __init__(self) -> None:
        from twin.ratelog import RateLimitedLog
        self.log = RateLimitedLog(logging.getLogger("matter_twin.http"))

    def warning(self, kind: str, message: str, *args: Any) -> None:
        self.log.warning(kind, time.monotonic() * 1000, message, *args)


edge_log = _EdgeLog()


class RateLimitFilter(logging.Filter):
    """Lets through the first record of each message template, then one per interval: for loggers
    that write a line per bad request or failed accept (uvicorn.error, asyncio)."""

    def __init__(self, interval_s: float = 10.0):
        super().__init__()
        self.interval_s = interval_s
        self._last: dict[str, float] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING:
            return True
        now = time.monotonic()
        key = str(record.msg)[:200]
        if now - self._last.get(key, -self.interval_s) < self.interval_s:
            return False
        if len(self._last) > 1000:
            self._last.clear()
        self._last[key] = now
        error = record.exc_info[1] if record.exc_info else None
        if isinstance(error, OSError):   # a failed accept: what clients caused, not a bug to trace
            record.msg = f"{record.getMessage()}: {error}"
            record.args, record.exc_info, record.exc_text = None, None, None
        return True


def quiet_floods() -> None:
    """Install the rate limit on the loggers a flood of clients writes to (once)."""
    for name in ("uvicorn.error", "asyncio"):
        logger = logging.getLogger(name)
        if not any(isinstance(f, RateLimitFilter) for f in logger.filters):
            logger.addFilter(RateLimitFilter())


# --- servers -----------------------------------------------------------------------------------

def server_config(app: Any, host: str, port: int, **options: Any) -> uvicorn.Config:
    """The uvicorn settings every server of the app uses (`options` are uvicorn.Config's)."""
    quiet_floods()
    options.setdefault("log_level", "warning")
    return uvicorn.Config(CloseOnRefusal(app), host=host, port=port, http=GuardedH11Protocol,
                          timeout_keep_alive=KEEP_ALIVE_S, backlog=BACKLOG,
                          h11_max_incomplete_event_size=16 * 1024, **options)


def run_server(app: Any, host: str, port: int, **options: Any) -> None:
    """uvicorn.run with `server_config` (blocks until Ctrl-C)."""
    server = uvicorn.Server(server_config(app, host, port, **options))
    with contextlib.suppress(KeyboardInterrupt):
        server.run()
