"""A private network with its own python-matter-server, for commands that serve Matter nodes
(`twin bench run --over-matter`).

Nodes advertise over mDNS, which must not reach the machine's real network. So the command
makes a network namespace of its own (loopback plus a veth pair with local IPv6 addresses, so
multicast between the nodes and the controller works), starts python-matter-server inside it
(its storage and a PAA trust directory holding the public test PAA in a temporary folder),
runs the real work inside it as a child process, then stops the server and deletes the
namespace, also after a failure or Ctrl-C. Creating a namespace needs root.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from twin.node.credentials import write_paa_trust_store

SERVER_PORT = 5580
SERVER_URL = f"ws://127.0.0.1:{SERVER_PORT}/ws"
#: The veth pair inside the namespace: mDNS goes out on one end and arrives on the other.
VETH = (("mtv0", "fd98::1/64"), ("mtv1", "fd98::2/64"))


def missing_requirements() -> str | None:
    """Why a sandbox cannot be made here (one line), or None."""
    if os.geteuid() != 0:
        return "needs root: it creates a network namespace for the Matter nodes and python-matter-server"
    for tool in ("ip", "matter-server"):
        if shutil.which(tool) is None:
            what = "iproute2" if tool == "ip" else "python-matter-server[server]==7.0.1"
            return f"the `{tool}` command is missing (install {what})"
    return None


class Sandbox:
    def __init__(self, name: str, workdir: Path):
        self.name = name
        self.workdir = workdir

    def command(self, args: list[str]) -> list[str]:
        return ["ip", "netns", "exec", self.name, *args]

    def run(self, args: list[str], env: dict[str, str] | None = None) -> int:
        """Run a command inside and wait. Ctrl-C reaches it too (same process group) and is
        waited for; SIGTERM is passed on, so the sandbox is still taken down afterwards."""
        child = subprocess.Popen(self.command(args), env=env)
        previous = signal.signal(signal.SIGTERM, lambda *_: child.terminate())
        try:
            while True:
                try:
                    return child.wait()
                except KeyboardInterrupt:
                    continue    # the child got it as well: wait for it to finish its episode
        finally:
            signal.signal(signal.SIGTERM, previous)


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True)


@contextlib.contextmanager
def matter_sandbox(prefix: str = "twin") -> Iterator[Sandbox]:
    """A namespace with python-matter-server listening on SERVER_URL inside it."""
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    workdir = Path(tempfile.mkdtemp(prefix=f"{name}-"))
    server = None
    _ip("netns", "add", name)
    try:
        inside = ["netns", "exec", name]
        for key in ("default", "all"):    # no duplicate address detection: usable at once
            subprocess.run([*(["ip"] + inside), "sysctl", "-qw", f"net.ipv6.conf.{key}.accept_dad=0"],
                           check=True, capture_output=True)
        _ip(*inside, "ip", "link", "set", "lo", "up")
        _ip(*inside, "ip", "link", "add", VETH[0][0], "type", "veth", "peer", "name", VETH[1][0])
        for dev, address in VETH:
            _ip(*inside, "ip", "addr", "add", address, "dev", dev, "nodad")
            _ip(*inside, "ip", "link", "set", dev, "up")
        paa = workdir / "paa"
        write_paa_trust_store(paa)
        Path("/data").mkdir(exist_ok=True)   # chip-core keeps its ini files there
        log = open(workdir / "matter-server.log", "w")
        server = subprocess.Popen(
            ["ip", *inside, "matter-server", "--storage-path", str(workdir / "server"),
             "--paa-root-cert-dir", str(paa), "--listen-address", "127.0.0.1", "--port", str(SERVER_PORT)],
            stdout=log, stderr=subprocess.STDOUT, cwd=workdir, start_new_session=True)
        yield Sandbox(name, workdir)
    finally:
        if server is not None and server.poll() is None:
            server.terminate()               # `ip netns exec` execs: this is the server itself
            try:
                server.wait(20)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
        subprocess.run(["ip", "netns", "delete", name], check=False, capture_output=True)
        shutil.rmtree(workdir, ignore_errors=True)


def python_command(*args: str) -> list[str]:
    """This program run again with `args` (inside a sandbox)."""
    return [sys.executable, "-m", "matter_twin.cli", *args]


def rerun_over_matter(prefix: str, args: list[str], base_url: str | None, api_key: str | None) -> int:
    """Run this benchmark command again, with `args` plus `--over-matter --matter-server SERVER_URL`,
    inside a fresh sandbox; its exit code. The LLM endpoint goes in the environment, not on the
    command line (where `ps` would show the key)."""
    from matter_twin.console import CliError
    problem = missing_requirements()
    if problem is not None:
        raise CliError(f"--over-matter {problem}; or pass --matter-server URL from inside a "
                       "network namespace that has one")
    env = dict(os.environ, **{k: v for k, v in (("OPENAI_BASE_URL", base_url), ("OPENAI_API_KEY", api_key)) if v})
    with matter_sandbox(prefix) as sandbox:
        return sandbox.run(python_command(*args, "--over-matter", "--matter-server", SERVER_URL), env)


def check_over_matter(over_matter: bool, matter_server: str | None, ray: str | None = None,
                      items: str = "tasks") -> None:
    """The rules of a benchmark command's `--over-matter`, `--matter-server` and `--ray`, one line
    each (CliError): the matter-server extra, no server without --over-matter, no Ray with it."""
    from matter_twin.console import CliError
    from matter_twin.extras import require
    if over_matter:
        require("matter-server", "--over-matter")
    if matter_server is not None and not over_matter:
        raise CliError("--matter-server goes with --over-matter")
    if over_matter and ray is not None:
        raise CliError(f"--ray runs {items} in process; it does not go with --over-matter")


@contextlib.contextmanager
def serving_over_matter(matter_server: str | None, homes: str, out: Path) -> Iterator[Any]:
    """With a server URL (the command already inside its namespace): a `MatterServing` on it,
    waited for, as the run's `serve` hook; afterwards the line saying how many of the run's
    `homes` (e.g. "task homes") were commissioned. A Matter setup failure stops the run with one
    line (results so far stay in `out`; a rerun resumes). Without a URL: None (in process)."""
    if matter_server is None:
        yield None
        return
    import typer

    from matter_twin.console import CliError
    from scenarios.over_matter import MatterServing, MatterServingError
    serving = MatterServing(matter_server)
    try:
        serving.wait_for_server()
        yield serving
    except MatterServingError as exc:
        raise CliError(f"over Matter: {exc} (results so far are in {out}; a rerun resumes)") from None
    finally:
        serving.close()
    typer.echo(f"over Matter: {serving.commissioned} {homes} served as bridge nodes, each commissioned "
               f"into python-matter-server at {matter_server}")


__all__ = ["SERVER_URL", "Sandbox", "check_over_matter", "matter_sandbox", "missing_requirements", "python_command",
           "rerun_over_matter", "serving_over_matter"]
