"""Seeded network conditions between the controller and the devices: Linux `tc netem`.

The lab file's `network:` names the interfaces (inside the lab's network namespace: the
commands run where the session runs) and the conditions: delay with jitter, random loss,
and outages (100 % loss) at given times or at times drawn from the seed. netem's own random
generator is seeded too (`seed`), so a rerun sees the same pattern. Every change is
reported to `record(kind, detail)` ("netem"), so the session file says what the network did.
Needs root (CAP_NET_ADMIN); the qdiscs are removed at the end.
"""
from __future__ import annotations

import random
import subprocess
import threading
import time
from collections.abc import Callable
from typing import Any

from hardware.labfile import NetworkSpec


class NetworkError(Exception):
    """tc failed (one line)."""


def outage_plan(spec: NetworkSpec) -> list[tuple[float, float]]:
    """(start second, duration) of every outage: the listed ones plus the seeded ones."""
    rng = random.Random(spec.seed)  # a private generator: the plan is the seed's alone
    seeded = [(round(rng.uniform(0, spec.horizon), 3), spec.outage_seconds)
              for _ in range(spec.random_outages)]
    return sorted([(o.at, o.duration) for o in spec.outages] + seeded)


def netem_args(spec: NetworkSpec, outage: bool = False, seeded: bool = True) -> list[str]:
    args = ["netem"]
    if spec.delay_ms:
        args += ["delay", f"{spec.delay_ms:g}ms"]
        if spec.jitter_ms:
            args += [f"{spec.jitter_ms:g}ms"]
    loss = 100.0 if outage else spec.loss_percent
    if loss:
        args += ["loss", f"{loss:g}%"]
    if seeded:
        args += ["seed", str(spec.seed)]
    return args


def _tc(args: list[str]) -> str:
    """Run tc; returns its first error line ("" on success)."""
    try:
        done = subprocess.run(["tc", *args], capture_output=True, text=True, timeout=10)
    except FileNotFoundError:
        raise NetworkError("the `tc` command (iproute2) is missing") from None
    return "" if done.returncode == 0 else (done.stderr.strip().splitlines() or [str(done.returncode)])[0]


class NetworkConditions:
    """Applies the spec at `start()`, runs the outages on a thread, clears at `stop()`."""

    def __init__(self, spec: NetworkSpec, record: Callable[[str, dict[str, Any]], None]):
        self.spec = spec
        self.record = record
        self.plan = outage_plan(spec)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._applied: list[str] = []
        self.seeded = True  # netem's own generator seeded too (iproute2 >= 6.3)

    def _set(self, outage: bool) -> None:
        args = netem_args(self.spec, outage, self.seeded)
        for iface in self.spec.interfaces:
            problem = _tc(["qdisc", "replace", "dev", iface, "root", *args])
            if problem and "seed" in problem and self.seeded:
                # iproute2 before 6.3 has no netem seed: the kernel's generator picks the
                # packets then; the outage plan (ours) stays the seed's.
                self.seeded = False
                args = netem_args(self.spec, outage, False)
                problem = _tc(["qdisc", "replace", "dev", iface, "root", *args])
            if "kind is unknown" in problem:
                raise NetworkError(f"{iface}: this kernel has no netem qdisc (sch_netem; `tc qdisc add dev "
                                   f"{iface} root netem` fails): network conditions need it")
            if problem:
                raise NetworkError(f"tc qdisc replace dev {iface} root {' '.join(args)}: {problem} "
                                   "(network conditions need root and an existing interface)")
            if iface not in self._applied:
                self._applied.append(iface)
        self.record("netem", {"interfaces": self.spec.interfaces, "outage": outage,
                              "netem": " ".join(args), "netem_seeded": self.seeded})

    def start(self) -> None:
        self._set(False)
        if self.plan:
            self._thread = threading.Thread(target=self._outages, daemon=True, name="lab-netem")
            self._thread.start()

    def _outages(self) -> None:
        t0 = time.monotonic()
        for at, duration in self.plan:
            if self._stop.wait(max(0.0, at - (time.monotonic() - t0))):
                return
            try:
                self._set(True)
                self._stop.wait(duration)
                self._set(False)
            except NetworkError as err:
                self.record("error", {"netem": str(err)})
                return

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
        for iface in self._applied:
            subprocess.run(["tc", "qdisc", "del", "dev", iface, "root"], capture_output=True, timeout=10)
        if self._applied:
            self.record("netem", {"interfaces": self._applied, "cleared": True})
        self._applied = []


__all__ = ["NetworkConditions", "NetworkError", "netem_args", "outage_plan"]
