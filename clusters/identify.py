"""Identify cluster server (Matter 1.3, revision 4).

IdentifyTime counts down in seconds. It is stored only when identification starts (the
anchor); while it runs, `get()` derives the remaining seconds from the end tick, and the
end is the one discrete event. TriggerEffect effects run for their nominal length and
are kept as (effect, end tick) so the twin can show them.
"""
from __future__ import annotations

from typing import Any

from clusters.base import TICKS_PER_SECOND, Clusters, ClusterServer, check_range

ID = Clusters.Identify
Effect = ID.Enums.EffectIdentifierEnum

#: Nominal effect lengths in ticks (from the effect descriptions in the spec).
EFFECT_TICKS = {Effect.kBlink: 10, Effect.kBreathe: 150, Effect.kOkay: 10, Effect.kChannelChange: 80}


class IdentifyServer(ClusterServer):
    persists = False   # an operation in progress: a restart starts it afresh
    cluster = ID
    revision = 4
    attributes = ("IdentifyTime", "IdentifyType")
    writable = frozenset({"IdentifyTime"})
    commands = ("Identify", "TriggerEffect")
    notes = ("IdentifyTime (seconds) counts down to 0; writing it or the Identify command "
             "(re)starts identification, 0 stops it.",
             "TriggerEffect StopEffect ends identification and effects at once; FinishEffect "
             "lets the running effect complete.")

    def __init__(self, **initial: Any):
        super().__init__(**initial)
        self._until: int | None = None                # tick at which identification ends
        self._effect: list[int] | None = None         # [effect id, end tick] of a running effect

    def defaults(self) -> dict[str, Any]:
        return {"IdentifyTime": 0, "IdentifyType": ID.Enums.IdentifyTypeEnum.kVisibleIndicator}

    @property
    def effect(self) -> int | None:
        """The effect running now (EffectIdentifierEnum value), if any."""
        if self._effect is not None and self._effect[1] > self.now:
            return self._effect[0]
        return None

    derived = frozenset({"IdentifyTime"})

    def get(self, name: str) -> Any:
        if name == "IdentifyTime" and self._until is not None:
            return -(-max(self._until - self.now, 0) // TICKS_PER_SECOND)  # whole seconds, rounded up
        return super().get(name)

    def validate_write(self, name: str, value: Any) -> None:
        check_range(f"Identify.{name}", value, 0, 0xFFFF)

    def after_write(self, name: str, value: Any) -> None:
        self._start(value)  # a write (re)starts or, with 0, stops identification

    def _start(self, seconds: int) -> None:
        self.set("IdentifyTime", seconds)
        self._until = self.now + seconds * TICKS_PER_SECOND if seconds else None

    # ---- time --------------------------------------------------------------------
    def next_event_tick(self) -> int | None:
        ticks = [t for t in (self._until, self._effect[1] if self._effect else None) if t is not None]
        return min(ticks) if ticks else None

    def advance_to(self, tick: int) -> None:
        if self._effect is not None and tick >= self._effect[1]:
            self._effect = None
        if self._until is not None and tick >= self._until:
            self._until = None
            self.set("IdentifyTime", 0)

    def private_state(self) -> dict[str, Any]:
        return {"until": self._until, "effect": self._effect}

    def load_private_state(self, state: dict[str, Any]) -> None:
        self._until = state.get("until")
        self._effect = state.get("effect")

    # ---- commands ----------------------------------------------------------------
    def Identify(self, request: Any) -> None:
        check_range("Identify.identifyTime", request.identifyTime, 0, 0xFFFF)
        self._start(request.identifyTime)

    def TriggerEffect(self, request: Any) -> None:
        effect = request.effectIdentifier
        if effect == Effect.kStopEffect:
            self._effect = None
            self._start(0)
        elif effect == Effect.kFinishEffect:
            self._start(0)  # the running effect, if any, completes on its own
        else:
            self._effect = [int(effect), self.now + EFFECT_TICKS[effect]]
