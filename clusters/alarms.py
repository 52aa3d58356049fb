"""Dishwasher Alarm (Matter 1.3, 8.4) and Refrigerator Alarm (8.8) cluster servers, derived
from Alarm Base (1.15).

The device model raises and clears alarm *conditions* (`raise_alarm` / `clear_alarm`). State
shows the enabled (Mask) alarms whose condition is present, plus latched ones: an alarm listed
in Latch stays in State after its condition clears, until a client Resets it. Every change of
State emits a Notify event saying which bits became active and inactive.
"""
from __future__ import annotations

from typing import Any

from clusters.base import TICKS_PER_SECOND, Clusters, ClusterServer
from clusters.status import MatterError, Status

DA = Clusters.DishwasherAlarm
RA = Clusters.RefrigeratorAlarm
Alarm = DA.Bitmaps.AlarmBitmap
ALL_ALARMS = sum(int(a) for a in Alarm)
DOOR_ALARM_SECONDS = 120   # a fridge door left open this long raises DoorOpen


def _names(bits: int, cluster: Any = DA) -> str:
    alarms = cluster.Bitmaps.AlarmBitmap
    every = sum(int(a) for a in alarms)
    names = [f"{a.name[1:]} ({int(a)})" for a in alarms if bits & int(a)]
    if bits & ~every:
        names.append(f"undefined bits {bits & ~every:#x}")
    return ", ".join(names) or "none"


class DishwasherAlarmServer(ClusterServer):
    persists = False   # an operation in progress: a restart starts it afresh
    cluster = DA
    revision = 1
    notes = ("Reset clears latched alarms whose condition has gone; alarms still present stay in State.",
             "ModifyEnabledAlarms sets Mask; disabled alarms never appear in State.")

    def __init__(self, reset: bool = True, **initial: Any):
        self.attributes = ("Mask", "State", "Supported") + (("Latch",) if reset else ())
        if self.cluster is DA:
            self.commands = (("Reset",) if reset else ()) + ("ModifyEnabledAlarms",)
        if "State" in initial:
            raise MatterError(Status.CONSTRAINT_ERROR,
                              f"{self.name}.State follows from the alarm conditions; use raise_alarm()")
        reset_feature = getattr(self.cluster.Bitmaps, "Feature", None)
        super().__init__(feature_map=int(reset_feature.kReset) if reset and reset_feature else 0, **initial)
        supported = self._values["Supported"]
        if reset and "Latch" not in initial:
            self._values["Latch"] &= supported  # default latching, limited to what is supported
        for name in ("Mask", "Latch"):
            extra = self._values.get(name, 0) & ~supported
            if extra:
                raise MatterError(Status.CONSTRAINT_ERROR,
                                  f"{self.name}.{name} has alarms that are not Supported: "
                                  f"{_names(extra, self.cluster)}")
        self._present = 0  # conditions the device currently has
        self._held = 0     # latched alarms kept in State until Reset

    def defaults(self) -> dict[str, Any]:
        # Faults needing attention latch; door and temperature alarms follow their condition.
        return {"Mask": ALL_ALARMS, "State": 0, "Supported": ALL_ALARMS,
                "Latch": int(Alarm.kInflowError | Alarm.kDrainError | Alarm.kWaterLevelError)}

    # ---- the device model's side -------------------------------------------------------
    def raise_alarm(self, bits: int) -> None:
        self._check_supported(bits, Status.CONSTRAINT_ERROR)
        self._present |= bits
        self._held |= bits & self._values.get("Latch", 0) & self._values["Mask"]
        self._refresh()

    def clear_alarm(self, bits: int) -> None:
        self._check_supported(bits, Status.CONSTRAINT_ERROR)
        self._present &= ~bits
        self._refresh()

    # ---- commands ----------------------------------------------------------------------
    def Reset(self, request: Any) -> None:
        self._check_supported(request.alarms, Status.FAILURE)
        self._held &= ~request.alarms
        self._refresh()

    def ModifyEnabledAlarms(self, request: Any) -> None:
        self._check_supported(request.mask, Status.INVALID_COMMAND)
        self.set("Mask", request.mask)
        self._held &= request.mask  # a disabled alarm drops its latch
        self._refresh()

    def _check_supported(self, bits: int, status: Status) -> None:
        extra = int(bits) & ~self._values["Supported"]
        if extra:
            raise MatterError(status, f"{self.name}: alarms {_names(extra, self.cluster)} are not supported; "
                                      "supported: " + _names(self._values["Supported"], self.cluster))

    def _refresh(self) -> None:
        old = self._values["State"]
        new = (self._present | self._held) & self._values["Mask"]
        if new != old:
            self.set("State", new)
            self.emit_event(self.cluster.Events.Notify(active=new & ~old, inactive=old & ~new, state=new,
                                             mask=self._values["Mask"]))

    def private_state(self) -> dict[str, Any]:
        return {"present": self._present, "held": self._held}

    def load_private_state(self, state: dict[str, Any]) -> None:
        self._present = state.get("present", 0)
        self._held = state.get("held", 0)



class RefrigeratorAlarmServer(DishwasherAlarmServer):
    """Refrigerator Alarm: DoorOpen, raised when a door stays open DOOR_ALARM_SECONDS (the device
    model calls `door(open)`), cleared when it closes. No Reset, no commands (as the spec)."""
    cluster = RA
    commands = ()
    notes = (f"DoorOpen is raised when a door stays open {DOOR_ALARM_SECONDS} s and clears when it closes.",)

    def __init__(self, **initial: Any):
        super().__init__(reset=False, **initial)
        self._door_opened_at: int | None = None

    def defaults(self) -> dict[str, Any]:
        every = int(RA.Bitmaps.AlarmBitmap.kDoorOpen)
        return {"Mask": every, "State": 0, "Supported": every}

    def door(self, open_: bool) -> None:
        """The door opened (alarm after DOOR_ALARM_SECONDS) or closed (alarm clears)."""
        if open_:
            if self._door_opened_at is None:
                self._door_opened_at = self.now
            return
        self._door_opened_at = None
        self.clear_alarm(int(RA.Bitmaps.AlarmBitmap.kDoorOpen))

    @property
    def door_open(self) -> bool:
        return self._door_opened_at is not None

    def next_event_tick(self) -> int | None:
        if self._door_opened_at is None or self._present & int(RA.Bitmaps.AlarmBitmap.kDoorOpen):
            return None
        return self._door_opened_at + DOOR_ALARM_SECONDS * TICKS_PER_SECOND

    def advance_to(self, tick: int) -> None:
        due = self.next_event_tick()
        if due is not None and tick >= due:
            self.raise_alarm(int(RA.Bitmaps.AlarmBitmap.kDoorOpen))

    def private_state(self) -> dict[str, Any]:
        return {**super().private_state(), "door_opened_at": self._door_opened_at}

    def load_private_state(self, state: dict[str, Any]) -> None:
        super().load_private_state(state)
        self._door_opened_at = state.get("door_opened_at")
