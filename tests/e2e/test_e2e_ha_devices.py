"""Acceptance, end to end: a real Home Assistant shows the devices of a real home. HA core
2025.4.4 with the python-matter-server it pins (7.0.0; HA 2024.3 has no Matter smoke alarm or
electrical measurement entities) onboards, adds Matter and commissions, by QR payload, one twin
node each of (tests/homeassistant/devices.yaml):
- a door lock that requires a PIN: lock.unlock / lock.lock with the PIN move the twin's bolt
  (timed invokes carrying the PIN); a wrong PIN and no PIN move nothing;
- a contact sensor mounted on a window covering: HA closes and opens the covering, the twin's
  contact follows it and HA's door binary sensor follows the twin;
- an extended colour light: hue/saturation and colour temperature from HA reach the twin, a hue
  set through the twin's tool API reaches HA;
- a smoke alarm: smoke in the room (a scenario event, POST /hand) trips HA's smoke sensor;
- a metered plug: switched on from HA, HA's power sensor shows its load and its energy sensor
  counts up.
One HA start, one namespace (created and deleted by the module). Needs
scripts/install-home-assistant.sh 2025: a missing piece fails loudly, never skips.
"""
from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ha_devices import ha_devices
from ha_lab import INSTALLS, start_hass, start_matter_server
from netns import network_namespace
from test_e2e_home_assistant import HaLab, entity_of, twin_codes
from test_e2e_matter_server import start_twin, stop

pytestmark = pytest.mark.e2e

HOME = Path(__file__).resolve().parents[1] / "homeassistant" / "devices.yaml"
INSTALL = INSTALLS["2025.4.4"]
LOCK, CONTACT, COVER, LIGHT = "front_door", "window_contact", "blinds", "lamp"
SMOKE, PLUG = "smoke_alarm", "kettle_plug"
PIN, WRONG_PIN, LOAD_WATTS = "1234", "9876", 1800.0


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HaLab]:
    workdir = tmp_path_factory.mktemp("ha-devices")
    with network_namespace("had") as ns:
        server = start_matter_server(ns, workdir, INSTALL)
        hass = start_hass(ns, workdir, INSTALL)
        twin = None
        try:
            twin = start_twin(ns, workdir, "twin-1.log", "--home", str(HOME))
            yield HaLab(INSTALL, ns, workdir, server, hass, twin)
        finally:
            if twin is not None:
                stop(twin)
            stop(hass)
            stop(server)


def act(lab: HaLab, action: str, *args: Any, timeout: float = 240) -> Any:
    """An ha_devices action inside the namespace; failures carry the three logs."""
    try:
        result = lab.ns.call(ha_devices, action, *args, timeout=timeout, token=lab.token)
    except Exception as err:
        raise AssertionError(f"{err}\n{lab.logs()}") from None
    print(action, json.dumps(result, indent=1, default=str))
    return result


def test_onboard_add_matter_and_commission(lab: HaLab):
    lab.token = lab.call("onboard")["token"]
    assert lab.call("add_matter")["result"]["type"] == "create_entry"
    codes = twin_codes(lab)
    for device in (LOCK, CONTACT, COVER, LIGHT, SMOKE, PLUG):
        added = lab.call("commission", codes[device]["qr_code"])
        assert added["device"]["name"] == codes[device]["name"], added["device"]
        lab.found[device] = added["entities"]
    found = lab.found
    lab.found["lock entity"] = entity_of(found[LOCK], "lock")
    lab.found["contact entity"] = entity_of(found[CONTACT], "binary_sensor", "door")
    lab.found["cover entity"] = entity_of(found[COVER], "cover")
    lab.found["light entity"] = entity_of(found[LIGHT], "light")
    lab.found["smoke entity"] = entity_of(found[SMOKE], "binary_sensor", "smoke")
    lab.found["plug switch"] = entity_of(found[PLUG], "switch")
    lab.found["power entity"] = entity_of(found[PLUG], "sensor", "power")
    lab.found["energy entity"] = entity_of(found[PLUG], "sensor", "energy")
    main = [lab.found[k] for k in ("lock entity", "contact entity", "cover entity", "light entity",
                                   "smoke entity", "plug switch", "power entity", "energy entity")]
    states = {e["entity_id"]: e["state"] for device in (LOCK, CONTACT, COVER, LIGHT, SMOKE, PLUG)
              for e in found[device]}
    assert all(states[e] not in (None, "unavailable", "unknown") for e in main), states
    # Battery devices show their battery; the lock its door (the door position sensor).
    for device in (LOCK, CONTACT, SMOKE):
        assert any(e["device_class"] == "battery" for e in found[device]), found[device]
    assert states[lab.found["lock entity"]] == "locked"
    assert states[lab.found["contact entity"]] == "on"       # the covering starts open
    assert states[lab.found["smoke entity"]] == "off"


def test_lock_unlock_with_pin(lab: HaLab):
    out = act(lab, "lock_with_pin", lab.need("lock entity"), LOCK, PIN, WRONG_PIN)
    assert out["ha before"]["attributes"]["code_format"] == r"^\d{4,8}$", out["ha before"]
    assert out["wrong pin call"].startswith("refused"), out     # the twin answered FAILURE (HA's 500)
    assert out["no pin call"].startswith("refused"), out        # HA's own check against code_format
    # HA shows "unlocking" from its call until the lock reports or 30 s pass; never "unlocked".
    assert out["twin after wrong and no pin"] == 1, out
    assert out["ha after wrong and no pin"] in ("locked", "unlocking"), out
    assert out["pin unlock call"] == "ok" and out["twin after pin unlock"] == 2, out
    assert out["ha after pin unlock"] == "unlocked", out
    assert out["pin lock call"] == "ok" and out["twin after pin lock"] == 1, out
    assert out["ha after pin lock"] == "locked", out


def test_contact_sensor_follows_the_window_covering(lab: HaLab):
    out = act(lab, "contact_follows_covering", lab.need("cover entity"), lab.need("contact entity"), COVER, CONTACT)
    assert out["close call"] == "ok" and out["open call"] == "ok", out
    assert out["twin lift after close"] == 10000 and out["twin lift after open"] == 0, out
    assert out["twin contact after close"] is True and out["ha contact after close"] == "off", out
    assert out["ha cover after close"] == "closed", out
    assert out["twin contact after open"] is False and out["ha contact after open"] == "on", out
    assert out["ha cover after open"] == "open", out


def test_colour_light(lab: HaLab):
    out = act(lab, "colour_light", lab.need("light entity"), LIGHT)
    assert {"hs", "xy", "color_temp"} <= set(out["ha attributes"]["supported_color_modes"]), out
    assert abs(out["twin hue"] - 169) <= 1 and out["twin saturation"] == 254, out
    assert out["twin color mode after hs"] == 0, out        # CurrentHueAndCurrentSaturation
    assert abs(out["twin mireds"] - 370) <= 2 and out["twin color mode after ct"] == 2, out
    assert abs(out["ha color_temp_kelvin"] - 2700) <= 20, out
    assert abs(out["ha hs_color after twin"][0] - 120) <= 2, out
    assert out["ha color_mode after twin"] == "hs", out


def test_smoke_alarm(lab: HaLab):
    out = act(lab, "smoke_alarm", lab.need("smoke entity"), SMOKE)
    assert out["ha before"] == "off", out
    assert out["twin smoke state"] == 2 and out["ha after smoke"] == "on", out
    assert out["twin smoke state cleared"] == 0 and out["ha after clear"] == "off", out


def test_energy_sensor(lab: HaLab):
    out = act(lab, "metered_plug", lab.need("plug switch"), lab.need("power entity"), lab.need("energy entity"),
              PLUG, LOAD_WATTS)
    assert out["on call"] == "ok" and out["twin on"] is True, out
    assert out["ha power on"] == LOAD_WATTS, out
    assert out["ha energy on"] > float(out["ha energy before"]), out
    assert out["ha energy on"] <= out["twin energy kWh"] + 1e-9, out   # HA shows what the twin reported
    assert out["ha power off"] == 0, out
