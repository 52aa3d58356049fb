"""Mode Base derived cluster servers (Matter 1.3, Mode Base 1.10 and its derived clusters).

One generic `ModeBaseServer` holds SupportedModes / CurrentMode (and StartUpMode / OnMode where
configured) and answers ChangeToMode with ChangeToModeResponse. The thin subclasses name the
cluster and give realistic default modes. A mode may carry a *cycle* (timed phases); when it
becomes current, the cycle is handed to the sibling operational state server, which runs it on
Start. Appliance modes refuse to change while a cycle is under way (InvalidInMode), which the
spec allows a device to do.

SimuHome lists a GetSupportedModes command; Matter 1.3 has none (SupportedModes is read), so
it is not offered here.
"""
from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from chip.clusters.Types import NullValue

from clusters.base import Clusters, ClusterServer
from clusters.constraints import utf8_length
from clusters.operational_state import normalize_cycle
from clusters.status import MatterError, Status


class ModeChangeStatus(enum.IntEnum):
    """ChangeToModeResponse common status codes (Mode Base, 1.10.7.2.1.1).

    chip.clusters.Objects only carries each derived cluster's own range (0x40 and up, e.g.
    RvcCleanMode.Enums.StatusCode), not this common range, so it is named here once.
    """
    kSuccess = 0x00
    kUnsupportedMode = 0x01
    kGenericFailure = 0x02
    kInvalidInMode = 0x03


@dataclass(frozen=True)
class ModeOption:
    """One entry of SupportedModes, plus the cycle the appliance runs in this mode."""
    label: str
    mode: int
    tags: tuple[int, ...]
    cycle: tuple[tuple[str, int], ...] | None = None


MAX_MODE_LABEL = 64


class _Refusal(Exception):
    def __init__(self, status: int, text: str):
        super().__init__(text)
        self.status = int(status)
        self.text = text


class ModeBaseServer(ClusterServer):
    """Generic Mode Base server; subclasses set `cluster`, `default_modes` and `operational`."""
    revision = 2
    commands = ("ChangeToMode",)
    #: Default SupportedModes of this kind of device.
    default_modes: tuple[ModeOption, ...] = ()
    #: The sibling operational state cluster whose cycle follows the mode (None: no cycle).
    operational: Any = None
    #: Refuse mode changes while the sibling runs a cycle (spec: the device MAY, with InvalidInMode).
    reject_while_running = True

    def __init__(self, modes: Iterable[ModeOption | dict | tuple] | None = None,
                 start_up_mode: bool = False, on_off: bool = False, **initial: Any):
        attrs = ["SupportedModes", "CurrentMode"]
        writable = set()
        feature_map = 0
        if start_up_mode:
            attrs.append("StartUpMode")
            writable.add("StartUpMode")
        if on_off:
            on_off_feature = getattr(getattr(self.cluster, "Bitmaps", None), "Feature", None)
            if on_off_feature is None or not hasattr(on_off_feature, "kOnOff"):
                raise MatterError(Status.CONSTRAINT_ERROR, f"{self.cluster.__name__} has no OnOff feature")
            attrs.append("OnMode")
            writable.add("OnMode")
            feature_map |= int(on_off_feature.kOnOff)
        self.attributes = tuple(attrs)
        self.writable = frozenset(writable)
        given = modes if modes is not None else self.default_modes
        self._modes = self._check_modes([as_mode_option(m) for m in given])
        if "SupportedModes" in initial:
            raise MatterError(Status.CONSTRAINT_ERROR,
                              f"{self.cluster.__name__}.SupportedModes is fixed; pass modes=[...] instead")
        super().__init__(feature_map=feature_map, **initial)
        for name in ("CurrentMode", "StartUpMode", "OnMode"):
            if name in self._values:
                self.validate_write(name, self._values[name])
        # StartUpMode applies when the device powers up, which is when it is created.
        start = self._values.get("StartUpMode", NullValue)
        if start is not NullValue and start is not None:
            self._values["CurrentMode"] = start

    def start_up(self) -> None:
        """StartUpMode: when not null, the mode the device comes up in after a power cycle."""
        start = self._values.get("StartUpMode", NullValue)
        if start is not NullValue and start is not None and any(m.mode == start for m in self._modes):
            self._values["CurrentMode"] = start

    @property
    def modes(self) -> list[ModeOption]:
        return list(self._modes)

    def _check_modes(self, modes: list[ModeOption]) -> list[ModeOption]:
        name = self.cluster.__name__
        if not 2 <= len(modes) <= 255:
            raise MatterError(Status.CONSTRAINT_ERROR, f"{name}.SupportedModes needs 2..255 modes, got {len(modes)}")
        tags = {int(m) for m in self.cluster.Enums.ModeTag if m.name != "kUnknownEnumValue"}
        seen_modes, seen_labels = set(), set()
        for m in modes:
            if not 0 <= m.mode <= 255 or m.mode in seen_modes:
                raise MatterError(Status.CONSTRAINT_ERROR, f"{name}: mode {m.mode} is out of 0..255 or repeated")
            if not 0 < utf8_length(m.label) <= MAX_MODE_LABEL or m.label in seen_labels:
                raise MatterError(Status.CONSTRAINT_ERROR,
                                  f"{name}: mode label {m.label!r} must be 1..{MAX_MODE_LABEL} bytes long and unique")
            for tag in m.tags:
                if int(tag) not in tags:
                    raise MatterError(Status.CONSTRAINT_ERROR,
                                      f"{name}: mode {m.label!r} has tag {int(tag)}, not a {name}.ModeTag; "
                                      f"accepted: {sorted(tags)}")
            if m.cycle is not None:
                normalize_cycle(m.cycle)
            seen_modes.add(m.mode)
            seen_labels.add(m.label)
        return modes

    def defaults(self) -> dict[str, Any]:
        S = self.cluster.Structs
        return {
            "SupportedModes": [S.ModeOptionStruct(label=m.label, mode=m.mode,
                                                  modeTags=[S.ModeTagStruct(value=int(t)) for t in m.tags])
                               for m in self._modes],
            "CurrentMode": self._modes[0].mode,
            "StartUpMode": NullValue,
            "OnMode": NullValue,
        }

    def option(self, mode: int) -> ModeOption | None:
        return next((m for m in self._modes if m.mode == mode), None)

    @property
    def current(self) -> ModeOption:
        return self.option(self._values["CurrentMode"])

    def validate_write(self, name: str, value: Any) -> None:
        if value is NullValue or value is None:
            if name == "CurrentMode":
                raise MatterError(Status.CONSTRAINT_ERROR, f"{self.name}.CurrentMode may not be null")
            return
        if self.option(value) is None:
            raise MatterError(Status.CONSTRAINT_ERROR,
                              f"{self.name}.{name}={value} is not a supported mode; supported: "
                              + ", ".join(f"{m.mode} ({m.label})" for m in self._modes))

    # ---- ChangeToMode ----------------------------------------------------------------
    def ChangeToMode(self, request: Any):
        target = self.option(request.newMode)
        if target is None:
            return self._answer(ModeChangeStatus.kUnsupportedMode,
                                f"mode {request.newMode} is not supported; supported: "
                                + ", ".join(f"{m.mode} ({m.label})" for m in self._modes))
        if target.mode == self._values["CurrentMode"]:
            return self._answer(ModeChangeStatus.kSuccess)
        try:
            self.change_to(target)
        except _Refusal as refusal:
            return self._answer(refusal.status, refusal.text)
        return self._answer(ModeChangeStatus.kSuccess)

    def _answer(self, status: int, text: str | None = None):
        return self.cluster.Commands.ChangeToModeResponse(status=int(status), statusText=text)

    def change_to(self, target: ModeOption) -> None:
        """Apply a mode change or raise _Refusal; subclasses add their cluster's rules."""
        ops = self.operational_server()
        if ops is not None and self.reject_while_running and ops.in_operation:
            raise _Refusal(ModeChangeStatus.kInvalidInMode,
                           f"cannot change mode while {ops.name} has an operation under way; stop it first")
        if ops is not None and target.cycle is not None:
            ops.set_cycle(target.cycle)
        self.set("CurrentMode", target.mode)

    def operational_server(self):
        return self.sibling(self.operational) if self.operational is not None else None

    def set(self, name: str, value: Any) -> None:
        """CurrentMode set directly (an initial value from a home file) also brings its cycle,
        as a ChangeToMode would, unless an operation is under way."""
        super().set(name, value)
        ops = self.operational_server() if name == "CurrentMode" else None
        target = self.option(value) if ops is not None else None
        if ops is not None and target is not None and target.cycle is not None and not ops.in_operation:
            ops.set_cycle(target.cycle)

    # ---- composition -------------------------------------------------------------------
    def attach(self) -> None:
        ops = self.operational_server()
        if ops is not None and self.current.cycle is not None and not ops.in_operation:
            ops.set_cycle(self.current.cycle)
        if "OnMode" in self._values:
            onoff = self.sibling(Clusters.OnOff)
            if onoff is not None:
                onoff.listeners.append(self._on_off_changed)

    def _on_off_changed(self, server: ClusterServer, name: str) -> None:
        # OnMode: when the device turns on, CurrentMode takes the OnMode value (if not null).
        on_mode = self._values.get("OnMode", NullValue)
        if name == "OnOff" and server.get("OnOff") and on_mode is not NullValue and on_mode is not None:
            target = self.option(on_mode)
            if target is not None and target.mode != self._values["CurrentMode"]:
                try:
                    self.change_to(target)
                except _Refusal:
                    pass  # e.g. turned on mid-cycle: the running mode stays


def as_mode_option(m: ModeOption | dict | tuple) -> ModeOption:
    """Modes may come from code (ModeOption) or from a home file (dict or tuple)."""
    if isinstance(m, ModeOption):
        return m
    if isinstance(m, dict):
        m = (m.get("label"), m.get("mode"), m.get("tags", ()), m.get("cycle"))
    try:
        label, mode, tags, *rest = m
    except (TypeError, ValueError):
        raise MatterError(Status.CONSTRAINT_ERROR,
                          f"mode {m!r} is not (label, mode, tags[, cycle]) or a dict with those keys") from None
    cycle = rest[0] if rest else None
    if not isinstance(label, str) or isinstance(mode, bool) or not isinstance(mode, int):
        raise MatterError(Status.CONSTRAINT_ERROR, f"mode {m!r}: label must be a string and mode an integer")
    return ModeOption(label, mode, tuple(int(t) for t in tags),
                      None if cycle is None else tuple(normalize_cycle(cycle)))


# ---- appliance modes ------------------------------------------------------------------------
_DW = Clusters.DishwasherMode.Enums.ModeTag
_LW = Clusters.LaundryWasherMode.Enums.ModeTag
_RF = Clusters.RefrigeratorAndTemperatureControlledCabinetMode.Enums.ModeTag
_RR = Clusters.RvcRunMode.Enums.ModeTag
_RC = Clusters.RvcCleanMode.Enums.ModeTag


class DishwasherModeServer(ModeBaseServer):
    cluster = Clusters.DishwasherMode
    operational = Clusters.OperationalState
    default_modes = (
        ModeOption("Normal", 0, (_DW.kNormal,),
                   (("pre-wash", 600), ("main wash", 1800), ("rinse", 900), ("dry", 1200))),
        ModeOption("Heavy", 1, (_DW.kHeavy, _DW.kMax),
                   (("pre-wash", 900), ("main wash", 2700), ("rinse", 1200), ("dry", 1500))),
        ModeOption("Light", 2, (_DW.kLight, _DW.kLowEnergy),
                   (("main wash", 1200), ("rinse", 600), ("dry", 900))),
        ModeOption("Quick", 3, (_DW.kQuick,), (("main wash", 900), ("rinse", 600))),
    )


#: Modes for a laundry dryer, which uses the Laundry Washer Mode cluster (see below).
DRYER_MODES = (
    ModeOption("Normal", 0, (_LW.kNormal,), (("drying", 3000), ("cool down", 600))),
    ModeOption("Delicate", 1, (_LW.kDelicate, _LW.kLowEnergy), (("drying", 2400), ("cool down", 600))),
    ModeOption("Heavy", 2, (_LW.kHeavy,), (("drying", 4200), ("cool down", 600))),
    ModeOption("Quick", 3, (_LW.kQuick,), (("drying", 1500), ("cool down", 300))),
)


class LaundryWasherModeServer(ModeBaseServer):
    """Laundry Washer Mode. Matter has no Laundry Dryer Mode cluster: a laundry dryer uses this
    same cluster (0x51) with dryer modes, e.g. `LaundryWasherModeServer(modes=DRYER_MODES)`."""
    cluster = Clusters.LaundryWasherMode
    operational = Clusters.OperationalState
    default_modes = (
        ModeOption("Normal", 0, (_LW.kNormal,), (("wash", 1800), ("rinse", 900), ("spin", 600))),
        ModeOption("Delicate", 1, (_LW.kDelicate,), (("wash", 1200), ("rinse", 900), ("spin", 300))),
        ModeOption("Heavy", 2, (_LW.kHeavy,), (("pre-wash", 900), ("wash", 2700), ("rinse", 1200), ("spin", 900))),
        ModeOption("Whites", 3, (_LW.kWhites,), (("wash", 2400), ("rinse", 900), ("spin", 600))),
        ModeOption("Quick", 4, (_LW.kQuick,), (("wash", 900), ("rinse", 300), ("spin", 300))),
    )
    other_modes = (DRYER_MODES,)   # what a clone's modes may fit instead (see clusters.clone)


class RefrigeratorAndTemperatureControlledCabinetModeServer(ModeBaseServer):
    cluster = Clusters.RefrigeratorAndTemperatureControlledCabinetMode
    default_modes = (
        ModeOption("Normal", 0, (_RF.kAuto,)),
        ModeOption("Rapid Cool", 1, (_RF.kRapidCool,)),
        ModeOption("Rapid Freeze", 2, (_RF.kRapidFreeze,)),
        ModeOption("Vacation", 3, (_RF.kVacation, _RF.kLowEnergy)),
    )


# ---- robot vacuum modes ------------------------------------------------------------------------
class _RvcModeServer(ModeBaseServer):
    """RVC modes have no StartUpMode/OnMode; DirectModeChange allows changes while cleaning."""
    operational = Clusters.RvcOperationalState

    def __init__(self, modes: Iterable[Any] | None = None, direct_mode_change: bool = False, **initial: Any):
        super().__init__(modes, **initial)
        if direct_mode_change:
            self.feature_map |= int(self.cluster.Bitmaps.Feature.kDirectModeChange)

    @property
    def direct_mode_change(self) -> bool:
        return bool(self.feature_map & int(self.cluster.Bitmaps.Feature.kDirectModeChange))


def _is_idle(option: ModeOption) -> bool:
    return int(_RR.kIdle) in option.tags


class RvcRunModeServer(_RvcModeServer):
    """RVC Run Mode: leaving Idle starts a run on RVC Operational State, going Idle stops it,
    and when the run ends by itself the mode returns to Idle."""
    cluster = Clusters.RvcRunMode
    default_modes = (
        ModeOption("Idle", 0, (_RR.kIdle,)),
        ModeOption("Cleaning", 1, (_RR.kCleaning,)),
        ModeOption("Mapping", 2, (_RR.kMapping,), (("mapping", 600),)),
    )

    def _check_modes(self, modes: list[ModeOption]) -> list[ModeOption]:
        modes = super()._check_modes(modes)
        if not any(_is_idle(m) for m in modes) or not any(int(_RR.kCleaning) in m.tags for m in modes):
            raise MatterError(Status.CONSTRAINT_ERROR,
                              "RvcRunMode.SupportedModes needs at least one Idle and one Cleaning mode")
        for m in modes:
            if _is_idle(m) and {int(_RR.kCleaning), int(_RR.kMapping)} & set(m.tags):
                raise MatterError(Status.CONSTRAINT_ERROR,
                                  f"RvcRunMode mode {m.label!r}: Idle cannot be combined with Cleaning or Mapping")
        return modes

    def change_to(self, target: ModeOption) -> None:
        ops = self.operational_server()
        current = self.current
        if _is_idle(target):
            if ops is not None:
                ops.stop_run()
            self.set("CurrentMode", target.mode)
            return
        if not _is_idle(current):
            if not self.direct_mode_change:
                raise _Refusal(ModeChangeStatus.kInvalidInMode,
                               f"the robot is in {current.label!r}; change to an Idle mode first")
            self.set("CurrentMode", target.mode)
            return
        if ops is not None:
            cycle = self._cycle_for(target, ops)
            areas = self.sibling(Clusters.ServiceArea)
            if areas is not None and hasattr(areas, "plan_cycle"):   # clean the selected areas only
                cycle = areas.plan_cycle(ops.cycle if cycle is None else cycle)
            try:
                ops.start_run(cycle)
            except MatterError as exc:
                raise _Refusal(self._failure_status(exc.cluster_status), exc.message) from None
        self.set("CurrentMode", target.mode)

    def _cycle_for(self, target: ModeOption, ops: Any):
        if target.cycle is not None:
            return target.cycle
        clean = self.sibling(Clusters.RvcCleanMode)
        if clean is not None and clean.current.cycle is not None:
            return clean.current.cycle
        return None  # keep the cycle the operational state already has

    @staticmethod
    def _failure_status(error_id: int | None) -> int:
        # RvcRunMode's own status codes mirror the RVC error states (Stuck, DustBinFull, ...).
        codes = {int(c) for c in Clusters.RvcRunMode.Enums.StatusCode if c.name != "kUnknownEnumValue"}
        return error_id if error_id in codes else ModeChangeStatus.kGenericFailure

    def attach(self) -> None:
        ops = self.operational_server()
        if ops is not None:
            ops.listeners.append(self._operation_changed)

    def _operation_changed(self, server: ClusterServer, name: str) -> None:
        if name == "OperationalState" and not server.in_operation and not _is_idle(self.current):
            idle = next(m for m in self._modes if _is_idle(m))
            self.set("CurrentMode", idle.mode)


class RvcCleanModeServer(_RvcModeServer):
    """RVC Clean Mode: what kind of cleaning; each mode carries the cleaning cycle."""
    cluster = Clusters.RvcCleanMode
    reject_while_running = False  # handled below: only from an Idle run mode
    default_modes = (
        ModeOption("Vacuum", 0, (_RC.kVacuum,), (("vacuuming", 1800),)),
        ModeOption("Mop", 1, (_RC.kMop,), (("mopping", 1500),)),
        ModeOption("Vacuum and mop", 2, (_RC.kVacuum, _RC.kMop), (("vacuuming", 1500), ("mopping", 1200))),
        ModeOption("Deep clean", 3, (_RC.kDeepClean, _RC.kVacuum, _RC.kMax), (("vacuuming", 2700),)),
    )

    def _check_modes(self, modes: list[ModeOption]) -> list[ModeOption]:
        modes = super()._check_modes(modes)
        if not any({int(_RC.kVacuum), int(_RC.kMop)} & set(m.tags) for m in modes):
            raise MatterError(Status.CONSTRAINT_ERROR, "RvcCleanMode.SupportedModes needs a Vacuum or Mop mode")
        return modes

    def change_to(self, target: ModeOption) -> None:
        ops = self.operational_server()
        run = self.sibling(Clusters.RvcRunMode)
        busy = (ops is not None and ops.in_operation) or (run is not None and not _is_idle(run.current))
        if busy and not self.direct_mode_change:
            # InvalidInMode, as TC-RVCCLEANM-2.2 and the SDK's RVC app answer (not the cluster's
            # own CleaningInProgress code).
            raise _Refusal(ModeChangeStatus.kInvalidInMode,
                           "cannot change the cleaning mode while cleaning; set RVC Run Mode to Idle first")
        if ops is not None and target.cycle is not None and not ops.in_operation:
            ops.set_cycle(target.cycle)
        self.set("CurrentMode", target.mode)
