"""A lifelong scenario: horizon, latent persona, drift schedule, feedback and cost weights.

The schema follows DomusMind (Xu, Wan, Xue), Appendices B and C. One step is one virtual hour.
A drift event has a start step `at_step`, a domain `drift_type` (preference or tool), a
`target`, a `mode` (sudden or gradual over `duration` steps) and either an absolute final
value `set` or an additive change `delta`. `revisit_at` (optional) brings every drifted
target back to its pre-drift value at that step: the paper's regime revisit, which is what
forgetting is measured on.

Preference targets are the persona's `autonomy` (automation tolerance α) and `privacy`
(privacy sensitivity π). Tool targets are executor parameters carried out by the home's own
fault engine (twin/faults.py) on every device the routines drive: `failure_prob`
(command_failure faults: the call answers a Matter failure status), `offline_rate` (the
chance per execution attempt that the device is off the network for that attempt: an offline
fault; a retry may find it back), `latency_ms` (latency faults: what each attempt waits;
each attempt's latency varies by up to ±`latency_jitter` of it) and `max_retries` (the
executor's attempts per call drift, e.g. a hub that gives up sooner: `set: 1`).

`severity` scales every drift event's change (1: as written; 0.5: half-way from the start
value to each `set`, half of each `delta`). The tool-drift presets are named by it: `tool`
(strong, severity 1) and `tool-mild` (0.5), the same for `pref` and `mixed`; `with_severity`
is the one mechanism behind both the presets and `twin bench lifelong --sweep`.

The household lives on a diurnal clock: `weather` (twin/weather.py) drives the outdoor and so
the rooms' temperature hour by hour (a home with its own weather keeps it unless the scenario
gives one; a home without gets SUMMER), and `jitter_h` shifts the household's schedule each
virtual day by a seeded whole number of hours in −jitter_h..jitter_h.
"""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from twin.schema import UserFileError, first_problem, read_user_file
from twin.weather import WeatherSpec

__all__ = ["DriftEvent", "Persona", "Scenario", "PRESETS", "SEVERITIES", "SUMMER", "load_scenario", "scenario_named",
           "with_severity"]

Unit = Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)]
Weight = Annotated[float, Field(ge=0, allow_inf_nan=False)]
PREFERENCE_TARGETS = ("autonomy", "privacy")
TOOL_TARGETS = ("failure_prob", "offline_rate", "latency_ms", "max_retries")
#: A warm summer for homes without weather: 20–32 °C outdoors, warmest at 15:00, so the cooling
#: routine has afternoons to act on.
SUMMER = WeatherSpec(mean_c=26.0, swing_c=6.0, day_sigma_c=1.5, humidity=55.0, rain_chance=0.15)
#: Named drift severities of the presets.
SEVERITIES = {"mild": 0.5, "strong": 1.0}


class Persona(BaseModel):
    """The latent persona z = <α, π> and the approval model p = clip(b0 + wα·α + b_k − wπ·π·I_priv)
    of Appendix B.2 (b_k, the template biases, live with the templates in routines.py)."""
    model_config = ConfigDict(extra="forbid")
    autonomy: Unit = 0.9
    privacy: Unit = 0.2
    b0: Annotated[float, Field(allow_inf_nan=False)] = 0.0
    w_autonomy: Weight = 0.9
    w_privacy: Weight = 0.9


class Complaints(BaseModel):
    """Pr(complaint) = clip(γ0 + γmis·[y ≠ x] + γfail·[x = 1 and e = 0]) (Appendix B.2)."""
    model_config = ConfigDict(extra="forbid")
    base: Unit = 0.05
    mismatch: Unit = 0.6
    failure: Unit = 0.3


class Costs(BaseModel):
    """Fixed weights of the per-step cost, shared by every policy (Appendix C.1)."""
    model_config = ConfigDict(extra="forbid")
    confirm: Weight = 1.0
    delay: Weight = 0.2
    unsafe: Weight = 5.0
    execute: Weight = 0.1
    retry: Weight = 0.5
    latency_per_s: Weight = 1.0


class DriftEvent(BaseModel):
    model_config = ConfigDict(extra="forbid")
    at_step: Annotated[int, Field(ge=1)]
    drift_type: Literal["preference", "tool"]
    target: str
    mode: Literal["sudden", "gradual"] = "sudden"
    duration: Annotated[int, Field(ge=0)] = 0
    set: Annotated[float, Field(allow_inf_nan=False)] | None = None
    delta: Annotated[float, Field(allow_inf_nan=False)] | None = None

    @model_validator(mode="after")
    def _consistent(self) -> DriftEvent:
        accepted = PREFERENCE_TARGETS if self.drift_type == "preference" else TOOL_TARGETS
        if self.target not in accepted:
            raise ValueError(f"target: {self.target!r} is not a {self.drift_type} target; accepted: "
                             + ", ".join(accepted))
        if (self.set is None) == (self.delta is None):
            raise ValueError("give exactly one of set (final value) or delta (additive change)")
        if self.mode == "gradual" and self.duration < 1:
            raise ValueError("duration: gradual drift needs duration >= 1 step")
        if self.mode == "sudden" and self.duration:
            raise ValueError("duration: only gradual drift has a duration")
        return self


class Scenario(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: Annotated[str, Field(min_length=1, max_length=80)] = "custom"
    #: Horizon in steps (virtual hours).
    steps: Annotated[int, Field(ge=2, le=24 * 366)] = 24 * 14
    persona: Persona = Persona()
    drift: list[DriftEvent] = []
    revisit_at: Annotated[int, Field(ge=2)] | None = None
    complaints: Complaints = Complaints()
    costs: Costs = Costs()
    #: Attempts per executed call (Appendix B.3 `max_retries`): retries = attempts − 1.
    max_retries: Annotated[int, Field(ge=1, le=10)] = 3
    #: Latency of one attempt when no fault adds any (seconds).
    base_latency_s: Weight = 0.1
    #: Each attempt's latency is scaled by a seeded factor in 1 ± latency_jitter.
    latency_jitter: Annotated[float, Field(ge=0, le=0.9, allow_inf_nan=False)] = 0.2
    #: Rolling-success window, in actionable steps.
    window: Annotated[int, Field(ge=1, le=1000)] = 24
    #: STATIC's calibration phase, in steps.
    calibration_steps: Annotated[int, Field(ge=0)] = 48
    #: Scale of every drift event's change (see the module text); 1 = as written.
    severity: Annotated[float, Field(ge=0, le=2, allow_inf_nan=False)] = 1.0
    #: The outdoor weather (None: the home's own, else SUMMER).
    weather: WeatherSpec | None = None
    #: Daily schedule jitter of the household, in whole hours either way.
    jitter_h: Annotated[int, Field(ge=0, le=6)] = 1

    @model_validator(mode="after")
    def _consistent(self) -> Scenario:
        self.drift = sorted(self.drift, key=lambda e: e.at_step)
        ends: dict[str, int] = {}
        for event in self.drift:
            if event.at_step > self.steps:
                raise ValueError(f"drift: at_step {event.at_step} is after the last step {self.steps}")
            if event.at_step < ends.get(event.target, 0):
                raise ValueError(f"drift: two {event.target} events overlap (one starts at step {event.at_step} "
                                 f"while the gradual one before it runs to step {ends[event.target]})")
            ends[event.target] = event.at_step + event.duration
        if self.revisit_at is not None:
            if not self.drift:
                raise ValueError("revisit_at: there is no drift to come back from")
            last = max(e.at_step + e.duration for e in self.drift)
            if not last < self.revisit_at <= self.steps:
                raise ValueError(f"revisit_at: {self.revisit_at} must come after every drift event "
                                 f"(step {last}) and by the last step {self.steps}")
        return self

    @property
    def drift_step(self) -> int | None:
        """t_drift: the first drift onset."""
        return self.drift[0].at_step if self.drift else None


def with_severity(scenario: Scenario, severity: float) -> Scenario:
    """The scenario at another drift severity, named `<name>@<severity>` (the sweep's points)."""
    data = scenario.model_dump(mode="json")
    return Scenario.model_validate({**data, "name": f"{scenario.name}@{severity:g}", "severity": severity})


def _preset(name: str, pref: bool, tool: bool, revisit: bool, gradual: bool = False,
            severity: float = 1.0) -> Scenario:
    at, mode, duration = 96, ("gradual" if gradual else "sudden"), (48 if gradual else 0)
    events: list[dict[str, Any]] = []
    if pref:   # strong preference drift: low automation tolerance, high privacy sensitivity
        events += [{"at_step": at, "drift_type": "preference", "target": "autonomy", "mode": mode,
                    "duration": duration, "set": 0.2},
                   {"at_step": at, "drift_type": "preference", "target": "privacy", "mode": mode,
                    "duration": duration, "set": 0.9}]
    if tool:   # strong tool drift: failing commands, devices dropping off, slower answers
        events += [{"at_step": at, "drift_type": "tool", "target": "failure_prob", "mode": mode,
                    "duration": duration, "set": 0.5},
                   {"at_step": at, "drift_type": "tool", "target": "offline_rate", "mode": mode,
                    "duration": duration, "set": 0.2},
                   {"at_step": at, "drift_type": "tool", "target": "latency_ms", "mode": mode,
                    "duration": duration, "set": 800}]
    return Scenario.model_validate({"name": name, "drift": events, "revisit_at": 240 if revisit else None,
                                    "severity": severity})


#: Built-in scenarios (14 virtual days; drift at step 96, revisit at step 240 for the -r ones).
#: The plain names are the strong drift (severity 1); `-mild` ones the same schedule at 0.5.
PRESETS: dict[str, Scenario] = {"none": Scenario(name="none")}
for _kind, _pref, _tool in (("pref", True, False), ("tool", False, True), ("mixed", True, True)):
    for _suffix, _revisit in (("", False), ("-r", True)):
        PRESETS[f"{_kind}{_suffix}"] = _preset(f"{_kind}{_suffix}", _pref, _tool, _revisit)
        PRESETS[f"{_kind}{_suffix}-mild"] = _preset(f"{_kind}{_suffix}-mild", _pref, _tool, _revisit,
                                                    severity=SEVERITIES["mild"])
    if _kind == "pref":
        PRESETS["pref-gradual"] = _preset("pref-gradual", True, False, False, gradual=True)


def load_scenario(path: str | Path) -> Scenario:
    """A scenario from YAML/JSON; any problem is one `UserFileError` line."""
    source = str(path)
    data = read_user_file(path)
    if not isinstance(data, dict):
        raise UserFileError(source, "(top level)", f"expected a mapping (name, steps, persona, drift, ...); "
                                                    f"got {type(data).__name__}")
    try:
        return Scenario.model_validate(data)
    except ValidationError as exc:
        raise UserFileError(source, *first_problem(exc, "(scenario)")) from None


def scenario_named(spec: str) -> Scenario:
    """A preset name or a scenario file; unknown names raise ValueError (one line)."""
    if spec in PRESETS:
        return PRESETS[spec]
    if Path(spec).suffix.lower() in (".yaml", ".yml", ".json") or Path(spec).exists():
        return load_scenario(spec)
    raise ValueError(f"unknown scenario {spec!r}; accepted: {', '.join(PRESETS)} or a YAML file")
