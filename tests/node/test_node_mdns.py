"""mDNS advertisement: record contents (pure) and, inside a test-made network namespace, a real
zeroconf browser finding nodes by subtype, seeing updates and goodbyes."""
from __future__ import annotations

import asyncio
import json
import os
import random
import time
from pathlib import Path

import pytest
from netns import append_line, wait_for_line

from matter_protocol.mdns import Commissionable, Mrp, Operational
from twin.node.advertiser import Advertiser

CFID = bytes.fromhex("87E1B004E235A130")
LIGHT = Commissionable(port=5540, discriminator=3840, vendor_id=0xFFF1, product_id=0x8000,
                       device_type=0x0100, device_name="Kitchen light")
LIGHT_OP = Operational(port=5540, compressed_fabric_id=CFID, node_id=0x8FC7772401CD0696)
DECOY = Commissionable(port=5541, discriminator=1234, vendor_id=0xFFF2, product_id=0x8001,
                       device_type=0x0302)


# --- records, no network ---------------------------------------------------------------------

def test_commissionable_txt_and_subtypes():
    assert LIGHT.txt() == {"D": "3840", "CM": "1", "VP": "65521+32768", "DT": "256",
                           "DN": "Kitchen light", "SII": "500", "SAI": "300", "SAT": "4000",
                           "PH": "33"}
    assert LIGHT.subtypes() == ["_L3840._sub._matterc._udp.local.",
                                "_S15._sub._matterc._udp.local.",
                                "_V65521._sub._matterc._udp.local.",
                                "_CM._sub._matterc._udp.local."]
    closed = Commissionable(port=5540, discriminator=5, vendor_id=1, product_id=2, device_type=3,
                            commissioning_mode=0, pairing_instruction="10",
                            mrp=Mrp(idle_interval_ms=5000, active_interval_ms=400))
    assert closed.subtypes() == ["_L5._sub._matterc._udp.local.", "_S0._sub._matterc._udp.local.",
                                 "_V1._sub._matterc._udp.local."]
    assert closed.txt() == {"D": "5", "CM": "0", "VP": "1+2", "DT": "3", "SII": "5000",
                            "SAI": "400", "SAT": "4000", "PH": "33", "PI": "10"}


def test_operational_instance_and_subtype():
    assert LIGHT_OP.instance() == "87E1B004E235A130-8FC7772401CD0696"
    assert Operational(port=1, compressed_fabric_id=bytes(8), node_id=1).instance() == \
        "0000000000000000-0000000000000001"
    assert LIGHT_OP.subtypes() == ["_I87E1B004E235A130._sub._matter._tcp.local."]
    assert LIGHT_OP.txt() == {"SII": "500", "SAI": "300", "SAT": "4000"}


@pytest.mark.parametrize("bad, message", [
    (dict(discriminator=4096), "discriminator 4096"),
    (dict(vendor_id=-1), "vendor_id -1"),
    (dict(commissioning_mode=3), "commissioning_mode 3"),
    (dict(port=0), "port 0"),
    (dict(device_name="x" * 33), "longer than 32 bytes"),
])
def test_commissionable_rejects_out_of_range(bad, message):
    fields = dict(port=5540, discriminator=1, vendor_id=1, product_id=1, device_type=1) | bad
    with pytest.raises(ValueError, match=message):
        Commissionable(**fields)


def test_operational_rejects_bad_fabric_and_node():
    with pytest.raises(ValueError, match="8 bytes"):
        Operational(port=1, compressed_fabric_id=b"\x01", node_id=1)
    with pytest.raises(ValueError, match="node_id 0"):
        Operational(port=1, compressed_fabric_id=CFID, node_id=0)


def test_instance_names_are_deterministic_from_the_rng():
    # No publish here: the Advertiser opens no socket until it advertises something.
    a, b = Advertiser(random.Random(7)), Advertiser(random.Random(7))
    names = [a.instance_name(n, LIGHT) for n in ("n1", "n2", "n1")]
    assert names == [b.instance_name(n, LIGHT) for n in ("n1", "n2", "n1")]
    # A known name draws nothing more from the rng.
    expected = random.Random(7)
    assert names[:2] == [f"{expected.getrandbits(64):016X}._matterc._udp.local." for _ in "ab"]
    assert names[0] == names[2] != names[1]
    label, service = names[0].split(".", 1)
    assert service == "_matterc._udp.local." and len(label) == 16 and label == label.upper()
    int(label, 16)
    assert a.instance_name("n1", LIGHT_OP) == \
        "87E1B004E235A130-8FC7772401CD0696._matter._tcp.local."
    assert a._aiozc is None and b._aiozc is None   # naming opened no socket here


# --- subprocess bodies (run inside the namespace by tests/netns.py) ----------------------------

def run_advertiser(control: str, seed: int, nodes: list, steps: dict) -> str:
    """Publish `nodes` ([(node, service)]), write 'ready' to control/status, then run the steps
    named in control/commands ([(node, service or None to withdraw the node)]) until 'close'."""
    async def main() -> None:
        adv = Advertiser(random.Random(seed))
        await asyncio.gather(*(adv.publish(node, svc) for node, svc in nodes))
        status, commands = Path(control, "status"), Path(control, "commands")
        append_line(status, "ready " + json.dumps(
            {str(node): adv.instance_name(node, svc) for node, svc in nodes
             if isinstance(svc, Commissionable)}))
        done = 0
        while True:
            lines = commands.read_text().splitlines() if commands.exists() else []
            for command in lines[done:]:
                done += 1
                if command == "close":
                    await adv.close()
                    append_line(status, "closed")
                    return
                for node, svc in steps[command]:
                    await (adv.publish(node, svc) if svc is not None else adv.withdraw(node))
                append_line(status, f"done {command}")
            await asyncio.sleep(0.05)
    asyncio.run(main())
    return "ok"


def run_browser(events: str, types: list[str], stop: str, limit: float = 60) -> str:
    """Browse `types` with zeroconf; one JSON line per add/update/remove (with TXT) to `events`."""
    from zeroconf import IPVersion, ServiceBrowser, Zeroconf

    zc = Zeroconf(ip_version=IPVersion.All)

    class Listener:
        def _log(self, event, type_, name):
            txt = None
            if event != "remove":
                info = zc.get_service_info(type_, name, timeout=3000)
                txt = info and {k.decode(): (v or b"").decode() for k, v in info.properties.items()}
            append_line(events, json.dumps({"event": event, "type": type_, "name": name,
                                            "txt": txt}))

        def add_service(self, _zc, type_, name):
            self._log("add", type_, name)

        def update_service(self, _zc, type_, name):
            self._log("update", type_, name)

        def remove_service(self, _zc, type_, name):
            self._log("remove", type_, name)

    browser = ServiceBrowser(zc, types, Listener())
    deadline = time.monotonic() + limit
    while not os.path.exists(stop) and time.monotonic() < deadline:
        time.sleep(0.05)
    browser.cancel()
    zc.close()
    return "ok"


# --- in a namespace ----------------------------------------------------------------------------

S15 = "_S15._sub._matterc._udp.local."
CM = "_CM._sub._matterc._udp.local."
L1234 = "_L1234._sub._matterc._udp.local."
BASE = "_matterc._udp.local."
I_CFID = "_I87E1B004E235A130._sub._matter._tcp.local."


@pytest.mark.e2e
def test_browse_subtypes_update_and_goodbye(netns, tmp_path):
    control, events, stop = str(tmp_path), str(tmp_path / "events"), str(tmp_path / "stop")
    steps = {"close window": [("light", Commissionable(**{**LIGHT.__dict__,
                                                          "commissioning_mode": 0}))],
             "withdraw light": [("light", None)]}
    advertiser = netns.start(run_advertiser, control, 11,
                             [("light", LIGHT), ("light", LIGHT_OP), ("decoy", DECOY)], steps)
    browser = None
    try:
        line, _ = wait_for_line(tmp_path / "status", lambda s: s.startswith("ready"), 30)
        names = json.loads(line.split(" ", 1)[1])
        light, decoy = names["light"], names["decoy"]
        browser = netns.start(run_browser, events, [S15, CM, L1234, BASE, I_CFID], stop)

        def seen(event, type_, name, start=0, timeout=15):
            line, index = wait_for_line(events, lambda s: (lambda e: (
                e["event"], e["type"], e["name"]) == (event, type_, name))(json.loads(s)),
                timeout, start)
            return json.loads(line), index

        # The manual-code subtype finds the light, with its TXT; the QR subtype finds the decoy.
        found, _ = seen("add", S15, light)
        assert found["txt"] == {"D": "3840", "CM": "1", "VP": "65521+32768", "DT": "256",
                                "DN": "Kitchen light", "SII": "500", "SAI": "300",
                                "SAT": "4000", "PH": "33"}
        seen("add", CM, light)
        seen("add", L1234, decoy)
        op, _ = seen("add", I_CFID, "87E1B004E235A130-8FC7772401CD0696._matter._tcp.local.")
        assert op["txt"] == {"SII": "500", "SAI": "300", "SAT": "4000"}

        # Window closes: _CM says goodbye, the instance stays with CM=0.
        append_line(tmp_path / "commands", "close window")
        _, mark = seen("remove", CM, light)
        wait_for_line(events, lambda s: (lambda e: e["event"] == "update" and e["name"] == light
                                         and (e["txt"] or {}).get("CM") == "0")(json.loads(s)),
                      15)

        # The light leaves: goodbyes for its subtypes, instance and operational record.
        append_line(tmp_path / "commands", "withdraw light")
        seen("remove", S15, light, mark)
        seen("remove", BASE, light, mark)
        seen("remove", I_CFID, "87E1B004E235A130-8FC7772401CD0696._matter._tcp.local.", mark)

        append_line(tmp_path / "commands", "close")
        seen("remove", L1234, decoy)
        all_events = [json.loads(s) for s in Path(events).read_text().splitlines()]
        # The light stayed under _S15 until withdrawn; the decoy never showed up there.
        assert not [e for e in all_events if e["type"] == S15 and e["name"] == decoy]
        removed = [i for i, e in enumerate(all_events)
                   if (e["event"], e["type"], e["name"]) == ("remove", S15, light)]
        assert len(removed) == 1 and removed[0] > mark
        assert advertiser.result(30) == "ok"
    finally:
        Path(stop).touch()
        if browser is not None:
            browser.result(30)
        advertiser.terminate()


def run_many(count: int) -> dict:
    """Publish `count` nodes over one zeroconf; browse each node's _L subtype from a second
    zeroconf in the same process; report what was found."""
    from zeroconf import IPVersion
    from zeroconf.asyncio import AsyncServiceBrowser, AsyncZeroconf

    async def main() -> dict:
        adv = Advertiser(random.Random(3))
        nodes = [Commissionable(port=5540 + i, discriminator=i, vendor_id=0xFFF1,
                                product_id=0x8000, device_type=0x0100) for i in range(count)]
        names = await asyncio.gather(*(adv.publish(i, n) for i, n in enumerate(nodes)))
        found: dict[str, set] = {}
        client = AsyncZeroconf(ip_version=IPVersion.All)

        def on_change(zeroconf, service_type, name, state_change):
            found.setdefault(service_type, set()).add(name)
        types = [f"_L{i}._sub._matterc._udp.local." for i in range(count)]
        browser = AsyncServiceBrowser(client.zeroconf, types, handlers=[on_change])
        for _ in range(100):
            if len(found) == count:
                break
            await asyncio.sleep(0.1)
        await browser.async_cancel()
        await client.async_close()
        await adv.close()
        return {"names": names,
                "found": {t: sorted(n) for t, n in found.items()}}
    return asyncio.run(main())


@pytest.mark.e2e
def test_many_nodes_over_one_zeroconf(netns):
    count = 24
    result = netns.call(run_many, count, timeout=60)
    assert len(set(result["names"])) == count
    # Each node is found under its own _L subtype, and only there.
    assert result["found"] == {f"_L{i}._sub._matterc._udp.local.": [result["names"][i]]
                               for i in range(count)}
