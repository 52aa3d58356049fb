"""TC_DESC: the Descriptor cluster (test plan "Descriptor Cluster Test Plan"), on every endpoint
of one device of each type and of the bridge, in process and over the network."""
from __future__ import annotations

from chip.clusters import Objects as C
from chip.clusters.ClusterObjects import ALL_CLUSTERS
from composition import AGGREGATOR, BRIDGED_NODE, ROOT_NODE, read_composition
from dut import Dut

NOT_APPLICABLE: dict[str, str] = {}
TAG_LIST = int(C.Descriptor.Bitmaps.Feature.kTagList)


def test_TC_DESC_1_1(dut: Dut):
    """Global attributes of the Descriptor on every endpoint: revision, FeatureMap (TagList only),
    AttributeList (the four mandatory attributes, TagList exactly with its feature), no commands."""
    for ep in dut.endpoints():
        d = dut.read_cluster(ep, C.Descriptor)
        assert d["ClusterRevision"] >= 2, (ep, d["ClusterRevision"])    # rev 2 added TagList (1.1)
        assert d["FeatureMap"] & ~TAG_LIST == 0, (ep, d["FeatureMap"])
        listed = set(d["AttributeList"])
        assert {0, 1, 2, 3, 0xFFF8, 0xFFF9, 0xFFFB, 0xFFFC, 0xFFFD} <= listed, (ep, sorted(listed))
        assert (4 in listed) == bool(d["FeatureMap"] & TAG_LIST), (ep, sorted(listed))
        assert d["AcceptedCommandList"] == [] and d["GeneratedCommandList"] == []


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


def test_TC_DESC_2_2(dut: Dut):
    """Semantic tags: an endpoint with the TagList feature has a non-empty TagList without
    duplicates; endpoints of one device type within a composed device (a tree below a
    non-aggregator endpoint) carry the feature and differ by their tags."""
    composition = read_composition(dut)
    tags = {}
    for ep in composition.endpoints:
        descriptor = composition.clusters[ep][C.Descriptor.id]
        has_feature = bool(descriptor[0xFFFC] & TAG_LIST)
        tag_list = descriptor.get(C.Descriptor.Attributes.TagList.attribute_id)
        assert has_feature == (tag_list is not None), f"endpoint {ep}: feature and attribute disagree"
        if has_feature:
            assert tag_list, f"endpoint {ep}: empty TagList"
            keys = [(t.mfgCode, t.namespaceID, t.tag, t.label) for t in tag_list]
            assert len(set(keys)) == len(keys), f"endpoint {ep}: duplicate tags {keys}"
            tags[ep] = sorted(map(str, keys))
    for root in composition.endpoints[1:]:
        if AGGREGATOR in composition.device_types(root) or not composition.parts(root):
            continue
        tree = [root, *composition.parts(root)]
        for device_type in {t for ep in tree for t in composition.device_types(ep)}:
            alike = [ep for ep in tree if device_type in composition.device_types(ep)]
            if len(alike) < 2:
                continue
            missing = [ep for ep in alike if ep not in tags]
            assert not missing, f"endpoints {alike} share device type 0x{device_type:04X}; {missing} have no tags"
            values = [tuple(tags[ep]) for ep in alike]
            assert len(set(values)) == len(values), f"endpoints {alike} share device type and tags"
