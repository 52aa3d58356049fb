"""Water cluster servers (Matter 1.4): Water Heater Management (with the tank it heats),
Water Heater Mode, Valve Configuration and Control, Pump Configuration and Control.

The hot water tank (`WaterHeaterManagementServer`) is piecewise closed form, so stepping and
fast-forward agree exactly. Its temperature T has one anchor (tick, T0, heating):
- heating: T rises linearly at heater power / (volume * 4186 J/kg K) until the setpoint,
  a discrete event at the exact tick it is reached;
- idle: T decays towards the room (ROOM_C) with the tank's time constant, and heating starts
  again when T falls HYSTERESIS_C below the setpoint (the tick solved from the closed form);
- a draw of hot water (`draw(litres)`, or daily draws at given times of day) mixes cold mains
  water (COLD_C) in at once and re-anchors.
Heating needs Water Heater Mode other than Off and the Thermostat's SystemMode other than Off,
or an active Boost, which heats to its temporary setpoint (or the setpoint) for its duration.
"""
from __future__ import annotations

import datetime
import math
from typing import Any

from chip.clusters.Types import NullValue

from clusters.base import TICKS_PER_SECOND, Clusters, ClusterServer, MatterError, Status, check_range
from clusters.modes import ModeBaseServer, ModeOption

WHM = Clusters.WaterHeaterManagement
VCC = Clusters.ValveConfigurationAndControl
PCC = Clusters.PumpConfigurationAndControl
_WH = Clusters.WaterHeaterMode.Enums.ModeTag
COLD_C = 10.0
ROOM_C = 20.0
HYSTERESIS_C = 5.0
WATER_J_PER_L_K = 4186.0


class WaterHeaterModeServer(ModeBaseServer):
    cluster = Clusters.WaterHeaterMode
    revision = 1
    default_modes = (ModeOption("Off", 0, (_WH.kOff,)), ModeOption("Manual", 1, (_WH.kManual,)),
                     ModeOption("Timed", 2, (_WH.kTimed,)))

    def __init__(self, **initial: Any):
        super().__init__(**{"CurrentMode": 1, **initial})

    @property
    def heating_allowed(self) -> bool:
        return int(_WH.kOff) not in self.current.tags


class WaterHeaterManagementServer(ClusterServer):
    cluster = WHM
    revision = 2
    attributes = ("HeaterTypes", "HeatDemand", "TankVolume", "EstimatedHeatRequired", "TankPercentage", "BoostState")
    commands = ("Boost", "CancelBoost")
    notes = ("The tank heats while Water Heater Mode is not Off and Thermostat.SystemMode is not Off "
             "(or during a Boost) until OccupiedHeatingSetpoint, and reheats 5 °C below it.",
             "Boost heats to temporarySetpoint (or the setpoint) for `duration` seconds.")

    def __init__(self, volume_l: float = 150.0, heater_watts: float = 3000.0,
                 draws: list[list[Any]] | None = None, **initial: Any):
        F = WHM.Bitmaps.Feature
        if not 10 <= volume_l <= 1000 or not 100 <= heater_watts <= 12000:
            raise MatterError(Status.CONSTRAINT_ERROR, "water heater: volume_l must be 10..1000 and heater_watts "
                              "100..12000")
        self.volume_l, self.heater_watts = float(volume_l), float(heater_watts)
        self._draws = _parse_draws(draws)
        super().__init__(feature_map=int(F.kEnergyManagement) | int(F.kTankPercent),
                         **{"TankVolume": int(volume_l), **initial})
        self._tank: list[Any] = [0, 55.0, False]        # [tick, temperature, heating]
        self._boost: list[Any] | None = None            # [end tick, setpoint °C]
        self._last_draw = -1                             # tick of the last daily draw done

    def defaults(self) -> dict[str, Any]:
        return {"HeaterTypes": WHM.Bitmaps.WaterHeaterHeatSourceBitmap.kImmersionElement1, "HeatDemand": 0,
                "TankVolume": 150, "EstimatedHeatRequired": 0, "TankPercentage": 100,
                "BoostState": WHM.Enums.BoostStateEnum.kInactive}

    # ---- the tank ------------------------------------------------------------------
    def _thermostat(self) -> Any:
        return self.sibling(Clusters.Thermostat)

    def setpoint(self) -> float:
        if self._boost is not None:
            return self._boost[1]
        t = self._thermostat()
        return t.get("OccupiedHeatingSetpoint") / 100.0 if t is not None else 55.0

    def allowed(self) -> bool:
        if self._boost is not None:
            return True
        mode = self.sibling(Clusters.WaterHeaterMode)
        t = self._thermostat()
        return (mode is None or mode.heating_allowed) and (t is None or int(t.get("SystemMode")) != 0)

    @property
    def rate(self) -> float:
        """°C per tick while heating."""
        return self.heater_watts / (self.volume_l * WATER_J_PER_L_K) / TICKS_PER_SECOND

    @property
    def decay(self) -> float:
        """Per tick: a well insulated tank loses half its excess over the room in about 2 days."""
        return math.log(2) / (2 * 86400 * TICKS_PER_SECOND)

    def temperature(self, tick: int | None = None) -> float:
        t0, x0, heating = self._tank
        dt = max((self.now if tick is None else tick) - t0, 0)
        if heating:
            return x0 + self.rate * dt
        return ROOM_C + (x0 - ROOM_C) * math.exp(-self.decay * dt)

    def heating(self) -> bool:
        return bool(self._tank[2])

    def power_watts(self) -> float:
        return self.heater_watts if self.heating() else 0.0

    def _reanchor(self, temperature: float | None = None) -> None:
        x = self.temperature() if temperature is None else temperature
        target = self.setpoint()
        if self.heating():
            heating = self.allowed() and x < target
        else:
            heating = self.allowed() and x < target - (0 if temperature is None and self._boost else HYSTERESIS_C)
        self._tank = [self.now, x, heating]
        self._store()   # HeatDemand follows, which is what the power meters listen to

    def _store(self) -> None:
        x, target = self.temperature(), self.setpoint()
        self.set("HeatDemand", int(WHM.Bitmaps.WaterHeaterHeatSourceBitmap.kImmersionElement1) if self.heating() else 0)
        self.set("TankPercentage", int(min(max((x - COLD_C) / max(target - COLD_C, 1.0), 0.0), 1.0) * 100))
        need_j = max(target - x, 0.0) * self.volume_l * WATER_J_PER_L_K
        self.set("EstimatedHeatRequired", int(need_j / 3.6))   # J -> mWh

    derived = frozenset({"TankPercentage", "EstimatedHeatRequired"})

    def get(self, name: str) -> Any:
        if name in ("TankPercentage", "EstimatedHeatRequired") and "HeaterTypes" in self._values:
            x, target = self.temperature(), self.setpoint()
            if name == "TankPercentage":
                return int(min(max((x - COLD_C) / max(target - COLD_C, 1.0), 0.0), 1.0) * 100)
            return int(max(target - x, 0.0) * self.volume_l * WATER_J_PER_L_K / 3.6)
        return super().get(name)

    def draw(self, litres: float) -> None:
        """Hot water is drawn: as much cold mains water flows in and mixes at once."""
        self.changing()
        if not 0 < litres <= self.volume_l:
            raise MatterError(Status.CONSTRAINT_ERROR, f"litres={litres}: draw 0..{self.volume_l:g} l")
        x = self.temperature()
        mixed = (x * (self.volume_l - litres) + COLD_C * litres) / self.volume_l
        self._tank = [self.now, x, self._tank[2]]
        self._reanchor(mixed)

    def controls_changed(self, *_: Any) -> None:
        """Mode, SystemMode or the setpoint changed: heat or not from now."""
        self._reanchor()

    # ---- events ---------------------------------------------------------------------
    def _day_start(self) -> int | None:
        """The tick of today's midnight (None for a clock without a date)."""
        now = getattr(self.clock, "now", None)
        if not isinstance(now, datetime.datetime):
            return None
        return self.now - (now.hour * 3600 + now.minute * 60 + now.second) * TICKS_PER_SECOND \
            - now.microsecond // 100_000

    def _next_draw(self) -> int | None:
        midnight = self._day_start()
        if not self._draws or midnight is None:
            return None
        after = max(self.now - 1, self._last_draw)   # the next draw not yet done
        return min(t for day in (0, 1) for seconds, _ in self._draws
                   if (t := midnight + (day * 86400 + seconds) * TICKS_PER_SECOND) > after)

    def _tank_event(self) -> int | None:
        t0, x0, heating = self._tank
        target = self.setpoint()
        if heating:
            return t0 + max(math.ceil((target - x0) / self.rate), 1)
        low = target - HYSTERESIS_C
        if not self.allowed() or low <= ROOM_C or x0 < low:
            return None
        return t0 + max(math.ceil(math.log((x0 - ROOM_C) / (low - ROOM_C)) / self.decay), 1)

    def next_event_tick(self) -> int | None:
        ticks = [t for t in (self._tank_event(), self._boost[0] if self._boost else None, self._next_draw())
                 if t is not None]
        return min(ticks) if ticks else None

    def advance_to(self, tick: int) -> None:
        """One event at a time, in order (the home calls this at each event's own tick)."""
        while (due := self.next_event_tick()) is not None and due <= tick:
            if self._boost is not None and due == self._boost[0]:
                self._boost = None
                self.set("BoostState", WHM.Enums.BoostStateEnum.kInactive)
                self.emit_event(WHM.Events.BoostEnded())
                self._reanchor()
            elif due == self._tank_event():
                target = self.setpoint()
                if self._tank[2]:   # reached the setpoint exactly
                    self._tank = [due, target, True]
                    self._reanchor()
                else:               # cooled to the reheat threshold: heat again
                    self._tank = [due, target - HYSTERESIS_C, False]
                    self._reanchor(target - HYSTERESIS_C - 1e-9)
            else:                   # a daily draw
                midnight = self._day_start()
                seconds = ((due - midnight) // TICKS_PER_SECOND) % 86400 if midnight is not None else -1
                litres = sum(v for s, v in self._draws if s == seconds)
                self._last_draw = due
                self.draw(min(litres, self.volume_l))

    # ---- commands ---------------------------------------------------------------------
    def Boost(self, request: Any) -> None:
        info = request.boostInfo
        check_range("Boost.duration", info.duration, 1, 0xFFFFFFFF)
        target = self.setpoint() if info.temporarySetpoint is None else info.temporarySetpoint / 100.0
        if self._boost is None:
            check_range("Boost.temporarySetpoint", target, COLD_C, 95.0)
        self._boost = [self.now + int(info.duration) * TICKS_PER_SECOND, target]
        self.set("BoostState", WHM.Enums.BoostStateEnum.kActive)
        self.emit_event(WHM.Events.BoostStarted(boostInfo=info))
        self._reanchor()

    def CancelBoost(self, request: Any = None) -> None:
        if self._boost is None:
            return
        self._boost = None
        self.set("BoostState", WHM.Enums.BoostStateEnum.kInactive)
        self.emit_event(WHM.Events.BoostEnded())
        self._reanchor()

    # ---- persistence ------------------------------------------------------------------
    def attach(self) -> None:
        for cluster in (Clusters.Thermostat, Clusters.WaterHeaterMode):
            server = self.sibling(cluster)
            if server is not None:
                server.listeners.append(self._sibling_changed)
        self._reanchor(self._tank[1])

    def _sibling_changed(self, server: ClusterServer, name: str) -> None:
        if name in ("CurrentMode", "SystemMode", "OccupiedHeatingSetpoint"):
            self.controls_changed()

    def private_state(self) -> dict[str, Any]:
        return {"tank": list(self._tank), "boost": self._boost, "last_draw": self._last_draw}

    def load_private_state(self, state: dict[str, Any]) -> None:
        self._tank = list(state["tank"])
        self._boost = state.get("boost")
        self._last_draw = state.get("last_draw", -1)

    def stop_motion(self) -> None:
        self._boost = None
        self._values["BoostState"] = WHM.Enums.BoostStateEnum.kInactive


def _parse_draws(draws: Any) -> list[tuple[int, float]]:
    """`draws`: [["07:00", 40], ...]: litres of hot water drawn every day at a time of day."""
    out = []
    for i, item in enumerate(draws or []):
        try:
            when, litres = item
            hours, minutes = (int(p) for p in str(when).split(":"))
            if not (0 <= hours < 24 and 0 <= minutes < 60 and 0 < float(litres) <= 1000):
                raise ValueError
        except (TypeError, ValueError):
            raise MatterError(Status.CONSTRAINT_ERROR,
                              f"draws[{i}]={item!r}: expected [\"HH:MM\", litres] (litres 0..1000)") from None
        out.append((hours * 3600 + minutes * 60, float(litres)))
    return sorted(out)


# ---- valves -----------------------------------------------------------------------------------
class ValveConfigurationAndControlServer(ClusterServer):
    """A water valve without the Level feature: Open (for OpenDuration, else DefaultOpenDuration,
    null meaning until closed), Close; it takes TRAVEL_S to move (CurrentState Transitioning),
    then ValveStateChanged. RemainingDuration counts down and the valve closes at 0."""
    cluster = VCC
    revision = 1
    attributes = ("OpenDuration", "DefaultOpenDuration", "RemainingDuration", "CurrentState", "TargetState",
                  "ValveFault")
    writable = frozenset({"DefaultOpenDuration"})
    commands = ("Open", "Close")
    TRAVEL_S = 2

    def __init__(self, **initial: Any):
        super().__init__(**initial)
        self._arrive: int | None = None     # tick the valve finishes moving
        self._close_at: int | None = None   # tick an open duration ends

    def defaults(self) -> dict[str, Any]:
        E = VCC.Enums.ValveStateEnum
        return {"OpenDuration": NullValue, "DefaultOpenDuration": NullValue, "RemainingDuration": NullValue,
                "CurrentState": E.kClosed, "TargetState": NullValue, "ValveFault": 0}

    def validate_write(self, name: str, value: Any) -> None:
        if name == "DefaultOpenDuration" and value is not NullValue and value is not None:
            check_range("DefaultOpenDuration", value, 1, 0xFFFFFFFF)

    @property
    def is_open(self) -> bool:
        return self.get("CurrentState") == VCC.Enums.ValveStateEnum.kOpen

    derived = frozenset({"RemainingDuration"})

    def get(self, name: str) -> Any:
        if name == "RemainingDuration" and self._close_at is not None:
            return max(-(-(self._close_at - self.now) // TICKS_PER_SECOND), 0)
        return super().get(name)

    def _move(self, target: Any) -> None:
        self.set("TargetState", target)
        self.set("CurrentState", VCC.Enums.ValveStateEnum.kTransitioning)
        self._arrive = self.now + self.TRAVEL_S * TICKS_PER_SECOND

    def Open(self, request: Any) -> None:
        if request.targetLevel is not None:
            raise MatterError(Status.CONSTRAINT_ERROR, "targetLevel needs the Level feature; this valve is open/closed")
        duration = request.openDuration
        if duration is None:
            duration = self.get("DefaultOpenDuration")
        if duration is not NullValue:
            check_range("Open.openDuration", duration, 1, 0xFFFFFFFF)
        self.set("OpenDuration", duration)
        self._close_at = None if duration is NullValue else self.now + int(duration) * TICKS_PER_SECOND
        self.set("RemainingDuration", NullValue if duration is NullValue else int(duration))
        if not self.is_open:
            self._move(VCC.Enums.ValveStateEnum.kOpen)

    def Close(self, request: Any = None) -> None:
        self._close_at = None
        self.set("OpenDuration", NullValue)
        self.set("RemainingDuration", NullValue)
        if self.get("CurrentState") != VCC.Enums.ValveStateEnum.kClosed or self.get("TargetState") is not NullValue:
            self._move(VCC.Enums.ValveStateEnum.kClosed)

    def next_event_tick(self) -> int | None:
        ticks = [t for t in (self._arrive, self._close_at) if t is not None]
        return min(ticks) if ticks else None

    def advance_to(self, tick: int) -> None:
        if self._arrive is not None and tick >= self._arrive:
            self._arrive = None
            target = self.get("TargetState")
            self.set("CurrentState", target)
            self.set("TargetState", NullValue)
            self.emit_event(VCC.Events.ValveStateChanged(valveState=target))
        if self._close_at is not None and tick >= self._close_at:
            self.Close()

    def private_state(self) -> dict[str, Any]:
        return {"arrive": self._arrive, "close_at": self._close_at}

    def load_private_state(self, state: dict[str, Any]) -> None:
        self._arrive, self._close_at = state.get("arrive"), state.get("close_at")

    def stop_motion(self) -> None:
        self._arrive = self._close_at = None
        self._values["TargetState"] = NullValue
        self._values["RemainingDuration"] = NullValue


# ---- pumps ------------------------------------------------------------------------------------
class PumpConfigurationAndControlServer(ClusterServer):
    """A circulation pump (ConstantSpeed feature): it runs while its OnOff is on, at the speed its
    LevelControl sets (Normal) or at its limits (OperationMode Minimum/Maximum). Speed, Capacity
    (flow) and Power follow; LifetimeRunningHours and LifetimeEnergyConsumed count running time."""
    cluster = PCC
    revision = 4
    attributes = ("MaxPressure", "MaxSpeed", "MaxFlow", "MinConstSpeed", "MaxConstSpeed", "EffectiveOperationMode",
                  "EffectiveControlMode", "Capacity", "Speed", "LifetimeRunningHours", "Power",
                  "LifetimeEnergyConsumed", "OperationMode", "ControlMode", "PumpStatus")
    writable = frozenset({"OperationMode", "ControlMode"})

    def __init__(self, max_speed: int = 3000, max_flow: int = 40, max_watts: int = 60, **initial: Any):
        self._max_watts = int(max_watts)
        super().__init__(feature_map=int(PCC.Bitmaps.Feature.kConstantSpeed),
                         **{"MaxSpeed": max_speed, "MaxConstSpeed": max_speed, "MaxFlow": max_flow, **initial})
        self._since: int | None = None        # tick the pump started running
        self._run_ticks = 0                   # running ticks before that
        self._energy_wticks = 0               # W·ticks before that

    def defaults(self) -> dict[str, Any]:
        E = PCC.Enums
        return {"MaxPressure": 3000, "MaxSpeed": 3000, "MaxFlow": 40, "MinConstSpeed": 600, "MaxConstSpeed": 3000,
                "EffectiveOperationMode": E.OperationModeEnum.kNormal,
                "EffectiveControlMode": E.ControlModeEnum.kConstantSpeed, "Capacity": 0, "Speed": 0,
                "LifetimeRunningHours": 0, "Power": 0, "LifetimeEnergyConsumed": 0,
                "OperationMode": E.OperationModeEnum.kNormal, "ControlMode": E.ControlModeEnum.kConstantSpeed,
                "PumpStatus": 0}

    def validate_write(self, name: str, value: Any) -> None:
        E = PCC.Enums
        if name == "OperationMode" and value not in (E.OperationModeEnum.kNormal, E.OperationModeEnum.kMinimum,
                                                     E.OperationModeEnum.kMaximum):
            raise MatterError(Status.CONSTRAINT_ERROR, f"OperationMode={int(value)}: this pump takes Normal (0), "
                              "Minimum (1) or Maximum (2)")
        if name == "ControlMode" and value != E.ControlModeEnum.kConstantSpeed:
            raise MatterError(Status.CONSTRAINT_ERROR, f"ControlMode={int(value)}: this pump has ConstantSpeed (0) "
                              "only")

    def after_write(self, name: str, value: Any) -> None:
        self.refresh()

    def _fraction(self) -> float:
        onoff = self.sibling(Clusters.OnOff)
        if onoff is not None and not onoff.get("OnOff"):
            return 0.0
        E = PCC.Enums.OperationModeEnum
        mode = self.get("OperationMode")
        low = self.get("MinConstSpeed") / self.get("MaxConstSpeed")
        if mode == E.kMinimum:
            return low
        if mode == E.kMaximum:
            return 1.0
        level = self.sibling(Clusters.LevelControl)
        current = level._values.get("CurrentLevel") if level is not None else 254
        current = 254 if current is NullValue or current is None else current
        return max(low, current / 254)

    def refresh(self, *_: Any) -> None:
        """OnOff, the level or the mode changed: speed, flow and power from now."""
        self.changing()
        self._close_span()
        f = self._fraction()
        running = f > 0
        self.set("Speed", int(round(self.get("MaxConstSpeed") * f)))
        self.set("Capacity", int(round(self.get("MaxFlow") * f)))
        self.set("Power", int(round(self._max_watts * f ** 3)) if running else 0)   # affinity law: P ~ n^3
        self.set("EffectiveOperationMode", self.get("OperationMode"))
        status = int(PCC.Bitmaps.PumpStatusBitmap.kRunning) if running else 0
        self.set("PumpStatus", status)
        self._since = self.now if running else None

    def _close_span(self) -> None:
        if self._since is not None:
            span = self.now - self._since
            self._run_ticks += span
            self._energy_wticks += span * self._values["Power"]
            self._since = self.now

    derived = frozenset({"LifetimeRunningHours", "LifetimeEnergyConsumed"})

    def get(self, name: str) -> Any:
        if name in ("LifetimeRunningHours", "LifetimeEnergyConsumed") and "Power" in self._values:
            span = self.now - self._since if self._since is not None else 0
            if name == "LifetimeRunningHours":
                return (self._run_ticks + span) // (3600 * TICKS_PER_SECOND)
            return (self._energy_wticks + span * self._values["Power"]) // (3600 * 1000 * TICKS_PER_SECOND)  # kWh
        return super().get(name)

    def attach(self) -> None:
        for cluster in (Clusters.OnOff, Clusters.LevelControl):
            server = self.sibling(cluster)
            if server is not None:
                server.listeners.append(lambda s, n: n in ("OnOff", "CurrentLevel") and self.refresh())

    def private_state(self) -> dict[str, Any]:
        return {"since": self._since, "run_ticks": self._run_ticks, "energy_wticks": self._energy_wticks}

    def load_private_state(self, state: dict[str, Any]) -> None:
        self._since = state.get("since")
        self._run_ticks, self._energy_wticks = state.get("run_ticks", 0), state.get("energy_wticks", 0)
