"""The in-process Dut: every dut answers reads, writes, invokes and timed requests over IM."""
from __future__ import annotations

import pytest
from chip.clusters import Objects as C
from chip.clusters.Types import NullValue
from conftest import BRIDGE, DUT_CLUSTERS, inprocess_dut
from dut import DutStatusError

from clusters.status import Status


def test_every_dut_lists_its_endpoints_and_reads_them(dut_inprocess):
    endpoints = dut_inprocess.endpoints()
    assert endpoints[0] == 0 and len(endpoints) >= 2
    for endpoint in endpoints:
        servers = dut_inprocess.read(endpoint, C.Descriptor.Attributes.ServerList)
        assert C.Descriptor.id in servers
        descriptor = dut_inprocess.read_cluster(endpoint, C.Descriptor)
        assert descriptor["ServerList"] == servers and descriptor["ClusterRevision"] >= 1
    assert DUT_CLUSTERS[dut_inprocess.device_type] >= {C.Descriptor.id, C.BasicInformation.id}


def test_reads_writes_and_invokes_go_through_the_interaction_model():
    dut = inprocess_dut("dimmable_light")
    was = dut.read(1, C.OnOff.Attributes.OnOff)
    assert was is dut.device.read("OnOff", "OnOff")
    assert dut.invoke(1, C.OnOff.Commands.Toggle()) is None
    assert dut.read(1, C.OnOff.Attributes.OnOff) is (not was) and dut.device.read("OnOff", "OnOff") is (not was)
    dut.write(1, C.LevelControl.Attributes.OnLevel, 200)
    assert dut.read(1, C.LevelControl.Attributes.OnLevel) == 200
    dut.write(1, C.LevelControl.Attributes.OnLevel, NullValue)
    assert dut.read(1, C.LevelControl.Attributes.OnLevel) is NullValue
    with pytest.raises(DutStatusError) as error:
        dut.write(1, C.LevelControl.Attributes.CurrentLevel, 3)
    assert error.value.status == Status.UNSUPPORTED_WRITE
    with pytest.raises(DutStatusError) as error:
        dut.write(1, C.OnOff.Attributes.StartUpOnOff, 7)
    assert error.value.status == Status.CONSTRAINT_ERROR
    with pytest.raises(DutStatusError) as error:
        dut.read(1, C.Thermostat.Attributes.LocalTemperature)
    assert error.value.status == Status.UNSUPPORTED_CLUSTER
    with pytest.raises(DutStatusError) as error:
        dut.read(9, C.OnOff.Attributes.OnOff)
    assert error.value.status == Status.UNSUPPORTED_ENDPOINT


def test_command_responses_are_decoded():
    dut = inprocess_dut("dishwasher")
    modes = dut.read(1, C.DishwasherMode.Attributes.SupportedModes)
    current = dut.read(1, C.DishwasherMode.Attributes.CurrentMode)
    target = next(m.mode for m in modes if m.mode != current)
    response = dut.invoke(1, C.DishwasherMode.Commands.ChangeToMode(newMode=target))
    assert isinstance(response, C.DishwasherMode.Commands.ChangeToModeResponse) and response.status == 0
    assert dut.read(1, C.DishwasherMode.Attributes.CurrentMode) == target


def test_timed_invoke_and_wait_advance_the_home():
    dut = inprocess_dut("dimmable_light")
    assert dut.invoke(1, C.OnOff.Commands.On(), timed_ms=500) is None
    assert dut.read(1, C.OnOff.Attributes.OnOff) is True
    dut.invoke(1, C.LevelControl.Commands.MoveToLevel(level=254, transitionTime=20, optionsMask=0,
                                                      optionsOverride=0))
    start = dut.home.clock.tick
    dut.wait(2.5)
    assert dut.home.clock.tick - start == 25
    assert dut.read(1, C.LevelControl.Attributes.CurrentLevel) == 254


def test_the_bridge_serves_every_device_behind_its_aggregator():
    dut = inprocess_dut(BRIDGE)
    assert dut.name == "@bridge" and dut.device_type == BRIDGE
    endpoints = dut.endpoints()
    assert C.Actions.id not in DUT_CLUSTERS[BRIDGE]
    assert len(endpoints) > len(dut.home.devices) + 1
    assert DUT_CLUSTERS[BRIDGE] >= DUT_CLUSTERS["dimmable_light"] - {C.BasicInformation.id}
