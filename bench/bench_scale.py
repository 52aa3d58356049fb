"""Scale: a generated home (135 devices by default, about 1,000 nodes with --devices 960 --rooms 40),
plus a room-sensor node per room, as Matter nodes in one `twin run` process: idle memory and CPU,
commissioning by one python-matter-server, and a soak with changes.

    python bench/bench_scale.py [--devices 135] [--rooms 12] [--seconds 60] [--commission N]
                                [--soak 600] [--rate 2]
    python bench/bench_scale.py --devices 960 --rooms 40 --commission -1        # 1,000 nodes
    python bench/bench_scale.py --devices 960 --rooms 40 --commission -1 --commission-minutes 30   # time-boxed
    python bench/bench_scale.py --devices 60 --rooms 5 --commission -1 --soak 60 --seconds 20   # a quick look
    python bench/bench_scale.py --all-types --commission 0 --seconds 30   # nodes of every device type (HomeMaker)
    python bench/bench_scale.py --devices 960 --rooms 40 --commission -1 --keep /tmp/scale-run   # keep the logs

Inside a network namespace this script creates (mDNS stays on this machine): `twin run --speed 1
--open-windows none` on `twin home generate`, every device and room sensor a node with its own UDP
port and mDNS records. Measured from /proc for the twin's process over --seconds of idle running:
resident memory (VmRSS, and VmHWM) and CPU time (user + system) as a share of one core.

With --commission N (0 = none, -1 = all), python-matter-server commissions N nodes one after the
other, as a user would: the twin's `POST /pair/DEVICE` opens the node's window ("press its button"),
then `commission_with_code` with its QR payload. Each node keeps the subscription the server opens
after commissioning, and the idle window is measured again with those subscriptions held. Then,
for --soak seconds (0: no soak), the twin's HTTP tool API toggles OnOff on randomly chosen
commissioned lights, --rate changes a second (a light is changed again only once its previous
change has arrived), while the twin's RSS and CPU are sampled every 10 s. Every change made in the
twin must reach the controller: a change counts as lost when python-matter-server's client sees no
ATTRIBUTE_UPDATED carrying the new value within REPORT_TIMEOUT. Prints markdown tables.
"""
from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests")]

from netns import Netns, NetnsCallError, network_namespace, test_folders, wait_for_line  # noqa: E402

sys.path[:0] = [str(folder) for folder in test_folders()]   # the e2e helpers live in tests/e2e
from test_e2e_matter_server import HTTP_URL, controller_session, start_server, stop, tail  # noqa: E402

HTTP_PORT = 8088    # HTTP_URL's port
CLK_TCK = os.sysconf("SC_CLK_TCK")
REPORT_TIMEOUT = 30     # seconds a change may take to reach the controller before it counts as lost
SAMPLE_S = 10           # RSS / CPU sampling period during the soak
PROBE_S = 2             # period of the responsiveness probes while commissioning
LIGHT_TYPES = ("on_off_light", "dimmable_light")


def proc_figures(pid: int) -> dict[str, float]:
    """CPU seconds so far, and RSS / peak RSS in MB, of one process."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / CLK_TCK          # utime + stime
    status = {line.split(":")[0]: line.split()[1] for line in Path(f"/proc/{pid}/status").read_text().splitlines()
              if line.startswith(("VmRSS", "VmHWM"))}
    return {"cpu": cpu, "rss": int(status["VmRSS"]) / 1024, "hwm": int(status["VmHWM"]) / 1024}


def open_files(pid: int) -> tuple[int, int]:
    """(descriptors open, the soft RLIMIT_NOFILE) of one process: sockets are descriptors too."""
    soft = next(line.split()[3] for line in Path(f"/proc/{pid}/limits").read_text().splitlines()
                if line.startswith("Max open files"))
    return len(os.listdir(f"/proc/{pid}/fd")), int(soft) if soft.isdigit() else -1


def udp_drops(ns: Netns) -> dict[str, int]:
    """Datagrams each process's UDP sockets in the namespace dropped so far because their receive
    buffer was full (`ss -uanmp`: skmem d<N>), by process name."""
    drops: dict[str, int] = {}
    owner = None
    for line in ns.run(["ss", "-uanmp"], check=False).stdout.splitlines():
        if line.startswith(("UNCONN", "ESTAB")):
            found = re.search(r'users:\(\("([^"]+)"', line)
            owner = found.group(1) if found else "?"
        elif "skmem:" in line and owner is not None:
            found = re.search(r",d(\d+)\)", line)
            drops[owner] = drops.get(owner, 0) + (int(found.group(1)) if found else 0)
            owner = None
    return drops


def watch_drops(ns: Netns, progress: Path, stop: threading.Event, out: list[tuple[float, int, dict[str, int]]]) -> None:
    """Every SAMPLE_S until `stop`: (s since start, nodes commissioned, drops by process)."""
    t0 = time.monotonic()
    while not stop.wait(SAMPLE_S):
        words = progress.read_text().split() if progress.exists() else []
        out.append((time.monotonic() - t0, int(words[-2]) if words else 0, udp_drops(ns)))


def idle_window(pid: int, seconds: float, controller: int | None = None) -> dict[str, float]:
    """The twin's CPU share and RSS over `seconds`; with `controller` (a pid), its CPU share too."""
    start, t0 = proc_figures(pid), time.monotonic()
    other = proc_figures(controller)["cpu"] if controller is not None else 0.0
    time.sleep(seconds)
    end, t1 = proc_figures(pid), time.monotonic()
    figures = {"cpu %": 100 * (end["cpu"] - start["cpu"]) / (t1 - t0), "rss MB": end["rss"],
               "peak rss MB": end["hwm"], "seconds": t1 - t0}
    if controller is not None:
        figures["controller cpu %"] = 100 * (proc_figures(controller)["cpu"] - other) / (t1 - t0)
    return figures


def start_twin(ns: Netns, workdir: Path, home: Path) -> subprocess.Popen:
    log = workdir / "twin.log"
    env = dict(os.environ, PYTHONPATH=str(REPO), PYTHONUNBUFFERED="1")
    proc = ns.popen([sys.executable, "-m", "matter_twin.cli", "run", "--home", str(home), "--speed", "1", "--matter",
                     "--storage", str(workdir / "twin-storage"), "--http", str(HTTP_PORT),
                     "--open-windows", "none"],   # each window opens just before its node is commissioned
                    stdout=open(log, "w"), stderr=subprocess.STDOUT, cwd=str(workdir), env=env)
    try:
        wait_for_line(log, lambda line: line.startswith("http: "), 600)
    except TimeoutError:
        stop(proc)
        raise SystemExit(f"twin run did not come up:\n{tail(log)}") from None
    return proc


def commission(count: int, progress: str, minutes: float | None = None) -> dict[str, Any]:
    """Inside the namespace: commission `count` nodes (-1: all) through python-matter-server,
    appending a line to the file `progress` after each; none is started after `minutes`."""
    return asyncio.run(controller_session(_commission, (count, progress, minutes)))


async def _commission(client: Any, twin: Any, job: tuple[int, str, float | None]) -> dict[str, Any]:
    count, progress, minutes = job
    codes = (await twin.get("/codes"))["codes"]
    seconds, failed, node_ids = [], [], {}
    started_all = time.monotonic()
    probes: list[tuple[float, int, float, float | None]] = []
    watcher = asyncio.create_task(_watch(client, twin, node_ids, started_all, probes))
    with open(progress, "a", buffering=1) as out:
        for row in codes if count < 0 else codes[:count]:
            if minutes is not None and time.monotonic() - started_all > 60 * minutes:
                break   # out of time: the figures are for the nodes commissioned so far
            device = row["device"]
            started = time.monotonic()
            try:
                async with twin.http.post(f"{HTTP_URL}/pair/{urllib.parse.quote(device, safe='@')}") as response:
                    opened = (await response.json())["pairing"]
                node = await client.commission_with_code(opened["qr_code"], network_only=True)
                seconds.append(time.monotonic() - started)
                node_ids[device] = node.node_id
            except Exception as err:  # noqa: BLE001 - counted and reported
                failed.append(f"{device}: {type(err).__name__}: {err}")
            out.write(f"{time.time():.1f} {len(seconds)} {len(failed)}\n")   # wall time: matches the server log
    watcher.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await watcher
    return {"commissioned": len(seconds), "failed": failed, "seconds": seconds, "node_ids": node_ids,
            "total seconds": time.monotonic() - started_all, "nodes in server": len(client.get_nodes()),
            "probes": probes}


async def _watch(client: Any, twin: Any, node_ids: dict[str, int], t0: float,
                 probes: list[tuple[float, int, float, float | None]]) -> None:
    """Every PROBE_S while commissioning: how long the twin's event loop takes to answer GET
    /health, and the controller a read of the first node's NodeLabel (through its CHIP stack and
    that node's CASE session). A stall on either side shows as a slow probe."""
    while True:
        started, twin_s = time.monotonic(), float("inf")   # inf: no answer
        with contextlib.suppress(Exception):
            await asyncio.wait_for(twin.get("/health"), 60)
            twin_s = time.monotonic() - started
        controller_s = None
        if node_ids:
            started = time.monotonic()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(client.read_attribute(next(iter(node_ids.values())), "0/40/5"), 60)
                controller_s = time.monotonic() - started
        probes.append((time.monotonic() - t0, len(node_ids), twin_s, controller_s))
        await asyncio.sleep(PROBE_S)


def soak(node_ids: dict[str, int], lights: list[str], seconds: float, rate: float, seed: int) -> dict[str, Any]:
    """Inside the namespace: toggle commissioned lights through the twin's tool API for `seconds`
    at `rate` changes a second; count the changes whose report reached the controller."""
    return asyncio.run(controller_session(_soak, (node_ids, lights, seconds, rate, seed)))


async def _soak(client: Any, twin: Any, job: tuple[dict[str, int], list[str], float, float, int]) -> dict[str, Any]:
    from chip.clusters import Objects as Clusters
    from matter_server.common.models import EventType

    node_ids, lights, seconds, rate, seed = job
    rng = random.Random(seed)
    path = f"1/{Clusters.OnOff.id}/{Clusters.OnOff.Attributes.OnOff.attribute_id}"
    waiting: dict[str, tuple[bool, float]] = {}     # light -> (value it was set to, when)
    latencies: list[float] = []
    lost: list[str] = []
    arrived = asyncio.Event()

    def on_update(device: str, event: Any, value: Any) -> None:
        change = waiting.get(device)
        if change is not None and value == change[0]:
            latencies.append(time.monotonic() - change[1])
            del waiting[device]
            arrived.set()

    unsubscribe = [client.subscribe_events(functools.partial(on_update, light), EventType.ATTRIBUTE_UPDATED,
                                           node_filter=node_ids[light], attr_path_filter=path) for light in lights]
    changes = 0
    try:
        end = time.monotonic() + seconds
        next_change = time.monotonic()
        while time.monotonic() < end:
            now = time.monotonic()
            for light, (_, sent) in list(waiting.items()):
                if now - sent > REPORT_TIMEOUT:
                    lost.append(light)
                    del waiting[light]
            idle = [light for light in lights if light not in waiting]
            if idle and now >= next_change:
                light = rng.choice(idle)
                state = await twin.on_off(light)
                waiting[light] = (not state, time.monotonic())
                await twin.tool("execute_command", {"device.id": light, "endpoint.id": 1, "cluster.id": "OnOff",
                                                    "command.id": "Off" if state else "On", "args": {}})
                changes += 1
                next_change += 1 / rate
            await asyncio.sleep(max(0.0, min(next_change - time.monotonic(), 0.05)))
        deadline = time.monotonic() + REPORT_TIMEOUT     # the last changes' reports
        while waiting and time.monotonic() < deadline:
            arrived.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(arrived.wait(), 1)
        lost += list(waiting)
    finally:
        for undo in unsubscribe:
            undo()
    return {"changes": changes, "lost": lost, "latencies": latencies}


def lights_of(home: Path) -> list[str]:
    spec = yaml.safe_load(home.read_text())
    return [d["id"] for room in spec["rooms"] for d in room["devices"] if d["type"] in LIGHT_TYPES]


def wait_with_progress(call: Any, total: int, progress: Path, timeout: float) -> Any:
    """The result of a namespace call that appends "done failed" lines to `progress`."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    with Progress(TextColumn("commissioning"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TextColumn("{task.fields[failed]} failed"), transient=True) as bar:
        task = bar.add_task("commission", total=total, failed=0)
        deadline = time.monotonic() + timeout
        while call.process.poll() is None and time.monotonic() < deadline:
            lines = progress.read_text().split() if progress.exists() else []
            if lines:
                done, failed = int(lines[-2]), int(lines[-1])
                bar.update(task, completed=done + failed, failed=failed)
            time.sleep(1)
    return call.result(timeout=max(1.0, deadline - time.monotonic()))


def sample_while(call: Any, pid: int, timeout: float) -> tuple[Any, list[tuple[float, dict[str, float]]]]:
    """The result of a namespace call, and the twin's /proc figures every SAMPLE_S meanwhile."""
    samples = [(0.0, proc_figures(pid))]
    t0 = time.monotonic()
    while call.process.poll() is None and time.monotonic() - t0 < timeout:
        time.sleep(min(SAMPLE_S, max(0.1, samples[-1][0] + SAMPLE_S - (time.monotonic() - t0))))
        if time.monotonic() - t0 >= samples[-1][0] + SAMPLE_S:
            samples.append((time.monotonic() - t0, proc_figures(pid)))
    samples.append((time.monotonic() - t0, proc_figures(pid)))
    return call.result(timeout=60), samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--devices", type=int, default=135)
    parser.add_argument("--rooms", type=int, default=12)
    parser.add_argument("--seconds", type=float, default=60, help="length of each idle window")
    parser.add_argument("--commission", type=int, default=0, help="nodes to commission (-1: all, 0: none)")
    parser.add_argument("--commission-minutes", type=float, default=None,
                        help="stop commissioning after this long (the rest of the run uses the nodes commissioned)")
    parser.add_argument("--soak", type=float, default=600,
                        help="seconds of changes after commissioning (0: none; default 10 minutes)")
    parser.add_argument("--rate", type=float, default=2, help="changes a second during the soak")
    parser.add_argument("--controller-sdk-log", default="error", choices=("error", "progress", "detail"),
                        help="python-matter-server's CHIP SDK log level (its default, error; progress logs "
                             "every message, which at a few hundred subscriptions costs its CHIP thread "
                             "more than it has, see docs/performance.md)")
    parser.add_argument("--all-types", action="store_true",
                        help="one device of every device type (locks, sensors, appliances, energy...), the "
                             "rest drawn by room kind as `twin home generate --homemaker` does, not SimuHome's 17")
    parser.add_argument("--keep", type=Path, default=None,
                        help="work in this new directory and keep it afterwards (the twin's and "
                             "python-matter-server's logs, the commissioning progress)")
    args = parser.parse_args()
    if args.soak < 0 or args.rate <= 0 or args.seconds <= 0:
        parser.error("--soak must be >= 0, --rate and --seconds > 0")
    if args.keep is not None:
        try:
            args.keep.mkdir(parents=True)
        except OSError as err:
            parser.error(f"--keep {args.keep}: {err.strerror} (give a new directory)")
    stopped = None          # why commissioning stopped early, if it did
    rows: list[tuple[str, dict[str, float]]] = []
    files: list[tuple[str, tuple[int, int]]] = []
    drops: list[tuple[float, int, dict[str, int]]] = []
    result = soaked = samples = None
    workspace = (contextlib.nullcontext(str(args.keep.resolve())) if args.keep is not None
                 else tempfile.TemporaryDirectory(prefix="bench-scale-"))
    with workspace as tmp, network_namespace("mts") as ns:
        workdir = Path(tmp)
        home = workdir / "home.yaml"
        if args.all_types:   # one device of every type, the rest drawn by room kind (HomeMaker)
            from twin.generator import every_type_home, to_yaml
            home.write_text(to_yaml(every_type_home(1, args.rooms, args.devices)))
        else:
            subprocess.run([sys.executable, "-m", "matter_twin.cli", "home", "generate", "--seed", "1", "--rooms",
                            str(args.rooms), "--devices", str(args.devices), "-o", str(home)],
                           check=True, cwd=str(REPO), env=dict(os.environ, PYTHONPATH=str(REPO)), capture_output=True)
        server = start_server(ns, workdir, args.controller_sdk_log) if args.commission else None
        started = time.monotonic()
        twin = start_twin(ns, workdir, home)
        try:
            up = time.monotonic() - started
            nodes = len([line for line in (workdir / "twin.log").read_text().splitlines()
                         if line.startswith("pairing: ")])
            time.sleep(5)   # mDNS probing and announcements settle
            rows.append((f"idle, {nodes} nodes, no controller", idle_window(twin.pid, args.seconds)))
            files = [("twin, idle", open_files(twin.pid))]
            if args.commission:
                sys.path.insert(0, str(Path(__file__).resolve().parent))
                import bench_scale
                total = nodes if args.commission < 0 else min(args.commission, nodes)
                progress = workdir / "progress"
                stop_drops = threading.Event()
                sampler = threading.Thread(target=watch_drops, args=(ns, progress, stop_drops, drops), daemon=True)
                sampler.start()
                try:
                    result = wait_with_progress(ns.start(bench_scale.commission, args.commission, str(progress),
                                                         args.commission_minutes),
                                                total, progress, timeout=4 * 3600)
                except NetnsCallError as err:   # e.g. the controller stopped answering: report it
                    words = progress.read_text().split() if progress.exists() else ["0", "0", "0"]
                    stopped = (f"commissioning stopped after {words[-2]} nodes ({words[-1]} failed): "
                               f"{str(err).strip().splitlines()[-1]}\npython-matter-server's last log lines:\n"
                               + tail(workdir / "server.log"))
                finally:
                    stop_drops.set()
                    sampler.join()
            if stopped is None and args.commission:
                assert result is not None
                time.sleep(5)
                rows.append((f"idle, {result['commissioned']} commissioned and subscribed",
                             idle_window(twin.pid, args.seconds, server.pid if server is not None else None)))
                files.append((f"twin, {result['commissioned']} subscribed", open_files(twin.pid)))
                if server is not None:
                    files.append((f"python-matter-server, {result['commissioned']} subscribed",
                                  open_files(server.pid)))
                lights = [d for d in lights_of(home) if d in result["node_ids"]]
                if args.soak and lights:
                    soaked, samples = sample_while(
                        ns.start(bench_scale.soak, result["node_ids"], lights, args.soak, args.rate, 1),
                        twin.pid, timeout=args.soak + 2 * REPORT_TIMEOUT + 120)
                    cpu = samples[-1][1]["cpu"] - samples[0][1]["cpu"]
                    rows.append((f"soak, {soaked['changes']} changes in {args.soak:g} s",
                                 {"cpu %": 100 * cpu / samples[-1][0], "rss MB": samples[-1][1]["rss"],
                                  "peak rss MB": samples[-1][1]["hwm"]}))
        finally:
            stop(twin, signal.SIGTERM)
            server_log = workdir / "server.log"
            resubscriptions = (server_log.read_text(errors="replace").count("resubscription attempt")
                               if server_log.exists() else 0)
            if server is not None:
                stop(server, signal.SIGTERM)
    print(f"`twin run` with {args.devices} devices "
          f"({'every device type, HomeMaker' if args.all_types else 'SimuHome types'}) in {args.rooms} rooms "
          f"({nodes} nodes with the room sensors), "
          f"{os.cpu_count()} CPUs, up in {up:.1f} s; idle windows of {args.seconds:g} s\n")
    print("| state | CPU (% of one core) | RSS MB | peak RSS MB | RSS per node MB |")
    print("|---|---|---|---|---|")
    for name, f in rows:
        print(f"| {name} | {f['cpu %']:.1f} | {f['rss MB']:.0f} | {f['peak rss MB']:.0f} | "
              f"{f['rss MB'] / nodes:.2f} |")
    print("\n| process | open descriptors | soft limit (RLIMIT_NOFILE) |\n|---|---|---|")
    for name, (fds, limit) in files:
        print(f"| {name} | {fds} | {limit} |")
    if drops:
        print(f"\nUDP datagrams dropped on full receive buffers while commissioning (sampled every {SAMPLE_S} s; "
              "the samples where a process's count grew by 100 or more):")
        last: dict[str, int] = {}
        for at, done, by_process in drops:
            if any(v - last.get(k, 0) >= 100 for k, v in by_process.items()):
                print(f"- {at:.0f} s, {done} nodes: " + ", ".join(f"{k} {v}" for k, v in sorted(by_process.items())))
                last = by_process
    if server is not None:
        print(f"\npython-matter-server logged {resubscriptions} failed subscriptions (resubscription attempts)")
    if stopped is not None:
        print(f"\n{stopped}")
    for name, f in rows:
        if "controller cpu %" in f:
            print(f"python-matter-server CPU, {name}: {f['controller cpu %']:.1f} % of one core")
    if result is not None:
        secs = sorted(result["seconds"]) or [float("nan")]
        print(f"\ncommissioned {result['commissioned']} nodes (server holds {result['nodes in server']}) in "
              f"{result['total seconds'] / 60:.1f} min, {60 * result['commissioned'] / result['total seconds']:.0f} "
              f"nodes/min; per node median {secs[len(secs) // 2]:.2f} s, max {secs[-1]:.2f} s; "
              f"failures: {len(result['failed'])}")
        for line in result["failed"][:10]:
            print(f"- {line}")
        slow = [p for p in result["probes"] if p[2] > 1 or (p[1] and (p[3] is None or p[3] > 2))]
        twin_max = max((p[2] for p in result["probes"]), default=float("nan"))
        answered = [p[3] for p in result["probes"] if p[3] is not None]
        print(f"responsiveness while commissioning ({len(result['probes'])} probes every {PROBE_S} s): twin "
              f"GET /health max {twin_max:.2f} s; controller read of node 1 max "
              f"{max(answered, default=float('nan')):.2f} s; slow or unanswered probes (s since start, "
              f"nodes commissioned, twin s, controller s):")
        for at, done, twin_s, controller_s in slow[:40]:
            print(f"- {at:.0f} s, {done} nodes: twin {twin_s:.2f}, controller "
                  f"{'no answer' if controller_s is None else f'{controller_s:.2f}'}")
    if soaked is not None and samples is not None:
        lat = sorted(soaked["latencies"]) or [float("nan")]
        rss = [f["rss"] for _, f in samples]
        half = len(rss) // 2
        print(f"\nsoak: {soaked['changes']} changes, {len(soaked['lost'])} lost, report latency p50 "
              f"{1000 * lat[len(lat) // 2]:.0f} ms, max {1000 * lat[-1]:.0f} ms; RSS over the soak "
              f"{min(rss):.0f}..{max(rss):.0f} MB (first {rss[0]:.0f}, last {rss[-1]:.0f}; mean of first half "
              f"{sum(rss[:half or 1]) / (half or 1):.0f}, second half {sum(rss[half:]) / len(rss[half:]):.0f}), "
              f"{len(rss)} samples")
        for light in soaked["lost"][:10]:
            print(f"- lost: {light}")


if __name__ == "__main__":
    main()
