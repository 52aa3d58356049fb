"""Kitchen appliance cluster servers (Matter 1.4): Oven Cavity Operational State, Oven Mode,
Microwave Oven Mode and Microwave Oven Control, and the oven cavity's temperature.

- Oven Cavity Operational State is Operational State without Pause/Resume (the spec
  disallows them): Stopped, Running, Error. Each Oven Mode carries its cycle (preheat, bake).
- An oven cavity's temperature (`CavityTemperature`) is first order towards the setpoint while
  the cavity runs and back towards the kitchen's 22 °C when it stops: one anchor (tick,
  temperature, target, time constant), closed form `target + (t0 - target) * exp(-dt / tau)`,
  re-anchored only when the run or the setpoint changes, so stepping and fast-forward agree.
- Microwave Oven Mode has no commands (the mode is set by SetCookingParameters).
- Microwave Oven Control (PowerAsNumber, PowerNumberLimits): SetCookingParameters sets the
  mode, cook time and power and the operational state's one-phase cycle; AddMoreTime extends
  CookTime, and a running cook with it. Both refuse out of range values (CONSTRAINT_ERROR);
  SetCookingParameters while cooking answers INVALID_IN_STATE.
"""
from __future__ import annotations

import math
from typing import Any

from clusters.base import TICKS_PER_SECOND, Clusters, ClusterServer, MatterError, Status, check_range
from clusters.modes import ModeBaseServer, ModeOption
from clusters.operational_state import OperationalStateServer

OCOS = Clusters.OvenCavityOperationalState
MWOC = Clusters.MicrowaveOvenControl
_OV = Clusters.OvenMode.Enums.ModeTag
_MW = Clusters.MicrowaveOvenMode.Enums.ModeTag
KITCHEN_C = 22.0


class OvenCavityOperationalStateServer(OperationalStateServer):
    """Also keeps the cavity temperature's anchor (`cavity`, see CavityTemperature)."""
    cluster = OCOS
    commands = ("Stop", "Start")
    states = (0, 1, 3)   # Stopped, Running, Error: an oven cavity does not pause

    def __init__(self, cycle: Any = None, **initial: Any):
        super().__init__(cycle, **initial)
        self.cavity: list[Any] | None = None

    def private_state(self) -> dict[str, Any]:
        return {**super().private_state(), "cavity": self.cavity}

    def load_private_state(self, state: dict[str, Any]) -> None:
        super().load_private_state(state)
        self.cavity = state.get("cavity")


class OvenModeServer(ModeBaseServer):
    cluster = Clusters.OvenMode
    operational = OCOS
    default_modes = (
        ModeOption("Bake", 0, (_OV.kBake,), (("preheating", 600), ("baking", 2400))),
        ModeOption("Convection", 1, (_OV.kConvection,), (("preheating", 480), ("baking", 1800))),
        ModeOption("Grill", 2, (_OV.kGrill,), (("grilling", 1200),)),
        ModeOption("Roast", 3, (_OV.kRoast,), (("preheating", 600), ("roasting", 3600))),
        ModeOption("Clean", 4, (_OV.kClean,), (("cleaning", 5400), ("cooling down", 1800))),
        ModeOption("Warming", 5, (_OV.kWarming,), (("warming", 1800),)),
        ModeOption("Proofing", 6, (_OV.kProofing,), (("proofing", 2700),)),
    )


class CavityTemperature:
    """An oven cavity's temperature (°C), heated while `running()` towards `setpoint()`.
    Owned by the cavity's TemperatureMeasurement (its `sensor_source`); its anchor lives in
    the cavity's operational state server (`ops.cavity`), so snapshots and forks carry it."""

    HEAT_TAU_S = 480.0    # about 8 min to come within a third of the setpoint's distance
    COOL_TAU_S = 1800.0

    def __init__(self, ops: OvenCavityOperationalStateServer, control: Any):
        self.ops, self.control = ops, control

    def running(self) -> bool:
        return self.ops.get("OperationalState") == self.ops.E.kRunning

    def target(self) -> float:
        return self.control.get("TemperatureSetpoint") / 100.0 if self.running() else KITCHEN_C

    def at(self, tick: int) -> float:
        t0, x0, target, tau = self.ops.cavity or (0, KITCHEN_C, KITCHEN_C, self.COOL_TAU_S)
        return target + (x0 - target) * math.exp(-max(tick - t0, 0) / (tau * TICKS_PER_SECOND))

    def now(self) -> float:
        return round(self.at(self.ops.now), 2)

    def reanchor(self, *_: Any) -> None:
        tau = self.HEAT_TAU_S if self.running() else self.COOL_TAU_S
        self.ops.cavity = [self.ops.now, self.at(self.ops.now), self.target(), tau]


class MicrowaveOvenModeServer(ModeBaseServer):
    cluster = Clusters.MicrowaveOvenMode
    commands = ()          # set through Microwave Oven Control's SetCookingParameters
    default_modes = (ModeOption("Normal", 0, (_MW.kNormal,)), ModeOption("Defrost", 1, (_MW.kDefrost,)))


class MicrowaveOvenControlServer(ClusterServer):
    cluster = MWOC
    revision = 1
    attributes = ("CookTime", "MaxCookTime", "PowerSetting", "MinPower", "MaxPower", "PowerStep")
    commands = ("SetCookingParameters", "AddMoreTime")
    notes = ("CookTime is in seconds (1..MaxCookTime); PowerSetting is a percentage from MinPower to "
             "MaxPower on PowerStep's grid.",
             "SetCookingParameters while cooking answers INVALID_IN_STATE; startAfterSetting starts the cook.")

    def __init__(self, watts: float = 900.0, **initial: Any):
        F = MWOC.Bitmaps.Feature
        self.watts = float(watts)
        super().__init__(feature_map=int(F.kPowerAsNumber) | int(F.kPowerNumberLimits), **initial)

    def defaults(self) -> dict[str, Any]:
        return {"CookTime": 30, "MaxCookTime": 86400, "PowerSetting": 100, "MinPower": 10, "MaxPower": 100,
                "PowerStep": 10}

    def _ops(self) -> OperationalStateServer:
        return self.sibling(Clusters.OperationalState)

    def power_watts(self) -> float:
        ops = self._ops()
        running = ops is not None and ops.get("OperationalState") == ops.E.kRunning
        return self.watts * self.get("PowerSetting") / 100 if running else 0.0

    def SetCookingParameters(self, request: Any) -> None:
        ops = self._ops()
        if ops is not None and ops.get("OperationalState") in (ops.E.kRunning, ops.E.kPaused):
            raise MatterError(Status.INVALID_IN_STATE, "cannot change the cooking parameters while cooking; "
                              "Stop (or let it finish) first")
        mode = self.sibling(Clusters.MicrowaveOvenMode)
        if request.cookMode is not None and (mode is None or mode.option(request.cookMode) is None):
            raise MatterError(Status.CONSTRAINT_ERROR, f"cookMode={request.cookMode} is not a supported mode")
        if request.cookTime is not None:
            check_range("SetCookingParameters.cookTime", request.cookTime, 1, self.get("MaxCookTime"))
        if request.powerSetting is not None:
            low, high, step = self.get("MinPower"), self.get("MaxPower"), self.get("PowerStep")
            check_range("SetCookingParameters.powerSetting", request.powerSetting, low, high)
            if (request.powerSetting - low) % step:
                raise MatterError(Status.CONSTRAINT_ERROR, f"powerSetting={request.powerSetting} is not on the "
                                  f"{step} % grid from {low}")
        if request.wattSettingIndex is not None:
            raise MatterError(Status.CONSTRAINT_ERROR, "wattSettingIndex needs the PowerInWatts feature; "
                              "this oven takes powerSetting (a percentage)")
        if mode is not None:
            mode.set("CurrentMode", mode.modes[0].mode if request.cookMode is None else request.cookMode)
        self.set("CookTime", 30 if request.cookTime is None else int(request.cookTime))
        self.set("PowerSetting", self.get("MaxPower") if request.powerSetting is None else int(request.powerSetting))
        if ops is not None:
            ops.set_cycle([("cooking", self.get("CookTime"))])
            if request.startAfterSetting:
                ops.Start()

    def AddMoreTime(self, request: Any) -> None:
        total = self.get("CookTime") + int(request.timeToAdd)
        check_range("AddMoreTime: CookTime + timeToAdd", total, 1, self.get("MaxCookTime"))
        self.set("CookTime", total)
        ops = self._ops()
        if ops is None:
            return
        if ops.in_operation:
            ops.extend_last_phase(int(request.timeToAdd))
        else:
            ops.set_cycle([("cooking", total)])

