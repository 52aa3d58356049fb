"""The `twin` CLI end to end, as a user runs it: subprocesses, exit codes, one-line errors."""
import json
import signal
import socket
import subprocess
import sys
import time

import httpx
import pytest

# Imported at collection, not under capsys: importing it pulls in mcp, whose stdio client binds
# sys.stderr as a default argument (a capsys stream has no fileno for later MCP tests).
from matter_twin.cli import app

HOME_YAML = """\
name: CLI home
seed: 4
start_time: "2025-06-01 09:00:00"
rooms:
  - id: living_room
    name: Living Room
    temperature: 26.0
    daylight_lux: 200
    devices:
      - {id: lamp, type: on_off_light, name: Lamp}
  - id: kitchen
    name: Kitchen
    devices:
      - {id: kitchen_light, type: on_off_light}
"""


@pytest.fixture
def home_file(tmp_path):
    path = tmp_path / "home.yaml"
    path.write_text(HOME_YAML)
    return str(path)


def twin(*args, timeout=120):
    return subprocess.run([sys.executable, "-m", "matter_twin.cli", *args], capture_output=True,
                          text=True, timeout=timeout)


def one_line_error(proc, code=2):
    assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    return lines[0]


def test_tool_prints_json(home_file):
    proc = twin("tool", "get_rooms", "{}", "--home", home_file)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"ok": True, "rooms": [
        {"room_id": "living_room", "name": "Living Room"}, {"room_id": "kitchen", "name": "Kitchen"}]}


def test_tool_on_the_default_home():
    proc = twin("tool", "get_rooms", "{}")
    assert proc.returncode == 0, proc.stderr
    rooms = json.loads(proc.stdout)["rooms"]
    assert rooms and all(set(r) == {"room_id", "name"} for r in rooms)


def test_tool_advance_moves_time_before_the_call(home_file):
    proc = twin("tool", "get_current_time", "--home", home_file, "--advance", "90")
    assert json.loads(proc.stdout)["current_time"] == "2025-06-01 09:01:30"


def test_tool_error_exits_1_with_json_and_one_line(home_file):
    proc = twin("tool", "get_room_devices", '{"room.id": "attic"}', "--home", home_file)
    line = one_line_error(proc, code=1)
    assert line == "error: NOT_FOUND: there is no room 'attic'"
    assert json.loads(proc.stdout)["error"]["accepted"] == ["kitchen", "living_room"]


def test_run_fast_forwards_an_hour_and_prints_the_snapshot(home_file):
    proc = twin("run", "--home", home_file, "--speed", "max", "--duration", "3600", "--json")
    assert proc.returncode == 0, proc.stderr
    snapshot = json.loads(proc.stdout)
    assert snapshot["clock"]["tick"] == 36000
    assert snapshot["name"] == "CLI home"


def test_run_default_home_fast_forward():
    proc = twin("run", "--speed", "max", "--duration", "3600", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["clock"]["tick"] == 36000


def test_run_at_a_speed_factor_stops_at_the_duration(home_file):
    proc = twin("run", "--home", home_file, "--speed", "100", "--duration", "5", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["clock"]["tick"] == 50


def test_run_without_json_prints_the_room_table(home_file):
    proc = twin("run", "--home", home_file, "--speed", "max", "--duration", "60")
    assert proc.returncode == 0, proc.stderr
    assert "Living Room" in proc.stdout and "Temperature" in proc.stdout


def test_ctrl_c_stops_cleanly(home_file):
    # -X faulthandler: if it hangs, SIGABRT makes it print every thread's stack (seen once in CI).
    proc = subprocess.Popen([sys.executable, "-X", "faulthandler", "-m", "matter_twin.cli", "run", "--home",
                             home_file, "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stderr.readline()  # "running ...; Ctrl-C to stop" once the loop is live
        assert "Ctrl-C to stop" in line, line
        time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        try:
            out, err = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGABRT)
            raise AssertionError(f"no exit 60 s after Ctrl-C; its stacks:\n{proc.communicate(timeout=30)[1][-6000:]}") \
                from None
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert "Traceback" not in err and "interrupted at tick" in err
    assert json.loads(out)["clock"]["tick"] >= 1


@pytest.mark.parametrize("args,fragment", [
    (("tool", "get_rooms", "{room", "--home", "HOME"), "arguments are not JSON"),
    (("tool", "get_rooms", "[1]", "--home", "HOME"), "must be a JSON object"),
    (("tool", "flip_table", "{}"), "unknown tool 'flip_table'"),
    (("tool", "get_rooms", "{}", "--home", "/nonexistent/home.yaml"), "/nonexistent/home.yaml: no such file"),
    (("tool", "get_rooms", "{}", "--home", "HOME", "--advance", "-1"), "--advance -1.0 must be >= 0"),
    (("run", "--speed", "max"), "--speed max needs --duration"),
    (("run", "--speed", "fast", "--duration", "1"), "--speed 'fast' is not a number or 'max'"),
    (("run", "--speed", "0", "--duration", "1"), "must be a positive number"),
    (("run", "--frobnicate"), "No such option: --frobnicate"),
    (("serve", "--port", "70000"), "--port 70000 is not a TCP port"),
])
def test_bad_input_is_one_line_and_exit_2(home_file, args, fragment, capsys):
    # In process (same code path as the console script) to keep the file fast.
    with pytest.raises(SystemExit) as exit_:
        app([home_file if a == "HOME" else a for a in args], prog_name="twin")
    out = capsys.readouterr()
    proc = subprocess.CompletedProcess(args, exit_.value.code, out.out, out.err)
    line = one_line_error(proc)
    assert fragment in line, line


def test_bad_json_via_the_console_script(home_file):
    line = one_line_error(twin("tool", "get_room_states", "{'room.id': 'kitchen'}", "--home", home_file))
    assert "arguments are not JSON" in line


def test_bad_home_file_names_file_and_field(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(HOME_YAML.replace("type: on_off_light, name: Lamp", "type: lava_lamp"))
    line = one_line_error(twin("run", "--home", str(bad), "--speed", "max", "--duration", "1"))
    assert line.startswith(f"error: {bad}: rooms[0].devices[0].type: unknown device type 'lava_lamp'")
    syntax = tmp_path / "syntax.yaml"
    syntax.write_text("rooms: [\n")
    assert f"{syntax}: line" in one_line_error(twin("tool", "get_rooms", "{}", "--home", str(syntax)))


def test_tools_lists_every_tool():
    proc = twin("tools", "--json")
    assert proc.returncode == 0 and len(json.loads(proc.stdout)) == 17


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_serve_answers_on_loopback(home_file):
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "matter_twin.cli", "serve", "--home", home_file,
                             "--port", str(port), "--speed", "100"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 120   # start-up on a loaded 2-core machine
        while True:
            assert proc.poll() is None, proc.stderr.read()
            try:
                if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "twin serve did not come up"
            time.sleep(0.1)
        rooms = httpx.post(f"{url}/tools/get_rooms", json={}).json()["rooms"]
        assert [r["room_id"] for r in rooms] == ["living_room", "kitchen"]
        first = httpx.get(f"{url}/clock").json()["tick"]
        time.sleep(0.5)
        assert httpx.get(f"{url}/clock").json()["tick"] > first  # --speed drives the clock
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()


def test_home_generate_writes_a_home_that_runs(tmp_path):
    out = tmp_path / "gen.yaml"
    proc = twin("home", "generate", "--seed", "7", "--rooms", "3", "--devices", "6", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    again = twin("home", "generate", "--seed", "7", "--rooms", "3", "--devices", "6")
    assert again.stdout == out.read_text()  # same seed, same bytes (stdout without -o)
    rooms = json.loads(twin("tool", "get_rooms", "{}", "--home", str(out)).stdout)["rooms"]
    assert len(rooms) == 3


def test_home_generate_rejects_impossible_sizes(capsys):
    with pytest.raises(SystemExit) as exit_:
        app(["home", "generate", "--rooms", "4", "--devices", "2"], prog_name="twin")
    err = capsys.readouterr().err.strip().splitlines()
    assert exit_.value.code == 2 and len(err) == 1 and "every room gets a light" in err[0]


def test_by_category_keeps_file_order_and_at_most_limit_of_each():
    from types import SimpleNamespace

    from matter_twin.console import CliError, by_category
    items = [SimpleNamespace(category=c, n=i) for i, c in enumerate("AABBAB")]
    assert [i.n for i in by_category(items, None, 2, ("A", "B"))] == [0, 1, 2, 3]
    assert [i.n for i in by_category(items, ["B"], None, ("A", "B"))] == [2, 3, 5]
    with pytest.raises(CliError, match="unknown category C; accepted: A, B"):
        by_category(items, ["C"], None, ("A", "B"))


def test_home_generate_homemaker_tier(tmp_path):
    out = tmp_path / "tier.yaml"
    proc = twin("home", "generate", "--seed", "3", "--tier", "medium", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    rooms = json.loads(twin("tool", "get_rooms", "{}", "--home", str(out)).stdout)["rooms"]
    assert len(rooms) in (10, 11) and {r.get("floor", 0) for r in rooms} == {0, 1}
    bad = twin("home", "generate", "--tier", "huge")
    assert bad.returncode == 2 and "unknown tier 'huge'; accepted: simple, medium, complex" in bad.stderr
