"""Matter figures through python-matter-server, the twin next to a matter.js device.

    python bench/bench_matter.py [--rounds 50] [--gap 1.5]

Inside a network namespace this script creates (nothing leaves the machine): python-matter-server
7.0.1, `twin run` on the default home (every device and room sensor a node of one process), and
a matter.js On/Off light (npm `@matter/main`, installed by scripts/install-test-deps.sh into
.cache/matterjs; skipped with a note when absent; one node per process). The controller
commissions one light of each by QR code (the twin's kitchen_light), then, one device after the
other:

  read          --rounds reads of OnOff (1/6/0), each a python-matter-server WebSocket call
                `read_attribute`, timed from the call until its answer.
  invoke        --rounds OnOff.Toggle commands (`send_device_command`), timed the same way.
  report        --rounds changes made on the device side, timed from the change until the
                client's ATTRIBUTE_UPDATED event (`subscribe_events`) for 1/6/0 carries the new
                value. The change goes through the subscription python-matter-server opened
                after commissioning (wildcard paths, min interval floor 1 s and max interval
                ceiling 60 s for a non-ICD node; the intervals the node granted are read from the
                server log and printed). Twin: OnOff.On/Off through the twin's HTTP tool API
                (`POST /tools/execute_command`), i.e. a change in the simulation; matter.js: a
                line "on"/"off" written to the light process's stdin, which sets its own OnOff
                state with `endpoint.set(...)`. Changes are --gap seconds apart (counted from the
                previous report), above the 1 s min interval, so none is held back by it.
  commission    one `commission_with_code` per node (PASE, attestation, NOC, CASE and the first
                subscription), in ms.
  RSS per node  VmRSS from /proc/<pid>/status after all rounds, with the commissioned node still
                subscribed: the twin process's RSS divided by the number of nodes it serves (all
                of them, although one is commissioned); the matter.js process's RSS as is (one
                node). `ip netns exec` execs, so the Popen pid is the process itself.

Prints one markdown table. Columns: the twin, matter.js, and twin / matter.js (below 1: the twin
is faster or smaller). Latency cells are "p50 / p99" in ms, nearest rank over --rounds values
(with 50 rounds p99 is the slowest round); the ratio cell is the ratio of the p50s / of the p99s.
"""
from __future__ import annotations

import argparse
import asyncio
import math
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests")]

from netns import Netns, network_namespace, test_folders, wait_for_line  # noqa: E402

sys.path[:0] = [str(folder) for folder in test_folders()]   # the e2e helpers live in tests/e2e
from test_e2e_matter_server import LIGHT, controller_session, start_server, start_twin, stop  # noqa: E402

MATTERJS = REPO / ".cache" / "matterjs" / "node_modules"
MATTERJS_PORT = 5700
MATTERJS_PASSCODE, MATTERJS_DISCRIMINATOR = 20202021, 3840
REPORT_TIMEOUT = 10     # seconds to wait for one subscription report before counting it missed

# A matter.js On/Off light with a given port, passcode and discriminator. Each line "on" or "off"
# on stdin sets its own OnOff state, as a local change on the device would.
MATTERJS_LIGHT = """
import { createInterface } from "node:readline";
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
const light = await node.add(OnOffLightDevice);
createInterface({ input: process.stdin }).on("line", line => {
  const word = line.trim();
  if (word === "on" || word === "off") light.set({ onOff: { onOff: word === "on" } });
});
console.log("READY");
await node.run();
"""


def start_matterjs(ns: Netns, workdir: Path) -> tuple[subprocess.Popen, Path] | None:
    """The matter.js light, its stdin a FIFO (returned) that any process may write lines to."""
    if not MATTERJS.is_dir():
        return None
    folder = workdir / "matterjs"
    folder.mkdir()
    (folder / "node_modules").symlink_to(MATTERJS)
    (folder / "light.mjs").write_text(MATTERJS_LIGHT)
    log = folder / "light.log"
    fifo = folder / "commands"
    os.mkfifo(fifo)
    # Opened read-write, the FIFO neither blocks here nor ever reaches EOF for the light.
    commands = os.open(fifo, os.O_RDWR)
    env = dict(os.environ, HOME=str(folder), MATTER_STORAGE_PATH=str(folder / "storage"))
    try:
        proc = ns.popen(["node", "light.mjs", str(MATTERJS_PORT), str(MATTERJS_PASSCODE), str(MATTERJS_DISCRIMINATOR)],
                        cwd=str(folder), env=env, stdin=commands, stdout=open(log, "w"), stderr=subprocess.STDOUT)
    finally:
        os.close(commands)      # the child has its own copy
    wait_for_line(log, lambda line: "READY" in line, 60)
    return proc, fifo


def measure(peers: dict[str, dict[str, Any]], rounds: int, gap: float) -> dict[str, dict[str, Any]]:
    """Inside the namespace: commission each peer by code, then time reads, invokes and reports."""
    return asyncio.run(controller_session(_measure, (peers, rounds, gap)))


async def _measure(client: Any, twin: Any,
                   job: tuple[dict[str, dict[str, Any]], int, float]) -> dict[str, dict[str, Any]]:
    from chip.clusters import Objects as Clusters
    from matter_server.common.models import EventType

    peers, rounds, gap = job
    codes = {row["device"]: row for row in (await twin.get("/codes"))["codes"]}
    path = f"1/{Clusters.OnOff.id}/{Clusters.OnOff.Attributes.OnOff.attribute_id}"
    results: dict[str, dict[str, Any]] = {}
    for name, peer in peers.items():
        code = codes[LIGHT]["qr_code"] if peer["kind"] == "twin" else peer["code"]
        started = time.perf_counter()
        node = await client.commission_with_code(code, network_only=True)
        figures: dict[str, Any] = {"commission": [time.perf_counter() - started], "read": [], "invoke": [],
                                   "report": [], "missed": 0, "node_id": node.node_id, "nodes": len(codes)}
        for _ in range(rounds):
            started = time.perf_counter()
            await client.read_attribute(node.node_id, path)
            figures["read"].append(time.perf_counter() - started)
        for _ in range(rounds):
            started = time.perf_counter()
            await client.send_device_command(node.node_id, 1, Clusters.OnOff.Commands.Toggle())
            figures["invoke"].append(time.perf_counter() - started)

        # Subscription reports of device-side changes.
        if peer["kind"] == "twin":
            async def change(on: bool) -> None:
                await twin.tool("execute_command", {"device.id": LIGHT, "endpoint.id": 1, "cluster.id": "OnOff",
                                                    "command.id": "On" if on else "Off", "args": {}})
        else:
            commands = open(peer["fifo"], "w", buffering=1)

            async def change(on: bool, commands: Any = commands) -> None:
                commands.write("on\n" if on else "off\n")
        waiting: dict[str, Any] = {}

        def on_update(event: Any, value: Any, waiting: dict[str, Any] = waiting) -> None:
            future = waiting.get("future")
            if future is not None and not future.done() and value == waiting["value"]:
                future.set_result(time.perf_counter())
        unsubscribe = client.subscribe_events(on_update, EventType.ATTRIBUTE_UPDATED, node_filter=node.node_id,
                                              attr_path_filter=path)
        try:
            await asyncio.sleep(gap)     # the invokes' own reports have arrived
            state = (await client.read_attribute(node.node_id, path)).get(path)
            for _ in range(rounds):
                await asyncio.sleep(gap)
                state = not state
                waiting.update(value=state, future=asyncio.get_running_loop().create_future())
                started = time.perf_counter()
                await change(state)
                try:
                    figures["report"].append(await asyncio.wait_for(waiting["future"], REPORT_TIMEOUT) - started)
                except TimeoutError:
                    figures["missed"] += 1
        finally:
            unsubscribe()
            if peer["kind"] != "twin":
                commands.close()
        results[name] = figures
    return results


def main_pid(pid: int) -> int:
    """The process doing the work: `pid` itself, or its child while `pid` is an `ip netns exec`
    that forked (iproute2 execs, so normally `pid` itself)."""
    while Path(f"/proc/{pid}/comm").read_text().strip() == "ip":
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        if len(children) != 1:
            break
        pid = int(children[0])
    return pid


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{main_pid(pid)}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")


def granted_intervals(server_log: Path) -> dict[int, list[tuple[int, int]]]:
    """Per node id, the [min, max] report intervals of each subscription the server set up."""
    found: dict[int, list[tuple[int, int]]] = {}
    pattern = re.compile(r"<Node:(\d+)> Subscription succeeded with report interval \[(\d+), (\d+)\]")
    text = re.sub(r"\x1b\[[0-9;]*m", "", server_log.read_text(errors="replace"))    # coloredlogs' colours
    for match in pattern.finditer(text):
        found.setdefault(int(match[1]), []).append((int(match[2]), int(match[3])))
    return found


def _ms(values: list[float], q: float) -> float:
    """Nearest-rank percentile q (0..1] of seconds, in ms."""
    if not values:
        return math.nan
    ordered = sorted(values)
    return 1000 * ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def table(results: dict[str, dict[str, Any]]) -> str:
    peers = list(results)
    pair = len(peers) == 2
    lines = ["| figure | " + " | ".join(peers) + (" | twin / matter.js |" if pair else " |"),
             "|" + "---|" * (len(peers) + 1 + pair)]

    def row(label: str, cells: list[str], ratio: str) -> None:
        lines.append(f"| {label} | " + " | ".join(cells) + (f" | {ratio} |" if pair else " |"))

    def ratio(a: float, b: float) -> str:
        return f"{a / b:.2f}" if b and not math.isnan(a) and not math.isnan(b) else "–"

    first, second = (results[p] for p in (peers * 2)[:2])
    for op, label in (("read", "read round trip, p50 / p99 ms"), ("invoke", "invoke round trip, p50 / p99 ms"),
                      ("report", "report after a device-side change, p50 / p99 ms")):
        cells = []
        for peer in peers:
            values = results[peer][op]
            cell = f"{_ms(values, 0.5):.1f} / {_ms(values, 0.99):.1f}"
            missed = results[peer].get("missed", 0) if op == "report" else 0
            cells.append(cell + (f" ({missed} of {len(values) + missed} missed)" if missed else ""))
        row(f"{label} (n={len(results[peers[0]][op])})", cells,
            f"{ratio(_ms(first[op], 0.5), _ms(second[op], 0.5))} / "
            f"{ratio(_ms(first[op], 0.99), _ms(second[op], 0.99))}")
    row("commission, ms per node", [f"{_ms(results[p]['commission'], 0.5):.0f}" for p in peers],
        ratio(_ms(first["commission"], 0.5), _ms(second["commission"], 0.5)))
    cells = []
    for peer in peers:
        f = results[peer]
        cells.append(f"{f['rss'] / f['nodes']:.1f}" + (f" ({f['rss']:.0f} MB / {f['nodes']} nodes)" if f["nodes"] > 1
                                                     else f" ({f['nodes']} node)"))
    row("RSS per node, MB", cells, ratio(first["rss"] / first["nodes"], second["rss"] / second["nodes"]))
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=50, help="reads, invokes and device-side changes per device")
    parser.add_argument("--gap", type=float, default=1.5,
                        help="seconds between one change's report and the next change (above the 1 s min interval)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-matter-") as tmp, network_namespace("mtb") as ns:
        workdir = Path(tmp)
        server = start_server(ns, workdir)
        twin = matterjs = None
        try:
            twin = start_twin(ns, workdir, "twin.log")
            started = start_matterjs(ns, workdir)
            peers: dict[str, dict[str, Any]] = {"twin": {"kind": "twin"}}
            if started is not None:
                from matter_protocol.pairing import SetupPayload
                matterjs, fifo = started
                peers["matter.js"] = {"kind": "matter.js", "fifo": str(fifo), "code": SetupPayload(
                    passcode=MATTERJS_PASSCODE, discriminator=MATTERJS_DISCRIMINATOR, vendor_id=0xFFF1,
                    product_id=0x8000).qr_code()}
            else:
                print(f"note: no matter.js in {MATTERJS} (scripts/install-test-deps.sh installs it); twin only")
            # The namespace's child process imports `measure` by module name or file: not __main__.
            sys.path.insert(0, str(Path(__file__).resolve().parent))
            import bench_matter
            results = ns.call(bench_matter.measure, peers, args.rounds, args.gap, timeout=1800)
            results["twin"]["rss"] = rss_mb(twin.pid)
            served = sum(line.startswith("pairing: ") for line in (workdir / "twin.log").read_text().splitlines())
            if served != results["twin"]["nodes"]:
                print(f"note: twin.log lists {served} nodes, GET /codes {results['twin']['nodes']}")
            if matterjs is not None:
                results["matter.js"].update(rss=rss_mb(matterjs.pid), nodes=1)
            intervals = granted_intervals(workdir / "server.log")
        finally:
            for proc in (matterjs, twin, server):
                if proc is not None:
                    stop(proc, signal.SIGTERM)
    from matter_server.server.device_controller import NODE_SUBSCRIPTION_CEILING_WIFI, NODE_SUBSCRIPTION_FLOOR_DEFAULT
    print(f"python-matter-server 7.0.1 in a network namespace, {args.rounds} rounds, {os.cpu_count()} CPUs; "
          f"subscriptions requested with min interval {NODE_SUBSCRIPTION_FLOOR_DEFAULT} s, "
          f"max {NODE_SUBSCRIPTION_CEILING_WIFI} s; granted "
          + ", ".join(f"{peer} " + (" then ".join(f"[{lo}, {hi}] s" for lo, hi in intervals[f["node_id"]])
                                    if f["node_id"] in intervals else "(not in the server log)")
                      for peer, f in results.items())
          + f"; changes {args.gap:g} s after the previous report\n")
    print(table(results))


if __name__ == "__main__":
    main()
