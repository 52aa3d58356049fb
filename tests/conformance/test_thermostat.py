"""Thermostat (TC_TSTAT) and Thermostat User Interface Configuration (TC_TSUIC) test cases."""
from __future__ import annotations

import pytest
from chip.clusters import Objects as C
from chip.clusters.Types import NullValue
from conftest import serving
from dut import DutStatusError
from steps import (
    IN_PROCESS,
    ClusterSpec,
    at_most,
    between,
    check_attributes,
    check_global_attributes,
    endpoints_with,
    one_of,
)

from clusters.status import Status

TSTAT = C.Thermostat
A = TSTAT.Attributes
HEAT, COOL, PRES = 0x1, 0x2, 0x100

SPEC = ClusterSpec(
    TSTAT, revisions=range(6, 12),
    features={"HEAT": 0, "COOL": 1, "OCC": 2, "SCH": 3, "SB": 4, "AUTO": 5, "LTNE": 6, "MSCH": 7, "PRES": 8},
    feature_rules={"HEAT": "AUTO, O", "COOL": "AUTO, O", "SCH": "O", "SB": "O"},
    attributes={
        "LocalTemperature": "M", "OutdoorTemperature": "O", "Occupancy": "OCC",
        "AbsMinHeatSetpointLimit": "[HEAT]", "AbsMaxHeatSetpointLimit": "[HEAT]",
        "AbsMinCoolSetpointLimit": "[COOL]", "AbsMaxCoolSetpointLimit": "[COOL]",
        "PICoolingDemand": "[COOL]", "PIHeatingDemand": "[HEAT]", "HVACSystemTypeConfiguration": "D",
        "LocalTemperatureCalibration": "[!LTNE]", "OccupiedCoolingSetpoint": "COOL",
        "OccupiedHeatingSetpoint": "HEAT", "UnoccupiedCoolingSetpoint": "COOL & OCC",
        "UnoccupiedHeatingSetpoint": "HEAT & OCC", "MinHeatSetpointLimit": "[HEAT]",
        "MaxHeatSetpointLimit": "[HEAT]", "MinCoolSetpointLimit": "[COOL]", "MaxCoolSetpointLimit": "[COOL]",
        "MinSetpointDeadBand": "AUTO", "RemoteSensing": "O", "ControlSequenceOfOperation": "M",
        "SystemMode": "M", "ThermostatRunningMode": "[AUTO]", "StartOfWeek": "SCH",
        "NumberOfWeeklyTransitions": "SCH", "NumberOfDailyTransitions": "SCH",
        "TemperatureSetpointHold": "O", "TemperatureSetpointHoldDuration": "O",
        "ThermostatProgrammingOperationMode": "O", "ThermostatRunningState": "O",
        "SetpointChangeSource": "O", "SetpointChangeAmount": "O", "SetpointChangeSourceTimestamp": "O",
        "OccupiedSetback": "SB", "OccupiedSetbackMin": "SB", "OccupiedSetbackMax": "SB",
        "UnoccupiedSetback": "SB & OCC", "UnoccupiedSetbackMin": "SB & OCC", "UnoccupiedSetbackMax": "SB & OCC",
        "EmergencyHeatDelta": "O", "ACType": "O", "ACCapacity": "O", "ACRefrigerantType": "O",
        "ACCompressorType": "O", "ACErrorCode": "O", "ACLouverPosition": "O", "ACCoilTemperature": "O",
        "ACCapacityformat": "O", "PresetTypes": "PRES", "ScheduleTypes": "MSCH", "NumberOfPresets": "PRES",
        "NumberOfSchedules": "MSCH", "NumberOfScheduleTransitions": "MSCH",
        "NumberOfScheduleTransitionPerDay": "MSCH", "ActivePresetHandle": "PRES", "ActiveScheduleHandle": "MSCH",
        "Presets": "PRES", "Schedules": "MSCH", "SetpointHoldExpiryTimestamp": "O"},
    accepted={"SetpointRaiseLower": "M", "SetWeeklySchedule": "SCH", "GetWeeklySchedule": "SCH",
              "ClearWeeklySchedule": "SCH", "SetActiveScheduleRequest": "MSCH",
              "SetActivePresetRequest": "PRES", "AtomicRequest": "PRES | MSCH"},
    generated={"GetWeeklyScheduleResponse": "SCH", "AtomicResponse": "PRES | MSCH"},
    constraints={
        "OccupiedHeatingSetpoint": between("MinHeatSetpointLimit", "MaxHeatSetpointLimit"),
        "OccupiedCoolingSetpoint": between("MinCoolSetpointLimit", "MaxCoolSetpointLimit"),
        "MinHeatSetpointLimit": between("AbsMinHeatSetpointLimit", "MaxHeatSetpointLimit"),
        "MaxHeatSetpointLimit": between("MinHeatSetpointLimit", "AbsMaxHeatSetpointLimit"),
        "MinCoolSetpointLimit": between("AbsMinCoolSetpointLimit", "MaxCoolSetpointLimit"),
        "MaxCoolSetpointLimit": between("MinCoolSetpointLimit", "AbsMaxCoolSetpointLimit"),
        "LocalTemperature": lambda v, _: v == NullValue or -27315 <= v <= 32767,
        "LocalTemperatureCalibration": between(-250, 250),
        "MinSetpointDeadBand": between(0, 127),
        "ControlSequenceOfOperation": at_most(5),
        "SystemMode": one_of(0, 1, 3, 4, 5, 6, 7, 8, 9),
        "ThermostatRunningState": at_most(0x7F),
        "NumberOfPresets": lambda v, values: v >= len(values.get("PresetTypes", [])),
        "ActivePresetHandle": lambda v, _: v == NullValue or len(v) <= 16,
        "Presets": lambda v, values: len(v) <= values["NumberOfPresets"],
    },
)

TSUIC = C.ThermostatUserInterfaceConfiguration
UI_SPEC = ClusterSpec(
    TSUIC, revisions=range(2, 3),
    attributes={"TemperatureDisplayMode": "M", "KeypadLockout": "M", "ScheduleProgrammingVisibility": "O"},
    constraints={"TemperatureDisplayMode": at_most(1), "KeypadLockout": at_most(5),
                 "ScheduleProgrammingVisibility": at_most(1)},
)

NOT_APPLICABLE = {
    "TC_TSTAT_2_3": "the Auto feature (AUTO, MinSetpointDeadBand) is not served",
    "TC_TSTAT_3_1": "manual: the plan's steps are operator-observed (no automated verification)",
    "TC_TSTAT_3_2": "manual: the plan's steps are operator-observed (no automated verification)",
    "TC_TSTAT_4_3": "the Matter Schedule Configuration feature (MSCH) is not served",
    "TC_TSTAT_4_4": "the Matter Schedule Configuration feature (MSCH) is not served",
    "TC_TSUIC_3_1": "manual: checks what the device's own display shows",
}

DUTS = serving(TSTAT, kinds=IN_PROCESS)


@pytest.mark.parametrize("dut", serving(TSTAT), indirect=True)
def test_TC_TSTAT_1_1(dut):
    check_global_attributes(dut, SPEC)


@pytest.mark.parametrize("dut", serving(TSTAT), indirect=True)
def test_TC_TSTAT_2_1(dut):
    for endpoint, values in check_attributes(dut, SPEC).items():
        features = dut.read(endpoint, A.FeatureMap)
        if features & HEAT:
            assert values["AbsMinHeatSetpointLimit"] <= values["AbsMaxHeatSetpointLimit"]
        if features & COOL:
            assert values["AbsMinCoolSetpointLimit"] <= values["AbsMaxCoolSetpointLimit"]
        sequence = values["ControlSequenceOfOperation"]
        if not features & HEAT:
            assert sequence in (0, 1)   # cooling only
        if not features & COOL:
            assert sequence in (2, 3)   # heating only


def _on(dut, endpoint):
    if C.OnOff.id in dut.read(endpoint, C.Descriptor.Attributes.ServerList):
        dut.invoke(endpoint, C.OnOff.Commands.On())


@pytest.mark.parametrize("dut", DUTS, indirect=True)
def test_TC_TSTAT_2_2(dut):
    """Setpoints: writes within the limits are kept; outside them answer CONSTRAINT_ERROR."""
    for endpoint in endpoints_with(dut, TSTAT):
        _on(dut, endpoint)
        features = dut.read(endpoint, A.FeatureMap)
        for on, setpoint, low, high in (
                (features & HEAT, A.OccupiedHeatingSetpoint, A.MinHeatSetpointLimit, A.MaxHeatSetpointLimit),
                (features & COOL, A.OccupiedCoolingSetpoint, A.MinCoolSetpointLimit, A.MaxCoolSetpointLimit)):
            if not on:
                continue
            lo, hi = dut.read(endpoint, low), dut.read(endpoint, high)
            for value in (lo, hi):
                dut.write(endpoint, setpoint, value)
                assert dut.read(endpoint, setpoint) == value
            for value in (lo - 1, hi + 1):
                with pytest.raises(DutStatusError) as error:
                    dut.write(endpoint, setpoint, value)
                assert error.value.status == Status.CONSTRAINT_ERROR, (setpoint.__name__, value)
            assert dut.read(endpoint, setpoint) == hi


@pytest.mark.parametrize("dut", DUTS, indirect=True)
def test_TC_TSTAT_4_1(dut):
    """SetpointRaiseLower moves the setpoints by amount/10 °C, within their limits."""
    for endpoint in endpoints_with(dut, TSTAT):
        _on(dut, endpoint)
        features = dut.read(endpoint, A.FeatureMap)
        if features & HEAT:
            # 20 °C, or the lowest a water heater's tank allows plus 1 °C
            base = max(2000, dut.read(endpoint, A.MinHeatSetpointLimit) + 100)
            dut.write(endpoint, A.OccupiedHeatingSetpoint, base)
            dut.invoke(endpoint, TSTAT.Commands.SetpointRaiseLower(mode=0, amount=10))   # heat +1 °C
            assert dut.read(endpoint, A.OccupiedHeatingSetpoint) == base + 100
            dut.invoke(endpoint, TSTAT.Commands.SetpointRaiseLower(mode=0, amount=-20))
            assert dut.read(endpoint, A.OccupiedHeatingSetpoint) == base - 100
        if features & COOL:
            dut.write(endpoint, A.OccupiedCoolingSetpoint, 2500)
            dut.invoke(endpoint, TSTAT.Commands.SetpointRaiseLower(mode=1, amount=-10))  # cool -1 °C
            assert dut.read(endpoint, A.OccupiedCoolingSetpoint) == 2400
            high = dut.read(endpoint, A.MaxCoolSetpointLimit)
            dut.invoke(endpoint, TSTAT.Commands.SetpointRaiseLower(mode=1, amount=127))
            assert dut.read(endpoint, A.OccupiedCoolingSetpoint) <= high


@pytest.mark.parametrize("dut", serving(TSTAT, feature=PRES, kinds=IN_PROCESS), indirect=True)
def test_TC_TSTAT_4_2(dut):
    """Presets: every preset's handle can be made active; an unknown handle is NOT_FOUND."""
    for endpoint in endpoints_with(dut, TSTAT):
        if not dut.read(endpoint, A.FeatureMap) & PRES:
            continue
        _on(dut, endpoint)
        presets = dut.read(endpoint, A.Presets)
        assert presets and len(presets) <= dut.read(endpoint, A.NumberOfPresets)
        types = {t.presetScenario for t in dut.read(endpoint, A.PresetTypes)}
        for preset in presets:
            assert preset.presetScenario in types and len(preset.presetHandle) <= 16
            dut.invoke(endpoint, TSTAT.Commands.SetActivePresetRequest(presetHandle=preset.presetHandle))
            assert dut.read(endpoint, A.ActivePresetHandle) == preset.presetHandle
        with pytest.raises(DutStatusError) as error:
            dut.invoke(endpoint, TSTAT.Commands.SetActivePresetRequest(presetHandle=b"\xfe" * 16))
        assert error.value.status == Status.NOT_FOUND


@pytest.mark.parametrize("dut", serving(TSUIC), indirect=True)
def test_TC_TSUIC_1_1(dut):
    check_global_attributes(dut, UI_SPEC)


@pytest.mark.parametrize("dut", serving(TSUIC), indirect=True)
def test_TC_TSUIC_2_1(dut):
    check_attributes(dut, UI_SPEC)


@pytest.mark.parametrize("dut", serving(TSUIC, kinds=IN_PROCESS), indirect=True)
def test_TC_TSUIC_2_2(dut):
    """The writable attributes keep every allowed value and refuse the next one."""
    for endpoint in endpoints_with(dut, TSUIC):
        served = dut.read(endpoint, TSUIC.Attributes.AttributeList)
        for attribute, top in ((TSUIC.Attributes.TemperatureDisplayMode, 1), (TSUIC.Attributes.KeypadLockout, 5),
                               (TSUIC.Attributes.ScheduleProgrammingVisibility, 1)):
            if attribute.attribute_id not in served:
                continue
            for value in range(top + 1):
                dut.write(endpoint, attribute, value)
                assert dut.read(endpoint, attribute) == value
            with pytest.raises(DutStatusError) as error:
                dut.write(endpoint, attribute, top + 1)
            assert error.value.status == Status.CONSTRAINT_ERROR


PRESETS = TSTAT.Attributes.Presets
ATOMIC = C.Globals.Enums.AtomicRequestTypeEnum


def _atomic(dut, endpoint, kind):
    return dut.invoke(endpoint, TSTAT.Commands.AtomicRequest(requestType=kind, attributeRequests=[
        PRESETS.attribute_id], timeout=3000 if kind == ATOMIC.kBeginWrite else None))


@pytest.mark.parametrize("dut", serving(TSTAT, feature=PRES, kinds=IN_PROCESS), indirect=True)
def test_TC_TSTAT_4_2_atomic_writes_of_presets(dut):
    """The plan's atomic-write steps: Presets refuse a write outside an atomic write; inside one,
    a new preset gets a handle at commit; a rollback or a timeout leaves Presets unchanged; removing
    a built-in preset fails the commit."""
    for endpoint in endpoints_with(dut, TSTAT):
        if not dut.read(endpoint, A.FeatureMap) & PRES:
            continue
        presets = dut.read(endpoint, PRESETS)
        with pytest.raises(DutStatusError) as error:
            dut.write(endpoint, PRESETS, presets)
        assert error.value.status == Status.INVALID_IN_STATE
        scenario = presets[0].presetScenario
        kinds = {t.presetScenario: t.numberOfPresets for t in dut.read(endpoint, A.PresetTypes)}
        spare = kinds[scenario] > sum(p.presetScenario == scenario for p in presets) \
            and dut.read(endpoint, A.NumberOfPresets) > len(presets)
        new = TSTAT.Structs.PresetStruct(presetHandle=NullValue, presetScenario=scenario, name="Extra",
                                         heatingSetpoint=presets[0].heatingSetpoint,
                                         coolingSetpoint=presets[0].coolingSetpoint, builtIn=False)
        begun = _atomic(dut, endpoint, ATOMIC.kBeginWrite)
        assert begun.statusCode == Status.SUCCESS and begun.attributeStatus[0].statusCode == Status.SUCCESS
        assert begun.timeout is not None and begun.timeout <= 3000
        dut.write(endpoint, PRESETS, [*presets, new])
        committed = _atomic(dut, endpoint, ATOMIC.kCommitWrite)
        after = dut.read(endpoint, PRESETS)
        if spare:
            assert committed.statusCode == Status.SUCCESS and len(after) == len(presets) + 1
            assert after[-1].presetHandle not in (NullValue, None) and not after[-1].builtIn
        else:   # no room for another preset of that scenario: the commit fails, nothing changes
            assert committed.statusCode == Status.FAILURE and after == presets
        # A changed setpoint of an existing preset is committed.
        features = dut.read(endpoint, A.FeatureMap)
        field = "heatingSetpoint" if features & HEAT else "coolingSetpoint"
        limit = A.MinHeatSetpointLimit if features & HEAT else A.MinCoolSetpointLimit
        changed = [p for p in after]
        changed[0] = type(after[0])(**{**vars(after[0]), field: dut.read(endpoint, limit)})
        _atomic(dut, endpoint, ATOMIC.kBeginWrite)
        dut.write(endpoint, PRESETS, changed)
        assert _atomic(dut, endpoint, ATOMIC.kCommitWrite).statusCode == Status.SUCCESS
        after = dut.read(endpoint, PRESETS)
        assert after == changed
        # Rolled back, or left to time out: unchanged.
        _atomic(dut, endpoint, ATOMIC.kBeginWrite)
        dut.write(endpoint, PRESETS, after[:1])
        assert _atomic(dut, endpoint, ATOMIC.kRollbackWrite).statusCode == Status.SUCCESS
        assert dut.read(endpoint, PRESETS) == after
        _atomic(dut, endpoint, ATOMIC.kBeginWrite)
        dut.write(endpoint, PRESETS, [p for p in after if not p.builtIn])
        failed = _atomic(dut, endpoint, ATOMIC.kCommitWrite)   # built-in presets removed
        assert failed.statusCode == Status.FAILURE and failed.attributeStatus[0].statusCode == Status.CONSTRAINT_ERROR
        assert dut.read(endpoint, PRESETS) == after
        _atomic(dut, endpoint, ATOMIC.kBeginWrite)
        dut.wait(5)
        with pytest.raises(DutStatusError) as error:
            _atomic(dut, endpoint, ATOMIC.kCommitWrite)
        assert error.value.status == Status.INVALID_IN_STATE
