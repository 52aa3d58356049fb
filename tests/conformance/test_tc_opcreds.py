"""TC_OPCREDS: the Operational Credentials cluster on the network node's root endpoint."""
from __future__ import annotations

import pytest
from chip.clusters import Objects as C
from conftest import all_duts, over_network
from dut import Dut, DutStatusError

from clusters.status import Status

OC = C.OperationalCredentials
NOT_APPLICABLE = {
    "TC_OPCREDS_3_9": "PQC device attestation is not in Matter 1.3",
}
NOT_COVERED = {
    "TC_OPCREDS_3_1": "AddNOC and its error cases in a fail-safe (needs a raw CSR/NOC flow the SDK "
                      "controller does not expose one step at a time)",
    "TC_OPCREDS_3_2": "attestation and CSR requests checked field by field",
    "TC_OPCREDS_3_4": "UpdateNOC",
    "TC_OPCREDS_3_7": "fabric table limits (SupportedFabrics commissionings)",
}
NODES = [p for p in over_network(all_duts()) if p.values[0][1] in ("dimmable_light", "bridge")]


@pytest.mark.parametrize("dut", NODES, indirect=True)
def test_TC_OPCREDS_1_1(dut: Dut):
    """Global attributes: the six attributes, the commands and responses of a commissionee."""
    o = dut.read_cluster(0, OC)
    assert set(range(6)) <= set(o["AttributeList"])
    assert {0x00, 0x02, 0x04, 0x06, 0x07, 0x09, 0x0A, 0x0B} <= set(o["AcceptedCommandList"])
    assert {0x01, 0x03, 0x05, 0x08} <= set(o["GeneratedCommandList"])


@pytest.mark.parametrize("dut", NODES, indirect=True)
def test_TC_OPCREDS_2_1(dut: Dut):
    """Attributes: our fabric in Fabrics and NOCs (fabric-filtered: just ours), counts in range,
    the trusted roots, CurrentFabricIndex naming our entry."""
    o = dut.read_cluster(0, OC)
    index = o["CurrentFabricIndex"]
    assert 1 <= index <= 254
    assert 5 <= o["SupportedFabrics"] <= 254 and 1 <= o["CommissionedFabrics"] <= o["SupportedFabrics"]
    [fabric] = o["Fabrics"]
    assert fabric.fabricIndex == index and fabric.vendorID == 0xFFF1 and fabric.fabricID == 1
    assert len(fabric.rootPublicKey) == 65 and fabric.nodeID == dut.node_id   # type: ignore[attr-defined]
    assert len(fabric.label) <= 32
    [noc] = o["NOCs"]
    assert noc.fabricIndex == index and 0 < len(noc.noc) <= 400
    assert o["TrustedRootCertificates"] and all(0 < len(r) <= 400 for r in o["TrustedRootCertificates"])


@pytest.mark.parametrize("dut", NODES, indirect=True)
def test_TC_OPCREDS_3_5(dut: Dut):
    """UpdateFabricLabel: a label up to 32 characters is taken (NOCResponse Ok) and shows in
    Fabrics; a longer one is refused with CONSTRAINT_ERROR."""
    response = dut.invoke(0, OC.Commands.UpdateFabricLabel(label="conformance"))
    assert response.statusCode == OC.Enums.NodeOperationalCertStatusEnum.kOk
    assert dut.read(0, OC.Attributes.Fabrics)[0].label == "conformance"
    with pytest.raises(DutStatusError) as err:
        dut.invoke(0, OC.Commands.UpdateFabricLabel(label="x" * 33))
    assert err.value.status == Status.CONSTRAINT_ERROR
    dut.invoke(0, OC.Commands.UpdateFabricLabel(label=""))
