"""The conformance suite over the network: twin nodes and one CHIP SDK controller in a namespace
the test session creates, and `NetworkDut`, the `Dut` (dut.py) that speaks to a commissioned
node through that controller.

- `twin run` serves the default home (one node per device), in a second process bridge mode
  (`--aggregator`: the whole home as one Bridge node), and in a third the library home (one
  device of each type the default home lacks, `library_home_yaml`); each starts when first needed.
- `chip_controller.py` runs the SDK's controller in the namespace, with its own /data (a
  private mount), and answers the test process over a Unix socket (`ControllerClient`).
- Every node is commissioned on-network by its QR payload once per session.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from multiprocessing.connection import Client, Connection
from pathlib import Path
from typing import Any

from dut import AttributeReport, DutEvent, DutStatusError, event_class
from netns import REPO, Netns, test_folders, wait_for_line

HERE = Path(__file__).resolve().parent
HOME_PORTS = (5600, 8091)      # first node's UDP port, HTTP tool API (inside the namespace)
BRIDGE_PORTS = (5700, 8092)
LIBRARY_PORTS = (5800, 8093)
BRIDGE_ID = "@bridge"          # the bridge node's name in `twin run --aggregator`'s codes


class ControllerError(RuntimeError):
    """The controller process failed a request (the message carries its traceback)."""


def tail(path: Path, chars: int = 4000) -> str:
    return path.read_text(errors="replace")[-chars:] if path.exists() else "(no log)"


def child_env() -> dict[str, str]:
    return dict(os.environ, PYTHONUNBUFFERED="1", PYTHONPATH=os.pathsep.join(
        [str(REPO), *map(str, test_folders()), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep))


class ControllerClient:
    """The test process's end of the controller's socket: one request at a time."""

    def __init__(self, ns: Netns, workdir: Path) -> None:
        from twin.node.credentials import write_paa_trust_store
        self.workdir = workdir
        self.log = workdir / "controller.log"
        data = workdir / "controller-data"   # chip-core writes its ini files to /data: a private one
        data.mkdir()
        paa = workdir / "paa"
        write_paa_trust_store(paa)
        socket = workdir / "controller.sock"
        script = (f'mount --bind "{data}" /data && exec "{sys.executable}" "{HERE / "chip_controller.py"}" '
                  f'"{socket}" "{workdir}" "{paa}"')
        self.process = ns.popen(["unshare", "-m", "--propagation", "private", "sh", "-c", script],
                                stdout=open(self.log, "w"), stderr=subprocess.STDOUT, env=child_env(),
                                cwd=str(workdir))
        try:
            wait_for_line(self.log, lambda line: line == "ready", 60)
        except TimeoutError:
            self.close()
            raise AssertionError(f"the CHIP controller did not start:\n{tail(self.log)}") from None
        self.conn: Connection = Client(str(socket), family="AF_UNIX")
        self._late = 0   # requests that timed out, whose answers are still to come

    def call(self, name: str, *args: Any, timeout: float = 120, **kwargs: Any) -> Any:
        """Run `name` (an op of chip_controller.py, or "module:function") in the controller."""
        # The answers of requests that timed out come later, in order: they are not the next
        # request's (without this, one timeout shifted every later answer by one).
        while self._late:
            if not self.conn.poll(timeout):
                raise ControllerError(f"{name}: an earlier request still has no answer\n{tail(self.log)}")
            self.conn.recv()
            self._late -= 1
        self.conn.send((name, args, kwargs))
        if not self.conn.poll(timeout):
            self._late += 1
            raise ControllerError(f"{name}: no answer in {timeout} s\n{tail(self.log)}")
        answer = self.conn.recv()
        if answer[0] == "status":
            raise DutStatusError(answer[1], f"{name}{args}: {answer[3]}", answer[2])
        if answer[0] == "error":
            raise ControllerError(f"{name}{args} failed in the controller:\n{answer[1]}")
        return answer[1]

    def close(self) -> None:
        if getattr(self, "conn", None) is not None:
            self.conn.close()
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


@dataclass
class TwinProcess:
    """`twin run` in the namespace: its nodes, and its tool API on 127.0.0.1:http inside."""
    process: subprocess.Popen
    log: Path
    http: int
    storage: Path
    node_ids: dict[str, int] = field(default_factory=dict)   # device (or BRIDGE) -> commissioned node id

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def start_twin(ns: Netns, workdir: Path, name: str, ports: tuple[int, int], *extra: str) -> TwinProcess:
    log = workdir / f"{name}.log"
    base_port, http = ports
    storage = workdir / f"{name}-storage"
    process = ns.popen([sys.executable, "-m", "matter_twin.cli", "run", "--speed", "1", "--matter",
                        "--storage", str(storage), "--base-port", str(base_port), "--http", str(http),
                        "--open-windows", "all-qr", *extra],
                       stdout=open(log, "w"), stderr=subprocess.STDOUT, cwd=str(workdir), env=child_env())
    twin = TwinProcess(process, log, http, storage)
    try:
        wait_for_line(log, lambda line: line.startswith("http: "), 90)
        wait_for_line(log, lambda line: line.startswith("matter: "), 10)
    except TimeoutError:
        twin.stop()
        raise AssertionError(f"twin run ({name}) did not come up:\n{tail(log)}") from None
    return twin


class NetworkLab:
    """One namespace, one controller, and the twin processes started on demand."""

    def __init__(self, ns: Netns, workdir: Path, library_yaml: str = "") -> None:
        self.ns = ns
        self.workdir = workdir
        self.library_yaml = library_yaml   # the library home as a home file (conftest builds it)
        self.controller = ControllerClient(ns, workdir)
        self.twins: dict[str, TwinProcess] = {}
        self._next_node_id = 0x100
        self.compositions: dict[int, Any] = {}   # node id -> its data model, read once (composition.py)

    def close(self) -> None:
        for twin in self.twins.values():
            twin.stop()
        self.controller.close()

    def logs(self) -> str:
        parts = [f"--- controller:\n{tail(self.controller.log)}"]
        parts += [f"--- {name}:\n{tail(t.log)}" for name, t in self.twins.items()]
        return "\n".join(parts)

    def twin(self, mode: str) -> TwinProcess:
        """The default home's twin ("home"), the bridge-mode twin ("bridge") or the library
        home's ("library"), started once."""
        if mode not in self.twins:
            if mode == "home":
                self.twins[mode] = start_twin(self.ns, self.workdir, "home", HOME_PORTS)
            elif mode == "library":
                home_file = self.workdir / "library.yaml"
                home_file.write_text(self.library_yaml)
                self.twins[mode] = start_twin(self.ns, self.workdir, "library", LIBRARY_PORTS,
                                              "--home", str(home_file))
            else:
                # Another seed: devices' serial numbers and UniqueIDs come from the home's seed, and
                # one controller would otherwise see each device twice with one identity (as a
                # node of the home twin and bridged by this one).
                self.twins[mode] = start_twin(self.ns, self.workdir, "bridge", BRIDGE_PORTS, "--aggregator",
                                              "--seed", "1")
        return self.twins[mode]

    def restart(self, mode: str) -> None:
        """Reboot the nodes of twin process `mode` ("home" or "bridge"): stop it and start it again
        on the same storage, so fabrics, ACLs and the rest come back from what the nodes saved."""
        old = self.twins.pop(mode)
        old.stop()
        self.twin(mode).node_ids = old.node_ids
        for node_id in old.node_ids.values():   # their CASE sessions died with the process
            self.controller.call("expire_sessions", node_id)

    def node_id(self, device: str, mode: str = "home") -> int:
        """The node id of `device` (a node name of `twin run`'s codes, or BRIDGE_ID) of twin
        process `mode`, commissioning it on first use."""
        twin = self.twin("bridge" if device == BRIDGE_ID else mode)
        if device not in twin.node_ids:
            codes = self.controller.call("http_json", f"http://127.0.0.1:{twin.http}/codes")["codes"]
            by_device = {row["device"]: row for row in codes}
            if device not in by_device:
                raise AssertionError(f"{device} has no pairing code; codes for {sorted(by_device)}")
            self._next_node_id += 1
            try:
                self.controller.call("commission", by_device[device]["qr_code"], self._next_node_id, timeout=180)
            except Exception as err:
                raise AssertionError(f"commissioning {device} failed: {err}\n{self.logs()}") from None
            twin.node_ids[device] = self._next_node_id
        return twin.node_ids[device]

    def dut(self, device: str, device_type: str, mode: str = "home") -> NetworkDut:
        """The Dut of node `device` (`device_type`: its dut key, "bridge" for the bridge) of
        twin process `mode` ("home" or "library"; the bridge has its own)."""
        mode = "bridge" if device == BRIDGE_ID else mode
        return NetworkDut(self, device, device_type, self.node_id(device, mode), mode)


class NetworkDut:
    """A commissioned twin node, reached through the CHIP SDK's controller (see dut.Dut)."""

    def __init__(self, lab: NetworkLab, name: str, device_type: str, node_id: int, mode: str = "home") -> None:
        self.lab = lab
        self.name = name
        self.device_type = device_type
        self.node_id = node_id
        self.mode = mode   # the twin process serving it

    def call(self, op: str, *args: Any, **kwargs: Any) -> Any:
        return self.lab.controller.call(op, self.node_id, *args, **kwargs)

    def endpoints(self) -> list[int]:
        from chip.clusters import Objects as C
        return [0, *self.read(0, C.Descriptor.Attributes.PartsList)]

    def read(self, endpoint: int, attribute: Any) -> Any:
        return self.call("read", endpoint, attribute)

    def read_cluster(self, endpoint: int, cluster: Any) -> dict[str, Any]:
        result = self.call("read_paths", [(endpoint, cluster)])
        return result.get(endpoint, {}).get(cluster.__name__, {})

    def write(self, endpoint: int, attribute: Any, value: Any, timed_ms: int | None = None) -> None:
        status = self.call("write", endpoint, attribute(value), timed_ms=timed_ms)
        if status != 0:
            raise DutStatusError(status, f"write {attribute.__qualname__}")

    def invoke(self, endpoint: int, command: Any, timed_ms: int | None = None) -> Any:
        return self.call("invoke", endpoint, command, timed_ms=timed_ms)

    def wait(self, seconds: float) -> None:
        time.sleep(seconds)

    def read_events(self, endpoint: int, event: Any, event_min: int | None = None,
                    fabric_filtered: bool = True) -> list[DutEvent]:
        records = self.call("read_event_records", endpoint, event, event_min, fabric_filtered)
        return [item for item in map(_report_item, records) if isinstance(item, DutEvent)]

    def subscribe(self, paths: list[tuple[int, Any]], min_interval: int, max_interval: int,
                  event_min: int | None = None) -> NetworkSubscription:
        key, granted = self.call("subscribe", paths, min_interval, max_interval, event_min)
        return NetworkSubscription(self.lab.controller, key, granted)

    def hand(self, action: str, **args: Any) -> Any:
        answer = self.twin_post("/hand", {"device": self.name, "action": action, **args})
        if not answer.get("ok"):
            raise AssertionError(f"hand {action} {args} on {self.name}: {answer}")
        return answer

    def presence(self, person: str, here: bool) -> None:
        room = None
        if here:   # the device's room, from the tool API
            rooms = self.twin_post("/tools/get_rooms", {})["rooms"]
            room = next(r["room_id"] for r in rooms
                        if any(d["device_id"] == self.name for d in self.twin_post(
                            "/tools/get_room_devices", {"room.id": r["room_id"]})["devices"]))
        answer = self.twin_post("/presence", {"person": person, "room": room})
        if not answer.get("ok"):
            raise AssertionError(f"presence {person} {room}: {answer}")

    def read_node(self) -> dict[int, dict[int, dict[int, Any]]]:
        """A wildcard read of every attribute of the node, by ids (chunked by the node)."""
        return self.call("read_node", timeout=180)

    def twin_post(self, path: str, body: Any) -> Any:
        """POST a JSON body to the HTTP API of the twin process serving this node (e.g. /faults)."""
        twin = self.lab.twin(self.mode)
        return self.lab.controller.call("http_post_json", f"http://127.0.0.1:{twin.http}{path}", body)

    def run(self, function: str, *args: Any, timeout: float = 120, **kwargs: Any) -> Any:
        """Run `module:function(controller, node_id, *args)` inside the controller process."""
        return self.lab.controller.call(function, self.node_id, *args, timeout=timeout, **kwargs)



class NetworkSubscription:
    """A subscription held by the controller process; its reports queue there until polled."""

    def __init__(self, controller: ControllerClient, key: int, max_interval: int) -> None:
        self.controller = controller
        self.key = key
        self.max_interval = max_interval

    def poll(self, timeout: float) -> list[AttributeReport | DutEvent]:
        records = self.controller.call("subscription_poll", self.key, timeout, timeout=timeout + 60)
        return [_report_item(r) for r in records]

    def close(self) -> None:
        self.controller.call("subscription_close", self.key)


def _report_item(record: tuple) -> AttributeReport | DutEvent:
    """A queued report of chip_controller.py (an attribute value or an event_record)."""
    if record[0] == "attribute":
        return AttributeReport(*record[1:])
    _, endpoint, cluster_id, event_id, number, priority, data = record
    return DutEvent(endpoint, event_class(cluster_id, event_id), number, priority, data)
