"""LevelControl cluster server (Matter 1.3, revision 5).

Features: OnOff (OO) always for our devices, Lighting (LT) for lights, and Frequency (FQ)
when a device is given a frequency range (SimuHome's lights and TV carry its attributes).
RemainingTime and StartUpCurrentLevel, mandatory with LT, are optional otherwise and can be
asked for (`optional=`).

Time model: a transition is one anchor (start tick, start level, target level, end
tick). TransitionTime is in tenths of a second, which is exactly one tick. CurrentLevel
and RemainingTime mid-transition are derived in `get()` from the anchor and `self.now`;
the end of a transition is the only discrete event. A Move at a rate (units/s) is the
same anchor, with its end tick computed from the rate.
"""
from __future__ import annotations

from typing import Any

from chip.clusters.Types import NullValue

from clusters.base import TICKS_PER_SECOND, Clusters, ClusterServer, MatterError, Status, check_range

LC = Clusters.LevelControl
Feature = LC.Bitmaps.Feature
ExecuteIfOff = int(LC.Bitmaps.OptionsBitmap.kExecuteIfOff)
CoupleColorTempToLevel = int(LC.Bitmaps.OptionsBitmap.kCoupleColorTempToLevel)
MAX_LEVEL = 254      # uint8 level; 255 is not a level
MAX_UINT16 = 0xFFFF
MAX_NULLABLE_UINT16 = 0xFFFE  # 0xFFFF is the null marker on the wire


def _is_null(value: Any) -> bool:
    return value is NullValue or value is None


def _check(what: str, value: Any, low: Any, high: Any) -> None:
    """check_range that lets null through (null is legal for nullable attributes)."""
    if not _is_null(value):
        check_range(what, value, low, high)


class LevelControlServer(ClusterServer):
    cluster = LC
    revision = 5
    attributes = ("CurrentLevel", "MinLevel", "MaxLevel", "Options", "OnOffTransitionTime",
                  "OnLevel", "OnTransitionTime", "OffTransitionTime", "DefaultMoveRate")
    #: Added by the Lighting feature (mandatory there, not allowed otherwise).
    lighting_attributes = ("RemainingTime", "StartUpCurrentLevel")
    writable = frozenset({"Options", "OnOffTransitionTime", "OnLevel", "OnTransitionTime",
                          "OffTransitionTime", "DefaultMoveRate"})
    commands = ("MoveToLevel", "Move", "Step", "Stop", "MoveToLevelWithOnOff", "MoveWithOnOff",
                "StepWithOnOff", "StopWithOnOff")
    notes = ("TransitionTime is in 1/10 s; null TransitionTime uses OnOffTransitionTime.",
             "Without the WithOnOff variants, commands do nothing while OnOff is off unless "
             "Options (or OptionsMask/OptionsOverride) has ExecuteIfOff.",
             "WithOnOff variants turn OnOff on when the level rises above MinLevel and off "
             "when it reaches MinLevel.",
             "When OnOff turns on and OnLevel is not null, CurrentLevel moves to OnLevel.")

    #: Added by the Frequency feature.
    frequency_attributes = ("CurrentFrequency", "MinFrequency", "MaxFrequency")

    def __init__(self, on_off: bool = True, lighting: bool = False, optional: tuple[str, ...] = (),
                 frequency: tuple[int, int] | list[int] | None = None, **initial: Any):
        extra = self.lighting_attributes if lighting else tuple(a for a in self.lighting_attributes if a in optional)
        unknown = set(optional) - set(self.lighting_attributes)
        if unknown:
            raise MatterError(Status.CONSTRAINT_ERROR, f"LevelControl: no optional attribute(s) {sorted(unknown)}; "
                              f"accepted: {', '.join(self.lighting_attributes)}")
        features = (int(Feature.kOnOff) if on_off else 0) | (int(Feature.kLighting) if lighting else 0)
        if frequency is not None:
            low, high = frequency
            check_range("LevelControl.MinFrequency", low, 0, MAX_UINT16)
            check_range("LevelControl.MaxFrequency", high, low, MAX_UINT16)
            initial = {"MinFrequency": low, "MaxFrequency": high, "CurrentFrequency": low, **initial}
            extra += self.frequency_attributes
            features |= int(Feature.kFrequency)
            self.commands = LevelControlServer.commands + ("MoveToClosestFrequency",)
        self.attributes = LevelControlServer.attributes + extra
        if "StartUpCurrentLevel" in extra:
            self.writable = LevelControlServer.writable | {"StartUpCurrentLevel"}
        super().__init__(feature_map=features, **initial)
        # (start_tick, start_level, target_level, end_tick, off_at_end) or None when idle.
        self._transition: list[Any] | None = None
        self._driving_onoff = False  # set while we switch the sibling OnOff ourselves
        self._check_configuration()

    @property
    def lighting(self) -> bool:
        return bool(self.feature_map & Feature.kLighting)

    def defaults(self) -> dict[str, Any]:
        return {"CurrentLevel": NullValue, "RemainingTime": 0,
                "MinLevel": 1 if self.feature_map & Feature.kLighting else 0, "MaxLevel": MAX_LEVEL,
                "Options": 0, "OnOffTransitionTime": 0, "OnLevel": NullValue,
                "OnTransitionTime": NullValue, "OffTransitionTime": NullValue,
                "DefaultMoveRate": NullValue, "StartUpCurrentLevel": NullValue,
                "CurrentFrequency": 0, "MinFrequency": 0, "MaxFrequency": 0}

    def _check_configuration(self) -> None:
        low, high = self._values["MinLevel"], self._values["MaxLevel"]
        check_range("LevelControl.MinLevel", low, 1 if self.lighting else 0, high)
        check_range("LevelControl.MaxLevel", high, low, MAX_LEVEL)
        _check("LevelControl.CurrentLevel", self._values["CurrentLevel"], low, high)
        _check("LevelControl.OnLevel", self._values["OnLevel"], low, high)
        if self.feature_map & Feature.kFrequency:
            check_range("LevelControl.CurrentFrequency", self._values["CurrentFrequency"],
                        self._values["MinFrequency"], self._values["MaxFrequency"])

    # ---- attributes --------------------------------------------------------------
    def validate_write(self, name: str, value: Any) -> None:
        if _is_null(value):
            return
        if name == "OnLevel":
            check_range("LevelControl.OnLevel", value, self.get("MinLevel"), self.get("MaxLevel"))
        elif name == "OnOffTransitionTime":
            check_range(f"LevelControl.{name}", value, 0, MAX_UINT16)
        elif name in ("OnTransitionTime", "OffTransitionTime"):
            check_range(f"LevelControl.{name}", value, 0, MAX_NULLABLE_UINT16)
        elif name == "DefaultMoveRate":
            check_range("LevelControl.DefaultMoveRate", value, 1, MAX_LEVEL)
        elif name == "StartUpCurrentLevel":
            check_range("LevelControl.StartUpCurrentLevel", value, 0, MAX_LEVEL)
        elif name == "Options":
            allowed = ExecuteIfOff | (CoupleColorTempToLevel if self.lighting else 0)
            if value & ~allowed:
                raise MatterError(Status.CONSTRAINT_ERROR,
                                  f"LevelControl.Options={value} sets undefined bits; allowed bits: "
                                  f"{allowed:#04x} (ExecuteIfOff=0x01"
                                  + (", CoupleColorTempToLevel=0x02)" if self.lighting else ")"))

    derived = frozenset({"CurrentLevel", "RemainingTime"})

    def get(self, name: str) -> Any:
        t = self._transition
        if t is not None:
            start_tick, start, target, end_tick, _ = t
            if name == "CurrentLevel":
                elapsed = min(max(self.now - start_tick, 0), end_tick - start_tick)
                step = abs(target - start) * elapsed // (end_tick - start_tick)
                return start + step if target >= start else start - step
            if name == "RemainingTime":
                return max(end_tick - self.now, 0)
        return super().get(name)

    def apply_start_up(self) -> None:
        """Power-up behaviour (LT): StartUpCurrentLevel 0 means MinLevel, null keeps the
        previous level, any other value is used clamped to MinLevel..MaxLevel."""
        if not self.lighting:
            return
        start_up = self.get("StartUpCurrentLevel")
        self._transition = None
        self.set("RemainingTime", 0)
        if _is_null(start_up):
            return
        low, high = self.get("MinLevel"), self.get("MaxLevel")
        self.set("CurrentLevel", low if start_up == 0 else min(max(start_up, low), high))

    # ---- time --------------------------------------------------------------------
    def next_event_tick(self) -> int | None:
        return self._transition[3] if self._transition else None

    def advance_to(self, tick: int) -> None:
        t = self._transition
        if t is None or tick < t[3]:
            return
        self._transition = None
        self.set("CurrentLevel", t[2])
        if self.lighting:
            self.set("RemainingTime", 0)
        if t[4]:
            self._switch_onoff(False)

    def private_state(self) -> dict[str, Any]:
        return {"transition": list(self._transition) if self._transition else None}

    def stop_motion(self) -> None:
        self._transition = None
        self._values["RemainingTime"] = 0

    def start_up(self) -> None:
        self.apply_start_up()

    def load_private_state(self, state: dict[str, Any]) -> None:
        self._transition = state.get("transition")

    # ---- siblings ----------------------------------------------------------------
    def attach(self) -> None:
        onoff = self.sibling(Clusters.OnOff)
        if onoff is not None:
            onoff.listeners.append(self._on_onoff_changed)

    def _on_onoff_changed(self, server: ClusterServer, name: str) -> None:
        if name != "OnOff" or self._driving_onoff or not server.get("OnOff"):
            return
        on_level = self.get("OnLevel")
        if _is_null(on_level):
            return  # spec: the level it had before it was turned off
        ticks = self.get("OnTransitionTime")
        if _is_null(ticks):
            ticks = self.get("OnOffTransitionTime")
        self._start(on_level, ticks, off_at_end=False)

    def _onoff_is_on(self) -> bool:
        onoff = self.sibling(Clusters.OnOff)
        return onoff is None or bool(onoff.get("OnOff"))

    def _switch_onoff(self, on: bool) -> None:
        onoff = self.sibling(Clusters.OnOff)
        if onoff is None:
            return
        self._driving_onoff = True
        try:
            onoff.On() if on else onoff.Off()
        finally:
            self._driving_onoff = False

    def _may_execute(self, request: Any) -> bool:
        """Options/OptionsMask/OptionsOverride: run while off only if ExecuteIfOff is in effect."""
        if self._onoff_is_on():
            return True
        if int(request.optionsMask) & ExecuteIfOff:
            return bool(int(request.optionsOverride) & ExecuteIfOff)
        return bool(self.get("Options") & ExecuteIfOff)

    # ---- motion ------------------------------------------------------------------
    def _current(self) -> int:
        level = self.get("CurrentLevel")
        return self.get("MinLevel") if _is_null(level) else level

    def _start(self, target: int, ticks: Any, off_at_end: bool) -> None:
        """Begin moving from the current level to `target` over `ticks` (0/None: at once)."""
        current = self._current()
        self._transition = None
        if _is_null(ticks) or ticks <= 0 or target == current:
            self.set("CurrentLevel", target)
            if self.lighting:
                self.set("RemainingTime", 0)
            if off_at_end:
                self._switch_onoff(False)
            return
        self.set("CurrentLevel", current)  # the anchor value; get() derives the rest
        if self.lighting:
            self.set("RemainingTime", int(ticks))
        self._transition = [self.now, current, target, self.now + int(ticks), off_at_end]

    def _move_to_level(self, request: Any, with_onoff: bool) -> None:
        check_range("MoveToLevel.level", request.level, 0, MAX_LEVEL)
        if not with_onoff and not self._may_execute(request):
            return
        low, high = self.get("MinLevel"), self.get("MaxLevel")
        target = min(max(request.level, low), high)
        ticks = request.transitionTime
        if _is_null(ticks):
            ticks = self.get("OnOffTransitionTime")
        self._begin(target, ticks, with_onoff)

    def _begin(self, target: int, ticks: Any, with_onoff: bool) -> None:
        low = self.get("MinLevel")
        if with_onoff and target > low:
            self._switch_onoff(True)
        self._start(target, ticks, off_at_end=with_onoff and target == low)

    def _move(self, request: Any, with_onoff: bool) -> None:
        rate = request.rate
        if not _is_null(rate) and rate == 0:
            raise MatterError(Status.INVALID_COMMAND, "Move.rate=0 has no effect; use 1..254 "
                              "units per second, or null for DefaultMoveRate")
        if not with_onoff and not self._may_execute(request):
            return
        if _is_null(rate):
            rate = self.get("DefaultMoveRate")
        up = request.moveMode == LC.Enums.MoveModeEnum.kUp
        target = self.get("MaxLevel") if up else self.get("MinLevel")
        distance = abs(target - self._current())
        # null rate and null DefaultMoveRate: as fast as possible
        ticks = 0 if _is_null(rate) else -(-distance * TICKS_PER_SECOND // rate)
        self._begin(target, ticks, with_onoff)

    def _step(self, request: Any, with_onoff: bool) -> None:
        if request.stepSize == 0:
            raise MatterError(Status.INVALID_COMMAND, "Step.stepSize=0 has no effect; use 1..255")
        if not with_onoff and not self._may_execute(request):
            return
        current = self._current()
        up = request.stepMode == LC.Enums.StepModeEnum.kUp
        target = current + request.stepSize if up else current - request.stepSize
        target = min(max(target, self.get("MinLevel")), self.get("MaxLevel"))
        ticks = request.transitionTime
        if not _is_null(ticks):
            # a step cut short by a limit takes proportionally less time
            ticks = -(-ticks * abs(target - current) // request.stepSize)
        self._begin(target, ticks, with_onoff)

    def _stop(self, request: Any, with_onoff: bool) -> None:
        if not with_onoff and not self._may_execute(request):
            return
        if self._transition is not None:
            level = self.get("CurrentLevel")
            self._transition = None
            self.set("CurrentLevel", level)
            if self.lighting:
                self.set("RemainingTime", 0)

    # ---- commands ----------------------------------------------------------------
    def MoveToLevel(self, request: Any) -> None:
        self._move_to_level(request, with_onoff=False)

    def MoveToLevelWithOnOff(self, request: Any) -> None:
        self._move_to_level(request, with_onoff=True)

    def Move(self, request: Any) -> None:
        self._move(request, with_onoff=False)

    def MoveWithOnOff(self, request: Any) -> None:
        self._move(request, with_onoff=True)

    def Step(self, request: Any) -> None:
        self._step(request, with_onoff=False)

    def StepWithOnOff(self, request: Any) -> None:
        self._step(request, with_onoff=True)

    def Stop(self, request: Any) -> None:
        self._stop(request, with_onoff=False)

    def MoveToClosestFrequency(self, request: Any) -> None:
        """FQ: CurrentFrequency becomes the supported frequency closest to the one asked."""
        low, high = self.get("MinFrequency"), self.get("MaxFrequency")
        self.set("CurrentFrequency", min(max(int(request.frequency), low), high))

    def StopWithOnOff(self, request: Any) -> None:
        self._stop(request, with_onoff=True)
