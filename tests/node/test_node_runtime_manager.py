"""NodeManager and run_home without sockets: storage per device (fabrics kept across restarts,
forgotten with reset_fabrics), the mDNS services a node's state calls for, and the real-time
clock driving the home."""
from __future__ import annotations

import asyncio
import random

from chip.clusters import Objects as C
from test_node_runtime import make_fabric

from matter_protocol.mdns import Commissionable, Operational
from twin.home import Home
from twin.node.clock_loop import run_home
from twin.node.manager import MatterNode, NodeManager


def small_home() -> Home:
    home = Home("small", seed=4)
    home.add_room("kitchen")
    home.add_device("light", "on_off_light", "kitchen", name="Kitchen Light")
    home.add_device("fan", "fan", "kitchen")
    return home


def build(home, storage, **options):
    """NodeManager cores (no ports opened), as `start()` builds them."""
    async def go():
        manager = NodeManager(home, storage, rng=random.Random(1), **options)
        nodes = {}
        for index, (device_id, device) in enumerate(home.devices.items()):
            nodes[device_id] = MatterNode(device, manager._build_core(device, manager.pairings[device_id]),
                                          manager.base_port + index)
        return manager, nodes
    return asyncio.run(go())


def test_fabrics_survive_a_restart_and_reset_fabrics_forgets_them(tmp_path):
    manager, nodes = build(small_home(), tmp_path)
    light = nodes["light"].core.commissioning
    assert light.window.is_open and not light.to_case_fabrics()
    dac = light.credentials.dac_der
    fabric, _ = make_fabric()
    light.table.add_pending(fabric)
    light.complete_commissioning(fabric.fabric_index)   # commit and save, window closes
    assert (tmp_path / "light" / "fabrics.json").exists() and (tmp_path / "pai").is_dir()

    _, again = build(small_home(), tmp_path)             # a restart on the same storage
    kept = again["light"].core.commissioning
    assert [f.node_id for f in kept.to_case_fabrics()] == [0x55] and not kept.window.is_open
    assert kept.credentials.dac_der == dac              # the same attestation identity
    assert again["fan"].core.commissioning.window.is_open

    _, reset = build(small_home(), tmp_path, reset_fabrics=True)
    forgotten = reset["light"].core.commissioning
    assert not forgotten.to_case_fabrics() and forgotten.window.is_open
    assert forgotten.credentials.dac_der == dac         # the DAC stays


def test_advertised_services_follow_the_window_and_the_fabrics(tmp_path):
    manager, nodes = build(small_home(), tmp_path)
    light = nodes["light"]
    pairing = manager.pairings["light"]
    (service,) = manager._services(light).values()
    assert isinstance(service, Commissionable)
    assert (service.port, service.discriminator, service.vendor_id, service.product_id, service.device_type,
            service.commissioning_mode, service.device_name) == \
        (light.port, pairing.discriminator, 0xFFF1, pairing.product_id, light.device.type.device_type_id, 1,
         "Kitchen Light")

    fabric, _ = make_fabric()
    commissioning = light.core.commissioning
    commissioning.table.add_pending(fabric)         # after AddNOC: operational already, window still open
    kinds = sorted(type(s).__name__ for s in manager._services(light).values())
    assert kinds == ["Commissionable", "Operational"]
    commissioning.complete_commissioning(fabric.fabric_index)
    (service,) = manager._services(light).values()
    assert service == Operational(port=light.port, compressed_fabric_id=fabric.compressed_fabric_id,
                                  node_id=0x55, mrp=service.mrp)


def test_run_home_follows_the_wall_clock_and_gives_nodes_their_turn():
    home = small_home()
    steps = []

    async def go():
        stop = asyncio.Event()
        asyncio.get_running_loop().call_later(0.35, stop.set)
        await run_home(home, 10.0, on_step=lambda: steps.append(home.clock.tick), stop=stop)
    asyncio.run(go())
    # 0.35 s at speed 10 is 3.5 virtual seconds = 35 ticks (timer slack allowed).
    assert 30 <= home.clock.tick <= 45
    assert len(steps) >= 3 and steps == sorted(steps)


def test_run_home_stops_at_end_tick_and_goes_on_after_an_external_jump():
    home = small_home()

    async def go():
        async def jump():
            await asyncio.sleep(0.05)
            home.advance(600)            # POST /clock/advance from the HTTP API, say
        task = asyncio.create_task(jump())
        # Without re-basing its pacer on the jump, run_home would idle for 30 s here.
        await asyncio.wait_for(run_home(home, 20.0, end_tick=6000 + 20), 5)
        await task
    asyncio.run(go())
    assert home.clock.tick == 6020


def test_event_numbers_keep_rising_across_restarts(tmp_path):
    def start_up_number(nodes):
        (record,) = [r for q in nodes["light"].core.im.events.values() for r in q
                     if r.event == C.BasicInformation.Events.StartUp.event_id]
        return record.number

    _, first = build(small_home(), tmp_path)
    im = first["light"].core.im
    for _ in range(5):
        im.shutdown()                                    # any event takes a number
    used = im.event_numbers.next
    _, second = build(small_home(), tmp_path)            # a restart, even after a crash
    _, third = build(small_home(), tmp_path, reset_fabrics=True)
    numbers = [start_up_number(n) for n in (first, second, third)]
    assert numbers[0] < used <= numbers[1] < numbers[2]


def test_only_touched_nodes_have_their_records_re_derived(tmp_path):
    """Issue #12, 1,000 nodes: each step re-derives the mDNS records of the nodes whose state
    may have changed (a commissioning event, a NodeLabel write), never a scan of every node."""
    manager, nodes = build(small_home(), tmp_path)
    for device_id, node in nodes.items():
        manager._adopt(device_id, node)
    derived: list[str] = []
    manager._services = lambda node: derived.append(node.device.id) or {}

    def sync() -> list[str]:
        derived.clear()

        async def go():
            manager.sync_advertisements(everything=False)
        asyncio.run(go())
        return sorted(derived)

    assert sync() == ["fan", "light"]          # new nodes: derived once
    assert sync() == []                         # nothing happened: nothing derived
    nodes["fan"].device.write("BasicInformation", "NodeLabel", "Attic fan", 0)
    assert sync() == ["fan"]                    # the advertised name follows the label
    nodes["light"].core.commissioning.window_changed()
    assert sync() == ["light"]
    nodes["light"].core.receive(b"\x00junk", ("fd00::1", 5540, 0, 0), 0.0)
    assert sync() == []                         # traffic alone changes no record
