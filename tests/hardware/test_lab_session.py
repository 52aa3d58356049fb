"""Lab sessions without hardware (fast): the lab file's one-line errors, the recording (WAL,
kill -9, appended runs), a twin-only session replayed with zero divergence, the seeded
network plan, and the CLI's errors. The hardware half is tests/hardware/test_lab_e2e.py."""
from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from hardware.labfile import NetworkSpec, load_lab, parse_lab
from hardware.network import netem_args, outage_plan
from hardware.recording import Recorder, Recording, RecordingError
from hardware.replay import replay_session, write_report
from hardware.session import LabSession
from matter_twin.cli import app
from twin.schema import UserFileError

REPO = Path(__file__).resolve().parents[2]
LIGHT = {"device.id": "kitchen_light", "endpoint.id": 1, "cluster.id": "OnOff"}


def write(tmp: Path, data: dict, name: str = "lab.yaml") -> Path:
    path = tmp / name
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


@pytest.mark.parametrize("data, field, words", [
    ({"devices": []}, "controller", "Field required"),
    ({"controller": {"url": "http://x"}}, "controller.url", "WebSocket URL"),
    ({"controller": {"url": "ws://h:1/ws", "start": {}}}, "controller", "exactly one of url"),
    ({"controller": {"url": "ws://h:1/ws"}, "devices": [{"bind": "a", "room": "b", "node_id": 1}]},
     "devices[0]", "exactly one of bind"),
    ({"controller": {"url": "ws://h:1/ws"}, "devices": [{"bind": "a", "pairing_code": "12"}]},
     "devices[0].pairing_code", "neither a QR payload"),
    ({"controller": {"url": "ws://h:1/ws"}, "devices": [{"id": "x", "room": "kitchen", "node_id": 1,
                                                          "mode": "shadow"}]}, "devices[0]", "needs bind"),
    ({"controller": {"url": "ws://h:1/ws"}, "sensors": [{"room": "kitchen", "state": "noise", "node_id": 1}]},
     "sensors[0].state", "temperature"),
    ({"controller": {"url": "ws://h:1/ws"}, "session": {"script": [{"tool": "fly", "args": {}}]}},
     "session.script[0]", "unknown tool"),
    ({"controller": {"url": "ws://h:1/ws"}, "network": {"interfaces": [], "delay_ms": 5}},
     "network.interfaces", "at least 1"),
    ({"controller": {"url": "ws://h:1/ws"}, "network": {"delay_ms": 5}}, "network", "exactly one of interfaces"),
    ({"controller": {"url": "ws://h:1/ws"}, "network": {"nodes": {"url": "http://h:1", "devices": ["a"]},
                                                         "jitter_ms": 5}}, "network", "jitter needs tc netem"),
])
def test_bad_lab_files_are_one_line_naming_the_field(data, field, words):
    with pytest.raises(UserFileError) as err:
        parse_lab(data, "bench.yaml")
    message = str(err.value)
    assert "\n" not in message and message.startswith(f"bench.yaml: {field}") and words in message, message


def test_a_bound_device_is_named_by_its_twin_and_unknown_twin_ids_are_refused(tmp_path):
    lab = parse_lab({"controller": {"url": "ws://h:1/ws"},
                     "devices": [{"bind": "living_room_light", "node_id": 3}]}, "bench.yaml", tmp_path)
    assert lab.spec.devices[0].id == "living_room_light"
    lab = parse_lab({"controller": {"url": "ws://h:1/ws"},
                     "devices": [{"bind": "attic_light", "node_id": 3}]}, "bench.yaml", tmp_path)
    with pytest.raises(UserFileError, match=r"bench.yaml: devices\[0\].bind: the twin home has no device 'attic"):
        LabSession(lab, tmp_path / "s.sqlite").open()
    assert not (tmp_path / "s.sqlite").exists()  # nothing half-started


# A session writing reports as fast as it can, in its own process (killed with SIGKILL).
WRITER = """
import sys, time
from pathlib import Path
from hardware.recording import Recorder
recorder = Recorder(sys.argv[1], flush_interval=0.05)
recorder.start_run(wall=time.time(), tick=0, time_text="t", lab={}, source="x", snapshot={},
                   devices={}, network=None)
i = 0
while True:
    recorder.report(time.time(), i, "twin", "d", 1, "OnOff", "OnOff", i % 2 == 0)
    i += 1
    if i == 200:
        Path(sys.argv[2]).write_text("ok")
    time.sleep(0.001)
"""


def test_a_recording_survives_kill_9_and_a_restarted_session_appends(tmp_path):
    path, go = tmp_path / "s.sqlite", tmp_path / "go"
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(go)],
                            env=dict(os.environ, PYTHONPATH=str(REPO)))
    try:
        deadline = time.monotonic() + 30
        while not go.exists():
            assert proc.poll() is None and time.monotonic() < deadline, "writer did not start"
            time.sleep(0.05)
        time.sleep(0.2)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    assert sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    rec = Recording(path)
    first = rec.run()
    assert first["run"] == 1 and first["ended"] is None          # no clean end: it was killed
    reports = rec.counts(1)["reports"]
    assert reports >= 200
    rec.close()
    again = Recorder(path)
    assert again.start_run(wall=time.time(), tick=5, time_text="t", lab={}, source="x", snapshot={},
                           devices={}, network=None) == 2
    again.report(time.time(), 5, "real", "d", 1, "OnOff", "OnOff", True)
    again.close(time.time())
    rec = Recording(path)
    assert [r["run"] for r in rec.runs()] == [1, 2] and rec.counts(1)["reports"] == reports
    assert rec.rows("reports", 2)[0]["value"] is True and rec.run(2)["ended"] is not None


def test_a_twin_only_session_replays_with_zero_divergence(tmp_path):
    lab = load_lab(write(tmp_path, {
        "controller": {"url": "ws://127.0.0.1:1/ws"},     # never reached: no real devices
        "session": {"sample_interval": 0.3, "script": [
            {"tool": "execute_command", "args": {**LIGHT, "command.id": "On", "args": {}}},
            {"wait": 0.5},
            {"tool": "get_attribute", "args": {**LIGHT, "attribute.id": "OnOff"}, "expect": {"value": True}},
            {"tool": "execute_command", "args": {"device.id": "living_room_light", "endpoint.id": 1,
                                                 "cluster.id": "LevelControl", "command.id": "MoveToLevel",
                                                 "args": {"level": 220, "transitionTime": 10,
                                                          "optionsMask": 0, "optionsOverride": 0}}},
            {"wait": 1.2},
            {"tool": "get_room_states", "args": {"room.id": "living_room"}},
            {"tool": "get_attribute", "args": {**LIGHT, "attribute.id": "OnOff"}, "expect": {"value": False}},
            {"tool": "get_current_time", "args": {}}]}}))
    with LabSession(lab) as session:
        summary = session.run_script()
    assert summary == {"calls": 6, "expectation_failures": 1, "divergences": 0}
    rec = Recording(lab.default_recording())
    run = rec.run()
    assert rec.counts(run["run"])["calls"] == 6 and rec.counts(run["run"])["samples"] >= 5
    events = [e["kind"] for e in rec.rows("events", run["run"])]
    assert events[0] == "session_start" and "expectation_failed" in events and events[-1] == "session_end"
    twin_reports = {(r["device"], r["attribute"]) for r in rec.rows("reports", run["run"])}
    assert ("kitchen_light", "OnOff") in twin_reports and ("living_room_light", "CurrentLevel") in twin_reports
    rec.close()

    result = replay_session(lab.default_recording())
    s = result["summary"]
    assert s["compared_steps"] == 5 and s["diverged_steps"] == 0 and s["score"] == 0.0
    assert [x["diverged"] for x in result["steps"]] == [False] * 6
    room = result["trajectories"]["rooms"]["living_room"]
    assert room["session"]["illuminance"] == room["replay"]["illuminance"]   # same trajectory, sample by sample
    paths = write_report(result, tmp_path / "report", "html")
    assert paths[0].name == "report.html" and "living_room" in paths[0].read_text()
    assert json.loads((tmp_path / "report" / "summary.json").read_text())["diverged_steps"] == 0
    assert (tmp_path / "report" / "room-living_room.png").stat().st_size > 1000

    # A restarted session appends a run; the replay takes the last one unless told.
    with LabSession(lab) as session:
        session.call("get_rooms", {})
    assert replay_session(lab.default_recording())["summary"]["run"] == 2
    assert replay_session(lab.default_recording(), 1)["summary"]["compared_steps"] == 5


def test_the_network_plan_is_the_seed_s():
    spec = NetworkSpec(interfaces=["v0"], seed=7, delay_ms=20, jitter_ms=5, loss_percent=1,
                       outages=[{"at": 3, "duration": 1}], random_outages=2, horizon=30)
    assert outage_plan(spec) == outage_plan(spec.model_copy()) and len(outage_plan(spec)) == 3
    assert outage_plan(spec) != outage_plan(spec.model_copy(update={"seed": 8}))
    assert netem_args(spec) == ["netem", "delay", "20ms", "5ms", "loss", "1%", "seed", "7"]
    assert netem_args(spec, outage=True)[-4:] == ["loss", "100%", "seed", "7"]


def twin(args: list[str], capsys) -> tuple[int, str, str]:
    """The CLI in process, as the console script runs it: (exit code, stdout, stderr)."""
    try:
        app(args, prog_name="twin")
        code = 0
    except SystemExit as exit_:
        code = exit_.code
    out = capsys.readouterr()
    return code, out.out, out.err


def test_conditions_in_an_unreachable_twin_s_transport_are_one_line():
    from hardware.network import NetworkError, network_conditions
    spec = NetworkSpec.model_validate({"nodes": {"url": "http://127.0.0.1:9/", "devices": ["kitchen_light"]},
                                       "loss_percent": 10})
    with pytest.raises(NetworkError, match=r"^network.nodes.url: cannot reach the twin at http://127.0.0.1:9/faults"):
        network_conditions(spec, lambda kind, detail: None).start()


def test_cli_errors_are_one_line(tmp_path, capsys):
    bad = write(tmp_path, {"controller": {"url": "nope"}}, "bad.yaml")
    for args, words in ((["lab", "run", str(bad)], "bad.yaml: controller.url"),
                        (["lab", "run", str(tmp_path / "none.yaml")], "no such file"),
                        (["lab", "replay", str(bad)], "not a lab recording"),
                        (["lab", "report", str(tmp_path / "none.sqlite")], "no such recording"),
                        (["lab", "replay", str(bad), "--format", "pdf"], "accepted: md, html")):
        code, out, err = twin(args, capsys)
        lines = err.strip().splitlines()
        assert code == 2 and len(lines) == 1 and lines[0].startswith("error: ") and words in lines[0], (args, err)
    out = tmp_path / "new.yaml"
    assert twin(["lab", "init", "-o", str(out)], capsys)[0] == 0
    assert load_lab(out).spec.controller.start is not None
    assert twin(["lab", "init", "-o", str(out)], capsys)[0] == 2


def test_replay_exits_non_zero_above_the_threshold(tmp_path, capsys):
    lab = load_lab(write(tmp_path, {"controller": {"url": "ws://127.0.0.1:1/ws"},
                                    "session": {"script": [{"tool": "get_rooms", "args": {}}]}}))
    with LabSession(lab) as session:
        session.run_script()
    # Doctor the recorded answer: the twin now "diverges" on the one step.
    db = sqlite3.connect(lab.default_recording())
    db.execute("UPDATE calls SET result=? WHERE tool='get_rooms'", (json.dumps({"ok": True, "rooms": []}),))
    db.commit()
    db.close()
    out = tmp_path / "rep"
    assert twin(["lab", "replay", str(lab.default_recording()), "-o", str(out), "--threshold", "1"], capsys)[0] == 0
    code, stdout, _ = twin(["lab", "replay", str(lab.default_recording()), "-o", str(out)], capsys)
    assert code == 1 and "1 answered differently" in stdout
    assert (out / "report.md").exists()
    with pytest.raises(RecordingError, match="no run 9"):
        replay_session(lab.default_recording(), 9)


def test_an_agent_session_is_recorded_scored_and_replays(tmp_path):
    lab = load_lab(write(tmp_path, {"controller": {"url": "ws://127.0.0.1:1/ws"}, "session": {"agent": {
        "agent": "reference", "query": "Turn on the light 1 in the kitchen.",
        "goals": [{"device": "kitchen_light", "cluster": "OnOff", "attribute": "OnOff", "equals": True}]}}}))
    with LabSession(lab) as session:
        summary = session.run_agent()
    assert summary["score"]["success"] is True and summary["calls"] >= 3
    rec = Recording(lab.default_recording())
    calls = rec.rows("calls", rec.run()["run"])
    assert [c["source"] for c in calls] == ["agent"] * (len(calls) - 1) + ["score"]
    assert any(c["tool"] == "execute_command" and c["args"]["device.id"] == "kitchen_light" for c in calls)
    assert any(e["kind"] == "score" and e["detail"]["success"] for e in rec.rows("events", rec.run()["run"]))
    rec.close()
    assert replay_session(lab.default_recording())["summary"]["diverged_steps"] == 0
    with pytest.raises(UserFileError, match="either a script, an agent or episodes"):
        parse_lab({"controller": {"url": "ws://h:1/ws"}, "session": {
            "script": [{"wait": 1}], "agent": {"agent": "reference", "query": "x"}}})
    with pytest.raises(UserFileError, match="unknown agent 'gpt'"):
        parse_lab({"controller": {"url": "ws://h:1/ws"}, "session": {"agent": {"agent": "gpt", "query": "x"}}})


def test_an_unreachable_controller_is_one_line_and_starts_nothing(tmp_path, capsys):
    lab_file = write(tmp_path, {"controller": {"url": "ws://127.0.0.1:1/ws"}, "timeout": 2,
                                "devices": [{"bind": "living_room_light", "node_id": 3}]})
    code, _, err = twin(["lab", "run", str(lab_file)], capsys)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1, err
    assert "lab.yaml: controller: cannot reach python-matter-server at ws://127.0.0.1:1/ws" in lines[0]
    assert not load_lab(lab_file).default_recording().exists()


@pytest.mark.parametrize("command", ["init", "run", "shadow", "replay", "report", "demo"])
def test_every_lab_help_has_examples(command, capsys):
    code, out, _ = twin(["lab", command, "--help"], capsys)
    assert code == 0 and "Examples:" in out and f"twin lab {command}" in out, out


def test_a_lab_call_validates_its_arguments_once(tmp_path, monkeypatch):
    """Routing, reachability, the tool call and shadowing share one parsed copy of the arguments."""
    from bridge import tools
    lab = load_lab(write(tmp_path, {"controller": {"url": "ws://127.0.0.1:1/ws"}, "session": {"script": []}}))
    parses = []
    original = tools.parse_arguments
    monkeypatch.setattr(tools, "parse_arguments", lambda *a, **k: parses.append(a[2]) or original(*a, **k))
    with LabSession(lab) as session:
        result = session.call("execute_command", {**LIGHT, "command.id": "On", "args": {}})
    assert result["ok"] and parses == ["execute_command"]
