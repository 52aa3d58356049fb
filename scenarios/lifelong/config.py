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
chance per actionable step that the targeted device is offline for half an hour: an offline
fault) and `latency_ms` (latency faults: what each attempt waits).
"""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from twin.schema import UserFileError, first_problem, read_user_file

__all__ = ["DriftEvent", "Persona", "Scenario", "PRESETS", "load_scenario", "scenario_named"]

Unit = Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)]
Weight = Annotated[float, Field(ge=0, allow_inf_nan=False)]
PREFERENCE_TARGETS = ("autonomy", "privacy")
TOOL_TARGETS = ("failure_prob", "offline_rate", "latency_ms")


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
    #: Rolling-success window, in actionable steps.
    window: Annotated[int, Field(ge=1, le=1000)] = 24
    #: STATIC's calibration phase, in steps.
    calibration_steps: Annotated[int, Field(ge=0)] = 48

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


def _preset(name: str, pref: bool, tool: bool, revisit: bool, gradual: bool = False) -> Scenario:
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
    return Scenario.model_validate({"name": name, "drift": events, "revisit_at": 240 if revisit else None})


#: Built-in scenarios (14 virtual days; drift at step 96, revisit at step 240 for the -r ones).
PRESETS: dict[str, Scenario] = {
    "none": Scenario(name="none"),
    "pref": _preset("pref", True, False, False), "pref-r": _preset("pref-r", True, False, True),
    "pref-gradual": _preset("pref-gradual", True, False, False, gradual=True),
    "tool": _preset("tool", False, True, False), "tool-r": _preset("tool-r", False, True, True),
    "mixed": _preset("mixed", True, True, False), "mixed-r": _preset("mixed-r", True, True, True),
}


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
