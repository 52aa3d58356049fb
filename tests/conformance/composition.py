"""A device's whole data model as the test cases see it: every endpoint, every server cluster it
lists, every attribute the cluster serves (a wildcard read per cluster), by ids."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from chip.clusters import Objects as C
from chip.clusters.ClusterObjects import ALL_CLUSTERS
from dut import Dut

ROOT_NODE = 0x0016
AGGREGATOR = 0x000E
BRIDGED_NODE = 0x0013
GLOBAL_ATTRIBUTES = {"GeneratedCommandList": 0xFFF8, "AcceptedCommandList": 0xFFF9, "EventList": 0xFFFA,
                     "AttributeList": 0xFFFB, "FeatureMap": 0xFFFC, "ClusterRevision": 0xFFFD}


@dataclass
class Composition:
    """{endpoint: {cluster id: {attribute id: value}}} and the Descriptor of each endpoint."""
    clusters: dict[int, dict[int, dict[int, Any]]]

    @property
    def endpoints(self) -> list[int]:
        return sorted(self.clusters)

    def descriptor(self, endpoint: int, name: str) -> Any:
        return self.clusters[endpoint][C.Descriptor.id][getattr(C.Descriptor.Attributes, name).attribute_id]

    def device_types(self, endpoint: int) -> list[int]:
        return [t.deviceType for t in self.descriptor(endpoint, "DeviceTypeList")]

    def parts(self, endpoint: int) -> list[int]:
        return list(self.descriptor(endpoint, "PartsList"))

    def children(self, endpoint: int) -> set[int]:
        """The direct children of an endpoint: its parts that are no part of another of its parts."""
        parts = set(self.parts(endpoint))
        return parts - {q for p in parts for q in self.parts(p)}

    def features(self, endpoint: int, cluster_id: int) -> int:
        return self.clusters[endpoint][cluster_id][GLOBAL_ATTRIBUTES["FeatureMap"]]


def attribute_ids(cluster: Any) -> dict[str, int]:
    return {name: getattr(cluster.Attributes, name).attribute_id for name in dir(cluster.Attributes)
            if hasattr(getattr(cluster.Attributes, name), "attribute_id")}


def read_composition(dut: Dut) -> Composition:
    """In process, a read of each served cluster; over the network one wildcard read of the
    node, once per session (the structure does not change; values that move are not compared)."""
    lab = getattr(dut, "lab", None)
    if lab is not None:
        if dut.node_id not in lab.compositions:      # type: ignore[attr-defined]
            node = dut.read_node()                   # type: ignore[attr-defined]
            lab.compositions[dut.node_id] = Composition(   # type: ignore[attr-defined]
                {ep: {cid: attrs for cid, attrs in clusters.items() if cid in ALL_CLUSTERS}
                 for ep, clusters in node.items()})
        return lab.compositions[dut.node_id]         # type: ignore[attr-defined]
    clusters: dict[int, dict[int, dict[int, Any]]] = {}
    for endpoint in dut.endpoints():
        servers = dut.read(endpoint, C.Descriptor.Attributes.ServerList)
        clusters[endpoint] = {}
        for cluster_id in servers:
            cluster = ALL_CLUSTERS.get(cluster_id)
            if cluster is None:
                continue        # a manufacturer cluster: not ours to check
            ids = attribute_ids(cluster)
            values = dut.read_cluster(endpoint, cluster)
            clusters[endpoint][cluster_id] = {ids[name]: value for name, value in values.items()}
    return Composition(clusters)
