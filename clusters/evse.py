"""Energy EVSE (Matter 1.4, revision 3, ChargingPreferences and SoCReporting features) and
Energy EVSE Mode, charging a simulated car.

The car (`plug_in(capacity_kwh, soc_percent, target_percent)`, `unplug()`: a hand at the
charger) is a battery with an anchor (tick, energy in mWh, charging power in mW). While the
EVSE is enabled (EnableCharging) and the car wants energy, it charges at the current the
EVSE offers: min(MaximumChargeCurrent, UserMaximumChargeCurrent, CircuitCapacity) at the
mains voltage. The car's energy is closed form (linear), and the tick at which it reaches
its target is an exact discrete event (EnergyTransferStopped, State PluggedInNoDemand), as is
the end of ChargingEnabledUntil (epoch-s of the simulated clock). SessionEnergyCharged,
SessionDuration and StateOfCharge are derived from the anchor.

Charging preferences (PREF): SetTargets stores the week's charging target schedules (kept
per day of week, a later schedule replacing the days it names), GetTargets answers them,
ClearTargets empties them. The NextCharge* attributes stay null: the twin does not plan
charging around the targets (the car charges whenever it is enabled).
"""
from __future__ import annotations

from typing import Any

from chip.clusters.Types import NullValue

from clusters.base import TICKS_PER_SECOND, Clusters, ClusterServer, MatterError, Status, check_range, epoch_seconds
from clusters.modes import ModeBaseServer, ModeOption
from clusters.values import from_json, to_json

EVSE = Clusters.EnergyEvse
S = EVSE.Enums.StateEnum
SS = EVSE.Enums.SupplyStateEnum
_EM = Clusters.EnergyEvseMode.Enums.ModeTag
VOLTS = 230.0
MWH_PER_MW_TICK = 3600 * TICKS_PER_SECOND


class EnergyEvseModeServer(ModeBaseServer):
    cluster = Clusters.EnergyEvseMode
    default_modes = (ModeOption("Manual", 0, (_EM.kManual,)), ModeOption("Time of use", 1, (_EM.kTimeOfUse,)),
                     ModeOption("Solar charging", 2, (_EM.kSolarCharging,)))


class EnergyEvseServer(ClusterServer):
    cluster = EVSE
    revision = 3
    attributes = ("State", "SupplyState", "FaultState", "ChargingEnabledUntil", "CircuitCapacity",
                  "MinimumChargeCurrent", "MaximumChargeCurrent", "UserMaximumChargeCurrent", "SessionID",
                  "SessionDuration", "SessionEnergyCharged", "StateOfCharge", "BatteryCapacity",
                  "NextChargeStartTime", "NextChargeTargetTime", "NextChargeRequiredEnergy", "NextChargeTargetSoC")
    writable = frozenset({"UserMaximumChargeCurrent"})
    commands = ("Disable", "EnableCharging", "SetTargets", "GetTargets", "ClearTargets")
    notes = ("Currents are in mA, energy in mWh, ChargingEnabledUntil in epoch-s (null: until Disable).",
             "EnableCharging needs minimumChargeCurrent <= maximumChargeCurrent, both within 0..80 A.",
             "A car charges at min(MaximumChargeCurrent, UserMaximumChargeCurrent, CircuitCapacity) x 230 V "
             "until it reaches its target state of charge.")

    def __init__(self, circuit_amps: float = 32.0, **initial: Any):
        if not 6 <= circuit_amps <= 80:
            raise MatterError(Status.CONSTRAINT_ERROR, f"circuit_amps={circuit_amps}: give 6..80 A")
        super().__init__(feature_map=int(EVSE.Bitmaps.Feature.kSoCReporting)
                         | int(EVSE.Bitmaps.Feature.kChargingPreferences),
                         **{"CircuitCapacity": int(circuit_amps * 1000),
                            "UserMaximumChargeCurrent": int(circuit_amps * 1000), **initial})
        #: the car: None, or [anchor tick, energy mWh, power mW, capacity mWh, target mWh, session start tick,
        #: session energy at the anchor mWh]
        self._car: list[Any] | None = None
        self._until: int | None = None     # tick ChargingEnabledUntil ends
        self._targets: dict[int, list[Any]] = {}   # day bit -> its charging targets (ChargingTargetStruct)
        #: Called whenever the charging power changes (the composition's energy meters re-anchor).
        self.power_hooks: list[Any] = []

    def defaults(self) -> dict[str, Any]:
        return {"State": S.kNotPluggedIn, "SupplyState": SS.kDisabled, "FaultState": EVSE.Enums.FaultStateEnum.kNoError,
                "ChargingEnabledUntil": 0, "CircuitCapacity": 32000, "MinimumChargeCurrent": 6000,
                "MaximumChargeCurrent": 0, "UserMaximumChargeCurrent": 32000, "SessionID": NullValue,
                "SessionDuration": NullValue, "SessionEnergyCharged": NullValue, "StateOfCharge": NullValue,
                "BatteryCapacity": NullValue, "NextChargeStartTime": NullValue, "NextChargeTargetTime": NullValue,
                "NextChargeRequiredEnergy": NullValue, "NextChargeTargetSoC": NullValue}

    def validate_write(self, name: str, value: Any) -> None:
        if name == "UserMaximumChargeCurrent":
            check_range("UserMaximumChargeCurrent", value, 0, 80_000)

    def after_write(self, name: str, value: Any) -> None:
        self._update()

    # ---- the car ------------------------------------------------------------------------
    def _energy(self, tick: int) -> int:
        t0, energy, power, capacity, target, _, _ = self._car
        return min(energy + power * max(tick - t0, 0) // MWH_PER_MW_TICK, max(target, energy), capacity)

    def power_watts(self) -> float:
        return self._car[2] / 1000 if self._car is not None else 0.0

    def current_ma(self) -> int:
        return min(self.get("MaximumChargeCurrent"), self.get("UserMaximumChargeCurrent"), self.get("CircuitCapacity"))

    derived = frozenset({"SessionDuration", "SessionEnergyCharged", "StateOfCharge"})

    def get(self, name: str) -> Any:
        if self._car is not None and "State" in self._values:
            if name == "SessionDuration":
                return (self.now - self._car[5]) // TICKS_PER_SECOND
            if name == "SessionEnergyCharged":
                return self._car[6] + self._energy(self.now) - self._car[1]
            if name == "StateOfCharge":
                return self._energy(self.now) * 100 // self._car[3]
        return super().get(name)

    def plug_in(self, capacity_kwh: float = 60.0, soc_percent: float = 20.0, target_percent: float = 80.0) -> None:
        """A car is plugged in (a hand at the charger)."""
        self.changing()
        if self._car is not None:
            raise MatterError(Status.INVALID_IN_STATE, "a car is already plugged in; unplug it first")
        if not 5 <= capacity_kwh <= 250 or not 0 <= soc_percent <= 100 or not 0 < target_percent <= 100:
            raise MatterError(Status.CONSTRAINT_ERROR, "plug_in: capacity_kwh 5..250, soc_percent 0..100, "
                              "target_percent 1..100")
        capacity = int(capacity_kwh * 1_000_000)
        energy = int(capacity * soc_percent / 100)
        session = 0 if self.get("SessionID") is NullValue else int(self.get("SessionID")) + 1
        self._car = [self.now, energy, 0, capacity, int(capacity * target_percent / 100), self.now, 0]
        self.set("SessionID", session)
        self.set("BatteryCapacity", capacity)
        self.set("State", S.kPluggedInDemand if energy < self._car[4] else S.kPluggedInNoDemand)
        self.emit_event(EVSE.Events.EVConnected(sessionID=session))
        self._store()
        self._update()

    def unplug(self) -> None:
        self.changing()
        if self._car is None:
            raise MatterError(Status.INVALID_IN_STATE, "no car is plugged in")
        self._stop_transfer(EVSE.Enums.EnergyTransferStoppedReasonEnum.kEVStopped)
        self._store()
        charged, duration = self.get("SessionEnergyCharged"), self.get("SessionDuration")
        self._car = None
        self.set("State", S.kNotPluggedIn)
        self.set("StateOfCharge", NullValue)
        self.set("BatteryCapacity", NullValue)
        self.emit_event(EVSE.Events.EVNotDetected(sessionID=self.get("SessionID"), state=S.kPluggedInNoDemand,
                                                  sessionDuration=duration, sessionEnergyCharged=charged))

    def _store(self) -> None:
        for name in ("SessionDuration", "SessionEnergyCharged", "StateOfCharge"):
            self.set(name, self.get(name))

    def _reanchor(self, power_mw: int, tick: int | None = None) -> None:
        tick = self.now if tick is None else tick
        car = self._car
        energy = self._energy(tick)
        car[6] += energy - car[1]
        car[0], car[1], car[2] = tick, energy, power_mw
        for hook in self.power_hooks:
            hook()

    def _update(self) -> None:
        """Charge or not, from the supply state, the offered current and the car's demand."""
        if self._car is None:
            return
        wants = self._energy(self.now) < self._car[4]
        enabled = self.get("SupplyState") == SS.kChargingEnabled
        current = self.current_ma()
        charging = wants and enabled and current >= self.get("MinimumChargeCurrent") and current > 0
        power = int(current * VOLTS) if charging else 0            # mA x V = mW
        was = self.get("State") == S.kPluggedInCharging
        if charging and not was:
            self.set("State", S.kPluggedInCharging)
            self.emit_event(EVSE.Events.EnergyTransferStarted(sessionID=self.get("SessionID"),
                                                              state=S.kPluggedInCharging, maximumCurrent=current))
        elif not charging and was:
            self._stop_transfer(EVSE.Enums.EnergyTransferStoppedReasonEnum.kEVSEStopped)
        elif not charging:
            self.set("State", S.kPluggedInDemand if wants else S.kPluggedInNoDemand)
        if power != self._car[2]:
            self._reanchor(power)
        self._store()

    def _stop_transfer(self, reason: Any) -> None:
        if self.get("State") != S.kPluggedInCharging:
            return
        session_before = self._car[6]
        self._reanchor(0)
        wants = self._energy(self.now) < self._car[4]
        self.set("State", S.kPluggedInDemand if wants else S.kPluggedInNoDemand)
        self.emit_event(EVSE.Events.EnergyTransferStopped(
            sessionID=self.get("SessionID"), state=S.kPluggedInCharging, reason=reason,
            energyTransferred=self._car[6] - session_before))

    # ---- commands --------------------------------------------------------------------------
    def EnableCharging(self, request: Any) -> None:
        low, high = request.minimumChargeCurrent, request.maximumChargeCurrent
        check_range("EnableCharging.minimumChargeCurrent", low, 0, 80_000)
        check_range("EnableCharging.maximumChargeCurrent", high, 0, 80_000)
        if low > high:
            raise MatterError(Status.CONSTRAINT_ERROR, f"minimumChargeCurrent={low} is above "
                              f"maximumChargeCurrent={high}")
        until = request.chargingEnabledUntil
        if until is not NullValue and until is not None and until <= epoch_seconds(self.clock):
            raise MatterError(Status.CONSTRAINT_ERROR, f"chargingEnabledUntil={until} is not in the future "
                              f"(now {epoch_seconds(self.clock)} epoch-s)")
        self.set("MinimumChargeCurrent", int(low))
        self.set("MaximumChargeCurrent", int(high))
        self.set("ChargingEnabledUntil", NullValue if until is None else until)
        self._until = (None if until is NullValue or until is None
                       else self.now + (int(until) - epoch_seconds(self.clock)) * TICKS_PER_SECOND)
        self.set("SupplyState", SS.kChargingEnabled)
        self._update()

    def Disable(self, request: Any = None) -> None:
        self._until = None
        self.set("SupplyState", SS.kDisabled)
        self.set("MaximumChargeCurrent", 0)
        self.set("ChargingEnabledUntil", 0)
        self._update()

    # ---- charging preferences ------------------------------------------------------------------
    def SetTargets(self, request: Any) -> None:
        updates: dict[int, list[Any]] = {}
        for i, schedule in enumerate(request.chargingTargetSchedules):
            days = int(schedule.dayOfWeekForSequence)
            if not 0 < days <= 0x7F:
                raise MatterError(Status.CONSTRAINT_ERROR, f"chargingTargetSchedules[{i}].dayOfWeekForSequence={days}: "
                                  "give a bitmap of days, Sunday 0x01 .. Saturday 0x40")
            if len(schedule.chargingTargets) > 10:
                raise MatterError(Status.CONSTRAINT_ERROR, f"chargingTargetSchedules[{i}]: at most 10 targets a day")
            for j, target in enumerate(schedule.chargingTargets):
                where = f"chargingTargetSchedules[{i}].chargingTargets[{j}]"
                check_range(f"{where}.targetTimeMinutesPastMidnight", target.targetTimeMinutesPastMidnight, 0, 1439)
                check_range(f"{where}.targetSoC", target.targetSoC, 0, 100)
                check_range(f"{where}.addedEnergy", target.addedEnergy, 0, 2**62)
            for bit in range(7):
                if days >> bit & 1:
                    updates[1 << bit] = list(schedule.chargingTargets)
        self._targets.update(updates)

    def GetTargets(self, request: Any = None) -> Any:
        by_targets: dict[str, list[Any]] = {}
        for day in sorted(self._targets):
            key = repr(self._targets[day])
            by_targets.setdefault(key, [0, self._targets[day]])[0] |= day
        return EVSE.Commands.GetTargetsResponse(chargingTargetSchedules=[
            EVSE.Structs.ChargingTargetScheduleStruct(dayOfWeekForSequence=days, chargingTargets=targets)
            for days, targets in by_targets.values()])

    def ClearTargets(self, request: Any = None) -> None:
        self._targets = {}

    # ---- time ------------------------------------------------------------------------------
    def _full_tick(self) -> int | None:
        car = self._car
        if car is None or car[2] <= 0 or car[1] >= car[4]:
            return None
        return car[0] + -(-(car[4] - car[1]) * MWH_PER_MW_TICK // car[2])

    def next_event_tick(self) -> int | None:
        ticks = [t for t in (self._full_tick(), self._until) if t is not None]
        return min(ticks) if ticks else None

    def advance_to(self, tick: int) -> None:
        while (due := self.next_event_tick()) is not None and due <= tick:
            if due == self._until:
                self.Disable()
            else:   # the car reached its target
                self._reanchor(0, due)
                self._car[1] = self._car[4]
                self._stop_transfer_at_target()

    def _stop_transfer_at_target(self) -> None:
        self.set("State", S.kPluggedInNoDemand)
        self.emit_event(EVSE.Events.EnergyTransferStopped(
            sessionID=self.get("SessionID"), state=S.kPluggedInCharging,
            reason=EVSE.Enums.EnergyTransferStoppedReasonEnum.kEVStopped, energyTransferred=self._car[6]))
        self._store()

    def private_state(self) -> dict[str, Any]:
        return {"car": self._car, "until": self._until,
                "targets": {str(day): [to_json(t) for t in targets] for day, targets in self._targets.items()}}

    def load_private_state(self, state: dict[str, Any]) -> None:
        self._car = state.get("car")
        self._until = state.get("until")
        self._targets = {int(day): [from_json(EVSE.Structs.ChargingTargetStruct, t, "EnergyEvse targets")
                                    for t in targets] for day, targets in state.get("targets", {}).items()}

    persists = False   # a charging session does not survive a power cut
