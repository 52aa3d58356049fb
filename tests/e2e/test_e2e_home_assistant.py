"""Acceptance, end to end: a real Home Assistant (its Matter integration and a real
python-matter-server) onboards, adds Matter, commissions `twin run`'s nodes and drives them,
all inside a network namespace the module creates per install.
Every test runs against each of `ha_lab.INSTALLS` (the `lab` fixture's param):
- HA core 2024.3.3 (Python 3.11) with python-matter-server 5.7.0;
- HA core 2025.4.4 (Python 3.13) with python-matter-server 7.0.0 (its server in its own venv);
- HA core 2025.4.4 with a python-matter-server 8.1.2 server (no installable HA pins 8.x).

- onboarding and the Matter config flow through HA's REST API;
- the light and the heat pump (a Thermostat endpoint) commissioned by QR payload, the room's
  sensor node by its manual code (`matter/commission` over HA's websocket API); their entities
  and domains;
- a light, a thermostat and a sensor both ways: an HA service call changes the twin (read with
  the twin's HTTP tool API), a change made through the tool API shows in HA's entity;
- the twin restarts on the same --storage and HA follows within 15 s. python-matter-server 5.7.0
  runs no CASE responder, so it cannot take the resumed subscription; it notices the restart
  when the node's granted max interval (at most GRANTED_MAX_INTERVAL_S) passes without a report,
  and subscribes anew. 7.0.0 and 8.1.2 take the resumed subscription.

The home is tests/homeassistant/home.yaml: three nodes whose short discriminators differ, so
the manual code (4 bits of discriminator) reaches the right node (see HOME below).

Needs scripts/install-home-assistant.sh (run by scripts/install-test-deps.sh): a missing
piece fails loudly, never skips. The tests share one module-scoped lab per install and run
in file order within it (pytest groups a module-scoped param's tests together).
"""
from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from ha_lab import HOME_FILE, INSTALLS, HaInstall, ha, start_hass, start_matter_server
from netns import Netns, network_namespace
from test_e2e_matter_server import start_twin, stop, tail

pytestmark = pytest.mark.e2e

#: The home file the twin serves (None: the built-in default home). Three nodes keep HA's start
#: short; the default home's 28 windows and their manual codes are tested against the CHIP
#: controller in tests/node/test_node_windows_discovery.py.
HOME: Path | None = HOME_FILE
LIGHT, HEAT_PUMP, SENSORS, ROOM = "living_room_light", "living_room_heat_pump", "sensors@living_room", "living_room"
THERMOSTAT_ENDPOINT = 2   # the heat pump's Thermostat (0x0301) endpoint
#: How long the restart test waits for HA to follow (issue #13: within 15 s).
RESTART_LIMIT = 15.0
#: The restart test keeps measuring up to this long, so the report says how late HA was.
RESTART_MEASURE = float(os.environ.get("MT_HA_RESTART_MEASURE", RESTART_LIMIT + 5))


@dataclass
class HaLab:
    install: HaInstall
    ns: Netns
    workdir: Path
    server: Any
    hass: Any
    twin: Any
    token: str = ""
    found: dict[str, Any] = field(default_factory=dict)   # what earlier tests learnt (entities)
    twin_log: str = "twin-1.log"

    def logs(self) -> str:
        w, i = self.workdir, self.install
        return (f"--- twin:\n{tail(w / self.twin_log)}\n--- matter-server {i.matter_server}:\n"
                f"{tail(w / 'ha-matter-server.log', 8000)}\n--- hass {i.version} (Python {i.python}):\n"
                f"{tail(w / 'hass.log', 8000)}")

    def call(self, action: str, *args: Any, timeout: float = 240, **kwargs: Any) -> Any:
        """An ha_lab action inside the namespace; failures carry the three logs."""
        if self.token:
            kwargs["token"] = self.token
        try:
            result = self.ns.call(ha, action, *args, timeout=timeout, **kwargs)
        except Exception as err:
            raise AssertionError(f"{err}\n{self.logs()}") from None
        print(action, json.dumps(result, indent=1, default=str))
        return result

    def need(self, key: str) -> Any:
        if key not in self.found:
            pytest.fail(f"an earlier test of this module did not get as far as {key!r}")
        return self.found[key]


def twin_args() -> tuple[str, ...]:
    return ("--home", str(HOME)) if HOME is not None else ()


@pytest.fixture(scope="module", params=list(INSTALLS))
def lab(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[HaLab]:
    """One namespace, twin, python-matter-server and HA per install (the param)."""
    install = INSTALLS[request.param]
    workdir = tmp_path_factory.mktemp(f"ha-{install.name}")
    with network_namespace("ha") as ns:
        server = start_matter_server(ns, workdir, install)
        hass = start_hass(ns, workdir, install)
        twin = None
        try:
            twin = start_twin(ns, workdir, "twin-1.log", *twin_args())
            the_lab = HaLab(install, ns, workdir, server, hass, twin)
            yield the_lab
        finally:
            if twin is not None:
                stop(twin)
            if "the_lab" in locals() and the_lab.twin is not twin:
                stop(the_lab.twin)
            stop(hass)
            stop(server)


def entity_of(entities: list[dict[str, Any]], domain: str, device_class: str | None = None) -> str:
    matches = [e["entity_id"] for e in entities if e["domain"] == domain
               and (device_class is None or e["device_class"] == device_class)]
    assert matches, f"no {domain} entity (device_class {device_class}) in {entities}"
    return matches[0]


def test_onboard_and_add_matter(lab: HaLab):
    onboarded = lab.call("onboard")
    lab.token = onboarded["token"]
    assert onboarded["api"] == {"message": "API running."}
    assert all(step["done"] for step in onboarded["steps after"]), onboarded["steps after"]

    matter = lab.call("add_matter")
    assert matter["first step"]["step_id"] == "manual", matter
    assert matter["result"]["type"] == "create_entry", matter
    assert [e["state"] for e in matter["entries"]] == ["loaded"], matter


def test_commission_by_qr_payload(lab: HaLab):
    codes = twin_codes(lab)
    light = lab.call("commission", codes[LIGHT]["qr_code"])
    heat_pump = lab.call("commission", codes[HEAT_PUMP]["qr_code"])
    lab.found["light"], lab.found["heat pump"] = light, heat_pump

    # The HA devices carry the twin's BasicInformation.
    for added, device in ((light, LIGHT), (heat_pump, HEAT_PUMP)):
        assert added["device"]["manufacturer"] == "matter-twin", added["device"]
        assert added["device"]["name"] == codes[device]["name"], added["device"]
    # Entities, their domains, and none left unavailable.
    light_entity = entity_of(light["entities"], "light")
    climate_entity = entity_of(heat_pump["entities"], "climate")
    lab.found["light entity"], lab.found["climate entity"] = light_entity, climate_entity
    for added in (light, heat_pump):
        assert all(e["state"] not in (None, "unavailable") for e in added["entities"]), added["entities"]
    assert [e for e in light["entities"] if e["entity_id"] == light_entity][0]["state"] == "off"


def twin_codes(lab: HaLab) -> dict[str, dict[str, Any]]:
    """The running twin's pairing codes, by device id (GET /codes: what its nodes advertise)."""
    return {row["device"]: row for row in lab.call("twin_codes")}


def test_commission_by_manual_code(lab: HaLab):
    codes = twin_codes(lab)
    # A manual code carries discriminator >> 8 only: no other node may share the target's.
    short = codes[SENSORS]["discriminator"] >> 8
    sharing = [d for d, r in codes.items() if d != SENSORS and r["discriminator"] >> 8 == short]
    assert not sharing, f"{SENSORS} shares its short discriminator {short} with {sharing}"
    sensors = lab.call("commission", codes[SENSORS]["manual_code"])
    lab.found["sensors"] = sensors
    assert sensors["device"]["name"] == codes[SENSORS]["name"], sensors["device"]
    # HA 2025 adds an `identify` button per endpoint with an Identify cluster (stateless:
    # "unknown" until pressed); 2024.3 makes none. Everything else is a sensor with a value.
    identify = [e for e in sensors["entities"] if e["domain"] == "button" and e["device_class"] == "identify"]
    entities = [e for e in sensors["entities"] if e not in identify]
    assert {e["domain"] for e in entities} == {"sensor"}, sensors["entities"]
    classes = {e["device_class"] for e in entities}
    assert {"temperature", "humidity", "illuminance"} <= classes, entities
    lab.found["lux entity"] = entity_of(entities, "sensor", "illuminance")
    lab.found["temperature entity"] = entity_of(entities, "sensor", "temperature")
    assert all(e["state"] not in (None, "unavailable", "unknown") for e in entities), entities
    assert all(e["state"] == "unknown" for e in identify), identify


def test_light_both_ways(lab: HaLab):
    out = lab.call("light_both_ways", lab.need("light entity"), LIGHT)
    # HA -> twin
    assert out["twin on"] is True and out["twin level"] == 199, out
    assert out["ha after turn_on"] == "on" and out["ha brightness"] == 200, out
    # twin -> HA
    assert out["ha after twin off"] == "off", out
    assert out["ha brightness after twin level"] == round(100 * 255 / 254), out


def test_thermostat_both_ways(lab: HaLab):
    out = lab.call("thermostat_both_ways", lab.need("climate entity"), HEAT_PUMP, THERMOSTAT_ENDPOINT)
    assert out["twin mode"] == 3 and out["twin setpoint"] == 2250, out     # HA -> twin
    assert out["ha state after"] == "cool", out
    assert out["ha temperature after twin"] == 24.0, out                    # twin -> HA
    assert out["ha current_temperature"] == pytest.approx(out["twin local temperature"] / 100, abs=0.2), out


def test_sensor_follows_twin_both_ways(lab: HaLab):
    out = lab.call("sensor_follows_twin", lab.need("lux entity"), lab.need("temperature entity"),
                   lab.need("light entity"), LIGHT, ROOM)
    twin_lux, ha_lux = out["off: twin lux, ha lux"]
    assert ha_lux == pytest.approx(twin_lux, abs=max(2.0, 0.02 * twin_lux)), out
    # the tool API gives temperature in 0.01 °C (as Matter does), HA in °C
    assert float(out["ha temperature"]) == pytest.approx(out["twin temperature"] / 100, abs=0.2), out
    assert out["twin lux after tool on"] > twin_lux, out
    assert isinstance(out["ha lux after tool on"], float), out           # tool API -> twin -> HA
    assert out["twin lux after ha off"] < out["twin lux after tool on"], out
    assert isinstance(out["ha lux after ha off"], float), out            # HA -> twin -> HA


class NotFollowed(AssertionError):
    """HA did not follow the restarted twin in time."""


def test_twin_restarts_on_the_same_storage(lab: HaLab):
    """The twin itself must come back (a crash here is a real failure, not the expected one)."""
    lab.need("light entity")
    assert stop(lab.twin) == 0, tail(lab.workdir / lab.twin_log)
    lab.twin_log = "twin-2.log"
    lab.twin = start_twin(lab.ns, lab.workdir, lab.twin_log, *twin_args())
    lab.found["restarted at"] = time.monotonic()
    log = (lab.workdir / lab.twin_log).read_text()
    assert "PASE session" not in log   # nothing re-commissioned


def test_ha_follows_a_twin_restart_within_15_s(lab: HaLab):
    entity = lab.need("light entity")
    restarted = lab.need("restarted at")
    out = lab.call("follow_after_restart", entity, LIGHT, RESTART_MEASURE, timeout=2 * RESTART_MEASURE + 120)
    out["seconds since the twin was up"] = time.monotonic() - restarted
    print("restart:", json.dumps(out, default=str))
    if not (out["followed"] and out["twin->ha seconds"] <= RESTART_LIMIT):
        raise NotFollowed(f"HA did not show the twin's change within {RESTART_LIMIT} s: {out}")
    if "ha toggle error" in out or out["ha->twin seconds"] > RESTART_LIMIT:
        raise NotFollowed(f"HA's service call did not reach the twin within {RESTART_LIMIT} s: {out}")
