"""A python-matter-server the lab runs itself, as a managed child process.

It gets its own storage folder and a PAA trust directory that already holds the public
development test PAA (the one matter.js devices and twin nodes attest with), so devices in
development mode commission without extra setup. The CHIP SDK under it writes its ini files
to /data, which must exist (created here when we may).
"""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

from twin.node.credentials import write_paa_trust_store

READY_LINE = "Matter Server successfully initialized"


class ControllerError(Exception):
    """The controller could not start or cannot be reached (one line)."""


class ManagedController:
    """`with ManagedController(folder, port) as c: c.url` runs python-matter-server."""

    def __init__(self, folder: Path, port: int = 5580, listen: str = "127.0.0.1"):
        self.folder = Path(folder)
        self.port = port
        self.listen = listen
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"ws://{self.listen}:{self.port}/ws"

    @property
    def log_path(self) -> Path:
        return self.folder / "server.log"

    def start(self, timeout: float = 90.0) -> str:
        exe = shutil.which("matter-server")
        if exe is None:
            raise ControllerError("the `matter-server` command is missing: pip install "
                                  "'python-matter-server[server]==7.0.1'")
        try:
            os.makedirs("/data", exist_ok=True)
        except OSError as err:
            raise ControllerError(f"the CHIP SDK needs a writable /data ({err.strerror})") from None
        if _port_in_use(self.listen, self.port):
            raise ControllerError(f"port {self.port} on {self.listen} is already in use; give "
                                  "controller.start.port another one, or controller.url to use "
                                  "the server that listens there")
        self.folder.mkdir(parents=True, exist_ok=True)
        paa = self.folder / "paa"
        write_paa_trust_store(paa)
        start = self.log_path.stat().st_size if self.log_path.exists() else 0
        log = open(self.log_path, "a")
        self.process = subprocess.Popen(
            [exe, "--storage-path", str(self.folder / "storage"), "--paa-root-cert-dir", str(paa),
             "--listen-address", self.listen, "--port", str(self.port), "--log-level", "info"],
            stdout=log, stderr=subprocess.STDOUT, cwd=str(self.folder))
        log.close()
        deadline = time.monotonic() + timeout
        while True:
            with open(self.log_path, errors="replace") as f:
                f.seek(start)
                text = f.read()
            if READY_LINE in text:
                return self.url
            if self.process.poll() is not None:
                tail = " | ".join(self.log_path.read_text(errors="replace").splitlines()[-3:])
                raise ControllerError(f"python-matter-server exited with code "
                                      f"{self.process.returncode}: {tail}")
            if time.monotonic() > deadline:
                self.stop()
                raise ControllerError(f"python-matter-server did not start within {timeout:g} s "
                                      f"(log: {self.log_path})")
            time.sleep(0.2)

    def stop(self) -> None:
        proc = self.process
        if proc is None or proc.poll() is not None:
            return
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def __enter__(self) -> ManagedController:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _port_in_use(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((host, port)) == 0


__all__ = ["ControllerError", "ManagedController"]
