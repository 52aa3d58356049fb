"""`MatterDevice`: a configured device on a Matter node, read, written and invoked through
python-matter-server (nothing cached: every call is a Matter interaction).

The structure comes from the node's Descriptor and global attributes, read in one wildcard
read; names are resolved against that live layout, so errors list what the node accepts.

A device behind a Matter bridge (`endpoint:` one of the bridge's endpoints) takes its identity
from BridgedDeviceBasicInformation there; with `renumber:` it is shown with its own endpoint
ids (a twin home served in bridge mode looks to the tools as it does in process).
"""
from __future__ import annotations

import threading
from typing import Any

from chip.clusters.ClusterObjects import ALL_CLUSTERS

from bridge.backend import UNAVAILABLE, AttributeKey, ToolError
from bridge.config import DeviceConfig, LoadedConfig
from bridge.matter_connection import MatterConnection, status_error
from bridge.matter_values import (
    BASIC_INFORMATION,
    BRIDGED_BASIC_INFORMATION,
    DESCRIPTOR,
    GLOBAL_IDS,
    LAYOUT_PATHS,
    NODE_MANAGEMENT,
    attribute_name,
    attribute_type,
    cluster_name,
    command_class,
    decode,
    device_type_names,
    known_server,
    ordered,
    shown_type_name,
    to_wire,
    type_key,
    type_label,
    wire_to_json,
)
from clusters.base import GLOBAL_ATTRIBUTES
from clusters.devices import DEVICE_TYPES
from clusters.status import MatterError, Status
from clusters.values import from_json, type_name


class MatterDevice:
    """A configured device on a Matter node: its endpoint (and parts), or the whole node."""

    def __init__(self, spec: DeviceConfig, loaded: LoadedConfig, conn: MatterConnection):
        self.spec = spec
        self.loaded = loaded
        self.conn = conn
        if spec.matter is None:
            raise ValueError(f"device {spec.id!r} is not a Matter device")
        self.ref = spec.matter
        self._node_id = self.ref.node_id
        self._shown = dict(self.ref.renumber or {})               # node endpoint -> shown id
        self._node_ep = {v: k for k, v in self._shown.items()}    # shown id -> node endpoint
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
        assert code is not None, "the config validator requires a node_id or a pairing_code"
        remembered = self.loaded.remembered_node(self.spec.id, url, code)
        if remembered is not None and remembered in self.conn.nodes():
            return remembered
        timeout = self.loaded.config.commission_timeout

        async def commission(client: Any) -> int:
            return int((await client.commission_with_code(code, network_only=True)).node_id)
        node_id: int = self.conn.call(commission, f"commission {self.spec.id} with its pairing code",
                                 timeout=timeout)
        self.loaded.remember_node(self.spec.id, url, code, node_id)
        return node_id

    # ---- raw interactions ----------------------------------------------------------
    def _read(self, paths: list[str], what: str) -> dict[str, Any]:
        node = self.node_id
        values: dict[str, Any] = self.conn.call(lambda c: c.read_attribute(node, paths), what, node)
        return values

    def layout(self) -> dict[int, dict[str, Any]]:
        """endpoint -> {device_types, servers, parts, clusters: {id: {attributes, commands,
        feature_map, revision}}} for this device's endpoints, plus identity under -1."""
        # A renumbered device's endpoints are known: read only those (a bridge may have hundreds).
        paths = [p.replace("*", str(e), 1) for e in sorted(self._shown) for p in LAYOUT_PATHS
                 if p.startswith("*")] if self._shown else LAYOUT_PATHS
        raw = self._read(paths, f"read the structure of {self.spec.id}")
        eps: dict[int, dict[str, Any]] = {}
        identity: dict[str, Any] = {}
        bridged: dict[int, dict[str, Any]] = {}
        for path, value in raw.items():
            ep, cid, aid = (int(p) for p in path.split("/"))
            if cid == BASIC_INFORMATION and ep == 0 and aid in (1, 4):
                identity["vendor_name" if aid == 1 else "product_id"] = value
                continue
            if cid == BRIDGED_BASIC_INFORMATION and aid in (1, 3):
                bridged.setdefault(ep, {})["vendor_name" if aid == 1 else "product_name"] = value
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
        top = self.ref.endpoint
        if top is not None and top in bridged:
            identity = bridged[top]
        if self._shown:
            out = {}
            for e in sorted(mine, key=lambda e: self._shown[e]):
                entry = dict(eps[e])
                entry["parts"] = sorted(self._shown[p] for p in entry["parts"] if p in self._shown)
                out[self._shown[e]] = entry
        else:
            out = {e: eps[e] for e in sorted(mine)}
        out[-1] = identity
        return out

    def _path(self, ep: int, rest: str) -> str:
        """A wire path for a shown endpoint id."""
        return f"{self._node_ep.get(ep, ep)}/{rest}"

    def _endpoints(self, eps: dict[int, dict[str, Any]]) -> set[int]:
        if self._shown:
            gone = sorted(e for e in self._shown if e not in eps)
            if gone:
                raise ToolError(UNAVAILABLE, f"device {self.spec.id}: node {self.node_id} has no endpoint "
                                f"{', '.join(map(str, gone))} (the bridge config renumbers it); endpoints: "
                                + ", ".join(str(e) for e in sorted(eps)))
            return set(self._shown)
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
        identity = layout[-1]
        if identity.get("vendor_name") == "matter-twin":  # a twin node: its own type key
            for device_type in DEVICE_TYPES.values():
                if device_type.product_id == identity.get("product_id") or \
                        f"Twin {device_type.label}"[:32] == identity.get("product_name"):
                    return device_type.key, device_type.label
        apps = [e for e in layout if e > 0]
        main = self.ref.endpoint if self.ref.endpoint is not None else (apps[0] if apps else 0)
        main = self._shown.get(main, main)
        types_ = layout.get(main, {}).get("device_types") or [{"id": None}]
        dt = types_[0]["id"]
        name = device_type_names().get(dt)
        if name is None:
            return (f"device_type_0x{dt:04x}", f"Device type 0x{dt:04X}") if dt is not None else ("unknown", "Unknown")
        return type_key(name), type_label(name)

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
        known = known_server(cid, info.get("feature_map"))
        attrs = ordered(list(info.get("attributes", [])), lambda a: attribute_name(cid, a),
                         known.attribute_names() if known is not None else ())
        cmds = [c for c in info.get("commands", []) if command_class(cid, c) is not None]
        cmds = ordered(cmds, lambda c: command_class(cid, c).__name__,
                        tuple(known.commands) if known is not None else ())
        return {
            "id": cid, "name": cluster_name(cid), "revision": info.get("revision", 0),
            "feature_map": info.get("feature_map", 0),
            "attributes": [{"name": attribute_name(cid, a), "id": a,
                            "type": shown_type_name(attribute_type(cid, a)),
                            "writable": (attribute_name(cid, a) in known.writable) if known is not None else None}
                           for a in attrs],
            "commands": [{"name": command_class(cid, c).__name__, "id": c,
                          "fields": {f.Label: type_name(f.Type)
                                     for f in command_class(cid, c).descriptor.Fields}}
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
                return int(aid)
        raise ToolError(Status.UNSUPPORTED_ATTRIBUTE.name, f"{cluster_name(cid)} has no attribute "
                        f"{attribute!r}", accepted=[attribute_name(cid, a) for a in ids])

    @staticmethod
    def _command(cid: int, info: dict[str, Any], command: Any) -> Any:
        classes = [c for c in (command_class(cid, i) for i in info.get("commands", [])) if c is not None]
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

    def read_value(self, ep: int, cid: int, aid: int) -> Any:
        """One attribute at a known path, without resolving names against the layout."""
        return self._read_value(ep, cid, aid)

    def _read_value(self, ep: int, cid: int, aid: int) -> Any:
        what = f"read {cluster_name(cid)}.{attribute_name(cid, aid)} on {self.spec.id}"
        path = self._path(ep, f"{cid}/{aid}")
        raw = self._read([path], what)
        if path not in raw:
            raise ToolError("FAILURE", f"{what}: the node returned no value")
        return decode(cid, aid, raw[path], what)

    def read_all(self) -> dict[str, Any]:
        layout = self.layout()
        eps = [e for e in layout if e >= 0]
        raw = self._read([self._path(e, "*/*") for e in eps], f"read all attributes of {self.spec.id}")
        raw = {self._shown_path(path): value for path, value in raw.items()}

        def order(path: str) -> tuple[int, ...]:  # the twin's order: endpoint, cluster, its list
            ep, cid, aid = (int(x) for x in path.split("/"))
            info = layout.get(ep, {}).get("clusters", {}).get(cid, {})
            known = known_server(cid, info.get("feature_map"))
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
            out[str(AttributeKey(ep, cluster_name(cid), name))] = decode(cid, aid, raw[path], path, strict=False)
        return out

    def _shown_path(self, path: str) -> str:
        ep, rest = path.split("/", 1)
        return f"{self._shown.get(int(ep), int(ep))}/{rest}"

    def write(self, endpoint_id: int | None, cluster: Any, attribute: Any, value: Any) -> dict[str, Any]:
        ep, cid, info = self.locate(endpoint_id, cluster)
        aid = self._attribute(cid, info, attribute)
        cname, aname = cluster_name(cid), attribute_name(cid, aid)
        try:
            chip_value = from_json(attribute_type(cid, aid), value, f"{cname}.{aname}")
        except MatterError as err:
            raise ToolError(err.status.name, err.message) from None
        node, what = self.node_id, f"write {cname}.{aname} on {self.spec.id}"
        result = self.conn.call(lambda c: c.write_attribute(node, self._path(ep, f"{cid}/{aid}"), to_wire(chip_value)),
                                what, node)
        for entry in result or []:
            status = entry.get("Status", 0) if isinstance(entry, dict) else 0
            if status:
                refused = status_error(int(status), what)
                if refused.code == Status.UNSUPPORTED_WRITE.name:
                    known = known_server(cid, info.get("feature_map"))
                    refused.accepted = sorted(known.writable) if known is not None else None
                raise refused
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
        timeout_ms = int(self.conn.timeout * 1000)
        timed = timeout_ms if getattr(cls, "must_use_timed_invoke", False) else None
        node_ep = self._node_ep.get(ep, ep)
        # The configured timeout bounds the controller's wait too: the SDK's default (one request's
        # MRP budget plus 2 s) gives up on a lossy link while retransmissions would still succeed.
        raw = self.conn.call(lambda c: c.send_device_command(node, node_ep, request, timed_request_timeout_ms=timed,
                                                             interaction_timeout_ms=timeout_ms), what, node)
        out: dict[str, Any] = {"endpoint_id": ep, "cluster": cname, "command": cls.__name__, "response": None}
        response_cls = getattr(ALL_CLUSTERS[cid].Commands, cls.response_type, None) if cls.response_type else None
        if response_cls is not None and raw is not None:
            out["response"] = wire_to_json(response_cls, raw)
            out["response_command"] = response_cls.__name__
        return out
