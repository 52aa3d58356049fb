"""Appliance clusters' test cases: HEPA and Activated Carbon Filter Monitoring (TC_HEPAFREMON,
TC_ACFREMON), Dishwasher and Refrigerator Alarm (TC_DISHALM, TC_REFALM), Laundry Washer and
Dryer Controls (TC_WASHERCTRL, TC_DRYERCTRL), Service Area (TC_SEAR) and Bridged Device Basic
Information (TC_BRBINFO), from their test plans."""
from __future__ import annotations

import pytest
from chip.clusters import Objects as C
from chip.clusters.Types import NullValue
from conftest import DEVICE_IDS, serving
from dut import DutStatusError
from steps import IN_PROCESS, ClusterSpec, at_most, check_attributes, check_global_attributes, endpoints_with

from clusters.status import Status
from twin.faults import parse_fault

HEPA, ACF = C.HepaFilterMonitoring, C.ActivatedCarbonFilterMonitoring
DISHALM, REFALM = C.DishwasherAlarm, C.RefrigeratorAlarm
WASHER, DRYER = C.LaundryWasherControls, C.LaundryDryerControls
SEAR, BRBINFO = C.ServiceArea, C.BridgedDeviceBasicInformation


def _filter_spec(cluster):
    return ClusterSpec(
        cluster, revisions=range(1, 2), features={"CON": 0, "WRN": 1, "REP": 2},
        attributes={"Condition": "CON", "DegradationDirection": "CON", "ChangeIndication": "M",
                    "InPlaceIndicator": "O", "LastChangedTime": "O", "ReplacementProductList": "REP"},
        accepted={"ResetCondition": "O"},
        constraints={"Condition": at_most(100), "DegradationDirection": at_most(1),
                     "ChangeIndication": at_most(2), "ReplacementProductList": lambda v, _: len(v) <= 5})


def _subset(of: str):
    return lambda value, values: value & ~values[of] == 0


def _alarm_spec(cluster, bits, reset):
    latch = {"Latch": "RESET"} if reset else {}   # Refrigerator Alarm has no Reset feature (X), nor Latch
    return ClusterSpec(
        cluster, revisions=range(1, 2), features={"RESET": 0},
        feature_rules={"RESET": "O" if reset else "X"},
        attributes={"Mask": "M", **latch, "State": "M", "Supported": "M"},
        accepted={"Reset": "RESET", "ModifyEnabledAlarms": "O"} if reset else {},
        constraints={"Supported": at_most(bits), "Mask": _subset("Supported"), "State": _subset("Supported"),
                     "Latch": _subset("Supported")})


def _shorter_than(limit: int):
    return lambda value, values: len(value) <= limit


def _one_of_list(attribute: str):
    return lambda value, values: value == NullValue or value < len(values[attribute])


SPECS = {
    HEPA: _filter_spec(HEPA), ACF: _filter_spec(ACF),
    DISHALM: _alarm_spec(DISHALM, 0x3F, reset=True),
    REFALM: _alarm_spec(REFALM, 0x1, reset=False),
    WASHER: ClusterSpec(
        WASHER, revisions=range(1, 3), features={"SPIN": 0, "RINSE": 1},
        attributes={"SpinSpeeds": "SPIN", "SpinSpeedCurrent": "SPIN", "NumberOfRinses": "RINSE",
                    "SupportedRinses": "RINSE"},
        constraints={"SpinSpeeds": lambda v, _: len(v) <= 16 and all(len(s) <= 64 for s in v),
                     "SpinSpeedCurrent": _one_of_list("SpinSpeeds"),
                     "SupportedRinses": lambda v, _: len(v) <= 4,
                     "NumberOfRinses": lambda v, values: v in values["SupportedRinses"]}),
    DRYER: ClusterSpec(
        DRYER, revisions=range(1, 2),
        attributes={"SupportedDrynessLevels": "M", "SelectedDrynessLevel": "M"},
        constraints={"SupportedDrynessLevels": lambda v, _: 1 <= len(v) <= 4 and all(0 <= x <= 3 for x in v),
                     "SelectedDrynessLevel": lambda v, values: v == NullValue
                     or v in values["SupportedDrynessLevels"]}),
    SEAR: ClusterSpec(
        SEAR, revisions=range(1, 3), features={"SELRUN": 0, "PROG": 1, "MAPS": 2},
        attributes={"SupportedAreas": "M", "SupportedMaps": "MAPS", "SelectedAreas": "M", "CurrentArea": "O",
                    "EstimatedEndTime": "[CurrentArea]", "Progress": "PROG"},
        accepted={"SelectAreas": "M", "SkipArea": "O"},
        generated={"SelectAreasResponse": "M", "SkipAreaResponse": "SkipArea"},
        constraints={
            "SupportedAreas": lambda v, _: len(v) <= 255 and len({a.areaID for a in v}) == len(v),
            "SelectedAreas": lambda v, values: set(v) <= {a.areaID for a in values["SupportedAreas"]},
            "CurrentArea": lambda v, values: v == NullValue or v in {a.areaID for a in values["SupportedAreas"]},
            "Progress": lambda v, values: len(v) <= 255
            and {p.areaID for p in v} <= {a.areaID for a in values["SupportedAreas"]}}),
    BRBINFO: ClusterSpec(
        BRBINFO, revisions=range(1, 7), features={"BIS": 0},
        attributes={name: "O" for name in (
            "VendorName", "VendorID", "ProductName", "ProductID", "NodeLabel", "HardwareVersion",
            "HardwareVersionString", "SoftwareVersion", "SoftwareVersionString", "ManufacturingDate", "PartNumber",
            "ProductURL", "ProductLabel", "SerialNumber", "UniqueID", "ProductAppearance")} | {"Reachable": "M"},
        accepted={"KeepActive": "BIS"},
        constraints={
            **{name: _shorter_than(limit) for name, limit in (
                ("VendorName", 32), ("ProductName", 32), ("NodeLabel", 32), ("HardwareVersionString", 64),
                ("SoftwareVersionString", 64), ("PartNumber", 32), ("ProductURL", 256), ("ProductLabel", 64),
                ("SerialNumber", 32), ("UniqueID", 32))},
            "Reachable": lambda v, _: v in (True, False)}),
}

NOT_APPLICABLE = {
    "TC_DISHALM_3_1": "alarms raised by the plan's manufacturer test event triggers, which the twin does not serve",
    "TC_DISHALM_3_2": "as TC_DISHALM_3_1",
    "TC_DISHALM_3_3": "as TC_DISHALM_3_1",
    "TC_DISHALM_3_4": "as TC_DISHALM_3_1",
    "TC_DISHALM_3_5": "as TC_DISHALM_3_1",
    "TC_DISHALM_3_6": "as TC_DISHALM_3_1",
    "TC_REFALM_2_2": "manual: the operator opens the refrigerator door",
    "TC_REFALM_2_3": "manual: the operator opens the door and leaves it open",
    "TC_SEAR_1_4": "Maps feature (MAPS) is not served",
    "TC_BRBINFO_2_3": "manual: the operator changes the bridged device's software version",
    "TC_BRBINFO_3_1": "Bridged ICD Support feature (BIS) is not served",
}


def _duts(cluster, feature=0):
    return serving(cluster, feature=feature, kinds=IN_PROCESS)


# ---- filters --------------------------------------------------------------------------------
@pytest.mark.parametrize("dut", serving(HEPA), indirect=True)
def test_TC_HEPAFREMON_1_1(dut):
    check_global_attributes(dut, SPECS[HEPA])


@pytest.mark.parametrize("dut", serving(HEPA), indirect=True)
def test_TC_HEPAFREMON_2_1(dut):
    assert check_attributes(dut, SPECS[HEPA])


def _reset_filter(dut, cluster):
    """ResetCondition: Condition back to 100 % and ChangeIndication OK; LastChangedTime moves on."""
    A = cluster.Attributes
    for endpoint in endpoints_with(dut, cluster):
        before = dut.read(endpoint, A.LastChangedTime) if A.LastChangedTime.attribute_id in \
            dut.read(endpoint, A.AttributeList) else None
        dut.wait(60)
        dut.invoke(endpoint, cluster.Commands.ResetCondition())
        assert dut.read(endpoint, A.ChangeIndication) == 0
        if dut.read(endpoint, A.FeatureMap) & 0x1:
            assert dut.read(endpoint, A.Condition) == 100
        if before is not None:
            after = dut.read(endpoint, A.LastChangedTime)
            assert after != NullValue and (before == NullValue or after > before)


@pytest.mark.parametrize("dut", _duts(HEPA), indirect=True)
def test_TC_HEPAFREMON_3_1(dut):
    _reset_filter(dut, HEPA)


@pytest.mark.parametrize("dut", serving(ACF), indirect=True)
def test_TC_ACFREMON_1_1(dut):
    check_global_attributes(dut, SPECS[ACF])


@pytest.mark.parametrize("dut", serving(ACF), indirect=True)
def test_TC_ACFREMON_2_1(dut):
    assert check_attributes(dut, SPECS[ACF])


@pytest.mark.parametrize("dut", _duts(ACF), indirect=True)
def test_TC_ACFREMON_3_1(dut):
    _reset_filter(dut, ACF)


# ---- alarms ---------------------------------------------------------------------------------
@pytest.mark.parametrize("dut", serving(DISHALM), indirect=True)
def test_TC_DISHALM_1_1(dut):
    check_global_attributes(dut, SPECS[DISHALM])


@pytest.mark.parametrize("dut", serving(DISHALM), indirect=True)
def test_TC_DISHALM_2_1(dut):
    """Attributes in range; ModifyEnabledAlarms takes a supported mask and refuses others."""
    for endpoint, values in check_attributes(dut, SPECS[DISHALM]).items():
        supported = values["Supported"]
        accepted = dut.read(endpoint, DISHALM.Attributes.AcceptedCommandList)
        if DISHALM.Commands.ModifyEnabledAlarms.command_id in accepted:
            dut.invoke(endpoint, DISHALM.Commands.ModifyEnabledAlarms(mask=supported))
            assert dut.read(endpoint, DISHALM.Attributes.Mask) == supported
            unsupported = ~supported & 0x3F
            if unsupported:
                with pytest.raises(DutStatusError) as error:
                    dut.invoke(endpoint, DISHALM.Commands.ModifyEnabledAlarms(mask=unsupported))
                assert error.value.status == Status.INVALID_COMMAND


@pytest.mark.parametrize("dut", serving(REFALM), indirect=True)
def test_TC_REFALM_1_1(dut):
    check_global_attributes(dut, SPECS[REFALM])


@pytest.mark.parametrize("dut", serving(REFALM), indirect=True)
def test_TC_REFALM_2_1(dut):
    assert check_attributes(dut, SPECS[REFALM])


# ---- laundry controls -----------------------------------------------------------------------
@pytest.mark.parametrize("dut", serving(WASHER), indirect=True)
def test_TC_WASHERCTRL_1_1(dut):
    check_global_attributes(dut, SPECS[WASHER])


@pytest.mark.parametrize("dut", serving(WASHER), indirect=True)
def test_TC_WASHERCTRL_2_1(dut):
    assert check_attributes(dut, SPECS[WASHER])


@pytest.mark.parametrize("dut", _duts(WASHER, feature=0x1), indirect=True)
def test_TC_WASHERCTRL_2_2(dut):
    """SpinSpeedCurrent takes every index into SpinSpeeds (and null); one past is CONSTRAINT_ERROR."""
    for endpoint in endpoints_with(dut, WASHER):
        speeds = dut.read(endpoint, WASHER.Attributes.SpinSpeeds)
        for value in [*range(len(speeds)), NullValue]:
            dut.write(endpoint, WASHER.Attributes.SpinSpeedCurrent, value)
            assert dut.read(endpoint, WASHER.Attributes.SpinSpeedCurrent) == value
        with pytest.raises(DutStatusError) as error:
            dut.write(endpoint, WASHER.Attributes.SpinSpeedCurrent, len(speeds))
        assert error.value.status == Status.CONSTRAINT_ERROR


@pytest.mark.parametrize("dut", _duts(WASHER, feature=0x2), indirect=True)
def test_TC_WASHERCTRL_2_3(dut):
    """NumberOfRinses takes every SupportedRinses value; an unsupported one is CONSTRAINT_ERROR."""
    for endpoint in endpoints_with(dut, WASHER):
        supported = dut.read(endpoint, WASHER.Attributes.SupportedRinses)
        for value in supported:
            dut.write(endpoint, WASHER.Attributes.NumberOfRinses, value)
            assert dut.read(endpoint, WASHER.Attributes.NumberOfRinses) == value
        missing = [v for v in range(4) if v not in supported]
        for value in missing[:1]:
            with pytest.raises(DutStatusError) as error:
                dut.write(endpoint, WASHER.Attributes.NumberOfRinses, value)
            assert error.value.status == Status.CONSTRAINT_ERROR
        with pytest.raises(DutStatusError) as error:
            dut.write(endpoint, WASHER.Attributes.NumberOfRinses, 4)   # not a NumberOfRinsesEnum value
        assert error.value.status == Status.CONSTRAINT_ERROR


@pytest.mark.parametrize("dut", serving(DRYER), indirect=True)
def test_TC_DRYERCTRL_1_1(dut):
    check_global_attributes(dut, SPECS[DRYER])


@pytest.mark.parametrize("dut", serving(DRYER), indirect=True)
def test_TC_DRYERCTRL_2_1(dut):
    assert check_attributes(dut, SPECS[DRYER])


@pytest.mark.parametrize("dut", _duts(DRYER), indirect=True)
def test_TC_DRYERCTRL_2_2(dut):
    """SelectedDrynessLevel takes every supported level and null; an unsupported one is CONSTRAINT_ERROR."""
    for endpoint in endpoints_with(dut, DRYER):
        supported = dut.read(endpoint, DRYER.Attributes.SupportedDrynessLevels)
        for value in [*supported, NullValue]:
            dut.write(endpoint, DRYER.Attributes.SelectedDrynessLevel, value)
            assert dut.read(endpoint, DRYER.Attributes.SelectedDrynessLevel) == value
        for value in [v for v in range(4) if v not in supported][:1] + [4]:
            with pytest.raises(DutStatusError) as error:
                dut.write(endpoint, DRYER.Attributes.SelectedDrynessLevel, value)
            assert error.value.status == Status.CONSTRAINT_ERROR


# ---- service area ---------------------------------------------------------------------------
@pytest.mark.parametrize("dut", serving(SEAR), indirect=True)
def test_TC_SEAR_1_1(dut):
    check_global_attributes(dut, SPECS[SEAR])


@pytest.mark.parametrize("dut", serving(SEAR), indirect=True)
def test_TC_SEAR_1_2(dut):
    for values in check_attributes(dut, SPECS[SEAR]).values():
        for area in values["SupportedAreas"]:
            info = area.areaInfo
            assert info.locationInfo != NullValue or info.landmarkInfo != NullValue
            if info.locationInfo != NullValue:
                assert 0 < len(info.locationInfo.locationName) <= 128


def start_cleaning(dut, endpoint):
    """RVC Run Mode to its cleaning mode (the one tagged Cleaning, 0x4001): a run over SelectedAreas."""
    modes = dut.read(endpoint, C.RvcRunMode.Attributes.SupportedModes)
    cleaning = next(m.mode for m in modes if any(t.value == 0x4001 for t in m.modeTags))
    assert dut.invoke(endpoint, C.RvcRunMode.Commands.ChangeToMode(newMode=cleaning)).status == 0


@pytest.mark.parametrize("dut", _duts(SEAR), indirect=True)
def test_TC_SEAR_1_3(dut):
    """SelectAreas: supported areas (and none) answer Success and become SelectedAreas; an
    unknown area answers UnsupportedArea and leaves them."""
    for endpoint in endpoints_with(dut, SEAR):
        ids = [a.areaID for a in dut.read(endpoint, SEAR.Attributes.SupportedAreas)]
        for chosen in (ids[:1], ids[-2:], []):
            response = dut.invoke(endpoint, SEAR.Commands.SelectAreas(newAreas=chosen))
            assert isinstance(response, SEAR.Commands.SelectAreasResponse) and response.status == 0
            assert dut.read(endpoint, SEAR.Attributes.SelectedAreas) == chosen
        response = dut.invoke(endpoint, SEAR.Commands.SelectAreas(newAreas=[max(ids) + 1]))
        assert response.status == SEAR.Enums.SelectAreasStatus.kUnsupportedArea
        assert dut.read(endpoint, SEAR.Attributes.SelectedAreas) == []


@pytest.mark.parametrize("dut", _duts(SEAR), indirect=True)
def test_TC_SEAR_1_5(dut):
    """SkipArea: InvalidAreaList with nothing selected, InvalidSkippedArea for an unknown area,
    InvalidInMode with no run; during a run, skipping the current area moves on to the next."""
    skip = SEAR.Enums.SkipAreaStatus
    for endpoint in endpoints_with(dut, SEAR):
        ids = [a.areaID for a in dut.read(endpoint, SEAR.Attributes.SupportedAreas)]
        assert dut.invoke(endpoint, SEAR.Commands.SelectAreas(newAreas=[])).status == 0
        assert dut.invoke(endpoint, SEAR.Commands.SkipArea(skippedArea=ids[0])).status == skip.kInvalidAreaList
        assert dut.invoke(endpoint, SEAR.Commands.SelectAreas(newAreas=ids[:2])).status == 0
        unknown = dut.invoke(endpoint, SEAR.Commands.SkipArea(skippedArea=max(ids) + 1))
        assert unknown.status == skip.kInvalidSkippedArea
        assert dut.invoke(endpoint, SEAR.Commands.SkipArea(skippedArea=ids[0])).status == skip.kInvalidInMode
        start_cleaning(dut, endpoint)
        current = dut.read(endpoint, SEAR.Attributes.CurrentArea)
        assert dut.invoke(endpoint, SEAR.Commands.SkipArea(skippedArea=current)).status == skip.kSuccess
        assert dut.read(endpoint, SEAR.Attributes.CurrentArea) not in (current, NullValue)


@pytest.mark.parametrize("dut", _duts(SEAR, feature=0x2), indirect=True)
def test_TC_SEAR_1_6(dut):
    """Progress: a cleaning run over the selected areas lists each of them, Pending or Operating."""
    for endpoint in endpoints_with(dut, SEAR):
        ids = [a.areaID for a in dut.read(endpoint, SEAR.Attributes.SupportedAreas)]
        assert dut.invoke(endpoint, SEAR.Commands.SelectAreas(newAreas=ids[:2])).status == 0
        start_cleaning(dut, endpoint)
        progress = dut.read(endpoint, SEAR.Attributes.Progress)
        assert [p.areaID for p in progress] == ids[:2]
        assert {p.status for p in progress} <= {0, 1} and any(p.status == 1 for p in progress)   # Pending/Operating
        assert dut.read(endpoint, SEAR.Attributes.CurrentArea) in ids[:2]


# ---- bridged device basic information -------------------------------------------------------
@pytest.mark.parametrize("dut", serving(BRBINFO), indirect=True)
def test_TC_BRBINFO_1_1(dut):
    check_global_attributes(dut, SPECS[BRBINFO])


@pytest.mark.parametrize("dut", serving(BRBINFO), indirect=True)
def test_TC_BRBINFO_2_1(dut):
    """Every bridged endpoint's attributes are in range; the bridged devices are reachable and
    their UniqueIDs differ; NodeLabel is writable."""
    unique = []
    for endpoint, values in check_attributes(dut, SPECS[BRBINFO]).items():
        assert values["Reachable"] is True
        if "UniqueID" in values:
            unique.append(values["UniqueID"])
        dut.write(endpoint, BRBINFO.Attributes.NodeLabel, "conformance")
        assert dut.read(endpoint, BRBINFO.Attributes.NodeLabel) == "conformance"
        with pytest.raises(DutStatusError) as error:
            dut.write(endpoint, BRBINFO.Attributes.NodeLabel, "x" * 33)
        assert error.value.status == Status.CONSTRAINT_ERROR
    assert len(set(unique)) == len(unique)


def _offline(dut, device_id, at, duration):
    """An offline fault on a home device: through the in-process dut's home, or POST /faults to
    the network dut's twin process."""
    spec = {"device": device_id, "kind": "offline", "at": at, "duration": duration}
    if hasattr(dut, "twin_post"):
        answer = dut.twin_post("/faults", spec)
        assert answer["ok"], answer
    else:
        dut.home.faults.add(parse_fault(spec))


def _unique_id(dut, device_id):
    """A home device's own BasicInformation UniqueID (through the twin's get_attribute tool over
    the network)."""
    if not hasattr(dut, "twin_post"):
        return dut.home.devices[device_id].read("BasicInformation", "UniqueID")
    answer = dut.twin_post("/tools/get_attribute", {"device.id": device_id, "endpoint.id": 0,
                                                    "cluster.id": "BasicInformation", "attribute.id": "UniqueID"})
    assert answer["ok"], answer
    return answer["value"]


@pytest.mark.parametrize("dut", serving(BRBINFO), indirect=True)
def test_TC_BRBINFO_2_2(dut):
    """Over a subscription to ReachableChanged and Reachable: a bridged device going offline (the
    twin's offline fault) gives ReachableChanged(false) and a Reachable report of false; coming
    back gives ReachableChanged(true) and Reachable true. (StartUp, ShutDown and Leave on a bridged
    endpoint are optional events the twin does not serve.)"""
    reachable, changed = BRBINFO.Attributes.Reachable, BRBINFO.Events.ReachableChanged
    device_id = DEVICE_IDS["on_off_light"]
    unique = _unique_id(dut, device_id)
    (endpoint,) = [e for e in endpoints_with(dut, BRBINFO) if dut.read(e, BRBINFO.Attributes.UniqueID) == unique]
    subscription = dut.subscribe([(endpoint, changed), (endpoint, reachable)], 0, 60)
    try:
        primed = subscription.poll(0)
        assert [(r.attribute, r.value) for r in primed if hasattr(r, "attribute")] == [(reachable, True)]
        _offline(dut, device_id, 1, 6)
        for expected in (False, True):
            got = subscription.poll(15)
            got += subscription.poll(1)   # the attribute report may come in the next report
            events = [r for r in got if hasattr(r, "event")]
            assert [(r.event, r.priority, r.data.reachableNewValue) for r in events] == [(changed, 1, expected)]
            assert [(r.attribute, r.value) for r in got if hasattr(r, "attribute")] == [(reachable, expected)]
            assert dut.read(endpoint, reachable) is expected
    finally:
        subscription.close()
