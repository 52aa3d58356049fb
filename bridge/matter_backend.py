"""`MatterBackend(config)`: the tools over python-matter-server's WebSocket API.

The same `Backend` the in-process twin implements, for any Matter nodes on that server's
fabric: twin nodes or real hardware. Every read, write and invoke is a Matter interaction
through the server (no attribute is cached here); the device structure comes from the node's
Descriptor (DeviceTypeList, ServerList, PartsList) and global attributes (AttributeList,
AcceptedCommandList, FeatureMap, ClusterRevision), read in one wildcard read. Names and
types come from `chip.clusters.Objects`, values leave as `clusters.values.to_json` shapes,
so an agent sees the same JSON it sees on the twin.

- **Threads.** python-matter-server's own client (`matter_server.client.MatterClient`) runs on
  a private asyncio loop in a background thread per server URL; the sync `Backend` methods
  wait on it with a timeout (`timeout` in the config).
- **Errors.** A Matter status from the node becomes a ToolError with its spec name
  (CONSTRAINT_ERROR, ...). The server unreachable or the connection lost: UNAVAILABLE; a node
  that does not answer in time: TIMEOUT; a node the server cannot reach: UNAVAILABLE.
- **Room states.** Read from the sensor endpoints the config names (Temperature-,
  RelativeHumidity-, Illuminance- and Pm10ConcentrationMeasurement), converted to the
  units `Backend.room_states` uses (°C, %RH, lux, µg/m³). A room without a sensor for some
  state answers get_room_states with a ToolError UNAVAILABLE naming the missing states (the
  tool's result has a number for every state, so a partial answer would have to invent one).
- **Time and workflows.** Wall-clock local time. Workflows run on a scheduler thread at
  their start time; steps go through the tools against this same backend, and a failing
  step is recorded in the workflow (status "failed", the error, the remaining steps
  "skipped"), never dropped.
- **Node management.** The commissioning, credentials, ACL, group-key, network and
  diagnostics clusters (`NODE_MANAGEMENT`) belong to the controller: the tools neither show
  them (structure, all attributes, Descriptor.ServerList) nor reach them, as in process.
- **Writability.** Matter has no attribute that says which attributes are writable; for
  clusters this project implements, `writable` in get_device_structure is the spec's (from
  our cluster server with the same feature map), for others it is null (unknown; a write answers UNSUPPORTED_WRITE).
"""
from __future__ import annotations

import asyncio
import base64
import copy
import datetime as _dt
import enum
import functools
import re
import threading
import types
import typing
from typing import Any, Callable

from chip.clusters.ClusterObjects import ALL_ATTRIBUTES, ALL_CLUSTERS, ClusterObject
from chip.clusters import Objects as Clusters
from chip.clusters.Types import Nullable, NullValue
from chip import tlv

from clusters.base import GLOBAL_ATTRIBUTES
from clusters.status import MatterError, Status
from clusters.values import from_json, to_json, type_name

from bridge.backend import INVALID_ARGUMENT, NOT_FOUND, TIME_FORMAT, UNAVAILABLE, ToolError
from bridge.config import STATES, DeviceConfig, LoadedConfig, SensorRef

TIMEOUT = "TIMEOUT"
DESCRIPTOR = 0x001D
BASIC_INFORMATION = 0x0028
GLOBAL_IDS = {0xFFF8: "GeneratedCommandList", 0xFFF9: "AcceptedCommandList",
              0xFFFB: "AttributeList", 0xFFFC: "FeatureMap", 0xFFFD: "ClusterRevision"}
#: The node's own management clusters (commissioning, operational credentials, ACL, group
#: keys, network, diagnostics). The controller owns them, so the tools never show or touch
#: them: a twin device in process has none (its node runtime adds them), and an agent that
#: wrote the ACL or removed a fabric would cut python-matter-server off the device.
NODE_MANAGEMENT = frozenset(c.id for c in (
    Clusters.AccessControl, Clusters.GeneralCommissioning, Clusters.NetworkCommissioning,
    Clusters.OperationalCredentials, Clusters.GroupKeyManagement, Clusters.GeneralDiagnostics,
    Clusters.AdministratorCommissioning))
#: One read gives the whole composition: Descriptor lists, global attributes, identity.
LAYOUT_PATHS = ["*/29/0", "*/29/1", "*/29/3", "*/*/65529", "*/*/65531", "*/*/65532",
                "*/*/65533", "0/40/1", "0/40/4"]


# ---- values: python-matter-server's wire JSON <-> the tools' JSON ------------------------

def wire_to_json(typ: Any, raw: Any) -> Any:
    """A value as python-matter-server sends it (TLV-decoded: structs keyed by tag or by
    field name, bytes in base64) as `clusters.values.to_json` would give it."""
    if raw is None:
        return None
    origin = typing.get_origin(typ)
    if origin in (typing.Union, types.UnionType):
        concrete = [a for a in typing.get_args(typ) if a not in (Nullable, type(None))]
        return wire_to_json(concrete[0], raw) if len(concrete) == 1 else raw
    if origin is list:
        (item,) = typing.get_args(typ) or (Any,)
        return [wire_to_json(item, v) for v in raw] if isinstance(raw, list) else raw
    if isinstance(typ, type):
        if issubclass(typ, ClusterObject) and isinstance(raw, dict):
            out = {}
            for field in typ.descriptor.Fields:
                for key in (str(field.Tag), field.Tag, field.Label):
                    if key in raw:
                        out[field.Label] = wire_to_json(field.Type, raw[key])
                        break
            return out
        if issubclass(typ, bytes) and isinstance(raw, str):
            try:
                return base64.b64decode(raw).hex()
            except ValueError:
                return raw
        if issubclass(typ, bool):
            return bool(raw)
        if (issubclass(typ, float) or issubclass(typ, tlv.float32)) and isinstance(raw, (int, float)):
            return float(raw)
    return raw


def to_wire(value: Any) -> Any:
    """A chip value (validated by `from_json`) as python-matter-server parses it back."""
    if value is NullValue or value is None:
        return None
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    if isinstance(value, ClusterObject):
        return {f.Label: to_wire(getattr(value, f.Label)) for f in value.descriptor.Fields
                if getattr(value, f.Label) is not None}
    if isinstance(value, (list, tuple)):
        return [to_wire(v) for v in value]
    return to_json(value)


# ---- what our cluster servers know that Matter does not say: writability, order --------

@functools.lru_cache(maxsize=1)
def _known_servers() -> dict[tuple[int, int | None], Any]:
    """(cluster id, feature map) and (cluster id, None) -> one of our ClusterServer instances
    (spec writability and the order in which the twin lists attributes and commands). The
    feature map matters: OnOff with Lighting has writable OnTime, without it no OnTime."""
    from clusters.devices import DEVICE_TYPES, create_device
    out: dict[tuple[int, int | None], Any] = {}
    for key in sorted(DEVICE_TYPES):
        for server in create_device(key, key).servers():
            out.setdefault((server.id, server.feature_map), server)
            out.setdefault((server.id, None), server)
    return out


def _known_server(cluster_id: int, feature_map: int | None = None) -> Any:
    known = _known_servers()
    return known.get((cluster_id, feature_map)) or known.get((cluster_id, None))


def _ordered(ids: list[int], names: Callable[[int], str], preferred: tuple[str, ...]) -> list[int]:
    rank = {n: i for i, n in enumerate(preferred)}
    return sorted(ids, key=lambda i: (rank.get(names(i), len(rank)), i))


def attribute_name(cluster_id: int, attribute_id: int) -> str:
    cls = ALL_ATTRIBUTES.get(cluster_id, {}).get(attribute_id)
    if cls is None:
        return GLOBAL_IDS.get(attribute_id, f"0x{attribute_id:04X}")
    return cls.__name__


def attribute_type(cluster_id: int, attribute_id: int) -> Any:
    cls = ALL_ATTRIBUTES.get(cluster_id, {}).get(attribute_id)
    return cls.attribute_type.Type if cls is not None else Any


def cluster_name(cluster_id: int) -> str:
    cls = ALL_CLUSTERS.get(cluster_id)
    return cls.__name__ if cls is not None else f"0x{cluster_id:04X}"


def _command_class(cluster_id: int, command_id: int) -> Any:
    cluster = ALL_CLUSTERS.get(cluster_id)
    commands = getattr(cluster, "Commands", None)
    for name in dir(commands) if commands is not None else ():
        cls = getattr(commands, name)
        if (isinstance(cls, type) and getattr(cls, "command_id", None) == command_id
                and getattr(cls, "is_client", False)):
            return cls
    return None


@functools.lru_cache(maxsize=None)
def _device_type_names() -> dict[int, str]:
    from matter_server.client.models.device_types import ALL_TYPES
    return {dt: cls.__name__ for dt, cls in ALL_TYPES.items()}


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


def _label(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name)


# ---- errors ------------------------------------------------------------------------------

_IM_STATUS = re.compile(r"InteractionModelError: \w+ \(0x([0-9a-fA-F]+)(?:, clusterStatus: (\d+))?")


def _status_error(status: int, what: str, cluster_status: int | None = None) -> ToolError:
    try:
        name = Status(status).name
    except ValueError:
        name = f"STATUS_0x{status:02X}"
    message = f"the node answered {name} to {what}"
    if cluster_status is not None:
        message += f" (cluster status {cluster_status})"
    return ToolError(name, message)


def _server_error(err: Exception, url: str, node_id: int | None, what: str) -> ToolError:
    """python-matter-server's answer to a failed command as a ToolError."""
    from matter_server.common import errors
    text = str(err)
    match = _IM_STATUS.search(text)
    if match:
        return _status_error(int(match.group(1), 16), what,
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
        self._listener: asyncio.Task | None = None
        self._connect_lock: asyncio.Lock | None = None

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
            raise _server_error(err, self.url, node_id, what) from None
        except (asyncio.TimeoutError, TimeoutError):
            future.cancel()
            raise ToolError(TIMEOUT, f"{what}: no answer within {timeout:g} s from "
                            f"{'node %d via ' % node_id if node_id is not None else ''}{self.url}") from None
        except (MatterClientException, OSError, ConnectionError, asyncio.CancelledError) as err:
            asyncio.run_coroutine_threadsafe(self._drop(), self._loop).result(10)
            raise ToolError(UNAVAILABLE, f"cannot reach python-matter-server at {self.url} "
                            f"({type(err).__name__}: {err or 'connection lost'})") from None

    def nodes(self) -> dict[int, Any]:
        """The server's nodes (node id -> MatterNode), as sent when we started listening."""
        async def get(client: Any) -> dict[int, Any]:
            return {n.node_id: n for n in client.get_nodes()}
        return self.call(get, "list the server's nodes")

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


# ---- devices -------------------------------------------------------------------------------

class MatterDevice:
    """A configured device on a Matter node: its endpoint (and parts), or the whole node."""

    def __init__(self, spec: DeviceConfig, loaded: LoadedConfig, conn: MatterConnection):
        self.spec = spec
        self.loaded = loaded
        self.conn = conn
        self.ref = spec.matter
        self._node_id = self.ref.node_id
        self._commission_lock = threading.Lock()

    # ---- the node: configured, remembered, or commissioned now ---------------------
    @property
    def node_id(self) -> int:
        if self._node_id is not None:
            return self._node_id
        with self._commission_lock:
            if self._node_id is None:
                self._node_id = self._adopt_or_commission()
        return self._node_id

    def _adopt_or_commission(self) -> int:
        url, code = self.conn.url, self.ref.pairing_code
        remembered = self.loaded.remembered_node(self.spec.id, url, code)
        if remembered is not None and remembered in self.conn.nodes():
            return remembered
        timeout = self.loaded.config.commission_timeout

        async def commission(client: Any) -> int:
            return (await client.commission_with_code(code, network_only=True)).node_id
        node_id = self.conn.call(commission, f"commission {self.spec.id} with its pairing code",
                                 timeout=timeout)
        self.loaded.remember_node(self.spec.id, url, code, node_id)
        return node_id

    # ---- raw interactions ----------------------------------------------------------
    def _read(self, paths: list[str], what: str) -> dict[str, Any]:
        node = self.node_id
        return self.conn.call(lambda c: c.read_attribute(node, paths), what, node)

    def layout(self) -> dict[int, dict[str, Any]]:
        """endpoint -> {device_types, servers, parts, clusters: {id: {attributes, commands,
        feature_map, revision}}} for this device's endpoints, plus identity under -1."""
        raw = self._read(LAYOUT_PATHS, f"read the structure of {self.spec.id}")
        eps: dict[int, dict[str, Any]] = {}
        identity: dict[str, Any] = {}
        for path, value in raw.items():
            ep, cid, aid = (int(p) for p in path.split("/"))
            if cid == BASIC_INFORMATION and ep == 0 and aid in (1, 4):
                identity["vendor_name" if aid == 1 else "product_id"] = value
                continue
            entry = eps.setdefault(ep, {"device_types": [], "servers": [], "parts": [], "clusters": {}})
            if cid == DESCRIPTOR and aid in (0, 1, 3):
                key = {0: "device_types", 1: "servers", 3: "parts"}[aid]
                entry[key] = ([{"id": d.get("0", d.get(0)), "revision": d.get("1", d.get(1))}
                               for d in value] if aid == 0 else sorted(value or []))
                if aid == 1:
                    entry[key] = [c for c in entry[key] if c not in NODE_MANAGEMENT]
            if aid in GLOBAL_IDS:
                cluster = entry["clusters"].setdefault(cid, {"attributes": [], "commands": [],
                                                             "feature_map": 0, "revision": 0})
                field = {0xFFF9: "commands", 0xFFFB: "attributes", 0xFFFC: "feature_map",
                         0xFFFD: "revision"}[aid]
                cluster[field] = sorted(value) if isinstance(value, list) else (value or 0)
        mine = self._endpoints(eps)
        out = {e: eps[e] for e in sorted(mine)}
        out[-1] = identity
        return out

    def _endpoints(self, eps: dict[int, dict[str, Any]]) -> set[int]:
        top = self.ref.endpoint
        if top is None:
            return set(eps)
        if top not in eps:
            raise ToolError(UNAVAILABLE, f"device {self.spec.id}: node {self.node_id} has no "
                            f"endpoint {top} (the bridge config says it has); endpoints: "
                            + ", ".join(str(e) for e in sorted(eps)))
        out, todo = {0, top}, [top]
        while todo:
            for part in eps[todo.pop()]["parts"]:
                if part in eps and part not in out:
                    out.add(part)
                    todo.append(part)
        return out

    # ---- identity ------------------------------------------------------------------
    def _type(self, layout: dict[int, Any]) -> tuple[str, str]:
        from clusters.devices import DEVICE_TYPES
        identity = layout[-1]
        if identity.get("vendor_name") == "matter-twin":  # a twin node: its own type key
            for device_type in DEVICE_TYPES.values():
                if device_type.product_id == identity.get("product_id"):
                    return device_type.key, device_type.label
        apps = [e for e in layout if e > 0]
        main = self.ref.endpoint if self.ref.endpoint is not None else (apps[0] if apps else 0)
        types_ = layout.get(main, {}).get("device_types") or [{"id": None}]
        dt = types_[0]["id"]
        name = _device_type_names().get(dt)
        if name is None:
            return (f"device_type_0x{dt:04x}", f"Device type 0x{dt:04X}") if dt is not None else ("unknown", "Unknown")
        return _snake(name), _label(name)

    def summary(self) -> dict[str, Any]:
        layout = self.layout()
        key, label = self._type(layout)
        return {"device_type": key, "label": label, "endpoints": [e for e in layout if e > 0]}

    def structure(self) -> dict[str, Any]:
        layout = self.layout()
        key, label = self._type(layout)
        endpoints = []
        for ep, entry in layout.items():
            if ep < 0:
                continue
            endpoints.append({"endpoint_id": ep, "device_types": entry["device_types"],
                              "clusters": [self._describe(cid, entry["clusters"].get(cid, {}))
                                           for cid in entry["servers"]]})
        return {"device_type": key, "label": label, "endpoints": endpoints}

    @staticmethod
    def _describe(cid: int, info: dict[str, Any]) -> dict[str, Any]:
        known = _known_server(cid, info.get("feature_map"))
        attrs = _ordered(list(info.get("attributes", [])), lambda a: attribute_name(cid, a),
                         known.attribute_names() if known is not None else ())
        cmds = [c for c in info.get("commands", []) if _command_class(cid, c) is not None]
        cmds = _ordered(cmds, lambda c: _command_class(cid, c).__name__,
                        tuple(known.commands) if known is not None else ())
        return {
            "id": cid, "name": cluster_name(cid), "revision": info.get("revision", 0),
            "feature_map": info.get("feature_map", 0),
            "attributes": [{"name": attribute_name(cid, a), "id": a,
                            "type": _type_name(attribute_type(cid, a)),
                            "writable": (attribute_name(cid, a) in known.writable) if known is not None else None}
                           for a in attrs],
            "commands": [{"name": _command_class(cid, c).__name__, "id": c,
                          "fields": {f.Label: type_name(f.Type)
                                     for f in _command_class(cid, c).descriptor.Fields}}
                         for c in cmds],
        }

    # ---- resolving names against the live layout ----------------------------------
    def locate(self, endpoint_id: int | None, cluster: Any) -> tuple[int, int, dict[str, Any]]:
        layout = self.layout()
        eps = [e for e in layout if e >= 0]
        if endpoint_id is not None and endpoint_id not in eps:
            raise ToolError(Status.UNSUPPORTED_ENDPOINT.name, f"device {self.spec.id} has no "
                            f"endpoint {endpoint_id!r}; endpoints: " + ", ".join(map(str, eps)),
                            accepted=eps)
        for ep in ([endpoint_id] if endpoint_id is not None else eps):
            for cid in layout[ep]["servers"]:
                if cluster == cid or (isinstance(cluster, str) and cluster.lower()
                                      in (cluster_name(cid).lower(), str(cid))):
                    return ep, cid, layout[ep]["clusters"].get(cid, {})
        names = sorted({cluster_name(c) for e in ([endpoint_id] if endpoint_id is not None else eps)
                        for c in layout[e]["servers"]})
        where = f"endpoint {endpoint_id} of {self.spec.id}" if endpoint_id is not None else self.spec.id
        raise ToolError(Status.UNSUPPORTED_CLUSTER.name, f"{where} has no cluster {cluster!r}",
                        accepted=names)

    @staticmethod
    def _attribute(cid: int, info: dict[str, Any], attribute: Any) -> int:
        ids = list(info.get("attributes", []))
        for aid in ids:
            name = attribute_name(cid, aid)
            if attribute == aid or (isinstance(attribute, str) and attribute.lower() in (name.lower(), str(aid))):
                return aid
        raise ToolError(Status.UNSUPPORTED_ATTRIBUTE.name, f"{cluster_name(cid)} has no attribute "
                        f"{attribute!r}", accepted=[attribute_name(cid, a) for a in ids])

    @staticmethod
    def _command(cid: int, info: dict[str, Any], command: Any) -> Any:
        classes = [c for c in (_command_class(cid, i) for i in info.get("commands", [])) if c is not None]
        for cls in classes:
            if command == cls.command_id or (isinstance(command, str) and command.lower()
                                             in (cls.__name__.lower(), str(cls.command_id))):
                return cls
        raise ToolError(Status.UNSUPPORTED_COMMAND.name, f"{cluster_name(cid)} does not accept "
                        f"command {command!r}", accepted=[c.__name__ for c in classes])

    # ---- the Backend operations, per device ----------------------------------------
    def read(self, endpoint_id: int | None, cluster: Any, attribute: Any) -> dict[str, Any]:
        ep, cid, info = self.locate(endpoint_id, cluster)
        aid = self._attribute(cid, info, attribute)
        return {"endpoint_id": ep, "cluster": cluster_name(cid), "attribute": attribute_name(cid, aid),
                "value": self._read_value(ep, cid, aid)}

    def _read_value(self, ep: int, cid: int, aid: int) -> Any:
        what = f"read {cluster_name(cid)}.{attribute_name(cid, aid)} on {self.spec.id}"
        raw = self._read([f"{ep}/{cid}/{aid}"], what)
        path = f"{ep}/{cid}/{aid}"
        if path not in raw:
            raise ToolError("FAILURE", f"{what}: the node returned no value")
        return _decode(cid, aid, raw[path], what)

    def read_all(self) -> dict[str, Any]:
        layout = self.layout()
        eps = [e for e in layout if e >= 0]
        raw = self._read([f"{e}/*/*" for e in eps], f"read all attributes of {self.spec.id}")

        def order(path: str) -> tuple[int, ...]:  # the twin's order: endpoint, cluster, its list
            ep, cid, aid = (int(x) for x in path.split("/"))
            info = layout.get(ep, {}).get("clusters", {}).get(cid, {})
            known = _known_server(cid, info.get("feature_map"))
            names = known.attribute_names() if known is not None else ()
            name = attribute_name(cid, aid)
            return ep, cid, names.index(name) if name in names else len(names), aid

        out: dict[str, Any] = {}
        for path in sorted(raw, key=order):
            ep, cid, aid = (int(x) for x in path.split("/"))
            if cid in NODE_MANAGEMENT or aid in GLOBAL_IDS or aid == 0xFFFA:  # globals: see get_device_structure
                continue
            name = attribute_name(cid, aid)
            if name in GLOBAL_ATTRIBUTES:
                continue
            out[f"{ep}.{cluster_name(cid)}.{name}"] = _decode(cid, aid, raw[path], path, strict=False)
        return out

    def write(self, endpoint_id: int | None, cluster: Any, attribute: Any, value: Any) -> dict[str, Any]:
        ep, cid, info = self.locate(endpoint_id, cluster)
        aid = self._attribute(cid, info, attribute)
        cname, aname = cluster_name(cid), attribute_name(cid, aid)
        try:
            chip_value = from_json(attribute_type(cid, aid), value, f"{cname}.{aname}")
        except MatterError as err:
            raise ToolError(err.status.name, err.message) from None
        node, what = self.node_id, f"write {cname}.{aname} on {self.spec.id}"
        result = self.conn.call(lambda c: c.write_attribute(node, f"{ep}/{cid}/{aid}", to_wire(chip_value)),
                                what, node)
        for entry in result or []:
            status = entry.get("Status", 0) if isinstance(entry, dict) else 0
            if status:
                err = _status_error(int(status), what)
                if err.code == Status.UNSUPPORTED_WRITE.name:
                    known = _known_server(cid, info.get("feature_map"))
                    err.accepted = sorted(known.writable) if known is not None else None
                raise err
        return {"endpoint_id": ep, "cluster": cname, "attribute": aname,
                "value": self._read_value(ep, cid, aid)}

    def invoke(self, endpoint_id: int | None, cluster: Any, command: Any, args: dict[str, Any]) -> dict[str, Any]:
        ep, cid, info = self.locate(endpoint_id, cluster)
        cls = self._command(cid, info, command)
        cname = cluster_name(cid)
        try:
            request = from_json(cls, args or {}, f"{cname}.{cls.__name__}")
        except MatterError as err:
            raise ToolError(err.status.name, err.message) from None
        node, what = self.node_id, f"{cname}.{cls.__name__} on {self.spec.id}"
        timed = int(self.conn.timeout * 1000) if getattr(cls, "must_use_timed_invoke", False) else None
        raw = self.conn.call(lambda c: c.send_device_command(node, ep, request, timed_request_timeout_ms=timed),
                             what, node)
        out: dict[str, Any] = {"endpoint_id": ep, "cluster": cname, "command": cls.__name__, "response": None}
        response_cls = getattr(ALL_CLUSTERS[cid].Commands, cls.response_type, None) if cls.response_type else None
        if response_cls is not None and raw is not None:
            out["response"] = wire_to_json(response_cls, raw)
            out["response_command"] = response_cls.__name__
        return out


def _type_name(typ: Any) -> str:
    return "unknown (not in this data model)" if typ is Any else type_name(typ)


def _decode(cid: int, aid: int, raw: Any, what: str, strict: bool = True) -> Any:
    if isinstance(raw, dict) and "TLVValue" in raw:  # the SDK could not decode it
        if strict:
            raise ToolError("FAILURE", f"{what}: the node's value could not be decoded")
        return None
    if aid in GLOBAL_IDS:
        return raw
    if cid == DESCRIPTOR and aid == 1 and isinstance(raw, list):  # as get_device_structure shows it
        return [c for c in raw if c not in NODE_MANAGEMENT]
    return wire_to_json(attribute_type(cid, aid), raw)


# ---- workflows on the wall clock -----------------------------------------------------------

class WallClockWorkflows:
    """Workflows for backends whose time is real: a scheduler thread runs each one at its
    start time, its steps through the tools against `backend`, one after another. The JSON
    matches the twin's workflows, with wall-clock times where the twin has ticks."""

    def __init__(self, backend: Any, now: Callable[[], _dt.datetime]):
        self._backend = backend
        self._now = now
        self._items: dict[str, dict[str, Any]] = {}
        self._counter = 0
        self._cond = threading.Condition()
        self._stop = False
        self._thread = threading.Thread(target=self._loop, daemon=True, name="bridge-workflows")
        self._thread.start()

    def schedule(self, start_time: str, steps: list[dict[str, Any]]) -> dict[str, Any]:
        from twin.workflows import normalize_step
        try:
            start = _dt.datetime.strptime(start_time, TIME_FORMAT)
        except ValueError:
            raise ToolError(INVALID_ARGUMENT, f"start_time {start_time!r} is not \"YYYY-MM-DD HH:MM:SS\"") from None
        now = self._now().replace(microsecond=0)
        if start < now:
            raise ToolError(INVALID_ARGUMENT, f"start_time {start_time} is in the past; the current "
                            f"time is {now.strftime(TIME_FORMAT)}")
        try:
            normalized = [normalize_step(step, i) for i, step in enumerate(steps)]
        except ValueError as err:
            raise ToolError(INVALID_ARGUMENT, str(err)) from None
        if not normalized:
            raise ToolError(INVALID_ARGUMENT, "steps must be a non-empty list of {'tool', 'args'} objects")
        with self._cond:
            self._counter += 1
            wid = f"w{self._counter}"
            self._items[wid] = {"id": wid, "workflow_id": wid, "start_time": start.isoformat(sep=" "),
                                "start_tick": None, "status": "scheduled", "error": None,
                                "finished_tick": None, "finished_time": None,
                                "steps": [{**s, "status": "pending"} for s in normalized], "_start": start}
            self._cond.notify_all()
            return self._json(self._items[wid])

    @staticmethod
    def _json(item: dict[str, Any]) -> dict[str, Any]:
        return copy.deepcopy({k: v for k, v in item.items() if not k.startswith("_")})

    def _get(self, workflow_id: str) -> dict[str, Any]:
        item = self._items.get(workflow_id) if isinstance(workflow_id, str) else None
        if item is None:
            raise ToolError(NOT_FOUND, f"there is no workflow {workflow_id!r}", accepted=list(self._items))
        return item

    def get(self, workflow_id: str) -> dict[str, Any]:
        with self._cond:
            return self._json(self._get(workflow_id))

    def cancel(self, workflow_id: str) -> dict[str, Any]:
        with self._cond:
            item = self._get(workflow_id)
            if item["status"] != "scheduled":
                raise ToolError(Status.INVALID_IN_STATE.name, f"workflow {workflow_id} is "
                                f"{item['status']}; only scheduled workflows can be cancelled")
            item["status"] = "cancelled"
            for step in item["steps"]:
                step["status"] = "skipped"
            return self._json(item)

    def list(self) -> list[dict[str, Any]]:
        with self._cond:
            return [self._json(i) for i in self._items.values()]

    def close(self) -> None:
        with self._cond:
            self._stop = True
            self._cond.notify_all()
        self._thread.join(5)

    def _loop(self) -> None:
        while True:
            with self._cond:
                if self._stop:
                    return
                due = sorted((i for i in self._items.values() if i["status"] == "scheduled"),
                             key=lambda i: (i["_start"], int(i["id"][1:])))
                if not due or due[0]["_start"] > self._now():
                    wait = (due[0]["_start"] - self._now()).total_seconds() if due else None
                    self._cond.wait(None if wait is None else min(max(wait, 0.01), 1.0))
                    continue
                item = due[0]
                item["status"] = "running"
            self._run(item)

    def _run(self, item: dict[str, Any]) -> None:
        from bridge.tools import call_tool
        failed = False
        for i, step in enumerate(item["steps"]):
            if failed:
                step["status"] = "skipped"
                continue
            result = call_tool(self._backend, step["tool"], step["args"])
            stamp = self._now().strftime(TIME_FORMAT)
            with self._cond:
                if result["ok"]:
                    value = result.get("response") if step["tool"] == "execute_command" else None
                    step.update(status="ok", result=value, time=stamp)
                else:
                    message = f"{result['error']['code']}: {result['error']['message']}"
                    step.update(status="error", error=message, time=stamp)
                    item["error"] = f"step {i + 1} ({step['tool']}): {message}"
                    failed = True
        with self._cond:
            item["status"] = "failed" if failed else "completed"
            item["finished_time"] = self._now().strftime(TIME_FORMAT)


# ---- the backend ---------------------------------------------------------------------------

def _wall_now() -> _dt.datetime:
    return _dt.datetime.now()  # the edge: hardware lives in real local time


class MatterBackend:
    """Implements `bridge.backend.Backend` for a bridge config whose devices are Matter nodes
    (`MixedBackend` adds twin devices). Call `close()` when done."""

    def __init__(self, loaded: LoadedConfig, now: Callable[[], _dt.datetime] = _wall_now):
        self.loaded = loaded
        self.config = loaded.config
        self._now = now
        self._connections: dict[str, MatterConnection] = {}
        self._devices: dict[str, Any] = {}
        self._sensor_nodes: dict[tuple[str, str], MatterDevice] = {}
        for spec in self.config.devices:
            self._devices[spec.id] = self._make_device(spec)
        self._workflows = WallClockWorkflows(self, now)

    def _make_device(self, spec: DeviceConfig) -> Any:
        if spec.matter is None:
            from twin.schema import UserFileError
            raise UserFileError(self.loaded.source, f"devices.{spec.id}.twin",
                              "MatterBackend drives Matter devices only; use "
                              "bridge.mixed.load_backend for twin devices")
        return MatterDevice(spec, self.loaded, self.connection(self.config.server_of(spec.matter)))

    def connection(self, url: str) -> MatterConnection:
        if url not in self._connections:
            self._connections[url] = MatterConnection(url, self.config.timeout)
        return self._connections[url]

    def close(self) -> None:
        self._workflows.close()
        for conn in self._connections.values():
            conn.close()

    def commission_all(self) -> dict[str, int]:
        """Adopt or commission every Matter device and sensor node now (else on first use):
        id -> node id."""
        out = {d.spec.id: d.node_id for d in self._devices.values() if isinstance(d, MatterDevice)}
        for room in self.config.rooms:
            for ref in room.sensors.values():
                if ref.pairing_code is not None:
                    device = self._sensor_device(ref)
                    out[device.spec.id] = device.node_id
        return out

    # ---- lookups ---------------------------------------------------------------------
    def _device(self, device_id: str) -> Any:
        try:
            return self._devices[device_id]
        except (KeyError, TypeError):
            raise ToolError(NOT_FOUND, f"there is no device {device_id!r}",
                            accepted=sorted(self._devices)) from None

    def _room(self, room_id: str) -> Any:
        for room in self.config.rooms:
            if room.id == room_id:
                return room
        raise ToolError(NOT_FOUND, f"there is no room {room_id!r}",
                        accepted=sorted(r.id for r in self.config.rooms))

    def _name(self, device_id: str) -> str:
        return self.config.device(device_id).name or device_id

    # ---- rooms ---------------------------------------------------------------------
    def rooms(self) -> list[dict[str, Any]]:
        return [{"room_id": r.id, "name": r.display_name} for r in self.config.rooms]

    def room_devices(self, room_id: str) -> list[dict[str, Any]]:
        self._room(room_id)
        out = []
        for spec in self.config.devices:
            if spec.room == room_id:
                out.append({"device_id": spec.id, "name": self._name(spec.id),
                            **self._devices[spec.id].summary()})
        return out

    def room_states(self, room_id: str) -> dict[str, float]:
        room = self._room(room_id)
        states = {s: self._sensor(room_id, s, ref) for s, ref in room.sensors.items()}
        missing = [s for s in STATES if s not in states]
        if missing:
            states.update(self._fallback_states(room, missing))
        missing = [s for s in STATES if s not in states]
        if missing:
            have = ", ".join(f"{k} {v:g}" for k, v in states.items()) or "nothing"
            raise ToolError(UNAVAILABLE, f"room {room_id!r} has no sensor for {', '.join(missing)} "
                            f"(add them under the room's sensors in the bridge config); measured: {have}")
        return {s: states[s] for s in STATES}

    def _fallback_states(self, room: Any, missing: list[str]) -> dict[str, float]:
        return {}  # MixedBackend: the room's twin

    #: state -> (measurement cluster, converter from MeasuredValue to the Backend unit)
    _SENSORS = {
        "temperature": ("TemperatureMeasurement", lambda v, unit: v / 100),
        "humidity": ("RelativeHumidityMeasurement", lambda v, unit: v / 100),
        "illuminance": ("IlluminanceMeasurement", lambda v, unit: 0.0 if v == 0 else 10 ** ((v - 1) / 10000)),
        "pm10": ("Pm10ConcentrationMeasurement", lambda v, unit: v * {3: 1000.0, 5: 0.001}.get(unit, 1.0)),
    }

    def _sensor(self, room_id: str, state: str, ref: SensorRef) -> float:
        cluster, convert = self._SENSORS[state]
        device = self._sensor_device(ref)
        value = device.read(ref.endpoint, cluster, "MeasuredValue")
        if value["value"] is None:
            raise ToolError(UNAVAILABLE, f"room {room_id!r}: the {state} sensor has no reading "
                            f"(MeasuredValue is null on endpoint {value['endpoint_id']})")
        unit = None
        if state == "pm10":
            unit = device.read(value["endpoint_id"], cluster, "MeasurementUnit")["value"]
        return float(convert(value["value"], unit))

    def _sensor_device(self, ref: SensorRef) -> Any:
        if ref.device is not None:
            return self._device(ref.device)
        from bridge.config import DeviceConfig, MatterRef
        url = self.config.server_of(ref)
        if ref.pairing_code is not None:
            # One node per code, commissioned once and remembered in the state file under an
            # id made from the code (QR payloads are base38: only ':' falls outside ids).
            key = (url, ref.pairing_code)
            if key not in self._sensor_nodes:
                spec = DeviceConfig(id="sensor-node-" + ref.pairing_code.replace(":", "."),
                                    room=self.config.rooms[0].id,
                                    matter=MatterRef(server=url, pairing_code=ref.pairing_code))
                self._sensor_nodes[key] = MatterDevice(spec, self.loaded, self.connection(url))
            return self._sensor_nodes[key]
        spec = DeviceConfig(id=f"node-{ref.node_id}", room=self.config.rooms[0].id,
                            matter=MatterRef(server=url, node_id=ref.node_id))
        return MatterDevice(spec, self.loaded, self.connection(url))

    # ---- devices -------------------------------------------------------------------
    def device_structure(self, device_id: str) -> dict[str, Any]:
        structure = self._device(device_id).structure()
        return {"device_id": device_id, "name": self._name(device_id),
                "device_type": structure["device_type"], "label": structure["label"],
                "room_id": self.config.device(device_id).room, "endpoints": structure["endpoints"]}

    def read_attribute(self, device_id: str, endpoint_id: int | None, cluster: Any,
                       attribute: Any) -> dict[str, Any]:
        return self._device(device_id).read(endpoint_id, cluster, attribute)

    def read_all_attributes(self, device_id: str) -> dict[str, Any]:
        return self._device(device_id).read_all()

    def write_attribute(self, device_id: str, endpoint_id: int | None, cluster: Any,
                        attribute: Any, value: Any) -> dict[str, Any]:
        return self._device(device_id).write(endpoint_id, cluster, attribute, value)

    def invoke(self, device_id: str, endpoint_id: int | None, cluster: Any, command: Any,
               args: dict[str, Any]) -> dict[str, Any]:
        return self._device(device_id).invoke(endpoint_id, cluster, command, args)

    # ---- time and workflows --------------------------------------------------------
    def current_time(self) -> str:
        return self._now().strftime(TIME_FORMAT)

    def schedule_workflow(self, start_time: str, steps: list[dict[str, Any]]) -> dict[str, Any]:
        return self._workflows.schedule(start_time, steps)

    def cancel_workflow(self, workflow_id: str) -> dict[str, Any]:
        return self._workflows.cancel(workflow_id)

    def workflow_status(self, workflow_id: str) -> dict[str, Any]:
        return self._workflows.get(workflow_id)

    def workflows(self) -> list[dict[str, Any]]:
        return self._workflows.list()


__all__ = ["MatterBackend", "MatterConnection", "MatterDevice", "TIMEOUT", "WallClockWorkflows",
           "to_wire", "wire_to_json"]
