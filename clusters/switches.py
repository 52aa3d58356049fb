"""Switches and controllers: the Binding and Switch cluster servers, and what a light
switch sends when a hand operates it.

Switch (Matter 1.4, revision 2): a Generic Switch's button. A hand's gesture (`press`: a
number of presses, each held for some seconds) is planned on the virtual clock as a
timeline of discrete steps (press, long press, release, end of the multi-press window),
each at its own tick, so stepping and fast-forward emit the same events at the same ticks:

- InitialPress at each press; LongPress once a press is held LONG_PRESS_S (MSL);
- ShortRelease / LongRelease at each release (MSR / MSL);
- MultiPressOngoing from the second press of a series, MultiPressComplete when no press
  follows within MULTI_PRESS_GAP_S of the last release (MSM);
- a latching switch (LS) emits SwitchLatched with the new position.

Binding (revision 1): the fabric-scoped list of targets a controller sends to. A
target is a node and endpoint or a group, never both (CONSTRAINT_ERROR otherwise).

`controller_commands` maps a hand's action on an On/Off, Dimmer or Color Dimmer Switch to
the commands the switch sends its bound targets; the home delivers them (twin/home.py).
"""
from __future__ import annotations

from typing import Any

from clusters.base import TICKS_PER_SECOND, Clusters, ClusterServer, MatterError, Status

SW = Clusters.Switch
SwitchFeature = SW.Bitmaps.Feature
LONG_PRESS_S = 1.0           # a press held this long is a long press
MULTI_PRESS_GAP_S = 0.5      # a press within this of the last release continues the series
MAX_PRESSES = 10


class BindingServer(ClusterServer):
    cluster = Clusters.Binding
    revision = 1
    attributes = ("Binding",)
    writable = frozenset({"Binding"})
    notes = ("Each target names a node and endpoint (optionally a cluster), or a group; not both.",)

    def defaults(self) -> dict[str, Any]:
        return {"Binding": []}

    def validate_write(self, name: str, value: Any) -> None:
        for i, target in enumerate(value):
            has_node = target.node is not None or target.endpoint is not None
            if target.group is not None and has_node:
                raise MatterError(Status.CONSTRAINT_ERROR,
                                  f"Binding[{i}]: a target is a group or a node and endpoint, not both")
            if target.group is None and (target.node is None or target.endpoint is None):
                raise MatterError(Status.CONSTRAINT_ERROR,
                                  f"Binding[{i}]: a unicast target needs both node and endpoint")


class SwitchServer(ClusterServer):
    cluster = SW
    revision = 2
    attributes = ("NumberOfPositions", "CurrentPosition")
    notes = ("No commands: a hand operates the switch (the home's `press`), and the switch "
             "reports events: InitialPress, LongPress, ShortRelease, LongRelease, "
             "MultiPressOngoing, MultiPressComplete (momentary) or SwitchLatched (latching).",)

    def __init__(self, latching: bool = False, positions: int = 2, multi_press_max: int = 2, **initial: Any):
        if latching:
            features = int(SwitchFeature.kLatchingSwitch)
        else:
            features = (int(SwitchFeature.kMomentarySwitch) | int(SwitchFeature.kMomentarySwitchRelease)
                        | int(SwitchFeature.kMomentarySwitchLongPress)
                        | (int(SwitchFeature.kMomentarySwitchMultiPress) if multi_press_max >= 2 else 0))
        if features & SwitchFeature.kMomentarySwitchMultiPress:
            self.attributes = SwitchServer.attributes + ("MultiPressMax",)
        self._positions, self._multi = int(positions), int(multi_press_max)
        super().__init__(feature_map=features, **initial)
        #: planned steps [tick, what, position], in order; what is press/long/release/complete
        self._plan: list[list[Any]] = []
        self._series = 0           # presses counted in the current multi-press series
        self._long = False         # the current press has been reported long

    def defaults(self) -> dict[str, Any]:
        return {"NumberOfPositions": self._positions, "CurrentPosition": 0, "MultiPressMax": self._multi}

    @property
    def latching(self) -> bool:
        return bool(self.feature_map & SwitchFeature.kLatchingSwitch)

    def _has(self, feature: Any) -> bool:
        return bool(self.feature_map & feature)

    # ---- the hand ------------------------------------------------------------------
    def press(self, presses: int = 1, hold_seconds: float = 0.2, position: int = 1) -> None:
        """A hand presses the button `presses` times, each held `hold_seconds` (a latching
        switch is moved to `position` instead). Starts now; the steps follow on the clock."""
        self.changing()
        if not 1 <= position < self.get("NumberOfPositions"):
            raise MatterError(Status.CONSTRAINT_ERROR, f"position={position}: this switch has positions "
                              f"1..{self.get('NumberOfPositions') - 1} besides its rest position 0")
        if self.latching:
            self.set("CurrentPosition", position)
            self.emit_event(SW.Events.SwitchLatched(newPosition=position))
            return
        if not 1 <= presses <= MAX_PRESSES:
            raise MatterError(Status.CONSTRAINT_ERROR, f"presses={presses}: give 1..{MAX_PRESSES}")
        hold = round(hold_seconds * TICKS_PER_SECOND)
        if not 1 <= hold <= 600:
            raise MatterError(Status.CONSTRAINT_ERROR, f"hold_seconds={hold_seconds}: give 0.1..60")
        if self._plan:
            raise MatterError(Status.BUSY, "the switch is still being operated; wait for the gesture to end")
        gap = round(MULTI_PRESS_GAP_S * TICKS_PER_SECOND) // 2   # well inside the multi-press window
        tick = self.now
        for i in range(presses):
            self._plan.append([tick, "press", position])
            if hold >= round(LONG_PRESS_S * TICKS_PER_SECOND) and self._has(SwitchFeature.kMomentarySwitchLongPress):
                self._plan.append([tick + round(LONG_PRESS_S * TICKS_PER_SECOND), "long", position])
            tick += hold
            self._plan.append([tick, "release", position])
            tick += gap if i < presses - 1 else 0
        if self._has(SwitchFeature.kMomentarySwitchMultiPress):
            self._plan.append([tick + round(MULTI_PRESS_GAP_S * TICKS_PER_SECOND), "complete", position])
        self.advance_to(self.now)

    # ---- time ----------------------------------------------------------------------
    def next_event_tick(self) -> int | None:
        return self._plan[0][0] if self._plan else None

    def advance_to(self, tick: int) -> None:
        while self._plan and self._plan[0][0] <= tick:
            _, what, position = self._plan.pop(0)
            self._step(what, position)

    def _step(self, what: str, position: int) -> None:
        E = SW.Events
        multi = self._has(SwitchFeature.kMomentarySwitchMultiPress)
        if what == "press":
            self._long = False
            self._series += 1
            self.set("CurrentPosition", position)
            self.emit_event(E.InitialPress(newPosition=position))
            if multi and self._series > 1:
                self.emit_event(E.MultiPressOngoing(newPosition=position, currentNumberOfPressesCounted=self._series))
        elif what == "long":
            self._long = True
            self.emit_event(E.LongPress(newPosition=position))
        elif what == "release":
            self.set("CurrentPosition", 0)
            if self._long:
                self.emit_event(E.LongRelease(previousPosition=position))
            elif self._has(SwitchFeature.kMomentarySwitchRelease):
                self.emit_event(E.ShortRelease(previousPosition=position))
            if not multi:
                self._series = 0
        elif what == "complete":
            # more presses than MultiPressMax count as 0 (spec: "too many")
            total = self._series if self._series <= self.get("MultiPressMax") else 0
            self._series = 0
            self.emit_event(E.MultiPressComplete(previousPosition=position, totalNumberOfPressesCounted=total))

    def private_state(self) -> dict[str, Any]:
        return {"plan": [list(p) for p in self._plan], "series": self._series, "long": self._long}

    def load_private_state(self, state: dict[str, Any]) -> None:
        self._plan = [list(p) for p in state.get("plan", [])]
        self._series = state.get("series", 0)
        self._long = state.get("long", False)

    def stop_motion(self) -> None:
        self._plan, self._series, self._long = [], 0, False
        self._values["CurrentPosition"] = 0


# ---- controllers: what a switch sends its bound targets ----------------------------------
#: The actions a hand can take on a light switch, by the client clusters that carry them.
CONTROLLER_ACTIONS: dict[str, int] = {
    "toggle": Clusters.OnOff.id, "on": Clusters.OnOff.id, "off": Clusters.OnOff.id,
    "brighter": Clusters.LevelControl.id, "dimmer": Clusters.LevelControl.id,
    "hue": Clusters.ColorControl.id, "color_temperature": Clusters.ColorControl.id,
}
DIM_STEP = 32   # one press of a dimmer's up/down key, in level units (about an eighth)


def controller_commands(client_clusters: tuple[int, ...], action: str, value: Any = None
                        ) -> list[tuple[str, str, dict[str, Any]]]:
    """(cluster, command, fields) a controller with these client clusters sends for `action`;
    ValueError naming what is accepted when it cannot."""
    accepted = [a for a, c in CONTROLLER_ACTIONS.items() if c in client_clusters]
    if action not in accepted:
        raise ValueError(f"action {action!r} is not one this controller has; accepted: {', '.join(accepted)}")
    options = {"optionsMask": 0, "optionsOverride": 0}
    if action in ("toggle", "on", "off"):
        return [("OnOff", action.capitalize(), {})]
    if action in ("brighter", "dimmer"):
        return [("LevelControl", "StepWithOnOff", {"stepMode": 0 if action == "brighter" else 1,
                                                   "stepSize": DIM_STEP, "transitionTime": 5, **options})]
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValueError(f"action {action!r} needs an integer value "
                         + ("(hue 0..254)" if action == "hue" else "(mireds)"))
    if action == "hue":
        return [("ColorControl", "MoveToHueAndSaturation", {"hue": value, "saturation": 254, "transitionTime": 5,
                                                             **options})]
    return [("ColorControl", "MoveToColorTemperature", {"colorTemperatureMireds": value, "transitionTime": 5,
                                                         **options})]
