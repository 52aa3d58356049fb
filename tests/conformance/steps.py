"""Steps the application-cluster test cases share, written against `Dut`.

Most clusters' TC_X_1_1 ("global attributes") and TC_X_2_1 ("attributes with server as DUT") are
the same procedure over a different table: the cluster's revision, its features, and the
conformance of each attribute and command (the spec's "M", "O", "LT", "[!OFFONLY]", "X", ...).
`ClusterSpec` holds that table; `check_global_attributes` and `check_attributes` are the plans'
steps over it.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from chip.clusters import Objects as C
from chip.clusters.Types import NullValue
from dut import Dut

#: AttributeList always holds the global attributes (EventList is not served: Matter 1.4 made it
#: provisional and the SDK leaves it out).
GLOBAL_ATTRIBUTES = {0xFFF8, 0xFFF9, 0xFFFB, 0xFFFC, 0xFFFD}

#: `serving(..., kinds=IN_PROCESS)`: test cases not yet run over the network (their waits are
#: minutes of device time, virtual in process but real over the network).
IN_PROCESS = ("inprocess",)

MANDATORY, OPTIONAL, DISALLOWED = "mandatory", "optional", "disallowed"

_TOKEN = re.compile(r"\s*([A-Za-z][A-Za-z0-9_.+]*|[!|&()\[\],])")


def conformance(expression: str, features: set[str]) -> str:
    """MANDATORY / OPTIONAL / DISALLOWED for a spec conformance expression, given the served
    feature codes: `M`, `O`, `X`, `P` (provisional: optional), `desc`, `O.a+` (choice: optional),
    a feature expression (`LT`, `!OFFONLY`, `A | B`, `A & B`), `[expr]` (optional when true),
    and `expr, otherwise` lists (the first that applies)."""
    for part in _split_top(expression):
        part = part.strip()
        if part in ("M",):
            return MANDATORY
        if part in ("O", "P", "desc") or part.startswith("O."):
            return OPTIONAL
        if part in ("X", "D"):
            return DISALLOWED
        if part.startswith("[") and part.endswith("]"):
            if _evaluate(part[1:-1], features):
                return OPTIONAL
            continue
        if _evaluate(part, features):
            return MANDATORY
    return DISALLOWED


def _split_top(expression: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(expression):
        depth += ch in "([" and 1 or ch in ")]" and -1 or 0
        if ch == "," and depth == 0:
            parts.append(expression[start:i])
            start = i + 1
    return [*parts, expression[start:]]


def _evaluate(expression: str, features: set[str]) -> bool:
    python = []
    for token in _TOKEN.findall(expression):
        python.append({"!": " not ", "|": " or ", "&": " and ", "(": "(", ")": ")"}.get(token)
                      or str(token in features))
    return bool(eval("".join(python)))   # noqa: S307 (only True/False/not/or/and/parentheses)


@dataclass
class ClusterSpec:
    """One cluster as the spec defines it (the parts the _1_1 / _2_1 test cases check)."""
    cluster: Any                          # the Objects cluster class
    revisions: Iterable[int]              # the ClusterRevision values the plans accept
    features: dict[str, int] = field(default_factory=dict)       # feature code -> FeatureMap bit
    #: feature code -> its own conformance when not plain optional (OnOff's OFFONLY: `[!(LT | DF)]`)
    feature_rules: dict[str, str] = field(default_factory=dict)
    attributes: dict[str, str] = field(default_factory=dict)     # Objects attribute name -> conformance
    accepted: dict[str, str] = field(default_factory=dict)       # client->server command -> conformance
    generated: dict[str, str] = field(default_factory=dict)      # server->client command -> conformance
    #: Objects attribute name -> check of its value (given all the cluster's values); the _2_1 steps.
    constraints: dict[str, Callable[[Any, dict[str, Any]], bool]] = field(default_factory=dict)

    def served_features(self, feature_map: int) -> set[str]:
        return {code for code, bit in self.features.items() if feature_map >> bit & 1}

    def ids(self, table: dict[str, str], kind: str, features: set[str]) -> tuple[set[int], set[int]]:
        """(mandatory ids, allowed ids) of `table` (kind "Attributes" or "Commands")."""
        mandatory, allowed = set(), set()
        for name, expression in table.items():
            item = getattr(getattr(self.cluster, kind), name)
            item_id = item.attribute_id if kind == "Attributes" else item.command_id
            verdict = conformance(expression, features)
            if verdict != DISALLOWED:
                allowed.add(item_id)
            if verdict == MANDATORY:
                mandatory.add(item_id)
        return mandatory, allowed


def endpoints_with(dut: Dut, cluster: Any) -> list[int]:
    """The endpoints whose Descriptor ServerList holds `cluster` (what every TC step 0 picks)."""
    servers = getattr(dut, "_servers_by_endpoint", None)   # the composition is fixed during a test
    if servers is None:
        servers = {ep: dut.read(ep, C.Descriptor.Attributes.ServerList) for ep in dut.endpoints()}
        dut._servers_by_endpoint = servers   # type: ignore[attr-defined]
    found = [ep for ep, served in servers.items() if cluster.id in served]
    assert found, f"{dut.name} serves no {cluster.__name__}"
    return found


def _standard(ids: Iterable[int], top: int) -> set[int]:
    """The ids in the standard range (manufacturer-specific ones are ignored by the plans)."""
    return {i for i in ids if i >> 16 == 0 and i <= top}


def check_global_attributes(dut: Dut, spec: ClusterSpec) -> None:
    """TC_X_1_1 on every endpoint of `dut` serving the cluster."""
    for endpoint in endpoints_with(dut, spec.cluster):
        where = f"{dut.name} ep{endpoint} {spec.cluster.__name__}"
        attrs = spec.cluster.Attributes
        revision = dut.read(endpoint, attrs.ClusterRevision)
        assert revision in set(spec.revisions), f"{where}: ClusterRevision {revision}"
        feature_map = dut.read(endpoint, attrs.FeatureMap)
        known = sum(1 << bit for bit in spec.features.values())
        assert feature_map & ~known == 0, f"{where}: FeatureMap 0x{feature_map:X} has undefined bits"
        features = spec.served_features(feature_map)
        for code in features:   # a served feature must itself be allowed by the others
            rule = spec.feature_rules.get(code, "O")
            assert conformance(rule, features) != DISALLOWED, f"{where}: feature {code} with {sorted(features)}"

        attribute_list = set(dut.read(endpoint, attrs.AttributeList))
        mandatory, allowed = spec.ids(spec.attributes, "Attributes", features)
        assert GLOBAL_ATTRIBUTES | mandatory <= attribute_list, \
            f"{where}: AttributeList misses {sorted(GLOBAL_ATTRIBUTES | mandatory - attribute_list)}"
        extra = _standard(attribute_list, 0xFFFE) - GLOBAL_ATTRIBUTES - {0xFFFA} - allowed
        assert not extra, f"{where}: AttributeList has attributes not allowed: {sorted(extra)}"
        assert not [i for i in attribute_list if 0x5000 <= i & 0xFFFF <= 0xEFFF], f"{where}: test-vendor ids"

        # Command conformance may name other commands ("Pause": "Resume, O"): the served ones count.
        accepted_ids = set(dut.read(endpoint, attrs.AcceptedCommandList))
        names = features | {name for name in spec.accepted
                            if getattr(spec.cluster.Commands, name).command_id in accepted_ids}
        for kind, table, attribute in (("accepted", spec.accepted, attrs.AcceptedCommandList),
                                       ("generated", spec.generated, attrs.GeneratedCommandList)):
            served = set(dut.read(endpoint, attribute))
            mandatory, allowed = spec.ids(table, "Commands", names)
            assert mandatory <= served, f"{where}: {kind} commands miss {sorted(mandatory - served)}"
            assert not _standard(served, 0xFF) - allowed, \
                f"{where}: {kind} commands not allowed: {sorted(_standard(served, 0xFF) - allowed)}"
            assert not [i for i in served if i & 0xFFFF > 0xFF], f"{where}: {kind} command ids out of range"


def check_attributes(dut: Dut, spec: ClusterSpec) -> dict[int, dict[str, Any]]:
    """TC_X_2_1 on every endpoint serving the cluster: every served attribute reads as its type
    (the decoding checks it) and meets its constraint. Returns {endpoint: values} for more checks."""
    out = {}
    for endpoint in endpoints_with(dut, spec.cluster):
        values = dut.read_cluster(endpoint, spec.cluster)
        for name in values:
            assert not name.startswith("0x"), f"{dut.name} ep{endpoint}: unknown attribute {name}"
        for name, check in spec.constraints.items():
            if name in values:
                assert check(values[name], values), \
                    f"{dut.name} ep{endpoint} {spec.cluster.__name__}.{name} = {values[name]!r}"
        out[endpoint] = values
    return out


# ---- constraint helpers (the spec's "min", "max", "a to b", nullable "X") ----------------------
def between(low: Any, high: Any, nullable: bool = False) -> Callable[[Any, dict[str, Any]], bool]:
    """`low to high`; either bound may be an attribute name of the same cluster."""
    def check(value: Any, values: dict[str, Any]) -> bool:
        if value == NullValue:
            return nullable
        lo = values.get(low, 0) if isinstance(low, str) else low
        hi = values.get(high, value) if isinstance(high, str) else high
        lo = 0 if lo == NullValue else lo
        hi = value if hi == NullValue else hi
        return lo <= value <= hi
    return check


def at_most(high: Any, nullable: bool = False) -> Callable[[Any, dict[str, Any]], bool]:
    return between(0, high, nullable)


def at_least(low: Any, nullable: bool = False) -> Callable[[Any, dict[str, Any]], bool]:
    return between(low, 2**64, nullable)


def one_of(*allowed: Any) -> Callable[[Any, dict[str, Any]], bool]:
    return lambda value, values: value in allowed


def list_of(size: int) -> Callable[[Any, dict[str, Any]], bool]:
    return lambda value, values: isinstance(value, list) and len(value) <= size


def scene_round_trip(dut, cluster, attribute, low, high, set_value) -> int:
    """The _Scenes Management Cluster Interaction_ steps (TC_OO_2_7, TC_LVL_9_1) on every endpoint
    serving both `cluster` and Scenes Management: store a scene at `low`, move to `high`, recall it:
    the attribute is back at `low`; a scene added with the value in its extension field set
    recalls it too. Returns how many endpoints it checked."""
    S, G = C.ScenesManagement, C.Groups
    checked = 0
    servers = {ep: dut.read(ep, C.Descriptor.Attributes.ServerList) for ep in dut.endpoints()}
    for endpoint in [ep for ep, ids in servers.items() if {cluster.id, S.id} <= set(ids)]:
        dut.invoke(endpoint, G.Commands.AddGroup(groupID=0x0101, groupName="Scene test"))
        set_value(endpoint, low)
        assert dut.invoke(endpoint, S.Commands.StoreScene(groupID=0x0101, sceneID=1)).status == 0
        set_value(endpoint, high)
        assert dut.read(endpoint, attribute) == high
        dut.invoke(endpoint, S.Commands.RecallScene(groupID=0x0101, sceneID=1))
        dut.wait(1)
        assert dut.read(endpoint, attribute) == low
        pair = S.Structs.AttributeValuePairStruct(attributeID=attribute.attribute_id, valueUnsigned8=int(high))
        added = dut.invoke(endpoint, S.Commands.AddScene(
            groupID=0x0101, sceneID=2, transitionTime=0, sceneName="High",
            extensionFieldSets=[S.Structs.ExtensionFieldSet(clusterID=cluster.id, attributeValueList=[pair])]))
        assert added.status == 0
        dut.invoke(endpoint, S.Commands.RecallScene(groupID=0x0101, sceneID=2))
        dut.wait(1)
        assert dut.read(endpoint, attribute) == high
        dut.invoke(endpoint, S.Commands.RemoveAllScenes(groupID=0x0101))
        dut.invoke(endpoint, G.Commands.RemoveGroup(groupID=0x0101))
        checked += 1
    return checked
