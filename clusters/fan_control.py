"""FanControl cluster server (Matter 1.3, revision 4). Features: Step, optionally Auto,
MultiSpeed, Rocking, Wind and AirflowDirection.

Speed model: the speed modes of FanModeSequence (e.g. Low/Medium/High) split 1..100 %
into equal bands. Writing a mode sets PercentSetting to the top of its band (Low 33,
Medium 66, High 100 for a three-speed fan; Low 50, High 100 for two speeds); writing a
percentage sets FanMode to the band it falls in (0 is Off). The fan reaches its setting at
once: PercentCurrent follows PercentSetting instantaneously (no spin-up modelled). Auto
sets PercentSetting to null and runs at the middle band's percentage.

MultiSpeed adds speeds 1..SpeedMax over the same percentages: SpeedSetting = ceil(SpeedMax *
PercentSetting / 100) and back PercentSetting = SpeedSetting * 100 // SpeedMax, so writing any
of FanMode, PercentSetting or SpeedSetting moves the other two (null speed in Auto). Rocking,
Wind and AirflowDirection are settings the motor takes at once: RockSetting and WindSetting
must name supported bits (one wind at a time), AirflowDirection Forward or Reverse; their
effect on the air (a sleep wind slowing down) is not modelled.
"""
from __future__ import annotations

from typing import Any

from chip.clusters.Types import NullValue

from clusters.base import Clusters, ClusterServer, MatterError, Status, check_range

FC = Clusters.FanControl
Feature = FC.Bitmaps.Feature
Mode = FC.Enums.FanModeEnum
Seq = FC.Enums.FanModeSequenceEnum

#: Speed modes (lowest first) and whether Auto is offered, for each FanModeSequence.
SEQUENCES: dict[Seq, tuple[tuple[Mode, ...], bool]] = {
    Seq.kOffLowMedHigh: ((Mode.kLow, Mode.kMedium, Mode.kHigh), False),
    Seq.kOffLowHigh: ((Mode.kLow, Mode.kHigh), False),
    Seq.kOffLowMedHighAuto: ((Mode.kLow, Mode.kMedium, Mode.kHigh), True),
    Seq.kOffLowHighAuto: ((Mode.kLow, Mode.kHigh), True),
    Seq.kOffHighAuto: ((Mode.kHigh,), True),
    Seq.kOffHigh: ((Mode.kHigh,), False),
}


def _is_null(value: Any) -> bool:
    return value is NullValue or value is None


class FanControlServer(ClusterServer):
    cluster = FC
    revision = 4
    attributes = ("FanMode", "FanModeSequence", "PercentSetting", "PercentCurrent")
    writable = frozenset({"FanMode", "PercentSetting"})
    commands = ("Step",)
    notes = ("FanMode Off sets PercentSetting 0; Low/Medium/High set the top of their equal "
             "share of 1..100 % (three speeds: 33/66/100); Auto sets PercentSetting null.",
             "Writing PercentSetting sets FanMode to the matching speed (0 is Off); "
             "PercentCurrent follows at once.",
             "Step moves between the speed modes' percentages; lowestOff (default true) makes "
             "Off the lowest step, wrap (default false) wraps around.")

    def __init__(self, auto: bool = False, step: bool = True, speed_max: int | None = None,
                 rocking: bool = False, wind: bool = False, airflow_direction: bool = False, **initial: Any):
        """`speed_max`: MultiSpeed with speeds 1..speed_max; the other flags add their feature."""
        features = ((int(Feature.kAuto) if auto else 0) | (int(Feature.kStep) if step else 0)
                    | (int(Feature.kMultiSpeed) if speed_max else 0) | (int(Feature.kRocking) if rocking else 0)
                    | (int(Feature.kWind) if wind else 0)
                    | (int(Feature.kAirflowDirection) if airflow_direction else 0))
        if not step:
            self.commands = ()
        extra = ((("SpeedMax", "SpeedSetting", "SpeedCurrent") if speed_max else ())
                 + (("RockSupport", "RockSetting") if rocking else ())
                 + (("WindSupport", "WindSetting") if wind else ())
                 + (("AirflowDirection",) if airflow_direction else ()))
        if extra:
            self.attributes = FanControlServer.attributes + extra
            self.writable = FanControlServer.writable | (set(extra) & {"SpeedSetting", "RockSetting",
                                                                      "WindSetting", "AirflowDirection"})
        if speed_max:
            check_range("FanControl.SpeedMax", speed_max, 1, 100)
            initial.setdefault("SpeedMax", speed_max)
        initial.setdefault("FanModeSequence", int(Seq.kOffLowMedHighAuto if auto else Seq.kOffLowMedHigh))
        super().__init__(feature_map=features, **initial)
        speeds, has_auto = SEQUENCES[self._values["FanModeSequence"]]
        if has_auto != auto:
            raise MatterError(Status.CONSTRAINT_ERROR,
                              f"FanControl.FanModeSequence={int(self._values['FanModeSequence'])} "
                              f"{'offers' if has_auto else 'lacks'} Auto but the Auto feature is "
                              f"{'off' if not auto else 'on'}; pick a sequence that matches")
        if not _is_null(self._values["PercentSetting"]):
            check_range("FanControl.PercentSetting", self._values["PercentSetting"], 0, 100)
        check_range("FanControl.PercentCurrent", self._values["PercentCurrent"], 0, 100)
        for name in ("RockSetting", "WindSetting"):
            if name in self._values:
                self.validate_write(name, self._values[name])
        if "SpeedMax" in self._values:
            self._store_speeds()

    def defaults(self) -> dict[str, Any]:
        R, W = FC.Bitmaps.RockBitmap, FC.Bitmaps.WindBitmap
        return {"FanMode": Mode.kOff, "FanModeSequence": Seq.kOffLowMedHigh,
                "PercentSetting": 0, "PercentCurrent": 0, "SpeedMax": 10, "SpeedSetting": 0, "SpeedCurrent": 0,
                "RockSupport": int(R.kRockLeftRight | R.kRockUpDown), "RockSetting": 0,
                "WindSupport": int(W.kSleepWind | W.kNaturalWind), "WindSetting": 0,
                "AirflowDirection": FC.Enums.AirflowDirectionEnum.kForward}

    # ---- MultiSpeed ----------------------------------------------------------------
    def _speed_for(self, percent: Any) -> Any:
        if _is_null(percent):
            return NullValue
        return -(-self.get("SpeedMax") * percent // 100)

    def _store_speeds(self) -> None:
        """SpeedSetting/SpeedCurrent follow the percentages (MultiSpeed only)."""
        if "SpeedMax" in self._values:
            self.set("SpeedSetting", self._speed_for(self.get("PercentSetting")))
            self.set("SpeedCurrent", self._speed_for(self.get("PercentCurrent")))

    # ---- the speed model ----------------------------------------------------------
    @property
    def speeds(self) -> tuple[Mode, ...]:
        return SEQUENCES[self.get("FanModeSequence")][0]

    @property
    def has_auto(self) -> bool:
        return bool(self.feature_map & Feature.kAuto)

    def percent_for(self, mode: Mode) -> int:
        """The PercentSetting a speed mode stands for: the top of its band."""
        speeds = self.speeds
        return (speeds.index(mode) + 1) * 100 // len(speeds)

    def mode_for(self, percent: int) -> Mode:
        """The FanMode whose band holds `percent` (0 is Off)."""
        if percent == 0:
            return Mode.kOff
        for mode in self.speeds:
            if percent <= self.percent_for(mode):
                return mode
        return self.speeds[-1]

    # ---- attributes --------------------------------------------------------------
    def _resolve_mode(self, mode: Mode) -> Mode:
        """Deprecated On means High; deprecated Smart means Auto if supported, else High."""
        if mode == Mode.kOn:
            return Mode.kHigh
        if mode == Mode.kSmart:
            return Mode.kAuto if self.has_auto else Mode.kHigh
        return mode

    def validate_write(self, name: str, value: Any) -> None:
        if name == "FanMode":
            mode = self._resolve_mode(value)
            allowed = [Mode.kOff, *self.speeds] + ([Mode.kAuto] if self.has_auto else [])
            if mode not in allowed:
                raise MatterError(Status.CONSTRAINT_ERROR,
                                  f"FanControl.FanMode={int(value)} ({value.name[1:]}) is not in this "
                                  f"fan's FanModeSequence; accepted: "
                                  + ", ".join(f"{int(m)} ({m.name[1:]})" for m in allowed))
        elif name == "PercentSetting":
            check_range("FanControl.PercentSetting", value, 0, 100)
        elif name == "SpeedSetting":
            check_range("FanControl.SpeedSetting", value, 0, self.get("SpeedMax"))
        elif name in ("RockSetting", "WindSetting"):
            support = self.get(name.replace("Setting", "Support"))
            if value & ~support or (name == "WindSetting" and value & (value - 1)):
                raise MatterError(Status.CONSTRAINT_ERROR,
                                  f"FanControl.{name}={value} must use only the bits of "
                                  f"{name.replace('Setting', 'Support')} ({support})"
                                  + (", one wind at a time" if name == "WindSetting" else ""))

    def write(self, attribute: str | int, data: Any) -> None:
        """FanMode and PercentSetting drive each other, so a write is applied as a whole."""
        self.changing()
        name = self.resolve_attribute(attribute)
        if name not in self.writable:
            return super().write(name, data)  # answers UNSUPPORTED_WRITE
        value = self._coerce(name, data)
        if name in ("PercentSetting", "SpeedSetting") and _is_null(value):
            return  # spec: writing null leaves the setting unchanged
        self.validate_write(name, value)
        if name in ("RockSetting", "WindSetting", "AirflowDirection"):
            self.set(name, value)
        self.after_write(name, value)

    def after_write(self, name: str, value: Any) -> None:
        if name == "FanMode":
            self._apply_mode(self._resolve_mode(value))
        elif name == "PercentSetting":
            self._apply_percent(value)
        elif name == "SpeedSetting":
            self._apply_percent(value * 100 // self.get("SpeedMax"))
            self.set("SpeedSetting", value)   # the speed written, even where percents round

    def _apply_mode(self, mode: Mode) -> None:
        self.set("FanMode", mode)
        if mode == Mode.kAuto:
            self.set("PercentSetting", NullValue)
            middle = self.speeds[len(self.speeds) // 2]
            self.set("PercentCurrent", self.percent_for(middle))
            self._store_speeds()
            return
        percent = 0 if mode == Mode.kOff else self.percent_for(mode)
        self.set("PercentSetting", percent)
        self.set("PercentCurrent", percent)
        self._store_speeds()

    def _apply_percent(self, percent: int) -> None:
        self.set("PercentSetting", percent)
        self.set("PercentCurrent", percent)
        self.set("FanMode", self.mode_for(percent))
        self._store_speeds()

    # ---- commands ----------------------------------------------------------------
    def Step(self, request: Any) -> None:
        wrap = bool(request.wrap) if request.wrap is not None else False
        lowest_off = bool(request.lowestOff) if request.lowestOff is not None else True
        levels = ([0] if lowest_off else []) + [self.percent_for(m) for m in self.speeds]
        setting = self.get("PercentSetting")
        current = self.get("PercentCurrent") if _is_null(setting) else setting
        if request.direction == FC.Enums.StepDirectionEnum.kIncrease:
            higher = [p for p in levels if p > current]
            target = higher[0] if higher else (levels[0] if wrap else levels[-1])
        else:
            lower = [p for p in levels if p < current]
            target = lower[-1] if lower else (levels[-1] if wrap else levels[0])
        self._apply_percent(target)
