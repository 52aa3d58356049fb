"""Test cases that power-cycle nodes (their `twin run` stops and starts again on the same
storage, NetworkLab.restart). A restart empties the nodes' event logs, as a reboot does, and
TC_ACL's test cases read the AccessControlEntryChanged events of the session's commissioning:
so these run after them (modules run in name order), not in their clusters' modules.
"""
from __future__ import annotations

import pytest
from chip.clusters import Objects as C
from chip.clusters.Types import NullValue
from conftest import over_network, serving
from steps import endpoints_with

OO = C.OnOff
A = OO.Attributes


#: A light of the home twin and the bridge: every step reboots a whole `twin run` process (~4 s).
POWER_CYCLED = [p for p in over_network(serving(OO, feature=0x1)) if p.values[0][1] in ("dimmable_light", "bridge")]


@pytest.mark.parametrize("dut", POWER_CYCLED, indirect=True)
def test_TC_OO_2_4(dut):
    """StartUpOnOff after a power cycle (the node's `twin run` stops and starts again on the same
    storage): 0 comes up Off, 1 On, 2 toggled from before the reboot, null as it was."""
    [endpoint] = [ep for ep in endpoints_with(dut, OO) if dut.read(ep, A.FeatureMap) & 1][:1]

    def power_cycle(start_up, before):
        dut.write(endpoint, A.StartUpOnOff, start_up)
        dut.invoke(endpoint, OO.Commands.On() if before else OO.Commands.Off())
        dut.lab.restart(dut.mode)
        assert dut.read(endpoint, A.StartUpOnOff) == start_up
        return dut.read(endpoint, A.OnOff)

    try:
        assert power_cycle(0, True) is False
        assert power_cycle(1, False) is True
        assert power_cycle(2, True) is False
        assert power_cycle(NullValue, True) is True
    finally:
        dut.write(endpoint, A.StartUpOnOff, NullValue)
