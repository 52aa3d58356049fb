"""Throw-away network namespaces for tests that advertise, discover or talk Matter.

Nothing a test sends may leave this machine, so every mDNS/Matter test runs its processes in a
namespace it created: loopback up, and a veth pair v0/v1 inside it carrying fd99::1/64 and
fd99::2/64 (nodad, usable at once) plus 10.99.0.1/24 and 10.99.0.2/24. Multicast sent on one
end arrives on the other, so two processes in the namespace see each other's mDNS.

    with network_namespace() as ns:
        ns.run(["ip", "addr"])                       # a command inside
        result = ns.call(some_module_function, arg)  # a Python callable in a subprocess inside

Requires root (`ip netns`). The namespace is deleted on exit, also after a failure.
"""
from __future__ import annotations

import contextlib
import importlib
import importlib.util
import os
import pickle
import subprocess
import sys
import tempfile
import time
import traceback
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
ADDRESSES_V6 = ("fd99::1", "fd99::2")
#: Set by tests/conftest.py for tests marked `e2e`: only those may create a namespace.
ALLOWED = True
ADDRESSES_V4 = ("10.99.0.1", "10.99.0.2")


def test_folders() -> list[Path]:
    """tests/ and its package folders: where test modules and their shared helpers live."""
    tests = REPO / "tests"
    return [tests, *sorted(p for p in tests.iterdir() if p.is_dir() and p.name.isidentifier())]


class NetnsCallError(RuntimeError):
    """The callable raised inside the namespace; the message carries its traceback."""


class Netns:
    def __init__(self, name: str) -> None:
        self.name = name

    def command(self, args: list[str]) -> list[str]:
        """`args` prefixed so that it runs inside the namespace."""
        return ["ip", "netns", "exec", self.name, *args]

    def run(self, args: list[str], check: bool = True, **kwargs) -> subprocess.CompletedProcess:
        kwargs.setdefault("capture_output", True)
        kwargs.setdefault("text", True)
        return subprocess.run(self.command(args), check=check, **kwargs)

    def popen(self, args: list[str], **kwargs) -> subprocess.Popen:
        return subprocess.Popen(self.command(args), **kwargs)

    def start(self, func: Callable, *args: Any, **kwargs: Any) -> NetnsCall:
        """Run `func(*args, **kwargs)` in a new Python process inside the namespace.

        `func` must be a module-level function (it is imported by module name, or loaded from
        its file); arguments and result travel by pickle."""
        return NetnsCall(self, func, args, kwargs)

    def call(self, func: Callable, *args: Any, timeout: float = 60, **kwargs: Any) -> Any:
        return self.start(func, *args, **kwargs).result(timeout)


class NetnsCall:
    """A callable running in a subprocess inside a namespace; `result()` waits for it."""

    def __init__(self, ns: Netns, func: Callable, args: tuple, kwargs: dict) -> None:
        self._dir = tempfile.TemporaryDirectory(prefix="netns-call-")
        self._out = Path(self._dir.name) / "result.pickle"
        request = Path(self._dir.name) / "request.pickle"
        module = sys.modules[func.__module__]
        request.write_bytes(pickle.dumps({
            "module": func.__module__, "file": getattr(module, "__file__", None),
            "name": func.__qualname__, "args": args, "kwargs": kwargs, "out": str(self._out)}))
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            [str(REPO), *map(str, test_folders()), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep))
        self.process = ns.popen([sys.executable, "-m", "tests.netns", str(request)], env=env,
                                cwd=str(REPO), stdout=subprocess.PIPE, stderr=subprocess.STDOUT)

    def result(self, timeout: float = 60) -> Any:
        try:
            output, _ = self.process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.terminate()
            output, _ = self.process.communicate()
            raise NetnsCallError(f"timed out after {timeout} s; output:\n"
                                 f"{output.decode(errors='replace')}") from None
        try:
            if not self._out.exists():
                raise NetnsCallError(f"subprocess exited {self.process.returncode} without a "
                                     f"result; output:\n{output.decode(errors='replace')}")
            ok, value = pickle.loads(self._out.read_bytes())
            if not ok:
                raise NetnsCallError(f"{value}\noutput:\n{output.decode(errors='replace')}")
            return value
        finally:
            self._dir.cleanup()

    def terminate(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


@contextlib.contextmanager
def network_namespace(prefix: str = "mt") -> Iterator[Netns]:
    if not ALLOWED:
        raise RuntimeError("this test creates a network namespace: mark it @pytest.mark.e2e")
    name = f"{prefix}-{uuid.uuid4().hex[:10]}"
    subprocess.run(["ip", "netns", "add", name], check=True, capture_output=True)
    ns = Netns(name)
    try:
        # No duplicate address detection: addresses, link-local ones too, are usable at once.
        ns.run(["sysctl", "-qw", "net.ipv6.conf.default.accept_dad=0"])
        ns.run(["sysctl", "-qw", "net.ipv6.conf.all.accept_dad=0"])
        ns.run(["ip", "link", "set", "lo", "up"])
        ns.run(["ip", "link", "add", "v0", "type", "veth", "peer", "name", "v1"])
        for dev, v6, v4 in zip(("v0", "v1"), ADDRESSES_V6, ADDRESSES_V4):
            ns.run(["ip", "addr", "add", f"{v6}/64", "dev", dev, "nodad"])
            ns.run(["ip", "addr", "add", f"{v4}/24", "dev", dev])
            ns.run(["ip", "link", "set", dev, "up"])
        yield ns
    finally:
        # Processes still running inside would keep the namespace alive: end them first.
        pids = subprocess.run(["ip", "netns", "pids", name], capture_output=True, text=True)
        for pid in pids.stdout.split():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid), 9)
        subprocess.run(["ip", "netns", "delete", name], check=False, capture_output=True)


def append_line(path: str | Path, line: str) -> None:
    """Append one line to a file: a simple channel between a test and its subprocesses."""
    with open(path, "a") as f:
        f.write(line + "\n")
        f.flush()


def wait_for_line(path: str | Path, predicate: Callable[[str], bool], timeout: float,
                  start: int = 0) -> tuple[str, int]:
    """Wait until a line at index >= `start` of `path` satisfies `predicate`; returns the line
    and its index. Raises TimeoutError naming the lines seen."""
    deadline = time.monotonic() + timeout
    lines: list[str] = []
    while True:
        if os.path.exists(path):
            lines = Path(path).read_text().splitlines()
            for i in range(start, len(lines)):
                if predicate(lines[i]):
                    return lines[i], i
        if time.monotonic() > deadline:
            raise TimeoutError(f"no matching line in {path} after {timeout} s; lines: {lines}")
        time.sleep(0.05)


def _child_main(request_path: str) -> None:
    request = pickle.loads(Path(request_path).read_bytes())
    try:
        try:
            module = importlib.import_module(request["module"])
        except ImportError:
            # pytest imports test files by path (rootdir mode); do the same here.
            spec = importlib.util.spec_from_file_location(request["module"], request["file"])
            module = importlib.util.module_from_spec(spec)
            sys.modules[request["module"]] = module
            spec.loader.exec_module(module)
        func = module
        for part in request["name"].split("."):
            func = getattr(func, part)
        payload = (True, func(*request["args"], **request["kwargs"]))
    except BaseException:  # noqa: BLE001 - everything goes back to the parent as text
        payload = (False, traceback.format_exc())
    Path(request["out"]).write_bytes(pickle.dumps(payload))
    sys.stdout.flush()
    # chip-core's native threads may hang interpreter shutdown; the result is already written.
    os._exit(0)


if __name__ == "__main__":
    _child_main(sys.argv[1])
