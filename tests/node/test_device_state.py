"""Device state across `twin run` restarts (issue #13 item 2): the servers' state in each
node's storage, written atomically, restored before the nodes start, with the clusters' StartUp
semantics (a restart is a power cycle)."""
from __future__ import annotations

import asyncio
import json
import os
import random

import pytest
from chip.clusters.Types import NullValue

from twin.home import Home
from twin.node.device_state import STATE_FILE, DeviceStateStore
from twin.node.manager import NodeManager


def home() -> Home:
    h = Home("small", seed=4)
    h.add_room("kitchen")
    h.add_device("lamp", "dimmable_light", "kitchen")
    h.add_device("blind", "window_covering", "kitchen")
    return h


def servers(h: Home):
    lamp = h.device("lamp").endpoint(1)
    return lamp.server("OnOff"), lamp.server("LevelControl")


def save_and_restart(h: Home, tmp_path) -> Home:
    store = DeviceStateStore(tmp_path, dict(h.devices))
    store.watch()
    assert store.flush() == len(h.devices)
    fresh = home()
    assert DeviceStateStore(tmp_path, dict(fresh.devices)).restore() == list(fresh.devices)
    return fresh


def test_state_survives_a_restart_with_null_start_up_values(tmp_path):
    h = home()
    on_off, level = servers(h)
    on_off.On()
    level.set("CurrentLevel", 201)
    version = level.data_version
    fresh = save_and_restart(h, tmp_path)
    on_off2, level2 = servers(fresh)
    assert on_off2.get("OnOff") is True and level2.get("CurrentLevel") == 201
    assert level2.data_version == (version + 1) & 0xFFFFFFFF   # never the old version with new content


@pytest.mark.parametrize("start_up, before, after", [(0, True, False), (1, False, True), (2, True, False),
                                                    (2, False, True), (NullValue, True, True)])
def test_start_up_on_off(tmp_path, start_up, before, after):
    h = home()
    on_off, _ = servers(h)
    on_off.set("StartUpOnOff", start_up)
    on_off.set("OnOff", before)
    on_off2, _ = servers(save_and_restart(h, tmp_path))
    assert on_off2.get("OnOff") is after


@pytest.mark.parametrize("start_up, expected", [(NullValue, 201), (0, 1), (77, 77)])
def test_start_up_current_level(tmp_path, start_up, expected):
    h = home()
    _, level = servers(h)
    level.set("CurrentLevel", 201)
    level.set("StartUpCurrentLevel", start_up)
    _, level2 = servers(save_and_restart(h, tmp_path))
    assert level2.get("CurrentLevel") == max(expected, level2.get("MinLevel"))


def test_a_transition_or_motion_stops_where_it_was(tmp_path):
    from chip.clusters import Objects as C
    h = home()
    on_off, level = servers(h)
    on_off.On()
    level.set("CurrentLevel", 10)
    level.MoveToLevel(C.LevelControl.Commands.MoveToLevel(level=210, transitionTime=100, optionsMask=0,
                                                          optionsOverride=0))
    cover = h.device("blind").endpoint(1).server("WindowCovering")
    cover.DownOrClose()
    h.advance(5)
    mid_level, mid_cover = level.get("CurrentLevel"), cover.get("CurrentPositionLiftPercent100ths")
    assert 10 < mid_level < 210 and 0 < mid_cover < 10000
    fresh = save_and_restart(h, tmp_path)
    _, level2 = servers(fresh)
    cover2 = fresh.device("blind").endpoint(1).server("WindowCovering")
    assert level2.get("CurrentLevel") == mid_level and level2.get("RemainingTime") == 0
    assert level2.next_event_tick() is None
    assert cover2.get("CurrentPositionLiftPercent100ths") == mid_cover
    assert cover2.get("TargetPositionLiftPercent100ths") == mid_cover and cover2.get("OperationalStatus") == 0
    fresh.advance(30)
    assert cover2.get("CurrentPositionLiftPercent100ths") == mid_cover   # nothing moves after power-up


def test_only_dirty_devices_are_rewritten_atomically(tmp_path):
    h = home()
    store = DeviceStateStore(tmp_path, dict(h.devices))
    store.watch()
    assert store.flush() == 2 and store.flush() == 0
    on_off, _ = servers(h)
    on_off.On()
    assert store.dirty == {"lamp"}
    assert store.flush() == 1
    saved = json.loads((tmp_path / "lamp" / STATE_FILE).read_text())
    assert saved["servers"]["1/OnOff"]["attributes"]["OnOff"] is True
    assert not [f for f in os.listdir(tmp_path / "lamp") if f.startswith(".")]   # no temp file left


def test_a_flush_writes_at_most_its_limit_and_keeps_the_rest_dirty(tmp_path):
    """A thousand-node home must not write every file in one turn of the shared event loop."""
    h = home()
    store = DeviceStateStore(tmp_path, dict(h.devices))
    store.watch()
    assert store.flush(limit=1) == 1 and len(store.dirty) == 1
    assert store.flush(limit=1) == 1 and not store.dirty and store.flush(limit=1) == 0


def test_a_broken_or_foreign_file_changes_nothing(tmp_path):
    (tmp_path / "lamp").mkdir()
    (tmp_path / "lamp" / STATE_FILE).write_text("{half a fi")
    (tmp_path / "blind").mkdir()
    (tmp_path / "blind" / STATE_FILE).write_text(json.dumps({"format": 1, "type": "dimmable_light", "servers": {}}))
    h = home()
    assert DeviceStateStore(tmp_path, dict(h.devices)).restore() == []
    assert servers(h)[1].get("CurrentLevel") == servers(home())[1].get("CurrentLevel")


def test_node_manager_restores_before_the_nodes_and_saves_at_stop(tmp_path):
    h = home()

    async def run(h: Home) -> NodeManager:
        manager = NodeManager(h, tmp_path, rng=random.Random(1), room_sensors=False)
        manager.states.watch()
        servers(h)[1].set("CurrentLevel", 201)
        await manager.stop()
        return manager
    asyncio.run(run(h))
    fresh = home()
    manager = asyncio.run(asyncio.to_thread(NodeManager, fresh, tmp_path, rng=random.Random(1), room_sensors=False))
    assert sorted(manager.restored) == ["blind", "lamp"]
    assert servers(fresh)[1].get("CurrentLevel") == 201


def test_the_simulation_stays_deterministic_with_a_store_watching():
    a, b = home(), home()
    DeviceStateStore("/nonexistent", dict(b.devices)).watch()
    for h in (a, b):
        servers(h)[0].On()
        h.advance(10)
    assert json.dumps(a.snapshot(), sort_keys=True) == json.dumps(b.snapshot(), sort_keys=True)
