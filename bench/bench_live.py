"""Live views: what publishing a generated 135-device home over MQTT costs the twin's process.

    python bench/bench_live.py [--devices 135] [--rooms 30] [--seconds 30] [--speeds 1,60,600]

For each speed, `twin run --no-matter --http PORT` (no HTTP client) runs the same generated home twice, without and with
`--mqtt` pointed at Debian's mosquitto on 127.0.0.1 (its own process, so the broker's work is not
counted). From a few seconds after start-up (and the first full publish of every attribute), the twin's CPU
time (user + system, from /proc) is measured over --seconds; the cost of MQTT is the difference,
as a share of one core. A subscriber in this process counts the messages the broker delivers.
The peer is the same run without MQTT, measured in the same run of this script. Prints a table.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import aiomqtt  # noqa: E402

from twin import generator  # noqa: E402
from twin.schema import to_yaml  # noqa: E402

CLK_TCK = os.sysconf("SC_CLK_TCK")
SETTLE_S = 3.0       # after start-up (and, with MQTT, the first full publish) before measuring
PREFIX = "bench"


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise SystemExit(f"nothing listens on 127.0.0.1:{port}") from None
            time.sleep(0.05)


class Counter:
    """Counts the messages the broker delivers under the prefix (a thread with its own loop)."""

    def __init__(self, port: int):
        self.count = 0
        self.online = 0          # "online" messages seen on the status topic
        self.ready = threading.Event()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=lambda: asyncio.run(self._run(port)), daemon=True)
        self.thread.start()
        self.ready.wait(10)

    async def _run(self, port: int) -> None:
        async with aiomqtt.Client("127.0.0.1", port, identifier="bench-counter") as client:
            await client.subscribe(f"{PREFIX}/#")
            self.ready.set()

            async def count() -> None:
                async for message in client.messages:
                    self.count += 1
                    if message.payload == b"online":
                        self.online += 1
            task = asyncio.ensure_future(count())
            while not self.stop.is_set():
                await asyncio.sleep(0.1)
            task.cancel()


def measure(home: Path, speed: str, seconds: float, mqtt_port: int | None, counter: Counter | None) -> dict:
    # --http (idle: no client) in both runs, so both take the same asyncio runner.
    http = free_port()
    command = [sys.executable, "-m", "matter_twin.cli", "run", "--no-matter", "--home", str(home), "--speed", speed,
               "--http", str(http)]
    if mqtt_port is not None:
        command += ["--mqtt", f"mqtt://127.0.0.1:{mqtt_port}", "--mqtt-prefix", PREFIX]
    proc = subprocess.Popen(command, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        online = counter.online if counter else 0
        wait_port(http, 60)   # the HTTP server starts last: the home is loaded and running
        deadline = time.monotonic() + 60
        while counter is not None and counter.online == online:   # not yet through the first full publish
            if time.monotonic() > deadline or proc.poll() is not None:
                raise SystemExit("the twin never went online over MQTT")
            time.sleep(0.1)
        time.sleep(SETTLE_S)
        if proc.poll() is not None:
            raise SystemExit(f"twin run ended early ({proc.returncode}): {' '.join(command)}")
        c0, t0, m0 = cpu_seconds(proc.pid), time.monotonic(), counter.count if counter else 0
        time.sleep(seconds)
        c1, t1, m1 = cpu_seconds(proc.pid), time.monotonic(), counter.count if counter else 0
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    return {"cpu": 100 * (c1 - c0) / (t1 - t0), "messages/s": (m1 - m0) / (t1 - t0)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--devices", type=int, default=135)
    parser.add_argument("--rooms", type=int, default=30)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--speeds", default="1,60,600")
    args = parser.parse_args()
    mosquitto = shutil.which("mosquitto") or "/usr/sbin/mosquitto"
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home.yaml"
        home.write_text(to_yaml(generator.generate_home(0, args.rooms, args.devices)))
        port = free_port()
        conf = Path(tmp) / "mosquitto.conf"
        conf.write_text(("user root\n" if os.geteuid() == 0 else "")
                        + f"listener {port} 127.0.0.1\nallow_anonymous true\npersistence false\n")
        broker = subprocess.Popen([mosquitto, "-c", str(conf)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_port(port)
            counter = Counter(port)
            rows = []
            for speed in args.speeds.split(","):
                without = measure(home, speed, args.seconds, None, None)
                with_mqtt = measure(home, speed, args.seconds, port, counter)
                rows.append((speed, without["cpu"], with_mqtt["cpu"], with_mqtt["cpu"] - without["cpu"],
                             with_mqtt["messages/s"]))
            counter.stop.set()
            counter.thread.join(timeout=5)
        finally:
            broker.terminate()
            broker.wait(timeout=10)
    print(f"\nPublishing a generated home of {args.devices} devices in {args.rooms} rooms over MQTT "
          f"(mosquitto on 127.0.0.1), {args.seconds:g} s windows from {SETTLE_S:g} s after start-up:\n")
    print("| speed | twin CPU without MQTT (% of a core) | with MQTT | cost of MQTT | messages/s |")
    print("|---|---|---|---|---|")
    for speed, without, with_mqtt, cost, rate in rows:
        print(f"| {speed}× | {without:.1f} | {with_mqtt:.1f} | {cost:.1f} | {rate:.0f} |")


if __name__ == "__main__":
    main()
