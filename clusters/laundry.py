"""Laundry Washer Controls (Matter 1.3, 8.6) and Laundry Dryer Controls (8.9) cluster servers.

Both are plain settings a user picks before (or during) a cycle: the washer's spin speed (an
index into SpinSpeeds, or null for none) and number of rinses, the dryer's dryness level.
Each written value must be one the device lists as supported.
"""
from __future__ import annotations

from typing import Any

from chip.clusters.Types import NullValue

from clusters.base import Clusters, ClusterServer
from clusters.status import MatterError, Status

LWC = Clusters.LaundryWasherControls
LDC = Clusters.LaundryDryerControls

MAX_SPIN_SPEEDS = 16
MAX_SPIN_LABEL = 64


class LaundryWasherControlsServer(ClusterServer):
    cluster = LWC
    revision = 1

    def __init__(self, spin: bool = True, rinse: bool = True, **initial: Any):
        if not (spin or rinse):
            raise MatterError(Status.CONSTRAINT_ERROR,
                              "LaundryWasherControls needs at least one of the Spin and Rinse features")
        attrs: tuple[str, ...] = ()
        writable: set[str] = set()
        feature_map = 0
        if spin:
            attrs += ("SpinSpeeds", "SpinSpeedCurrent")
            writable.add("SpinSpeedCurrent")
            feature_map |= int(LWC.Bitmaps.Feature.kSpin)
        if rinse:
            attrs += ("NumberOfRinses", "SupportedRinses")
            writable.add("NumberOfRinses")
            feature_map |= int(LWC.Bitmaps.Feature.kRinse)
        self.attributes = attrs
        self.writable = frozenset(writable)
        super().__init__(feature_map=feature_map, **initial)
        if spin:
            speeds = self._values["SpinSpeeds"]
            if len(speeds) > MAX_SPIN_SPEEDS or any(not 0 < len(s) <= MAX_SPIN_LABEL for s in speeds):
                raise MatterError(Status.CONSTRAINT_ERROR,
                                  f"LaundryWasherControls.SpinSpeeds: at most {MAX_SPIN_SPEEDS} labels "
                                  f"of 1..{MAX_SPIN_LABEL} characters")
        if rinse and len(self._values["SupportedRinses"]) > 4:
            raise MatterError(Status.CONSTRAINT_ERROR, "LaundryWasherControls.SupportedRinses: at most 4 entries")
        for name in self.writable:
            self.validate_write(name, self._values[name])

    def defaults(self) -> dict[str, Any]:
        R = LWC.Enums.NumberOfRinsesEnum
        return {"SpinSpeeds": ["Off", "400", "800", "1200", "1400"], "SpinSpeedCurrent": 3,
                "NumberOfRinses": R.kNormal, "SupportedRinses": [R.kNone, R.kNormal, R.kExtra, R.kMax]}

    def validate_write(self, name: str, value: Any) -> None:
        if name == "SpinSpeedCurrent" and value is not NullValue:
            speeds = self._values["SpinSpeeds"]
            if not value < len(speeds):
                raise MatterError(Status.CONSTRAINT_ERROR,
                                  f"LaundryWasherControls.SpinSpeedCurrent={value} is not an index into SpinSpeeds; "
                                  "accepted: null or " + ", ".join(f"{i} ({s})" for i, s in enumerate(speeds)))
        if name == "NumberOfRinses" and value not in self._values["SupportedRinses"]:
            raise MatterError(Status.CONSTRAINT_ERROR,
                              f"LaundryWasherControls.NumberOfRinses={int(value)} is not supported; accepted: "
                              + ", ".join(f"{int(r)} ({r.name[1:]})" for r in self._values["SupportedRinses"]))


class LaundryDryerControlsServer(ClusterServer):
    cluster = LDC
    revision = 1
    attributes = ("SupportedDrynessLevels", "SelectedDrynessLevel")
    writable = frozenset({"SelectedDrynessLevel"})

    def __init__(self, **initial: Any):
        super().__init__(**initial)
        if not 1 <= len(self._values["SupportedDrynessLevels"]) <= 4:
            raise MatterError(Status.CONSTRAINT_ERROR, "LaundryDryerControls.SupportedDrynessLevels needs 1..4 entries")
        self.validate_write("SelectedDrynessLevel", self._values["SelectedDrynessLevel"])

    def defaults(self) -> dict[str, Any]:
        D = LDC.Enums.DrynessLevelEnum
        return {"SupportedDrynessLevels": [D.kLow, D.kNormal, D.kExtra, D.kMax], "SelectedDrynessLevel": D.kNormal}

    def validate_write(self, name: str, value: Any) -> None:
        supported = self._values["SupportedDrynessLevels"]
        if name == "SelectedDrynessLevel" and value is not NullValue and value not in supported:
            raise MatterError(Status.CONSTRAINT_ERROR,
                              f"LaundryDryerControls.SelectedDrynessLevel={int(value)} is not supported; accepted: "
                              "null or " + ", ".join(f"{int(d)} ({d.name[1:]})" for d in supported))
