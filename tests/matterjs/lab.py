"""A lab for the bridge tests: one network namespace with python-matter-server and three
matter.js devices (a dimmable light, a thermostat, a multi-sensor) standing in for physical
products. Shared by the bridge and MCP tests through a module-scoped fixture.

Everything runs inside the namespace: the processes, and the test scenarios themselves
(through `Netns.call`), since the server listens on the namespace's own 127.0.0.1.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from netns import REPO, Netns, network_namespace, wait_for_line

from hardware.demo import DEVICES_SCRIPT  # the stand-ins ship with the package

SERVER_PORT = 5580
SERVER_URL = f"ws://127.0.0.1:{SERVER_PORT}/ws"
MATTERJS = REPO / ".cache" / "matterjs" / "node_modules"
#: kind -> (UDP port, passcode, discriminator); discriminators differ in their top 4 bits, so
#: the manual codes (which carry only those) tell the three apart.
DEVICES = {"light": (5541, 20202021, 3840), "thermostat": (5542, 20202022, 2816),
           "sensors": (5543, 20202023, 1792)}


@dataclass
class Lab:
    ns: Netns
    workdir: Path
    codes: dict[str, str]                       # kind -> manual pairing code
    processes: dict[str, subprocess.Popen] = field(default_factory=dict)
    node_ids: dict[str, int] = field(default_factory=dict)   # kind -> node id once commissioned

    def log(self, name: str, chars: int = 4000) -> str:
        path = self.workdir / f"{name}.log"
        return path.read_text(errors="replace")[-chars:] if path.exists() else "(no log)"

    def write_config(self, name: str, data: dict[str, Any]) -> Path:
        path = self.workdir / name
        path.write_text(yaml.safe_dump(data, sort_keys=False))
        return path

    def stop(self, name: str) -> None:
        proc = self.processes.get(name)
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _require() -> str:
    exe = shutil.which("matter-server")
    problems = []
    if exe is None:
        problems.append("the `matter-server` command (python-matter-server[server]==7.0.1)")
    if not os.path.isdir("/data"):
        problems.append("a writable /data for chip-core's ini files")
    if not (MATTERJS / "@matter" / "main").is_dir():
        problems.append(f"matter.js in {MATTERJS}")
    if shutil.which("node") is None:
        problems.append("node")
    if problems:
        raise AssertionError("missing " + " and ".join(problems) + ": run scripts/install-test-deps.sh")
    return exe


@contextlib.contextmanager
def lab(workdir: Path) -> Iterator[Lab]:
    from twin.node.credentials import write_paa_trust_store
    exe = _require()
    scripts = workdir / "matterjs"
    scripts.mkdir()
    (scripts / "node_modules").symlink_to(MATTERJS)
    shutil.copy(DEVICES_SCRIPT, scripts / "devices.mjs")
    paa = workdir / "paa"
    write_paa_trust_store(paa)  # with the `.version` stamp python-matter-server needs
    with network_namespace("br") as ns:
        the_lab = Lab(ns, workdir, {})
        try:
            the_lab.processes["server"] = ns.popen(
                [exe, "--storage-path", str(workdir / "server"), "--paa-root-cert-dir", str(paa),
                 "--listen-address", "127.0.0.1", "--port", str(SERVER_PORT), "--log-level", "info"],
                stdout=open(workdir / "server.log", "w"), stderr=subprocess.STDOUT, cwd=str(workdir))
            for kind, (port, passcode, discriminator) in DEVICES.items():
                env = dict(os.environ, MATTER_STORAGE_PATH=str(workdir / f"mjs-{kind}"),
                           MATTER_LOG_LEVEL="warn")
                the_lab.processes[kind] = ns.popen(
                    ["node", str(scripts / "devices.mjs"), kind, str(port), str(passcode), str(discriminator)],
                    stdout=open(workdir / f"{kind}.log", "w"), stderr=subprocess.STDOUT, env=env,
                    cwd=str(scripts))
            for kind in DEVICES:
                try:
                    line, _ = wait_for_line(workdir / f"{kind}.log", lambda s: s.startswith("ready "), 60)
                except TimeoutError:
                    raise AssertionError(f"matter.js {kind} did not start:\n{the_lab.log(kind)}") from None
                the_lab.codes[kind] = line.split()[2]
            deadline = time.monotonic() + 60
            while "Matter Server successfully initialized" not in the_lab.log("server", 10**7):
                if time.monotonic() > deadline or the_lab.processes["server"].poll() is not None:
                    raise AssertionError(f"matter-server did not start:\n{the_lab.log('server')}")
                time.sleep(0.2)
            yield the_lab
        finally:
            for name in list(the_lab.processes):
                the_lab.stop(name)
