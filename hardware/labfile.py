"""The lab file: one YAML file describing a hardware-in-the-loop lab session.

Validated with pydantic; every problem is one line, `UserFileError`: "<file>: <field>: <problem>".

    name: Bench A
    home: default                          # the twin home: "default" or a home file
    controller:                            # exactly one of url / start
      url: ws://127.0.0.1:5580/ws          #   a python-matter-server that is already running
      # start: {storage: lab-server, port: 5580}   # or the lab runs its own (test PAA trusted)
    timeout: 15                            # seconds per Matter operation
    devices:
      - bind: living_room_light            # bound: the real bulb plays this twin device
                                           # (tools address it as living_room_light)
        pairing_code: "3497-011-2332"      # or node_id: 4 (a node the server already has)
        endpoint: 1
        mode: couple                       # couple (real state drives the twin) or shadow
      - id: bench_plug                     # added: a real device in a twin room
        room: kitchen
        node_id: 7
    sensors:                               # a real sensor feeds a twin room's value
      - {room: bedroom, state: temperature, pairing_code: "MT:...", endpoint: 1}
    session:
      sample_interval: 1.0                 # seconds between room-state samples
      script:                              # tool calls, waits and expectations
        - {tool: execute_command, args: {device.id: living_room_light, endpoint.id: 1,
                                         cluster.id: OnOff, command.id: "On", args: {}}}
        - {wait: 2}
        - {tool: get_attribute, args: {device.id: living_room_light, endpoint.id: 1,
                                       cluster.id: OnOff, attribute.id: OnOff},
           expect: {value: true}}
      # or, instead of a script, an agent (scored by goals, like a benchmark episode):
      # agent: {agent: reference, query: "Turn on the living room light.",
      #         goals: [{device: living_room_light, cluster: OnOff, attribute: OnOff, equals: true}]}
      # or benchmark episodes that fit the hardware (hardware/episodes.py):
      # episodes: {ids: [qt2-f-003, qt3-f-010], agent: reference, judge: rule, settle: 1.0}
    shadow: {compare_after: 1.0, tolerance: 0}
    network:                               # optional, seeded: Linux tc netem (needs root) ...
      interfaces: [v0]
      # ... or in the transport of twin nodes standing in for hardware (`twin run --matter --http`):
      # nodes: {url: http://127.0.0.1:8080, devices: [kitchen_light]}
      seed: 7
      delay_ms: 20
      jitter_ms: 5
      loss_percent: 1
      outages: [{at: 10, duration: 3}]     # seconds after the session starts

Relative paths (home file, controller storage) are relative to the lab file.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from bridge.config import ID_PATTERN, STATES, _check_url, normalize_pairing_code
from bridge.tools import TOOL_NAMES
from twin.schema import UserFileError, check_nesting, first_problem, read_user_file

DEFAULT_PORT = 5580


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class StartController(_Model):
    """Run python-matter-server as a child of the session, with its own storage and a PAA
    trust directory holding the public test PAA."""
    storage: str = Field("lab-controller", description="folder for the server's storage, "
                                                        "trust dir and log")
    port: int = Field(DEFAULT_PORT, ge=1, le=65535)
    listen: str = "127.0.0.1"


class Controller(_Model):
    url: str | None = None
    start: StartController | None = None

    _url = field_validator("url")(classmethod(lambda cls, v: _check_url(v)))

    @model_validator(mode="after")
    def _one(self) -> Controller:
        if (self.url is None) == (self.start is None):
            raise ValueError("give exactly one of url (a running python-matter-server) or "
                             "start: {storage, port} (the lab runs one)")
        return self


class _NodeRef(_Model):
    node_id: int | None = Field(None, ge=1)
    pairing_code: str | None = None
    endpoint: int | None = Field(None, ge=0, le=0xFFFE)

    @field_validator("pairing_code")
    @classmethod
    def _code(cls, value: str | None) -> str | None:
        return None if value is None else normalize_pairing_code(value)


class RealDevice(_NodeRef):
    """A real device: bound to a twin device it stands in for, or added to a twin room."""
    id: str = Field(..., pattern=ID_PATTERN)
    bind: str | None = Field(None, pattern=ID_PATTERN, description="twin device it plays")
    room: str | None = Field(None, pattern=ID_PATTERN, description="twin room it is added to")
    name: str | None = None
    mode: Literal["couple", "shadow"] = "couple"

    @model_validator(mode="before")
    @classmethod
    def _bound_id(cls, data: Any) -> Any:
        # A bound device is named by the twin device it plays: tools address it by that id.
        if isinstance(data, dict) and data.get("bind") is not None:
            if data.get("id") not in (None, data["bind"]):
                raise ValueError(f"a bound device is named by the twin device it plays: drop id "
                                 f"{data['id']!r} or make it {data['bind']!r}")
            data = {**data, "id": data["bind"]}
        return data

    @model_validator(mode="after")
    def _check(self) -> RealDevice:
        if (self.node_id is None) == (self.pairing_code is None):
            raise ValueError("give exactly one of node_id (a node the server has) or "
                             "pairing_code (commission it)")
        if (self.bind is None) == (self.room is None):
            raise ValueError("give exactly one of bind (the twin device it plays) or room "
                             "(the twin room it is added to)")
        if self.mode == "shadow" and self.bind is None:
            raise ValueError("mode shadow needs bind: a twin device to shadow")
        return self


class SensorBinding(_NodeRef):
    """A real sensor's reading feeds a twin room's state."""
    room: str = Field(..., pattern=ID_PATTERN)
    state: Literal["temperature", "humidity", "illuminance", "pm10"]
    device: str | None = Field(None, description="a real device of this lab file")

    @model_validator(mode="after")
    def _check(self) -> SensorBinding:
        if sum(x is not None for x in (self.device, self.node_id, self.pairing_code)) != 1:
            raise ValueError("give exactly one of device (a real device of this lab), node_id "
                             "or pairing_code, with endpoint")
        return self


class Step(_Model):
    """One script step: a tool call (with optional expectations) or a wait."""
    tool: str | None = None
    args: dict[str, Any] = {}
    expect: dict[str, Any] | None = Field(None, description="dotted path in the result -> value")
    wait: float | None = Field(None, ge=0, le=3600)

    @model_validator(mode="after")
    def _check(self) -> Step:
        if (self.tool is None) == (self.wait is None):
            raise ValueError("a step is either {tool, args, expect} or {wait: seconds}")
        if self.tool is not None and self.tool not in TOOL_NAMES:
            raise ValueError(f"unknown tool {self.tool!r}; tools: {', '.join(TOOL_NAMES)}")
        return self


class Goal(_Model):
    """After the agent: this attribute must read `equals` (as the tools report it)."""
    device: str = Field(..., pattern=ID_PATTERN)
    endpoint: int | None = Field(None, ge=0, le=0xFFFE)
    cluster: str
    attribute: str
    equals: Any


class AgentSpec(_Model):
    """An agent the benchmark runner can drive, given one request, through the same tools."""
    agent: str = Field(..., description="reference, null or openai:MODEL")
    query: str = Field(..., min_length=1)
    max_steps: int = Field(30, ge=1, le=1000)
    base_url: str | None = Field(None, description="OpenAI-compatible server (openai:MODEL)")
    goals: list[Goal] = []

    @field_validator("agent")
    @classmethod
    def _known(cls, value: str) -> str:
        if value not in ("reference", "null") and not (value.startswith("openai:") and len(value) > 7):
            raise ValueError(f"unknown agent {value!r}; accepted: reference, null, openai:MODEL")
        return value


class EpisodesSpec(_Model):
    """Benchmark episodes run on the mixed home: each episode's home is the twin side, the
    bench's real devices play their bound ids in it; scored by scenarios/simuhome/evaluate.py."""
    ids: list[str] = Field(..., min_length=1, description="episode ids")
    file: str | None = Field(None, description="an episode JSONL file (default: the committed set)")
    agent: str = Field("reference", description="reference, null or openai:MODEL")
    base_url: str | None = Field(None, description="OpenAI-compatible server (openai:MODEL)")
    judge: str = Field("rule", description="rule or openai:MODEL (QT1 and infeasible episodes)")
    max_steps: int = Field(30, ge=1, le=1000)
    settle: float = Field(1.0, ge=0, le=60, description="seconds for the real devices' reports "
                          "after the setup calls and after the agent, before scoring")

    _agent = field_validator("agent")(classmethod(lambda cls, v: AgentSpec._known(v)))

    @field_validator("judge")
    @classmethod
    def _judge(cls, value: str) -> str:
        if value != "rule" and not (value.startswith("openai:") and len(value) > 7):
            raise ValueError(f"unknown judge {value!r}; accepted: rule, openai:MODEL")
        return value


class SessionSpec(_Model):
    sample_interval: float = Field(1.0, gt=0, le=3600)
    script: list[Step] = Field(default_factory=list)
    agent: AgentSpec | None = None
    episodes: EpisodesSpec | None = None

    @model_validator(mode="after")
    def _one(self) -> SessionSpec:
        if sum((bool(self.script), self.agent is not None, self.episodes is not None)) > 1:
            raise ValueError("a session runs either a script, an agent or episodes, only one of them")
        return self


class ShadowSpec(_Model):
    compare_after: float = Field(1.0, ge=0, le=600, description="seconds after a command "
                                 "when real and twin are compared")
    tolerance: float = Field(0, ge=0, description="allowed absolute difference of numbers")


class Outage(_Model):
    at: float = Field(..., ge=0)
    duration: float = Field(..., gt=0)


class TwinNodes(_Model):
    """Twin Matter nodes standing in for hardware (`twin run --matter --http PORT`): the
    conditions act in their transport, as the fault engine's latency, loss and offline faults."""
    url: str = Field(..., pattern=r"^https?://", description="the twin's HTTP API")
    devices: list[str] = Field(..., min_length=1, description="device ids in that twin's home")


class NetworkSpec(_Model):
    interfaces: list[str] | None = Field(None, min_length=1, description="tc netem on these")
    nodes: TwinNodes | None = Field(None, description="or in these twin nodes' transport")
    seed: int = 0
    delay_ms: float = Field(0, ge=0, le=10000)
    jitter_ms: float = Field(0, ge=0, le=10000)
    loss_percent: float = Field(0, ge=0, le=100)
    outages: list[Outage] = []
    random_outages: int = Field(0, ge=0, le=100, description="extra outages at seeded times")
    outage_seconds: float = Field(2.0, gt=0, description="length of each seeded outage")
    horizon: float = Field(60.0, gt=0, description="seeded outages fall within this many seconds")

    @model_validator(mode="after")
    def _where(self) -> NetworkSpec:
        if (self.interfaces is None) == (self.nodes is None):
            raise ValueError("give exactly one of interfaces (tc netem) or nodes: {url, devices} "
                             "(twin nodes' transport)")
        if self.nodes is not None and self.jitter_ms:
            raise ValueError("jitter_ms: a twin node's transport delays by a fixed time; jitter "
                             "needs tc netem (interfaces)")
        return self


class LabSpec(_Model):
    name: str = "lab"
    home: str = "default"
    controller: Controller
    timeout: float = Field(15.0, gt=0)
    commission_timeout: float = Field(120.0, gt=0)
    devices: list[RealDevice] = []
    sensors: list[SensorBinding] = []
    session: SessionSpec = SessionSpec()
    shadow: ShadowSpec = ShadowSpec()
    network: NetworkSpec | None = None

    @model_validator(mode="after")
    def _unique(self) -> LabSpec:
        seen: set[str] = set()
        for i, device in enumerate(self.devices):
            if device.id in seen:
                raise ValueError(f"devices[{i}].id: device {device.id!r} is listed twice")
            seen.add(device.id)
        bound = [d.bind for d in self.devices if d.bind]
        for i, device in enumerate(self.devices):
            if device.bind is not None and bound.count(device.bind) > 1:
                raise ValueError(f"devices[{i}].bind: twin device {device.bind!r} is bound twice")
        for i, sensor in enumerate(self.sensors):
            if sensor.device is not None and sensor.device not in seen:
                raise ValueError(f"sensors[{i}].device: no real device {sensor.device!r}; devices: "
                                 + (", ".join(sorted(seen)) or "none"))
        return self


class Lab:
    """A validated lab file plus where it came from."""

    def __init__(self, spec: LabSpec, source: str, base_dir: Path):
        self.spec = spec
        self.source = source
        self.base_dir = base_dir

    def path(self, relative: str) -> Path:
        return (self.base_dir / relative).resolve()

    @property
    def home_path(self) -> str:
        return "default" if self.spec.home == "default" else str(self.path(self.spec.home))

    def default_recording(self) -> Path:
        return self.base_dir / (Path(self.source).stem + ".session.sqlite")

    def error(self, field: str, problem: str) -> UserFileError:
        return UserFileError(self.source, field, problem)


def parse_lab(data: Any, source: str = "<lab>", base_dir: Path | None = None) -> Lab:
    if not isinstance(data, dict):
        raise UserFileError(source, "(top level)", "expected a mapping with controller, devices "
                            f"and session; got {type(data).__name__}")
    check_nesting(data, source)
    try:
        spec = LabSpec.model_validate(data)
    except ValidationError as exc:
        raise UserFileError(source, *first_problem(exc, "(lab)")) from None
    return Lab(spec, source, base_dir or Path.cwd())


def load_lab(path: str | Path) -> Lab:
    """Read and validate a lab file; every failure is one-line UserFileError."""
    source = str(path)
    data = read_user_file(path)
    return parse_lab(data, source, Path(path).resolve().parent)


def example_lab(url: str | None = None) -> str:
    """The text `twin lab init` writes: a commented starting point."""
    controller = f"  url: {url}" if url else "  start: {storage: lab-controller, port: 5580}"
    return f"""# A hardware-in-the-loop lab session (see `twin lab --help`).
name: My bench
home: default                 # the twin home: "default" or a home file
controller:
{controller}
devices: []
  # - {{bind: living_room_light, pairing_code: "34970112332", endpoint: 1}}
  # - {{id: bench_plug, room: kitchen, node_id: 7}}
sensors: []
  # - {{room: bedroom, state: temperature, pairing_code: "MT:...", endpoint: 1}}
session:
  sample_interval: 1.0
  script:
    - {{tool: get_rooms, args: {{}}}}
    - {{wait: 1}}
    - {{tool: get_room_states, args: {{room.id: living_room}}}}
  # or, instead of the script, benchmark episodes that fit these devices (the others are
  # dropped with the reason): episodes: {{ids: [qt3-f-044, qt3-f-026], agent: reference}}
"""


__all__ = ["Controller", "EpisodesSpec", "Lab", "LabSpec", "RealDevice", "STATES", "SensorBinding", "Step",
           "example_lab", "load_lab", "parse_lab"]
