"""Matter figures through python-matter-server, the twin next to a matter.js device.

    python bench/bench_matter.py [--rounds 50]

Inside a network namespace this script creates (nothing leaves the machine): python-matter-server,
`twin run` on the default home, and a matter.js On/Off light (npm `@matter/main`, installed by
scripts/install-test-deps.sh into .cache/matterjs; skipped with a note when absent). The
controller commissions one light of each by QR code, then times --rounds attribute reads
(OnOff) and invokes (OnOff.Toggle) over python-matter-server's WebSocket API. Prints a markdown
table: median and p90 per operation, and the ratio twin / matter.js from this same run.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests")]

from netns import Netns, network_namespace, wait_for_line  # noqa: E402
from test_e2e_matter_server import HTTP_URL, LIGHT, WS_URL, start_server, start_twin, stop  # noqa: E402

MATTERJS = REPO / ".cache" / "matterjs" / "node_modules"
MATTERJS_PORT = 5700
MATTERJS_PASSCODE, MATTERJS_DISCRIMINATOR = 20202021, 3840

# A matter.js On/Off light with a given port, passcode and discriminator.
MATTERJS_LIGHT = """
import { ServerNode, VendorId } from "@matter/main";
import { OnOffLightDevice } from "@matter/main/devices/on-off-light";
const [port, passcode, discriminator] = process.argv.slice(2).map(Number);
const node = await ServerNode.create({
  id: "bench-light", network: { port }, commissioning: { passcode, discriminator },
  productDescription: { name: "matter.js light", deviceType: OnOffLightDevice.deviceType },
  basicInformation: { vendorName: "matter.js", vendorId: VendorId(0xfff1), productId: 0x8000,
                      productName: "matter.js light", nodeLabel: "bench light", serialNumber: "bench-1",
                      uniqueId: "bench-1" },
});
await node.add(OnOffLightDevice);
console.log("READY");
await node.run();
"""


def start_matterjs(ns: Netns, workdir: Path) -> subprocess.Popen | None:
    if not MATTERJS.is_dir():
        return None
    folder = workdir / "matterjs"
    folder.mkdir()
    (folder / "node_modules").symlink_to(MATTERJS)
    (folder / "light.mjs").write_text(MATTERJS_LIGHT)
    log = folder / "light.log"
    env = dict(os.environ, HOME=str(folder), MATTER_STORAGE_PATH=str(folder / "storage"))
    proc = ns.popen(["node", "light.mjs", str(MATTERJS_PORT), str(MATTERJS_PASSCODE), str(MATTERJS_DISCRIMINATOR)],
                    cwd=str(folder), env=env, stdout=open(log, "w"), stderr=subprocess.STDOUT)
    wait_for_line(log, lambda line: "READY" in line, 60)
    return proc


def measure(peers: dict[str, str], rounds: int) -> dict[str, dict[str, Any]]:
    """Inside the namespace: commission each peer by code, then time reads and invokes."""
    return asyncio.run(_measure(peers, rounds))


async def _measure(peers: dict[str, str], rounds: int) -> dict[str, dict[str, Any]]:
    import aiohttp
    from chip.clusters import Objects as Clusters
    from matter_server.client.client import MatterClient

    async with aiohttp.ClientSession() as http:
        async with http.get(HTTP_URL + "/codes") as response:
            codes = {row["device"]: row for row in (await response.json())["codes"]}
        client = MatterClient(WS_URL, http)
        deadline = time.monotonic() + 60
        while True:
            try:
                await client.connect()
                break
            except Exception:
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.5)
        ready = asyncio.Event()
        listening = asyncio.create_task(client.start_listening(ready))
        await ready.wait()
        results: dict[str, dict[str, Any]] = {}
        path = f"1/{Clusters.OnOff.id}/{Clusters.OnOff.Attributes.OnOff.attribute_id}"
        try:
            for name, code in peers.items():
                code = codes[LIGHT]["qr_code"] if code == "twin" else code
                started = time.perf_counter()
                node = await client.commission_with_code(code, network_only=True)
                figures: dict[str, Any] = {"commission": [time.perf_counter() - started], "read": [], "invoke": []}
                for _ in range(rounds):
                    started = time.perf_counter()
                    await client.read_attribute(node.node_id, path)
                    figures["read"].append(time.perf_counter() - started)
                for _ in range(rounds):
                    started = time.perf_counter()
                    await client.send_device_command(node.node_id, 1, Clusters.OnOff.Commands.Toggle())
                    figures["invoke"].append(time.perf_counter() - started)
                results[name] = figures
        finally:
            await client.disconnect()
            listening.cancel()
        return results


def _ms(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return 1000 * ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def table(results: dict[str, dict[str, list[float]]]) -> str:
    peers = list(results)
    head = "| operation | " + " | ".join(f"{p} median (p90) ms" for p in peers)
    head += " | twin / matter.js |" if len(peers) == 2 else " |"
    lines = [head, "|" + "---|" * (len(peers) + 1 + (len(peers) == 2))]
    for op in ("commission", "read", "invoke"):
        cells = []
        for peer in peers:
            values = results[peer][op]
            cells.append(f"{1000 * statistics.median(values):.1f}" + (f" ({_ms(values, 0.9):.1f})" if len(values) > 1 else ""))
        line = f"| {op} (n={len(results[peers[0]][op])}) | " + " | ".join(cells) + " |"
        if len(peers) == 2:
            ratio = statistics.median(results[peers[0]][op]) / statistics.median(results[peers[1]][op])
            line += f" {ratio:.2f} |"
        lines.append(line)
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=50, help="reads and invokes per device")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-matter-") as tmp, network_namespace("mtb") as ns:
        workdir = Path(tmp)
        server = start_server(ns, workdir)
        twin = matterjs = None
        try:
            twin = start_twin(ns, workdir, "twin.log")
            matterjs = start_matterjs(ns, workdir)
            peers = {"twin": "twin"}
            if matterjs is not None:
                from twin.node.pairing import SetupPayload
                peers["matter.js"] = SetupPayload(passcode=MATTERJS_PASSCODE, discriminator=MATTERJS_DISCRIMINATOR,
                                                  vendor_id=0xFFF1, product_id=0x8000).qr_code()
            else:
                print(f"note: no matter.js in {MATTERJS} (scripts/install-test-deps.sh installs it); twin only")
            # The namespace's child process imports `measure` by module name or file: not __main__.
            sys.path.insert(0, str(Path(__file__).resolve().parent))
            import bench_matter
            results = ns.call(bench_matter.measure, peers, args.rounds, timeout=600)
        finally:
            for proc in (matterjs, twin, server):
                if proc is not None:
                    stop(proc, signal.SIGTERM)
    print(f"python-matter-server 7.0.1 in a network namespace, {args.rounds} rounds, "
          f"{os.cpu_count()} CPUs\n")
    print(table(results))


if __name__ == "__main__":
    main()
