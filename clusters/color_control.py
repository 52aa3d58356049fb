"""ColorControl cluster server (Matter 1.4, revision 7).

Features: HueAndSaturation (HS), EnhancedHue (EHUE), ColorLoop (CL), XY and
ColorTemperature (CT), each a constructor option. ColorCapabilities mirrors the features.

Time model (as LevelControl): every moving quantity is one *channel* with an anchor
`[start_tick, start, num, den, end_tick, target]`; its value at tick t is
`start + num * (t - start_tick) // den`, clamped at the target, and the end of a bounded
motion (end_tick) is the only discrete event. A hue Move or a colour loop never ends: it
is the same formula taken modulo the hue circle, so stepping and fast-forward agree exactly.

Hue is kept in one channel in enhanced units (0..65535, the circle is 65536). CurrentHue is
derived from it (`enhanced * 255 // 65536`, so 0..254), and a hue h written by MoveToHue is
stored as the smallest enhanced value that reads back as h. EnhancedCurrentHue is served
only with EHUE; without it the enhanced value is kept privately.

Rules kept: commands do nothing while the sibling OnOff is off unless ExecuteIfOff is in
effect (Options, or OptionsMask/OptionsOverride); each command family sets ColorMode and
EnhancedColorMode; a Move with rate 0 or a Step of size 0 answers INVALID_COMMAND; out of
range targets answer CONSTRAINT_ERROR; colour temperatures are clamped to the physical
range (and to a Move/Step's own bounds); a hue command ends a running colour loop;
StopMoveStep stops every motion but the colour loop; StartUpColorTemperatureMireds applies
at power-up.
"""
from __future__ import annotations

from typing import Any

from chip.clusters.Types import NullValue

from clusters.base import TICKS_PER_SECOND, Clusters, ClusterServer, MatterError, Status, check_range

CC = Clusters.ColorControl
Feature = CC.Bitmaps.Feature
Mode = CC.Enums.ColorModeEnum
EMode = CC.Enums.EnhancedColorModeEnum
ExecuteIfOff = int(CC.Bitmaps.OptionsBitmap.kExecuteIfOff)
HUE_CIRCLE = 65536          # enhanced hue units in a full turn
MAX_HUE = 254               # CurrentHue and CurrentSaturation are 0..254
MAX_XY = 0xFEFF
Flags = CC.Bitmaps.UpdateFlagsBitmap


def hue_to_enhanced(hue: int) -> int:
    """The smallest enhanced hue that reads back as `hue` (see the module docstring)."""
    return -(-hue * HUE_CIRCLE // 255)


def enhanced_to_hue(enhanced: int) -> int:
    return min(enhanced * 255 // HUE_CIRCLE, MAX_HUE)


class ColorControlServer(ClusterServer):
    cluster = CC
    revision = 7
    base_attributes = ("RemainingTime", "ColorMode", "Options", "NumberOfPrimaries", "EnhancedColorMode",
                       "ColorCapabilities")
    hs_attributes = ("CurrentHue", "CurrentSaturation")
    ehue_attributes = ("EnhancedCurrentHue",)
    loop_attributes = ("ColorLoopActive", "ColorLoopDirection", "ColorLoopTime", "ColorLoopStartEnhancedHue",
                       "ColorLoopStoredEnhancedHue")
    xy_attributes = ("CurrentX", "CurrentY")
    ct_attributes = ("ColorTemperatureMireds", "ColorTempPhysicalMinMireds", "ColorTempPhysicalMaxMireds",
                     "CoupleColorTempToLevelMinMireds", "StartUpColorTemperatureMireds")
    notes = ("TransitionTime is in 1/10 s; Move rates are units per second.",
             "Commands do nothing while OnOff is off unless Options (or OptionsMask/OptionsOverride) "
             "has ExecuteIfOff.",
             "Hue commands set ColorMode 0, MoveToColor/MoveColor/StepColor 1, colour temperature "
             "commands 2; Enhanced hue commands set EnhancedColorMode 3.",
             "Colour temperatures are clamped to ColorTempPhysicalMinMireds..ColorTempPhysicalMaxMireds.",
             "A hue command ends a running colour loop; StopMoveStep does not.")
    derived = frozenset({"CurrentHue", "EnhancedCurrentHue", "CurrentSaturation", "CurrentX", "CurrentY",
                         "ColorTemperatureMireds", "RemainingTime"})

    def __init__(self, hue_and_saturation: bool = False, enhanced_hue: bool = False, color_loop: bool = False,
                 xy: bool = False, color_temperature: bool = False, mireds: tuple[int, int] = (153, 500),
                 **initial: Any):
        if (enhanced_hue or color_loop) and not hue_and_saturation:
            raise MatterError(Status.CONSTRAINT_ERROR, "ColorControl: EnhancedHue and ColorLoop need HueAndSaturation")
        if color_loop and not enhanced_hue:
            raise MatterError(Status.CONSTRAINT_ERROR, "ColorControl: ColorLoop needs EnhancedHue")
        features = ((int(Feature.kHueAndSaturation) if hue_and_saturation else 0)
                    | (int(Feature.kEnhancedHue) if enhanced_hue else 0)
                    | (int(Feature.kColorLoop) if color_loop else 0)
                    | (int(Feature.kXy) if xy else 0) | (int(Feature.kColorTemperature) if color_temperature else 0))
        attributes = list(self.base_attributes)
        commands: list[str] = []
        if hue_and_saturation:
            attributes += self.hs_attributes
            commands += ["MoveToHue", "MoveHue", "StepHue", "MoveToSaturation", "MoveSaturation", "StepSaturation",
                         "MoveToHueAndSaturation"]
        if enhanced_hue:
            attributes += self.ehue_attributes
            commands += ["EnhancedMoveToHue", "EnhancedMoveHue", "EnhancedStepHue", "EnhancedMoveToHueAndSaturation"]
        if color_loop:
            attributes += self.loop_attributes
            commands += ["ColorLoopSet"]
        if xy:
            attributes += self.xy_attributes
            commands += ["MoveToColor", "MoveColor", "StepColor"]
        if color_temperature:
            attributes += self.ct_attributes
            commands += ["MoveToColorTemperature", "MoveColorTemperature", "StepColorTemperature"]
        if hue_and_saturation or xy or color_temperature:
            commands.append("StopMoveStep")
        self.attributes = tuple(attributes)
        self.commands = tuple(commands)
        self.writable = frozenset({"Options"} | ({"StartUpColorTemperatureMireds"} if color_temperature else set()))
        self._mireds = tuple(mireds)
        super().__init__(feature_map=features, **initial)
        self._values.setdefault("EnhancedCurrentHue", 0)   # the hue channel, served only with EHUE
        #: channel name -> [start_tick, start, num, den, end_tick | None, target | None]
        self._motion: dict[str, list[Any]] = {}
        low, high = self._mireds
        check_range("ColorControl.ColorTempPhysicalMinMireds", low, 1, 0xFEFF)
        check_range("ColorControl.ColorTempPhysicalMaxMireds", high, low, 0xFEFF)

    def defaults(self) -> dict[str, Any]:
        low, high = self._mireds
        f = self.feature_map
        mode = (Mode.kColorTemperatureMireds if f & Feature.kColorTemperature
                else Mode.kCurrentXAndCurrentY if f & Feature.kXy else Mode.kCurrentHueAndCurrentSaturation)
        return {"RemainingTime": 0, "ColorMode": mode, "Options": 0, "NumberOfPrimaries": 0,
                "EnhancedColorMode": EMode(int(mode)), "ColorCapabilities": f,
                "CurrentHue": 0, "CurrentSaturation": 0, "EnhancedCurrentHue": 0,
                "ColorLoopActive": 0, "ColorLoopDirection": 0, "ColorLoopTime": 25,
                "ColorLoopStartEnhancedHue": 0x2300, "ColorLoopStoredEnhancedHue": 0,
                "CurrentX": 0x616B, "CurrentY": 0x607D,     # CIE 1931 of a warm white, as lights ship
                "ColorTemperatureMireds": min(max(370, low), high), "ColorTempPhysicalMinMireds": low,
                "ColorTempPhysicalMaxMireds": high, "CoupleColorTempToLevelMinMireds": low,
                "StartUpColorTemperatureMireds": NullValue}

    def validate_write(self, name: str, value: Any) -> None:
        if name == "Options" and value & ~ExecuteIfOff:
            raise MatterError(Status.CONSTRAINT_ERROR,
                              f"ColorControl.Options={value} sets undefined bits; allowed: ExecuteIfOff=0x01")
        if name == "StartUpColorTemperatureMireds" and value is not NullValue and value is not None:
            check_range("ColorControl.StartUpColorTemperatureMireds", value, 1, 0xFEFF)

    # ---- channels ----------------------------------------------------------------
    def _channel_value(self, name: str, tick: int) -> int:
        m = self._motion.get(name)
        if m is None:
            return self._values[name]
        start_tick, start, num, den, end, target = m
        if end is not None and tick >= end:
            return target
        value = start + num * max(tick - start_tick, 0) // den
        if name == "EnhancedCurrentHue":
            return value % HUE_CIRCLE
        return value

    def get(self, name: str) -> Any:
        if name == "CurrentHue":
            return enhanced_to_hue(self._channel_value("EnhancedCurrentHue", self.now))
        if name in ("EnhancedCurrentHue", "CurrentSaturation", "CurrentX", "CurrentY", "ColorTemperatureMireds"):
            return self._channel_value(name, self.now)
        if name == "RemainingTime":
            ends = [m[4] for m in self._motion.values() if m[4] is not None]
            return max(max(ends) - self.now, 0) if ends else 0
        return super().get(name)

    def _put(self, name: str, value: int) -> None:
        """Store a channel's value. The hue channel is served as EnhancedCurrentHue only with
        EHUE (else kept privately), and CurrentHue derives from it: its listeners hear when it
        moves, so subscribers see a hue change at once."""
        hue_before = self.get("CurrentHue") if name == "EnhancedCurrentHue" and "CurrentHue" in self.attributes \
            else None
        if name in self.attributes:
            self.set(name, value)
        else:
            self.changing()
            self._values[name] = value
        if hue_before is not None and self.get("CurrentHue") != hue_before:
            self.data_version = (self.data_version + 1) & 0xFFFFFFFF
            for listener in self.listeners:
                listener(self, "CurrentHue")

    def _anchor(self, name: str) -> int:
        """Stop a channel where it is now; its value becomes the stored one."""
        value = self._channel_value(name, self.now)
        self._motion.pop(name, None)
        self._put(name, value)
        return value

    def _transition(self, name: str, target: int, ticks: int, delta: int | None = None) -> None:
        """Move channel `name` to `target` over `ticks` (delta: the signed way round, for hue)."""
        start = self._anchor(name)
        delta = target - start if delta is None else delta
        if ticks <= 0 or delta == 0:
            self._put(name, target)
            return
        self._motion[name] = [self.now, start, delta, int(ticks), self.now + int(ticks), target]

    def _move(self, name: str, rate: int, den: int, bound: int | None) -> None:
        """Move at `rate / den` units per tick, to `bound` (None: round the hue circle forever)."""
        start = self._anchor(name)
        if bound is None:
            self._motion[name] = [self.now, start, rate, den, None, None]
            return
        distance = abs(bound - start)
        if distance == 0:
            return
        ticks = -(-distance * den // abs(rate))
        self._motion[name] = [self.now, start, rate, den, self.now + ticks, bound]

    def _stop(self, *names: str) -> None:
        for name in names:
            if name in self._motion:
                self._anchor(name)

    def next_event_tick(self) -> int | None:
        ends = [m[4] for m in self._motion.values() if m[4] is not None]
        return min(ends) if ends else None

    def advance_to(self, tick: int) -> None:
        for name in sorted(self._motion):
            m = self._motion[name]
            if m[4] is not None and tick >= m[4]:
                del self._motion[name]
                self._put(name, m[5])
        if not any(m[4] is not None for m in self._motion.values()):
            self.set("RemainingTime", 0)

    def private_state(self) -> dict[str, Any]:
        return {"motion": {k: list(v) for k, v in sorted(self._motion.items())}}

    def load_private_state(self, state: dict[str, Any]) -> None:
        self._motion = {k: list(v) for k, v in state.get("motion", {}).items()}

    def stop_motion(self) -> None:
        for name in list(self._motion):
            self._values[name] = self._channel_value(name, self.now)
        self._motion = {}
        self._values["RemainingTime"] = 0
        if "ColorLoopActive" in self._values:
            self._values["ColorLoopActive"] = 0

    def start_up(self) -> None:
        if not self.feature_map & Feature.kColorTemperature:
            return
        start_up = self._values.get("StartUpColorTemperatureMireds", NullValue)
        if start_up is NullValue or start_up is None:
            return
        low, high = self._mireds
        self._values["ColorTemperatureMireds"] = min(max(int(start_up), low), high)
        self._values["ColorMode"] = Mode.kColorTemperatureMireds
        self._values["EnhancedColorMode"] = EMode.kColorTemperatureMireds

    # ---- helpers -----------------------------------------------------------------
    def _may_execute(self, request: Any) -> bool:
        onoff = self.sibling(Clusters.OnOff)
        if onoff is None or onoff.get("OnOff"):
            return True
        if int(request.optionsMask) & ExecuteIfOff:
            return bool(int(request.optionsOverride) & ExecuteIfOff)
        return bool(self.get("Options") & ExecuteIfOff)

    def _mode(self, mode: Mode, enhanced: EMode | None = None) -> None:
        self.set("ColorMode", mode)
        self.set("EnhancedColorMode", enhanced if enhanced is not None else EMode(int(mode)))

    def _end_loop(self) -> None:
        if "ColorLoopActive" in self.attributes and self.get("ColorLoopActive"):
            self.set("ColorLoopActive", 0)
            self._motion.pop("EnhancedCurrentHue", None)

    def _hue_delta(self, start: int, target: int, direction: Any) -> int:
        up = (target - start) % HUE_CIRCLE
        down = up - HUE_CIRCLE if up else 0
        d = CC.Enums.DirectionEnum
        if direction == d.kUp:
            return up
        if direction == d.kDown:
            return down
        shortest = up if up <= HUE_CIRCLE // 2 else down
        longest = down if shortest == up else up
        if direction == d.kShortest:
            return shortest
        if direction == d.kLongest:
            return longest
        raise MatterError(Status.CONSTRAINT_ERROR, f"direction={int(direction)} is not a DirectionEnum value")

    def _hue_to(self, enhanced_target: int, direction: Any, ticks: int) -> None:
        self._end_loop()
        start = self._channel_value("EnhancedCurrentHue", self.now)
        delta = self._hue_delta(start, enhanced_target, direction)
        self._transition("EnhancedCurrentHue", enhanced_target, ticks, delta)

    @staticmethod
    def _rate(request: Any) -> int:
        if request.rate == 0:
            raise MatterError(Status.INVALID_COMMAND, "rate=0 has no effect; use a rate of 1 or more per second")
        return int(request.rate)

    @staticmethod
    def _step_size(size: int) -> None:
        if size == 0:
            raise MatterError(Status.INVALID_COMMAND, "stepSize=0 has no effect; use 1 or more")

    def _move_mode(self, request: Any) -> int | None:
        """+1 / -1 for Up / Down, None for Stop; INVALID_COMMAND for a rate of 0 when moving."""
        mm = CC.Enums.MoveModeEnum
        if request.moveMode == mm.kStop:
            return None
        if request.moveMode not in (mm.kUp, mm.kDown):
            raise MatterError(Status.CONSTRAINT_ERROR, f"moveMode={int(request.moveMode)} is not a MoveModeEnum value")
        self._rate(request)
        return 1 if request.moveMode == mm.kUp else -1

    @staticmethod
    def _step_sign(request: Any) -> int:
        sm = CC.Enums.StepModeEnum
        if request.stepMode not in (sm.kUp, sm.kDown):
            raise MatterError(Status.CONSTRAINT_ERROR, f"stepMode={int(request.stepMode)} is not a StepModeEnum value")
        return 1 if request.stepMode == sm.kUp else -1

    # ---- hue and saturation ------------------------------------------------------
    def MoveToHue(self, request: Any) -> None:
        check_range("MoveToHue.hue", request.hue, 0, MAX_HUE)
        if not self._may_execute(request):
            return
        self._hue_to(hue_to_enhanced(request.hue), request.direction, request.transitionTime)
        self._mode(Mode.kCurrentHueAndCurrentSaturation)

    def EnhancedMoveToHue(self, request: Any) -> None:
        if not self._may_execute(request):
            return
        self._hue_to(int(request.enhancedHue), request.direction, request.transitionTime)
        self._mode(Mode.kCurrentHueAndCurrentSaturation, EMode.kEnhancedCurrentHueAndCurrentSaturation)

    def _move_hue(self, request: Any, num_per_unit: int, den: int, enhanced: bool) -> None:
        sign = self._move_mode(request)
        if not self._may_execute(request):
            return
        self._end_loop()
        if sign is None:
            self._stop("EnhancedCurrentHue")
            return
        self._move("EnhancedCurrentHue", sign * int(request.rate) * num_per_unit, den, None)
        self._mode(Mode.kCurrentHueAndCurrentSaturation,
                   EMode.kEnhancedCurrentHueAndCurrentSaturation if enhanced else None)

    def MoveHue(self, request: Any) -> None:
        # rate in hue steps per second: HUE_CIRCLE / 255 enhanced units per step, 10 ticks a second
        self._move_hue(request, HUE_CIRCLE, 255 * TICKS_PER_SECOND, enhanced=False)

    def EnhancedMoveHue(self, request: Any) -> None:
        self._move_hue(request, 1, TICKS_PER_SECOND, enhanced=True)

    def _step_hue(self, request: Any, size: int, enhanced: bool) -> None:
        sign = self._step_sign(request)
        self._step_size(request.stepSize)
        if not self._may_execute(request):
            return
        self._end_loop()
        start = self._anchor("EnhancedCurrentHue")
        delta = sign * size
        self._transition("EnhancedCurrentHue", (start + delta) % HUE_CIRCLE, request.transitionTime, delta)
        self._mode(Mode.kCurrentHueAndCurrentSaturation,
                   EMode.kEnhancedCurrentHueAndCurrentSaturation if enhanced else None)

    def StepHue(self, request: Any) -> None:
        self._step_hue(request, hue_to_enhanced(int(request.stepSize)), enhanced=False)

    def EnhancedStepHue(self, request: Any) -> None:
        self._step_hue(request, int(request.stepSize), enhanced=True)

    def MoveToSaturation(self, request: Any) -> None:
        check_range("MoveToSaturation.saturation", request.saturation, 0, MAX_HUE)
        if not self._may_execute(request):
            return
        self._transition("CurrentSaturation", int(request.saturation), request.transitionTime)
        self._mode(Mode.kCurrentHueAndCurrentSaturation)

    def MoveSaturation(self, request: Any) -> None:
        sign = self._move_mode(request)
        if not self._may_execute(request):
            return
        if sign is None:
            self._stop("CurrentSaturation")
            return
        self._move("CurrentSaturation", sign * int(request.rate), TICKS_PER_SECOND, MAX_HUE if sign > 0 else 0)
        self._mode(Mode.kCurrentHueAndCurrentSaturation)

    def StepSaturation(self, request: Any) -> None:
        sign = self._step_sign(request)
        self._step_size(request.stepSize)
        if not self._may_execute(request):
            return
        current = self._channel_value("CurrentSaturation", self.now)
        target = min(max(current + sign * int(request.stepSize), 0), MAX_HUE)
        self._transition("CurrentSaturation", target, request.transitionTime)
        self._mode(Mode.kCurrentHueAndCurrentSaturation)

    def MoveToHueAndSaturation(self, request: Any) -> None:
        check_range("MoveToHueAndSaturation.hue", request.hue, 0, MAX_HUE)
        check_range("MoveToHueAndSaturation.saturation", request.saturation, 0, MAX_HUE)
        if not self._may_execute(request):
            return
        self._hue_to(hue_to_enhanced(request.hue), CC.Enums.DirectionEnum.kShortest, request.transitionTime)
        self._transition("CurrentSaturation", int(request.saturation), request.transitionTime)
        self._mode(Mode.kCurrentHueAndCurrentSaturation)

    def EnhancedMoveToHueAndSaturation(self, request: Any) -> None:
        check_range("EnhancedMoveToHueAndSaturation.saturation", request.saturation, 0, MAX_HUE)
        if not self._may_execute(request):
            return
        self._hue_to(int(request.enhancedHue), CC.Enums.DirectionEnum.kShortest, request.transitionTime)
        self._transition("CurrentSaturation", int(request.saturation), request.transitionTime)
        self._mode(Mode.kCurrentHueAndCurrentSaturation, EMode.kEnhancedCurrentHueAndCurrentSaturation)

    # ---- colour loop ---------------------------------------------------------------
    def ColorLoopSet(self, request: Any) -> None:
        flags = int(request.updateFlags)
        action = CC.Enums.ColorLoopActionEnum
        if flags & Flags.kUpdateAction and request.action not in (action.kDeactivate,
                                                                  action.kActivateFromColorLoopStartEnhancedHue,
                                                                  action.kActivateFromEnhancedCurrentHue):
            raise MatterError(Status.CONSTRAINT_ERROR,
                              f"action={int(request.action)} is not a ColorLoopActionEnum value")
        if flags & Flags.kUpdateDirection and int(request.direction) > 1:
            raise MatterError(Status.CONSTRAINT_ERROR, f"direction={int(request.direction)} is not 0 (decrement) or 1")
        if flags & Flags.kUpdateTime and request.time == 0:
            raise MatterError(Status.CONSTRAINT_ERROR, "time=0: a colour loop takes at least 1 s")
        if not self._may_execute(request):
            return
        active = bool(self.get("ColorLoopActive"))
        if flags & Flags.kUpdateDirection:
            self.set("ColorLoopDirection", int(request.direction))
        if flags & Flags.kUpdateTime:
            self.set("ColorLoopTime", int(request.time))
        if flags & Flags.kUpdateStartHue:
            self.set("ColorLoopStartEnhancedHue", int(request.startHue))
        if flags & Flags.kUpdateAction and request.action == action.kDeactivate:
            if active:
                self._motion.pop("EnhancedCurrentHue", None)
                self.set("ColorLoopActive", 0)
                self._put("EnhancedCurrentHue", self.get("ColorLoopStoredEnhancedHue"))
            return
        if flags & Flags.kUpdateAction:
            self._stop("EnhancedCurrentHue")
            self.set("ColorLoopStoredEnhancedHue", self._values["EnhancedCurrentHue"])
            if request.action == action.kActivateFromColorLoopStartEnhancedHue:
                self._put("EnhancedCurrentHue", self.get("ColorLoopStartEnhancedHue"))
            self.set("ColorLoopActive", 1)
            active = True
        if active:   # (re)start the loop from where the hue is now, at the current direction and time
            sign = 1 if self.get("ColorLoopDirection") else -1
            self._move("EnhancedCurrentHue", sign * HUE_CIRCLE, self.get("ColorLoopTime") * TICKS_PER_SECOND, None)
            self._mode(Mode.kCurrentHueAndCurrentSaturation, EMode.kEnhancedCurrentHueAndCurrentSaturation)

    # ---- XY ----------------------------------------------------------------------
    def MoveToColor(self, request: Any) -> None:
        check_range("MoveToColor.colorX", request.colorX, 0, MAX_XY)
        check_range("MoveToColor.colorY", request.colorY, 0, MAX_XY)
        if not self._may_execute(request):
            return
        self._transition("CurrentX", int(request.colorX), request.transitionTime)
        self._transition("CurrentY", int(request.colorY), request.transitionTime)
        self._mode(Mode.kCurrentXAndCurrentY)

    def MoveColor(self, request: Any) -> None:
        if not self._may_execute(request):
            return
        for name, rate in (("CurrentX", int(request.rateX)), ("CurrentY", int(request.rateY))):
            if rate == 0:
                self._stop(name)
            else:
                self._move(name, rate, TICKS_PER_SECOND, MAX_XY if rate > 0 else 0)
        self._mode(Mode.kCurrentXAndCurrentY)

    def StepColor(self, request: Any) -> None:
        if request.stepX == 0 and request.stepY == 0:
            raise MatterError(Status.INVALID_COMMAND, "stepX and stepY are both 0: nothing to step")
        if not self._may_execute(request):
            return
        for name, step in (("CurrentX", int(request.stepX)), ("CurrentY", int(request.stepY))):
            target = min(max(self._channel_value(name, self.now) + step, 0), MAX_XY)
            self._transition(name, target, request.transitionTime)
        self._mode(Mode.kCurrentXAndCurrentY)

    # ---- colour temperature --------------------------------------------------------
    def _ct_bounds(self, low: int = 0, high: int = 0) -> tuple[int, int]:
        """The physical range, narrowed by a command's own bounds (0 means the physical one)."""
        lo, hi = self._mireds
        return (max(lo, low) if low else lo), (min(hi, high) if high else hi)

    def MoveToColorTemperature(self, request: Any) -> None:
        check_range("MoveToColorTemperature.colorTemperatureMireds", request.colorTemperatureMireds, 0, 0xFEFF)
        if not self._may_execute(request):
            return
        low, high = self._ct_bounds()
        self._transition("ColorTemperatureMireds", min(max(int(request.colorTemperatureMireds), low), high),
                         request.transitionTime)
        self._mode(Mode.kColorTemperatureMireds)

    def MoveColorTemperature(self, request: Any) -> None:
        sign = self._move_mode(request)
        if not self._may_execute(request):
            return
        if sign is None:
            self._stop("ColorTemperatureMireds")
            return
        low, high = self._ct_bounds(request.colorTemperatureMinimumMireds, request.colorTemperatureMaximumMireds)
        self._move("ColorTemperatureMireds", sign * int(request.rate), TICKS_PER_SECOND, high if sign > 0 else low)
        self._mode(Mode.kColorTemperatureMireds)

    def StepColorTemperature(self, request: Any) -> None:
        sign = self._step_sign(request)
        self._step_size(request.stepSize)
        if not self._may_execute(request):
            return
        low, high = self._ct_bounds(request.colorTemperatureMinimumMireds, request.colorTemperatureMaximumMireds)
        current = self._channel_value("ColorTemperatureMireds", self.now)
        target = min(max(current + sign * int(request.stepSize), low), high)
        self._transition("ColorTemperatureMireds", target, request.transitionTime)
        self._mode(Mode.kColorTemperatureMireds)

    def StopMoveStep(self, request: Any) -> None:
        if not self._may_execute(request):
            return
        looping = "ColorLoopActive" in self.attributes and self.get("ColorLoopActive")
        self._stop(*[n for n in sorted(self._motion) if not (looping and n == "EnhancedCurrentHue")])
        self.set("RemainingTime", 0)
