"""Energy and power cluster servers: Electrical Power Measurement (Matter 1.3, 2.13), Electrical
Energy Measurement (2.12), Device Energy Management (9.2), Power Source (11.7) and Power
Topology (11.8).

Power is a function of what the device is doing. Each server that measures takes
`power_source: Callable[[], float] | None` (watts; negative means the device exports), set by
the device composition. Instantaneous values (ActivePower, currents) are derived in `get()`.

Energy is never accumulated per tick. A meter keeps an anchor: the tick, the energy at that tick
and the power since then, so energy at any later tick is exact integer arithmetic. When the power
changes, the composition calls `reanchor()` (from a listener on whatever drives the power); that
is the only moment the anchor moves, so fast-forward and tick stepping agree exactly.

SimuHome lists StartMeasurement/GetMeasurementSnapshot-style commands for the measurement
clusters; Matter 1.3 defines none, so none are offered (the attributes are always live).
"""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from chip.clusters.Types import NullValue

from clusters.base import TICKS_PER_SECOND, Clusters, ClusterServer, _StandaloneClock
from clusters.status import MatterError, Status

EPM = Clusters.ElectricalPowerMeasurement
EEM = Clusters.ElectricalEnergyMeasurement
DEM = Clusters.DeviceEnergyManagement
PS = Clusters.PowerSource
PT = Clusters.PowerTopology

PowerSource = Callable[[], float] | None
MWH_PER_MW_TICK = 3600 * TICKS_PER_SECOND  # mW held for this many ticks is 1 mWh
ENERGY_MAX = 2 ** 62                       # energy-mWh / power-mW range limit


def _mw(watts: float) -> int:
    return int(round(watts * 1000))


class _Meter:
    """Exact energy integration: energy (mW·ticks) at an anchor tick plus constant power since."""

    def __init__(self, tick: int = 0, power_mw: int = 0, imported: int = 0, exported: int = 0):
        self.tick, self.power_mw, self.imported, self.exported = tick, power_mw, imported, exported

    def at(self, tick: int) -> tuple[int, int]:
        """(imported, exported) energy in mW·ticks at `tick` (not before the anchor)."""
        span = max(0, tick - self.tick)
        if self.power_mw >= 0:
            return self.imported + self.power_mw * span, self.exported
        return self.imported, self.exported - self.power_mw * span

    def reanchor(self, tick: int, power_mw: int) -> None:
        self.imported, self.exported = self.at(tick)
        self.tick, self.power_mw = max(tick, self.tick), power_mw

    def to_json(self) -> dict[str, int]:
        return {"tick": self.tick, "power_mw": self.power_mw, "imported": self.imported, "exported": self.exported}

    @classmethod
    def from_json(cls, data: dict[str, int]) -> _Meter:
        return cls(data["tick"], data["power_mw"], data["imported"], data["exported"])


def _mwh(mw_ticks: int) -> int:
    return mw_ticks // MWH_PER_MW_TICK


class _Metered(ClusterServer):
    """A server with a meter. A device is composed (and its meter anchored) before a home gives
    it the home's clock; when that first real clock arrives, the meter starts there, so a device
    added mid-simulation does not count energy (or owe period events) from tick 0. A server
    restored from a snapshot keeps its anchors."""
    persists = False   # an operation in progress: a restart starts it afresh

    _fresh = True

    @property
    def clock(self):  # type: ignore[override]
        return self.__dict__["_clock"]

    @clock.setter
    def clock(self, clock: Any) -> None:
        old = self.__dict__.get("_clock")
        self.__dict__["_clock"] = clock
        if self._fresh and isinstance(old, _StandaloneClock) and clock is not old and "_meter" in self.__dict__:
            self._fresh = False
            self._rebase(clock.tick)

    def _rebase(self, tick: int) -> None:
        self._meter = _Meter(tick, self._meter.power_mw)

    def load_private_state(self, state: dict[str, Any]) -> None:
        self._fresh = False


# ---- Electrical Power Measurement ------------------------------------------------------------
_MT = EPM.Enums.MeasurementTypeEnum
#: attribute -> measurement type, for the AC measurements this server derives.
_EPM_MEASURED = {
    "Voltage": _MT.kVoltage, "ActiveCurrent": _MT.kActiveCurrent, "ReactiveCurrent": _MT.kReactiveCurrent,
    "ApparentCurrent": _MT.kApparentCurrent, "ActivePower": _MT.kActivePower,
    "ReactivePower": _MT.kReactivePower, "ApparentPower": _MT.kApparentPower, "RMSVoltage": _MT.kRMSVoltage,
    "RMSCurrent": _MT.kRMSCurrent, "RMSPower": _MT.kRMSPower, "Frequency": _MT.kFrequency,
    "PowerFactor": _MT.kPowerFactor,
}


class ElectricalPowerMeasurementServer(ClusterServer):
    """AC power measurement (AlternatingCurrent feature), single phase, no harmonics.

    Units as the spec: mW, mVA(R), mV, mA, mHz, and PowerFactor in 1/100ths of a percent.
    Without a power source every measurement reads null ("cannot be measured").
    """
    persists = False   # an operation in progress: a restart starts it afresh
    cluster = EPM
    revision = 1
    attributes = ("PowerMode", "NumberOfMeasurementTypes", "Accuracy") + tuple(_EPM_MEASURED)
    notes = ("Measurements follow what the device is doing; they are read-only.",)

    def __init__(self, power_source: PowerSource = None, voltage: float = 230.0, frequency: float = 50.0,
                 power_factor: float = 1.0, max_power: float = 3680.0, **initial: Any):
        if not 0 < power_factor <= 1 or voltage <= 0 or frequency <= 0 or max_power <= 0:
            raise MatterError(Status.CONSTRAINT_ERROR,
                              "ElectricalPowerMeasurement: voltage, frequency and max_power must be positive "
                              "and power_factor within (0, 1]")
        self.power_source = power_source
        self.voltage, self.frequency, self.power_factor, self.max_power = voltage, frequency, power_factor, max_power
        super().__init__(feature_map=int(EPM.Bitmaps.Feature.kAlternatingCurrent), **initial)

    def defaults(self) -> dict[str, Any]:
        amps = self.max_power / self.voltage
        limits = {  # (min, max) each measurement can take, for Accuracy
            "Voltage": (0, _mw(self.voltage * 1.1)), "RMSVoltage": (0, _mw(self.voltage * 1.1)),
            "Frequency": (0, _mw(self.frequency * 1.1)), "PowerFactor": (-10000, 10000),
        }
        for name in ("ActiveCurrent", "ReactiveCurrent", "ApparentCurrent", "RMSCurrent"):
            limits[name] = (-_mw(amps), _mw(amps))
        for name in ("ActivePower", "ReactivePower", "ApparentPower", "RMSPower"):
            limits[name] = (-_mw(self.max_power), _mw(self.max_power))
        S = EPM.Structs
        accuracy = [S.MeasurementAccuracyStruct(
            measurementType=kind, measured=True, minMeasuredValue=limits[name][0],
            maxMeasuredValue=limits[name][1],
            accuracyRanges=[S.MeasurementAccuracyRangeStruct(rangeMin=limits[name][0], rangeMax=limits[name][1],
                                                             percentMax=100)])  # ±1 %
            for name, kind in _EPM_MEASURED.items()]
        return {"PowerMode": EPM.Enums.PowerModeEnum.kAc, "NumberOfMeasurementTypes": len(accuracy),
                "Accuracy": accuracy, **{name: NullValue for name in _EPM_MEASURED}}

    def measurements(self) -> dict[str, Any]:
        """Every measured attribute at this instant (null without a power source)."""
        if self.power_source is None:
            return {name: NullValue for name in _EPM_MEASURED}
        p = _mw(self.power_source())
        s = abs(p) / self.power_factor
        q = math.copysign(math.sqrt(max(s * s - p * p, 0.0)), p if p else 1)
        v = _mw(self.voltage)

        def amps(milli: float) -> int:  # mW / mV -> mA
            return int(round(milli * 1000 / v))
        return {"Voltage": v, "RMSVoltage": v, "ActivePower": p, "RMSPower": p,
                "ApparentPower": int(round(s)), "ReactivePower": int(round(q)),
                "ActiveCurrent": amps(p), "ApparentCurrent": amps(s), "RMSCurrent": amps(s),
                "ReactiveCurrent": amps(q), "Frequency": _mw(self.frequency),
                "PowerFactor": int(round(self.power_factor * 10000))}

    derived = frozenset(_EPM_MEASURED)

    def get(self, name: str) -> Any:
        if name in _EPM_MEASURED:
            return self.measurements()[name]
        return super().get(name)

    def reanchor(self) -> None:
        """The power changed: store the new readings so DataVersion and subscribers see it."""
        for name, value in self.measurements().items():
            self.set(name, value)


# ---- Electrical Energy Measurement -----------------------------------------------------------
class ElectricalEnergyMeasurementServer(_Metered):
    """Imported (and optionally exported) energy, cumulative, and periodic over `period_seconds`.

    At every period boundary the periodic attributes take the energy of the period just ended
    and the CumulativeEnergyMeasured / PeriodicEnergyMeasured events fire. Timestamps are
    Systime (ms since the device started, i.e. since tick 0): the twin has no wall clock.
    """
    cluster = EEM
    revision = 1
    notes = ("CumulativeEnergyImported/Exported are in mWh and always current.",
             "PeriodicEnergyImported/Exported hold the energy of the last completed period.")

    def __init__(self, power_source: PowerSource = None, exported: bool = False,
                 period_seconds: int | None = 900, max_power: float = 3680.0, stepped: bool = False,
                 **initial: Any):
        """`stepped`: the source's power changes only at period boundaries, by itself (solar
        output by the time of day); the meter takes the new power at each boundary."""
        F = EEM.Bitmaps.Feature
        if period_seconds is not None and (isinstance(period_seconds, bool) or not isinstance(period_seconds, int)
                                           or period_seconds <= 0):
            raise MatterError(Status.CONSTRAINT_ERROR,
                              f"period_seconds={period_seconds!r} must be a positive whole number or None")
        attrs = ["Accuracy", "CumulativeEnergyImported"] + (["CumulativeEnergyExported"] if exported else [])
        feature_map = int(F.kImportedEnergy | F.kCumulativeEnergy) | (int(F.kExportedEnergy) if exported else 0)
        if period_seconds:
            attrs += ["PeriodicEnergyImported"] + (["PeriodicEnergyExported"] if exported else [])
            feature_map |= int(F.kPeriodicEnergy)
        attrs.append("CumulativeEnergyReset")
        self.attributes = tuple(attrs)
        self.power_source = power_source
        self.exported = exported
        self.period_ticks = period_seconds * TICKS_PER_SECOND if period_seconds else None
        self.max_power = max_power
        self.stepped = stepped
        super().__init__(feature_map=feature_map, **initial)
        # Power 0 until the first reanchor(): the source may read siblings not composed yet.
        self._meter = _Meter(0, 0)
        self._boundary = 0              # tick of the last period boundary processed
        self._at_boundary = (0, 0)      # energy (mW·ticks) at that boundary

    def defaults(self) -> dict[str, Any]:
        S = EEM.Structs
        return {"Accuracy": S.MeasurementAccuracyStruct(
                    measurementType=EEM.Enums.MeasurementTypeEnum.kElectricalEnergy, measured=True,
                    minMeasuredValue=0, maxMeasuredValue=ENERGY_MAX,
                    accuracyRanges=[S.MeasurementAccuracyRangeStruct(rangeMin=0, rangeMax=ENERGY_MAX,
                                                                     percentMax=100)]),
                "CumulativeEnergyImported": NullValue, "CumulativeEnergyExported": NullValue,
                "PeriodicEnergyImported": NullValue, "PeriodicEnergyExported": NullValue,
                "CumulativeEnergyReset": NullValue}

    def _power_mw(self) -> int:
        return _mw(self.power_source()) if self.power_source is not None else 0

    def energy_mwh(self, tick: int | None = None) -> tuple[int, int]:
        """(imported, exported) cumulative energy in mWh at `tick` (default: now)."""
        imported, exported = self._meter.at(self.now if tick is None else tick)
        return _mwh(imported), _mwh(exported)

    def _measurement(self, energy: int, start: int | None, end: int):
        return EEM.Structs.EnergyMeasurementStruct(
            energy=min(energy, ENERGY_MAX), startSystime=None if start is None else start * 100, endSystime=end * 100)

    derived = frozenset({"CumulativeEnergyImported", "CumulativeEnergyExported"})
    # Quality Q: the spec lets a meter publish these every 1 to 60 s; their timestamp moves
    # every tick, so once a second would be a report per second per powered device.
    sample_seconds = {"CumulativeEnergyImported": 10, "CumulativeEnergyExported": 10}

    def get(self, name: str) -> Any:
        if name in ("CumulativeEnergyImported", "CumulativeEnergyExported") and self.power_source is not None:
            imported, exported = self.energy_mwh()
            return self._measurement(imported if name.endswith("Imported") else exported, None, self.now)
        return super().get(name)

    def _store_cumulative(self) -> None:
        for name in ("CumulativeEnergyImported", "CumulativeEnergyExported"):
            if name in self._values:
                self.set(name, self.get(name))

    def attach(self) -> None:
        self.reanchor()  # the composition is complete: the power source can be read now

    def reanchor(self) -> None:
        """The device's power changed: close the old stretch at this tick and start a new one."""
        self._meter.reanchor(self.now, self._power_mw())
        self._store_cumulative()

    def reset_cumulative(self) -> None:
        """The meter was reset (e.g. replaced): cumulative energy restarts from zero now."""
        self._meter = _Meter(self.now, self._power_mw())
        self._at_boundary = (0, 0)
        self.set("CumulativeEnergyReset", EEM.Structs.CumulativeEnergyResetStruct(
            importedResetSystime=self.now * 100, exportedResetSystime=self.now * 100 if self.exported else None))
        self._store_cumulative()

    # ---- periods -------------------------------------------------------------------
    def next_event_tick(self) -> int | None:
        if self.period_ticks is None or self.power_source is None:
            return None
        return self._boundary + self.period_ticks

    def advance_to(self, tick: int) -> None:
        while (due := self.next_event_tick()) is not None and due <= tick:
            self._close_period(due)

    def _close_period(self, end: int) -> None:
        imported, exported = self._meter.at(end)
        start = self._boundary
        period_imp = self._measurement(_mwh(imported - self._at_boundary[0]), start, end)
        period_exp = self._measurement(_mwh(exported - self._at_boundary[1]), start, end)
        self._boundary, self._at_boundary = end, (imported, exported)
        self.set("PeriodicEnergyImported", period_imp)
        cum_imp = self._measurement(_mwh(imported), None, end)
        cum_exp = self._measurement(_mwh(exported), None, end)
        self.set("CumulativeEnergyImported", cum_imp)
        if self.exported:
            self.set("PeriodicEnergyExported", period_exp)
            self.set("CumulativeEnergyExported", cum_exp)
        self.emit_event(EEM.Events.CumulativeEnergyMeasured(
            energyImported=cum_imp, energyExported=cum_exp if self.exported else None))
        self.emit_event(EEM.Events.PeriodicEnergyMeasured(
            energyImported=period_imp, energyExported=period_exp if self.exported else None))
        # A source whose power moves with the time of day (solar output) changes it only at period
        # boundaries: take its new power from here, and let the instantaneous readings follow.
        if self.stepped and self._power_mw() != self._meter.power_mw:
            self._meter.reanchor(end, self._power_mw())
            power = self.sibling(EPM)
            if power is not None:
                power.reanchor()

    def private_state(self) -> dict[str, Any]:
        return {"meter": self._meter.to_json(), "boundary": self._boundary, "at_boundary": list(self._at_boundary)}

    def _rebase(self, tick: int) -> None:
        super()._rebase(tick)
        self._boundary = tick  # periods count from when the device joined the home

    def load_private_state(self, state: dict[str, Any]) -> None:
        super().load_private_state(state)
        self._meter = _Meter.from_json(state["meter"])
        self._boundary = state["boundary"]
        self._at_boundary = tuple(state["at_boundary"])


# ---- Device Energy Management ------------------------------------------------------------------
class DeviceEnergyManagementServer(_Metered):
    """An energy smart appliance an energy manager can ask to adjust its power (PowerAdjustment)
    and which reports a power forecast (PowerForecastReporting).

    The wire shapes follow chip.clusters.Objects 2024.11 (PowerAdjustmentCapability is a
    PowerAdjustCapabilityStruct with a cause, ForecastStruct has ForecastUpdateReason), which is
    revision 4 of the cluster; Matter 1.3's revision 3 had a plain list there.
    While an adjustment is active, `requested_power` (W) tells the device model what to draw.
    Times in Forecast are Matter epoch seconds: `epoch_seconds` is the epoch time of tick 0.
    """
    cluster = DEM
    revision = 4
    attributes = ("ESAType", "ESACanGenerate", "ESAState", "AbsMinPower", "AbsMaxPower",
                  "PowerAdjustmentCapability", "Forecast", "OptOutState")
    commands = ("PowerAdjustRequest", "CancelPowerAdjustRequest")
    notes = ("PowerAdjustRequest must fit one PowerAdjustmentCapability entry (power in mW, duration in s), "
             "else CONSTRAINT_ERROR; an opt-out for the request's cause also gives CONSTRAINT_ERROR.",
             "CancelPowerAdjustRequest answers FAILURE unless an adjustment is active.")

    def __init__(self, power_source: PowerSource = None, epoch_seconds: int = 0, **initial: Any):
        F = DEM.Bitmaps.Feature
        self.power_source = power_source
        self.epoch_seconds = epoch_seconds
        super().__init__(feature_map=int(F.kPowerAdjustment | F.kPowerForecastReporting), **initial)
        if self._values["AbsMinPower"] > self._values["AbsMaxPower"]:
            raise MatterError(Status.CONSTRAINT_ERROR, "DeviceEnergyManagement: AbsMinPower exceeds AbsMaxPower")
        self._meter = _Meter(0, 0)  # power 0 until the first reanchor(), as for energy measurement
        self._adjust: dict[str, Any] | None = None  # {"start", "end", "energy_at_start"}
        self._requested_mw: int | None = None
        #: Called after every accepted PowerAdjustRequest: a request while one is active changes
        #: the target without changing ESAState, so a listener on ESAState alone misses it.
        self.request_hooks: list[Callable[[], None]] = []
        self._forecast: dict[str, Any] | None = None  # {"id", "start", "slots": [[seconds, mW], ...]}
        self._forecast_id = 0

    def defaults(self) -> dict[str, Any]:
        S = DEM.Structs
        return {"ESAType": DEM.Enums.ESATypeEnum.kOther, "ESACanGenerate": False,
                "ESAState": DEM.Enums.ESAStateEnum.kOnline, "AbsMinPower": 0, "AbsMaxPower": 3_000_000,
                "PowerAdjustmentCapability": S.PowerAdjustCapabilityStruct(
                    powerAdjustCapability=[S.PowerAdjustStruct(minPower=0, maxPower=3_000_000,
                                                               minDuration=60, maxDuration=86_400)],
                    cause=DEM.Enums.PowerAdjustReasonEnum.kNoAdjustment),
                "Forecast": NullValue, "OptOutState": DEM.Enums.OptOutStateEnum.kNoOptOut}

    def _power_mw(self) -> int:
        return _mw(self.power_source()) if self.power_source is not None else 0

    def attach(self) -> None:
        self.reanchor()

    def reanchor(self) -> None:
        """The device's power changed (see ElectricalEnergyMeasurementServer.reanchor)."""
        self._meter.reanchor(self.now, self._power_mw())

    @property
    def requested_power(self) -> float | None:
        """Watts an active PowerAdjustRequest asks for, else None."""
        return None if self._requested_mw is None else self._requested_mw / 1000

    # ---- power adjustment ------------------------------------------------------------
    def PowerAdjustRequest(self, request: Any) -> None:
        state = self._values["ESAState"]
        if state in (DEM.Enums.ESAStateEnum.kOffline, DEM.Enums.ESAStateEnum.kFault):
            raise MatterError(Status.FAILURE, f"the appliance is {state.name[1:]} and cannot adjust its power")
        self._check_opt_out(request.cause)
        capability = self._values["PowerAdjustmentCapability"]
        offers = [] if capability is NullValue else capability.powerAdjustCapability
        offers = [] if offers is NullValue else offers
        if not any(o.minPower <= request.power <= o.maxPower and o.minDuration <= request.duration <= o.maxDuration
                   for o in offers):
            raise MatterError(Status.CONSTRAINT_ERROR,
                              f"power {request.power} mW for {request.duration} s fits no offer; offers: "
                              + ("; ".join(f"{o.minPower}..{o.maxPower} mW for {o.minDuration}..{o.maxDuration} s"
                                           for o in offers) or "none"))
        reason = (DEM.Enums.PowerAdjustReasonEnum.kLocalOptimizationAdjustment
                  if request.cause == DEM.Enums.AdjustmentCauseEnum.kLocalOptimization
                  else DEM.Enums.PowerAdjustReasonEnum.kGridOptimizationAdjustment)
        if self._adjust is None:  # a new request while active just replaces the target and end
            self._adjust = {"start": self.now, "energy_at_start": self._meter.at(self.now)[0]}
            self.emit_event(DEM.Events.PowerAdjustStart())
        self._adjust["end"] = self.now + request.duration * TICKS_PER_SECOND
        self._requested_mw = request.power
        self.set("PowerAdjustmentCapability", DEM.Structs.PowerAdjustCapabilityStruct(
            powerAdjustCapability=capability.powerAdjustCapability, cause=reason))
        self.set("ESAState", DEM.Enums.ESAStateEnum.kPowerAdjustActive)
        for hook in self.request_hooks:
            hook()

    def CancelPowerAdjustRequest(self, request: Any = None) -> None:
        if self._adjust is None:
            raise MatterError(Status.INVALID_IN_STATE, "no power adjustment is active")
        self._end_adjustment(self.now, DEM.Enums.CauseEnum.kCancelled)

    def _check_opt_out(self, cause: Any) -> None:
        Out, C = DEM.Enums.OptOutStateEnum, DEM.Enums.AdjustmentCauseEnum
        opt = self._values["OptOutState"]
        if opt == Out.kOptOut or (opt == Out.kLocalOptOut and cause == C.kLocalOptimization) or \
                (opt == Out.kGridOptOut and cause == C.kGridOptimization):
            raise MatterError(Status.CONSTRAINT_ERROR,
                              f"the user opted out ({opt.name[1:]}) of {C(cause).name[1:]} adjustments")

    def _end_adjustment(self, tick: int, cause: Any) -> None:
        adjust = self._adjust
        self._adjust, self._requested_mw = None, None
        used = _mwh(self._meter.at(tick)[0] - adjust["energy_at_start"])
        capability = self._values["PowerAdjustmentCapability"]
        self.set("PowerAdjustmentCapability", DEM.Structs.PowerAdjustCapabilityStruct(
            powerAdjustCapability=capability.powerAdjustCapability,
            cause=DEM.Enums.PowerAdjustReasonEnum.kNoAdjustment))
        self.set("ESAState", DEM.Enums.ESAStateEnum.kOnline)
        self.emit_event(DEM.Events.PowerAdjustEnd(cause=cause, duration=(tick - adjust["start"]) // TICKS_PER_SECOND,
                                                  energyUse=used))

    def set_opt_out(self, state: Any) -> None:
        """The user changed their opt-out locally; an adjustment it forbids ends at once."""
        self.set("OptOutState", DEM.Enums.OptOutStateEnum(int(state)))
        if self._adjust is not None and self._values["PowerAdjustmentCapability"].cause != \
                DEM.Enums.PowerAdjustReasonEnum.kNoAdjustment:
            cause = (DEM.Enums.AdjustmentCauseEnum.kLocalOptimization
                     if self._values["PowerAdjustmentCapability"].cause ==
                     DEM.Enums.PowerAdjustReasonEnum.kLocalOptimizationAdjustment
                     else DEM.Enums.AdjustmentCauseEnum.kGridOptimization)
            try:
                self._check_opt_out(cause)
            except MatterError:
                self._end_adjustment(self.now, DEM.Enums.CauseEnum.kUserOptOut)

    # ---- forecast ----------------------------------------------------------------------
    def set_forecast(self, slots: list[tuple[int, float]] | None) -> None:
        """Announce the plan from now: [(seconds, nominal watts), ...]; None clears it."""
        if slots is None:
            self._forecast = None
            self.set("Forecast", NullValue)
            return
        plan = []
        for i, slot in enumerate(slots):
            try:
                seconds, watts = slot
            except (TypeError, ValueError):
                raise MatterError(Status.CONSTRAINT_ERROR,
                                  f"forecast slot {i} {slot!r} is not (seconds, watts)") from None
            if isinstance(seconds, bool) or not isinstance(seconds, int) or seconds <= 0:
                raise MatterError(Status.CONSTRAINT_ERROR, f"forecast slot {i}: duration must be positive seconds")
            plan.append([seconds, _mw(watts)])
        if not 1 <= len(plan) <= 10:
            raise MatterError(Status.CONSTRAINT_ERROR, "a forecast has 1..10 slots")
        self._forecast_id += 1
        self._forecast = {"id": self._forecast_id, "start": self.now, "slots": plan}
        self.set("Forecast", self._forecast_struct(self.now))

    def _forecast_struct(self, tick: int):
        f = self._forecast
        S = DEM.Structs
        start_s = self.epoch_seconds + f["start"] // TICKS_PER_SECOND
        elapsed = (tick - f["start"]) // TICKS_PER_SECOND
        slots, offset, active = [], 0, NullValue
        for i, (seconds, mw) in enumerate(f["slots"]):
            done = min(max(elapsed - offset, 0), seconds)
            if active is NullValue and offset <= elapsed < offset + seconds:
                active = i
            slots.append(S.SlotStruct(minDuration=seconds, maxDuration=seconds, defaultDuration=seconds,
                                      elapsedSlotTime=done, remainingSlotTime=seconds - done, nominalPower=mw))
            offset += seconds
        return S.ForecastStruct(forecastID=f["id"], activeSlotNumber=active, startTime=start_s,
                                endTime=start_s + offset, isPausable=False, slots=slots,
                                forecastUpdateReason=DEM.Enums.ForecastUpdateReasonEnum.kInternalOptimization)

    derived = frozenset({"Forecast"})

    def get(self, name: str) -> Any:
        if name == "Forecast" and self._forecast is not None:
            return self._forecast_struct(self.now)  # slot times move with the clock
        return super().get(name)

    # ---- time ----------------------------------------------------------------------------
    def next_event_tick(self) -> int | None:
        return self._adjust["end"] if self._adjust is not None else None

    def advance_to(self, tick: int) -> None:
        if self._adjust is not None and self._adjust["end"] <= tick:
            self._end_adjustment(self._adjust["end"], DEM.Enums.CauseEnum.kNormalCompletion)

    def private_state(self) -> dict[str, Any]:
        return {"meter": self._meter.to_json(), "adjust": self._adjust, "requested_mw": self._requested_mw,
                "forecast": self._forecast, "forecast_id": self._forecast_id}

    def load_private_state(self, state: dict[str, Any]) -> None:
        super().load_private_state(state)
        self._meter = _Meter.from_json(state["meter"])
        self._adjust = state["adjust"]
        self._requested_mw = state["requested_mw"]
        self._forecast = state["forecast"]
        self._forecast_id = state["forecast_id"]


# ---- Power Source ----------------------------------------------------------------------------------
_WIRED = ("WiredAssessedInputVoltage", "WiredAssessedInputFrequency", "WiredAssessedCurrent", "WiredCurrentType",
          "WiredNominalVoltage", "WiredMaximumCurrent", "WiredPresent", "ActiveWiredFaults")
_BATTERY = ("BatVoltage", "BatPercentRemaining", "BatChargeLevel", "BatReplacementNeeded", "BatReplaceability",
            "BatPresent", "ActiveBatFaults")
_RECHARGEABLE = ("BatChargeState", "BatFunctionalWhileCharging")


class PowerSourceServer(ClusterServer):
    """One power source: mains (Wired feature) or a battery (Battery, optionally Rechargeable).

    The spec makes Wired and Battery exclusive: a device with both has two Power Source
    clusters, ordered by Order. EndpointList names the endpoints this source powers.
    """
    cluster = PS
    revision = 2

    def __init__(self, battery: bool = False, rechargeable: bool = False, power_source: PowerSource = None,
                 battery_rate: Callable[[], float] | None = None, **initial: Any):
        F = PS.Bitmaps.Feature
        if rechargeable and not battery:
            raise MatterError(Status.CONSTRAINT_ERROR, "PowerSource: Rechargeable needs the Battery feature")
        base = ("Status", "Order", "Description", "EndpointList")
        if battery:
            self.attributes = base + _BATTERY + (_RECHARGEABLE if rechargeable else ())
            feature_map = int(F.kBattery) | (int(F.kRechargeable) if rechargeable else 0)
        else:
            self.attributes = base + _WIRED
            feature_map = int(F.kWired)
        self.power_source = power_source
        #: The battery's rate of change now, in % per second (negative: draining), set by the
        #: composition from what the device is doing; `battery_changed()` when it changes.
        self.battery_rate = battery_rate
        #: [tick, level in 1/1000 %, rate in 1/1000 % per tick] once the level moves on its own.
        self._charge: list[int] | None = None
        #: Charge used by discrete actions (`drain`: a lock's motor turns, a sensor radios a
        #: report), in 1/1000 %, for batteries that do not move on their own.
        self._used = 0
        super().__init__(feature_map=feature_map, **initial)

    def defaults(self) -> dict[str, Any]:
        E = PS.Enums
        battery = bool(self.feature_map & int(PS.Bitmaps.Feature.kBattery))
        return {"Status": E.PowerSourceStatusEnum.kActive, "Order": 0,
                "Description": "Battery" if battery else "Mains", "EndpointList": [],
                "WiredAssessedInputVoltage": 230_000, "WiredAssessedInputFrequency": 50,
                "WiredAssessedCurrent": NullValue, "WiredCurrentType": E.WiredCurrentTypeEnum.kAc,
                "WiredNominalVoltage": 230_000, "WiredMaximumCurrent": 16_000, "WiredPresent": True,
                "ActiveWiredFaults": [], "BatVoltage": 3_700, "BatPercentRemaining": 200,
                "BatChargeLevel": E.BatChargeLevelEnum.kOk, "BatReplacementNeeded": False,
                "BatReplaceability": E.BatReplaceabilityEnum.kNotReplaceable, "BatPresent": True,
                "ActiveBatFaults": [], "BatChargeState": E.BatChargeStateEnum.kIsNotCharging,
                "BatFunctionalWhileCharging": True}

    derived = frozenset({"WiredAssessedCurrent", "BatPercentRemaining"})
    sample_seconds = {"BatPercentRemaining": 10}   # Q quality: reported at most every 10 s

    def get(self, name: str) -> Any:
        if name == "BatPercentRemaining" and self._charge is not None:
            return self._level(self.now) * 2 // 1000   # half-percent units
        if name == "WiredAssessedCurrent" and self.power_source is not None:
            volts_mv = self._values["WiredAssessedInputVoltage"]
            if volts_mv is NullValue or not volts_mv:
                return NullValue
            return int(round(abs(_mw(self.power_source())) * 1000 / volts_mv))  # mA
        return super().get(name)

    # ---- a battery that drains and charges (anchor based, like the energy meters) -----------
    # Levels (1/1000 %) at which BatChargeLevel or BatChargeState changes: below 10 % is
    # Critical, below 20 % Warning (set_battery), and empty and full stop the movement.
    _FALLING = (0, 9_999, 19_999)
    _RISING = (10_000, 20_000, 100_000)

    def _level(self, tick: int) -> int:
        t0, level, rate = self._charge or (tick, 0, 0)
        return min(max(level + rate * max(tick - t0, 0), 0), 100_000)

    def _rate_now(self) -> int:
        """The battery rate in 1/1000 % per tick (0 at the end it is heading to)."""
        if self.battery_rate is None:
            return 0
        return int(round(self.battery_rate() * 1000 / TICKS_PER_SECOND))

    def battery_changed(self) -> None:
        """What drives the battery changed (a run started, the robot docked): re-anchor."""
        if self.battery_rate is None or "BatPercentRemaining" not in self._values:
            return
        level = self._level(self.now) if self._charge is not None else self._values["BatPercentRemaining"] * 500
        rate = self._rate_now()
        self._charge = [self.now, level, 0 if (level, rate > 0) in ((0, False), (100_000, True)) else rate]
        self._store_battery(level)

    def _store_battery(self, level: int) -> None:
        on_charger = self.battery_rate is not None and self.battery_rate() > 0
        self.set_battery(level / 1000, charging=on_charger)

    def next_event_tick(self) -> int | None:
        if self.battery_rate is not None and self._charge is None and self._rate_now():
            return self.now   # first movement: anchor at the home's clock
        if self._charge is None or not self._charge[2]:
            return None
        t0, level, rate = self._charge   # from the anchor: the same answer at every tick
        ahead = [t for t in (self._RISING if rate > 0 else self._FALLING) if (t > level if rate > 0 else t < level)]
        if not ahead:
            return None
        target = min(ahead) if rate > 0 else max(ahead)
        return t0 + max(1, -(-(abs(target - level)) // abs(rate)))

    def advance_to(self, tick: int) -> None:
        while (due := self.next_event_tick()) is not None and due <= tick:
            if self._charge is None:
                self.battery_changed()
                continue
            level = self._level(due)
            self._charge = [due, level, 0 if level in (0, 100_000) else self._charge[2]]
            self._store_battery(level)

    def drain(self, percent: float) -> None:
        """An action used `percent` of a full charge (a battery without a rate of its own)."""
        self.changing()
        self._used = min(self._used + round(percent * 1000), 100_000)
        self.set_battery((100_000 - self._used) / 1000)

    def private_state(self) -> dict[str, Any]:
        return {"charge": list(self._charge) if self._charge else None, **({"used": self._used} if self._used else {})}

    def load_private_state(self, state: dict[str, Any]) -> None:
        self._charge = state.get("charge")
        self._used = state.get("used", 0)

    def stop_motion(self) -> None:
        self._charge = None

    def reanchor(self) -> None:
        """The power drawn changed: store the new current so subscribers see it."""
        if "WiredAssessedCurrent" in self._values:
            self.set("WiredAssessedCurrent", self.get("WiredAssessedCurrent"))

    def set_battery(self, percent: float, charging: bool | None = None) -> None:
        """The device model's battery level (0..100 %) and, if rechargeable, whether it charges."""
        if "BatPercentRemaining" not in self._values:
            raise MatterError(Status.UNSUPPORTED_ATTRIBUTE, "this power source is not a battery")
        if not 0 <= percent <= 100:
            raise MatterError(Status.CONSTRAINT_ERROR, f"battery percent {percent} is outside 0..100")
        level = PS.Enums.BatChargeLevelEnum
        self.set("BatPercentRemaining", int(round(percent * 2)))  # half-percent units
        self.set("BatChargeLevel", level.kCritical if percent < 10 else level.kWarning if percent < 20 else level.kOk)
        if charging is not None and "BatChargeState" in self._values:
            state = PS.Enums.BatChargeStateEnum
            self.set("BatChargeState", state.kIsAtFullCharge if charging and percent >= 100
                     else state.kIsCharging if charging else state.kIsNotCharging)


# ---- Power Topology -----------------------------------------------------------------------------------
class PowerTopologyServer(ClusterServer):
    """Which endpoints the node's power measurements cover.

    topology="node": the whole node (no attributes); "tree": this endpoint and its descendants (no
    attributes); "set": the endpoints in AvailableEndpoints, and with `dynamic=True` also
    ActiveEndpoints, the subset drawing power right now (`set_active_endpoints`). The spec
    allows exactly one of the three; DynamicPowerFlow needs "set".
    """
    cluster = PT
    revision = 1
    MAX_ENDPOINTS = 20

    def __init__(self, topology: str = "node", dynamic: bool = False, **initial: Any):
        F = PT.Bitmaps.Feature
        features = {"node": F.kNodeTopology, "tree": F.kTreeTopology, "set": F.kSetTopology}
        if topology not in features:
            raise MatterError(Status.CONSTRAINT_ERROR, f"topology {topology!r} is not one of node, tree, set")
        if dynamic and topology != "set":
            raise MatterError(Status.CONSTRAINT_ERROR, "PowerTopology DynamicPowerFlow needs the set topology")
        self.attributes = (("AvailableEndpoints",) if topology == "set" else ()) + \
                          (("ActiveEndpoints",) if dynamic else ())
        super().__init__(feature_map=int(features[topology]) | (int(F.kDynamicPowerFlow) if dynamic else 0),
                         **initial)
        if "AvailableEndpoints" in self._values and len(self._values["AvailableEndpoints"]) > self.MAX_ENDPOINTS:
            raise MatterError(Status.CONSTRAINT_ERROR, f"AvailableEndpoints holds at most {self.MAX_ENDPOINTS}")
        if "ActiveEndpoints" in self._values:
            self.set_active_endpoints(self._values["ActiveEndpoints"])

    def defaults(self) -> dict[str, Any]:
        return {"AvailableEndpoints": [], "ActiveEndpoints": []}

    def set_active_endpoints(self, endpoints: list[int]) -> None:
        extra = sorted(set(endpoints) - set(self._values["AvailableEndpoints"]))
        if extra:
            raise MatterError(Status.CONSTRAINT_ERROR,
                              f"ActiveEndpoints {extra} are not in AvailableEndpoints "
                              f"{self._values['AvailableEndpoints']}")
        self.set("ActiveEndpoints", sorted(set(endpoints)))
