"""A no-reset lifelong run of the twin home (DomusMind §3.1, Appendix B).

One step is one virtual hour: the home is fast-forwarded an hour, drift is applied, the
routines observe the home and propose at most one candidate call ĉ_t, the policy picks a
meta-action (EXECUTE, ASKCONFIRM, DELAY, NOOP), the latent persona's approval y_t is sampled,
the call is executed through the tool set when x_t = 1, and feedback goes back to the policy.

Execution is real: `execute_command` on the twin through bridge/tools.py, up to `max_retries`
attempts a few virtual seconds apart. Tool drift is the home's fault engine (twin/faults.py):
command_failure and latency faults scheduled at the drift onset on every routine device, and
an offline fault for an attempt when that attempt's offline draw comes up. Each onset and end
is in `home.events`. The run is in process (TwinBackend), or over Matter with `serve`: the
same tool calls then go through python-matter-server to the home served as a Matter node.

The household's day: the scenario's weather (or the home's) drives the rooms' temperature, so
the cooling routine follows the afternoon heat; the schedule shifts by a seeded jitter each
day; arrivals and deliveries are real acts on the lock and the doorbell (routines.py).

Randomness: two `random.Random` streams seeded from the run seed (world events, approvals and
complaints), and per-day (schedule jitter) and per-step (the executor's offline and latency
draws, attempt by attempt) ones keyed by the seed and the step, never the global RNG or the wall clock; so the same seed
gives the same trajectory for any policy up to the policy's own choices.
"""
from __future__ import annotations

import contextlib
import random
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any, Protocol

from bridge.tools import Session, call_tool
from bridge.twin_backend import TwinBackend
from scenarios.lifelong.config import SUMMER, Scenario
from scenarios.lifelong.routines import Routines, routines_for, template_bias
from twin.faults import FaultSpec
from twin.home import Home

__all__ = ["ACTIONS", "Policy", "approval_probability", "lifelong_home", "persona_at", "tool_parameters_at",
           "run_lifelong"]

ACTIONS = ("EXECUTE", "ASKCONFIRM", "DELAY", "NOOP")
RETRY_BACKOFF_S = 2.0
#: An attempt's outage: over before the retry RETRY_BACKOFF_S later.
OFFLINE_S = 1.0
HOUR_S = 3600.0


class Policy(Protocol):
    name: str
    #: True only for ORACLE: it is shown the true persona z_t.
    sees_persona: bool

    def decide(self, step: dict[str, Any], persona: dict[str, float] | None) -> str: ...

    def feedback(self, step: dict[str, Any]) -> None: ...


HOME_FILE = Path(__file__).with_name("home.yaml")


def lifelong_home(seed: int = 0) -> Home:
    """The suite's default home (scenarios/lifelong/home.yaml) with this seed."""
    return Home.load(HOME_FILE, seed)


def approval_probability(scenario: Scenario, persona: dict[str, float], template_id: str, private: bool) -> float:
    """p_t = clip_[0,1](b0 + wα·α_t + b_k − wπ·π_t·I_priv) (Appendix B.2)."""
    model = scenario.persona
    p = (model.b0 + model.w_autonomy * persona["autonomy"] + template_bias(template_id)
         - model.w_privacy * persona["privacy"] * (1 if private else 0))
    return float(min(1.0, max(0.0, p)))


def _drifted(start: float, events: list[Any], t: int, revisit_at: int | None, clamp: float | None,
             severity: float = 1.0) -> float:
    """A drifting value at step t: sudden events jump at at_step; gradual ones interpolate
    linearly from the onset value to the final value over `duration` steps, then hold it.
    `severity` scales each event's change (the final value is that fraction of the way)."""
    value = start
    if revisit_at is not None and t >= revisit_at:
        return start
    for event in events:
        if t < event.at_step:
            break
        change = (event.set - value) if event.set is not None else event.delta
        final = value + severity * change
        if clamp is not None:
            final = min(clamp, max(0.0, final))
        if event.mode == "gradual" and t < event.at_step + event.duration:
            value = value + (final - value) * (t - event.at_step) / event.duration
        else:
            value = final
    return value


def persona_at(scenario: Scenario, t: int) -> dict[str, float]:
    """z_t = <α_t, π_t> at step t."""
    out = {}
    for target in ("autonomy", "privacy"):
        events = [e for e in scenario.drift if e.drift_type == "preference" and e.target == target]
        out[target] = round(_drifted(getattr(scenario.persona, target), events, t, scenario.revisit_at, 1.0,
                                     scenario.severity), 6)
    return out


def tool_parameters_at(scenario: Scenario, t: int) -> dict[str, float]:
    """The executor parameters the tool-drift schedule sets at step t (0 without drift: the
    twin's devices do not fail on their own). The run draws offline_rate from here; failure
    probability and latency are faults, and its log shows what the fault engine has in effect."""
    out = {}
    for target in ("failure_prob", "offline_rate", "latency_ms"):
        events = [e for e in scenario.drift if e.drift_type == "tool" and e.target == target]
        out[target] = round(_drifted(0.0, events, t, scenario.revisit_at, 1.0 if target != "latency_ms" else None,
                                     scenario.severity), 6)
    events = [e for e in scenario.drift if e.drift_type == "tool" and e.target == "max_retries"]
    retries = _drifted(float(scenario.max_retries), events, t, scenario.revisit_at, None, scenario.severity)
    out["max_retries"] = min(10, max(1, round(retries)))
    return out


def _schedule_tool_faults(home: Home, scenario: Scenario, devices: tuple[str, ...]) -> None:
    """command_failure and latency faults for each tool-drift event, on every routine device.
    A gradual event ramps in over its duration (the fault engine's gradual transition); a
    revisit ends the fault at `revisit_at`."""
    for i, event in enumerate(scenario.drift):
        if event.drift_type != "tool" or event.target in ("offline_rate", "max_retries"):
            continue
        kind = "command_failure" if event.target == "failure_prob" else "latency"
        change = event.set if event.set is not None else event.delta
        assert change is not None
        severity = scenario.severity * change
        if kind == "command_failure":
            severity = min(1.0, max(0.0, severity))
        ramp = event.duration * HOUR_S if event.mode == "gradual" else 0.0
        duration = None
        if scenario.revisit_at is not None:
            duration = (scenario.revisit_at - event.at_step) * HOUR_S - ramp
        for device in devices:
            home.faults.add(FaultSpec(
                id=f"drift{i}-{kind}-{device}", device=device, kind=kind, at=event.at_step * HOUR_S,
                duration=duration, transition="gradual" if ramp else "abrupt", ramp=ramp, severity=severity))


def _execute(home: Home, backend: Any, scenario: Scenario, args: dict[str, Any], tools: dict[str, float],
             draws: random.Random, guard: Any, t: int) -> dict[str, Any]:
    """Attempt the call up to the drifted `max_retries` times; the tool outcome of Table 3. Per
    attempt: the device drops off the network with probability offline_rate (an offline fault
    for that attempt only: a retry may find it back), and the latency is drawn around the base
    plus the latency fault's (latency_jitter). `draws` is keyed by seed and step, so the same
    attempt draws the same whatever the policy did before."""
    device = args["device.id"]
    latency, offline, error = 0.0, False, None
    session = Session()
    attempts = 0
    for attempt in range(int(tools["max_retries"])):
        if attempt:
            with guard:
                home.advance(RETRY_BACKOFF_S)
        attempts += 1
        spread = scenario.latency_jitter
        latency += (scenario.base_latency_s + home.faults.strength(device, "latency") / 1000.0) \
            * (1.0 + draws.uniform(-spread, spread))
        if draws.random() < tools["offline_rate"]:
            with guard:
                home.faults.add(FaultSpec(id=f"offline-{t}-{attempt}", device=device, kind="offline",
                                          duration=OFFLINE_S))
        result = call_tool(backend, "execute_command", args, session)
        if result.get("ok"):
            return {"attempted": True, "success": True, "latency_s": round(latency, 6), "retries": attempts - 1,
                    "error": None, "device_offline": offline}
        if result["error"]["code"] == "UNAVAILABLE":
            offline, error = True, "device_offline"
        else:
            error = "execution_failed"
    return {"attempted": True, "success": False, "latency_s": round(latency, 6), "retries": attempts - 1,
            "error": error, "device_offline": offline}


def _not_attempted() -> dict[str, Any]:
    return {"attempted": False, "success": False, "latency_s": 0.0, "retries": 0, "error": None,
            "device_offline": False}


def _cost(scenario: Scenario, action: str, violation: int, outcome: dict[str, Any]) -> float:
    c = scenario.costs
    total = (c.confirm * (action == "ASKCONFIRM") + c.delay * (action == "DELAY") + c.unsafe * violation
             + c.execute * outcome["attempted"] + c.retry * outcome["retries"] + c.latency_per_s * outcome["latency_s"])
    return round(float(total), 6)


def run_lifelong(scenario: Scenario, policy: Policy, seed: int = 0, home: Home | None = None,
                 progress: Callable[[int], None] | None = None, serve: Any = None) -> list[dict[str, Any]]:
    """Run `policy` for scenario.steps steps; returns the trajectory (one JSON-ready dict a step,
    actionable or not). `home` defaults to the suite's home (home.yaml: it has a front door lock
    and a doorbell) with this seed; the routines are built from its devices (a home without a light
    raises ValueError).

    `serve`: run over Matter. A context manager factory (scenarios/over_matter.py MatterServing)
    that serves the home as a Matter node and yields the backend the routines and the executor
    call the tools on; its `lock` guards the home, which this loop changes directly (the clock,
    the household's acts, offline faults) while the node answers from its own thread."""
    home = lifelong_home(seed) if home is None else home
    if scenario.weather is not None:
        home.set_weather(scenario.weather)
    elif home.weather is None:
        home.set_weather(SUMMER)
    routines: Routines = routines_for(home)
    _schedule_tool_faults(home, scenario, routines.devices)
    if serve is None:
        return _loop(scenario, policy, seed, home, routines, TwinBackend(home), contextlib.nullcontext(), progress)
    with serve(home) as backend:
        return _loop(scenario, policy, seed, home, routines, backend, serve.lock, progress)


def _loop(scenario: Scenario, policy: Policy, seed: int, home: Home, routines: Routines, backend: Any,
          guard: Any, progress: Callable[[int], None] | None) -> list[dict[str, Any]]:
    world_rng = random.Random(f"lifelong world|{seed}")
    user_rng = random.Random(f"lifelong user|{seed}")
    begin = home.now
    start_hour = begin.hour
    trajectory: list[dict[str, Any]] = []
    for t in range(1, scenario.steps + 1):
        with guard:
            home.run_until(begin + timedelta(hours=t))
        persona = persona_at(scenario, t)
        tools = tool_parameters_at(scenario, t)
        # What the fault engine has in effect now (a gradual fault also ramps back down after a revisit).
        for target, kind in (("failure_prob", "command_failure"), ("latency_ms", "latency")):
            tools[target] = round(max(home.faults.strength(d, kind) for d in routines.devices), 6)
        active = [i for i, e in enumerate(scenario.drift) if e.at_step <= t
                  and (scenario.revisit_at is None or t < scenario.revisit_at)]
        day = (start_hour + t) // 24
        shift = random.Random(f"lifelong schedule|{seed}|{day}").randint(-scenario.jitter_h, scenario.jitter_h)
        world = routines.observe(backend, (start_hour + t) % 24, world_rng, shift)
        with guard:
            household = routines.household_before(home, world)
        candidates = routines.eligible(world)
        template = world_rng.choice(candidates) if candidates else None
        event = ("doorbell" if world["delivery"] else f"arrival:{world['arriving']}" if world["arriving"]
                 else world["motion"] and f"motion:{world['motion']}")
        obs = {"t": t, "time": home.clock.format(), "hour": world["hour"], "temp": world["temperature"],
               "occupancy": world["occupancy"], "event": event}
        step: dict[str, Any] = {"t": t, "obs": obs, "suggestion": None, "action": None,
                                "persona": persona, "tool_params": tools, "schedule_shift_h": shift,
                                "drift_flags": {"active": bool(active), "events": active}}
        if template is not None:
            suggestion = template.call()
            p = approval_probability(scenario, persona, template.id, template.privacy_sensitive)
            y = int(user_rng.random() < p)
            complaint_draw = user_rng.random()
            step["suggestion"] = suggestion
            action = policy.decide(step, persona if policy.sees_persona else None)
            if action not in ACTIONS:
                raise ValueError(f"policy {policy.name} answered {action!r}; accepted: {', '.join(ACTIONS)}")
            x = int(action == "EXECUTE" or (action == "ASKCONFIRM" and y == 1))
            draws = random.Random(f"lifelong executor|{seed}|{t}")
            outcome = _execute(home, backend, scenario, template.tool_args(), tools, draws, guard, t) \
                if x else _not_attempted()
            e = int(outcome["success"])
            violation = int(suggestion["privacy_sensitive"] and x == 1 and y == 0)
            if action == "ASKCONFIRM":
                feedback: dict[str, Any] = {"approved": bool(y), "complaint": False,
                                            "reason": "approved" if y else "denied"}
            else:
                cm = scenario.complaints
                pc = min(1.0, max(0.0, cm.base + cm.mismatch * (y != x) + cm.failure * (x == 1 and e == 0)))
                reason = ("execution_failed" if x and not e else "unwanted" if x and not y
                          else "missed" if y and not x else "none")
                feedback = {"approved": None, "complaint": complaint_draw < pc, "reason": reason}
            step.update({"action": action, "p_approve": round(p, 6), "y": y, "x": x, "e": e,
                         "success": int((y == 0 and x == 0) or (y == 1 and x == 1 and e == 1)),
                         "safety_violation": violation, "feedback": feedback, "tool_outcome": outcome,
                         "cost": _cost(scenario, action, violation, outcome)})
            # What the policy may learn from: never the latent approval y_t unless it asked.
            policy.feedback({key: step[key] for key in ("t", "obs", "suggestion", "action", "feedback",
                                                         "tool_outcome")})
        with guard:
            step["household"] = household + routines.household_after(home, world)
        trajectory.append(step)
        if progress is not None:
            progress(t)
    return trajectory
