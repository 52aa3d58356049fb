"""TC_CGEN: the General Commissioning cluster on the network node's root endpoint (it belongs to
the node, twin/node, so these run over the network), on a device node and the bridge."""
from __future__ import annotations

import time

import pytest
from chip.clusters import Objects as C
from conftest import all_duts, over_network
from dut import Dut

G = C.GeneralCommissioning
OK, NO_FAIL_SAFE = G.Enums.CommissioningErrorEnum.kOk, G.Enums.CommissioningErrorEnum.kNoFailSafe

NOT_APPLICABLE = {
    "TC_CGEN_2_5": "Terms and Conditions (TC feature) are not supported",
    "TC_CGEN_2_6": "Terms and Conditions (TC feature) are not supported",
    "TC_CGEN_2_7": "Terms and Conditions (TC feature) are not supported",
    "TC_CGEN_2_8": "Terms and Conditions (TC feature) are not supported",
    "TC_CGEN_2_9": "Terms and Conditions (TC feature) are not supported",
    "TC_CGEN_2_10": "Terms and Conditions (TC feature) are not supported",
    "TC_CGEN_2_11": "Terms and Conditions (TC feature) are not supported",
}

NODES = [p for p in over_network(all_duts()) if p.values[0][1] in ("dimmable_light", "bridge")]


@pytest.mark.parametrize("dut", NODES, indirect=True)
def test_TC_CGEN_1_1(dut: Dut):
    """Global attributes: the mandatory attributes, the four commands and their responses."""
    g = dut.read_cluster(0, G)
    assert g["ClusterRevision"] >= 1 and g["FeatureMap"] == 0
    assert {0, 1, 2, 3, 4} <= set(g["AttributeList"])
    assert set(g["AcceptedCommandList"]) == {0x00, 0x02, 0x04}        # ArmFailSafe, SetRegulatoryConfig, Complete
    assert set(g["GeneratedCommandList"]) == {0x01, 0x03, 0x05}


@pytest.mark.parametrize("dut", NODES, indirect=True)
def test_TC_CGEN_2_1(dut: Dut):
    """Attributes: Breadcrumb writable, BasicCommissioningInfo consistent, regulatory values in range."""
    g = dut.read_cluster(0, G)
    info = g["BasicCommissioningInfo"]
    assert 1 <= info.failSafeExpiryLengthSeconds <= info.maxCumulativeFailsafeSeconds
    assert g["RegulatoryConfig"] in (0, 1, 2) and g["LocationCapability"] in (0, 1, 2)
    assert isinstance(g["SupportsConcurrentConnection"], bool)
    dut.write(0, G.Attributes.Breadcrumb, 7)
    assert dut.read(0, G.Attributes.Breadcrumb) == 7
    dut.write(0, G.Attributes.Breadcrumb, 0)


@pytest.mark.parametrize("dut", NODES, indirect=True)
def test_TC_CGEN_2_2(dut: Dut):
    """ArmFailSafe: arming sets the breadcrumb; re-arming extends; expiry resets the breadcrumb to
    0; ArmFailSafe(0) disarms at once; CommissioningComplete without a fail-safe answers NoFailSafe."""
    response = dut.invoke(0, G.Commands.ArmFailSafe(expiryLengthSeconds=60, breadcrumb=1))
    assert response.errorCode == OK
    assert dut.read(0, G.Attributes.Breadcrumb) == 1
    assert dut.invoke(0, G.Commands.ArmFailSafe(expiryLengthSeconds=0, breadcrumb=2)).errorCode == OK
    assert dut.read(0, G.Attributes.Breadcrumb) == 0, "disarming ends the fail-safe: breadcrumb back to 0"
    assert dut.invoke(0, G.Commands.ArmFailSafe(expiryLengthSeconds=2, breadcrumb=3)).errorCode == OK
    assert dut.read(0, G.Attributes.Breadcrumb) == 3
    time.sleep(3.5)
    assert dut.read(0, G.Attributes.Breadcrumb) == 0, "the fail-safe expired: breadcrumb back to 0"
    assert dut.invoke(0, G.Commands.CommissioningComplete()).errorCode == NO_FAIL_SAFE
