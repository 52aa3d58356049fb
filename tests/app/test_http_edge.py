"""Issue #32 items 5, 6 and 8 at the HTTP edge (matter_twin/http_edge.py), on 127.0.0.1 only:
bodies are bounded and read with a timeout, bad bodies are 4xx (never 500), idle and surplus
connections are closed, aborted bodies and floods leave no tracebacks and no log flood, and the
API answers again right after."""
from __future__ import annotations

import json
import logging
import socket
import threading
import time
from contextlib import contextmanager

import pytest
import uvicorn
from fastapi.testclient import TestClient

import matter_twin.http_edge as edge
from matter_twin.http import create_app
from twin.clock import Pace
from twin.home import Home

DEEP = 5000


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    home_file = tmp_path_factory.mktemp("edge") / "home.yaml"
    return TestClient(create_app(Home.default(), pace=Pace(1.0), home_file=home_file))


@pytest.mark.parametrize("route", ["/live/homefile", "/clock/pace", "/tools/get_rooms", "/faults", "/clock/advance"])
def test_deeply_nested_json_is_a_400_on_every_route(client, route):
    answer = client.post(route, content=b'{"home": ' + b"[" * DEEP + b"]" * DEEP + b"}",
                         headers={"Content-Type": "application/json"})
    assert answer.status_code == 400, answer.text
    assert "nested too deeply" in answer.json()["error"]["message"]


def test_a_nul_byte_in_the_save_path_is_a_400(client):
    home = client.get("/live/homefile").json()["home"]
    answer = client.post("/live/homefile", json={"home": home, "path": "a\x00b.yaml"})
    assert answer.status_code == 400 and "a file name ending .yaml" in answer.json()["error"]["message"]


def test_a_body_over_the_limit_is_a_413_before_it_is_read(client):
    answer = client.post("/tools/get_rooms", content=b"{}",
                         headers={"Content-Type": "application/json", "Content-Length": str(64 << 20)})
    assert answer.status_code == 413 and "at most" in answer.json()["error"]["message"]
    answer = client.post("/clock/pace", content=b" " * (edge.MAX_BODY_BYTES + 1))
    assert answer.status_code == 413


# --- a real server -------------------------------------------------------------------------------

@contextmanager
def served(app, **limits):
    saved = {name: getattr(edge, name) for name in limits}
    for name, value in limits.items():
        setattr(edge, name, value)
    server = uvicorn.Server(edge.server_config(app, "127.0.0.1", 0, lifespan="off"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while not server.started:
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.05)
        yield server.servers[0].sockets[0].getsockname()[1]
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        for name, value in saved.items():
            setattr(edge, name, value)


def call(port, path="/health", body=None, timeout=5.0):
    data = b"" if body is None else json.dumps(body).encode()
    method = "GET" if body is None else "POST"
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(f"{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {len(data)}\r\n"
                     f"Connection: close\r\n\r\n".encode() + data)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    return int(answer.split()[1]), answer.partition(b"\r\n\r\n")[2]


def closed_by_server(sock, within=5.0):
    sock.settimeout(within)
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def test_idle_and_surplus_connections_are_closed_and_the_api_answers_right_after(caplog):
    app = create_app(Home.default())
    # 60 connections fit the listen backlog (edge.BACKLOG): all are accepted at once, in order.
    with caplog.at_level(logging.WARNING), served(app, MAX_CONNECTIONS=20, HEAD_TIMEOUT_S=3.0) as port:
        idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(60)]
        try:
            time.sleep(0.5)
            # Beyond the limit a connection is closed at once; the first ones wait for their head.
            assert sum(closed_by_server(s, within=0.1) for s in idle[20:]) == 40
            # Those that never send a request head are closed after the head timeout.
            assert all(closed_by_server(s, within=5.0) for s in idle[:20])
        finally:
            for s in idle:
                s.close()
        started = time.monotonic()
        assert call(port)[0] == 200
        assert time.monotonic() - started < 1.0
    lines = [r for r in caplog.records if r.name.startswith(("matter_twin", "uvicorn", "asyncio"))]
    assert len(lines) <= 4 and not any(r.exc_info for r in lines), [r.getMessage() for r in lines]


def test_aborted_and_oversized_bodies_leave_no_traceback(caplog):
    app = create_app(Home.default())
    with caplog.at_level(logging.INFO), served(app) as port:
        for _ in range(50):   # the client goes away halfway through its body
            with socket.create_connection(("127.0.0.1", port)) as sock:
                sock.sendall(b"POST /tools/get_rooms HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{\"a\"")
        # A 64 MB body, chunked (no Content-Length to refuse it by): refused once 4 MB arrived.
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            sock.sendall(b"POST /tools/get_rooms HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
            chunk = b"%x\r\n" % (1 << 20) + b" " * (1 << 20) + b"\r\n"
            with pytest.raises(OSError):   # the server answers 413 and closes while we still send
                for _ in range(64):
                    sock.sendall(chunk)
        deadline = time.monotonic() + 10
        while True:   # the server has seen every disconnect
            status, body = call(port, "/tools/get_rooms", {})
            if status == 200 or time.monotonic() > deadline:
                break
        assert status == 200, body
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert not any(r.exc_info for r in caplog.records) and "Traceback" not in text, text[-3000:]
