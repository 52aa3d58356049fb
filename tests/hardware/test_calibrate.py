"""Calibration (hardware/calibrate.py, `twin calibrate`): traces the twin records with known
coefficients and cycle timings come back within 2 %."""
from __future__ import annotations

import json
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from hardware.calibrate import Row, Trace, TraceError, fit, fit_transitions, parse_csv, record, write_csv
from matter_twin.cli import app
from twin.home import Home
from twin.physics import COEFFICIENTS
from twin.schema import parse_data

SPEC: dict[str, Any] = {
    "name": "lab", "ambient": {"temperature": 30, "humidity": 60, "pm10": 40},
    "rooms": [{"id": "lab", "temperature": 28, "humidity": 45, "pm10": 80, "daylight_lux": 200, "devices": [
        {"id": "ac", "type": "air_conditioner"}, {"id": "hum", "type": "humidifier"},
        {"id": "pur", "type": "air_purifier"}, {"id": "lamp", "type": "dimmable_light"},
        {"id": "washer", "type": "laundry_washer"}, {"id": "blind", "type": "window_covering"}]},
        {"id": "attic", "temperature": 20, "devices": [{"id": "hp", "type": "heat_pump"}]}]}

TRUTH = {"ambient_k": {"temperature": 7e-6, "humidity": 4e-6, "pm10": 6.5e-6}, "ac_k_full_fan": 8.2e-5,
         "heat_pump_k": 4.1e-5, "humidifier": {"k_full_fan": 2.4e-5}, "air_purifier": {"k_full_fan": 1.55e-4},
         "light_lux": {"dimmable_light": 350.0}}
CYCLES = {"Quick": [["wash", 700], ["rinse", 260], ["spin", 330]]}


def _ac_on(home: Home) -> None:
    ac = home.device("ac")
    ac.invoke("OnOff", "On")
    ac.write("Thermostat", "SystemMode", 3)
    ac.write("Thermostat", "OccupiedCoolingSetpoint", 2200)
    ac.write("FanControl", "PercentSetting", 100)


def _fan_device_on(device_id: str, percent: int):
    def act(home: Home) -> None:
        home.device(device_id).invoke("OnOff", "On")
        home.device(device_id).write("FanControl", "PercentSetting", percent)
    return act


def _heat_pump_heat(home: Home) -> None:
    home.device("hp").write("Thermostat", "OccupiedHeatingSetpoint", 2400)
    home.device("hp").write("Thermostat", "SystemMode", 4)


def _wash_quick(home: Home) -> None:
    washer = home.device("washer")
    washer.invoke("OnOff", "On")
    washer.invoke("LaundryWasherMode", "ChangeToMode", {"newMode": 4})
    washer.invoke("OperationalState", "Start")


ACTIONS = [(600, _ac_on), (900, _heat_pump_heat), (1200, _fan_device_on("hum", 60)),
           (1800, _fan_device_on("pur", 80)), (2400, lambda h: h.device("lamp").invoke("OnOff", "On")),
           (3000, _wash_quick), (7200, lambda h: h.device("ac").invoke("OnOff", "Off")),
           (9000, lambda h: h.device("hum").invoke("OnOff", "Off")), (9600, _wash_quick),
           # between the minute samples: the replay holds positions, not the cover's motion
           (3970, lambda h: h.device("blind").invoke("WindowCovering", "DownOrClose")),
           (5050, lambda h: h.device("blind").invoke("WindowCovering", "UpOrOpen"))]
TRAVEL = {"lift_travel_s": 26.0, "tilt_travel_s": 4.0}
#: The lamp's own fade (OnOffTransitionTime, 0.1 s), used by commands that give no TransitionTime.
LAMP_FADE = {"1/LevelControl/OnOffTransitionTime": 37}


def _dim(level: int):
    def act(home: Home) -> None:
        home.device("lamp").invoke("LevelControl", "MoveToLevel", {
            "level": level, "transitionTime": None, "optionsMask": 0, "optionsOverride": 0})
    return act


# fades between the minute samples, each taking the lamp's own 3.7 s
ACTIONS += [(2430, _dim(120)), (2530, _dim(254)), (2630, _dim(60)), (2632, _dim(200)), (2730, _dim(254))]


@pytest.fixture(scope="module")
def trace() -> Trace:
    spec = {**SPEC, "rooms": json.loads(json.dumps(SPEC["rooms"]))}
    spec["rooms"][0]["devices"][4]["options"] = {"cycles": CYCLES}
    spec["rooms"][0]["devices"][5]["options"] = dict(TRAVEL)
    spec["rooms"][0]["devices"][3]["attributes"] = dict(LAMP_FADE)
    home = Home.from_spec(parse_data({**spec, "physics": TRUTH}))
    return record(home, ACTIONS, duration=4 * 3600, every=60)


def _flat(table: dict[str, Any]) -> dict[str, float]:
    return {f"{k}.{s}" if isinstance(v, dict) else k: (w if isinstance(v, dict) else v)
            for k, v in table.items() for s, w in (v.items() if isinstance(v, dict) else [(None, v)])}


def test_known_coefficients_and_cycles_come_back(trace):
    # Measured values as sensors report them: hundredths of a unit, whole lux.
    rounded = Trace([Row(r.time, r.target, r.quantity, round(r.value, 0 if r.quantity == "illuminance" else 2))
                     if r.is_room else r for r in trace.rows])
    result = fit(parse_data(SPEC), parse_csv(write_csv(rounded)))
    truth = _flat(TRUTH)
    assert set(result.coefficients) == set(truth)
    for key, value in result.coefficients.items():
        assert value == pytest.approx(truth[key], rel=0.02), key
        assert result.previous[key] == _flat(COEFFICIENTS)[key]
    for quantity, rms in result.rms_after.items():
        assert rms < result.rms_before[quantity]
    assert result.timings["washer"] == CYCLES
    assert result.travel == {"blind": TRAVEL}
    # the 2630 fade, restarted by another at 2632, is not counted; the others took 3.7 s
    assert result.transitions == {"lamp": LAMP_FADE}


def test_cli_writes_the_home_file_that_then_loads(trace, tmp_path):
    home_file = tmp_path / "lab.yaml"
    home_file.write_text(yaml.safe_dump(SPEC, sort_keys=False))
    trace_file = tmp_path / "trace.csv"
    trace_file.write_text(write_csv(trace))
    original = home_file.read_text()
    result = CliRunner().invoke(app, ["calibrate", str(trace_file), "--home", str(home_file), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["coefficients"]["ac_k_full_fan"]["fitted"] == pytest.approx(8.2e-5, rel=1e-6)
    calibrated = tmp_path / "lab.calibrated.yaml"   # a new file: the home stays as it was
    assert report["written"] == str(calibrated) and home_file.read_text() == original
    in_place = CliRunner().invoke(app, ["calibrate", str(trace_file), "--home", str(home_file), "--in-place"])
    assert in_place.exit_code == 0, in_place.output
    assert home_file.read_text() == calibrated.read_text()
    home = Home.load(home_file)
    assert home.coefficients["ac_k_full_fan"] == pytest.approx(8.2e-5, rel=1e-6)
    assert home.device("washer").endpoint(1).server("LaundryWasherMode").modes[4].cycle == \
        tuple(tuple(p) for p in CYCLES["Quick"])
    assert home.device("blind").endpoint(1).server("WindowCovering").travel == {"Lift": 260, "Tilt": 40}
    assert home.device("lamp").read("LevelControl", "OnOffTransitionTime", 1) == 37
    assert report["transitions"] == {"lamp": LAMP_FADE}


def test_a_cloned_purifier_is_calibrated_too(tmp_path):
    from clusters.clone import export_attributes
    from clusters.devices import create_device
    dump = export_attributes(create_device("d", "air_purifier"))
    dump["0/40/1"], dump["0/40/3"] = "Brisa", "AirPro 3"
    (tmp_path / "airpro.json").write_text(json.dumps({"attributes": dump}))
    spec = {"name": "lab", "products": {"airpro": str(tmp_path / "airpro.json")},
            "rooms": [{"id": "lab", "pm10": 80, "devices": [{"id": "pur", "type": "airpro"}]}]}
    truth = {"air_purifier": {"k_full_fan": 1.55e-4}}
    home = Home.from_spec(parse_data({**spec, "physics": truth}))
    trace = record(home, [(300, _fan_device_on("pur", 80))], duration=3600, every=60)
    result = fit(parse_data(spec), trace)
    assert result.coefficients["air_purifier.k_full_fan"] == pytest.approx(1.55e-4, rel=0.02)


def test_light_transitions_from_a_real_lights_reports():
    """A real light reports RemainingTime as it fades (by ids here: 8/1); a fade restarted by a
    new command is left out, and so is one whose start was not seen."""
    text = "\n".join(["time,target,quantity,value",
                      "10,bulb,1/8/1,8", "10.3,bulb,1/8/1,5", "10.6,bulb,1/8/1,2", "10.9,bulb,1/8/1,0",
                      "20,bulb,1/8/1,8", "20.2,bulb,1/8/1,8", "21.1,bulb,1/8/1,0",      # restarted at 20.2
                      "30,bulb,1/8/1,8", "30.95,bulb,1/8/1,0",
                      "40,bulb,1/LevelControl/RemainingTime,0",                        # no start seen
                      "50,lab,temperature,20"])
    assert fit_transitions(parse_csv(text)) == {"bulb": {"1/LevelControl/OnOffTransitionTime": 9}}


@pytest.mark.parametrize("text, problem", [
    ("", "empty trace"),
    ("t,target,quantity,value\n", "header must be"),
    ("time,target,quantity,value\nx,lab,temperature,1\n", ":2: time 'x' is not a number"),
    ("time,target,quantity,value\n0,lab,temperature,warm\n", ":2: temperature 'warm' is not a number"),
    ("time,target,quantity,value\n0,ac,OnOff,true\n", "neither a room quantity"),
    ("time,target,quantity,value\n0,ac,1/OnOff/OnOff,yes\n", "is not JSON"),
    ("time,target,quantity,value\n0,kitchen,temperature,20\n", ":2: no room 'kitchen' in the home"),
    ("time,target,quantity,value\n0,ac,1/OnOff/OnOff,3\n0,lab,temperature,20\n", ":2: ac 1/OnOff/OnOff"),
])
def test_bad_traces_are_one_line_errors(text, problem, tmp_path, capsys):
    with pytest.raises(TraceError) as err:
        fit(parse_data(SPEC), parse_csv(text, "t.csv"))
    assert problem in str(err.value) and "\n" not in str(err.value) and str(err.value).startswith("t.csv")
    (tmp_path / "home.yaml").write_text(yaml.safe_dump(SPEC))
    (tmp_path / "t.csv").write_text(text)
    with pytest.raises(SystemExit) as exit_:
        app(["calibrate", str(tmp_path / "t.csv"), "--home", str(tmp_path / "home.yaml")], prog_name="twin")
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and problem in err and err.count("\n") == 1


def test_home_file_physics_is_validated():
    with pytest.raises(Exception, match="ac_k: not a physics coefficient"):
        parse_data({**SPEC, "physics": {"ac_k": 1e-5}})
    with pytest.raises(Exception, match="must be below 0.5"):
        parse_data({**SPEC, "physics": {"ambient_k": {"temperature": 2}}})


def test_a_lab_recording_is_a_trace_too(trace, tmp_path):
    from hardware.calibrate import read_trace
    from hardware.recording import Recorder
    recorder = Recorder(tmp_path / "session.sqlite")
    recorder.start_run(wall=0.0, tick=0, time_text="", lab={}, source="lab.yaml", snapshot={}, devices={},
                       network=None)
    samples: dict[tuple[float, str], dict[str, float]] = {}
    for r in trace.rows:
        tick = round(r.time * 10)
        if r.is_room:
            samples.setdefault((tick, r.target), {})[r.quantity] = r.value
        else:
            ep, cluster, attribute = r.quantity.split("/")
            recorder.report(r.time, tick, "real", r.target, int(ep), cluster, attribute, r.value)
    for (tick, room), state in samples.items():
        recorder.sample(tick / 10, tick, room, state)
    recorder.close()
    result = fit(parse_data(SPEC), read_trace(tmp_path / "session.sqlite"))
    for key, value in result.coefficients.items():
        assert value == pytest.approx(_flat(TRUTH)[key], rel=0.02), key
    (tmp_path / "junk.sqlite").write_bytes(b"SQLite format 3\x00" + b"x" * 100)
    with pytest.raises(TraceError, match="junk.sqlite"):
        read_trace(tmp_path / "junk.sqlite")


def test_a_fit_outside_physical_bounds_writes_nothing(tmp_path, capsys):
    """A room that never moves says nothing about its envelope: least squares drives the ambient
    coefficient to ~0 (-100 %), which is refused instead of written."""
    home_file = tmp_path / "still.yaml"
    home_file.write_text(yaml.safe_dump({"name": "still", "rooms": [{"id": "lab", "temperature": 27.5}]}))
    trace_file = tmp_path / "t.csv"
    trace_file.write_text("time,target,quantity,value\n0,lab,temperature,27.5\n3600,lab,temperature,27.5\n"
                          "7200,lab,temperature,27.5\n")
    before = home_file.read_text()
    with pytest.raises(SystemExit) as exit_:
        app(["calibrate", str(trace_file), "--home", str(home_file), "--in-place"], prog_name="twin")
    assert exit_.value.code == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("error: fit outside physical bounds, nothing written: ambient_k.temperature 5e-06 -> ")
    assert home_file.read_text() == before and sorted(p.name for p in tmp_path.iterdir()) == ["still.yaml", "t.csv"]
