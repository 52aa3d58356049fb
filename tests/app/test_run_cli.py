"""`twin codes` and the Matter options of `twin run`, as a user runs them (no network: the only
`twin run` here has its nodes off, which is the point of one of the tests)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from matter_twin.cli_run import matter_default
from twin.home import Home
from twin.node.pairing import home_pairings, served_devices

REPO = Path(__file__).resolve().parents[2]


def twin(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "matter_twin.cli", *args], capture_output=True, text=True,
                          cwd=REPO, timeout=120)


def test_codes_json_are_the_home_pairings():
    proc = twin("codes", "--json", "--seed", "5")
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)
    home = Home.default(seed=5)
    expected = home_pairings(home, devices=served_devices(home))  # devices, then room sensors
    assert [r["device"] for r in rows] == list(expected)
    for row in rows:
        p = expected[row["device"]]
        assert (row["manual_code"], row["qr_code"], row["discriminator"], row["passcode"]) == \
            (p.manual_code, p.qr_code, p.discriminator, p.passcode)
    assert rows[0]["name"] == "Living Room Ceiling Light"
    assert json.loads(twin("codes", "--json", "--seed", "5").stdout) == rows  # same seed, same codes


def test_codes_print_one_line_per_device_when_piped():
    proc = twin("codes")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    pairing = home_pairings(Home.default())["kitchen_light"]
    assert f"pairing: kitchen_light manual {pairing.manual_code} qr {pairing.qr_code} " \
           f"discriminator {pairing.discriminator}" in lines
    assert len(lines) == len(served_devices(Home.default()))  # every device and room-sensor node


def test_run_refuses_matter_when_fast_forwarding():
    proc = twin("run", "--matter", "--speed", "max", "--duration", "1")
    assert proc.returncode == 2
    assert proc.stderr.strip() == \
        "error: --matter needs a real-time run (--speed N); --speed max only fast-forwards"


def test_nodes_stay_off_under_pytest_in_the_machines_own_namespace():
    assert os.environ.get("PYTEST_CURRENT_TEST")
    assert matter_default() == (False, "Matter nodes off: running under pytest in the machine's own "
                                       "network namespace")
    proc = twin("run", "--speed", "50", "--duration", "2", "--json")
    assert proc.returncode == 0, proc.stderr
    assert "matter:" not in proc.stderr and "pairing:" not in proc.stderr
    assert json.loads(proc.stdout)["clock"]["tick"] == 20


def test_matter_default_is_on_outside_tests(monkeypatch):
    monkeypatch.delenv("PYTEST_CURRENT_TEST")
    assert matter_default() == (True, "")


def test_aggregator_mode_is_documented_under_both_names():
    """`--aggregator` is the name; `--as-bridge`, the first wave's spelling, still works."""
    proc = twin("run", "--help")
    assert proc.returncode == 0, proc.stderr
    assert "--aggregator" in proc.stdout and "--as-bridge" in proc.stdout
    assert "twin run --aggregator" in proc.stdout
    ok = twin("run", "--as-bridge", "--speed", "max", "--duration", "1", "--json")
    assert ok.returncode == 0 and '"clock"' in ok.stdout, ok.stderr


@pytest.mark.parametrize("text", ["all", "all-qr", "none", "kitchen_light, bedroom_light"])
def test_every_open_windows_choice_the_help_offers_reaches_the_node_manager(tmp_path, text):
    from matter_twin.cli import _window_choice
    from twin.home import Home
    from twin.node.manager import NodeManager
    manager = NodeManager(Home.default(), tmp_path, open_windows=_window_choice(text))
    assert manager.open_windows == (text if "," not in text else ["kitchen_light", "bedroom_light"])
    assert manager.exclusive_windows == (text != "all-qr")
