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

Attributes of clusters we have no server for (a cloned product's attribute stores,
clusters/clone.py) have no server to know their spec ranges: `ATTRIBUTE_LIMITS` below gives,
for every writable one whose chip type says less than the spec, its spec data type and the
constraint the spec's data model states (a range, a length, "one of another attribute's
values"), and `check_attribute` applies it to a write (tests/clusters/test_attribute_limits.py
holds it to matter.js's model of the spec).
"""
from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from chip.clusters import Objects as Clusters
from chip.clusters.ClusterObjects import ClusterObject
from chip.clusters.Types import NullValue

from clusters.status import MatterError, Status
from clusters.value_types import Kind, shape

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
    s = shape(typ)
    if s.is_union and (value is None or value is NullValue or len(s.options) != 1):
        return   # optional / nullable: the decoders already refused a null where none may be
    if s.kind is Kind.LIST:
        for i, v in enumerate(value or ()):
            _check(s.item, v, f"{what}[{i}]", key)
        return
    if value is None or value is NullValue:
        return
    if s.kind is Kind.STRUCT:
        for f in s.typ.descriptor.Fields:
            _check(f.Type, getattr(value, f.Label, None), f"{what}.{f.Label}",
                   (key[0], key[1], f"{key[2]}.{f.Label}"))
        return
    if s.kind not in (Kind.UINT, Kind.INT):
        return   # booleans and enums (see the module docstring), numbers, strings, bytes
    spec_type = FIELD_TYPES.get(key) or ("uint64" if s.kind is Kind.UINT else "int64")
    low, high = RANGES[spec_type]
    if not low <= int(value) <= high:
        raise MatterError(Status.CONSTRAINT_ERROR, f"{what}={int(value)} is outside {spec_type} ({low}..{high})")


def utf8_length(text: str) -> int:
    """A character string's length as the spec bounds it: bytes of its UTF-8 encoding."""
    return len(text.encode("utf-8"))


# ---- attributes of clusters we have no server for -------------------------------------------
@dataclass(frozen=True)
class Ref:
    """A bound that is another attribute of the same cluster: its value (or a field of it,
    "HoldTimeLimits.holdTimeMin"), plus `offset`."""
    path: str
    offset: int = 0


@dataclass(frozen=True)
class Limit:
    """The spec's constraint on one attribute. `type` is its spec data type: an integer type
    (uint8 ... int64), whose range always applies, or string (length in UTF-8 bytes), octstr
    (length in bytes) or list (number of entries), for which `low` and `high` bound the length.
    `within` names a list attribute (".field" of its entries) that holds the allowed values.
    `fields` constrains fields of a struct (of each entry, for a list) by their chip label."""
    type: str
    low: int | Ref | None = None
    high: int | Ref | None = None
    within: str | None = None
    fields: dict[str, Limit] | None = None


def _modes(cluster: str) -> dict[tuple[str, str], Limit]:
    # ModeBase / ModeSelect: StartUpMode and OnMode name a mode of SupportedModes (spec prose).
    return {(cluster, name): Limit("uint8", within="SupportedModes.mode") for name in ("StartUpMode", "OnMode")}


#: (cluster, attribute) -> the spec constraint of each writable attribute, of the clusters we have
#: no server for, that its chip type does not carry (Matter 1.4 Application Cluster and Core
#: specs): the integer width of every plain integer, and every range, length and membership
#: the spec states, on the attribute or on fields of its structs (but FabricIndex, which the
#: node's Interaction Model stamps). Constraints the spec gives only in prose are here where
#: they are a plain rule (the modes); the others (DoorLock.OperatingMode against
#: SupportedOperatingModes, a pump's modes by feature) are left to the type check.
ATTRIBUTE_LIMITS: dict[tuple[str, str], Limit] = {
    ("AccessControl", "Acl"): Limit("list", fields={
        "subjects": Limit("list", high=Ref("SubjectsPerAccessControlEntry")),
        "targets": Limit("list", high=Ref("TargetsPerAccessControlEntry"))}),
    ("AccessControl", "Extension"): Limit("list", fields={"data": Limit("octstr", high=128)}),
    ("Binding", "Binding"): Limit("list", fields={"group": Limit("uint16", low=1)}),   # group 0 is none
    ("BooleanStateConfiguration", "CurrentSensitivityLevel"):
        Limit("uint8", high=Ref("SupportedSensitivityLevels", -1)),
    ("BridgedDeviceBasicInformation", "NodeLabel"): Limit("string", high=32),
    ("Chime", "ActiveChimeID"): Limit("uint8"),
    ("ColorControl", "Options"): Limit("uint8"),
    **{("ColorControl", name): Limit("uint16", high=0xFEFF)   # 0xFF00 and up are not chromaticities
       for name in ("WhitePointX", "WhitePointY", "ColorPointRX", "ColorPointRY", "ColorPointGX",
                    "ColorPointGY", "ColorPointBX", "ColorPointBY")},
    **{("ColorControl", f"ColorPoint{c}Intensity"): Limit("uint8") for c in "RGB"},
    ("ColorControl", "StartUpColorTemperatureMireds"): Limit("uint16", 1, 0xFEFF),
    **_modes("DeviceEnergyManagementMode"),
    ("DoorLock", "DoorOpenEvents"): Limit("uint32"),
    ("DoorLock", "DoorClosedEvents"): Limit("uint32"),
    ("DoorLock", "OpenPeriod"): Limit("uint16"),
    ("DoorLock", "Language"): Limit("string", high=3),      # ISO 639-1, two letters (three allowed)
    ("DoorLock", "LEDSettings"): Limit("uint8"),
    ("DoorLock", "AutoRelockTime"): Limit("uint32"),
    ("DoorLock", "SoundVolume"): Limit("uint8"),
    ("DoorLock", "LocalProgrammingFeatures"): Limit("uint8"),
    ("DoorLock", "WrongCodeEntryLimit"): Limit("uint8", 1, 255),
    ("DoorLock", "UserCodeTemporaryDisableTime"): Limit("uint8", 1, 255),
    ("DoorLock", "ExpiringUserTimeout"): Limit("uint16", 1, 2880),   # minutes: up to two days
    ("EnergyEvse", "UserMaximumChargeCurrent"): Limit("int64"),
    ("EnergyEvse", "RandomizationDelayWindow"): Limit("uint32", high=86400),   # seconds: a day
    ("EnergyEvse", "ApproximateEVEfficiency"): Limit("uint16"),
    **_modes("EnergyEvseMode"),
    ("EnergyPreference", "CurrentEnergyBalance"): Limit("uint8"),
    ("EnergyPreference", "CurrentLowPowerModeSensitivity"): Limit("uint8"),
    ("GeneralCommissioning", "Breadcrumb"): Limit("uint64"),
    ("GroupKeyManagement", "GroupKeyMap"): Limit("list", fields={"groupKeySetID": Limit("uint16", 1, 0xFFFF)}),
    ("LocalizationConfiguration", "ActiveLocale"): Limit("string", within="SupportedLocales"),
    **_modes("ModeSelect"),
    ("OccupancySensing", "HoldTime"):
        Limit("uint16", Ref("HoldTimeLimits.holdTimeMin"), Ref("HoldTimeLimits.holdTimeMax")),
    **{("OccupancySensing", f"{sensor}{name}"): Limit("uint16")
       for sensor in ("PIR", "Ultrasonic", "PhysicalContact")
       for name in ("OccupiedToUnoccupiedDelay", "UnoccupiedToOccupiedDelay")},
    **{("OccupancySensing", f"{sensor}UnoccupiedToOccupiedThreshold"): Limit("uint8", 1, 254)
       for sensor in ("PIR", "Ultrasonic", "PhysicalContact")},
    **_modes("OvenMode"),
    ("PumpConfigurationAndControl", "LifetimeRunningHours"): Limit("uint24"),
    ("PumpConfigurationAndControl", "LifetimeEnergyConsumed"): Limit("uint32"),
    ("ThreadNetworkDirectory", "PreferredExtendedPanID"): Limit("octstr", 8, 8),   # an extended PAN ID
    ("TimeFormatLocalization", "ActiveCalendarType"): Limit("uint8", within="SupportedCalendarTypes"),
    ("UserLabel", "LabelList"): Limit("list", fields={"label": Limit("string", high=16),
                                                   "value": Limit("string", high=16)}),
    ("ValveConfigurationAndControl", "DefaultOpenDuration"): Limit("uint32", low=1),
    ("ValveConfigurationAndControl", "DefaultOpenLevel"): Limit("uint8", 1, 100),   # a percentage
    **_modes("WaterHeaterMode"),
}


def check_attribute(cluster: str, name: str, value: Any, read: Callable[[str], Any]) -> None:
    """Raise CONSTRAINT_ERROR if `value` for cluster.name breaks its `ATTRIBUTE_LIMITS` entry.
    `read(attribute)` gives a sibling attribute's value for bounds that refer to one (KeyError
    where the product lacks it: that bound then does not apply). Null is the type check's."""
    limit = ATTRIBUTE_LIMITS.get((cluster, name))
    if limit is not None:
        _check_limit(limit, value, f"{cluster}.{name}", read)


def _check_limit(limit: Limit, value: Any, what: str, read: Callable[[str], Any]) -> None:
    if value is None or value is NullValue:
        return
    if limit.type in RANGES:
        type_low, type_high = RANGES[limit.type]
        if not type_low <= int(value) <= type_high:
            raise MatterError(Status.CONSTRAINT_ERROR,
                              f"{what}={int(value)} is outside {limit.type} ({type_low}..{type_high})")
        size, said = int(value), f"{what}={int(value)}"
    elif limit.type == "string":
        size = utf8_length(value)
        said = f"{what} is {size} bytes long"
    else:
        size = len(value)
        said = f"{what} has {size} {'entries' if limit.type == 'list' else 'bytes'}"
    low, high = _bound(limit.low, read), _bound(limit.high, read)
    if (low is not None and size < low) or (high is not None and size > high):
        bounds = f"{low if low is not None else ''}..{high if high is not None else ''}"
        raise MatterError(Status.CONSTRAINT_ERROR, f"{said}, outside {bounds} (spec constraint)")
    if limit.within is not None:
        allowed = _resolve(limit.within, read)
        if allowed is not None and _plain(value) not in allowed:
            raise MatterError(Status.CONSTRAINT_ERROR, f"{what}={_plain(value)!r} is not one of {limit.within}: "
                              + ", ".join(repr(v) for v in allowed))
    for field, field_limit in (limit.fields or {}).items():
        for i, entry in enumerate(value if isinstance(value, list) else [value]):
            where = f"{what}[{i}]" if isinstance(value, list) else what
            _check_limit(field_limit, getattr(entry, field, None), f"{where}.{field}", read)


def _bound(bound: int | Ref | None, read: Callable[[str], Any]) -> int | None:
    if not isinstance(bound, Ref):
        return bound
    value = _resolve(bound.path, read)
    return int(value) + bound.offset if isinstance(value, int) else None


def _resolve(path: str, read: Callable[[str], Any]) -> Any:
    """The value at "Attribute.field" (a list maps over its entries); None where absent."""
    attribute, *fields = path.split(".")
    try:
        value = read(attribute)
    except KeyError:
        return None
    for field in fields:
        if isinstance(value, list):
            value = [getattr(entry, field, None) for entry in value]
        else:
            value = getattr(value, field, None)
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return None if value is NullValue else value


def _plain(value: Any) -> Any:
    return value.value if isinstance(value, enum.Enum) else value


__all__ = ["ATTRIBUTE_LIMITS", "FIELD_TYPES", "RANGES", "Limit", "Ref", "check_attribute", "check_command",
           "utf8_length"]
