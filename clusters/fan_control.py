"""FanControl cluster server (Matter 1.3, revision 4). Features: Step, optionally Auto.

Speed model: the speed modes of FanModeSequence (e.g. Low/Medium/High) split 1..100 %
into equal bands. Writing a mode sets PercentSetting to the top of its band (Low 33,
Medium 66, High 100 for a three-speed fan; Low 50, High 100 for two speeds); writing a
percentage sets FanMode to the band it falls in (0 is Off). The fan reaches its setting at
once: PercentCurrent follows PercentSetting instantaneously (no spin-up modelled). Auto
sets PercentSetting to null and runs at the middle band's percentage.
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

    def __init__(self, auto: bool = False, step: bool = True, **initial: Any):
        features = (int(Feature.kAuto) if auto else 0) | (int(Feature.kStep) if step else 0)
        if not step:
            self.commands = ()
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

    def defaults(self) -> dict[str, Any]:
        return {"FanMode": Mode.kOff, "FanModeSequence": Seq.kOffLowMedHigh,
                "PercentSetting": 0, "PercentCurrent": 0}

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

    def write(self, attribute: str | int, data: Any) -> None:
        """FanMode and PercentSetting drive each other, so a write is applied as a whole."""
        name = self.resolve_attribute(attribute)
        if name not in self.writable:
            return super().write(name, data)  # answers UNSUPPORTED_WRITE
        value = self._coerce(name, data)
        if name == "PercentSetting" and _is_null(value):
            return  # spec: writing null leaves PercentSetting unchanged
        self.validate_write(name, value)
        self.after_write(name, value)

    def after_write(self, name: str, value: Any) -> None:
        if name == "FanMode":
            self._apply_mode(self._resolve_mode(value))
        elif name == "PercentSetting":
            self._apply_percent(value)

    def _apply_mode(self, mode: Mode) -> None:
        self.set("FanMode", mode)
        if mode == Mode.kAuto:
            self.set("PercentSetting", NullValue)
            middle = self.speeds[len(self.speeds) // 2]
            self.set("PercentCurrent", self.percent_for(middle))
            return
        percent = 0 if mode == Mode.kOff else self.percent_for(mode)
        self.set("PercentSetting", percent)
        self.set("PercentCurrent", percent)

    def _apply_percent(self, percent: int) -> None:
        self.set("PercentSetting", percent)
        self.set("PercentCurrent", percent)
        self.set("FanMode", self.mode_for(percent))

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
