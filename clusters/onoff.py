"""OnOff cluster server (Lighting feature for lights, DeadFrontBehavior for appliances)."""
from __future__ import annotations

from typing import Any

from chip.clusters.Types import NullValue

from clusters.base import Clusters, ClusterServer, MatterError, Status, check_range

OnOff = Clusters.OnOff


class OnOffServer(ClusterServer):
    cluster = OnOff
    revision = 6
    attributes = ("OnOff",)
    commands = ("Off", "On", "Toggle")

    #: Attributes and commands added by the Lighting (LT) feature.
    lighting_attributes = ("GlobalSceneControl", "OnTime", "OffWaitTime", "StartUpOnOff")
    lighting_commands = ("OffWithEffect", "OnWithRecallGlobalScene", "OnWithTimedOff")

    def __init__(self, lighting: bool = False, dead_front: bool = False, off_only: bool = False, **initial: Any):
        """`off_only` (OffOnly): only Off is accepted (a cooktop: it is turned on by using it)."""
        if off_only and (lighting or dead_front):
            raise MatterError(Status.CONSTRAINT_ERROR, "OnOff: OffOnly excludes Lighting and DeadFrontBehavior")
        if off_only:
            self.commands = ("Off",)
        if lighting:
            # Instance-level lists: the LT feature changes this server's shape.
            self.attributes = OnOffServer.attributes + self.lighting_attributes
            self.commands = OnOffServer.commands + self.lighting_commands
            self.writable = frozenset({"OnTime", "OffWaitTime", "StartUpOnOff"})
        # DeadFrontBehavior: appliances (washer, dishwasher, AC) whose Off means "dead front".
        features = ((int(OnOff.Bitmaps.Feature.kLighting) if lighting else 0)
                    | (int(OnOff.Bitmaps.Feature.kDeadFrontBehavior) if dead_front else 0)
                    | (int(OnOff.Bitmaps.Feature.kOffOnly) if off_only else 0))
        super().__init__(feature_map=features, **initial)
        self._timed_off_at: int | None = None  # tick at which OnWithTimedOff turns us off
        self._wait_until: int | None = None    # tick until which On is ignored (OffWaitTime)

    @property
    def lighting(self) -> bool:
        return bool(self.feature_map & OnOff.Bitmaps.Feature.kLighting)

    def defaults(self) -> dict[str, Any]:
        return {"OnOff": False, "GlobalSceneControl": True, "OnTime": 0, "OffWaitTime": 0,
                "StartUpOnOff": NullValue}

    def validate_write(self, name: str, value: Any) -> None:
        if name in ("OnTime", "OffWaitTime"):
            check_range(f"OnOff.{name}", value, 0, 0xFFFF)

    # ---- commands ----------------------------------------------------------------
    # Lighting timing (spec 1.5.6.3-4 and TC-OO-2.3): OnWithTimedOff starts the Timed On
    # state (OnTime counts down; at 0 the light turns off and OffWaitTime is cleared). An Off
    # during Timed On starts Delayed Off instead: OffWaitTime counts down while off, and
    # OnWithTimedOff can only shorten it. A plain On always turns the light on.
    def Off(self, request: Any = None) -> None:
        if self.lighting:
            wait = self._values["OffWaitTime"]
            timed_on = self._timed_off_at is not None
            self._timed_off_at = None
            self.set("OnTime", 0)
            if timed_on and wait not in (0, 0xFFFF):
                self._wait_until = self.now + wait
        self.set("OnOff", False)

    def On(self, request: Any = None) -> None:
        if self.lighting:
            if self.get("OnTime") == 0:
                self._wait_until = None
                self.set("OffWaitTime", 0)
            self.set("GlobalSceneControl", True)
        self.set("OnOff", True)

    def Toggle(self, request: Any = None) -> None:
        if self.get("OnOff"):
            self.Off()
        else:
            self.On()

    def OffWithEffect(self, request: Any) -> None:
        self.set("GlobalSceneControl", False)
        self.Off()

    def OnWithRecallGlobalScene(self, request: Any) -> None:
        self.On()

    def OnWithTimedOff(self, request: Any) -> None:
        accept_only_when_on = bool(int(request.onOffControl) & 1)
        if accept_only_when_on and not self.get("OnOff"):
            return
        if not self.get("OnOff") and self._wait_until is not None:   # Delayed Off: only shortened
            self._wait_until = self.now + min(self.get("OffWaitTime"), request.offWaitTime)
            return
        on_time = max(self.get("OnTime"), request.onTime)
        self._wait_until = None
        self.set("OnTime", on_time)  # the value at the anchor; get() derives it from then on
        self.set("OffWaitTime", request.offWaitTime)
        self.set("OnOff", True)
        # OnTime and OffWaitTime are in tenths of a second, which is exactly one tick.
        timed = on_time not in (0, 0xFFFF) and request.offWaitTime != 0xFFFF
        self._timed_off_at = self.now + on_time if timed else None

    # ---- time --------------------------------------------------------------------
    def next_event_tick(self) -> int | None:
        return self._timed_off_at if self._timed_off_at is not None else self._wait_until

    derived = frozenset({"OnTime", "OffWaitTime"})

    def get(self, name: str) -> Any:
        if name == "OnTime" and self._timed_off_at is not None:
            return self._timed_off_at - self.now  # counts down with the clock, never stored
        if name == "OffWaitTime" and self._wait_until is not None:
            return self._wait_until - self.now
        return super().get(name)

    def advance_to(self, tick: int) -> None:
        if self._timed_off_at is not None and tick >= self._timed_off_at:
            self._timed_off_at = None
            self.set("OnTime", 0)
            self.set("OffWaitTime", 0)
            self.set("OnOff", False)
        if self._wait_until is not None and tick >= self._wait_until:
            self._wait_until = None
            self.set("OffWaitTime", 0)

    def private_state(self) -> dict[str, Any]:
        return {"timed_off_at": self._timed_off_at, "wait_until": self._wait_until}

    def stop_motion(self) -> None:
        self._timed_off_at = self._wait_until = None
        if self.lighting:
            self._values["OnTime"] = 0
            self._values["OffWaitTime"] = 0

    def start_up(self) -> None:
        """StartUpOnOff (LT): 0 Off, 1 On, 2 toggle the previous value, null keep it."""
        if not self.lighting:
            return
        start_up = self._values.get("StartUpOnOff", NullValue)
        if start_up is NullValue or start_up is None:
            return
        value = int(start_up)
        self._values["OnOff"] = (not self._values["OnOff"]) if value == 2 else bool(value)

    def load_private_state(self, state: dict[str, Any]) -> None:
        self._timed_off_at = state.get("timed_off_at")
        self._wait_until = state.get("wait_until")
