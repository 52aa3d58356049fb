"""Home Assistant beside the twin, for tests/e2e/test_e2e_home_assistant.py.

Two installs (`INSTALLS`, built by scripts/install-home-assistant.sh), each with its processes
started from the test process into the test's namespace:
- python-matter-server, the version that HA release pins, with its own /data (chip-core's ini
  files) through `unshare -m` and a bind mount, and the twin's test PAA in its default PAA
  trust directory (5.7.0 has no --paa-root-cert-dir; 7.0.0 has, with the same default);
- `hass -c DIR --skip-pip`, its HTTP on 127.0.0.1:8123 inside the namespace.

The `ha(...)` actions run INSIDE the namespace (through `Netns.call`, in the project env) and
speak HA's REST and websocket APIs and the twin's HTTP tool API with aiohttp. They take and
return plain data, so the test process only asserts.
"""
from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from netns import REPO, Netns


@dataclass(frozen=True)
class HaInstall:
    """One Home Assistant release and a python-matter-server beside it, as installed by
    `scripts/install-home-assistant.sh SET`."""

    version: str
    matter_server: str    # the python-matter-server server version
    python: str           # the Python both run on
    install_set: str      # install-home-assistant.sh's argument
    venv: Path            # hass (and HA's python-matter-server client, the version HA pins)
    server_venv: Path     # matter-server (the same venv where [server] installs beside HA)
    pinned: bool = True   # the server is the version HA's Matter integration pins

    @property
    def name(self) -> str:
        """The test id: the HA version, plus the server's where HA pins another."""
        return self.version if self.pinned else f"{self.version}-server-{self.matter_server}"


_CACHE = REPO / ".cache"
_HA_2024_VENV = Path(os.environ.get("HA_VENV", _CACHE / "ha-venv"))
INSTALLS = {i.name: i for i in (
    HaInstall("2024.3.3", "5.7.0", "3.11", "2024", _HA_2024_VENV, _HA_2024_VENV),
    # python-matter-server 7.0.0[server] pins aiohttp/cryptography/orjson/zeroconf other than
    # HA 2025.4.4 does: its server has a venv of its own (a separate add-on in a real home).
    HaInstall("2025.4.4", "7.0.0", "3.13", "2025", _CACHE / "ha2025-venv", _CACHE / "ha2025-server-venv"),
    # No HA that installs here pins 8.x; HA 2025.4.4's 7.0.0 client speaks its schema (11), as
    # a home whose Matter server add-on was updated before HA itself.
    HaInstall("2025.4.4", "8.1.2", "3.13", "8x", _CACHE / "ha2025-venv", _CACHE / "ha2025-server8-venv",
              pinned=False),
)}
HA_PORT = 8123
HA_URL = f"http://127.0.0.1:{HA_PORT}"
HA_WS = f"ws://127.0.0.1:{HA_PORT}/api/websocket"
SERVER_PORT = 5580
SERVER_WS = f"ws://127.0.0.1:{SERVER_PORT}/ws"
TWIN_URL = "http://127.0.0.1:8088"   # test_e2e_matter_server.HTTP_PORT: start_twin serves there
CLIENT_ID = f"{HA_URL}/"
HOME_FILE = Path(__file__).resolve().parent / "home.yaml"

CONFIGURATION = f"""\
homeassistant:
  name: matter-twin test
  latitude: 52.37
  longitude: 4.89
  elevation: 0
  unit_system: metric
  time_zone: UTC
  currency: EUR
  country: NL
http:
  server_host: 127.0.0.1
  server_port: {HA_PORT}
logger:
  default: warning
  logs:
    homeassistant.components.matter: debug
    homeassistant.setup: info
    matter_server: info
"""


# --- processes (test process side) -------------------------------------------------------------

def require_ha(install: HaInstall) -> None:
    paths = (install.venv / "bin/python", install.server_venv / "bin/python")
    missing = [str(p) for p in paths if not p.exists()]
    if missing:
        raise AssertionError(f"missing {', '.join(missing)}: run scripts/install-home-assistant.sh "
                             f"{install.install_set} (scripts/install-test-deps.sh calls it)")


def venv_env(venv: Path) -> dict[str, str]:
    """This process's environment for a program of another venv: without the project's
    PYTHONPATH (another Python may run there), with the venv's bin first on PATH."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{venv / 'bin'}:{env.get('PATH', '/usr/bin:/bin')}"
    return env


def paa_root_certs_dir(install: HaInstall) -> Path:
    """python-matter-server's default PAA trust directory, asked of its venv (5.7.0 names it
    PAA_ROOT_CERTS_DIR, 7.0 DEFAULT_PAA_ROOT_CERTS_DIR)."""
    ask = ("from matter_server.server import const as c; "
           "print(getattr(c, 'PAA_ROOT_CERTS_DIR', None) or c.DEFAULT_PAA_ROOT_CERTS_DIR)")
    out = subprocess.run([str(install.server_venv / "bin/python"), "-c", ask],
                         check=True, capture_output=True, text=True, env=venv_env(install.server_venv))
    return Path(out.stdout.strip())


def start_matter_server(ns: Netns, workdir: Path, install: HaInstall) -> subprocess.Popen:
    """python-matter-server with a private /data (bind mount in its own mount namespace;
    `unshare` and `sh -c exec` keep the pid, so `stop()` signals the server itself)."""
    from twin.node.credentials import write_paa_trust_store
    require_ha(install)
    write_paa_trust_store(paa_root_certs_dir(install))   # with the .version stamp: kept, no download
    data = workdir / "chip-data"
    data.mkdir(exist_ok=True)
    os.makedirs("/data", exist_ok=True)
    log = open(workdir / "ha-matter-server.log", "w")
    # `python -m`, not bin/matter-server: a venv that was moved keeps its old path in the shebangs.
    script = (f'mount --bind "{data}" /data && exec "{install.server_venv}/bin/python" -m matter_server.server '
              f'--storage-path "{workdir / "ha-matter-server"}" --listen-address 127.0.0.1 '
              f'--port {SERVER_PORT} --log-level info --log-level-sdk progress')
    return ns.popen(["unshare", "-m", "--propagation", "private", "sh", "-c", script],
                    stdout=log, stderr=subprocess.STDOUT, cwd=str(workdir), env=venv_env(install.server_venv))


def start_hass(ns: Netns, workdir: Path, install: HaInstall) -> subprocess.Popen:
    require_ha(install)
    config = workdir / "ha-config"
    config.mkdir(exist_ok=True)
    (config / "configuration.yaml").write_text(CONFIGURATION)
    log = open(workdir / "hass.log", "w")
    return ns.popen([str(install.venv / "bin/python"), "-m", "homeassistant", "-c", str(config), "--skip-pip"],
                    stdout=log, stderr=subprocess.STDOUT, cwd=str(workdir), env=venv_env(install.venv))


# --- actions inside the namespace (Netns.call) -------------------------------------------------

def ha(action: str, *args: Any, **kwargs: Any) -> Any:
    """Run one action coroutine against HA and the twin; called inside the namespace."""
    return asyncio.run(_session(ACTIONS[action], args, kwargs))


async def _session(func: Any, args: tuple, kwargs: dict) -> Any:
    import aiohttp
    async with aiohttp.ClientSession() as http:
        return await func(Ha(http, kwargs.pop("token", None)), *args, **kwargs)


class Ha:
    """HA's REST and websocket APIs, and the twin's tool API, over one aiohttp session."""

    def __init__(self, http: Any, token: str | None):
        self.http = http
        self.token = token
        self._ws: Any = None
        self._id = 0

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}

    async def get(self, path: str) -> Any:
        async with self.http.get(HA_URL + path, headers=self.headers) as r:
            r.raise_for_status()
            return await r.json()

    async def post(self, path: str, body: Any = None) -> Any:
        async with self.http.post(HA_URL + path, json=body or {}, headers=self.headers) as r:
            text = await r.text()
            if r.status >= 400:
                raise RuntimeError(f"POST {path} {body}: {r.status} {text}")
            return await r.json() if text else None

    async def ws(self, message: dict[str, Any], timeout: float = 120) -> Any:
        """One websocket command; its `result` (raises on success=false)."""
        if self._ws is None:
            self._ws = await self.http.ws_connect(HA_WS, max_msg_size=0)
            assert (await self._ws.receive_json())["type"] == "auth_required"
            await self._ws.send_json({"type": "auth", "access_token": self.token})
            reply = await self._ws.receive_json()
            assert reply["type"] == "auth_ok", reply
        self._id += 1
        await self._ws.send_json({"id": self._id, **message})
        deadline = time.monotonic() + timeout
        while True:
            reply = await asyncio.wait_for(self._ws.receive_json(), max(0.1, deadline - time.monotonic()))
            if reply.get("id") == self._id and reply.get("type") == "result":
                if not reply["success"]:
                    raise RuntimeError(f"{message}: {reply['error']}")
                return reply["result"]

    async def state(self, entity_id: str) -> dict[str, Any]:
        return await self.get(f"/api/states/{entity_id}")

    async def twin_tool(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        async with self.http.post(f"{TWIN_URL}/tools/{name}", json=args) as r:
            result = await r.json()
        assert result["ok"], f"{name} {args}: {result}"
        return result

    async def twin_attribute(self, device: str, endpoint: int, cluster: str, attribute: str) -> Any:
        return (await self.twin_tool("get_attribute", {"device.id": device, "endpoint.id": endpoint,
                                                       "cluster.id": cluster, "attribute.id": attribute}))["value"]


async def wait_ready(ha_: Ha, timeout: float = 180) -> float:
    """Until HA's HTTP answers the onboarding status; seconds waited."""
    started = time.monotonic()
    while True:
        try:
            await ha_.get("/api/onboarding")
            return time.monotonic() - started
        except Exception:
            if time.monotonic() - started > timeout:
                raise
            await asyncio.sleep(0.5)


async def onboard(ha_: Ha) -> dict[str, Any]:
    """Onboarding through the REST API: owner user, token, core config, analytics, integration."""
    out: dict[str, Any] = {"ready seconds": await wait_ready(ha_)}
    out["steps before"] = await ha_.get("/api/onboarding")
    user = await ha_.post("/api/onboarding/users", {"client_id": CLIENT_ID, "name": "Twin Tester",
                                                    "username": "tester", "password": "twin-test-pass",
                                                    "language": "en"})
    async with ha_.http.post(f"{HA_URL}/auth/token", data={
            "grant_type": "authorization_code", "code": user["auth_code"], "client_id": CLIENT_ID}) as r:
        r.raise_for_status()
        ha_.token = (await r.json())["access_token"]
    out["token"] = ha_.token
    await ha_.post("/api/onboarding/core_config")
    await ha_.post("/api/onboarding/analytics")
    await ha_.post("/api/onboarding/integration",
                   {"client_id": CLIENT_ID, "redirect_uri": f"{HA_URL}/?auth_callback=1"})
    out["steps after"] = await ha_.get("/api/onboarding")
    out["api"] = await ha_.get("/api/")
    return out


async def add_matter(ha_: Ha, url: str = SERVER_WS) -> dict[str, Any]:
    """The Matter config flow (not on a supervisor: the `manual` step asks for the server URL)."""
    out: dict[str, Any] = {}
    deadline = time.monotonic() + 90
    flow = await ha_.post("/api/config/config_entries/flow", {"handler": "matter", "show_advanced_options": False})
    out["first step"] = {k: flow.get(k) for k in ("type", "step_id", "errors")}
    while True:   # the server may still be starting: the flow answers cannot_connect
        result = await ha_.post(f"/api/config/config_entries/flow/{flow['flow_id']}", {"url": url})
        if result.get("type") == "create_entry" or time.monotonic() > deadline:
            break
        out.setdefault("retries", []).append(result.get("errors"))
        await asyncio.sleep(2)
    out["result"] = {k: result.get(k) for k in ("type", "title", "errors", "reason")}
    # The entry loads (connects to the server, starts listening).
    while True:
        entries = [e for e in await ha_.get("/api/config/config_entries/entry") if e["domain"] == "matter"]
        out["entries"] = [{k: e.get(k) for k in ("state", "title", "reason")} for e in entries]
        if (entries and entries[0]["state"] == "loaded") or time.monotonic() > deadline:
            return out
        await asyncio.sleep(0.5)


async def _matter_devices(ha_: Ha) -> dict[str, dict[str, Any]]:
    devices = await ha_.ws({"type": "config/device_registry/list"})
    return {d["id"]: d for d in devices
            if any(i[0] == "matter" for i in d.get("identifiers", []))}


async def _device_entities(ha_: Ha, device_id: str) -> list[dict[str, Any]]:
    entities = await ha_.ws({"type": "config/entity_registry/list"})
    out = []
    for e in entities:
        if e["device_id"] == device_id:
            try:
                state = await ha_.state(e["entity_id"])
            except Exception:
                state = {"state": None, "attributes": {}}
            out.append({"entity_id": e["entity_id"], "domain": e["entity_id"].split(".")[0],
                        "state": state["state"], "device_class": state["attributes"].get("device_class"),
                        "unit": state["attributes"].get("unit_of_measurement"),
                        "original_device_class": e.get("original_device_class")})
    return out


async def commission(ha_: Ha, code: str, settle: float = 20) -> dict[str, Any]:
    """`matter/commission` with a QR payload or a manual code; the device HA added for it and
    its entities once every one of them has left `unavailable`/`unknown` (or `settle` s)."""
    before = set(await _matter_devices(ha_))
    started = time.monotonic()
    await ha_.ws({"type": "matter/commission", "code": code, "network_only": True}, timeout=180)
    out: dict[str, Any] = {"commission seconds": time.monotonic() - started}
    deadline = time.monotonic() + 60
    while True:
        new = {k: v for k, v in (await _matter_devices(ha_)).items() if k not in before}
        if new or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.3)
    assert len(new) == 1, f"devices added: {new}"
    device_id, device = next(iter(new.items()))
    out["device"] = {k: device.get(k)
                     for k in ("id", "name", "manufacturer", "model", "sw_version", "identifiers")}
    deadline = time.monotonic() + settle
    while True:
        entities = await _device_entities(ha_, device_id)
        if (entities and all(e["state"] not in (None, "unavailable") for e in entities)) \
                or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.5)
    out["entities"] = entities
    out["entities seconds"] = time.monotonic() - started
    return out


async def service(ha_: Ha, domain: str, name: str, data: dict[str, Any]) -> Any:
    return await ha_.post(f"/api/services/{domain}/{name}", data)


async def wait_twin(ha_: Ha, device: str, endpoint: int, cluster: str, attribute: str,
                    expected: Any, timeout: float = 15) -> tuple[Any, float]:
    """Poll the twin's attribute until it equals `expected`; (last value, seconds)."""
    started = time.monotonic()
    while True:
        value = await ha_.twin_attribute(device, endpoint, cluster, attribute)
        if value == expected or time.monotonic() - started > timeout:
            return value, time.monotonic() - started
        await asyncio.sleep(0.2)


async def wait_ha(ha_: Ha, entity_id: str, expected: Any, attribute: str | None = None,
                  timeout: float = 15) -> tuple[Any, float]:
    """Poll HA's entity state (or one attribute) until it equals `expected`; (last, seconds)."""
    started = time.monotonic()
    while True:
        try:
            state = await ha_.state(entity_id)
            value = state["state"] if attribute is None else state["attributes"].get(attribute)
        except Exception as err:  # HA restarting an entity: keep polling
            value = f"error: {err}"
        if value == expected or time.monotonic() - started > timeout:
            return value, time.monotonic() - started
        await asyncio.sleep(0.2)


async def light_both_ways(ha_: Ha, entity: str, device: str) -> dict[str, Any]:
    out: dict[str, Any] = {"ha before": (await ha_.state(entity))["state"],
                           "twin before": await ha_.twin_attribute(device, 1, "OnOff", "OnOff")}
    # HA -> twin: turn on at brightness 200 (of 255): Matter level round(200*254/255) = 199.
    started = time.monotonic()
    await service(ha_, "light", "turn_on", {"entity_id": entity, "brightness": 200})
    out["twin on"], out["twin on seconds"] = await wait_twin(ha_, device, 1, "OnOff", "OnOff", True)
    out["twin level"], _ = await wait_twin(ha_, device, 1, "LevelControl", "CurrentLevel", 199, timeout=10)
    out["ha after turn_on"], _ = await wait_ha(ha_, entity, "on")
    # OnOff and CurrentLevel arrive as separate reports: wait for the brightness too.
    out["ha brightness"], _ = await wait_ha(ha_, entity, 200, "brightness", timeout=10)
    out["ha->twin seconds"] = time.monotonic() - started
    # twin -> HA: the tool API turns it off; HA's entity follows through the subscription.
    started = time.monotonic()
    await ha_.twin_tool("execute_command", {"device.id": device, "endpoint.id": 1, "cluster.id": "OnOff",
                                           "command.id": "Off", "args": {}})
    out["ha after twin off"], out["twin->ha seconds"] = await wait_ha(ha_, entity, "off")
    # twin -> HA: a level change through the tool API shows as HA brightness.
    await ha_.twin_tool("execute_command", {"device.id": device, "endpoint.id": 1, "cluster.id": "LevelControl",
                                           "command.id": "MoveToLevelWithOnOff",
                                           "args": {"level": 100, "transitionTime": 0,
                                                    "optionsMask": 0, "optionsOverride": 0}})
    out["ha after twin level"], _ = await wait_ha(ha_, entity, "on")
    out["ha brightness after twin level"], _ = await wait_ha(ha_, entity, round(100 * 255 / 254), "brightness")
    return out


async def thermostat_both_ways(ha_: Ha, entity: str, device: str, endpoint: int) -> dict[str, Any]:
    out: dict[str, Any] = {"ha before": await ha_.state(entity)}
    out["twin mode before"] = await ha_.twin_attribute(device, endpoint, "Thermostat", "SystemMode")
    # HA -> twin: cool to 22.5 °C.
    await service(ha_, "climate", "set_hvac_mode", {"entity_id": entity, "hvac_mode": "cool"})
    out["twin mode"], _ = await wait_twin(ha_, device, endpoint, "Thermostat", "SystemMode", 3)
    await service(ha_, "climate", "set_temperature", {"entity_id": entity, "temperature": 22.5})
    out["twin setpoint"], out["ha->twin seconds"] = await wait_twin(
        ha_, device, endpoint, "Thermostat", "OccupiedCoolingSetpoint", 2250)
    out["ha state after"], _ = await wait_ha(ha_, entity, "cool")
    # twin -> HA: the tool API writes the setpoint; HA's target temperature follows.
    await ha_.twin_tool("write_attribute", {"device.id": device, "endpoint.id": endpoint, "cluster.id": "Thermostat",
                                           "attribute.id": "OccupiedCoolingSetpoint", "value": 2400})
    out["ha temperature after twin"], out["twin->ha seconds"] = await wait_ha(ha_, entity, 24.0, "temperature")
    out["twin local temperature"] = await ha_.twin_attribute(device, endpoint, "Thermostat", "LocalTemperature")
    out["ha current_temperature"] = (await ha_.state(entity))["attributes"].get("current_temperature")
    return out


async def sensor_follows_twin(ha_: Ha, lux_entity: str, temp_entity: str, light_entity: str,
                              light: str, room: str) -> dict[str, Any]:
    """The room's illuminance sensor in HA follows the twin's room: the twin's light changes
    the room (physics), the sensor node reports, HA's sensor entity shows it. Both ways round:
    the light switched by the twin's tool API, and by an HA service call."""
    out: dict[str, Any] = {}

    async def lux_pair() -> tuple[float, float]:
        twin_lux = (await ha_.twin_tool("get_room_states", {"room.id": room}))["illuminance"]
        return twin_lux, float((await ha_.state(lux_entity))["state"])

    async def ha_lux_reaches(target: float, timeout: float = 20) -> tuple[float, float]:
        started = time.monotonic()
        while True:
            value = (await ha_.state(lux_entity))["state"]
            try:
                if abs(float(value) - target) <= max(2.0, 0.02 * target):
                    return float(value), time.monotonic() - started
            except ValueError:
                pass
            if time.monotonic() - started > timeout:
                return value, time.monotonic() - started
            await asyncio.sleep(0.2)

    # Start from the light off (the light test may have left it on), HA's sensor settled.
    await ha_.twin_tool("execute_command", {"device.id": light, "endpoint.id": 1, "cluster.id": "OnOff",
                                           "command.id": "Off", "args": {}})
    await ha_lux_reaches((await ha_.twin_tool("get_room_states", {"room.id": room}))["illuminance"])
    out["off: twin lux, ha lux"] = await lux_pair()
    out["ha temperature"] = (await ha_.state(temp_entity))["state"]
    out["twin temperature"] = (await ha_.twin_tool("get_room_states", {"room.id": room}))["temperature"]
    # twin side: the tool API switches the light on; the room brightens; HA's sensor follows.
    await ha_.twin_tool("execute_command", {"device.id": light, "endpoint.id": 1, "cluster.id": "OnOff",
                                           "command.id": "On", "args": {}})
    twin_on = (await ha_.twin_tool("get_room_states", {"room.id": room}))["illuminance"]
    out["twin lux after tool on"] = twin_on
    out["ha lux after tool on"], out["tool->ha sensor seconds"] = await ha_lux_reaches(twin_on)
    # HA side: light.turn_off; the twin's room darkens; HA's sensor follows again.
    await service(ha_, "light", "turn_off", {"entity_id": light_entity})
    await wait_twin(ha_, light, 1, "OnOff", "OnOff", False)
    twin_off = (await ha_.twin_tool("get_room_states", {"room.id": room}))["illuminance"]
    out["twin lux after ha off"] = twin_off
    out["ha lux after ha off"], out["ha->twin->ha sensor seconds"] = await ha_lux_reaches(twin_off)
    return out


async def follow_after_restart(ha_: Ha, entity: str, device: str, timeout: float) -> dict[str, Any]:
    """Right after the twin came back: toggle the light with the tool API, then wait until HA's
    entity shows it (seconds, or None); and whether an HA service call reaches the twin then."""
    out: dict[str, Any] = {"ha state at restart": (await ha_.state(entity))["state"]}
    before = await ha_.twin_attribute(device, 1, "OnOff", "OnOff")
    target = not before
    await ha_.twin_tool("execute_command", {"device.id": device, "endpoint.id": 1, "cluster.id": "OnOff",
                                           "command.id": "On" if target else "Off", "args": {}})
    value, seconds = await wait_ha(ha_, entity, "on" if target else "off", timeout=timeout)
    out["ha state"], out["twin->ha seconds"] = value, seconds
    out["followed"] = value == ("on" if target else "off")
    # HA -> twin after the restart.
    started = time.monotonic()
    try:
        await service(ha_, "light", "toggle", {"entity_id": entity})
        out["twin after ha toggle"], out["ha->twin seconds"] = await wait_twin(
            ha_, device, 1, "OnOff", "OnOff", before, timeout=max(5.0, timeout - seconds))
    except Exception as err:
        out["ha toggle error"] = f"{err} after {time.monotonic() - started:.1f} s"
    return out


async def twin_codes(ha_: Ha) -> list[dict[str, Any]]:
    """The running twin's pairing codes (GET /codes): what its nodes really advertise."""
    import aiohttp
    async with ha_.http.get(f"{TWIN_URL}/codes", timeout=aiohttp.ClientTimeout(total=20)) as r:
        r.raise_for_status()
        return (await r.json())["codes"]


ACTIONS = {
    "twin_codes": twin_codes,
    "onboard": onboard,
    "add_matter": add_matter,
    "commission": commission,
    "light_both_ways": light_both_ways,
    "thermostat_both_ways": thermostat_both_ways,
    "sensor_follows_twin": sensor_follows_twin,
    "follow_after_restart": follow_after_restart,
    "wait_ha": wait_ha,
}

if __name__ == "__main__":   # manual use: python ha_lab.py ACTION (inside a namespace)
    print(ha(sys.argv[1]))
