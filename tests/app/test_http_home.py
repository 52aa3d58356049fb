"""The outside world over HTTP: weather and presence (matter_twin/http_home.py), and the scenario
events of locks and sensors as hand actions (POST /hand)."""
from fastapi.testclient import TestClient

from bridge.tools import Session
from matter_twin.http import create_app
from twin.home import Home


def client():
    home = Home("h", seed=1)
    home.set_weather({})
    home.add_room("hall")
    home.add_device("front", "door_lock", "hall", options={"users": [{"name": "Ann", "pin": "1234"}]})
    home.add_device("motion", "occupancy_sensor", "hall")
    return home, TestClient(create_app(home, Session()))


def test_weather_presence_and_events():
    home, http = client()
    assert http.get("/weather").json()["weather"]["temperature"] == home.outdoor("temperature")
    pinned = http.post("/weather", json={"temperature": 33, "raining": False}).json()
    assert pinned["ok"] and pinned["weather"]["temperature"] == 33.0
    assert http.post("/presence", json={"person": "ann", "room": "hall"}).json()["presence"] == {"ann": "hall"}
    assert home.device("motion").read("OccupancySensing", "Occupancy") == 1
    ok = http.post("/hand", json={"device": "front", "action": "keypad", "op": "unlock", "pin": "1234"})
    assert ok.json()["ok"] and home.device("front").read("DoorLock", "LockState") == 2
    assert http.post("/hand", json={"device": "front", "action": "open"}).json()["ok"]
    assert home.device("front").read("DoorLock", "DoorState") == 0


def test_bad_requests_are_one_line_and_change_nothing():
    home, http = client()
    before = home.snapshot()
    for path, body, status, words in [
            ("/weather", {"temperature": 99}, 400, "weather.temperature"),
            ("/weather", {"snow": 1}, 400, "body must be"),
            ("/presence", {"person": "ann", "room": "attic"}, 404, "attic"),
            ("/presence", {"room": "hall"}, 400, "person"),
            ("/hand", {"device": "front", "action": "smoke", "level": 1}, 400, "takes no"),
            ("/hand", {"device": "front", "action": "smoke", "volume": 1}, 400, "level"),
            ("/hand", {"device": "nope", "action": "open"}, 400, "nope"),
            ("/hand", {"device": "front", "action": "keypad", "op": "unlock", "pin": "0000"}, 400, "wrong code")]:
        answer = http.post(path, json=body)
        assert answer.status_code == status, (path, body, answer.text)
        assert words in answer.json()["error"]["message"], answer.json()
    after = home.snapshot()
    after["events"] = before["events"] = []   # a refused keypad entry is logged (LockOperationError)
    lock_state = lambda s: [d for d in s["devices"] if d["id"] == "front"][0]["servers"]["1/DoorLock"]  # noqa: E731
    assert lock_state(after)["attributes"] == lock_state(before)["attributes"]
    assert Home("x").snapshot().get("weather") is None
