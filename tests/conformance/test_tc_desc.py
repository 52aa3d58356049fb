"""TC_DESC: the Descriptor cluster (test plan "Descriptor Cluster Test Plan"), on every endpoint
of one device of each type and of the bridge, in process and over the network."""
from __future__ import annotations

from chip.clusters import Objects as C
from chip.clusters.ClusterObjects import ALL_CLUSTERS
from dut import Dut

NOT_APPLICABLE: dict[str, str] = {}

ROOT_NODE = 0x0016
AGGREGATOR = 0x000E
BRIDGED_NODE = 0x0013


def test_TC_DESC_2_1(dut: Dut):
    """Attributes of the Descriptor cluster on every endpoint: DeviceTypeList, ServerList,
    ClientList and PartsList are well formed and agree with each other."""
    endpoints = dut.endpoints()
    assert endpoints[0] == 0 and len(set(endpoints)) == len(endpoints), endpoints
    parts_of: dict[int, list[int]] = {}
    for ep in endpoints:
        d = dut.read_cluster(ep, C.Descriptor)
        types = d["DeviceTypeList"]
        assert types, f"endpoint {ep}: empty DeviceTypeList"
        ids = [t.deviceType for t in types]
        assert len(set(ids)) == len(ids), f"endpoint {ep}: duplicate device types {ids}"
        assert all(t.revision >= 1 for t in types), (ep, types)
        assert (ROOT_NODE in ids) == (ep == 0), f"endpoint {ep}: Root Node type {ids}"
        servers = d["ServerList"]
        assert C.Descriptor.id in servers and len(set(servers)) == len(servers), (ep, servers)
        assert all(0 <= s <= 0x7FFF or (s >> 16) in range(0xFFF1, 0xFFF5) for s in servers), (ep, servers)
        assert len(set(d["ClientList"])) == len(d["ClientList"]), (ep, d["ClientList"])
        parts = d["PartsList"]
        assert ep not in parts and len(set(parts)) == len(parts), (ep, parts)
        assert set(parts) <= set(endpoints), f"endpoint {ep}: parts {parts} not on the node"
        parts_of[ep] = parts
        # Every cluster the endpoint lists is served: its ClusterRevision reads.
        for cluster_id in servers:
            if cluster_id in ALL_CLUSTERS:
                assert dut.read(ep, ALL_CLUSTERS[cluster_id].Attributes.ClusterRevision) >= 1
    # Endpoint 0 lists every other endpoint; every endpoint is a part of the root.
    assert sorted(parts_of[0]) == sorted(endpoints[1:])
    # An aggregator lists its bridged endpoints, which carry the Bridged Node type.
    for ep, parts in parts_of.items():
        types = [t.deviceType for t in dut.read(ep, C.Descriptor.Attributes.DeviceTypeList)]
        if AGGREGATOR in types:
            assert parts, "an Aggregator without bridged endpoints"
            children = set(parts) - {q for p in parts for q in parts_of[p]}
            for child in children:
                child_types = [t.deviceType for t in dut.read(child, C.Descriptor.Attributes.DeviceTypeList)]
                assert BRIDGED_NODE in child_types, (child, child_types)
