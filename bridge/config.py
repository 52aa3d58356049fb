"""The bridge config file: which devices make up a home, and where each one lives.

A YAML (or JSON) file, validated with pydantic. Errors are one line, `UserFileError`:
"<file>: <field>: <problem>".

    name: My flat
    server: ws://127.0.0.1:5580/ws        # default python-matter-server for `matter:` entries
    timeout: 10                           # seconds per Matter operation (commissioning: 120)
    rooms:
      - id: living_room
        name: Living Room
        twin: {home: default, room: living_room}   # optional: room states from a twin room
        sensors:                                   # optional, per state; wins over `twin:`
          temperature: {device: hall_sensor, endpoint: 1}
          humidity: {node_id: 7, endpoint: 2}      # a node python-matter-server already has
          pm10: {pairing_code: "MT:WGKT44QI14296J0DP10"}   # a sensor node, commissioned on first use
    devices:
      - id: lamp                                   # in-process twin device
        room: living_room
        name: Floor lamp
        twin: {home: default, device: living_room_light}   # home: "default" or a home file
      - id: bulb                                   # a node the server already has
        room: living_room
        matter: {node_id: 4, endpoint: 1}
      - id: aircon                                 # commissioned on first use
        room: living_room
        matter: {server: ws://127.0.0.1:5580/ws, pairing_code: "MT:Y.K90AFN00KA0648G00"}
      - id: hall_light                             # behind a Matter bridge, shown as endpoint 1
        room: living_room
        matter: {node_id: 9, endpoint: 7, renumber: {7: 1}}

Node ids learnt by commissioning are remembered in a state file next to the config
(`<stem>.state.json`), so the next run adopts the node instead of commissioning it again.
Relative home paths are relative to the config file.
"""
from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from twin.schema import UserFileError, first_problem, read_user_file

ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$"
STATES = ("temperature", "humidity", "illuminance", "pm10")
DEFAULT_TIMEOUT = 10.0
DEFAULT_COMMISSION_TIMEOUT = 120.0


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _check_url(url: str | None) -> str | None:
    if url is not None and not re.match(r"^wss?://[^/\s]+(/\S*)?$", url):
        raise ValueError(f"server {url!r} is not a WebSocket URL like ws://127.0.0.1:5580/ws")
    return url


def normalize_pairing_code(code: str) -> str:
    """A QR payload ("MT:...") as is, or a manual code (11 or 21 digits) without separators."""
    code = code.strip()
    if code.startswith("MT:"):
        if len(code) < 5:
            raise ValueError(f"pairing code {code!r} is too short for a QR payload")
        return code
    digits = re.sub(r"[\s\-]", "", code)
    if not digits.isdigit() or len(digits) not in (11, 21):
        raise ValueError(f"pairing code {code!r} is neither a QR payload (\"MT:...\") nor a "
                         "manual code of 11 or 21 digits")
    return digits


class MatterRef(_Model):
    """A node on a python-matter-server: by node id, or by pairing code to commission."""
    server: str | None = Field(None, description="python-matter-server WebSocket URL; "
                                  "default: the config's `server`")
    node_id: int | None = Field(None, ge=1)
    pairing_code: str | None = None
    endpoint: int | None = Field(None, ge=0, le=0xFFFE, description="The device's "
                                    "application endpoint; default: every endpoint of the node")
    renumber: dict[int, int] | None = Field(None, description="A device behind a Matter bridge, "
                                               "shown with its own endpoint ids: node endpoint -> id "
                                               "the tools show (e.g. {7: 1, 8: 2}); the device is then "
                                               "exactly these endpoints, without the bridge's root")

    _url = field_validator("server")(classmethod(lambda cls, v: _check_url(v)))

    @field_validator("pairing_code")
    @classmethod
    def _code(cls, value: str | None) -> str | None:
        return None if value is None else normalize_pairing_code(value)

    @model_validator(mode="after")
    def _one_of(self) -> MatterRef:
        if (self.node_id is None) == (self.pairing_code is None):
            raise ValueError("give exactly one of node_id (a node the server has) or "
                             "pairing_code (commission it)")
        if self.renumber is not None:
            shown = list(self.renumber.values())
            if not self.renumber or len(set(shown)) != len(shown):
                raise ValueError("renumber: give each node endpoint its own shown endpoint id")
            if self.endpoint is not None and self.endpoint not in self.renumber:
                raise ValueError(f"renumber: the device's endpoint {self.endpoint} is not renumbered")
        return self


class TwinRef(_Model):
    home: str = Field("default", description="\"default\" or a home file")
    device: str = Field(..., pattern=ID_PATTERN)


class DeviceConfig(_Model):
    id: str = Field(..., pattern=ID_PATTERN)
    room: str
    name: str | None = None
    twin: TwinRef | None = None
    matter: MatterRef | None = None

    @model_validator(mode="after")
    def _where(self) -> DeviceConfig:
        if (self.twin is None) == (self.matter is None):
            raise ValueError("say where the device lives: exactly one of twin: {home, device} "
                             "or matter: {server, node_id | pairing_code, endpoint}")
        return self


class SensorRef(_Model):
    """A measurement endpoint: of a configured device, of a node by id, or of a sensor node by
    pairing code (commissioned on first use, like a device's; refs with the same code share
    one node). Without `endpoint`, the first endpoint with the state's measurement cluster."""
    device: str | None = None
    server: str | None = None
    node_id: int | None = Field(None, ge=1)
    pairing_code: str | None = None
    endpoint: int | None = Field(None, ge=0, le=0xFFFE)

    _url = field_validator("server")(classmethod(lambda cls, v: _check_url(v)))

    @field_validator("pairing_code")
    @classmethod
    def _code(cls, value: str | None) -> str | None:
        return None if value is None else normalize_pairing_code(value)

    @model_validator(mode="after")
    def _one_of(self) -> SensorRef:
        if sum(x is not None for x in (self.device, self.node_id, self.pairing_code)) != 1:
            raise ValueError("give exactly one of device (a configured device id), node_id "
                             "(a node the server has) or pairing_code (a sensor node to "
                             "commission), with endpoint, and server unless the config has one")
        if self.device is not None and self.server is not None:
            raise ValueError("server goes with node_id or pairing_code; a device's server comes "
                             "from its entry")
        return self


class RoomTwin(_Model):
    home: str = "default"
    room: str = Field(..., pattern=ID_PATTERN)


class RoomConfig(_Model):
    id: str = Field(..., pattern=ID_PATTERN)
    name: str | None = None
    twin: RoomTwin | None = None
    sensors: dict[Literal["temperature", "humidity", "illuminance", "pm10"], SensorRef] = {}

    @property
    def display_name(self) -> str:
        return self.name or self.id


class BridgeConfig(_Model):
    name: str = "bridge"
    server: str | None = Field(None, description="default python-matter-server URL")
    timeout: float = Field(DEFAULT_TIMEOUT, gt=0, description="seconds per Matter operation")
    commission_timeout: float = Field(DEFAULT_COMMISSION_TIMEOUT, gt=0)
    rooms: list[RoomConfig] = Field(..., min_length=1)
    devices: list[DeviceConfig] = []

    _url = field_validator("server")(classmethod(lambda cls, v: _check_url(v)))

    @model_validator(mode="after")
    def _references(self) -> BridgeConfig:
        rooms: dict[str, int] = {}
        for i, room in enumerate(self.rooms):
            if room.id in rooms:
                raise ValueError(f"rooms[{i}].id: room {room.id!r} is defined twice")
            rooms[room.id] = i
        devices: dict[str, DeviceConfig] = {}
        for i, device in enumerate(self.devices):
            where = f"devices[{i}]"
            if device.id in devices:
                raise ValueError(f"{where}.id: device {device.id!r} is defined twice")
            devices[device.id] = device
            if device.room not in rooms:
                raise ValueError(f"{where}.room: no room {device.room!r}; rooms: {', '.join(rooms)}")
            if device.matter is not None and device.matter.server is None and self.server is None:
                raise ValueError(f"{where}.matter.server: missing, and the config has no default server")
        for room in self.rooms:
            for state, ref in room.sensors.items():
                where = f"rooms[{rooms[room.id]}].sensors.{state}"
                if ref.device is not None and ref.device not in devices:
                    raise ValueError(f"{where}.device: no device {ref.device!r}; devices: "
                                     + (", ".join(devices) or "none"))
                if ref.device is None and ref.server is None and self.server is None:
                    raise ValueError(f"{where}.server: missing, and the config has no default server")
        return self

    def device(self, device_id: str) -> DeviceConfig | None:
        return next((d for d in self.devices if d.id == device_id), None)

    def server_of(self, ref: MatterRef | SensorRef) -> str:
        server = ref.server or self.server
        assert server is not None, "the config validator requires a server for every Matter device"
        return server


class LoadedConfig:
    """A validated config plus where it came from (for relative paths and the state file)."""

    def __init__(self, config: BridgeConfig, source: str, base_dir: Path | None):
        self.config = config
        self.source = source
        self.base_dir = base_dir

    @property
    def state_path(self) -> Path | None:
        if self.base_dir is None:
            return None
        return self.base_dir / (Path(self.source).stem + ".state.json")

    def home_path(self, home: str) -> str:
        """"default", or the home file's path resolved against the config's folder."""
        if home == "default" or self.base_dir is None:
            return home
        return str((self.base_dir / home).resolve())

    # ---- the state file: node ids learnt by commissioning ----------------------------
    def remembered_node(self, device_id: str, server: str, code: str) -> int | None:
        entry = self._read_state().get("nodes", {}).get(device_id)
        if entry and entry.get("server") == server and entry.get("pairing_code") == code:
            return int(entry["node_id"])
        return None

    def remember_node(self, device_id: str, server: str, code: str, node_id: int) -> None:
        path = self.state_path
        if path is None:
            return
        state = self._read_state()
        state.setdefault("nodes", {})[device_id] = {"server": server, "pairing_code": code,
                                                    "node_id": int(node_id)}
        # Write-then-rename, so a crash never leaves half a state file.
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            json.dump(state, f, indent=2, sort_keys=True)
        os.replace(tmp, path)

    def _read_state(self) -> dict[str, Any]:
        path = self.state_path
        if path is None or not path.exists():
            return {}
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError) as err:
            raise UserFileError(str(path), "(file)", f"unreadable bridge state file: {err}") from None
        return data if isinstance(data, dict) else {}


# ---- loading ------------------------------------------------------------------------

def _error(source: str, exc: ValidationError) -> UserFileError:
    return UserFileError(source, *first_problem(exc, "(config)"))


def parse_config(data: Any, source: str = "<config>", base_dir: Path | None = None) -> LoadedConfig:
    if not isinstance(data, dict):
        raise UserFileError(source, "(top level)", "expected a mapping with rooms and devices; "
                                                 f"got {type(data).__name__}")
    try:
        return LoadedConfig(BridgeConfig.model_validate(data), source, base_dir)
    except ValidationError as exc:
        raise _error(source, exc) from None


def load_config(path: str | Path) -> LoadedConfig:
    """Read and validate a bridge config; every failure is a UserFileError."""
    source = str(path)
    data = read_user_file(path)
    return parse_config(data, source, Path(path).resolve().parent)


def dump_config(config: BridgeConfig) -> str:
    """YAML text of a config (for `twin bridge init`), without unset defaults."""
    data = config.model_dump(exclude_none=True, exclude_defaults=True)
    data = {"name": config.name, **data}
    return str(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))


__all__ = ["BridgeConfig", "DeviceConfig", "LoadedConfig", "MatterRef", "RoomConfig",
           "RoomTwin", "STATES", "SensorRef", "TwinRef", "dump_config", "load_config",
           "normalize_pairing_code", "parse_config"]
