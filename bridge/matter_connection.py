"""One python-matter-server: its client on a private event loop, and its errors as ToolErrors.

The sync `Backend` methods wait on the loop's futures with a timeout, so a Matter backend
fits the synchronous tool API. A Matter status from a node becomes a ToolError with its spec
name; an unreachable server or a lost connection is UNAVAILABLE; a node that does not answer
in time is TIMEOUT.
"""
from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import Callable
from typing import Any

from bridge.backend import UNAVAILABLE, ToolError
from clusters.status import Status

TIMEOUT = "TIMEOUT"

# ---- errors ------------------------------------------------------------------------------

_IM_STATUS = re.compile(r"InteractionModelError: \w+ \(0x([0-9a-fA-F]+)(?:, clusterStatus: (\d+))?")


def status_error(status: int, what: str, cluster_status: int | None = None) -> ToolError:
    try:
        name = Status(status).name
    except ValueError:
        name = f"STATUS_0x{status:02X}"
    message = f"the node answered {name} to {what}"
    if cluster_status is not None:
        message += f" (cluster status {cluster_status})"
    return ToolError(name, message)


def server_error(err: Exception, url: str, node_id: int | None, what: str) -> ToolError:
    """python-matter-server's answer to a failed command as a ToolError."""
    from matter_server.common import errors
    text = str(err)
    match = _IM_STATUS.search(text)
    if match:
        return status_error(int(match.group(1), 16), what,
                             int(match.group(2)) if match.group(2) else None)
    node = f"node {node_id}" if node_id is not None else "the node"
    if isinstance(err, errors.NodeNotReady):
        return ToolError(UNAVAILABLE, f"{node} is not available on {url} (offline, unreachable "
                         "or still being set up); try again later")
    if isinstance(err, errors.NodeNotExists):
        return ToolError(UNAVAILABLE, f"{url} has no {node}; commission it or fix node_id in "
                         "the bridge config")
    if isinstance(err, errors.NodeCommissionFailed):
        return ToolError(UNAVAILABLE, f"commissioning failed on {url}: {text or 'no reason given'} "
                         "(is the device powered, in pairing mode and on this network?)")
    if "timeout" in text.lower() or "timed out" in text.lower():
        return ToolError(TIMEOUT, f"{node} did not answer {what} in time ({text})")
    return ToolError("FAILURE", f"{what} on {node} failed: {type(err).__name__}: {text}")



# ---- one python-matter-server ------------------------------------------------------------

class MatterConnection:
    """python-matter-server's client on a private event loop; `call` runs one coroutine."""

    def __init__(self, url: str, timeout: float):
        self.url = url
        self.timeout = timeout
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True,
                                        name=f"matter-client {url}")
        self._thread.start()
        self._client: Any = None
        self._http: Any = None
        self._listener: asyncio.Task[None] | None = None
        self._connect_lock: asyncio.Lock | None = None
        self._client_hooks: list[Callable[[Any], None]] = []

    async def _connected(self) -> Any:
        import aiohttp
        from matter_server.client.client import MatterClient
        if self._connect_lock is None:
            self._connect_lock = asyncio.Lock()
        async with self._connect_lock:
            client = self._client
            if client is not None and client.connection.connected and not client._stop_called:
                return client
            await self._drop()
            self._http = aiohttp.ClientSession()
            client = MatterClient(self.url, self._http)
            ready = asyncio.Event()
            try:
                await client.connect()
                self._listener = asyncio.create_task(client.start_listening(ready))
                waiter = asyncio.create_task(ready.wait())
                await asyncio.wait({waiter, self._listener}, return_when=asyncio.FIRST_COMPLETED)
                if not ready.is_set():
                    waiter.cancel()
                    self._listener.result()  # raises why listening ended
                    raise ConnectionError("the server closed the connection")
            except BaseException:
                await self._drop(client)
                raise
            self._client = client
            for hook in self._client_hooks:
                hook(client)
            return client

    async def _drop(self, client: Any = None) -> None:
        client = client or self._client
        self._client = None
        if client is not None:
            try:
                await client.disconnect()
            except Exception:  # already gone: nothing to release
                pass
        if self._listener is not None:
            self._listener.cancel()
            self._listener = None
        if self._http is not None:
            await self._http.close()
            self._http = None

    def call(self, fn: Callable[[Any], Any], what: str, node_id: int | None = None,
             timeout: float | None = None) -> Any:
        """Run `await fn(client)` on the loop; every failure becomes a ToolError."""
        from matter_server.client.exceptions import MatterClientException
        from matter_server.common.errors import MatterError as ServerError
        timeout = self.timeout if timeout is None else timeout

        async def run() -> Any:
            client = await asyncio.wait_for(self._connected(), min(timeout, 15))
            return await asyncio.wait_for(fn(client), timeout)

        future = asyncio.run_coroutine_threadsafe(run(), self._loop)
        try:
            return future.result(timeout + 20)  # the inner wait_for fires first
        except ServerError as err:
            raise server_error(err, self.url, node_id, what) from None
        except TimeoutError:
            future.cancel()
            raise ToolError(TIMEOUT, f"{what}: no answer within {timeout:g} s from "
                            f"{f'node {node_id} via ' if node_id is not None else ''}{self.url}") from None
        except (MatterClientException, OSError, ConnectionError, asyncio.CancelledError) as err:
            asyncio.run_coroutine_threadsafe(self._drop(), self._loop).result(10)
            raise ToolError(UNAVAILABLE, f"cannot reach python-matter-server at {self.url} "
                            f"({type(err).__name__}: {err or 'connection lost'})") from None

    def on_client(self, hook: Callable[[Any], None]) -> None:
        """Run `hook(client)` on the loop now and for every later client (after a reconnect):
        how event subscribers (a lab session's reports) stay subscribed."""
        async def connected(client: Any) -> None:
            return None

        async def apply(client: Any) -> None:
            hook(client)
        self.call(connected, "connect")
        self._client_hooks.append(hook)
        self.call(apply, "subscribe to node events")

    def nodes(self) -> dict[int, Any]:
        """The server's nodes (node id -> MatterNode), as sent when we started listening."""
        async def get(client: Any) -> dict[int, Any]:
            return {n.node_id: n for n in client.get_nodes()}
        nodes: dict[int, Any] = self.call(get, "list the server's nodes")
        return nodes

    def close(self) -> None:
        if self._loop.is_closed():
            return
        try:
            asyncio.run_coroutine_threadsafe(self._drop(), self._loop).result(10)
        except Exception:  # closing anyway
            pass
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        self._loop.close()
