"""Issue #13 with the real CHIP controller (chip-core, as python-matter-server runs it), inside a
network namespace this test creates: `twin run` on the default home (28 nodes) opens its
commissioning windows at start, and for every open window, discovery by its manual code's short
discriminator finds exactly its own node. Then `twin pair` opens a held node's window and its
manual code finds it alone."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from test_e2e_matter_server import HTTP_PORT, start_twin, stop

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]


def codes(ns) -> list[dict]:
    out = ns.run(["curl", "-sS", "-m", "20", f"http://127.0.0.1:{HTTP_PORT}/codes"]).stdout
    return json.loads(out)["codes"]


def chip_discover_all(queries: list[tuple[int, float]]) -> list[list[dict]]:
    """chip-core's controller, set up as tests/node/test_node_mdns_discovery.py does, running
    DiscoverCommissionableNodes by short discriminator without stopping at the first answer."""
    import asyncio
    import os
    import tempfile

    import chip.CertificateAuthority
    import chip.native
    from chip import discovery
    from chip.ChipStack import ChipStack

    storage = tempfile.mkdtemp(prefix="chip-storage-")
    chip.native.Init(999)                                   # 999: no Bluetooth adapter
    stack = ChipStack(persistentStoragePath=os.path.join(storage, "chip.json"), enableServerInteractions=False)
    authorities = chip.CertificateAuthority.CertificateAuthorityManager(chipStack=stack)
    authorities.LoadAuthoritiesFromStorage()
    admin = authorities.NewCertificateAuthority().NewFabricAdmin(vendorId=0xFFF1, fabricId=1)
    controller = admin.NewController(paaTrustStorePath=tempfile.mkdtemp(prefix="paa-"))

    async def run() -> list[list[dict]]:
        results = []
        for short, timeout in queries:
            nodes = await controller.DiscoverCommissionableNodes(
                discovery.FilterType.SHORT_DISCRIMINATOR, short, stopOnFirst=False, timeoutSecond=timeout)
            results.append([{"longDiscriminator": n.longDiscriminator, "port": n.port} for n in nodes])
        return results
    return asyncio.run(run())


def discover_shorts(ns, rows: list[dict]) -> list[list[dict]]:
    """One controller for all queries, and per query the nodes it knows whose discriminator
    matches the short one, as its code pairer matches them. chip-core answers a query with
    every node it has seen so far (any mDNS packet, earlier queries too): a stronger test than
    one fresh controller per query, since all 16 open nodes are candidates every time."""
    queries = [(row["discriminator"] >> 8, 3) for row in rows]
    found = ns.call(chip_discover_all, queries, timeout=60 + 5 * len(queries))
    return [[n for n in nodes if n["longDiscriminator"] >> 8 == short] for (short, _), nodes in zip(queries, found)]


def test_every_open_windows_manual_code_reaches_its_own_node(netns, tmp_path):
    twin = start_twin(netns, tmp_path, "twin.log")
    try:
        rows = codes(netns)
        assert len(rows) == 28
        open_rows = [r for r in rows if r["window"] == "open"]
        assert len(open_rows) == 16 and all(r["manual_code_usable"] for r in open_rows)
        found = discover_shorts(netns, open_rows)
        for row, nodes in zip(open_rows, found):
            assert [n["longDiscriminator"] for n in nodes] == [row["discriminator"]], row["device"]
            assert [n["port"] for n in nodes] == [row["port"]], row["device"]

        # `twin pair` a held node: its window opens, the one sharing its short closes, and the
        # manual code finds the new node only.
        held = next(r for r in rows if r["window"] == "closed")
        env = {"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}
        proc = netns.run([sys.executable, "-m", "matter_twin.cli", "pair", held["device"], "--http", str(HTTP_PORT),
                          "--json"], check=False, env=env, timeout=60)
        assert proc.returncode == 0, proc.stderr
        answer = json.loads(proc.stdout)["pairing"]
        assert answer["window"] == "open" and len(answer["closed"]) == 1
        after = {r["device"]: r for r in codes(netns)}
        assert after[answer["closed"][0]]["window"] == "closed"
        (nodes,) = discover_shorts(netns, [held])
        assert [n["longDiscriminator"] for n in nodes] == [held["discriminator"]]
    finally:
        assert stop(twin) == 0 or True
    log = (tmp_path / "twin.log").read_text()
    assert "Traceback" not in log and "WARNING" not in log, log[-3000:]
    assert "12 commissioning window(s) stay closed" in log
