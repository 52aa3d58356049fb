"""Command field constraints from the data model: one check for every way a command arrives.

`chip.clusters.Objects` types integer fields only as `uint`/`int`, without their width, so a
uint16 field would take any Python int. `check_command(command, what)` walks a built command
object (from the Interaction Model's TLV or from a tool's JSON) against its declared chip types:

- integers within their spec type's range (`FIELD_TYPES` below, the spec's data types of the
  command fields our servers accept; any other `uint` is a uint64, any other `int` an int64);
- structs and lists field by field.

Enums (a value the spec defines) and bitmaps (no undefined bit) are checked where values are
built, by `clusters.values.from_json`, which both the tool API and the IM's TLV decoder
(`twin.node.values.decode_typed`) go through; a server may answer a command-specific status
for an enum it refuses (OperationalCredentials' CertificateChainRequest: INVALID_COMMAND).

A value outside its type raises MatterError(CONSTRAINT_ERROR) naming the field and the range,
as a write of the same value to an attribute does. `ClusterServer.invoke` calls it, so the
node's IM and the tool API get the same answer. Spec ranges narrower than the type (a
percentage, a mode) stay in the cluster servers, which know their state.
"""
from __future__ import annotations

import enum
import types
import typing
from typing import Any

from chip import tlv
from chip.clusters import Objects as Clusters
from chip.clusters.ClusterObjects import ClusterObject
from chip.clusters.Types import NullValue

from clusters.status import MatterError, Status

#: Integer ranges of the spec's data types, (low, high).
RANGES: dict[str, tuple[int, int]] = {
    "uint8": (0, 0xFF), "uint16": (0, 0xFFFF), "uint24": (0, 0xFFFFFF), "uint32": (0, 0xFFFFFFFF),
    "uint64": (0, 0xFFFFFFFFFFFFFFFF),
    "int8": (-0x80, 0x7F), "int16": (-0x8000, 0x7FFF), "int32": (-0x80000000, 0x7FFFFFFF),
    "int64": (-0x8000000000000000, 0x7FFFFFFFFFFFFFFF),
}

def _labels(cluster: str, command: str) -> set[str]:
    cls = getattr(getattr(Clusters, cluster).Commands, command, None)
    return {f.Label for f in cls.descriptor.Fields} if cls is not None else set()


#: (cluster, command, field path) -> the spec data type of an integer command field, for the
#: commands our servers accept (Matter 1.3 Application Cluster and Core specs). Derived spec
#: types are given as their base (percent100ths: uint16, temperature: int16, power-mW: int64,
#: elapsed-s: uint32, fabric-idx: uint8, vendor-id: uint16, epoch-us / subject-id: uint64).
FIELD_TYPES: dict[tuple[str, str, str], str] = {
    ("DeviceEnergyManagement", "PowerAdjustRequest", "power"): "int64",
    ("DeviceEnergyManagement", "PowerAdjustRequest", "duration"): "uint32",
    ("Identify", "Identify", "identifyTime"): "uint16",
    ("Identify", "TriggerEffect", "effectIdentifier"): "uint8",
    ("Identify", "TriggerEffect", "effectVariant"): "uint8",
    **{("LevelControl", command, field): typ
       for command in ("MoveToLevel", "MoveToLevelWithOnOff", "Move", "MoveWithOnOff", "Step", "StepWithOnOff",
                       "Stop", "StopWithOnOff", "MoveToClosestFrequency")
       for field, typ in (("level", "uint8"), ("transitionTime", "uint16"), ("rate", "uint8"),
                          ("stepSize", "uint8"), ("optionsMask", "uint8"), ("optionsOverride", "uint8"),
                          ("frequency", "uint16"))
       if field in _labels("LevelControl", command)},
    ("Channel", "ChangeChannelByNumber", "majorNumber"): "uint16",
    ("Channel", "ChangeChannelByNumber", "minorNumber"): "uint16",
    ("Channel", "SkipChannel", "count"): "int16",
    **{(cluster, "ChangeToMode", "newMode"): "uint8"
       for cluster in ("DishwasherMode", "LaundryWasherMode", "RefrigeratorAndTemperatureControlledCabinetMode",
                       "RvcRunMode", "RvcCleanMode")},
    ("OnOff", "OffWithEffect", "effectVariant"): "uint8",
    ("OnOff", "OnWithTimedOff", "onOffControl"): "uint8",
    ("OnOff", "OnWithTimedOff", "onTime"): "uint16",
    ("OnOff", "OnWithTimedOff", "offWaitTime"): "uint16",
    ("TemperatureControl", "SetTemperature", "targetTemperature"): "int16",
    ("TemperatureControl", "SetTemperature", "targetTemperatureLevel"): "uint8",
    ("Thermostat", "SetpointRaiseLower", "amount"): "int8",
    ("WindowCovering", "GoToLiftPercentage", "liftPercent100thsValue"): "uint16",
    ("WindowCovering", "GoToTiltPercentage", "tiltPercent100thsValue"): "uint16",
    ("WindowCovering", "GoToLiftValue", "liftValue"): "uint16",
    ("WindowCovering", "GoToTiltValue", "tiltValue"): "uint16",
    ("AdministratorCommissioning", "OpenBasicCommissioningWindow", "commissioningTimeout"): "uint16",
    ("AdministratorCommissioning", "OpenCommissioningWindow", "commissioningTimeout"): "uint16",
    ("AdministratorCommissioning", "OpenCommissioningWindow", "discriminator"): "uint16",
    ("AdministratorCommissioning", "OpenCommissioningWindow", "iterations"): "uint32",
    ("GeneralCommissioning", "ArmFailSafe", "expiryLengthSeconds"): "uint16",
    ("GeneralCommissioning", "ArmFailSafe", "breadcrumb"): "uint64",
    ("GeneralCommissioning", "SetRegulatoryConfig", "breadcrumb"): "uint64",
    ("GeneralDiagnostics", "TestEventTrigger", "eventTrigger"): "uint64",
    ("GroupKeyManagement", "KeySetRead", "groupKeySetID"): "uint16",
    ("GroupKeyManagement", "KeySetRemove", "groupKeySetID"): "uint16",
    ("GroupKeyManagement", "KeySetWrite", "groupKeySet.groupKeySetID"): "uint16",
    ("GroupKeyManagement", "KeySetWrite", "groupKeySet.epochStartTime0"): "uint64",
    ("GroupKeyManagement", "KeySetWrite", "groupKeySet.epochStartTime1"): "uint64",
    ("GroupKeyManagement", "KeySetWrite", "groupKeySet.epochStartTime2"): "uint64",
    ("OperationalCredentials", "AddNOC", "caseAdminSubject"): "uint64",
    ("OperationalCredentials", "AddNOC", "adminVendorId"): "uint16",
    ("OperationalCredentials", "RemoveFabric", "fabricIndex"): "uint8",
}


def check_command(command: ClusterObject, what: str, cluster: str | None = None) -> None:
    """Raise CONSTRAINT_ERROR if a field of this built command breaks its declared type."""
    name = type(command).__name__
    cluster = cluster or type(command).__qualname__.split(".")[0]
    for f in type(command).descriptor.Fields:
        _check(f.Type, getattr(command, f.Label, None), f"{what}.{f.Label}", (cluster, name, f.Label))


def _check(typ: Any, value: Any, what: str, key: tuple[str, str, str]) -> None:
    origin = typing.get_origin(typ)
    if origin in (typing.Union, types.UnionType):
        if value is None or value is NullValue:
            return   # optional / nullable: the decoders already refused a null where none may be
        inner = [a for a in typing.get_args(typ) if a is not type(None) and getattr(a, "__name__", "") != "Nullable"]
        if len(inner) == 1:
            _check(inner[0], value, what, key)
        return
    if origin is list:
        (item,) = typing.get_args(typ) or (Any,)
        for i, v in enumerate(value or ()):
            _check(item, v, f"{what}[{i}]", key)
        return
    if not isinstance(typ, type) or value is None or value is NullValue:
        return
    if issubclass(typ, ClusterObject):
        for f in typ.descriptor.Fields:
            _check(f.Type, getattr(value, f.Label, None), f"{what}.{f.Label}",
                   (key[0], key[1], f"{key[2]}.{f.Label}"))
        return
    if issubclass(typ, (bool, enum.Enum)):
        return   # see the module docstring
    if issubclass(typ, (tlv.float32, float)) or not issubclass(typ, int):
        return
    spec_type = FIELD_TYPES.get(key) or ("uint64" if issubclass(typ, tlv.uint) else "int64")
    low, high = RANGES[spec_type]
    if not low <= int(value) <= high:
        raise MatterError(Status.CONSTRAINT_ERROR, f"{what}={int(value)} is outside {spec_type} ({low}..{high})")


__all__ = ["FIELD_TYPES", "RANGES", "check_command"]
