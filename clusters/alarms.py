"""Dishwasher Alarm cluster server (Matter 1.3, 8.4, derived from Alarm Base 1.15).

The device model raises and clears alarm *conditions* (`raise_alarm` / `clear_alarm`). State
shows the enabled (Mask) alarms whose condition is present, plus latched ones: an alarm listed
in Latch stays in State after its condition clears, until a client Resets it. Every change of
State emits a Notify event saying which bits became active and inactive.
"""
from __future__ import annotations

from typing import Any

from clusters.base import Clusters, ClusterServer
from clusters.status import MatterError, Status

DA = Clusters.DishwasherAlarm
Alarm = DA.Bitmaps.AlarmBitmap
ALL_ALARMS = sum(int(a) for a in Alarm)


def _names(bits: int) -> str:
    names = [f"{a.name[1:]} ({int(a)})" for a in Alarm if bits & int(a)]
    if bits & ~ALL_ALARMS:
        names.append(f"undefined bits {bits & ~ALL_ALARMS:#x}")
    return ", ".join(names) or "none"


class DishwasherAlarmServer(ClusterServer):
    persists = False   # an operation in progress: a restart starts it afresh
    cluster = DA
    revision = 1
    notes = ("Reset clears latched alarms whose condition has gone; alarms still present stay in State.",
             "ModifyEnabledAlarms sets Mask; disabled alarms never appear in State.")

    def __init__(self, reset: bool = True, **initial: Any):
        self.attributes = ("Mask", "State", "Supported") + (("Latch",) if reset else ())
        self.commands = (("Reset",) if reset else ()) + ("ModifyEnabledAlarms",)
        if "State" in initial:
            raise MatterError(Status.CONSTRAINT_ERROR,
                              "DishwasherAlarm.State follows from the alarm conditions; use raise_alarm()")
        super().__init__(feature_map=int(DA.Bitmaps.Feature.kReset) if reset else 0, **initial)
        supported = self._values["Supported"]
        if reset and "Latch" not in initial:
            self._values["Latch"] &= supported  # default latching, limited to what is supported
        for name in ("Mask", "Latch"):
            extra = self._values.get(name, 0) & ~supported
            if extra:
                raise MatterError(Status.CONSTRAINT_ERROR,
                                  f"DishwasherAlarm.{name} has alarms that are not Supported: {_names(extra)}")
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
            raise MatterError(status, f"DishwasherAlarm: alarms {_names(extra)} are not supported; supported: "
                                      + _names(self._values["Supported"]))

    def _refresh(self) -> None:
        old = self._values["State"]
        new = (self._present | self._held) & self._values["Mask"]
        if new != old:
            self.set("State", new)
            self.emit_event(DA.Events.Notify(active=new & ~old, inactive=old & ~new, state=new,
                                             mask=self._values["Mask"]))

    def private_state(self) -> dict[str, Any]:
        return {"present": self._present, "held": self._held}

    def load_private_state(self, state: dict[str, Any]) -> None:
        self._present = state.get("present", 0)
        self._held = state.get("held", 0)
