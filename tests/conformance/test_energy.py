"""Energy clusters' test cases: Electrical Energy Measurement (TC_EEM), Electrical Power
Measurement (TC_EPM), Device Energy Management (TC_DEM), Power Source (TC_PS) and Power Topology
(TC_PWRTL), from their test plans."""
from __future__ import annotations

import pytest
from chip.clusters import Objects as C
from chip.clusters.Types import NullValue
from conftest import serving
from dut import DutStatusError
from steps import IN_PROCESS, ClusterSpec, at_most, between, check_attributes, check_global_attributes, endpoints_with

from clusters.status import Status

EEM, EPM, DEM = C.ElectricalEnergyMeasurement, C.ElectricalPowerMeasurement, C.DeviceEnergyManagement
PS, PWRTL = C.PowerSource, C.PowerTopology
BIG = 2**62


def _signed(value, _):
    return value == NullValue or -BIG <= value <= BIG


def _energy(value, _):
    return value == NullValue or (value.energy >= 0 and value.energy <= BIG)


SPECS = {
    EEM: ClusterSpec(
        EEM, revisions=range(1, 3), features={"IMPE": 0, "EXPE": 1, "CUME": 2, "PERE": 3},
        attributes={"Accuracy": "M", "CumulativeEnergyImported": "IMPE & CUME",
                    "CumulativeEnergyExported": "EXPE & CUME", "PeriodicEnergyImported": "IMPE & PERE",
                    "PeriodicEnergyExported": "EXPE & PERE", "CumulativeEnergyReset": "[CUME]"},
        constraints={"CumulativeEnergyImported": _energy, "CumulativeEnergyExported": _energy,
                     "PeriodicEnergyImported": _energy, "PeriodicEnergyExported": _energy,
                     "Accuracy": lambda v, _: v.measurementType == 14 and v.minMeasuredValue <= v.maxMeasuredValue
                     and v.accuracyRanges}),
    EPM: ClusterSpec(
        EPM, revisions=range(1, 4), features={"DIRC": 0, "ALTC": 1, "POLY": 2, "HARM": 3, "PWRQ": 4},
        feature_rules={"POLY": "[ALTC]", "HARM": "[ALTC]", "PWRQ": "[ALTC]"},
        attributes={"PowerMode": "M", "NumberOfMeasurementTypes": "M", "Accuracy": "M", "Ranges": "O",
                    "Voltage": "O", "ActiveCurrent": "O", "ReactiveCurrent": "[ALTC]", "ApparentCurrent": "[ALTC]",
                    "ActivePower": "M", "ReactivePower": "[ALTC]", "ApparentPower": "[ALTC]", "RMSVoltage": "[ALTC]",
                    "RMSCurrent": "[ALTC]", "RMSPower": "[ALTC]", "Frequency": "[ALTC]", "HarmonicCurrents": "HARM",
                    "HarmonicPhases": "PWRQ", "PowerFactor": "[ALTC]", "NeutralCurrent": "[POLY]"},
        constraints={"PowerMode": at_most(2), "NumberOfMeasurementTypes": between(1, 32),
                     "Accuracy": lambda v, values: 1 <= len(v) <= values["NumberOfMeasurementTypes"],
                     **{name: _signed for name in ("Voltage", "ActiveCurrent", "ReactiveCurrent", "ApparentCurrent",
                                                   "ActivePower", "ReactivePower", "ApparentPower", "RMSVoltage",
                                                   "RMSCurrent", "RMSPower", "NeutralCurrent")},
                     "Frequency": at_most(1_000_000, nullable=True),
                     "PowerFactor": lambda v, _: v == NullValue or -10000 <= v <= 10000}),
    DEM: ClusterSpec(
        DEM, revisions=range(3, 5),
        features={"PA": 0, "PFR": 1, "SFR": 2, "STA": 3, "PAU": 4, "FA": 5, "CON": 6},
        feature_rules={"PFR": "[!PA], O", "SFR": "O", "STA": "O"},
        attributes={"ESAType": "M", "ESACanGenerate": "M", "ESAState": "M", "AbsMinPower": "M", "AbsMaxPower": "M",
                    "PowerAdjustmentCapability": "PA", "Forecast": "PFR | SFR",
                    "OptOutState": "PA | STA | PAU | FA | CON"},
        accepted={"PowerAdjustRequest": "PA", "CancelPowerAdjustRequest": "PA", "StartTimeAdjustRequest": "STA",
                  "PauseRequest": "PAU", "ResumeRequest": "PAU", "ModifyForecastRequest": "FA",
                  "RequestConstraintBasedForecast": "CON", "CancelRequest": "STA | FA | CON"},
        constraints={"ESAType": lambda v, _: v <= 0x0D or v == 0xFF, "ESAState": at_most(4), "OptOutState": at_most(3),
                     "AbsMaxPower": lambda v, values: v >= values["AbsMinPower"]}),
    PS: ClusterSpec(
        PS, revisions=range(1, 4), features={"WIRED": 0, "BAT": 1, "RECHG": 2, "REPLC": 3},
        feature_rules={"WIRED": "O", "BAT": "!WIRED, O", "RECHG": "[BAT]", "REPLC": "[BAT]"},
        attributes={
            "Status": "M", "Order": "M", "Description": "M", "WiredAssessedInputVoltage": "[WIRED]",
            "WiredAssessedInputFrequency": "[WIRED]", "WiredCurrentType": "WIRED", "WiredAssessedCurrent": "[WIRED]",
            "WiredNominalVoltage": "[WIRED]", "WiredMaximumCurrent": "[WIRED]", "WiredPresent": "[WIRED]",
            "ActiveWiredFaults": "[WIRED]", "BatVoltage": "[BAT]", "BatPercentRemaining": "[BAT]",
            "BatTimeRemaining": "[BAT]", "BatChargeLevel": "BAT", "BatReplacementNeeded": "BAT",
            "BatReplaceability": "BAT", "BatPresent": "[BAT]", "ActiveBatFaults": "[BAT]",
            "BatReplacementDescription": "REPLC", "BatCommonDesignation": "[REPLC]", "BatANSIDesignation": "[REPLC]",
            "BatIECDesignation": "[REPLC]", "BatApprovedChemistry": "[REPLC]", "BatCapacity": "[REPLC | RECHG]",
            "BatQuantity": "REPLC", "BatChargeState": "RECHG", "BatTimeToFullCharge": "[RECHG]",
            "BatFunctionalWhileCharging": "RECHG", "BatChargingCurrent": "[RECHG]", "ActiveBatChargeFaults": "[RECHG]",
            "EndpointList": "M"},
        constraints={"Status": at_most(3), "Description": lambda v, _: len(v) <= 60,
                     "WiredCurrentType": at_most(1), "ActiveWiredFaults": lambda v, _: len(v) <= 8,
                     "BatPercentRemaining": at_most(200, nullable=True), "BatChargeLevel": at_most(2),
                     "BatReplaceability": at_most(3), "ActiveBatFaults": lambda v, _: len(v) <= 8,
                     "BatChargeState": at_most(3), "ActiveBatChargeFaults": lambda v, _: len(v) <= 16}),
    PWRTL: ClusterSpec(
        PWRTL, revisions=range(1, 2), features={"NODE": 0, "TREE": 1, "SET": 2, "DYPF": 3},
        feature_rules={"DYPF": "[SET]"},
        attributes={"AvailableEndpoints": "SET", "ActiveEndpoints": "DYPF"},
        constraints={"AvailableEndpoints": lambda v, _: len(v) <= 20, "ActiveEndpoints": lambda v, _: len(v) <= 20}),
}

NOT_APPLICABLE = {
    "TC_EPM_2_2": "needs the plan's test event triggers (a load applied to the meter) the twin does not serve",
    "TC_DEM_2_3": "Start Time Adjustment feature (STA) is not served",
    "TC_DEM_2_4": "Pausable feature (PAU) is not served",
    "TC_DEM_2_5": "Forecast Adjustment feature (FA) is not served",
    "TC_DEM_2_6": "Constraint-Based Adjustment feature (CON) is not served",
    "TC_DEM_2_7": "Start Time Adjustment and Forecast Adjustment features (STA, FA) are not served",
    "TC_DEM_2_8": "Constraint-Based and Start Time Adjustment features (CON, STA) are not served",
    "TC_DEM_2_9": "State Forecast Reporting (SFR) is not served",
    "TC_PS_2_2": "manual: the plan's steps change the physical power source",
}


def _duts(cluster, feature=0):
    return serving(cluster, feature=feature, kinds=IN_PROCESS)


@pytest.mark.parametrize("dut", serving(EEM), indirect=True)
def test_TC_EEM_1_1(dut):
    check_global_attributes(dut, SPECS[EEM])


@pytest.mark.parametrize("dut", serving(EEM), indirect=True)
def test_TC_EEM_2_1(dut):
    for endpoint, values in check_attributes(dut, SPECS[EEM]).items():
        features = dut.read(endpoint, EEM.Attributes.FeatureMap)
        assert features & 0x3 and features & 0xC, "needs Imported or Exported, and Cumulative or Periodic"
        imported = values.get("CumulativeEnergyImported", NullValue)
        if imported != NullValue:
            dut.wait(2)
            later = dut.read(endpoint, EEM.Attributes.CumulativeEnergyImported)
            assert later.energy >= imported.energy   # cumulative energy never decreases


@pytest.mark.parametrize("dut", serving(EPM), indirect=True)
def test_TC_EPM_1_1(dut):
    check_global_attributes(dut, SPECS[EPM])


@pytest.mark.parametrize("dut", serving(EPM), indirect=True)
def test_TC_EPM_2_1(dut):
    for endpoint, values in check_attributes(dut, SPECS[EPM]).items():
        assert dut.read(endpoint, EPM.Attributes.FeatureMap) & 0x3, "neither DIRC nor ALTC"
        kinds = [a.measurementType for a in values["Accuracy"]]
        assert len(set(kinds)) == len(kinds) and all(0 <= k <= 14 for k in kinds)


@pytest.mark.parametrize("dut", serving(DEM), indirect=True)
def test_TC_DEM_1_1(dut):
    check_global_attributes(dut, SPECS[DEM])


@pytest.mark.parametrize("dut", serving(DEM), indirect=True)
def test_TC_DEM_2_1(dut):
    assert check_attributes(dut, SPECS[DEM])


@pytest.mark.parametrize("dut", _duts(DEM, feature=0x1), indirect=True)
def test_TC_DEM_2_2(dut):
    """Power adjustment: a request within an offer starts it (ESAState PowerAdjustActive, cause
    LocalOptimizationAdjustment); Cancel ends it; Cancel again is INVALID_IN_STATE; requests
    outside every offer are CONSTRAINT_ERROR; an adjustment ends by itself after its duration."""
    A, E = DEM.Attributes, DEM.Enums
    for endpoint in endpoints_with(dut, DEM):
        assert dut.read(endpoint, A.ESAState) == E.ESAStateEnum.kOnline
        capability = dut.read(endpoint, A.PowerAdjustmentCapability)
        assert capability.cause == E.PowerAdjustReasonEnum.kNoAdjustment
        offers = capability.powerAdjustCapability
        first = offers[0]
        low_power, high_power = min(o.minPower for o in offers), max(o.maxPower for o in offers)
        short, long = min(o.minDuration for o in offers), max(o.maxDuration for o in offers)
        assert dut.read(endpoint, A.OptOutState) == E.OptOutStateEnum.kNoOptOut

        def request(power, duration, cause=E.AdjustmentCauseEnum.kLocalOptimization):
            return DEM.Commands.PowerAdjustRequest(power=power, duration=duration, cause=cause)

        dut.invoke(endpoint, request(first.maxPower, first.minDuration))
        assert dut.read(endpoint, A.ESAState) == E.ESAStateEnum.kPowerAdjustActive
        assert dut.read(endpoint, A.PowerAdjustmentCapability).cause \
            == E.PowerAdjustReasonEnum.kLocalOptimizationAdjustment
        dut.invoke(endpoint, DEM.Commands.CancelPowerAdjustRequest())
        assert dut.read(endpoint, A.ESAState) == E.ESAStateEnum.kOnline
        assert dut.read(endpoint, A.PowerAdjustmentCapability).cause == E.PowerAdjustReasonEnum.kNoAdjustment
        with pytest.raises(DutStatusError) as error:
            dut.invoke(endpoint, DEM.Commands.CancelPowerAdjustRequest())
        assert error.value.status == Status.INVALID_IN_STATE
        for power, duration in ((high_power + 1, short), (low_power, long + 1), (high_power, short - 1)) + \
                (((low_power - 1, long),) if low_power > 0 else ()):
            with pytest.raises(DutStatusError) as error:
                dut.invoke(endpoint, request(power, duration))
            assert error.value.status == Status.CONSTRAINT_ERROR, (power, duration)
        dut.invoke(endpoint, request(first.maxPower, first.minDuration))
        dut.invoke(endpoint, request(first.maxPower, first.minDuration, E.AdjustmentCauseEnum.kGridOptimization))
        assert dut.read(endpoint, A.PowerAdjustmentCapability).cause \
            == E.PowerAdjustReasonEnum.kGridOptimizationAdjustment
        dut.wait(first.minDuration + 1)
        assert dut.read(endpoint, A.ESAState) == E.ESAStateEnum.kOnline


@pytest.mark.parametrize("dut", serving(PS), indirect=True)
def test_TC_PS_1_1(dut):
    check_global_attributes(dut, SPECS[PS])


@pytest.mark.parametrize("dut", serving(PS), indirect=True)
def test_TC_PS_2_1(dut):
    """Attributes in range; EndpointList names endpoints of the node."""
    endpoints = set(dut.endpoints())
    for endpoint, values in check_attributes(dut, SPECS[PS]).items():
        features = dut.read(endpoint, PS.Attributes.FeatureMap)
        assert bool(features & 0x1) != bool(features & 0x2), "exactly one of Wired and Battery"
        assert set(values["EndpointList"]) <= endpoints


@pytest.mark.parametrize("dut", serving(PWRTL), indirect=True)
def test_TC_PWRTL_1_1(dut):
    for endpoint in endpoints_with(dut, PWRTL):
        features = dut.read(endpoint, PWRTL.Attributes.FeatureMap)
        assert bin(features & 0x7).count("1") == 1, "exactly one of Node, Tree and Set topology"
    check_global_attributes(dut, SPECS[PWRTL])


@pytest.mark.parametrize("dut", serving(PWRTL), indirect=True)
def test_TC_PWRTL_2_1(dut):
    endpoints = set(dut.endpoints())
    for values in check_attributes(dut, SPECS[PWRTL]).values():
        assert set(values.get("AvailableEndpoints", [])) <= endpoints
        assert set(values.get("ActiveEndpoints", [])) <= set(values.get("AvailableEndpoints", []))


def _events(subscription, event, wait):
    return [r for r in subscription.poll(wait) if getattr(r, "event", None) is event]


#: The longest energy measurement period the test cases wait through (the twin's is 15 minutes).
PERIOD_WAIT_S = 16 * 60


def _measured_events(dut, event, attribute):
    """TC_EEM_3_x: over a subscription to `event`, two successive measurements arrive; each
    equals the matching attribute read right after it; the second ends later than the first."""
    for endpoint in endpoints_with(dut, EEM):
        subscription = dut.subscribe([(endpoint, event)], 0, 60)
        subscription.poll(0)   # the priming report
        measured = []
        for _ in range(2):
            (record,) = _events(subscription, event, PERIOD_WAIT_S)
            assert record.priority == 1   # INFO
            measured.append(record.data.energyImported)
            assert dut.read(endpoint, attribute) == record.data.energyImported
        first, second = measured
        assert second.endSystime > first.endSystime and second.energy >= 0
        if event is EEM.Events.CumulativeEnergyMeasured:
            assert second.energy >= first.energy       # cumulative energy never decreases
        else:
            assert second.startSystime == first.endSystime   # periods follow one another
        subscription.close()


@pytest.mark.parametrize("dut", _duts(EEM, feature=0x1 | 0x4), indirect=True)
def test_TC_EEM_3_1(dut):
    """CumulativeEnergyMeasured over a subscription: two successive events, each equal to
    CumulativeEnergyImported read after it, never decreasing."""
    _measured_events(dut, EEM.Events.CumulativeEnergyMeasured, EEM.Attributes.CumulativeEnergyImported)


@pytest.mark.parametrize("dut", _duts(EEM, feature=0x1 | 0x8), indirect=True)
def test_TC_EEM_3_2(dut):
    """PeriodicEnergyMeasured over a subscription: two successive events, each equal to
    PeriodicEnergyImported read after it, the second period starting where the first ended."""
    _measured_events(dut, EEM.Events.PeriodicEnergyMeasured, EEM.Attributes.PeriodicEnergyImported)


@pytest.mark.parametrize("dut", _duts(DEM, feature=0x1), indirect=True)
def test_TC_DEM_2_10(dut):
    """DEM events over a subscription: PowerAdjustRequest gives PowerAdjustStart; Cancel gives
    PowerAdjustEnd(Cancelled); an adjustment left to its end gives PowerAdjustEnd(NormalCompletion)
    with its duration and the energy used meanwhile."""
    E = DEM.Enums
    for endpoint in endpoints_with(dut, DEM):
        subscription = dut.subscribe([(endpoint, DEM.Events.PowerAdjustStart),
                                      (endpoint, DEM.Events.PowerAdjustEnd)], 0, 60)
        subscription.poll(0)
        offer = dut.read(endpoint, DEM.Attributes.PowerAdjustmentCapability).powerAdjustCapability[0]
        request = DEM.Commands.PowerAdjustRequest(power=offer.maxPower, duration=offer.minDuration,
                                                  cause=E.AdjustmentCauseEnum.kLocalOptimization)
        dut.invoke(endpoint, request)
        (started,) = subscription.poll(5)
        assert started.event is DEM.Events.PowerAdjustStart and started.priority == 1
        dut.wait(2)
        dut.invoke(endpoint, DEM.Commands.CancelPowerAdjustRequest())
        (ended,) = subscription.poll(5)
        assert ended.event is DEM.Events.PowerAdjustEnd and ended.number > started.number
        assert ended.data.cause == E.CauseEnum.kCancelled and 2 <= ended.data.duration <= 3
        assert ended.data.energyUse >= 0

        dut.invoke(endpoint, request)
        assert [r.event for r in subscription.poll(5)] == [DEM.Events.PowerAdjustStart]
        (ended,) = _events(subscription, DEM.Events.PowerAdjustEnd, offer.minDuration + 5)
        assert ended.data.cause == E.CauseEnum.kNormalCompletion
        assert abs(ended.data.duration - offer.minDuration) <= 1 and ended.data.energyUse >= 0
        assert dut.read(endpoint, DEM.Attributes.ESAState) == E.ESAStateEnum.kOnline
        subscription.close()
