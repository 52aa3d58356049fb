"""TC_BINFO: the Basic Information cluster on endpoint 0 (test plan "Basic Information Cluster"),
in process and over the network, for every dut (the bridge's own identity included)."""
from __future__ import annotations

import re

import pytest
from chip.clusters import Objects as C
from conftest import all_duts, over_network
from dut import Dut, DutStatusError

from clusters.status import Status

B = C.BasicInformation.Attributes

NOT_APPLICABLE = {
    "TC_BINFO_3_1": "ProductAppearance is optional and not served (AttributeList has no 0x0014)",
    "TC_BINFO_3_2": "ConfigurationVersion is a Matter 1.4 attribute; the nodes are Matter 1.3 "
                    "(SpecificationVersion 1.3.0) and do not serve it",
}

MANDATORY = {B.DataModelRevision, B.VendorName, B.VendorID, B.ProductName, B.ProductID, B.NodeLabel, B.Location,
             B.HardwareVersion, B.HardwareVersionString, B.SoftwareVersion, B.SoftwareVersionString,
             B.CapabilityMinima, B.SpecificationVersion, B.MaxPathsPerInvoke}


def test_TC_BINFO_1_1(dut: Dut):
    """Global attributes: revision, no features, the mandatory attributes listed, no commands."""
    b = dut.read_cluster(0, C.BasicInformation)
    assert b["ClusterRevision"] >= 3 and b["FeatureMap"] == 0
    listed = set(b["AttributeList"])
    assert {a.attribute_id for a in MANDATORY} <= listed, sorted(listed)
    assert listed == {getattr(B, name).attribute_id for name in b}
    assert b["AcceptedCommandList"] == [] and b["GeneratedCommandList"] == []


def test_TC_BINFO_2_1(dut: Dut):
    """Every attribute's value within its constraints."""
    b = dut.read_cluster(0, C.BasicInformation)
    assert b["DataModelRevision"] >= 17                       # Matter 1.3's data model revision
    assert 1 <= len(b["VendorName"]) <= 32 and 1 <= len(b["ProductName"]) <= 32
    assert 1 <= b["VendorID"] <= 0xFFF4 and 1 <= b["ProductID"] <= 0xFFFF
    assert len(b["NodeLabel"]) <= 32
    assert re.fullmatch(r"[A-Z]{2}", b["Location"]), b["Location"]
    assert 0 <= b["HardwareVersion"] <= 0xFFFF and 1 <= len(b["HardwareVersionString"]) <= 64
    assert 0 <= b["SoftwareVersion"] <= 0xFFFF_FFFF and 1 <= len(b["SoftwareVersionString"]) <= 64
    minima = b["CapabilityMinima"]
    assert minima.caseSessionsPerFabric >= 3 and minima.subscriptionsPerFabric >= 3
    spec = b["SpecificationVersion"]
    assert spec >> 24 >= 1 and spec & 0xFF == 0, f"0x{spec:08X}"   # major.minor.dot.reserved(0)
    assert b["MaxPathsPerInvoke"] >= 1
    if "ManufacturingDate" in b:
        date = b["ManufacturingDate"]
        assert 8 <= len(date) <= 16 and re.fullmatch(r"\d{4}(0[1-9]|1[0-2])(0[1-9]|[12]\d|3[01])", date[:8]), date
    for name, limit in (("PartNumber", 32), ("ProductURL", 256), ("ProductLabel", 64), ("SerialNumber", 32),
                        ("UniqueID", 32)):
        if name in b:
            assert len(b[name]) <= limit, (name, b[name])
    if "ProductURL" in b:
        assert b["ProductURL"].startswith("https://") or b["ProductURL"] == ""
    if "UniqueID" in b:
        assert b["UniqueID"], "UniqueID must not be empty"
    if "Reachable" in b:
        assert b["Reachable"] is True
    writes(dut)


def writes(dut: Dut) -> None:
    """The writable attributes (NodeLabel, Location) take valid values and refuse invalid ones
    with CONSTRAINT_ERROR; read-only ones answer UNSUPPORTED_WRITE."""
    before = dut.read(0, B.NodeLabel)
    dut.write(0, B.NodeLabel, "conformance")
    assert dut.read(0, B.NodeLabel) == "conformance"
    with pytest.raises(DutStatusError) as err:
        dut.write(0, B.NodeLabel, "x" * 33)
    assert err.value.status == Status.CONSTRAINT_ERROR
    assert dut.read(0, B.NodeLabel) == "conformance"
    dut.write(0, B.NodeLabel, before)
    location = dut.read(0, B.Location)
    dut.write(0, B.Location, "DE")
    assert dut.read(0, B.Location) == "DE"
    with pytest.raises(DutStatusError) as err:
        dut.write(0, B.Location, "Germany")
    assert err.value.status == Status.CONSTRAINT_ERROR
    dut.write(0, B.Location, location)
    for attribute, value in ((B.VendorName, "x"), (B.ProductID, 1), (B.SerialNumber, "x")):
        with pytest.raises(DutStatusError) as err:
            dut.write(0, attribute, value)
        assert err.value.status == Status.UNSUPPORTED_WRITE, attribute


@pytest.mark.parametrize("dut", over_network(all_duts()), indirect=True)
def test_TC_BINFO_2_2(dut: Dut):
    """Events: the node's StartUp event (critical priority) carries its SoftwareVersion."""
    events = dut.read_events(0, C.BasicInformation.Events.StartUp)
    assert events, "no StartUp event"
    assert events[-1].priority == 2 and events[-1].data.softwareVersion == dut.read(0, B.SoftwareVersion)
