"""A home battery's cell: a Power Source (Battery, Rechargeable) whose state of charge is the
energy it holds, exactly.

PowerSourceServer's own battery model moves in steps of 0.001 % per tick, too coarse for a
5 kW battery (its power would not match its charge). Here the charge is integer energy
(mW·ticks) with an anchor (tick, energy, power): BatPercentRemaining is derived from it, and
the ticks at which the charge crosses 0 %, 10 %, 20 % or 100 % (empty, Critical, Warning,
full) are exact discrete events, where the power stops at an end and BatChargeLevel /
BatChargeState follow. `set_power(watts)` (positive charges) re-anchors.
"""
from __future__ import annotations

from typing import Any

from clusters.base import TICKS_PER_SECOND, MatterError, Status
from clusters.energy import PowerSourceServer

MW_TICKS_PER_WH = 1000 * 3600 * TICKS_PER_SECOND


class StorageCellServer(PowerSourceServer):
    def __init__(self, capacity_kwh: float = 10.0, percent: float = 50.0, **initial: Any):
        if not 1 <= capacity_kwh <= 200 or not 0 <= percent <= 100:
            raise MatterError(Status.CONSTRAINT_ERROR, "battery cell: capacity_kwh 1..200, percent 0..100")
        super().__init__(battery=True, rechargeable=True, **{"BatPercentRemaining": int(percent * 2), **initial})
        self.capacity = int(capacity_kwh * 1000 * MW_TICKS_PER_WH)   # mW·ticks
        self._cell = [0, int(self.capacity * percent / 100), 0]      # [tick, energy, power mW]
        #: Called whenever the power changes (the composition's energy meters re-anchor).
        self.power_hooks: list[Any] = []

    def energy(self, tick: int | None = None) -> int:
        t0, energy, power = self._cell
        return min(max(energy + power * max((self.now if tick is None else tick) - t0, 0), 0), self.capacity)

    def percent(self, tick: int | None = None) -> float:
        return self.energy(tick) * 100 / self.capacity

    @property
    def power_watts(self) -> float:
        return self._cell[2] / 1000

    def set_power(self, watts: float) -> None:
        """Charge (positive) or discharge at `watts` from now, stopping at full or empty."""
        self.changing()
        energy = self.energy()
        mw = int(round(watts * 1000))
        if (mw > 0 and energy >= self.capacity) or (mw < 0 and energy <= 0):
            mw = 0
        self._cell = [self.now, energy, mw]
        self._store()
        for hook in self.power_hooks:
            hook()

    def _store(self) -> None:
        self.set_battery(self.percent(), charging=self._cell[2] > 0 or None)
        if self._cell[2] <= 0 and "BatChargeState" in self._values:
            state = self.cluster.Enums.BatChargeStateEnum
            full = self.energy() >= self.capacity
            self.set("BatChargeState", state.kIsAtFullCharge if full else state.kIsNotCharging)

    derived = frozenset({"BatPercentRemaining", "WiredAssessedCurrent"})

    def get(self, name: str) -> Any:
        if name == "BatPercentRemaining" and hasattr(self, "_cell"):
            return int(self.percent() * 2)   # half-percent units
        return super().get(name)

    def next_event_tick(self) -> int | None:
        t0, energy, power = self._cell
        if power == 0:
            return None
        marks = (0, self.capacity // 10, self.capacity // 5, self.capacity)
        ahead = [m for m in marks if (m > energy if power > 0 else m < energy)]
        if not ahead:
            return None
        mark = min(ahead) if power > 0 else max(ahead)
        return t0 + max(1, -(-abs(mark - energy) // abs(power)))

    def advance_to(self, tick: int) -> None:
        while (due := self.next_event_tick()) is not None and due <= tick:
            energy = self.energy(due)
            power = self._cell[2]
            if energy in (0, self.capacity):
                power = 0
            self._cell = [due, energy, power]
            self._store()
            if power == 0:
                for hook in self.power_hooks:
                    hook()

    def private_state(self) -> dict[str, Any]:
        return {**super().private_state(), "cell": list(self._cell)}

    def load_private_state(self, state: dict[str, Any]) -> None:
        super().load_private_state(state)
        self._cell = list(state["cell"])

    def stop_motion(self) -> None:
        super().stop_motion()
        self._cell = [self.now, self.energy(), 0]
