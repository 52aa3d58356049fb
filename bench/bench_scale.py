"""Scale: a generated 135-device home (plus a room-sensor node per room) as Matter nodes in one
`twin run` process: idle memory and CPU, before and after a controller commissions them.

    python bench/bench_scale.py [--devices 135] [--rooms 12] [--seconds 60] [--commission N]

Inside a network namespace this script creates (mDNS stays on this machine): `twin run --speed 1`
on `twin home generate --devices 135`, every device and room sensor a node with its own UDP port
and mDNS records. Measured from /proc for the twin's process over --seconds of idle running:
resident memory (VmRSS, and VmHWM) and CPU time (user + system) as a share of one core.
With --commission N (0 = none, -1 = all), python-matter-server commissions N nodes by QR code,
each keeping the subscription the server opens after commissioning, and the idle window is
measured again with those subscriptions held. Prints a markdown table.
"""
from __future__ import annotations

import argparse
import asyncio
import os
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
from test_e2e_matter_server import controller_session, start_server, stop, tail  # noqa: E402

HTTP_PORT = 8088    # HTTP_URL's port
CLK_TCK = os.sysconf("SC_CLK_TCK")


def proc_figures(pid: int) -> dict[str, float]:
    """CPU seconds so far, and RSS / peak RSS in MB, of one process."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / CLK_TCK          # utime + stime
    status = {line.split(":")[0]: line.split()[1] for line in Path(f"/proc/{pid}/status").read_text().splitlines()
              if line.startswith(("VmRSS", "VmHWM"))}
    return {"cpu": cpu, "rss": int(status["VmRSS"]) / 1024, "hwm": int(status["VmHWM"]) / 1024}


def idle_window(pid: int, seconds: float) -> dict[str, float]:
    start, t0 = proc_figures(pid), time.monotonic()
    time.sleep(seconds)
    end, t1 = proc_figures(pid), time.monotonic()
    return {"cpu %": 100 * (end["cpu"] - start["cpu"]) / (t1 - t0), "rss MB": end["rss"], "peak rss MB": end["hwm"],
            "seconds": t1 - t0}


def start_twin(ns: Netns, workdir: Path, home: Path) -> subprocess.Popen:
    log = workdir / "twin.log"
    env = dict(os.environ, PYTHONPATH=str(REPO), PYTHONUNBUFFERED="1")
    proc = ns.popen([sys.executable, "-m", "matter_twin.cli", "run", "--home", str(home), "--speed", "1", "--matter",
                     "--storage", str(workdir / "twin-storage"), "--http", str(HTTP_PORT),
                     "--open-windows", "all-qr"],   # every node pairs by QR code at once
                    stdout=open(log, "w"), stderr=subprocess.STDOUT, cwd=str(workdir), env=env)
    try:
        wait_for_line(log, lambda line: line.startswith("http: "), 300)
    except TimeoutError:
        stop(proc)
        raise SystemExit(f"twin run did not come up:\n{tail(log)}") from None
    return proc


def commission(count: int) -> dict[str, Any]:
    """Inside the namespace: commission `count` nodes (-1: all) through python-matter-server."""
    return asyncio.run(controller_session(_commission, count))


async def _commission(client: Any, twin: Any, count: int) -> dict[str, Any]:
    codes = (await twin.get("/codes"))["codes"]
    seconds, failed = [], []
    for row in codes if count < 0 else codes[:count]:
        started = time.monotonic()
        try:
            await client.commission_with_code(row["qr_code"], network_only=True)
            seconds.append(time.monotonic() - started)
        except Exception as err:  # noqa: BLE001 - counted and reported
            failed.append(f"{row['device']}: {type(err).__name__}: {err}")
    return {"commissioned": len(seconds), "failed": failed, "seconds": seconds,
            "nodes in server": len(client.get_nodes())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--devices", type=int, default=135)
    parser.add_argument("--rooms", type=int, default=12)
    parser.add_argument("--seconds", type=float, default=60, help="length of each idle window")
    parser.add_argument("--commission", type=int, default=0, help="nodes to commission (-1: all, 0: none)")
    args = parser.parse_args()
    rows: list[tuple[str, dict[str, float]]] = []
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as tmp, network_namespace("mts") as ns:
        workdir = Path(tmp)
        home = workdir / "home.yaml"
        subprocess.run([sys.executable, "-m", "matter_twin.cli", "home", "generate", "--seed", "1", "--rooms",
                        str(args.rooms), "--devices", str(args.devices), "-o", str(home)],
                       check=True, cwd=str(REPO), env=dict(os.environ, PYTHONPATH=str(REPO)), capture_output=True)
        server = start_server(ns, workdir) if args.commission else None
        started = time.monotonic()
        twin = start_twin(ns, workdir, home)
        try:
            up = time.monotonic() - started
            nodes = len([line for line in (workdir / "twin.log").read_text().splitlines()
                         if line.startswith("pairing: ")])
            time.sleep(5)   # mDNS probing and announcements settle
            rows.append((f"idle, {nodes} nodes, no controller", idle_window(twin.pid, args.seconds)))
            result = None
            if args.commission:
                sys.path.insert(0, str(Path(__file__).resolve().parent))
                import bench_scale
                result = ns.call(bench_scale.commission, args.commission, timeout=3600)
                time.sleep(5)
                rows.append((f"idle, {result['commissioned']} commissioned and subscribed",
                             idle_window(twin.pid, args.seconds)))
        finally:
            stop(twin, signal.SIGTERM)
            if server is not None:
                stop(server, signal.SIGTERM)
    print(f"`twin run` with {args.devices} devices in {args.rooms} rooms (+{args.rooms} room-sensor nodes), "
          f"{os.cpu_count()} CPUs, up in {up:.1f} s; idle windows of {args.seconds:g} s\n")
    print("| state | CPU (% of one core) | RSS MB | peak RSS MB |")
    print("|---|---|---|---|")
    for name, f in rows:
        print(f"| {name} | {f['cpu %']:.1f} | {f['rss MB']:.0f} | {f['peak rss MB']:.0f} |")
    if result is not None:
        secs = sorted(result["seconds"]) or [float("nan")]
        print(f"\ncommissioned {result['commissioned']} nodes (server holds {result['nodes in server']}); "
              f"per node median {secs[len(secs) // 2]:.2f} s, max {secs[-1]:.2f} s; "
              f"failures: {len(result['failed'])}")
        for line in result["failed"][:10]:
            print(f"- {line}")


if __name__ == "__main__":
    main()
