"""The outdoor weather: seeded and hourly, exact under fast-forward, settable, driving rooms and sensors."""
import json

import pytest

from twin.home import Home
from twin.schema import HomeSpec, UserFileError, parse_file
from twin.weather import Weather, WeatherSpec

CLOSED_LIFT = "1/WindowCovering/CurrentPositionLiftPercent100ths"


def dumps(home):
    return json.dumps(home.snapshot(), sort_keys=True)


def weather_home(seed=4, **weather):
    home = Home("w", seed)
    home.set_weather({"mean_c": 8.0, "swing_c": 6.0, "rain_chance": 1.0, **weather})
    home.add_room("r", temperature=22.0, daylight_lux=1000.0)
    home.add_device("w", "window_covering", "r", attributes={CLOSED_LIFT: 10000})
    home.add_device("c", "contact_sensor", "r", options={"mounted_on": "w"})
    home.add_device("rain", "rain_sensor", "r")
    home.add_device("baro", "pressure_sensor", "r")
    home.add_device("frost", "water_freeze_detector", "r")
    home.set_presence("ann", "r")
    return home


def test_the_weather_is_a_seeded_daily_curve():
    spec = WeatherSpec(mean_c=15, swing_c=5, day_sigma_c=0, rain_chance=0)
    a, b = Weather(spec, 1), Weather(spec, 1)
    from datetime import datetime
    day = [a.at(datetime(2025, 6, 1, h)) for h in range(24)]
    assert day == [b.at(datetime(2025, 6, 1, h)) for h in range(24)]
    temps = [d["temperature"] for d in day]
    assert temps.index(max(temps)) == 15 and temps.index(min(temps)) == 3 and max(temps) == 20.0
    assert day[2]["daylight"] == 0 and day[13]["daylight"] > 0.9
    rainy = [Weather(WeatherSpec(rain_chance=1.0), 3).at(datetime(2025, 6, 1, h))["raining"] for h in range(24)]
    assert 1 <= sum(rainy) <= 6


def test_a_day_of_weather_step_equals_fast_forward_fork_and_restore():
    stepped, fast = weather_home(), weather_home()
    for home in (stepped, fast):
        home.device("w").invoke("WindowCovering", "UpOrOpen")
    for _ in range(24):
        stepped.step(36000)
    fast.advance(12 * 3600)
    fork, restored = fast.fork(), Home.restore(json.loads(dumps(fast)))
    for home in (fast, fork, restored):
        home.advance(12 * 3600)
    assert dumps(stepped) == dumps(fast) == dumps(fork) == dumps(restored)
    events = [(e["device"], e["event"]) for e in fast.events]
    assert ("rain", "StateChange") in events
    # the open window let the room follow the outdoor curve, far below where it started
    assert fast.rooms["r"].temperature < 12.0


def test_outdoor_values_reach_rooms_and_sensors():
    home = weather_home(rain_chance=0.0)
    home.run_until("2025-06-01 13:30:00")
    assert home.ambient["temperature"] == home.outdoor("temperature")
    assert home.rooms["r"].illuminance == 0.0               # the covering is closed
    home.device("w").invoke("WindowCovering", "UpOrOpen")
    home.advance(30)
    assert home.rooms["r"].illuminance == pytest.approx(1000.0 * home.outdoor("daylight"))
    assert home.device("baro").read("PressureMeasurement", "MeasuredValue") == round(home.outdoor("pressure") * 10)
    home.pin_weather({"temperature": -15.0, "raining": True})
    assert home.device("rain").read("BooleanState", "StateValue") is True
    home.advance(6 * 3600)
    assert home.rooms["r"].temperature < 1.0
    assert home.device("frost").read("BooleanState", "StateValue") is True   # the pipes freeze
    assert home.outdoor("temperature") == -15.0
    home.pin_weather({"temperature": None})
    assert home.outdoor("temperature") != -15.0
    with pytest.raises(ValueError, match="weather.temperature"):
        home.pin_weather({"temperature": 99})
    with pytest.raises(ValueError, match="not a weather quantity"):
        home.pin_weather({"snow": 1})
    with pytest.raises(ValueError, match="no weather"):
        Home("x").pin_weather({"temperature": 1})


def test_homes_without_weather_keep_their_snapshots():
    home = Home.default()
    assert "weather" not in home.snapshot() and home.weather is None
    assert "weather" not in HomeSpec.model_validate({"rooms": [{"id": "r"}]}).model_dump()


def test_home_file_weather_and_its_errors(tmp_path):
    good = tmp_path / "good.yaml"
    good.write_text("weather: {mean_c: 30, overrides: {raining: true}}\nrooms: [{id: r}]\n")
    home = Home.load(good)
    assert home.outdoor("raining") is True and home.weather.spec.mean_c == 30
    bad = tmp_path / "bad.yaml"
    bad.write_text("weather: {mean_c: 300}\nrooms: [{id: r}]\n")
    with pytest.raises(UserFileError, match="weather.mean_c"):
        parse_file(bad)
