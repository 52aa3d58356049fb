"""Spec constraints on the attribute stores of cloned products (clusters.constraints.ATTRIBUTE_LIMITS).

Our table is held to the spec's data model (matter.js's model, read at test time by
tests/conformance/spec_model.py; the test fails where it is not installed), and each kind of
constraint is tried on a hand-written product over the tool API and over the Interaction Model.
"""
from __future__ import annotations

import base64
import json
import re
from typing import Any

import pytest
from chip.clusters import Objects as C
from chip.clusters.ClusterObjects import ALL_ATTRIBUTES, ALL_CLUSTERS
from chip.clusters.Types import NullValue
from dut import DutStatusError
from inprocess import InProcessDut
from spec_model import model
from test_clone import PLUG, _cluster, _descriptor, _hand_written
from typer.testing import CliRunner

from bridge.tools import Session, call_tool
from bridge.twin_backend import TwinBackend
from clusters.clone import (
    AttributeStoreServer,
    _concrete_servers,
    _writable_ids,
    export_attributes,
    limit_breaches,
    load_product,
    product_type,
)
from clusters.constraints import ATTRIBUTE_LIMITS, RANGES, Limit, Ref
from clusters.devices import create_device
from clusters.status import MatterError, Status
from clusters.value_types import Kind, shape
from matter_twin.cli import app
from twin.home import Home, InitialAttributeError

#: Writable attributes of unimplemented clusters that matter.js's model of the spec lacks: the
#: SDK's test clusters and two clusters of the SDK's data model that no released spec has.
NOT_IN_SPEC = {"UnitTesting", "SampleMei", "BallastConfiguration", "DemandResponseLoadControl"}


# ---- the table against the spec's data model ----------------------------------------------
def _store_attributes() -> list[tuple[int, str, Any]]:
    """(cluster id, cluster name, chip attribute class) of every writable attribute of every
    cluster we have no server for: what a clone serves from an attribute store."""
    ours = _concrete_servers()
    return [(cid, ALL_CLUSTERS[cid].__name__, ALL_ATTRIBUTES[cid][aid])
            for cid in sorted(ALL_CLUSTERS) if cid not in ours
            for aid in sorted(_writable_ids(cid))]


_OPERAND = re.compile(r"^(?:(-?\d+|0x[0-9a-fA-F]+)|([A-Za-z][\w.]*)(?:\s*([-+])\s*(\d+))?)$")


def _operand(text: str) -> int | tuple[str, int]:
    m = _OPERAND.match(text.strip())
    assert m, f"constraint operand {text!r}: unknown to this test; teach it"
    if m.group(1):
        return int(m.group(1), 0)
    offset = int(m.group(4) or 0) * (-1 if m.group(3) == "-" else 1)
    return (m.group(2).lower(), offset)


def _model_bounds(text: str) -> tuple[Any, Any, Any] | None:
    """(low, high, within) of a constraint as the spec model writes it; None for prose (desc).
    References to attributes come back as (lower-case path, offset)."""
    text = text.strip()
    if text in ("", "all"):
        return (None, None, None)
    if text == "desc":
        return None
    if text.startswith("in "):
        return (None, None, text[3:].strip().lower())
    if text.startswith("min "):
        return (_operand(text[4:]), None, None)
    if text.startswith("max "):
        return (None, _operand(text[4:]), None)
    if " to " in text:
        low, high = text.split(" to ")
        return (_operand(low), _operand(high), None)
    exact = _operand(text)
    return (exact, exact, None)


def _ours(limit: Limit | None) -> tuple[Any, Any, Any]:
    def bound(b: int | Ref | None) -> Any:
        return (b.path.lower(), b.offset) if isinstance(b, Ref) else b
    if limit is None:
        return (None, None, None)
    return (bound(limit.low), bound(limit.high), limit.within.lower() if limit.within else None)


def _narrowed(bounds: tuple[Any, Any, Any], spec_type: str) -> tuple[Any, Any, Any]:
    """Bounds with those the type implies anyway dropped (min 0 on a length, 255 on a uint8)."""
    low, high, within = bounds
    type_low, type_high = RANGES.get(spec_type, (0, None))
    return (None if low == type_low else low, None if high == type_high else high, within)


def _plain_integer(typ: Any) -> bool:
    return shape(typ).kind in (Kind.UINT, Kind.INT)


def test_the_table_matches_the_spec_model():
    """Every writable attribute of a cluster we have no server for whose spec constraint is
    narrower than its type, or whose chip type lacks its width, is in our table, the same."""
    spec = model()["clusters"]
    checked, missing_from_model, wrong = 0, set(), []
    for cluster_id, cluster, attribute in _store_attributes():
        key = (cluster, attribute.__name__)
        if cluster_id not in spec:
            missing_from_model.add(cluster)
            assert key not in ATTRIBUTE_LIMITS, f"{key}: no spec model to hold it to"
            continue
        spec_attribute = next(a for a in spec[cluster_id]["attributes"] if a["id"] == attribute.attribute_id)
        limit, spec_type = ATTRIBUTE_LIMITS.get(key), spec_attribute["type"]
        if (limit is not None or _plain_integer(attribute.attribute_type.Type)) \
                and (limit is None or limit.type != spec_type):
            wrong.append(f"{key}: a {spec_type} in the spec; ours {limit and limit.type}")
        checked += 1
        stated = _model_bounds(spec_attribute["constraint"])
        if stated is None:     # prose: ours (if any) is read from the spec's text, not checkable here
            continue
        if _narrowed(_ours(limit), spec_type) != _narrowed(stated, spec_type):
            wrong.append(f"{key}: ours {_ours(limit)}, the spec's {spec_attribute['constraint']!r}")
        wrong += _field_differences(key, spec_attribute["fields"], (limit.fields or {}) if limit else {})
    assert wrong == []
    assert missing_from_model <= NOT_IN_SPEC, "a cluster of the spec model's, not found in it?"
    assert checked, "no writable attribute of an unimplemented cluster in the spec model"   # 80 of 182 today


def _field_differences(key: Any, spec_fields: list[dict], ours: dict[str, Limit]) -> list[str]:
    """Struct fields (of list entries) whose spec constraint our entry does not state the same.
    FabricIndex is left out: the node's Interaction Model stamps it, no writer chooses it."""
    out = []
    stated = {f["name"].lower(): f for f in spec_fields if f["name"] != "FabricIndex"
              and f["constraint"] not in ("", "all", "desc")}
    extra = {label for label in ours if label.lower() not in stated}
    if extra:
        out.append(f"{key}: fields {sorted(extra)} have no constraint in the spec model")
    for name, field in stated.items():
        limit = next((v for k, v in ours.items() if k.lower() == name), None)
        spec_bounds = _narrowed(_model_bounds(field["constraint"]), field["type"])
        if limit is None or limit.type != field["type"] or _narrowed(_ours(limit), field["type"]) != spec_bounds:
            out.append(f"{key}.{field['name']}: ours {limit}, the spec's {field['type']} {field['constraint']!r}")
    return out


def test_every_table_entry_is_a_writable_attribute():
    for cluster, name in ATTRIBUTE_LIMITS:
        cls = getattr(getattr(C, cluster).Attributes, name)
        assert cls.attribute_id in _writable_ids(getattr(C, cluster).id), (cluster, name)



# ---- enforcement on a hand-written product ------------------------------------------------
def _ext_pan(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


# A door lock as a maker might ship it, with siblings whose writable attributes the spec bounds.
# UserCodeTemporaryDisableTime 0 breaks the spec's 1..255: the product's own value, kept.
LOCK = _hand_written("Verro", "Smart Lock L1", {
    **_descriptor([(0x0A, 3)], [29, 30, 43, 65, 80, 128, 129, 257, 1030, 1107]),
    **_cluster(30, {"0": []}, revision=1),
    **_cluster(65, {"0": [{"0": "room", "1": "hall"}]}, revision=1),
    **_cluster(257, {"6": 30, "33": "en", "48": 5, "49": 0}, revision=7),
    **_cluster(1030, {"3": 60, "4": {"0": 10, "1": 300, "2": 60}, "18": 1}, revision=5),
    **_cluster(128, {"0": 1, "1": 3}, revision=1),
    **_cluster(80, {"0": "Chime", "1": None, "2": [{"0": "Soft", "1": 0, "2": []}, {"0": "Loud", "1": 4, "2": []}],
                    "3": 0, "4": 0, "5": None}, revision=2),
    **_cluster(43, {"0": "en-US", "1": ["en-US", "de-DE"]}, revision=1),
    **_cluster(129, {"8": 50}, features=2, revision=1),
    **_cluster(1107, {"0": _ext_pan(bytes(range(8)))}, revision=1),
})


@pytest.fixture
def lock():
    home = Home("h", seed=1)
    home.add_room("r", "R")
    home.add_product("lock", load_product(json.loads(json.dumps(LOCK))))
    device = home.add_device("lock", "lock", "r")
    return home, device, InProcessDut(home, device, "lock", "lock")


def _status(via: str, setup: Any, cluster: str, attribute: str, value: Any) -> str:
    """The answer to a write of `value` (a Matter value) by one of the two ways in."""
    home, device, dut = setup
    if via == "im":
        cls = getattr(getattr(C, cluster).Attributes, attribute)
        try:
            dut.write(1, cls, value)
        except DutStatusError as err:
            return Status(err.status).name
        return "SUCCESS"
    plain = value.hex() if isinstance(value, bytes) else (None if value is NullValue else value)
    result = call_tool(TwinBackend(home), "write_attribute",
                       {"device_id": "lock", "endpoint_id": 1, "cluster_id": cluster,
                        "attribute_id": attribute, "value": plain}, Session())
    return "SUCCESS" if result["ok"] else result["error"]["code"]


VIA = ["tool", "im"]


@pytest.mark.parametrize("via", VIA)
def test_numeric_ranges_and_widths(via, lock):
    home, device, _ = lock
    before = home.snapshot()
    for cluster, attribute, value in [("DoorLock", "WrongCodeEntryLimit", 0),           # 1 to 255
                                      ("DoorLock", "WrongCodeEntryLimit", 256),         # a uint8
                                      ("DoorLock", "OpenPeriod", 0x10000),              # a uint16
                                      ("ValveConfigurationAndControl", "DefaultOpenLevel", 101),   # a percent, 1..
                                      ("ValveConfigurationAndControl", "DefaultOpenLevel", 0),
                                      ("OccupancySensing", "PIRUnoccupiedToOccupiedThreshold", 255)]:
        assert _status(via, lock, cluster, attribute, value) == "CONSTRAINT_ERROR", (cluster, attribute, value)
    assert home.snapshot() == before     # nothing half-applied
    for cluster, attribute, value in [("DoorLock", "WrongCodeEntryLimit", 1), ("DoorLock", "WrongCodeEntryLimit", 255),
                                      ("DoorLock", "OpenPeriod", 0xFFFF),
                                      ("ValveConfigurationAndControl", "DefaultOpenLevel", 100)]:
        assert _status(via, lock, cluster, attribute, value) == "SUCCESS", (cluster, attribute, value)
        assert device.read(cluster, attribute, 1) == value


@pytest.mark.parametrize("via", VIA)
def test_string_and_octet_string_lengths(via, lock):
    _, device, _ = lock
    assert _status(via, lock, "DoorLock", "Language", "deu") == "SUCCESS"
    assert _status(via, lock, "DoorLock", "Language", "engl") == "CONSTRAINT_ERROR"     # max 3
    assert _status(via, lock, "DoorLock", "Language", "få") == "SUCCESS"               # 3 bytes
    assert _status(via, lock, "DoorLock", "Language", "fåx") == "CONSTRAINT_ERROR"     # 4 UTF-8 bytes
    assert device.read("DoorLock", "Language", 1) == "få"
    pan = "ThreadNetworkDirectory", "PreferredExtendedPanID"      # exactly 8 bytes, or null
    assert _status(via, lock, *pan, bytes(7)) == "CONSTRAINT_ERROR"
    assert _status(via, lock, *pan, bytes(9)) == "CONSTRAINT_ERROR"
    assert _status(via, lock, *pan, b"\x01" * 8) == "SUCCESS"
    assert _status(via, lock, *pan, NullValue) == "SUCCESS"


@pytest.mark.parametrize("via", VIA)
def test_bounds_and_choices_from_other_attributes(via, lock):
    _, device, _ = lock
    # HoldTime within HoldTimeLimits (10..300 in this product).
    assert _status(via, lock, "OccupancySensing", "HoldTime", 9) == "CONSTRAINT_ERROR"
    assert _status(via, lock, "OccupancySensing", "HoldTime", 301) == "CONSTRAINT_ERROR"
    assert _status(via, lock, "OccupancySensing", "HoldTime", 300) == "SUCCESS"
    # CurrentSensitivityLevel at most SupportedSensitivityLevels - 1 (3 levels: 0..2).
    assert _status(via, lock, "BooleanStateConfiguration", "CurrentSensitivityLevel", 3) == "CONSTRAINT_ERROR"
    assert _status(via, lock, "BooleanStateConfiguration", "CurrentSensitivityLevel", 2) == "SUCCESS"
    # StartUpMode names a mode of SupportedModes (0 and 4), or null.
    assert _status(via, lock, "ModeSelect", "StartUpMode", 1) == "CONSTRAINT_ERROR"
    assert _status(via, lock, "ModeSelect", "StartUpMode", 4) == "SUCCESS"
    assert _status(via, lock, "ModeSelect", "StartUpMode", NullValue) == "SUCCESS"
    # ActiveLocale one of SupportedLocales.
    assert _status(via, lock, "LocalizationConfiguration", "ActiveLocale", "fr-FR") == "CONSTRAINT_ERROR"
    assert _status(via, lock, "LocalizationConfiguration", "ActiveLocale", "de-DE") == "SUCCESS"
    assert device.read("LocalizationConfiguration", "ActiveLocale", 1) == "de-DE"


@pytest.mark.parametrize("via", VIA)
def test_fields_of_list_entries(via, lock):
    _, device, _ = lock
    label = C.UserLabel.Structs.LabelStruct
    target = C.Binding.Structs.TargetStruct
    ok, long = [label("room", "hall")], [label("room", "the hall by the front door")]   # max 16 bytes
    if via == "tool":
        ok, long = ([{"label": e.label, "value": e.value} for e in entries] for entries in (ok, long))
    assert _status(via, lock, "UserLabel", "LabelList", long) == "CONSTRAINT_ERROR"
    assert _status(via, lock, "UserLabel", "LabelList", ok) == "SUCCESS"
    # A binding's group is a group id, 1 and up; the IM stamps the fabric.
    group0, group1 = [target(group=0, fabricIndex=1)], [target(group=1, fabricIndex=1)]
    if via == "tool":
        group0, group1 = [{"group": 0, "fabricIndex": 1}], [{"group": 1, "fabricIndex": 1}]
    assert _status(via, lock, "Binding", "Binding", group0) == "CONSTRAINT_ERROR"
    assert _status(via, lock, "Binding", "Binding", group1) == "SUCCESS"
    assert [entry.group for entry in device.read("Binding", "Binding", 1)] == [1]


def test_a_bound_the_product_lacks_does_not_apply(monkeypatch):
    """A bound that refers to an attribute the product does not have does not apply, as
    check_attribute says (the lock's OccupancySensing, which had one, is our server now)."""
    monkeypatch.setitem(ATTRIBUTE_LIMITS, ("UserLabel", "LabelList"), Limit("list", high=Ref("LabelCountLimit")))
    store = _clone(json.loads(json.dumps(LOCK))).endpoint(1).server("UserLabel")
    assert isinstance(store, AttributeStoreServer)
    labels = [{"label": f"l{i}", "value": "v"} for i in range(5)]
    store.write("LabelList", labels)
    assert len(store.read("LabelList")) == 5


def _clone(dump: dict) -> Any:
    return create_device("c", product_type("c", load_product(dump)))


def test_list_lengths(monkeypatch):
    """No writable list of an unimplemented cluster has a spec length bound of its own today
    (UserLabel's LabelList is "min 0"; Acl's subjects, a field, is bounded by another
    attribute); the kind is checked as the others are, so an entry would apply."""
    monkeypatch.setitem(ATTRIBUTE_LIMITS, ("UserLabel", "LabelList"), Limit("list", high=2))
    store = _clone(json.loads(json.dumps(LOCK))).endpoint(1).server("UserLabel")
    labels = [{"label": "room", "value": "hall"}, {"label": "floor", "value": "1"}]
    store.write("LabelList", labels)
    with pytest.raises(MatterError) as err:
        store.write("LabelList", [*labels, {"label": "x", "value": "y"}])
    assert err.value.status == Status.CONSTRAINT_ERROR and "3 entries" in str(err.value)
    assert len(store.read("LabelList")) == 2


# ---- the product's own values -------------------------------------------------------------
def test_the_products_own_out_of_range_value_is_kept_and_named(tmp_path):
    device = _clone(json.loads(json.dumps(LOCK)))
    assert export_attributes(device) == LOCK["attributes"]        # round trip, the 0 included
    assert device.read("DoorLock", "UserCodeTemporaryDisableTime", 1) == 0
    breaches = limit_breaches(device)
    assert len(breaches) == 1 and "DoorLock.UserCodeTemporaryDisableTime" in breaches[0], breaches
    with pytest.raises(MatterError) as err:     # a write must still obey
        device.write("DoorLock", "UserCodeTemporaryDisableTime", 0, 1)
    assert err.value.status == Status.CONSTRAINT_ERROR
    dump = tmp_path / "lock.json"
    dump.write_text(json.dumps(LOCK))
    result = CliRunner().invoke(app, ["device", "clone", str(dump), "-o", str(tmp_path / "p.json")])
    assert result.exit_code == 0, result.output
    warnings = [line for line in result.output.splitlines() if "break the spec's constraints" in line]
    assert len(warnings) == 1 and "DoorLock.UserCodeTemporaryDisableTime=0" in warnings[0], result.output


def test_the_plug_has_no_breaches():
    assert limit_breaches(_clone(json.loads(PLUG.read_text()))) == []


def test_a_field_bounded_by_another_attribute():
    """Acl entries hold at most SubjectsPerAccessControlEntry subjects (4 in the plug)."""
    device = _clone(json.loads(PLUG.read_text()))
    entry = {"privilege": 5, "authMode": 2, "targets": None, "fabricIndex": 1}
    device.write("AccessControl", "Acl", [{**entry, "subjects": [1, 2, 3, 4]}], 0)
    with pytest.raises(MatterError) as err:
        device.write("AccessControl", "Acl", [{**entry, "subjects": [1, 2, 3, 4, 5]}], 0)
    assert err.value.status == Status.CONSTRAINT_ERROR and "Acl[0].subjects has 5 entries" in err.value.message
    assert [e.subjects for e in device.read("AccessControl", "Acl", 0)] == [[1, 2, 3, 4]]


def test_a_home_files_initial_value_obeys_too():
    home = Home("h", seed=1)
    home.add_room("r", "R")
    home.add_product("lock", load_product(json.loads(json.dumps(LOCK))))
    with pytest.raises(InitialAttributeError, match=r"WrongCodeEntryLimit=0\b.*outside 1\.\.255"):
        home.add_device("lock", "lock", "r", attributes={"1/DoorLock/WrongCodeEntryLimit": 0})
    device = home.add_device("lock", "lock", "r", attributes={"1/DoorLock/WrongCodeEntryLimit": 3})
    assert device.read("DoorLock", "WrongCodeEntryLimit", 1) == 3
