"""POST /hand: a resident's hand on the twin's devices over HTTP (Home.hand)."""
from fastapi.testclient import TestClient

from bridge.tools import Session
from matter_twin.http import create_app
from twin.home import Home


def client():
    home = Home("hands")
    home.add_room("r")
    home.add_device("lamp", "extended_color_light", "r")
    home.add_device("switch", "on_off_light_switch", "r", options={"bound_to": ["lamp"]})
    home.add_device("charger", "evse", "r")
    home.add_device("tank", "water_heater", "r")
    return TestClient(create_app(home, Session())), home


def test_hands_press_plug_in_and_draw():
    http, home = client()
    assert "plug_in" in http.get("/hand").json()["actions"]
    answer = http.post("/hand", json={"device": "switch", "action": "toggle"}).json()
    assert answer["ok"] and answer["sent"][0]["status"] == "SUCCESS" and home.device("lamp").read("OnOff", "OnOff")
    assert http.post("/hand", json={"device": "charger", "action": "plug_in", "soc_percent": 40}).json()["ok"]
    assert home.device("charger").read("EnergyEvse", "StateOfCharge") == 40
    assert http.post("/hand", json={"device": "tank", "action": "draw_water", "litres": 50}).json()["ok"]
    assert home.device("tank").read("Thermostat", "LocalTemperature") < 5000


def test_bad_hands_are_one_line_and_change_nothing():
    http, home = client()
    before = home.snapshot()
    for body, status, fragment in (
            ({"device": "switch", "action": "dance"}, 400, "unknown action 'dance'; accepted: press"),
            ({"device": "switch", "action": "toggle", "force": 3}, 400, "takes no arguments; not force"),
            ({"device": "nobody", "action": "toggle"}, 400, "no device 'nobody'"),
            ({"device": "lamp", "action": "toggle"}, 400, "is not a switch"),
            ({"device": "charger", "action": "unplug"}, 409, "no car is plugged in"),
            ([1], 400, "body must be")):
        response = http.post("/hand", json=body)
        assert response.status_code == status, (body, response.text)
        assert fragment in response.json()["error"]["message"], response.json()
    assert home.snapshot() == before
