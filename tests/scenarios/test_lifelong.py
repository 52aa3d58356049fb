"""Lifelong runs (DomusMind): metrics on hand-made trajectories, drift, every baseline end to end,
the LLM policy through a scripted OpenAI-API server, byte-identical reruns, the CLI."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest
from chip.clusters import Objects as Clusters

from matter_twin.cli_lifelong import parse_sweep
from scenarios.lifelong import PRESETS, Scenario, load_scenario, make_policy, run_lifelong, scenario_named, summarize
from scenarios.lifelong.config import SEVERITIES, SUMMER, with_severity
from scenarios.lifelong.environment import approval_probability, lifelong_home, persona_at, tool_parameters_at
from scenarios.lifelong.metrics import rolling_success, step_success
from scenarios.lifelong.policies import LLMPolicy, gate
from scenarios.lifelong.report import BUDGETS, _step_curve, operating_points, run_report
from scenarios.lifelong.routines import routines_for
from tests.openai_stub import OpenAIStub
from twin.generator import generate_home
from twin.home import Home
from twin.schema import UserFileError

# ---- metrics on a hand-made trajectory ---------------------------------------------------------


def _step(t: int, action: str | None, y: int = 0, x: int = 0, e: int = 0, private: bool = False,
          cost: float = 0.0) -> dict:
    if action is None:
        return {"t": t, "suggestion": None, "action": None}
    violation = int(private and x == 1 and y == 0)
    return {"t": t, "suggestion": {"template_id": "k", "privacy_sensitive": private}, "action": action,
            "y": y, "x": x, "e": e, "safety_violation": violation, "cost": cost}


#: s_t = 1, –, 1, 0, 0, 1, 1, 1, 0 at t = 1..9 (t = 2 not actionable); drift at 4, revisit at 7.
HAND_MADE = [
    _step(1, "EXECUTE", y=1, x=1, e=1, cost=0.5),
    _step(2, None),
    _step(3, "NOOP", y=0, x=0, private=True),
    _step(4, "EXECUTE", y=0, x=1, e=1, private=True, cost=5.5),     # a safety violation
    _step(5, "EXECUTE", y=1, x=1, e=0, private=True, cost=2.0),     # executed, the executor failed
    _step(6, "ASKCONFIRM", y=0, x=0, cost=1.0),
    _step(7, "ASKCONFIRM", y=1, x=1, e=1, cost=1.25),
    _step(8, "DELAY", y=0, x=0, cost=0.25),
    _step(9, "NOOP", y=1, x=0),
]


def test_step_success_is_equation_one():
    table = {(y, x, e): step_success(y, x, e) for y in (0, 1) for x in (0, 1) for e in (0, 1)}
    assert table == {(0, 0, 0): 1, (0, 0, 1): 1, (0, 1, 0): 0, (0, 1, 1): 0,
                     (1, 0, 0): 0, (1, 0, 1): 0, (1, 1, 0): 0, (1, 1, 1): 1}


def test_rolling_success_on_hand_made_trajectory():
    assert rolling_success(HAND_MADE, window=2) == [(1, 1.0), (3, 1.0), (4, 0.5), (5, 0.0), (6, 0.5),
                                                    (7, 1.0), (8, 1.0), (9, 0.5)]


def test_summary_on_hand_made_trajectory():
    m = summarize(HAND_MADE, window=2, drift_step=4, revisit_step=7)
    assert m["steps"] == 9 and m["actionable"] == 8 and m["privacy_sensitive"] == 3
    assert m["success"] == pytest.approx(5 / 8)
    assert m["confirm_rate"] == pytest.approx(2 / 8)
    assert m["safety_violations"] == 1 and m["safevio_per_100"] == pytest.approx(100 / 3)
    assert m["pre_drift"] == pytest.approx(1.0)                  # S_roll at t = 1, 3
    assert m["drift"] == pytest.approx((0.5 + 0.0 + 0.5) / 3)    # t = 4, 5, 6 (up to the revisit)
    assert m["post_drift"] == pytest.approx(3.5 / 6)             # t = 4 .. 9
    assert m["steady"] == pytest.approx(0.75)                    # last two: t = 8, 9
    assert m["recover1"] == 3                                    # t = 7 is the first >= 0.9 after 4
    assert m["recover2"] == 1                                    # t = 8 after the revisit at 7
    assert m["forgetting"] == pytest.approx(0.25)
    assert m["cost"] == pytest.approx(10.5)
    assert m["actions"] == {"EXECUTE": 3, "ASKCONFIRM": 2, "DELAY": 1, "NOOP": 2}
    assert m["executed"] == 4 and m["execution_failures"] == 1


def test_summary_without_drift_or_recovery():
    m = summarize(HAND_MADE, window=2)
    assert m["pre_drift"] is None and m["post_drift"] is None and m["forgetting"] is None
    assert m["recover1"] is None and m["steady"] == pytest.approx(0.75)
    never = [_step(1, "EXECUTE", y=1, x=1, e=1), _step(2, "NOOP", y=1), _step(3, "NOOP", y=1)]
    m = summarize(never, window=1, drift_step=2)
    assert m["pre_drift"] == 1.0 and m["recover1"] is None and m["forgetting"] is None


# ---- persona, drift, approval model ------------------------------------------------------------


def test_drift_sudden_gradual_and_revisit():
    scenario = Scenario.model_validate({
        "steps": 20, "persona": {"autonomy": 0.8, "privacy": 0.2}, "revisit_at": 15,
        "drift": [{"at_step": 4, "drift_type": "preference", "target": "autonomy", "set": 0.2},
                  {"at_step": 5, "drift_type": "preference", "target": "privacy", "mode": "gradual",
                   "duration": 4, "delta": 0.6},
                  {"at_step": 6, "drift_type": "tool", "target": "failure_prob", "set": 0.4}]})
    assert persona_at(scenario, 3) == {"autonomy": 0.8, "privacy": 0.2}
    assert persona_at(scenario, 4)["autonomy"] == 0.2
    assert [persona_at(scenario, t)["privacy"] for t in (5, 6, 7, 9, 14)] == pytest.approx([0.2, 0.35, 0.5, 0.8, 0.8])
    assert persona_at(scenario, 15) == {"autonomy": 0.8, "privacy": 0.2}          # the regime comes back
    assert [tool_parameters_at(scenario, t)["failure_prob"] for t in (5, 6, 14, 15)] == [0.0, 0.4, 0.4, 0.0]
    # p = clip(b0 + wα·α + b_k − wπ·π·I_priv) with the defaults b0 = 0, wα = wπ = 0.9
    assert approval_probability(scenario, {"autonomy": 0.5, "privacy": 0.5}, "vacuum", True) == pytest.approx(0.1)
    assert approval_probability(scenario, {"autonomy": 1.0, "privacy": 0.0}, "cooling", False) == pytest.approx(0.95)
    assert approval_probability(scenario, {"autonomy": 0.0, "privacy": 1.0}, "vacuum", True) == 0.0


def test_gate_threshold():
    assert gate(0.6, 0.0) == "EXECUTE" and gate(0.4, 0.0) == "NOOP"
    assert gate(0.6, 0.5) == "ASKCONFIRM" and gate(0.8, 0.5) == "EXECUTE" and gate(0.2, 0.5) == "NOOP"
    assert gate(0.99, 1.0) == "ASKCONFIRM" and gate(1.0, 1.0) == "EXECUTE"


def test_bad_scenarios_are_one_line_errors(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("steps: 48\ndrift:\n  - {at_step: 10, drift_type: tool, target: autonomy, set: 1}\n")
    with pytest.raises(UserFileError,
                       match=r"bad.yaml: drift\[0\]: target: .autonomy. is not a tool target; accepted: failure_prob"):
        load_scenario(bad)
    bad.write_text("steps: 48\nrevisit_at: 20\n")
    with pytest.raises(UserFileError, match="no drift to come back from"):
        load_scenario(bad)
    bad.write_text("drift:\n  - {at_step: 10, drift_type: preference, target: privacy, mode: gradual, duration: 20,"
                   " set: 1}\n  - {at_step: 20, drift_type: preference, target: privacy, set: 0}\n")
    with pytest.raises(UserFileError, match="two privacy events overlap"):
        load_scenario(bad)
    with pytest.raises(ValueError, match="unknown scenario 'weekly'; accepted: none, pref"):
        scenario_named("weekly")
    with pytest.raises(ValueError, match="unknown policy 'greedy'"):
        make_policy("greedy", PRESETS["pref"])


# ---- end to end on the twin ---------------------------------------------------------------------

#: Three virtual days: mixed drift at step 24, regime revisit at step 60.
SMALL = Scenario.model_validate({
    "name": "small", "steps": 72, "revisit_at": 60, "window": 6, "calibration_steps": 12,
    "drift": [{"at_step": 24, "drift_type": "preference", "target": "autonomy", "set": 0.2},
              {"at_step": 24, "drift_type": "preference", "target": "privacy", "set": 0.9},
              {"at_step": 24, "drift_type": "tool", "target": "failure_prob", "set": 0.9},
              {"at_step": 24, "drift_type": "tool", "target": "offline_rate", "set": 0.3},
              {"at_step": 24, "drift_type": "tool", "target": "latency_ms", "set": 500}]})


@pytest.mark.parametrize("name", ["NoToM", "STATIC", "ONLINE", "ORACLE"])
def test_every_baseline_runs_end_to_end(name):
    home = Home.default(3)
    trajectory = run_lifelong(SMALL, make_policy(name, SMALL), seed=3, home=home)
    assert len(trajectory) == 72 and home.now.isoformat() >= "2025-06-04T09:00:00"
    acted = [s for s in trajectory if s["suggestion"] is not None]
    assert len(acted) > 20
    m = summarize(trajectory, SMALL.window, SMALL.drift_step, SMALL.revisit_at)
    assert 0 <= m["success"] <= 1 and m["pre_drift"] is not None and m["forgetting"] is not None
    for s in acted:
        assert s["success"] == step_success(s["y"], s["x"], s["e"])
        assert s["x"] == int(s["tool_outcome"]["attempted"])
    # Tool drift is the fault engine's: faults recorded in the home's log, and real failed calls.
    started = {e["fields"]["kind"] for e in home.events if e["event"] == "FaultStarted"}
    assert {"command_failure", "latency"} <= started
    failed = [s["tool_outcome"] for s in acted if s["x"] and not s["e"]]
    if name != "ONLINE":     # ONLINE may learn to stop executing; the others keep acting after drift
        assert failed and all(o["error"] in ("execution_failed", "device_offline") for o in failed)
        assert all(o["retries"] == SMALL.max_retries - 1 for o in failed)
    assert all(s["t"] >= 24 for s in acted if s["x"] and not s["e"])   # no failure before the drift


def test_routines_come_from_the_home():
    default = routines_for(Home.default())
    assert default.ac == ("living_room", "living_room_ac") and default.blinds == "bedroom_blinds"
    assert [t.id for t in default.templates if t.privacy_sensitive] == ["blinds_morning", "vacuum"]
    # A generated home: its own lights, one template pair per lit room; the run works on it.
    home = Home.from_spec(generate_home(4, rooms=3, devices=9))
    routines = routines_for(home)
    assert [room for room, _ in routines.lights] == list(home.rooms)
    assert all(d in home.devices for d in routines.devices)
    trajectory = run_lifelong(Scenario(steps=48), make_policy("ONLINE", Scenario()), seed=4, home=home)
    proposed = {s["suggestion"]["entity_id"].split(".", 1)[1] for s in trajectory if s["suggestion"]}
    assert proposed and proposed <= set(routines.devices)
    bare = Home("bare")
    bare.add_room("hall")
    bare.add_device("hall_fan", "fan", "hall")
    with pytest.raises(ValueError, match="home 'bare' has no light; the routines need at least one"):
        routines_for(bare)


def test_oracle_sees_the_persona_others_do_not():
    seen = []

    class Spy:
        name, sees_persona = "spy", False

        def decide(self, step, persona):
            seen.append((persona, set(step)))
            return "EXECUTE"

        def feedback(self, step):
            assert "y" not in step and "persona" not in step   # the latent approval stays hidden

    run_lifelong(Scenario(steps=12), Spy(), seed=1)
    assert seen and all(p is None for p, _ in seen)


def test_llm_policy_through_openai_stub():
    def reply(body):
        prompt = body["messages"][-1]["content"]
        assert "Choose one action: EXECUTE, ASKCONFIRM, DELAY, or NOOP." in prompt
        return "ASKCONFIRM" if "(privacy-sensitive)" in prompt else "I would EXECUTE it."

    with OpenAIStub(["no idea"] + [reply] * 80) as stub:
        policy = LLMPolicy("stub-model", base_url=stub.base_url, api_key="test")
        trajectory = run_lifelong(SMALL, policy, seed=2)
        asked = len(stub.requests)
    acted = [s for s in trajectory if s["suggestion"] is not None]
    assert asked == len(acted)
    assert acted[0]["action"] == "NOOP"          # the unparsable first reply falls back
    assert policy.settings()["fallbacks"] == 1 and policy.settings()["parse_hits"] == len(acted) - 1
    for s in acted[1:]:
        assert s["action"] == ("ASKCONFIRM" if s["suggestion"]["privacy_sensitive"] else "EXECUTE")


def test_report_reruns_are_byte_identical(tmp_path):
    args = ([SMALL], ["NoToM", "STATIC", "ONLINE", "ORACLE"], [0, 1])
    first = run_report(*args, out=tmp_path / "a", taus=(0.0, 0.5, 1.0))
    run_report(*args, out=tmp_path / "b", taus=(0.0, 0.5, 1.0))
    a, b = (tmp_path / "a" / "report.json").read_bytes(), (tmp_path / "b" / "report.json").read_bytes()
    assert a == b and json.loads(a) == first
    for path in sorted((tmp_path / "a" / "trajectories").rglob("*.jsonl")):
        assert path.read_bytes() == (tmp_path / "b" / path.relative_to(tmp_path / "a")).read_bytes()
    assert (tmp_path / "a" / "rolling.png").stat().st_size > 0 and (tmp_path / "a" / "frontier.png").exists()
    frontier = first["scenarios"]["small"]["frontier"]
    assert [p["tau"] for p in frontier] == [0.0, 0.5, 1.0]
    assert frontier[0]["confirm_rate"] == 0.0 and frontier[-1]["confirm_rate"] > frontier[1]["confirm_rate"]
    claims = {f["claim"] for f in first["findings"]}
    assert claims == {"ONLINE ahead of STATIC after preference drift (PostDrift)",
                      "ORACLE still fails under tool drift"}
    assert "## The paper's qualitative findings, measured" in (tmp_path / "a" / "report.md").read_text()


def test_cli_lifelong(tmp_path):
    scenario = tmp_path / "small.yaml"
    scenario.write_text(json.dumps(SMALL.model_dump(mode="json")))
    run = [sys.executable, "-m", "matter_twin.cli", "bench", "lifelong"]
    done = subprocess.run([*run, "--scenario", str(scenario), "--seeds", "1", "--no-frontier",
                           "--policy", "ONLINE", "--policy", "STATIC", "--out", str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "ONLINE ahead of STATIC after preference drift" in done.stdout
    assert set(json.loads((tmp_path / "out" / "report.json").read_text())["scenarios"]["small"]["policies"]) == \
        {"ONLINE", "STATIC"}
    assert (tmp_path / "out" / "rolling.png").exists() and not (tmp_path / "out" / "frontier.png").exists()
    missing = subprocess.run([*run, "--home", str(tmp_path / "nope.yaml"), "--out", str(tmp_path / "x")],
                             capture_output=True, text=True, timeout=60)
    assert missing.returncode == 2 and missing.stderr.startswith("error: ") and "nope.yaml" in missing.stderr
    assert len(missing.stderr.strip().splitlines()) == 1
    bad = subprocess.run([*run, "--scenario", "weekly", "--out", str(tmp_path / "x")],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert bad.stderr.strip().splitlines() == ["error: unknown scenario 'weekly'; accepted: " + ", ".join(PRESETS)
                                               + " or a YAML file"]
    assert parse_sweep("0.25, mild,1,strong") == [0.25, 0.5, 1.0] and parse_sweep(None) == []
    with pytest.raises(ValueError, match=r"^--sweep: 'huge' is not a severity \(a number 0..2, or mild, strong\); "
                                         r"e.g. --sweep 0.25,0.5,1$"):
        parse_sweep("0.5,huge")
    with pytest.raises(ValueError, match="severity 3 is outside 0..2"):
        parse_sweep("3")


# ---- the front door, the household's clock, severities and budgets ---------------------------------

Source = Clusters.DoorLock.Enums.OperationSourceEnum


def test_door_unlock_and_delivery_routines_act_on_the_lock_and_doorbell():
    routines = routines_for(lifelong_home())
    assert (routines.lock, routines.doorbell) == ("front_door", "front_doorbell")
    assert routines.residents == (("Alex", "2580"), ("Sam", "1379"))
    door = {t.id: t for t in routines.templates if t.device == "front_door"}
    assert set(door) == {"door_unlock", "delivery_unlock", "night_lock"}
    assert door["door_unlock"].privacy_sensitive and door["delivery_unlock"].privacy_sensitive
    assert door["delivery_unlock"].args == (("timeout", 120),) and not door["night_lock"].privacy_sensitive
    # An event-triggered door template is the step's only candidate, whatever else is triggered.
    world = {"hour": 18, "clock": 18, "occupancy": True, "motion": "kitchen", "dark": True, "arriving": "Sam",
             "delivery": None, "locked": True, "unlocked": False, "temperature": 20.0, "wants_vacuum": False,
             "light": {r: False for r, _ in routines.lights}, "ac": False, "blinds_closed": True,
             "vacuum_running": False}
    assert [t.id for t in routines.eligible(world)] == ["door_unlock"]

    home = lifelong_home(5)
    scenario = Scenario.model_validate({"steps": 72, "persona": {"autonomy": 0.7, "privacy": 0.4}})  # p(unlock) 0.39
    trajectory = run_lifelong(scenario, make_policy("NoToM", scenario), seed=5, home=home)
    by_kind: dict[str, list[dict]] = {}
    for s in trajectory:
        if s["suggestion"]:
            by_kind.setdefault(s["suggestion"]["template_id"], []).append(s)
    assert by_kind["door_unlock"] and by_kind["delivery_unlock"]
    # NoToM asks on both (privacy-sensitive); a yes unlocks remotely, a no leaves the resident to the keypad.
    ops = [e for e in home.events if e["event"] == "LockOperation" and e["fields"]["lockOperationType"] == 1]
    sources = {e["fields"]["operationSource"] for e in ops}
    assert int(Source.kKeypad) in sources and int(Source.kRemote) in sources
    keyed = [e for e in ops if e["fields"]["operationSource"] == int(Source.kKeypad)]
    assert all(e["fields"]["userIndex"] in (1, 2) for e in keyed)     # Alex or Sam, by their PINs
    for s in by_kind["door_unlock"]:
        name = s["obs"]["event"].split(":", 1)[1]
        expected = f"{name} came in"
        assert expected in s["household"]
        assert (f"{name} unlocked front_door with a PIN" in s["household"]) == (s["x"] == 0 or s["e"] == 0)
    for s in by_kind["delivery_unlock"]:
        assert s["obs"]["event"] == "doorbell" and s["household"][0] == "courier pressed front_doorbell"
        inside = "the courier left the parcel inside" in s["household"]
        assert inside == bool(s["x"] and s["e"]) and inside != ("the courier left the parcel on the porch"
                                                                 in s["household"])
    presses = [e for e in home.events if e["device"] == "front_doorbell" and e["event"] == "InitialPress"]
    assert len(presses) == sum(s["obs"]["event"] == "doorbell" for s in trajectory)
    assert any(e["event"] == "DoorStateChange" for e in home.events if e["device"] == "front_door")
    # Seeded: the same seed gives the same steps and the same device events.
    again = lifelong_home(5)
    assert run_lifelong(scenario, make_policy("NoToM", scenario), seed=5, home=again) == trajectory
    assert again.events == home.events


def test_weather_drives_a_diurnal_temperature_and_the_schedule_jitters():
    scenario = Scenario(steps=48)
    trajectory = run_lifelong(scenario, make_policy("ONLINE", scenario), seed=2)
    temps = {s["obs"]["hour"]: s["obs"]["temp"] for s in trajectory[24:]}
    # The rooms follow the outdoors (warmest at 15:00) a few hours late: warmest in the evening.
    assert max(temps, key=temps.__getitem__) in range(15, 22) and min(temps, key=temps.__getitem__) in range(4, 11)
    assert max(temps.values()) - min(temps.values()) > 4      # SUMMER: 20–32 °C outdoors
    assert any(s["suggestion"] and s["suggestion"]["template_id"] == "cooling" for s in trajectory)
    shifts = [s["schedule_shift_h"] for s in trajectory]
    assert set(shifts) <= {-1, 0, 1} and all(len(set(shifts[d:d + 24])) <= 2 for d in range(0, 48, 24))
    calm = run_lifelong(Scenario(steps=24, jitter_h=0), make_policy("ONLINE", scenario), seed=2)
    assert {s["schedule_shift_h"] for s in calm} == {0}
    # A scenario's weather replaces the home's: a cold spell never triggers cooling.
    cold = Scenario(steps=24, weather=SUMMER.model_copy(update={"mean_c": 5.0}))
    home = lifelong_home(2)
    run_lifelong(cold, make_policy("ONLINE", cold), seed=2, home=home)
    assert home.weather is not None and home.weather.spec.mean_c == 5.0


def test_severity_scales_drift_and_max_retries_drift():
    strong, mild = PRESETS["tool-r"], PRESETS["tool-r-mild"]
    assert (strong.severity, mild.severity) == (1.0, SEVERITIES["mild"]) and mild.drift == strong.drift
    assert tool_parameters_at(strong, 100)["failure_prob"] == 0.5
    assert tool_parameters_at(mild, 100) == {"failure_prob": 0.25, "offline_rate": 0.1, "latency_ms": 400.0,
                                             "max_retries": 3}
    pref = with_severity(PRESETS["pref"], 0.5)
    assert pref.name == "pref@0.5" and persona_at(pref, 100) == {"autonomy": 0.55, "privacy": 0.55}
    assert persona_at(with_severity(PRESETS["pref"], 0), 100) == persona_at(PRESETS["pref"], 1)
    home = lifelong_home(1)
    run_lifelong(with_severity(SMALL, 0.5), make_policy("NoToM", SMALL), seed=1, home=home)
    failures = {f["fields"]["severity"] for f in home.events if f["event"] == "FaultStarted"
                and f["fields"]["kind"] == "command_failure"}
    assert failures == {0.45}
    fewer = Scenario.model_validate({**SMALL.model_dump(), "name": "fewer", "drift": SMALL.model_dump()["drift"] + [
        {"at_step": 24, "drift_type": "tool", "target": "max_retries", "set": 1}]})
    assert [tool_parameters_at(fewer, t)["max_retries"] for t in (23, 24, 60)] == [3, 1, 3]
    trajectory = run_lifelong(fewer, make_policy("NoToM", fewer), seed=1)
    failed = [s for s in trajectory if s["suggestion"] and s["x"] and not s["e"]]
    assert failed and all(s["tool_outcome"]["retries"] == (0 if s["t"] < 60 else 2) for s in failed)
    latencies = {s["tool_outcome"]["latency_s"] for s in trajectory if s["suggestion"] and s["x"] and s["t"] < 24}
    assert len(latencies) > 3 and all(0.08 <= v <= 0.12 for v in latencies)    # 0.1 s ± 20 % jitter
    with pytest.raises(ValueError, match="severity"):
        Scenario(severity=3)


def test_budget_regimes_pick_operating_points():
    frontier = [{"tau": 0.0, "success": 0.7, "confirm_rate": 0.0}, {"tau": 0.5, "success": 0.9, "confirm_rate": 0.25},
                {"tau": 1.0, "success": 0.95, "confirm_rate": 0.8}]
    points = operating_points(frontier)
    assert set(points) == set(BUDGETS)
    assert points["tight"]["tau"] == 0.0 and points["moderate"]["tau"] == 0.5 and points["loose"]["tau"] == 0.5
    assert operating_points([{"tau": 1.0, "success": 1.0, "confirm_rate": 0.9}])["tight"] is None


def test_severity_sweep_gives_a_frontier_per_severity_and_bands_over_seeds(tmp_path):
    tiny = Scenario.model_validate({"name": "tiny", "steps": 24, "window": 4, "calibration_steps": 4, "drift": [
        {"at_step": 8, "drift_type": "tool", "target": "failure_prob", "set": 0.8}]})
    report = run_report([with_severity(tiny, v) for v in (0.5, 1.0)], ["ORACLE"], [0, 1], out=tmp_path,
                        taus=(1.0,))
    assert list(report["scenarios"]) == ["tiny@0.5", "tiny@1"]
    for entry in report["scenarios"].values():
        assert [p["tau"] for p in entry["frontier"]] == [1.0] and set(entry["operating_points"]) == set(BUDGETS)
        assert entry["policies"]["ORACLE"]["std"]["success"] is not None
    text = (tmp_path / "report.md").read_text()
    assert "## tiny@0.5" in text and "severity 0.5" in text and "Operating points by budget" in text
    # The plotted band: seed-mean and seed-std of S_roll, each run's value held between its actionable steps.
    means, stds = _step_curve([[(1, 1.0), (3, 0.5)], [(2, 0.0)]], 4)
    assert means == [1.0, 0.5, 0.25, 0.25] and stds == [0.0, 0.5, 0.25, 0.25]


def test_offline_is_drawn_per_attempt():
    flaky = Scenario.model_validate({"name": "flaky", "steps": 36, "max_retries": 4, "drift": [
        {"at_step": 12, "drift_type": "tool", "target": "offline_rate", "set": 0.5}]})
    home = lifelong_home(3)
    trajectory = run_lifelong(flaky, make_policy("NoToM", flaky), seed=3, home=home)
    executed = [s["tool_outcome"] for s in trajectory if s["suggestion"] and s["x"]]
    assert not any(o["device_offline"] for o in executed[:3]) and all(o["success"] for o in executed[:3])
    # A device that dropped off for one attempt answers a retry: offline seen, yet the call succeeded.
    back = [o for o in executed if o["device_offline"] and o["success"]]
    assert back and all(o["retries"] >= 1 for o in back)
    outages = [e for e in home.events if e["event"] == "FaultStarted" and e["fields"]["kind"] == "offline"]
    assert len(outages) >= sum(o["device_offline"] for o in executed)    # one outage per unlucky attempt
    again = run_lifelong(flaky, make_policy("NoToM", flaky), seed=3)
    assert again == trajectory


def test_report_without_the_plots_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)     # import matplotlib raises ImportError
    report = run_report([Scenario(name="short", steps=12)], ["NoToM"], [0], out=tmp_path, taus=())
    assert report["scenarios"]["short"]["policies"]["NoToM"]["runs"]
    assert (tmp_path / "report.md").exists() and not list(tmp_path.glob("*.png"))
