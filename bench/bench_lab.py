"""Recording overhead of a lab session on a 135-device home.

    python bench/bench_lab.py [--devices 135] [--rooms 12] [--seconds 20] [--calls-per-second 10]

A generated home (`twin home generate`), run as a lab session on the wall clock (no real
devices: the load is the twin's), driven by a steady stream of tool calls (round robin over
the devices: toggle OnOff where there is one, else read all attributes) while the session
samples every room once a second. The same workload runs twice in this process: with the
SQLite recording (every call, every cluster-server change, every room sample, events), and
without (no recorder, no listeners). CPU time of the whole process (all threads, getrusage)
over the wall time is the cost; the difference is what recording costs, as a share of one
core (the target: at most 5 %). Prints a markdown table.
"""
from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from hardware.labfile import parse_lab  # noqa: E402
from hardware.recording import Recording  # noqa: E402
from hardware.session import LabSession  # noqa: E402
from twin import generator  # noqa: E402
from twin.home import Home  # noqa: E402
from twin.schema import to_yaml  # noqa: E402


class _NoRecorder:
    """Takes every row and keeps none: the session without its recording."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.run = 0

    def __getattr__(self, name: str) -> Any:
        return lambda *args, **kwargs: 0


class UnrecordedSession(LabSession):
    def _start_recording(self) -> None:
        import hardware.session as session_module
        real = session_module.Recorder
        session_module.Recorder = _NoRecorder  # type: ignore[assignment,misc]
        try:
            super()._start_recording()
        finally:
            session_module.Recorder = real  # type: ignore[misc]
        assert self.twin is not None
        for device in self.twin.home.devices.values():   # and no change listeners
            for server in device.servers():
                if self._twin_changed in server.listeners:
                    server.listeners.remove(self._twin_changed)


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def workload(home: Home) -> list[tuple[str, dict[str, Any]]]:
    calls = []
    for device_id, device in sorted(home.devices.items()):
        onoff = next((ep.id for ep in device.endpoints.values()
                      if "OnOff" in {s.name for s in ep.servers.values()}), None)
        if onoff is not None:
            calls.append(("execute_command", {"device.id": device_id, "endpoint.id": onoff, "cluster.id": "OnOff",
                                              "command.id": "Toggle", "args": {}}))
        else:
            calls.append(("get_all_attributes", {"device.id": device_id}))
    return calls


def measure(session_class: type[LabSession], lab_data: dict[str, Any], folder: Path, seconds: float,
            rate: float, calls: list[tuple[str, dict[str, Any]]]) -> dict[str, float]:
    lab = parse_lab(lab_data, str(folder / "bench-lab.yaml"), folder)
    session = session_class(lab, folder / f"{session_class.__name__}.sqlite")
    session.open()
    try:
        cpu0, t0 = cpu_seconds(), time.monotonic()
        n = 0
        while time.monotonic() - t0 < seconds:
            tool, args = calls[n % len(calls)]
            session.call(tool, args)
            n += 1
            time.sleep(max(0.0, t0 + n / rate - time.monotonic()))
        cpu1, t1 = cpu_seconds(), time.monotonic()
    finally:
        session.close()
    return {"calls": n, "wall s": t1 - t0, "cpu %": 100 * (cpu1 - cpu0) / (t1 - t0)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--devices", type=int, default=135)
    parser.add_argument("--rooms", type=int, default=12)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--calls-per-second", type=float, default=10.0)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-lab-") as tmp:
        folder = Path(tmp)
        spec = generator.generate_home(args.seed, rooms=args.rooms, devices=args.devices)
        (folder / "home.yaml").write_text(to_yaml(spec))
        home = Home.load(folder / "home.yaml")
        calls = workload(home)
        lab_data = {"name": "bench", "home": "home.yaml", "controller": {"url": "ws://127.0.0.1:1/ws"},
                    "session": {"sample_interval": 1.0}}
        off = measure(UnrecordedSession, lab_data, folder, args.seconds, args.calls_per_second, calls)
        on = measure(LabSession, lab_data, folder, args.seconds, args.calls_per_second, calls)
        rec = Recording(folder / "LabSession.sqlite")
        counts = rec.counts(rec.run()["run"])
        rec.close()
        size = (folder / "LabSession.sqlite").stat().st_size + sum(
            p.stat().st_size for p in folder.glob("LabSession.sqlite-*"))
    rows_per_s = sum(counts.values()) / on["wall s"]
    print(f"Lab recording overhead: {len(home.devices)} devices in {len(home.rooms)} rooms, "
          f"{args.calls_per_second:g} tool calls/s, rooms sampled every 1 s, {args.seconds:g} s each\n")
    print("| session | calls | process CPU (% of a core) |")
    print("|---|---|---|")
    print(f"| without recording | {off['calls']} | {off['cpu %']:.2f} |")
    print(f"| with recording | {on['calls']} | {on['cpu %']:.2f} |")
    print(f"| **recording costs** | | **{on['cpu %'] - off['cpu %']:.2f}** |")
    print(f"\nrows recorded: {', '.join(f'{k} {v}' for k, v in counts.items())} "
          f"({rows_per_s:.0f} rows/s), file {size / 1e6:.2f} MB")


if __name__ == "__main__":
    main()
