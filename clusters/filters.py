"""Resource Monitoring cluster servers (Matter 1.3, 2.8): HEPA Filter Monitoring (0x0071) and
Activated Carbon Filter Monitoring (0x0072), revision 1. Features: Condition, Warning.

A filter wears while air goes through it: Condition (percent left, degrading Down) falls at a
rate proportional to how hard the fan pushes (`usage` returns 0..1, e.g. PercentCurrent/100 while
the device is on), so a HEPA filter lasts `life_hours` of full-speed use. Wear is anchor based
like the energy meters: level and rate at an anchor tick, re-anchored when the usage changes
(`usage_changed()`), with discrete events where ChangeIndication moves (Warning below 20 %,
Critical at 0 %). ResetCondition is fitting a new filter: Condition 100, Ok, LastChangedTime now.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from chip.clusters.Types import NullValue

from clusters.base import TICKS_PER_SECOND, Clusters, ClusterServer, epoch_seconds

UNIT = 10**12                 # Condition kept in 1e-12 % (integer arithmetic, no drift)
FULL = 100 * UNIT
WARNING_BELOW = 20 * UNIT     # ChangeIndication Warning below 20 %
CRITICAL_AT = 0


class _FilterMonitoringServer(ClusterServer):
    revision = 1
    attributes = ("Condition", "DegradationDirection", "ChangeIndication", "InPlaceIndicator", "LastChangedTime")
    writable = frozenset({"LastChangedTime"})
    commands = ("ResetCondition",)
    notes = ("Condition (%) falls with use, in proportion to the fan speed, from 100 for a new filter "
             "to 0 after its life at full speed (HEPA 4380 h, activated carbon 2190 h).",
             "ChangeIndication: Ok, Warning below 20 %, Critical at 0 %. ResetCondition fits a new filter.")
    #: Hours of full-speed use from a new filter to 0 %.
    life_hours = 4380

    def __init__(self, usage: Callable[[], float] | None = None, life_hours: int | None = None, **initial: Any):
        F = self.cluster.Bitmaps.Feature
        super().__init__(feature_map=int(F.kCondition | F.kWarning), **initial)
        self.usage = usage
        self.life_hours = life_hours or self.life_hours
        self._wear: list[int] | None = None   # [tick, level (1e-12 %), loss per tick] while worn

    def defaults(self) -> dict[str, Any]:
        E = self.cluster.Enums
        return {"Condition": 100, "DegradationDirection": E.DegradationDirectionEnum.kDown,
                "ChangeIndication": E.ChangeIndicationEnum.kOk, "InPlaceIndicator": True,
                "LastChangedTime": NullValue}

    # ---- wear ----------------------------------------------------------------------
    def _level(self, tick: int) -> int:
        if self._wear is None:
            return self._values["Condition"] * UNIT
        t0, level, loss = self._wear
        return max(level - loss * max(tick - t0, 0), 0)

    def _loss_now(self) -> int:
        fraction = min(max(self.usage(), 0.0), 1.0) if self.usage is not None else 0.0
        return int(round(FULL * fraction / (self.life_hours * 3600 * TICKS_PER_SECOND)))

    derived = frozenset({"Condition"})
    sample_seconds = {"Condition": 60}

    def get(self, name: str) -> Any:
        if name == "Condition" and self._wear is not None:
            return _percent(self._level(self.now))
        return super().get(name)

    def usage_changed(self) -> None:
        """The fan speed or power changed: re-anchor the wear at the new rate."""
        level = self._level(self.now)
        self._wear = [self.now, level, self._loss_now() if level > 0 else 0]
        self._store(level)

    def _store(self, level: int) -> None:
        E = self.cluster.Enums.ChangeIndicationEnum
        self.set("Condition", _percent(level))
        self.set("ChangeIndication", E.kCritical if level <= CRITICAL_AT else E.kWarning if level < WARNING_BELOW
                 else E.kOk)

    def next_event_tick(self) -> int | None:
        if self._wear is None:
            return None   # unused so far: the first OnOff/fan change anchors the wear (usage_changed)
        t0, level, loss = self._wear
        if not loss:
            return None
        target = WARNING_BELOW - 1 if level >= WARNING_BELOW else CRITICAL_AT
        return t0 + max(1, -(-(level - target) // loss))

    def advance_to(self, tick: int) -> None:
        while (due := self.next_event_tick()) is not None and due <= tick:
            assert self._wear is not None
            level = self._level(due)
            self._wear = [due, level, self._wear[2] if level > 0 else 0]
            self._store(level)

    def private_state(self) -> dict[str, Any]:
        return {"wear": list(self._wear) if self._wear else None}

    def load_private_state(self, state: dict[str, Any]) -> None:
        self._wear = state.get("wear")

    def stop_motion(self) -> None:
        self._wear = None   # saved_state sampled Condition; wear resumes from there

    # ---- commands ------------------------------------------------------------------
    def ResetCondition(self, request: Any = None) -> None:
        self._wear = None
        self._store(FULL)
        self.set("LastChangedTime", epoch_seconds(self.clock))
        self.usage_changed()


def _percent(level: int) -> int:
    """Whole percent, to the nearest; 0 only when the filter is spent."""
    return max((level + UNIT // 2) // UNIT, 1 if level > 0 else 0)


class HepaFilterMonitoringServer(_FilterMonitoringServer):
    cluster = Clusters.HepaFilterMonitoring
    life_hours = 4380   # about six months of round-the-clock full speed


class ActivatedCarbonFilterMonitoringServer(_FilterMonitoringServer):
    cluster = Clusters.ActivatedCarbonFilterMonitoring
    life_hours = 2190   # carbon saturates about twice as fast
