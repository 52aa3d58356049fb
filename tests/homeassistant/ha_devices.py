"""Home Assistant actions on a real home's devices (lock, contact sensor on a covering, colour
light, smoke alarm, metered plug), for tests/e2e/test_e2e_ha_devices.py.

Like ha_lab's actions, each runs INSIDE the test's namespace (`Netns.call(ha_devices, ...)`),
speaks HA's REST API and the twin's HTTP API, and returns plain data for the test to assert.
"""
from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from ha_lab import TWIN_URL, Ha, _session, service, wait_ha, wait_twin


def ha_devices(action: str, *args: Any, **kwargs: Any) -> Any:
    return asyncio.run(_session(ACTIONS[action], args, kwargs))


async def hand(ha_: Ha, device: str, action: str, **args: Any) -> dict[str, Any]:
    """A hand on a twin device (POST /hand): a scenario event such as smoke in the room."""
    async with ha_.http.post(f"{TWIN_URL}/hand", json={"device": device, "action": action, **args}) as r:
        result = await r.json()
    assert result["ok"], f"hand {device} {action} {args}: {result}"
    return result


async def until(read: Callable[[], Any], ok: Callable[[Any], bool], timeout: float = 20) -> tuple[Any, float]:
    """Poll `read()` until `ok(value)`; (last value, seconds)."""
    started = time.monotonic()
    while True:
        try:
            value = await read()
        except Exception as err:   # an entity HA is (re)creating: keep polling
            value = f"error: {err}"
        try:
            done = not (isinstance(value, str) and value.startswith("error: ")) and ok(value)
        except (TypeError, ValueError, IndexError):   # not yet a value of the expected shape
            done = False
        if done or time.monotonic() - started > timeout:
            return value, time.monotonic() - started
        await asyncio.sleep(0.2)


async def _call(ha_: Ha, domain: str, name: str, data: dict[str, Any]) -> str:
    """A service call; 'ok' or HA's refusal (the test asserts which)."""
    try:
        await service(ha_, domain, name, data)
        return "ok"
    except RuntimeError as err:
        return f"refused: {str(err)[:400]}"


async def lock_with_pin(ha_: Ha, entity: str, device: str, pin: str, wrong_pin: str) -> dict[str, Any]:
    """lock.unlock / lock.lock with the user's PIN; a wrong PIN and no PIN change nothing."""
    async def lock_state() -> Any:
        return await ha_.twin_attribute(device, 1, "DoorLock", "LockState")

    out: dict[str, Any] = {"ha before": await ha_.state(entity), "twin before": await lock_state()}
    out["wrong pin call"] = await _call(ha_, "lock", "unlock", {"entity_id": entity, "code": wrong_pin})
    out["no pin call"] = await _call(ha_, "lock", "unlock", {"entity_id": entity})
    await asyncio.sleep(4)   # longer than the sleepy lock's slow poll: a late unlock would show
    out["twin after wrong and no pin"] = await lock_state()
    out["ha after wrong and no pin"] = (await ha_.state(entity))["state"]
    out["pin unlock call"] = await _call(ha_, "lock", "unlock", {"entity_id": entity, "code": pin})
    out["twin after pin unlock"], out["ha->twin unlock seconds"] = await wait_twin(
        ha_, device, 1, "DoorLock", "LockState", 2, timeout=20)
    out["ha after pin unlock"], _ = await wait_ha(ha_, entity, "unlocked", timeout=20)
    out["pin lock call"] = await _call(ha_, "lock", "lock", {"entity_id": entity, "code": pin})
    out["twin after pin lock"], _ = await wait_twin(ha_, device, 1, "DoorLock", "LockState", 1, timeout=20)
    out["ha after pin lock"], _ = await wait_ha(ha_, entity, "locked", timeout=20)
    return out


async def contact_follows_covering(ha_: Ha, cover_entity: str, contact_entity: str, cover: str,
                                   contact: str) -> dict[str, Any]:
    """HA closes and opens the covering; the twin's contact sensor mounted on it follows, and so
    does HA's door binary sensor (on = open)."""
    out: dict[str, Any] = {"ha contact before": (await ha_.state(contact_entity))["state"],
                           "ha cover before": (await ha_.state(cover_entity))["state"]}
    for verb, contact_closed, ha_contact, ha_cover in (("close", True, "off", "closed"),
                                                      ("open", False, "on", "open")):
        out[f"{verb} call"] = await _call(ha_, "cover", f"{verb}_cover", {"entity_id": cover_entity})
        out[f"twin contact after {verb}"], out[f"twin contact {verb} seconds"] = await wait_twin(
            ha_, contact, 1, "BooleanState", "StateValue", contact_closed, timeout=30)
        out[f"ha contact after {verb}"], out[f"ha contact {verb} seconds"] = await wait_ha(
            ha_, contact_entity, ha_contact, timeout=30)
        out[f"ha cover after {verb}"], _ = await wait_ha(ha_, cover_entity, ha_cover, timeout=30)
        out[f"twin lift after {verb}"] = await ha_.twin_attribute(
            cover, 1, "WindowCovering", "CurrentPositionLiftPercent100ths")
    return out


async def colour_light(ha_: Ha, entity: str, device: str) -> dict[str, Any]:
    """Hue and saturation, then colour temperature, from HA to the twin; a hue from the twin to HA."""
    async def color(attribute: str) -> Any:
        return await ha_.twin_attribute(device, 1, "ColorControl", attribute)

    out: dict[str, Any] = {"ha attributes": (await ha_.state(entity))["attributes"]}
    out["hs call"] = await _call(ha_, "light", "turn_on", {"entity_id": entity, "hs_color": [240, 100]})
    out["twin hue"], out["ha->twin hue seconds"] = await until(lambda: color("CurrentHue"),
                                                              lambda v: abs(v - 240 * 254 / 360) <= 1)
    out["twin saturation"] = await color("CurrentSaturation")
    out["twin color mode after hs"] = await color("ColorMode")
    out["ct call"] = await _call(ha_, "light", "turn_on", {"entity_id": entity, "color_temp_kelvin": 2700})
    out["twin mireds"], _ = await until(lambda: color("ColorTemperatureMireds"),
                                        lambda v: abs(v - 1_000_000 / 2700) <= 2)
    out["twin color mode after ct"] = await color("ColorMode")
    out["ha color_temp_kelvin"], _ = await until(
        lambda: _attribute(ha_, entity, "color_temp_kelvin"), lambda v: v is not None and abs(v - 2700) <= 20)
    # twin -> HA: the tool API turns the hue to green (85 of 254 is 120°).
    await ha_.twin_tool("execute_command", {"device.id": device, "endpoint.id": 1, "cluster.id": "ColorControl",
                                           "command.id": "MoveToHueAndSaturation",
                                           "args": {"hue": 85, "saturation": 254, "transitionTime": 0,
                                                    "optionsMask": 0, "optionsOverride": 0}})
    out["ha hs_color after twin"], out["twin->ha hue seconds"] = await until(
        lambda: _attribute(ha_, entity, "hs_color"), lambda v: v is not None and abs(v[0] - 120) <= 2)
    out["ha color_mode after twin"] = await _attribute(ha_, entity, "color_mode")
    return out


async def _attribute(ha_: Ha, entity: str, name: str) -> Any:
    return (await ha_.state(entity))["attributes"].get(name)


async def smoke_alarm(ha_: Ha, entity: str, device: str) -> dict[str, Any]:
    """Smoke in the room (a scenario event) trips HA's smoke binary sensor; clearing it clears it."""
    out: dict[str, Any] = {"ha before": (await ha_.state(entity))["state"]}
    await hand(ha_, device, "smoke", level=2)
    out["twin smoke state"] = await ha_.twin_attribute(device, 1, "SmokeCoAlarm", "SmokeState")
    out["ha after smoke"], out["twin->ha smoke seconds"] = await wait_ha(ha_, entity, "on", timeout=20)
    await hand(ha_, device, "smoke", level=0)
    out["twin smoke state cleared"] = await ha_.twin_attribute(device, 1, "SmokeCoAlarm", "SmokeState")
    out["ha after clear"], _ = await wait_ha(ha_, entity, "off", timeout=20)
    return out


async def metered_plug(ha_: Ha, switch_entity: str, power_entity: str, energy_entity: str,
                       device: str, load_watts: float) -> dict[str, Any]:
    """HA switches the plug on: HA's power sensor shows the load and its energy sensor counts up
    with the twin's cumulative energy; off again: no power."""
    def number(entity: str) -> Any:
        async def read() -> float:
            return float((await ha_.state(entity))["state"])
        return read

    out: dict[str, Any] = {"ha power before": (await ha_.state(power_entity))["state"],
                           "ha energy before": (await ha_.state(energy_entity))["state"]}
    out["on call"] = await _call(ha_, "switch", "turn_on", {"entity_id": switch_entity})
    out["twin on"], _ = await wait_twin(ha_, device, 1, "OnOff", "OnOff", True)
    out["ha power on"], out["ha->twin->ha power seconds"] = await until(
        number(power_entity), lambda v: v == load_watts)
    start = float(out["ha energy before"])
    # CumulativeEnergyImported is reported on its sample interval (10 s).
    out["ha energy on"], out["ha energy seconds"] = await until(number(energy_entity), lambda v: v > start, 40)
    twin_energy = await ha_.twin_attribute(device, 1, "ElectricalEnergyMeasurement", "CumulativeEnergyImported")
    out["twin energy kWh"] = twin_energy["energy"] / 1e6
    out["off call"] = await _call(ha_, "switch", "turn_off", {"entity_id": switch_entity})
    out["ha power off"], _ = await until(number(power_entity), lambda v: v == 0)
    return out


ACTIONS = {
    "lock_with_pin": lock_with_pin,
    "contact_follows_covering": contact_follows_covering,
    "colour_light": colour_light,
    "smoke_alarm": smoke_alarm,
    "metered_plug": metered_plug,
}
