"""What a node absorbs (issue #32): figures for docs/security.md.

    python bench/bench_security.py                      # both parts
    python bench/bench_security.py --part handshakes    # sans-IO, this process
    python bench/bench_security.py --part http --body-mb 64 --idle 1100

- handshakes: rejected or absorbed handshake messages per second of CPU (one core: the node is
  one thread), fed to a real `NodeCore` as datagrams: malformed PBKDFParamRequest, malformed
  Sigma1, a genuine Sigma1 replayed from new exchanges, and squatter PBKDFParamRequests (well
  formed, answered, then preempted). Datagrams are built before the clock starts.
- http: inside a network namespace this script creates (and deletes), one process runs a node
  (NodeCore on UDP) and the HTTP tool API (uvicorn with matter_twin/http_edge.py's settings) on
  one event loop, with the common soft limit of 1,024 descriptors and its log in a file; a
  second process probes the node 50 times a second (an ack-requesting datagram; the time to its
  ack); a third sends a 64 MB POST (with Content-Length, then chunked), runs 50 clients calling a
  tool back to back for 5 s, holds 1,100 idle connections for 8 s, closes them, and times how
  long until GET /health answers again.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import resource
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
for folder in (REPO, REPO / "tests", REPO / "tests" / "node"):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))

from matter_protocol.exchange import MessageLayer, Send  # noqa: E402
from matter_protocol.message import ProtocolId, SecureChannelOpcode  # noqa: E402


def first_message(opcode: int, payload: bytes, seed: int, address=None) -> bytes:
    layer = MessageLayer(random.Random(seed))
    exchange = layer.new_exchange(layer.open_unsecured(address, 0), ProtocolId.SECURE_CHANNEL)
    (datagram,) = [a.data for a in layer.send(exchange, opcode, payload, 0) if isinstance(a, Send)]
    return datagram


# --- part 1: handshakes per CPU second -----------------------------------------------------------

def handshakes(count: int) -> dict[str, float]:
    from test_node_runtime import make_core, make_fabric

    from matter_protocol.case import CaseInitiator
    from matter_protocol.pase import PaseInitiator

    out: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        core, commissioning = make_core(Path(tmp) / "a")
        node_fabric, ctrl_fabric = make_fabric()
        commissioning.table.add_pending(node_fabric)
        commissioning.table.commit()
        (_, sigma1), = CaseInitiator(ctrl_fabric, 0x55, 7, rng=random.Random(3)).start()
        core.receive(first_message(SecureChannelOpcode.CASE_Sigma1, sigma1, 10**6), ("fd99::2", 1), 0)  # the original
        kinds = {
            "malformed PBKDFParamRequest": [first_message(SecureChannelOpcode.PBKDFParamRequest, b"\x15", s)
                                            for s in range(count)],
            "malformed Sigma1": [first_message(SecureChannelOpcode.CASE_Sigma1, b"\x15", s + count)
                                 for s in range(count)],
            "replayed Sigma1": [first_message(SecureChannelOpcode.CASE_Sigma1, sigma1, s + 2 * count)
                                for s in range(count)],
            "squatter PBKDFParamRequest": [
                first_message(SecureChannelOpcode.PBKDFParamRequest,
                              PaseInitiator(1, 0x200, rng=random.Random(s)).start()[0][1], s + 3 * count)
                for s in range(count)],
        }
        now = 1.0
        for kind, datagrams in kinds.items():
            started = time.process_time()
            for datagram in datagrams:
                now += 0.01
                core.receive(datagram, ("fd99::66", 5540), now)
            out[kind] = len(datagrams) / (time.process_time() - started)
        out["handshakes held"] = len(core._handshakes)
        out["window failed attempts"] = commissioning.window.failed_attempts
    return out


# --- part 2: node acks under an HTTP flood (in a namespace) ---------------------------------------

def serve(workdir: str, limit_s: float) -> dict:
    """In the namespace: a node and the HTTP API on one loop until `workdir/stop` appears."""
    import asyncio
    import logging

    import uvicorn
    from test_node_runtime import make_core

    from matter_twin.http import create_app
    from matter_twin.http_edge import server_config
    from twin.home import Home
    from twin.node.manager import MatterNode

    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (1024, hard))
    log_path = Path(workdir) / "server.log"
    handler = logging.FileHandler(log_path)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=logging.WARNING, handlers=[handler])   # what `twin run` logs

    async def main() -> None:
        core, _ = make_core(Path(workdir) / "node")
        node = MatterNode(core.im.device, core, 0, "::1")
        await node.start()
        server = uvicorn.Server(server_config(create_app(Home.default()), "127.0.0.1", 0,
                                              lifespan="off"))
        serving = asyncio.create_task(server.serve())
        while not server.started:
            await asyncio.sleep(0.05)
        port = server.servers[0].sockets[0].getsockname()[1]
        (Path(workdir) / "ports.json").write_text(json.dumps({"node": node.port, "api": port}))
        deadline = time.monotonic() + limit_s
        while not (Path(workdir) / "stop").exists() and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        server.should_exit = True
        await serving
        node.close()

    asyncio.run(main())
    return {"log_bytes": log_path.stat().st_size, "log": log_path.read_text(errors="replace")[-3000:],
            "tracebacks": log_path.read_text(errors="replace").count("Traceback")}


def probe(node_port: int, seconds: float, rate_hz: float = 50.0) -> list[tuple[float, float | None]]:
    """In the namespace: (when sent, ms to the node's ack or None) for ack-requesting datagrams."""
    layer = MessageLayer(random.Random(5))
    session = layer.open_unsecured(("::1", node_port), 0)
    results: list[tuple[float, float | None]] = []
    with socket.socket(socket.AF_INET6, socket.SOCK_DGRAM) as sock:
        sock.settimeout(1.0)
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            exchange = layer.new_exchange(session, ProtocolId.SECURE_CHANNEL)
            (datagram,) = [a.data for a in layer.send(exchange, 0x7F, b"", 0) if isinstance(a, Send)]
            layer.abort_exchange(exchange)
            sent = time.monotonic()
            sock.sendto(datagram, ("::1", node_port))
            try:
                sock.recv(2048)
                results.append((sent, (time.monotonic() - sent) * 1000))
            except TimeoutError:
                results.append((sent, None))
            time.sleep(max(0.0, 1 / rate_hz - (time.monotonic() - sent)))
    return results


def tool_calls(api_port: int, clients: int, seconds: float) -> int:
    """`clients` threads calling a tool over HTTP back to back for `seconds`; calls answered."""
    import threading

    done = [0] * clients
    end = time.monotonic() + seconds

    def client(i: int) -> None:
        body = b'{"room.id": "living_room"}'
        while time.monotonic() < end:
            try:
                with socket.create_connection(("127.0.0.1", api_port), timeout=10) as sock:
                    sock.sendall(b"POST /tools/get_room_devices HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                                 b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
                    if sock.recv(20).startswith(b"HTTP/1.1 200"):
                        done[i] += 1
                    while sock.recv(65536):
                        pass
            except OSError:
                time.sleep(0.01)
    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(done)


def flood(api_port: int, body_mb: int, idle: int, hold_s: float, clients: int = 50) -> dict:
    """In the namespace: the big POSTs and the idle connections, then the time to recover."""
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(idle + 256, 4096) if hard == resource.RLIM_INFINITY
                                                else min(hard, idle + 256), hard))
    out: dict = {"start": time.monotonic()}
    body = b" " * (body_mb << 20)
    with socket.create_connection(("127.0.0.1", api_port), timeout=30) as sock:   # Content-Length given
        sock.sendall(f"POST /tools/get_rooms HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n\r\n".encode())
        try:
            sock.sendall(body)
        except OSError:
            pass
        out["sized_answer"] = sock.recv(200).split(b"\r\n")[0].decode(errors="replace")
    with socket.create_connection(("127.0.0.1", api_port), timeout=30) as sock:   # chunked
        sock.sendall(b"POST /tools/get_rooms HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
        chunk = b"%x\r\n" % (1 << 20) + b" " * (1 << 20) + b"\r\n"
        sent = 0
        try:
            for _ in range(body_mb):
                sock.sendall(chunk)
                sent += 1
        except OSError:
            pass
        out["chunked_mb_sent"] = sent
    del body
    out["calls"] = tool_calls(api_port, clients, 5.0)
    held = []
    for _ in range(idle):
        try:
            held.append(socket.create_connection(("127.0.0.1", api_port), timeout=5))
        except OSError:
            break
    out["idle_opened"] = len(held)
    time.sleep(hold_s)
    open_still = 0
    for s in held:
        s.setblocking(False)
        try:
            open_still += s.recv(1) != b""
        except BlockingIOError:
            open_still += 1
        except OSError:
            pass
        s.close()
    out["idle_open_at_end"] = open_still
    out["closed"] = time.monotonic()
    while True:
        try:
            with socket.create_connection(("127.0.0.1", api_port), timeout=2) as sock:
                sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                if sock.recv(100).startswith(b"HTTP/1.1 200"):
                    break
        except OSError:
            time.sleep(0.05)
    out["recovered"] = time.monotonic()
    return out


def http(body_mb: int, idle: int) -> dict:
    # The namespace's processes import these functions by module name: not `__main__`.
    import bench_security as me
    import netns
    serve, probe, flood = me.serve, me.probe, me.flood

    with netns.network_namespace("bsec") as ns, tempfile.TemporaryDirectory() as workdir:
        server = ns.start(serve, workdir, 120.0)
        ports = Path(workdir) / "ports.json"
        deadline = time.monotonic() + 60
        while not ports.exists():
            if time.monotonic() > deadline:
                raise RuntimeError(f"the server did not start: {server.result(5)}")
            time.sleep(0.1)
        port = json.loads(ports.read_text())
        prober = ns.start(probe, port["node"], 60.0)
        time.sleep(4.0)   # baseline
        flooded = ns.call(flood, port["api"], body_mb, idle, 8.0, timeout=120)
        samples = prober.result(90)
        (Path(workdir) / "stop").write_text("")
        served = server.result(60)

    def stats(rows):
        ms = [m for _, m in rows if m is not None]
        lost = sum(m is None for _, m in rows)
        if not ms:
            return {"probes": len(rows), "lost": lost}
        ms.sort()
        return {"probes": len(rows), "lost": lost, "p50_ms": statistics.median(ms),
                "p99_ms": ms[min(len(ms) - 1, int(len(ms) * 0.99))], "max_ms": ms[-1]}
    return {"baseline": stats([r for r in samples if r[0] < flooded["start"]]),
            "during flood": stats([r for r in samples if flooded["start"] <= r[0] <= flooded["closed"]]),
            "after": stats([r for r in samples if r[0] > flooded["closed"]]),
            "413 with Content-Length": flooded["sized_answer"],
            "chunked MB sent before the server closed": flooded["chunked_mb_sent"],
            "tool calls answered (50 clients, 5 s)": flooded["calls"],
            "idle connections opened": flooded["idle_opened"],
            "idle connections still open after 8 s": flooded["idle_open_at_end"],
            "API answers again after (s)": round(flooded["recovered"] - flooded["closed"], 3),
            "server log bytes": served["log_bytes"], "tracebacks in the log": served["tracebacks"],
            **({"log": served["log"]} if os.environ.get("BENCH_SHOW_LOG") else {})}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--part", choices=["handshakes", "http", "all"], default="all")
    parser.add_argument("--count", type=int, default=3000, help="datagrams per handshake kind")
    parser.add_argument("--body-mb", type=int, default=64)
    parser.add_argument("--idle", type=int, default=1100)
    args = parser.parse_args()
    if os.geteuid() != 0 and args.part != "handshakes":
        raise SystemExit("the http part creates a network namespace: run as root")
    if args.part in ("handshakes", "all"):
        for kind, value in handshakes(args.count).items():
            print(f"{kind:>32}: {value:,.0f}" + (" /s per core" if isinstance(value, float) else ""))
    if args.part in ("http", "all"):
        for key, value in http(args.body_mb, args.idle).items():
            print(f"{key:>42}: {value}")


if __name__ == "__main__":
    main()
