"""Clones of real products: a device type built from a node dump, and node dumps of devices.

A node dump is python-matter-server's node JSON (what Home Assistant's "Download
diagnostics" holds under `data.node`): `attributes` maps "endpoint/cluster/attribute" (ids in
decimal) to the value as the CHIP SDK decoded its TLV. Structs are objects keyed by field tag
("0", "1", ...), octet strings base64, null is null, enums and bitmaps are numbers.

`product_type(key, dump)` turns a dump into a `DeviceType` whose devices have the product's
endpoints, device types, clusters, feature maps, attribute, accepted and generated command
lists, revisions and values:

- a cluster we have a server for is that server, built with the features the product's
  FeatureMap names (each boolean constructor option of the server is matched to the
  cluster's feature of that name), so it behaves as ours do; the product's attributes our
  server lacks are stored beside its own, and its commands outside our server's answer
  UNSUPPORTED_COMMAND;
- any other cluster is an `AttributeStoreServer`: the product's values typed by
  `chip.clusters.Objects`, writable where the data model says so (`CHIPClusters`' writable
  flags), writes checked against the type (nullability, enums, bitmaps, structs) and the
  spec's constraints (`clusters.constraints.ATTRIBUTE_LIMITS`: widths, ranges, lengths),
  subscriptions reported on change, every command UNSUPPORTED_COMMAND. The product's own
  values are kept even where they break a constraint (`limit_breaches` names them);
- a value no chip type describes (a vendor cluster or attribute, a struct of a newer spec)
  is kept as the dump has it and served as generic TLV (`Opaque`), read-only.

The global attributes (FeatureMap, ClusterRevision, AttributeList, AcceptedCommandList,
GeneratedCommandList, and EventList where a product still lists it) are always the
product's. `export_attributes(device)` writes any device back in the dump's value format, so
export(clone(dump)) == dump attribute for attribute.

One job, cloning products (dump in, device type and dump out), hence one module over
~700 lines.
"""
from __future__ import annotations

import ast
import base64
import binascii
import enum
import functools
import importlib.util
import inspect
import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chip import tlv
from chip.clusters import Objects as Clusters
from chip.clusters.ClusterObjects import ALL_ATTRIBUTES, ALL_CLUSTERS, ClusterObject
from chip.clusters.Types import NullValue

from clusters.base import ClusterServer, import_every_server, per_reader
from clusters.constraints import ATTRIBUTE_LIMITS, check_attribute
from clusters.device import Device, DeviceType, Endpoint
from clusters.status import MatterError, Status
from clusters.value_types import Kind, shape
from matter_protocol.tlv import Struct

GLOBAL_IDS = {0xFFF8: "GeneratedCommandList", 0xFFF9: "AcceptedCommandList", 0xFFFA: "EventList",
              0xFFFB: "AttributeList", 0xFFFC: "FeatureMap", 0xFFFD: "ClusterRevision"}
_SHAPE_IDS = (0xFFF8, 0xFFF9, 0xFFFA, 0xFFFB, 0xFFFC, 0xFFFD)



@functools.cache
def session_clusters() -> frozenset[int]:
    """Clusters whose values belong to a fabric, a network or a commissioning session, not to the
    product: a Matter node serves its own (twin/node/commissioning.py), so a clone served over
    Matter reads back the node's here. `comparable()` leaves them out of round-trip checks.
    (A function: the data model builds these clusters only when asked, clusters/lazy_objects.py.)"""
    return frozenset({
        Clusters.AccessControl.id, Clusters.GeneralCommissioning.id, Clusters.NetworkCommissioning.id,
        Clusters.GeneralDiagnostics.id, Clusters.AdministratorCommissioning.id,
        Clusters.OperationalCredentials.id, Clusters.GroupKeyManagement.id,
        Clusters.ThreadNetworkDiagnostics.id, Clusters.WiFiNetworkDiagnostics.id,
        Clusters.EthernetNetworkDiagnostics.id, Clusters.SoftwareDiagnostics.id,
        Clusters.TimeSynchronization.id, Clusters.IcdManagement.id,
    })


class DumpError(ValueError):
    """A node dump we cannot use; the message is one line."""


# ---- dump values <-> Matter values --------------------------------------------------------
class Opaque:
    """The declared type of a value no chip type describes: kept in the dump's JSON form and
    encoded as generic TLV (objects with numeric keys as structures, lists as arrays)."""

    @staticmethod
    def encode_tlv(writer: Any, tag: int | None, value: Any) -> None:
        writer.generic(tag, _generic(value))


def _generic(value: Any) -> Any:
    if isinstance(value, dict):
        return Struct({int(k): _generic(v) for k, v in value.items()})
    if isinstance(value, list):
        return [_generic(v) for v in value]
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return tlv.uint(value)
    return value


def from_dump(typ: Any, raw: Any, what: str = "value") -> Any:
    """The Matter value of a dump value of chip type `typ`; DumpError if it does not fit (an
    enum value of a newer spec, say: the attribute is then kept as the dump has it, `Opaque`)."""
    s = shape(typ)
    if raw is None:
        if s.nullable:
            return NullValue
        raise DumpError(f"{what} is null but not nullable")
    kind, typ = s.kind, s.typ
    if s.is_union and len(s.options) != 1:
        return raw   # a union of several types: kept as the dump has it
    if kind is Kind.LIST:
        if not isinstance(raw, list):
            raise DumpError(f"{what} is not a list")
        return [from_dump(s.item, v, f"{what}[{i}]") for i, v in enumerate(raw)]
    if kind is Kind.ANY:
        return raw
    if kind is Kind.STRUCT:
        if not isinstance(raw, dict):
            raise DumpError(f"{what} is not a struct")
        fields = {f.Tag: f for f in typ.descriptor.Fields}
        unknown = [k for k in raw if not str(k).isdigit() or int(k) not in fields]
        if unknown:
            raise DumpError(f"{what} has fields {unknown} that {typ.__name__} lacks")
        values = {}
        for tag, f in fields.items():
            if str(tag) in raw:
                values[f.Label] = from_dump(f.Type, raw[str(tag)], f"{what}.{f.Label}")
            else:
                if not shape(f.Type).optional:
                    raise DumpError(f"{what} lacks field {f.Label}")
                values[f.Label] = None
        return typ(**values)
    if kind is Kind.BOOL:
        if not isinstance(raw, bool):
            raise DumpError(f"{what} is not a boolean")
        return raw
    if kind in (Kind.ENUM, Kind.BITMAP, Kind.UINT):
        if isinstance(raw, bool) or not isinstance(raw, int) or raw < 0:
            raise DumpError(f"{what} is not an unsigned integer")
        if kind is Kind.BITMAP:
            return typ(raw)
        if kind is Kind.ENUM:
            known = {int(m.value) for m in typ if m.name != "kUnknownEnumValue"}
            if raw not in known:
                raise DumpError(f"{what}={raw} is not a {typ.__name__} this data model knows")
            return typ(raw)
        return int(raw)
    if kind in (Kind.FLOAT32, Kind.FLOAT):
        if isinstance(raw, bool) or not isinstance(raw, (int, float)):
            raise DumpError(f"{what} is not a number")
        return float(raw)
    if kind is Kind.INT:
        if isinstance(raw, bool) or not isinstance(raw, int):
            raise DumpError(f"{what} is not an integer")
        return int(raw)
    if kind is Kind.STR:
        if not isinstance(raw, str):
            raise DumpError(f"{what} is not a string")
        return raw
    if kind is Kind.BYTES:
        if not isinstance(raw, str):
            raise DumpError(f"{what} is not a base64 octet string")
        try:
            return base64.b64decode(raw, validate=True)
        except (binascii.Error, ValueError):
            raise DumpError(f"{what} is not a base64 octet string") from None
    raise DumpError(f"{what}: unsupported type {typ!r}")


def to_dump(value: Any) -> Any:
    """A Matter value as python-matter-server writes it in a node dump."""
    if value is NullValue or value is None:
        return None
    if isinstance(value, bool):
        return value
    if isinstance(value, enum.Enum):
        return int(value.value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, str):
        return value
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, ClusterObject):
        return {str(f.Tag): to_dump(getattr(value, f.Label)) for f in value.descriptor.Fields
                if getattr(value, f.Label) is not None}
    if isinstance(value, (list, tuple)):
        return [to_dump(v) for v in value]
    if isinstance(value, dict):   # an Opaque value, already in the dump's form
        return {str(k): to_dump(v) for k, v in value.items()}
    raise TypeError(f"cannot write {type(value).__name__} into a node dump")


def same_value(a: Any, b: Any) -> bool:
    """Dump values equal as Matter values (floats compared as float32 when they are)."""
    if isinstance(a, float) or isinstance(b, float):
        if isinstance(a, bool) or isinstance(b, bool) or not isinstance(a, (int, float)) \
                or not isinstance(b, (int, float)):
            return False
        return a == b or math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-9)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_value(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


# ---- attribute descriptors for what chip does not describe --------------------------------
@dataclass(frozen=True)
class _FieldType:
    Type: Any


@dataclass(frozen=True)
class OpaqueAttribute:
    """Stands in for a chip attribute class (same fields the servers and the IM use)."""
    attribute_id: int
    attribute_type: _FieldType = _FieldType(Opaque)
    must_use_timed_write: bool = False


def opaque_name(attribute_id: int) -> str:
    return GLOBAL_IDS.get(attribute_id) or f"Attribute0x{attribute_id:04X}"


def _writable_ids(cluster_id: int) -> frozenset[int]:
    """Attribute ids the data model marks writable (CHIPClusters is generated from it)."""
    return _writable_table().get(cluster_id, frozenset())


@functools.cache
def _writable_table() -> dict[int, frozenset[int]]:
    """cluster id -> writable attribute ids, from the `ChipClusters` tables of
    home-assistant-chip-clusters' CHIPClusters.py. The file is read, not imported: importing
    it needs `chip.exceptions`, which only the CHIP SDK's controller (chip-core) ships, and the
    base install has the data model without the controller."""
    spec = importlib.util.find_spec("chip.clusters")
    assert spec is not None and spec.submodule_search_locations
    source = Path(next(iter(spec.submodule_search_locations)), "CHIPClusters.py").read_text()
    table: dict[int, frozenset[int]] = {}
    for cls in ast.parse(source).body:
        if not (isinstance(cls, ast.ClassDef) and cls.name == "ChipClusters"):
            continue
        for node in cls.body:
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict):
                try:
                    info = ast.literal_eval(node.value)
                except ValueError:   # not a literal table (the ctypes delegates)
                    continue
                if isinstance(info, dict) and "clusterId" in info:
                    table[info["clusterId"]] = frozenset(
                        a for a, meta in info.get("attributes", {}).items() if meta.get("writable"))
    return table


@dataclass
class ClusterShape:
    """One cluster of a product as its dump shows it."""
    cluster_id: int
    values: dict[int, Any]        # attribute id -> dump value (globals included)

    @property
    def feature_map(self) -> int:
        value = self.values.get(0xFFFC, 0)
        return value if isinstance(value, int) and not isinstance(value, bool) else 0


# ---- the mixin that gives a server the product's shape ------------------------------------
class ProductShapeMixin:
    """Makes a cluster server present a product's shape: the product's attribute set and
    global attributes, its values, and UNSUPPORTED_COMMAND for commands we do not model."""

    _shape: ClusterShape
    #: attribute name -> chip attribute class or OpaqueAttribute; empty until `_adopt`.
    _names: dict[str, Any] = {}

    def _adopt(self, shape: ClusterShape, own_writable: Iterable[str]) -> None:
        server: Any = self
        chip_cluster = ALL_CLUSTERS.get(shape.cluster_id)
        known = ALL_ATTRIBUTES.get(shape.cluster_id, {})
        self._shape = shape
        self._names = {}
        for attribute_id in sorted(shape.values):
            cls = known.get(attribute_id) if attribute_id not in GLOBAL_IDS else None
            name = cls.__name__ if cls is not None else opaque_name(attribute_id)
            self._names[name] = cls if cls is not None else OpaqueAttribute(attribute_id)
        stored = {}
        for name, cls in self._names.items():
            raw = shape.values[cls.attribute_id]
            if cls.attribute_id in GLOBAL_IDS:
                continue
            if isinstance(cls, OpaqueAttribute):
                stored[name] = raw
                continue
            try:
                stored[name] = from_dump(cls.attribute_type.Type, raw, f"{server.name}.{name}")
            except DumpError:   # a struct or value of another spec revision: kept as given
                self._names[name] = OpaqueAttribute(cls.attribute_id)
                stored[name] = raw
        server.attributes = tuple(n for n in self._names if n not in GLOBAL_IDS.values())
        for name, value in stored.items():
            server._values[name] = value
        writable = {cls.__name__ for cls in known.values() if cls.attribute_id in _writable_ids(shape.cluster_id)}
        server.writable = frozenset(n for n in server.attributes if not isinstance(self._names[n], OpaqueAttribute)
                                    and (n in set(own_writable) or n in writable))
        accepted = set(shape.values.get(0xFFF9) or [])
        commands = getattr(server, "commands", ())
        server.commands = tuple(n for n in commands if server.command_class(n).command_id in accepted)
        if chip_cluster is not None:
            server.revision = shape.values.get(0xFFFD, getattr(server, "revision", 1))
        server.feature_map = shape.feature_map

    # -- ClusterServer overrides
    def attribute_names(self) -> tuple[str, ...]:
        return tuple(self._names) if self._names else super().attribute_names()  # type: ignore[misc]

    def attribute_class(self, name: str) -> Any:  # type: ignore[override]
        try:
            return self._names[name]
        except KeyError:
            return getattr(self.cluster.Attributes, name)  # type: ignore[attr-defined]

    def read(self, attribute: str | int) -> Any:
        server: Any = self
        if not self._names:
            return super().read(attribute)  # type: ignore[misc]
        name = server.resolve_attribute(attribute)
        attribute_id = self._names[name].attribute_id
        if attribute_id in GLOBAL_IDS:
            return self._shape.values[attribute_id]
        return server.get(name)

    def validate_write(self, name: str, value: Any) -> None:
        # our server's rules, then the spec's ranges for the product's attributes it does not know
        super().validate_write(name, value)  # type: ignore[misc]
        check_attribute(self.name, name, value, self.get)  # type: ignore[attr-defined]

    def _coerce(self, name: str, data: Any) -> Any:
        if isinstance(self._names.get(name), OpaqueAttribute):
            return data
        return super()._coerce(name, data)  # type: ignore[misc]

    def state(self) -> dict[str, Any]:
        server: Any = self
        out = super().state()  # type: ignore[misc]
        out["attributes"] = {n: (v if isinstance(self._names.get(n), OpaqueAttribute) else out["attributes"][n])
                             for n, v in server._values.items()}
        return out


class AttributeStoreServer(ProductShapeMixin, ClusterServer):
    """A cluster we have no behaviour for: typed storage with the data model's access."""

    def defaults(self) -> dict[str, Any]:
        return {}

    def invoke(self, command: str | int, fields: Any = None) -> Any:
        raise MatterError(Status.UNSUPPORTED_COMMAND,
                          f"{self.name} command {command!r} is not modelled by this clone")

    def validate_write(self, name: str, value: Any) -> None:
        # The spec's ranges and lengths, which no server of ours knows for this cluster.
        check_attribute(self.name, name, value, self.get)


def limit_breaches(device: Any) -> list[str]:
    """The product's own values that break their spec constraint (kept as the product has
    them: real products deviate), one line each: in its attribute stores, and in our servers
    of a cloned lock or sensor, which keep the dump's values."""
    out = []
    for ep_id in sorted(device.endpoints):
        servers = device.endpoints[ep_id].servers
        for cluster_id in sorted(servers):
            server = servers[cluster_id]
            if isinstance(server, AttributeStoreServer):
                names = [n for n in server.attributes if not isinstance(server.attribute_class(n), OpaqueAttribute)]
            else:
                names = [n for cluster, n in ATTRIBUTE_LIMITS if cluster == server.name]
            for name in names:
                try:
                    check_attribute(server.name, name, server.get(name), server.get)
                except KeyError:     # an attribute this product does not have
                    continue
                except MatterError as exc:
                    out.append(f"endpoint {ep_id} {exc.message}")
    return out


class _VendorCluster:
    """Stands in for a chip cluster class for clusters chip does not know (vendor clusters)."""

    class Attributes:
        pass

    class Commands:
        pass


@functools.cache
def _store_class(cluster_id: int) -> type[AttributeStoreServer]:
    chip_cluster = ALL_CLUSTERS.get(cluster_id)
    if chip_cluster is None:
        chip_cluster = type(f"VendorCluster0x{cluster_id:08X}", (_VendorCluster,), {"id": cluster_id})
    return type(f"{chip_cluster.__name__}Store", (AttributeStoreServer,), {"cluster": chip_cluster})


def _concrete_servers() -> dict[int, type[ClusterServer]]:
    """Our server class for each cluster id (the first by name where several exist). A server
    built on another one (the bridge's BridgedDeviceBasicInformation mirrors a BasicInformation)
    cannot serve a product: not counted, so the answer does not depend on what was imported."""
    import_every_server()
    out: dict[int, type[ClusterServer]] = {}
    stack = list(ClusterServer.__subclasses__())
    found = []
    while stack:
        cls = stack.pop()
        stack.extend(cls.__subclasses__())
        if cls.__module__.startswith("clusters.") and not cls.__name__.startswith("_") \
                and "cluster" in vars(cls) and not issubclass(cls, ProductShapeMixin) and _standalone(cls):
            found.append(cls)
    for cls in sorted(found, key=lambda c: (c.__module__, c.__name__)):
        out.setdefault(cls.cluster.id, cls)
    return out


def _standalone(cls: type[ClusterServer]) -> bool:
    return all(p.default is not p.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
               for p in list(inspect.signature(cls.__init__).parameters.values())[1:])


#: Servers a clone never takes behaviour from: the Descriptor must show the product's
#: composition (its PartsList and TagList), not the one ours would derive. A cloned lock or
#: sensor is ours (users and credentials start empty, as a dump carries none; the home wires
#: its sensors as it wires ours, twin/sensors.py).
_NOT_REUSED = frozenset({Clusters.Descriptor.id})


def _options(cls: type[ClusterServer], shape: ClusterShape) -> dict[str, Any]:
    """Constructor options of our server for this product: each boolean option from the
    feature of that name (`lighting` <- Lighting, `dead_front` <- DeadFrontBehavior) or else
    from the attribute of that name being present (`start_up_mode` <- StartUpMode); `modes`
    from the product's SupportedModes (keeping our cycle for a mode number we know)."""
    features = getattr(getattr(cls.cluster, "Bitmaps", None), "Feature", None)
    known = ALL_ATTRIBUTES.get(shape.cluster_id, {})
    present = {known[a].__name__.lower() for a in shape.values if a in known}
    out: dict[str, Any] = {}
    for p in inspect.signature(cls.__init__).parameters.values():
        if p.name == "modes" and 0 in shape.values:
            out["modes"] = _modes(cls, shape.values[0])
        if p.name == "areas" and isinstance(shape.values.get(0), list):   # ServiceArea's SupportedAreas
            out["areas"] = _area_names(shape.values[0])
        if not isinstance(p.default, bool):
            continue
        wanted = p.name.replace("_", "").lower()
        for member in features or ():
            name = member.name[1:].lower() if member.name.startswith("k") else member.name.lower()
            if name == wanted or name.startswith(wanted):
                out[p.name] = bool(shape.feature_map & int(member))
                break
        else:
            if wanted in present:
                out[p.name] = True
    return out


def _modes(cls: type[ClusterServer], raw: Any) -> list[dict[str, Any]]:
    # Our cycles come from the mode table of ours the product's (mode, label) pairs fit best: a
    # dryer's Laundry Washer Mode modes take the dryer's cycles, not a washer's.
    entries = [e for e in raw if isinstance(e, dict)] if isinstance(raw, list) else []
    tables = [getattr(cls, "default_modes", ()), *getattr(cls, "other_modes", ())]
    table = max(tables, key=lambda t: sum((e.get("1"), e.get("0")) in {(m.mode, m.label) for m in t}
                                          for e in entries))
    ours = {m.mode: m.cycle for m in table}
    out = []
    for entry in raw if isinstance(raw, list) else []:
        if not isinstance(entry, dict):
            raise DumpError("SupportedModes holds a non-struct")
        tags = [t.get("1") for t in entry.get("2", []) if isinstance(t, dict)]
        out.append({"label": entry.get("0"), "mode": entry.get("1"), "tags": tags,
                    "cycle": ours.get(entry.get("1"))})
    return out


def _area_names(raw: list[Any]) -> list[str]:
    """Names our ServiceArea server starts from (the product's own SupportedAreas replace them):
    each area's locationName, else "Area <id>"."""
    out = []
    for entry in raw:
        info = entry.get("2") if isinstance(entry, dict) else None
        location = info.get("0") if isinstance(info, dict) else None
        name = location.get("0") if isinstance(location, dict) else None
        out.append(name if isinstance(name, str) and name and name not in out
                   else f"Area {entry.get('0') if isinstance(entry, dict) else len(out) + 1}")
    return out


@functools.cache
def _shaped(cls: type[ClusterServer]) -> type[ClusterServer]:
    return type(f"Cloned{cls.__name__}", (ProductShapeMixin, cls), {})


def _reproduces(server: ClusterServer, shape: ClusterShape) -> bool:
    """Whether the server reads back every one of the product's values (our behaviour may
    derive an attribute from state a dump does not carry: a power source, a cycle)."""
    for name in server.attribute_names():
        attribute_id = server.attribute_class(name).attribute_id
        try:
            value = to_dump(server.read(name))
        except (MatterError, TypeError):
            return False
        if not same_value(value, shape.values[attribute_id]):
            return False
    return True


def make_server(shape: ClusterShape, store_only: bool = False) -> ClusterServer:
    """The server for one cluster of a product: our behaviour where we have it and it
    reproduces the product's values, else a store of them."""
    ours = _concrete_servers().get(shape.cluster_id)
    if ours is not None and shape.cluster_id not in _NOT_REUSED and not store_only:
        try:
            server: Any = _shaped(ours)(**_options(ours, shape))
            server._adopt(shape, server.writable)
        except (MatterError, DumpError, TypeError, ValueError):
            server = None   # a configuration our server refuses: the product's values, stored
        if server is not None and _reproduces(server, shape):
            return server
    store = _store_class(shape.cluster_id)()
    store._adopt(shape, ())
    return store


# ---- dumps --------------------------------------------------------------------------------
def node_from(data: Any, node_id: int | None = None) -> dict[str, Any]:
    """The node dict of a dump: a node dump itself, Home Assistant's diagnostics
    (`data.node`) or a server dump (`data.server.nodes`, pick one with `node_id`)."""
    if not isinstance(data, dict):
        raise DumpError("expected a JSON object (a python-matter-server node, or HA diagnostics)")
    if isinstance(data.get("data"), dict):
        inner = data["data"]
        if isinstance(inner.get("node"), dict):
            data = inner["node"]
        elif isinstance(inner.get("server"), dict) and isinstance(inner["server"].get("nodes"), list):
            nodes = [n for n in inner["server"]["nodes"] if isinstance(n, dict)]
            if node_id is not None:
                nodes = [n for n in nodes if n.get("node_id") == node_id]
            if len(nodes) != 1:
                ids = ", ".join(str(n.get("node_id")) for n in inner["server"]["nodes"] if isinstance(n, dict))
                raise DumpError(f"the dump holds nodes {ids or 'none'}; name one with --node")
            data = nodes[0]
    attributes = data.get("attributes")
    if not isinstance(attributes, dict) or not attributes:
        raise DumpError("no 'attributes' object (keys 'endpoint/cluster/attribute') in the dump")
    return data


def parse_attributes(attributes: dict[str, Any]) -> dict[int, dict[int, ClusterShape]]:
    """endpoint -> cluster id -> shape, from a dump's attributes; DumpError on a bad key."""
    out: dict[int, dict[int, ClusterShape]] = {}
    for key, value in attributes.items():
        parts = str(key).split("/")
        if len(parts) != 3 or not all(p.isdigit() for p in parts):
            raise DumpError(f"attribute key {key!r} is not 'endpoint/cluster/attribute' in decimal")
        ep, cluster, attribute = (int(p) for p in parts)
        if ep > 0xFFFF or cluster > 0xFFFFFFFF or attribute > 0xFFFFFFFF:
            raise DumpError(f"attribute key {key!r} is out of range")
        shape = out.setdefault(ep, {}).setdefault(cluster, ClusterShape(cluster, {}))
        shape.values[attribute] = value
    if 0 not in out or Clusters.BasicInformation.id not in out[0]:
        raise DumpError("no BasicInformation on endpoint 0: not a whole node's dump")
    for ep, servers in out.items():
        if Clusters.Descriptor.id not in servers:
            raise DumpError(f"endpoint {ep} has no Descriptor")
    return out


def _device_types(shape: ClusterShape) -> list[tuple[int, int]]:
    raw = shape.values.get(Clusters.Descriptor.Attributes.DeviceTypeList.attribute_id) or []
    out = []
    for entry in raw if isinstance(raw, list) else []:
        if isinstance(entry, dict) and isinstance(entry.get("0"), int):
            out.append((int(entry["0"]), int(entry.get("1", 1))))
    return out


@dataclass(frozen=True)
class Product:
    """A product cloned from a node dump (the dump's attributes, parsed once)."""
    attributes: dict[str, Any]

    @functools.cached_property
    def shapes(self) -> dict[int, dict[int, ClusterShape]]:
        return parse_attributes(self.attributes)

    def value(self, endpoint: int, cluster: Any, attribute: Any) -> Any:
        return self.attributes.get(f"{endpoint}/{cluster.id}/{attribute.attribute_id}")

    @property
    def label(self) -> str:
        BI = Clusters.BasicInformation
        vendor = self.value(0, BI, BI.Attributes.VendorName) or ""
        product = self.value(0, BI, BI.Attributes.ProductName) or "product"
        return f"{vendor} {product}".strip()

    @functools.cached_property
    def stored(self) -> frozenset[tuple[int, int]]:
        """(endpoint, cluster) served as stores although we have a server: ours, composed
        with its siblings, derives a value the product does not have (a mode's cycle, a
        power source). Found once by composing the product until every server reproduces it."""
        stored: set[tuple[int, int]] = set()
        for _ in range(8):
            try:
                probe = Device("probe", DeviceType("probe", "probe", 0, 1, self._build_with(stored)),
                               self._build_with(stored)(), self._root_with(stored)(None))
            except (AttributeError, TypeError, MatterError):
                # Our servers expect their own siblings: an endpoint with a store is all stores.
                endpoints = {ep for ep, _ in stored}
                widened = {(ep, cid) for ep in endpoints for cid in self.shapes[ep]}
                if not stored or widened == stored:
                    raise DumpError("our servers cannot be composed as this product is") from None
                stored = widened
                continue
            wrong = {(ep.id, server.id) for ep in probe.endpoints.values() for server in ep.servers.values()
                     if not isinstance(server, AttributeStoreServer)
                     and not _reproduces(server, self.shapes[ep.id][server.id])}
            if not wrong:
                return frozenset(stored)
            stored |= wrong
        raise DumpError("the product's clusters cannot be composed consistently")

    def _build_with(self, stored: set[tuple[int, int]] | frozenset[tuple[int, int]]) -> Any:
        def build(**_: Any) -> list[Endpoint]:
            out = []
            for ep_id in sorted(self.shapes):
                if ep_id == 0:
                    continue
                shapes = self.shapes[ep_id]
                endpoint = Endpoint(ep_id, _device_types(shapes[Clusters.Descriptor.id]))
                for cluster_id in sorted(shapes):
                    endpoint.add(_fresh(shapes[cluster_id], (ep_id, cluster_id) in stored))
                out.append(endpoint)
            return out
        return build

    def _root_with(self, stored: set[tuple[int, int]] | frozenset[tuple[int, int]]) -> Any:
        def root(node_label: str | None = None) -> list[ClusterServer]:
            servers = [_fresh(shape, (0, cid) in stored) for cid, shape in sorted(self.shapes[0].items())]
            if node_label is not None:
                for server in servers:
                    if server.id == Clusters.BasicInformation.id:
                        server.set("NodeLabel", node_label[:32])
            return servers
        return root

    def build(self, **_: Any) -> list[Endpoint]:
        """The product's application endpoints (a new set of servers each call)."""
        return self._build_with(self.stored)()

    def root_servers(self, node_label: str | None = None) -> list[ClusterServer]:
        """Endpoint 0's servers; a home's device name becomes the NodeLabel."""
        return self._root_with(self.stored)(node_label)


def _fresh(shape: ClusterShape, store_only: bool) -> ClusterServer:
    # Each device gets its own values: the shape's dict is shared, never mutated.
    return make_server(ClusterShape(shape.cluster_id, dict(shape.values)), store_only)


def load_product(data: Any, what: str = "dump", node_id: int | None = None) -> Product:
    """A Product from dump JSON; DumpError (one line, naming `what`) if it is unusable."""
    try:
        node = node_from(data, node_id)
        product = Product(dict(node["attributes"]))
        _ = product.stored         # every cluster must be servable: fail now, not at run time
    except DumpError as exc:
        raise DumpError(f"{what}: {exc}") from None
    except MatterError as exc:
        raise DumpError(f"{what}: {exc}") from None
    return product


def product_type(key: str, product: Product, product_id: int | None = None) -> DeviceType:
    """A device type (usable like the built-in ones) whose devices are clones of `product`."""
    BI = Clusters.BasicInformation
    main = next((dt for ep in sorted(product.shapes) if ep != 0
                 for dt in _device_types(product.shapes[ep][Clusters.Descriptor.id])), (0, 1))
    pid = product.value(0, BI, BI.Attributes.ProductID)
    vendor = product.value(0, BI, BI.Attributes.VendorName)
    return DeviceType(key, product.label, main[0], main[1], product.build,
                      vendor_name=vendor if isinstance(vendor, str) else "",
                      product_id=product_id if product_id is not None else (pid if isinstance(pid, int) else 0),
                      root=product.root_servers)


def product_of(device_type: DeviceType) -> Product:
    """The product a cloned device type was made from."""
    product = getattr(device_type.build, "__self__", None)
    if not isinstance(product, Product):
        raise ValueError(f"{device_type.key} is not a cloned product")
    return product


# ---- export -------------------------------------------------------------------------------
def export_attributes(device: Any) -> dict[str, Any]:
    """Every attribute of a device in the dump's format ("ep/cluster/attr" -> value)."""
    out: dict[str, Any] = {}
    for ep_id in sorted(device.endpoints):
        servers = device.endpoints[ep_id].servers
        for cluster_id in sorted(servers):
            server = servers[cluster_id]
            for name in server.attribute_names():
                attribute_id = server.attribute_class(name).attribute_id
                try:
                    value = server.read(name)
                except MatterError:
                    continue   # the node would answer an error status: no value to dump
                out[f"{ep_id}/{cluster_id}/{attribute_id}"] = to_dump(value)
    return dict(sorted(out.items(), key=lambda kv: tuple(int(p) for p in kv[0].split("/"))))


def comparable(attributes: dict[str, Any]) -> dict[str, Any]:
    """The attributes a round trip must keep: all but those of session_clusters() and per_reader()."""
    def kept(key: str) -> bool:
        _, cluster, attribute = (int(p) for p in key.split("/"))
        return cluster not in session_clusters() and (cluster, attribute) not in per_reader()
    return {k: v for k, v in attributes.items() if kept(k)}


def differences(expected: dict[str, Any], actual: dict[str, Any]) -> list[str]:
    """Human lines naming each comparable attribute that differs, is missing or is extra."""
    a, b = comparable(expected), comparable(actual)
    out = []
    for key in sorted(set(a) | set(b), key=lambda k: tuple(int(p) for p in k.split("/"))):
        if key not in b:
            out.append(f"{key}: missing (expected {a[key]!r})")
        elif key not in a:
            out.append(f"{key}: extra ({b[key]!r})")
        elif not same_value(a[key], b[key]):
            out.append(f"{key}: {b[key]!r}, expected {a[key]!r}")
    return out


def read_dump(path: str, node_id: int | None = None) -> Product:
    """A Product from a dump file; DumpError (one line naming the file) if unusable."""
    import json  # noqa: PLC0415
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except OSError as exc:
        raise DumpError(f"{path}: cannot read: {exc.strerror}") from None
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise DumpError(f"{path}: not JSON ({exc})") from None
    return load_product(data, path, node_id)
