"""python-matter-server's values and names as the tools show them.

The server speaks TLV-decoded JSON (structs keyed by tag or field name, bytes in base64);
the tools speak `clusters.values.to_json` shapes with spec names. This module converts
between the two and names clusters, attributes, commands and device types from
`chip.clusters.Objects`, with what only our cluster servers know (spec writability, the
twin's attribute order) filled in. No IO.
"""
from __future__ import annotations

import base64
import functools
import re
from collections.abc import Callable
from typing import Any

from chip.clusters import Objects as Clusters
from chip.clusters.ClusterObjects import ALL_ATTRIBUTES, ALL_CLUSTERS, ClusterObject
from chip.clusters.Types import NullValue

from bridge.backend import ToolError
from clusters.devices import DEVICE_TYPES, create_device
from clusters.value_types import Kind, shape
from clusters.values import to_json, type_name

DESCRIPTOR = 0x001D
BASIC_INFORMATION = 0x0028
BRIDGED_BASIC_INFORMATION = 0x0039
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
#: One read gives the whole composition: Descriptor lists, global attributes, identity (the
#: node's VendorName and ProductID; a bridged device's VendorName and ProductName).
LAYOUT_PATHS = ["*/29/0", "*/29/1", "*/29/3", "*/*/65529", "*/*/65531", "*/*/65532",
                "*/*/65533", "0/40/1", "0/40/4", "*/57/1", "*/57/3"]



# ---- values: python-matter-server's wire JSON <-> the tools' JSON ------------------------

def wire_to_json(typ: Any, raw: Any) -> Any:
    """A value as python-matter-server sends it (TLV-decoded: structs keyed by tag or by
    field name, bytes in base64) as `clusters.values.to_json` would give it."""
    if raw is None:
        return None
    s = shape(typ)
    if s.is_union and len(s.options) != 1:
        return raw
    kind, typ = s.kind, s.typ
    if kind is Kind.LIST:
        return [wire_to_json(s.item, v) for v in raw] if isinstance(raw, list) else raw
    if kind is Kind.STRUCT and isinstance(raw, dict):
        out = {}
        for field in typ.descriptor.Fields:
            for key in (str(field.Tag), field.Tag, field.Label):
                if key in raw:
                    out[field.Label] = wire_to_json(field.Type, raw[key])
                    break
        return out
    if kind is Kind.BYTES and isinstance(raw, str):
        try:
            return base64.b64decode(raw).hex()
        except ValueError:
            return raw
    if kind is Kind.BOOL:
        return bool(raw)
    if kind in (Kind.FLOAT32, Kind.FLOAT) and isinstance(raw, (int, float)):
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
def known_servers() -> dict[tuple[int, int | None], Any]:
    """(cluster id, feature map) and (cluster id, None) -> one of our ClusterServer instances
    (spec writability and the order in which the twin lists attributes and commands). The
    feature map matters: OnOff with Lighting has writable OnTime, without it no OnTime."""
    out: dict[tuple[int, int | None], Any] = {}
    for key in sorted(DEVICE_TYPES):
        for server in create_device(key, key).servers():
            out.setdefault((server.id, server.feature_map), server)
            out.setdefault((server.id, None), server)
    return out


def known_server(cluster_id: int, feature_map: int | None = None) -> Any:
    known = known_servers()
    return known.get((cluster_id, feature_map)) or known.get((cluster_id, None))


def ordered(ids: list[int], names: Callable[[int], str], preferred: tuple[str, ...]) -> list[int]:
    rank = {n: i for i, n in enumerate(preferred)}
    return sorted(ids, key=lambda i: (rank.get(names(i), len(rank)), i))


def attribute_name(cluster_id: int, attribute_id: int) -> str:
    cls = ALL_ATTRIBUTES.get(cluster_id, {}).get(attribute_id)
    if cls is None:
        return GLOBAL_IDS.get(attribute_id, f"0x{attribute_id:04X}")
    return str(cls.__name__)


def attribute_type(cluster_id: int, attribute_id: int) -> Any:
    cls = ALL_ATTRIBUTES.get(cluster_id, {}).get(attribute_id)
    return cls.attribute_type.Type if cls is not None else Any


def cluster_name(cluster_id: int) -> str:
    cls = ALL_CLUSTERS.get(cluster_id)
    return cls.__name__ if cls is not None else f"0x{cluster_id:04X}"


def command_class(cluster_id: int, command_id: int) -> Any:
    cluster = ALL_CLUSTERS.get(cluster_id)
    commands = getattr(cluster, "Commands", None)
    for name in dir(commands) if commands is not None else ():
        cls = getattr(commands, name)
        if (isinstance(cls, type) and getattr(cls, "command_id", None) == command_id
                and getattr(cls, "is_client", False)):
            return cls
    return None


@functools.cache
def device_type_names() -> dict[int, str]:
    from matter_server.client.models.device_types import ALL_TYPES
    return {dt: cls.__name__ for dt, cls in ALL_TYPES.items()}


def type_key(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


def type_label(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name)


def shown_type_name(typ: Any) -> str:
    return "unknown (not in this data model)" if typ is Any else type_name(typ)


def decode(cid: int, aid: int, raw: Any, what: str, strict: bool = True) -> Any:
    if isinstance(raw, dict) and "TLVValue" in raw:  # the SDK could not decode it
        if strict:
            raise ToolError("FAILURE", f"{what}: the node's value could not be decoded")
        return None
    if aid in GLOBAL_IDS:
        return raw
    if cid == DESCRIPTOR and aid == 1 and isinstance(raw, list):  # as get_device_structure shows it
        return [c for c in raw if c not in NODE_MANAGEMENT]
    return wire_to_json(attribute_type(cid, aid), raw)
