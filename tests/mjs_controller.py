"""Drive tests/matterjs/controller.mjs (the matter.js controller) from a test: it runs inside
the test's namespace; requests and answers are JSON lines over its stdin/stdout."""
from __future__ import annotations

import json
import os
import queue
import shutil
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from netns import REPO, Netns

MATTERJS = REPO / ".cache" / "matterjs" / "node_modules"


class MatterJsController:
    def __init__(self, ns: Netns, workdir: Path, port: int = 5600, name: str = "mjs-controller"):
        if not (MATTERJS / "@matter" / "main").is_dir() or shutil.which("node") is None:
            raise AssertionError(f"missing node or matter.js in {MATTERJS}: run scripts/install-test-deps.sh")
        folder = workdir / name
        folder.mkdir()
        (folder / "node_modules").symlink_to(MATTERJS)
        shutil.copy(REPO / "tests" / "matterjs" / "controller.mjs", folder / "controller.mjs")
        self.log_path = workdir / f"{name}.log"
        env = dict(os.environ, MATTER_STORAGE_PATH=str(folder / "storage"), MATTER_LOG_LEVEL="warn")
        self.process = ns.popen(["node", "controller.mjs", str(port)], cwd=str(folder), env=env, text=True,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=open(self.log_path, "w"))
        self.lines: queue.Queue = queue.Queue()
        self.reports: list[dict[str, Any]] = []
        self._next_id = 0
        threading.Thread(target=self._pump, daemon=True).start()
        self._wait(lambda m: m.get("ready"), 60, "start")

    def _pump(self) -> None:
        for line in self.process.stdout:
            try:
                message = json.loads(line)
            except ValueError:
                continue   # stray output of the library
            if "report" in message:
                self.reports.append(message["report"])
            self.lines.put(message)

    def _wait(self, match: Any, timeout: float, what: str) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            try:
                message = self.lines.get(timeout=max(deadline - time.monotonic(), 0.01))
            except queue.Empty:
                raise AssertionError(f"matter.js controller: no answer to {what} in {timeout} s\n"
                                     f"{self.log()}") from None
            if match(message):
                return message

    def request(self, op: str, timeout: float = 120, **fields: Any) -> Any:
        self._next_id += 1
        request_id = self._next_id
        self.process.stdin.write(json.dumps({"id": request_id, "op": op, **fields}) + "\n")
        self.process.stdin.flush()
        answer = self._wait(lambda m: m.get("id") == request_id, timeout, op)
        if not answer["ok"]:
            raise AssertionError(f"matter.js controller {op} {fields}: {answer['error']}\n{self.log()}")
        return answer["result"]

    def wait_report(self, predicate: Any, timeout: float = 30) -> dict[str, Any] | None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for report in list(self.reports):
                if predicate(report):
                    return report
            time.sleep(0.1)
        return None

    def log(self, chars: int = 4000) -> str:
        return self.log_path.read_text(errors="replace")[-chars:] if self.log_path.exists() else ""

    def close(self) -> None:
        if self.process.poll() is None:
            try:
                self.process.stdin.write(json.dumps({"id": 0, "op": "close"}) + "\n")
                self.process.stdin.flush()
                self.process.wait(15)
            except (OSError, subprocess.TimeoutExpired):
                self.process.kill()
                self.process.wait()
