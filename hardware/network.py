"""Seeded network conditions between the controller and the devices, in one of two places.

- **tc netem** (`interfaces`): on the named interfaces inside the lab's network namespace (the
  commands run where the session runs): delay with jitter, random loss, and outages (100 %
  loss). netem's own random generator is seeded too (`seed`). Needs root (CAP_NET_ADMIN); the
  qdiscs are removed at the end.
- **A twin node's transport** (`nodes: {url, devices}`): for twin Matter nodes standing in for
  hardware (`twin run --matter --http PORT`), the conditions become that home's faults, over
  its HTTP API (POST/DELETE /faults): `latency` (delay_ms) and `loss` (loss_percent) for the
  session, `offline` during each outage. The node's link (twin/node/faults.py) then delays and
  drops datagrams both ways, so MRP really retransmits; its loss draws come from the node's
  own seeded generator. At the end the faults are removed and each node's link counters
  (datagrams, drops, retransmissions) recorded.

Either way the outages fall at the listed times plus times drawn from `seed`, so a rerun sees
the same plan, and every change is reported to `record(kind, detail)` ("netem" or
"network"), so the session file says what the network did.
"""
from __future__ import annotations

import json
import random
import subprocess
import threading
import time
import urllib.error
import urllib.request
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


class _Conditions:
    """The conditions from `start()` to `stop()`, with the outages run on a thread."""

    def __init__(self, spec: NetworkSpec, record: Callable[[str, dict[str, Any]], None]):
        self.spec = spec
        self.record = record
        self.plan = outage_plan(spec)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _set(self, outage: bool) -> None:
        raise NotImplementedError

    def _clear(self) -> None:
        raise NotImplementedError

    def start(self) -> None:
        self._set(False)
        if self.plan:
            self._thread = threading.Thread(target=self._outages, daemon=True, name="lab-network")
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
                self.record("error", {"network": str(err)})
                return

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
        self._clear()


class NetworkConditions(_Conditions):
    """tc netem on the spec's interfaces."""

    def __init__(self, spec: NetworkSpec, record: Callable[[str, dict[str, Any]], None]):
        super().__init__(spec, record)
        self._applied: list[str] = []
        self.seeded = True  # netem's own generator seeded too (iproute2 >= 6.3)

    def _set(self, outage: bool) -> None:
        assert self.spec.interfaces is not None
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
                                   f"{iface} root netem` fails): network conditions need it (or, with twin "
                                   "nodes standing in for hardware, network.nodes)")
            if problem:
                raise NetworkError(f"tc qdisc replace dev {iface} root {' '.join(args)}: {problem} "
                                   "(network conditions need root and an existing interface)")
            if iface not in self._applied:
                self._applied.append(iface)
        self.record("netem", {"interfaces": self.spec.interfaces, "outage": outage,
                              "netem": " ".join(args), "netem_seeded": self.seeded})

    def _clear(self) -> None:
        for iface in self._applied:
            subprocess.run(["tc", "qdisc", "del", "dev", iface, "root"], capture_output=True, timeout=10)
        if self._applied:
            self.record("netem", {"interfaces": self._applied, "cleared": True})
        self._applied = []


class NodeConditions(_Conditions):
    """The conditions as faults of twin nodes' home, acting in their transport."""

    def __init__(self, spec: NetworkSpec, record: Callable[[str, dict[str, Any]], None]):
        super().__init__(spec, record)
        assert spec.nodes is not None
        self.url = spec.nodes.url.rstrip("/")
        self.devices = spec.nodes.devices
        self._posted: list[str] = []
        self._started = False

    def _request(self, method: str, path: str, body: Any = None) -> dict[str, Any]:
        url = self.url + path
        request = urllib.request.Request(url, method=method, headers={"Content-Type": "application/json"},
                                         data=None if body is None else json.dumps(body).encode())
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return json.loads(response.read())
        except urllib.error.HTTPError as err:
            try:
                message = json.loads(err.read())["error"]["message"]
            except Exception:  # noqa: BLE001 - not the twin's error body
                message = f"HTTP {err.code}"
            raise NetworkError(f"network.nodes: {method} {url}: {message}") from None
        except (OSError, ValueError) as err:
            reason = getattr(err, "reason", err)
            raise NetworkError(f"network.nodes.url: cannot reach the twin at {url}: {reason}") from None

    def _post(self, fault: dict[str, Any]) -> None:
        self._request("POST", "/faults", fault)
        self._posted.append(fault["id"])

    def _delete(self, fault_id: str) -> None:
        if fault_id in self._posted:
            self._posted.remove(fault_id)
            self._request("DELETE", f"/faults/{fault_id}")

    def _set(self, outage: bool) -> None:
        spec, faults = self.spec, []
        for device in self.devices:
            if outage:
                faults.append({"id": f"lab-outage-{device}", "device": device, "kind": "offline"})
            elif self._started:
                self._delete(f"lab-outage-{device}")
            else:   # the start: the session's delay and loss
                if spec.delay_ms:
                    faults.append({"id": f"lab-latency-{device}", "device": device, "kind": "latency",
                                   "severity": spec.delay_ms})
                if spec.loss_percent:
                    faults.append({"id": f"lab-loss-{device}", "device": device, "kind": "loss",
                                   "severity": spec.loss_percent / 100})
        for fault in faults:
            self._post(fault)
        self._started = True
        self.record("network", {"nodes": self.url, "devices": self.devices, "outage": outage, "faults": faults})

    def links(self) -> dict[str, Any]:
        """Each node's link counters (datagrams each way, drops, delays, MRP retransmissions)."""
        links = self._request("GET", "/faults").get("links") or {}
        return {device: links.get(device) for device in self.devices}

    def _clear(self) -> None:
        try:
            links = self.links()
            for fault_id in list(self._posted):
                self._delete(fault_id)
        except NetworkError as err:
            self.record("error", {"network": str(err)})
            return
        self.record("network", {"nodes": self.url, "devices": self.devices, "cleared": True, "links": links})


def network_conditions(spec: NetworkSpec, record: Callable[[str, dict[str, Any]], None]) -> _Conditions:
    """The spec's conditions: tc netem, or in twin nodes' transport."""
    return NodeConditions(spec, record) if spec.nodes is not None else NetworkConditions(spec, record)


__all__ = ["NetworkConditions", "NetworkError", "NodeConditions", "netem_args", "network_conditions",
           "outage_plan"]
