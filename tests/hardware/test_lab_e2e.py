"""Lab sessions on stand-in hardware: matter.js devices (a dimmable light, a thermostat, a
multi-sensor; hardware/standins/devices.mjs) behind python-matter-server, in a network namespace
this module creates once (tests/matterjs/lab.py). The light plays the default home's
living_room_light, the thermostat its bedroom_ac, the multi-sensor is added to the bedroom and
feeds its temperature; every other device of the home is a twin beside them.

Sessions run inside the namespace (`Netns.call`), where the server listens; replays and the
recordings are read here. Order matters at the end: the last test stops the thermostat.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from matterjs.lab import SERVER_URL, lab
from netns import REPO

from hardware.recording import Recording
from hardware.replay import replay_session, write_report
from matter_protocol.pairing import SetupPayload
from twin.clock import TICKS_PER_SECOND
from twin.home import Home

pytestmark = pytest.mark.e2e

LIGHT = {"device.id": "living_room_light", "endpoint.id": 1}
ROOM_STATES = {"tool": "get_room_states", "args": {"room.id": "living_room"}}


def level(value: int | None, with_onoff: bool = False) -> dict[str, Any]:
    return {"tool": "execute_command", "args": {
        **LIGHT, "cluster.id": "LevelControl", "command.id": "MoveToLevelWithOnOff" if with_onoff else "MoveToLevel",
        "args": {"level": value, "transitionTime": None if with_onoff else 0, "optionsMask": 0, "optionsOverride": 0}}}


def onoff(command: str, device: str = "living_room_light") -> dict[str, Any]:
    return {"tool": "execute_command", "args": {"device.id": device, "endpoint.id": 1, "cluster.id": "OnOff",
                                                "command.id": command, "args": {}}}


def read(device: str, cluster: str, attribute: str, **expect: Any) -> dict[str, Any]:
    step: dict[str, Any] = {"tool": "get_attribute", "args": {"device.id": device, "endpoint.id": 1,
                                                              "cluster.id": cluster, "attribute.id": attribute}}
    if expect:
        step["expect"] = expect
    return step


SCRIPT = [
    onoff("Off"), {"wait": 1.0}, ROOM_STATES,
    onoff("On"), level(200), {"wait": 1.5}, ROOM_STATES,
    read("living_room_light", "LevelControl", "CurrentLevel", value=200),
    {"tool": "get_device_structure", "args": {"device.id": "living_room_light"}},
    {"tool": "write_attribute", "args": {"device.id": "bedroom_ac", "endpoint.id": 1, "cluster.id": "Thermostat",
                                         "attribute.id": "OccupiedCoolingSetpoint", "value": 2400}},
    read("bedroom_ac", "Thermostat", "OccupiedCoolingSetpoint", value=2400),
    {"tool": "get_room_states", "args": {"room.id": "bedroom"}},
    onoff("On", "kitchen_light"), read("kitchen_light", "OnOff", "OnOff", value=True),
    {"tool": "get_room_states", "args": {"room.id": "kitchen"}},
    onoff("Off"), {"wait": 0.5}, onoff("On"), {"wait": 2.0},   # room for the last report under load
]


def lab_data(devices: list[dict[str, Any]], script: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"name": "matter.js bench", "controller": {"url": SERVER_URL}, "timeout": 8,
            "devices": devices, "session": {"sample_interval": 0.5, "script": script}, **extra}


def run_session(lab_file: str, recording: str, shadow: bool = False) -> dict[str, Any]:
    """Inside the namespace: one session, its summary and what it saw."""
    from hardware.labfile import load_lab
    from hardware.session import LabSession
    with LabSession(load_lab(lab_file), Path(recording), shadow_all=shadow) as session:
        summary = session.run_script()
        return {**summary, "node_ids": dict(session.node_ids), "divergence_list": session.divergences,
                "failures": session.expectation_failures}


def run_sessions(sessions: list[tuple[str, str, bool]]) -> list[dict[str, Any]]:
    """Several sessions, one after the other, in one process inside the namespace."""
    return [run_session(*session) for session in sessions]


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    """The namespace, the server, the three stand-ins, and a first session that commissions them."""
    with lab(tmp_path_factory.mktemp("lab-e2e")) as the_lab:
        devices = [{"bind": "living_room_light", "pairing_code": the_lab.codes["light"], "endpoint": 1},
                   {"bind": "bedroom_ac", "pairing_code": the_lab.codes["thermostat"], "endpoint": 1},
                   {"id": "bench_sensor", "room": "bedroom", "pairing_code": the_lab.codes["sensors"]}]
        data = lab_data(devices, SCRIPT, sensors=[{"room": "bedroom", "state": "temperature",
                                                   "device": "bench_sensor", "endpoint": 1}])
        lab_file = the_lab.write_config("bench.yaml", data)
        recording = the_lab.workdir / "bench.sqlite"
        try:
            first = the_lab.ns.call(run_session, str(lab_file), str(recording), timeout=240)
        except Exception as err:
            raise AssertionError(f"{err}\n--- server ---\n{the_lab.log('server', 3000)}") from None
        the_lab.first = first
        the_lab.recording = recording
        ids = first["node_ids"]
        the_lab.by_node = [{"bind": "living_room_light", "node_id": ids["living_room_light"], "endpoint": 1},
                           {"bind": "bedroom_ac", "node_id": ids["bedroom_ac"], "endpoint": 1}]
        yield the_lab


def test_a_scripted_session_records_every_call_and_report(bench):
    assert bench.first["expectation_failures"] == 0, bench.first["failures"]
    rec = Recording(bench.recording)
    run = rec.run()
    calls = rec.rows("calls", run["run"])
    tools = [s for s in SCRIPT if "tool" in s]
    assert [c["tool"] for c in calls] == [s["tool"] for s in tools]
    assert all(c["ok"] == 1 for c in calls), [c["result"] for c in calls if not c["ok"]]
    assert run["devices"]["living_room_light"]["kind"] == "bound"
    assert run["devices"]["bench_sensor"]["kind"] == "added" and run["devices"]["kitchen_light"]["kind"] == "twin"
    reports = rec.rows("reports", run["run"])
    seen = {(r["source"], r["device"], r["cluster"], r["attribute"]) for r in reports}
    # Real reports from the subscription, twin changes from the cluster servers (coupled and twin-only).
    assert ("real", "living_room_light", "OnOff", "OnOff") in seen
    assert ("real", "living_room_light", "LevelControl", "CurrentLevel") in seen
    assert ("real", "bedroom_ac", "Thermostat", "OccupiedCoolingSetpoint") in seen
    assert ("twin", "living_room_light", "LevelControl", "CurrentLevel") in seen
    assert ("twin", "kitchen_light", "OnOff", "OnOff") in seen
    assert ("twin", "bedroom_ac", "Thermostat", "OccupiedCoolingSetpoint") in seen   # coupled from the real one
    # Every command on the real light has a report after it.
    light_reports = [r["wall"] for r in reports if r["source"] == "real" and r["device"] == "living_room_light"]
    for call in calls:
        if call["tool"] == "execute_command" and call["args"]["device.id"] == "living_room_light":
            assert any(w >= call["wall"] for w in light_reports), call
    # The real sensor feeds the bedroom's temperature (21.5 °C on the stand-in).
    bedroom = next(c for c in calls if c["args"].get("room.id") == "bedroom")
    assert bedroom["result"]["temperature"] == 2150
    samples = rec.rows("samples", run["run"])
    assert {s["room"] for s in samples} >= {"living_room", "kitchen", "bedroom"}
    kinds = [e["kind"] for e in rec.rows("events", run["run"])]
    assert kinds[0] == "session_start" and kinds[-1] == "session_end"
    rec.close()


def test_coupling_the_real_light_drives_the_twin_room_as_the_twin_light_would(bench):
    rec = Recording(bench.recording)
    run = rec.run()
    calls = rec.rows("calls", run["run"])
    rec.close()
    dark, lit = [c for c in calls if c["tool"] == "get_room_states" and c["args"]["room.id"] == "living_room"]
    assert lit["result"]["illuminance"] > dark["result"]["illuminance"]
    # The twin alone, from the run's start state: the same commands on the twin light at the
    # same ticks give the same illuminance.
    home = Home.restore(run["snapshot"])
    for call in calls:
        if call["args"].get("device.id") == "living_room_light" and call["tool"] == "execute_command" \
                and call["tick"] <= lit["tick"]:
            home.advance((call["tick"] - home.clock.tick) / TICKS_PER_SECOND)
            home.device("living_room_light").invoke(call["args"]["cluster.id"], call["args"]["command.id"],
                                                    call["args"]["args"], endpoint_id=1)
    home.advance((lit["tick"] - home.clock.tick) / TICKS_PER_SECOND)
    assert round(home.rooms["living_room"].illuminance) == lit["result"]["illuminance"]


def test_replay_zero_divergence_on_twin_devices_measured_on_the_real_ones(bench, tmp_path):
    result = replay_session(bench.recording)
    s = result["summary"]
    assert s["diverged_twin_only"] == 0
    for device in ("kitchen_light",):
        assert s["per_device"][device]["compared"] >= 2 and s["per_device"][device]["diverged"] == 0
    # matter.js is another product: its structure differs from the twin light's, the real
    # sensor's 21.5 °C from the twin bedroom's.
    diverged = {(x["tool"], x["device"]) for x in result["steps"] if x["diverged"]}
    assert ("get_device_structure", "living_room_light") in diverged
    assert s["diverged_real"] >= 1 and 0 < s["score"] < 1
    latency = s["latency"]["living_room_light"]
    assert latency["kind"] == "bound" and latency["session"]["n"] >= 4 and latency["session"]["median"] > 0
    assert latency["replay"]["n"] >= 3       # the twin's own reports in the replay
    paths = write_report(result, tmp_path, "md")
    text = paths[0].read_text()
    assert "living_room_light" in text and "Command-to-report latency" in text
    assert any(p.name.startswith("device-living_room_light") and p.suffix == ".png" for p in paths)
    assert (tmp_path / "room-living_room.png").exists() and (tmp_path / "summary.json").exists()


def _home_with_transition(tmp: Path, tenths: int) -> Path:
    data = yaml.safe_load((REPO / "twin" / "default_home.yaml").read_text())
    light = next(d for d in data["rooms"][0]["devices"] if d["id"] == "living_room_light")
    light["attributes"] = {**light["attributes"], "1/LevelControl/OnOffTransitionTime": tenths}
    path = tmp / f"home-{tenths}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_shadow_flags_a_wrong_twin_and_not_a_right_one(bench):
    script = [level(60, with_onoff=True), {"wait": 1.5}, level(220, with_onoff=True), {"wait": 1.5}]
    sessions = []
    for name, tenths in (("right", 0), ("wrong", 30)):
        home = _home_with_transition(bench.workdir, tenths)
        lab_file = bench.write_config(f"shadow-{name}.yaml", lab_data(
            bench.by_node[:1], script, home=str(home), shadow={"compare_after": 1.0}))
        sessions.append((str(lab_file), str(bench.workdir / f"shadow-{name}.sqlite"), True))
    right, wrong = bench.ns.call(run_sessions, sessions, timeout=180)
    results = {"right": right, "wrong": wrong}
    assert results["right"]["divergences"] == 0, results["right"]["divergence_list"]
    wrong = {d["attribute"] for d in results["wrong"]["divergence_list"]}
    assert "LevelControl.CurrentLevel" in wrong, results["wrong"]["divergence_list"]
    rec = Recording(bench.workdir / "shadow-wrong.sqlite")
    assert any(e["kind"] == "divergence" for e in rec.rows("events", rec.run()["run"]))
    rec.close()


def _has_netem(bench: Any) -> bool:
    probe = bench.ns.run(["tc", "qdisc", "add", "dev", "v0", "root", "netem", "delay", "1ms"], check=False)
    bench.ns.run(["tc", "qdisc", "del", "dev", "v0", "root"], check=False)
    return probe.returncode == 0


def test_network_conditions_are_applied_and_recorded(bench):
    script = [onoff("Off"), {"wait": 0.3}, onoff("On"), {"wait": 0.3}, onoff("Off"), {"wait": 0.3}, onoff("On")]
    network = {"interfaces": ["lo"], "seed": 3, "delay_ms": 40}
    lab_file = bench.write_config("netem.yaml", lab_data(bench.by_node[:1], script, network=network))
    recording = bench.workdir / "netem.sqlite"
    if not _has_netem(bench):
        # A kernel without sch_netem (this CI's VM kernel): one clear line, nothing left applied.
        with pytest.raises(Exception, match=r"this kernel has no netem qdisc"):
            bench.ns.call(run_session, str(lab_file), str(recording), timeout=120)
        assert "netem" not in bench.ns.run(["tc", "qdisc", "show", "dev", "lo"]).stdout
        return
    bench.ns.call(run_session, str(lab_file), str(recording), timeout=120)
    assert "netem" not in bench.ns.run(["tc", "qdisc", "show", "dev", "lo"]).stdout   # cleared
    result = replay_session(recording)
    assert result["summary"]["network"]["delay_ms"] == 40
    slow = result["summary"]["latency"]["living_room_light"]["session"]
    fast = replay_session(bench.recording)["summary"]["latency"]["living_room_light"]["session"]
    assert slow["median"] >= 0.08 > fast["median"], (slow, fast)   # a command and its report each cross lo
    rec = Recording(recording)
    netem = [e["detail"] for e in rec.rows("events", rec.run()["run"]) if e["kind"] == "netem"]
    rec.close()
    assert netem[0]["netem"] in ("netem delay 40ms seed 3", "netem delay 40ms") and netem[-1]["cleared"] is True


STAND_IN_HOME = """name: stand-in
seed: 5
rooms:
  - id: bench
    name: Bench
    devices: [{id: stand_in, type: dimmable_light, name: Stand-in Light}]
"""
TWIN_HTTP = "http://127.0.0.1:8089"


@pytest.fixture
def twin_stand_in(bench):
    """A twin Matter node standing in for hardware (`twin run --matter --http`), in the bench's
    namespace; yields its QR code."""
    from netns import wait_for_line

    from twin.node.pairing import home_pairings
    home_file = bench.workdir / "stand-in.yaml"
    home_file.write_text(STAND_IN_HOME)
    log_path = bench.workdir / "stand-in.log"
    bench.processes["stand_in"] = bench.ns.popen(
        [sys.executable, "-m", "matter_twin.cli", "run", "--home", str(home_file), "--speed", "1", "--matter",
         "--storage", str(bench.workdir / "stand-in-storage"), "--base-port", "5600", "--http", "8089",
         "--open-windows", "stand_in"], stdout=open(log_path, "w"), stderr=subprocess.STDOUT,
        cwd=str(bench.workdir), env=dict(os.environ, PYTHONPATH=str(REPO), PYTHONUNBUFFERED="1"))
    try:
        wait_for_line(log_path, lambda line: line.startswith("matter: "), 60)
        yield home_pairings(Home.load(home_file))["stand_in"].qr_code
    finally:
        bench.stop("stand_in")


def test_network_conditions_in_a_twin_node_s_transport(bench, twin_stand_in):
    """Loss: MRP retransmits and every call succeeds. An outage: the node stops answering and
    comes back. Both recorded with the session, with the node's link counters."""
    # At 10 % a call fails only if its request or response is lost on all five MRP transmissions
    # (2e-5 a call); a run with no retransmission at all has odds below 0.9**60.
    toggles = [onoff(c) for c in ("On", "Off") * 12]
    lossy = lab_data([{"bind": "living_room_light", "pairing_code": twin_stand_in, "endpoint": 1}], toggles,
                     network={"nodes": {"url": TWIN_HTTP, "devices": ["stand_in"]}, "seed": 4,
                             "loss_percent": 10, "delay_ms": 20}, timeout=30)
    first = bench.ns.call(run_session, str(bench.write_config("lossy.yaml", lossy)),
                          str(bench.workdir / "lossy.sqlite"), timeout=240)
    assert first["calls"] == 24 and first["expectation_failures"] == 0
    rec = Recording(bench.workdir / "lossy.sqlite")
    run = rec.run()
    calls, events = rec.rows("calls", run["run"]), rec.rows("events", run["run"])
    rec.close()
    assert all(c["ok"] for c in calls), [c["result"] for c in calls if not c["ok"]]
    network = [e["detail"] for e in events if e["kind"] == "network"]
    assert {f["kind"]: f["severity"] for f in network[0]["faults"]} == {"latency": 20, "loss": 0.1}
    link = network[-1]["links"]["stand_in"]
    assert network[-1]["cleared"] and link["dropped in"] + link["dropped out"] > 0
    assert link["retransmissions in"] + link["retransmissions out"] > 0, link
    assert run["network"]["nodes"]["devices"] == ["stand_in"]
    # An outage from 1 s to 6 s: a read inside it fails, one after it answers again.
    probe = read("living_room_light", "OnOff", "OnOff")
    script = [{"wait": 1.5}, probe, {"wait": 3.5}, probe, {"wait": 1.0}, probe]
    outage = lab_data([{"bind": "living_room_light", "node_id": first["node_ids"]["living_room_light"],
                        "endpoint": 1}], script, timeout=3,
                      network={"nodes": {"url": TWIN_HTTP, "devices": ["stand_in"]},
                               "outages": [{"at": 1, "duration": 5}]})
    bench.ns.call(run_session, str(bench.write_config("outage.yaml", outage)), str(bench.workdir / "outage.sqlite"),
                  timeout=120)
    rec = Recording(bench.workdir / "outage.sqlite")
    run = rec.run()
    calls, events = rec.rows("calls", run["run"]), rec.rows("events", run["run"])
    rec.close()
    assert [c["ok"] for c in calls][0] == 0 and calls[-1]["ok"] == 1, [c["result"] for c in calls]
    kinds = [(e["kind"], e["detail"].get("outage")) for e in events
             if e["kind"] in ("network", "node_unavailable", "node_available")]
    assert ("network", True) in kinds
    assert kinds.index(("node_unavailable", None)) < kinds.index(("node_available", None)), kinds


def test_kill_9_mid_session_leaves_a_readable_recording_and_a_restart_appends(bench):
    lab_file = bench.write_config("killed.yaml", lab_data(bench.by_node, [onoff("Toggle"), {"wait": 60}, onoff("Off")]))
    recording = bench.workdir / "killed.sqlite"
    proc = bench.ns.popen([sys.executable, "-m", "matter_twin.cli", "lab", "run", str(lab_file), "-r", str(recording)],
                          env=dict(os.environ, PYTHONPATH=str(REPO)), cwd=str(REPO),
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 90
        while True:
            assert proc.poll() is None and time.monotonic() < deadline, "the session did not get going"
            if recording.exists():
                try:
                    rec = Recording(recording)
                    counts = rec.counts(rec.run()["run"]) if rec.runs() else {}
                    done = counts.get("calls", 0) >= 1 and counts.get("reports", 0) >= 1  # mid-wait now
                    rec.close()
                    if done:
                        break
                except Exception:  # noqa: BLE001 - the file is being created
                    pass
            time.sleep(0.2)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    rec = Recording(recording)
    first = rec.run()
    assert first["ended"] is None and rec.counts(1)["calls"] == 1 and rec.counts(1)["reports"] >= 1
    rec.close()
    # Restarted (with a short script this time): a second run in the same file.
    short = bench.write_config("killed.yaml", lab_data(bench.by_node, [onoff("Off")]))
    bench.ns.call(run_session, str(short), str(recording), timeout=120)
    rec = Recording(recording)
    assert [r["run"] for r in rec.runs()] == [1, 2] and rec.counts(1)["calls"] == 1 and rec.counts(2)["calls"] == 1
    assert rec.run(2)["ended"] is not None
    rec.close()


def run_agent_session(lab_file: str, recording: str) -> dict[str, Any]:
    from hardware.labfile import load_lab
    from hardware.session import LabSession
    with LabSession(load_lab(lab_file), Path(recording)) as session:
        return session.run_agent()


def test_an_agent_drives_the_mixed_home_and_is_scored(bench):
    # The previous test left the real light off.
    agent = {"agent": "reference", "query": "Turn on the dimmer light 1 in the living room.",
             "goals": [{"device": "living_room_light", "endpoint": 1, "cluster": "OnOff", "attribute": "OnOff",
                        "equals": True}]}
    data = lab_data(bench.by_node, [])
    data["session"] = {"sample_interval": 0.5, "agent": agent}
    recording = bench.workdir / "agent.sqlite"
    summary = bench.ns.call(run_agent_session, str(bench.write_config("agent.yaml", data)), str(recording),
                            timeout=120)
    assert summary["score"]["success"], summary
    rec = Recording(recording)
    calls = rec.rows("calls", rec.run()["run"])
    reports = rec.rows("reports", rec.run()["run"])
    rec.close()
    on = next(c for c in calls if c["tool"] == "execute_command")
    assert on["source"] == "agent" and on["args"]["device.id"] == "living_room_light"
    assert any(r["source"] == "real" and r["attribute"] == "OnOff" and r["value"] is True for r in reports)


def run_episode_session(lab_file: str, recording: str) -> dict[str, Any]:
    from hardware.episodes import run_episodes
    from hardware.labfile import load_lab
    return run_episodes(load_lab(lab_file), Path(recording))


def test_benchmark_episodes_that_fit_run_on_the_mixed_home_and_are_scored(bench):
    # The real light plays living_room_light in each episode's home; the scheduling episode is dropped.
    data = lab_data(bench.by_node[:1], [])
    data["session"] = {"sample_interval": 0.5, "episodes": {"ids": ["qt3-f-044", "qt4-1-f-001", "qt3-f-026"],
                                                            "settle": 1.0}}
    recording = bench.workdir / "episodes.sqlite"
    summary = bench.ns.call(run_episode_session, str(bench.write_config("episodes.yaml", data)), str(recording),
                            timeout=180)
    assert [d["episode_id"] for d in summary["dropped"]] == ["qt4-1-f-001"]
    scored = [(r["episode_id"], r["success"]) for r in summary["results"]]
    assert scored == [("qt3-f-044", True), ("qt3-f-026", True)], [r["failures"] for r in summary["results"]]
    rec = Recording(recording)
    runs = rec.runs()
    assert len(runs) == 2
    level, off = ([c for c in rec.rows("calls", r["run"]) if c["tool"] == "execute_command"] for r in runs)
    reports = [rec.rows("reports", r["run"]) for r in runs]
    rec.close()
    # qt3-f-026 starts with the light on: its setup calls went to the matter.js light first.
    assert [c["source"] for c in level] == ["agent", "agent"]
    assert [c["source"] for c in off] == ["setup", "setup", "agent"]
    # The agent's commands went to the matter.js light, whose reports set what was scored.
    assert all(c["args"]["device.id"] == "living_room_light" for c in level + off)
    assert any(r["source"] == "real" and r["attribute"] == "CurrentLevel" and r["value"] == 30 for r in reports[0])
    assert any(r["source"] == "real" and r["attribute"] == "OnOff" and r["value"] is False for r in reports[1])


def open_error(lab_file: str) -> str:
    """Inside the namespace: the one-line error a session that cannot start gives."""
    from hardware.labfile import load_lab
    from hardware.session import LabError, LabSession
    try:
        LabSession(load_lab(lab_file)).open()
    except LabError as err:
        return str(err)
    return "(no error)"


def test_a_pairing_code_that_fails_is_one_line(bench):
    # A valid code no device answers to (the stand-ins use other discriminators).
    code = SetupPayload(passcode=20202099, discriminator=0x100).qr_code()
    data = {**lab_data([{"bind": "kitchen_light", "pairing_code": code}], []),
            "commission_timeout": 4}
    message = bench.ns.call(open_error, str(bench.write_config("badcode.yaml", data)), timeout=120)
    assert message.startswith(f"{bench.workdir / 'badcode.yaml'}: devices[0] (kitchen_light): ") \
        and "\n" not in message, message


def test_a_node_that_vanishes_mid_session_is_recorded_not_a_crash(bench):
    script = [read("bedroom_ac", "Thermostat", "OccupiedCoolingSetpoint"), {"wait": 4},
              read("bedroom_ac", "Thermostat", "OccupiedCoolingSetpoint"), {"tool": "get_rooms", "args": {}}]
    lab_file = bench.write_config("vanish.yaml", {**lab_data(bench.by_node, script), "timeout": 3})
    recording = bench.workdir / "vanish.sqlite"
    call = bench.ns.start(run_session, str(lab_file), str(recording))
    deadline = time.monotonic() + 90
    while not (recording.exists() and _calls(recording) >= 1):
        assert time.monotonic() < deadline and call.process.poll() is None, "the session did not start"
        time.sleep(0.2)
    bench.stop("thermostat")
    summary = call.result(120)
    assert summary["calls"] == 3
    rec = Recording(recording)
    calls = rec.rows("calls", rec.run()["run"])
    assert calls[0]["ok"] == 1 and calls[1]["ok"] == 0 and calls[2]["ok"] == 1
    assert calls[1]["result"]["error"]["code"] in ("TIMEOUT", "UNAVAILABLE")
    gone = [e for e in rec.rows("events", rec.run()["run"]) if e["kind"] == "node_unavailable"]
    assert gone and gone[0]["device"] == "bedroom_ac"
    assert rec.run()["ended"] is not None
    rec.close()


def _calls(recording: Path) -> int:
    try:
        rec = Recording(recording)
        n = rec.counts(rec.run()["run"])["calls"] if rec.runs() else 0
        rec.close()
        return n
    except Exception:  # noqa: BLE001 - being created
        return 0
