"""Commissioning windows like real products (issue #13): which windows open at start, `twin pair`
(NodeManager.open_window) later, the timeout, and the rule that no two open windows share a
short discriminator, so every manual code handed out reaches its own node. No sockets: the cores
are built as `start()` builds them and driven with the loop's clock."""
from __future__ import annotations

import asyncio
import random
from collections import Counter

import pytest
from test_node_runtime import make_fabric

from twin.home import Home
from twin.node.manager import MatterNode, NodeManager
from twin.node.pairing import SHORT_DISCRIMINATORS, home_pairings, pairing_order, plan_windows, served_devices


def manage(home, storage, **options):
    """A manager with every node adopted and the start plan applied (no UDP, no mDNS)."""
    async def go():
        manager = NodeManager(home, storage, rng=random.Random(1), **options)
        for index, (device_id, device) in enumerate(manager.devices.items()):
            core = manager._build_core(device, manager.pairings[device_id])
            manager._adopt(device_id, MatterNode(device, core, manager.base_port + index))
        manager._apply_window_plan()
        return manager
    return asyncio.run(go())


def open_shorts(manager) -> dict[str, int]:
    return {d: n.core.commissioning.window.discriminator >> 8
            for d, n in manager.nodes.items() if n.core.commissioning.window.is_open}


def test_the_first_16_nodes_have_16_different_short_discriminators():
    home = Home.default()
    devices = served_devices(home)
    pairings = home_pairings(home, devices=devices)
    order = pairing_order(home, devices)
    assert len(order) == 28
    assert len({pairings[d].discriminator >> 8 for d in order[:SHORT_DISCRIMINATORS]}) == SHORT_DISCRIMINATORS
    assert len({p.discriminator for p in pairings.values()}) == 28          # QR codes stay unique


def test_default_home_opens_16_windows_with_unique_manual_codes(tmp_path):
    manager = manage(Home.default(), tmp_path)
    shorts = open_shorts(manager)
    assert len(shorts) == SHORT_DISCRIMINATORS and len(set(shorts.values())) == SHORT_DISCRIMINATORS
    assert sorted(manager.window_plan.held) == sorted(set(manager.nodes) - set(shorts))
    notice = manager.window_plan.notice()
    assert "28 windows asked for" in notice and "12 commissioning window(s) stay closed" in notice
    assert "twin pair DEVICE" in notice
    # The clash that bit the user: the light's and the TV's windows are never open together.
    assert not {"living_room_light", "living_room_tv"} <= set(shorts)
    rows = {r["device"]: r for r in manager.codes()}
    first = pairing_order(manager.home, manager.devices)[0]
    assert rows[first]["window"] == "open" and rows[first]["window_closes_in_s"] == 900
    assert {r["window"] for d, r in rows.items() if d not in shorts} == {"closed"}


def test_open_windows_none_and_a_list(tmp_path):
    assert open_shorts(manage(Home.default(), tmp_path / "a", open_windows="none")) == {}
    manager = manage(Home.default(), tmp_path / "b", open_windows=["living_room_tv", "kitchen_light"])
    assert set(open_shorts(manager)) == {"living_room_tv", "kitchen_light"}
    with pytest.raises(ValueError, match="no node .attic.*accepted: all, all-qr, none"):
        manage(Home.default(), tmp_path / "c", open_windows=["attic"])


def test_asking_for_clashing_windows_opens_the_first_and_names_the_rest():
    home = Home.default()
    pairings = home_pairings(home, devices=served_devices(home))
    by_short = Counter(p.discriminator >> 8 for p in pairings.values())
    short = next(s for s, n in by_short.items() if n >= 2)
    a, b = [d for d, p in pairings.items() if p.discriminator >> 8 == short][:2]
    plan = plan_windows(pairings, [a, b])
    assert plan.opened == (a,) and plan.held == {b: a}
    assert b in plan.notice() and "windows asked for" not in plan.notice()   # not more than 16


def test_twin_pair_opens_a_window_and_closes_the_one_sharing_its_short_discriminator(tmp_path):
    manager = manage(Home.default(), tmp_path)
    closed_node = next(iter(manager.window_plan.held))
    holder = manager.window_plan.held[closed_node]
    row = manager.open_window(closed_node, 300)
    assert row["device"] == closed_node and row["window"] == "open" and row["window_closes_in_s"] == 300
    assert row["closed"] == [holder]
    shorts = open_shorts(manager)
    assert closed_node in shorts and holder not in shorts
    assert len(set(shorts.values())) == len(shorts)       # still: every open manual code is unique
    assert row["manual_code"] == manager.pairings[closed_node].manual_code   # its own, printed codes
    with pytest.raises(ValueError, match="allows 180..900"):
        manager.open_window(closed_node, 60)
    with pytest.raises(ValueError, match="no node 'attic'"):
        manager.open_window("attic")


def test_a_commissioned_node_stays_closed_at_start_and_twin_pair_opens_it(tmp_path):
    home = Home("small", seed=4)
    home.add_room("kitchen")
    home.add_device("light", "on_off_light", "kitchen")
    manager = manage(home, tmp_path, room_sensors=False)
    light = manager.nodes["light"].core.commissioning
    fabric, _ = make_fabric()
    light.table.add_pending(fabric)
    light.complete_commissioning(fabric.fabric_index)
    again = manage(home, tmp_path, room_sensors=False)
    assert open_shorts(again) == {}
    assert again.open_window("light")["window"] == "open"      # a second admin, by button press


def test_the_window_times_out(tmp_path):
    manager = manage(Home.default(), tmp_path, window_timeout_s=180)
    node = manager.nodes["living_room_light"]
    commissioning = node.core.commissioning
    opened_at = commissioning.window.expires_ms - 180_000
    node.core.touched = False
    node.core.on_timer(opened_at + 179_999)
    assert commissioning.window.is_open and not node.core.touched
    assert node.core.next_timer() <= opened_at + 180_000
    node.core.on_timer(opened_at + 180_000)
    assert not commissioning.window.is_open and node.core.touched   # mDNS withdraws it next sync
    assert commissioning.pase_parameters() is None                   # PASE refused from now on
    with pytest.raises(ValueError, match="180..900"):
        manage(Home.default(), tmp_path / "x", window_timeout_s=1000)


def test_an_administrator_opening_a_clashing_window_closes_the_other(tmp_path):
    """The latest opening wins, whoever opened it (here: the last fabric removed reopens)."""
    manager = manage(Home.default(), tmp_path)
    closed_node = next(iter(manager.window_plan.held))
    holder = manager.window_plan.held[closed_node]
    commissioning = manager.nodes[closed_node].core.commissioning
    with manager.lock:
        commissioning.window.open_initial(commissioning.now_ms())
        commissioning.window_changed()
    shorts = open_shorts(manager)
    assert closed_node in shorts and holder not in shorts


def test_codes_answer_while_the_http_api_holds_the_lock(tmp_path):
    """GET /codes calls codes() with the app's (non-reentrant) lock held: it must not take it."""
    import threading
    manager = manage(Home.default(), tmp_path, lock=threading.Lock())
    rows = []

    def read():
        with manager.lock:
            rows.extend(manager.codes())
    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(10)
    assert len(rows) == 28
    assert manager.open_window("living_room_tv")["window"] == "open"   # takes the lock itself
