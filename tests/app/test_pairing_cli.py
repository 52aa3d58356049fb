"""Codes people can use (issue #13): `twin codes` never cuts a code at 80 columns, `twin codes
DEVICE` draws a QR code that decodes back to the payload, help pages read as manuals (examples,
flags without `<bool>`), `twin pair` against a running twin's HTTP API, and offline /docs."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from rich.console import Console
from typer.testing import CliRunner

from matter_protocol.pairing import parse_qr_code
from matter_twin.cli import app
from matter_twin.console import codes_rows, print_codes, print_device_code, qr_matrix, qr_text
from matter_twin.http import create_app
from twin.home import Home

REPO = Path(__file__).resolve().parents[2]


def twin(*args: str, columns: int = 80) -> subprocess.CompletedProcess:
    env = dict(os.environ, COLUMNS=str(columns), TERM="xterm")
    return subprocess.run([sys.executable, "-m", "matter_twin.cli", *args], capture_output=True, text=True,
                          cwd=REPO, timeout=120, env=env)


def terminal(width: int) -> Console:
    return Console(force_terminal=True, width=width, color_system=None, record=True)


@pytest.mark.parametrize("width", [80, 50, 30])
def test_codes_never_truncate_at_narrow_widths(width):
    rows = codes_rows(Home.default())
    console = terminal(width)
    with console.capture() as captured:
        print_codes(console, rows)
    text = captured.get()
    assert "…" not in text
    for row in rows:
        code = row["manual_code"]
        assert f"{code[:4]}-{code[4:7]}-{code[7:]}" in text and row["qr_code"] in text
    assert all(len(line) <= width for line in text.splitlines())


def decode(matrix: list[list[bool]]) -> str:
    zxingcpp = pytest.importorskip("zxingcpp")
    import numpy as np
    image = np.array([[0 if dark else 255 for dark in row] for row in matrix], dtype=np.uint8)
    image = np.kron(image, np.ones((8, 8), dtype=np.uint8))   # 8 px per module
    found = zxingcpp.read_barcodes(image)
    assert found, "no QR code found"
    return found[0].text


def test_the_drawn_qr_code_decodes_to_the_payload():
    row = codes_rows(Home.default())[0]
    assert decode(qr_matrix(row["qr_code"])) == row["qr_code"]
    # The text drawing itself, read back module by module (two rows per line, half blocks).
    lines = qr_text(row["qr_code"], color=False).plain.splitlines()
    halves = {" ": (False, False), "▀": (True, False), "▄": (False, True), "█": (True, True)}
    matrix = [row_ for line in lines for row_ in zip(*(halves[c] for c in line))]
    assert decode([list(r) for r in matrix]) == row["qr_code"]
    assert len(lines) <= 16 and max(len(line) for line in lines) <= 33   # fits a 24x80 terminal
    assert parse_qr_code(row["qr_code"]).discriminator == row["discriminator"]


def test_twin_codes_device_prints_one_node_with_its_qr_code():
    home = Home.default()
    row = next(r for r in codes_rows(home) if r["device"] == "sensors@kitchen")
    proc = twin("codes", "sensors@kitchen")
    assert proc.returncode == 0, proc.stderr
    assert row["qr_code"] in proc.stdout and "█" in proc.stdout
    assert f"{row['manual_code'][:4]}-" in proc.stdout
    bad = twin("codes", "attic")
    assert bad.returncode == 2 and bad.stderr.startswith("error: no node 'attic'; accepted: living_room_light")
    assert json.loads(twin("codes", "kitchen_light", "--json").stdout)["device"] == "kitchen_light"
    console = terminal(80)
    with console.capture() as captured:
        print_device_code(console, {**row, "window": "open", "window_closes_in_s": 61})
    assert "open 1:01" in captured.get()


@pytest.mark.parametrize("command", [["bench"], ["bridge"], ["bench", "run"], ["bench", "generate"],
                                     ["bench", "validate"], ["bench", "judge-agreement"], ["bench", "report"],
                                     ["bridge", "init"], ["codes"], ["pair"], ["run"], ["serve"], ["mcp"],
                                     ["tool"], ["tools"], ["home"], ["home", "generate"], ["bench", "lifelong"]])
def test_every_help_has_examples_and_flags_read_as_flags(command):
    # In process (the same click parser and rich help as the console script), to keep it fast.
    result = CliRunner().invoke(app, [*command, "--help"], env={"COLUMNS": "120", "TERM": "xterm"})
    assert result.exit_code == 0, result.output
    assert "Examples:" in result.output, result.output
    assert "<bool>" not in result.output


def test_twin_pair_opens_a_window_through_the_http_api(tmp_path):
    """`twin pair` -> POST /pair/DEVICE -> the manager's open_window (here a stand-in that
    records the call; tests/node/test_node_windows.py covers the manager itself)."""
    import uvicorn

    home = Home.default()
    app = create_app(home)
    calls = []

    def opener(device, timeout):
        if device == "attic":
            raise ValueError("no node 'attic'; accepted: living_room_light, ...")
        calls.append((device, timeout))
        row = next(r for r in codes_rows(home) if r["device"] == device)
        return {**row, "window": "open", "window_closes_in_s": timeout or 900, "closed": ["living_room_fan"]}
    app.state.pair = opener
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        while not server.started:
            thread.join(0.02)
        port = str(server.servers[0].sockets[0].getsockname()[1])
        proc = twin("pair", "sensors@kitchen", "--http", port, "--timeout", "300")
        assert proc.returncode == 0, proc.stderr
        assert calls == [("sensors@kitchen", 300)]
        assert "open 5:00" in proc.stdout and "█" in proc.stdout
        assert "closed the window of living_room_fan" in proc.stderr
        answer = json.loads(twin("pair", "kitchen_light", "--http", port, "--json").stdout)
        assert answer["pairing"]["device"] == "kitchen_light" and calls[-1] == ("kitchen_light", None)
        bad = twin("pair", "attic", "--http", port)
        assert bad.returncode == 2 and bad.stderr.startswith("error: no node 'attic'")
        short = twin("pair", "kitchen_light", "--http", port, "--timeout", "60")
        assert short.returncode == 2 and "180" in short.stderr
    finally:
        server.should_exit = True
        thread.join(10)
    gone = twin("pair", "kitchen_light", "--http", port)
    assert gone.returncode == 2 and f"start one with `twin run --http {port}`" in gone.stderr


def test_pair_without_nodes_says_so():
    client = TestClient(create_app(Home.default()))
    answer = client.post("/pair/kitchen_light")
    assert answer.status_code == 501 and "twin run --http" in answer.json()["error"]["message"]


def test_docs_load_swagger_ui_from_the_server_itself():
    client = TestClient(create_app(Home.default()))
    page = client.get("/docs")
    assert page.status_code == 200
    import re
    assets = re.findall(r'(?:src|href)="([^"]+)"', page.text)
    assert assets and all(a.startswith("/") for a in assets), assets      # no CDN, no other host
    assert "cdn" not in page.text.lower()
    for asset in assets:
        response = client.get(asset)
        assert response.status_code == 200 and len(response.content) > 100, asset
    assert client.get("/redoc").status_code == 404                        # ReDoc would need a CDN
