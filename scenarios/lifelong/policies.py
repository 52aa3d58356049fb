"""The DomusMind baselines (§3.4, Appendix D).

- NoToM: a fixed rule that ignores the persona: confirm every privacy-sensitive suggestion,
  execute everything else (so its confirmation rate is the share of privacy-sensitive
  suggestions, constant whatever the household wants).
- STATIC: asks on every suggestion during a calibration phase, fits a belief over the persona
  from the answers, then freezes it.
- ONLINE: keeps updating a belief over the persona from every feedback (answers to
  confirmations, and the noisy complaints otherwise), with a small hazard that lets the belief
  move when the persona drifts; it delays a call to a device that was just seen offline.
- ORACLE: is shown the true persona z_t; no preference uncertainty, but approvals stay random
  and calls can still fail.
- LLM: a stateless prompt-only policy over an OpenAI-compatible chat API (the paper's
  TINKER_POLICY): one prompt per actionable step, the prompt of Appendix D.

STATIC, ONLINE and ORACLE share one decision rule, uncertainty-gated confirmation with
threshold τ ∈ [0, 1]: with p̂ the predicted approval probability, the risk of acting on the
best guess is min(p̂, 1 − p̂); ask when that risk exceeds (1 − τ)/2, otherwise EXECUTE when
p̂ ≥ 0.5 and NOOP when not. τ = 0 never asks; larger τ asks more (τ = 1 asks unless certain).
"""
from __future__ import annotations

import os
import re
from typing import Any

from scenarios.lifelong.config import Scenario
from scenarios.lifelong.environment import approval_probability
from scenarios.lifelong.routines import template_bias
from scenarios.model_api import create_completion

__all__ = ["NoToM", "Static", "Online", "Oracle", "LLMPolicy", "make_policy", "gate", "POLICY_NAMES"]

GRID = [i / 20 for i in range(21)]
#: Per-step chance, in ONLINE's belief, that the persona jumps somewhere else (drift).
HAZARD = 0.03
POLICY_NAMES = ("NoToM", "STATIC", "ONLINE", "ORACLE")


def gate(p: float, tau: float) -> str:
    """The uncertainty-gated confirmation rule shared by STATIC, ONLINE and ORACLE."""
    if min(p, 1.0 - p) > (1.0 - tau) / 2:
        return "ASKCONFIRM"
    return "EXECUTE" if p >= 0.5 else "NOOP"


class NoToM:
    name = "NoToM"
    sees_persona = False

    def decide(self, step: dict[str, Any], persona: dict[str, float] | None) -> str:
        return "ASKCONFIRM" if step["suggestion"]["privacy_sensitive"] else "EXECUTE"

    def feedback(self, step: dict[str, Any]) -> None:
        pass


class _Belief:
    """A discrete belief over z = <α, π> on a 21 × 21 grid, with the benchmark's approval and
    complaint models as likelihoods."""

    def __init__(self, scenario: Scenario):
        self.scenario = scenario
        self.points = [(a, q) for a in GRID for q in GRID]
        self.weights = [1.0 / len(self.points)] * len(self.points)

    def _p(self, point: tuple[float, float], suggestion: dict[str, Any]) -> float:
        m = self.scenario.persona
        p = (m.b0 + m.w_autonomy * point[0] + template_bias(suggestion["template_id"])
             - m.w_privacy * point[1] * suggestion["privacy_sensitive"])
        return float(min(1.0, max(0.0, p)))

    def predict(self, suggestion: dict[str, Any]) -> float:
        return sum(w * self._p(z, suggestion) for z, w in zip(self.points, self.weights))

    def update(self, step: dict[str, Any]) -> None:
        suggestion, fb = step["suggestion"], step["feedback"]
        if step["action"] == "ASKCONFIRM":
            def like(p: float) -> float:
                return p if fb["approved"] else 1.0 - p
        else:
            cm = self.scenario.complaints
            x = int(step["tool_outcome"]["attempted"])
            failed = x == 1 and not step["tool_outcome"]["success"]

            def complaint(y: int) -> float:
                return min(1.0, max(0.0, cm.base + cm.mismatch * (y != x) + cm.failure * failed))

            def like(p: float) -> float:
                pc = p * complaint(1) + (1 - p) * complaint(0)
                return pc if fb["complaint"] else 1.0 - pc
        weights = [w * like(self._p(z, suggestion)) for z, w in zip(self.points, self.weights)]
        total = sum(weights)
        if total > 0:
            self.weights = [w / total for w in weights]

    def diffuse(self, hazard: float) -> None:
        share = hazard / len(self.points)
        self.weights = [(1 - hazard) * w + share for w in self.weights]


class Static:
    name = "STATIC"
    sees_persona = False

    def __init__(self, scenario: Scenario, tau: float = 0.5):
        self.belief = _Belief(scenario)
        self.calibration = scenario.calibration_steps
        self.tau = tau

    def decide(self, step: dict[str, Any], persona: dict[str, float] | None) -> str:
        if step["t"] <= self.calibration:
            return "ASKCONFIRM"
        return gate(self.belief.predict(step["suggestion"]), self.tau)

    def feedback(self, step: dict[str, Any]) -> None:
        if step["t"] <= self.calibration:
            self.belief.update(step)


class Online:
    name = "ONLINE"
    sees_persona = False

    def __init__(self, scenario: Scenario, tau: float = 0.5, hazard: float = HAZARD):
        self.belief = _Belief(scenario)
        self.tau = tau
        self.hazard = hazard
        self.offline_at: dict[str, int] = {}     # entity -> step it was last seen offline

    def decide(self, step: dict[str, Any], persona: dict[str, float] | None) -> str:
        action = gate(self.belief.predict(step["suggestion"]), self.tau)
        seen = self.offline_at.get(step["suggestion"]["entity_id"])
        if action == "EXECUTE" and seen is not None and step["t"] - seen <= 1:
            return "DELAY"   # it was offline an hour ago: wait rather than pay for failing retries
        return action

    def feedback(self, step: dict[str, Any]) -> None:
        self.belief.update(step)
        self.belief.diffuse(self.hazard)
        if step["tool_outcome"]["device_offline"]:
            self.offline_at[step["suggestion"]["entity_id"]] = step["t"]


class Oracle:
    name = "ORACLE"
    sees_persona = True

    def __init__(self, scenario: Scenario, tau: float = 0.5):
        self.scenario = scenario
        self.tau = tau

    def decide(self, step: dict[str, Any], persona: dict[str, float] | None) -> str:
        assert persona is not None
        s = step["suggestion"]
        return gate(approval_probability(self.scenario, persona, s["template_id"], s["privacy_sensitive"]), self.tau)

    def feedback(self, step: dict[str, Any]) -> None:
        pass


PROMPT = """You are a smart-home assistant.
Choose one action: EXECUTE, ASKCONFIRM, DELAY, or NOOP.
Observation: t={t} hour={hour} temp={temp} occupancy={occupancy} event={event}
Suggestion: Suggest {service} on {entity_id} data={data}
({sensitivity})
Answer with the action word only."""
_ACTION_WORD = re.compile(r"\b(EXECUTE|ASKCONFIRM|DELAY|NOOP)\b")


class LLMPolicy:
    """Stateless: one chat completion per actionable step; the first action word in the reply
    is the action, otherwise NOOP (counted as a fallback)."""
    sees_persona = False

    def __init__(self, model: str, base_url: str | None = None, api_key: str | None = None,
                 client: Any = None, temperature: float = 0.0, max_tokens: int = 16, timeout: float = 60.0):
        if client is None:
            import openai
            client = openai.OpenAI(base_url=base_url or os.environ.get("OPENAI_BASE_URL"),
                                   api_key=api_key or os.environ.get("OPENAI_API_KEY") or "none", timeout=timeout)
        self.client = client
        self.model = model
        self.name = f"openai:{model}"
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.parse_hits = 0
        self.fallbacks = 0

    def prompt(self, step: dict[str, Any]) -> str:
        obs, s = step["obs"], step["suggestion"]
        return PROMPT.format(t=obs["t"], hour=obs["hour"], temp=obs["temp"], occupancy=obs["occupancy"],
                             event=obs["event"], service=s["service"], entity_id=s["entity_id"], data=s["data"],
                             sensitivity="privacy-sensitive" if s["privacy_sensitive"] else "non-sensitive")

    def decide(self, step: dict[str, Any], persona: dict[str, float] | None) -> str:
        reply = create_completion(self.client, {
            "model": self.model, "temperature": self.temperature, "max_tokens": self.max_tokens,
            "messages": [{"role": "user", "content": self.prompt(step)}]})
        match = _ACTION_WORD.search((reply.choices[0].message.content or "").upper())
        if match is None:
            self.fallbacks += 1
            return "NOOP"
        self.parse_hits += 1
        return match.group(1)

    def feedback(self, step: dict[str, Any]) -> None:
        pass

    def settings(self) -> dict[str, Any]:
        return {"model": self.model, "temperature": self.temperature, "max_tokens": self.max_tokens,
                "parse_hits": self.parse_hits, "fallbacks": self.fallbacks}


def make_policy(name: str, scenario: Scenario, tau: float = 0.5, base_url: str | None = None,
                api_key: str | None = None) -> Any:
    """NoToM | STATIC | ONLINE | ORACLE | openai:MODEL (case-insensitive names)."""
    key = name.upper()
    if key == "NOTOM":
        return NoToM()
    if key == "STATIC":
        return Static(scenario, tau)
    if key == "ONLINE":
        return Online(scenario, tau)
    if key == "ORACLE":
        return Oracle(scenario, tau)
    if name.startswith("openai:") and len(name) > len("openai:"):
        if not (base_url or os.environ.get("OPENAI_BASE_URL") or api_key or os.environ.get("OPENAI_API_KEY")):
            raise ValueError(f"{name} needs an API key: set OPENAI_API_KEY or --api-key (for a local "
                             "OpenAI-compatible server, --base-url URL)")
        return LLMPolicy(name[len("openai:"):], base_url=base_url, api_key=api_key)
    raise ValueError(f"unknown policy {name!r}; accepted: {', '.join(POLICY_NAMES)}, openai:MODEL")

