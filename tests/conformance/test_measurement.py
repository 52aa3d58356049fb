"""Measurement clusters' test cases: Temperature (TC_TMP), Relative Humidity (TC_RH), Illuminance
(TC_ILL), PM10 Concentration (TC_PMKCONC), Air Quality (TC_AIRQUAL) and Temperature Control
(TC_TCTL), from their test plans."""
from __future__ import annotations

import pytest
from chip.clusters import Objects as C
from chip.clusters.Types import NullValue
from conftest import serving
from dut import DutStatusError
from steps import IN_PROCESS, ClusterSpec, at_most, between, check_attributes, check_global_attributes, endpoints_with

from clusters.status import Status


def _measured(low: int, high: int):
    """MeasuredValue within [Min, Max] (a null bound: the type's range)."""
    def check(value, values):
        if value == NullValue:
            return True
        lo = values["MinMeasuredValue"] if values["MinMeasuredValue"] != NullValue else low
        hi = values["MaxMeasuredValue"] if values["MaxMeasuredValue"] != NullValue else high
        return lo <= value <= hi
    return check


def _bounds(low: int, high: int):
    return {
        "MinMeasuredValue": lambda v, values: v == NullValue or (low <= v and (
            values["MaxMeasuredValue"] == NullValue or v < values["MaxMeasuredValue"])),
        "MaxMeasuredValue": lambda v, values: v == NullValue or v <= high,
    }


TMP, RH, ILL = C.TemperatureMeasurement, C.RelativeHumidityMeasurement, C.IlluminanceMeasurement
PMK, AIRQUAL, TCTL = C.Pm10ConcentrationMeasurement, C.AirQuality, C.TemperatureControl

MEASURED = {"MeasuredValue": "M", "MinMeasuredValue": "M", "MaxMeasuredValue": "M", "Tolerance": "O"}
SPECS = {
    TMP: ClusterSpec(TMP, revisions=range(1, 7), attributes=MEASURED,
                     constraints={"MeasuredValue": _measured(-27315, 32767), **_bounds(-27315, 32767),
                                  "Tolerance": at_most(2048)}),
    RH: ClusterSpec(RH, revisions=range(1, 6), attributes=MEASURED,
                    constraints={"MeasuredValue": _measured(0, 10000), **_bounds(0, 10000),
                                 "Tolerance": at_most(2048)}),
    ILL: ClusterSpec(ILL, revisions=range(1, 6), attributes={**MEASURED, "LightSensorType": "O"},
                     constraints={"MeasuredValue": lambda v, values: v in (0, NullValue)
                                  or _measured(1, 0xFFFE)(v, values), **_bounds(1, 0xFFFE),
                                  "Tolerance": at_most(2048), "LightSensorType": at_most(1, nullable=True)}),
    PMK: ClusterSpec(
        PMK, revisions=range(1, 6), features={"MEA": 0, "LEV": 1, "MED": 2, "CRI": 3, "PEA": 4, "AVG": 5},
        feature_rules={"MED": "[LEV]", "CRI": "[LEV]", "PEA": "[MEA]", "AVG": "[MEA]"},
        attributes={"MeasuredValue": "MEA", "MinMeasuredValue": "MEA", "MaxMeasuredValue": "MEA",
                    "PeakMeasuredValue": "PEA", "PeakMeasuredValueWindow": "PEA", "AverageMeasuredValue": "AVG",
                    "AverageMeasuredValueWindow": "AVG", "Uncertainty": "[MEA]", "MeasurementUnit": "MEA",
                    "MeasurementMedium": "M", "LevelValue": "LEV"},
        constraints={"MeasuredValue": lambda v, values: v == NullValue or (
            (values["MinMeasuredValue"] in (NullValue,) or values["MinMeasuredValue"] <= v)
            and (values["MaxMeasuredValue"] in (NullValue,) or v <= values["MaxMeasuredValue"])),
            "MeasurementUnit": at_most(7), "MeasurementMedium": at_most(2), "LevelValue": at_most(4)}),
    AIRQUAL: ClusterSpec(AIRQUAL, revisions=range(1, 2), features={"FAIR": 0, "MOD": 1, "VPOOR": 2, "XPOOR": 3},
                         attributes={"AirQuality": "M"}, constraints={"AirQuality": at_most(6)}),
    TCTL: ClusterSpec(
        TCTL, revisions=range(1, 2), features={"TN": 0, "TL": 1, "STEP": 2},
        feature_rules={"STEP": "[TN]"},
        attributes={"TemperatureSetpoint": "TN", "MinTemperature": "TN", "MaxTemperature": "TN", "Step": "STEP",
                    "SelectedTemperatureLevel": "TL", "SupportedTemperatureLevels": "TL"},
        accepted={"SetTemperature": "M"},
        constraints={"TemperatureSetpoint": between("MinTemperature", "MaxTemperature"),
                     "MinTemperature": lambda v, values: v < values["MaxTemperature"],
                     "Step": lambda v, values: 1 <= v <= values["MaxTemperature"] - values["MinTemperature"],
                     "SelectedTemperatureLevel": lambda v, values: v < len(values["SupportedTemperatureLevels"]),
                     "SupportedTemperatureLevels": lambda v, _: len(v) <= 32 and all(len(t) <= 16 for t in v)}),
}

NOT_APPLICABLE = {
    "TC_TMP_2_2": "manual: the plan changes the sensed temperature by hand and watches the value follow "
                  "(the twin's rooms move it: tests/twin/test_room_sensors.py)",
    "TC_RH_2_2": "manual: as TC_TMP_2_2 for humidity",
    "TC_ILL_2_2": "manual: as TC_TMP_2_2 for illuminance",
    "TC_AIRQUAL_2_2": "manual: the operator changes the air around the sensor and watches AirQuality follow",
}


def _duts(cluster):
    return serving(cluster, kinds=IN_PROCESS)


@pytest.mark.parametrize("dut", serving(TMP), indirect=True)
def test_TC_TMP_1_1(dut):
    check_global_attributes(dut, SPECS[TMP])


@pytest.mark.parametrize("dut", serving(TMP), indirect=True)
def test_TC_TMP_2_1(dut):
    assert check_attributes(dut, SPECS[TMP])


@pytest.mark.parametrize("dut", serving(RH), indirect=True)
def test_TC_RH_1_1(dut):
    check_global_attributes(dut, SPECS[RH])


@pytest.mark.parametrize("dut", serving(RH), indirect=True)
def test_TC_RH_2_1(dut):
    assert check_attributes(dut, SPECS[RH])


@pytest.mark.parametrize("dut", serving(ILL), indirect=True)
def test_TC_ILL_1_1(dut):
    check_global_attributes(dut, SPECS[ILL])


@pytest.mark.parametrize("dut", serving(ILL), indirect=True)
def test_TC_ILL_2_1(dut):
    assert check_attributes(dut, SPECS[ILL])


@pytest.mark.parametrize("dut", serving(PMK), indirect=True)
def test_TC_PMKCONC_1_1(dut):
    check_global_attributes(dut, SPECS[PMK])


@pytest.mark.parametrize("dut", serving(PMK), indirect=True)
def test_TC_PMKCONC_2_1(dut):
    for endpoint in check_attributes(dut, SPECS[PMK]):
        features = dut.read(endpoint, PMK.Attributes.FeatureMap)
        assert features & 0x3, "neither Numeric Measurement nor Level Indication"


@pytest.mark.parametrize("dut", serving(AIRQUAL), indirect=True)
def test_TC_AIRQUAL_1_1(dut):
    check_global_attributes(dut, SPECS[AIRQUAL])


@pytest.mark.parametrize("dut", serving(AIRQUAL), indirect=True)
def test_TC_AIRQUAL_2_1(dut):
    """AirQuality is one of the values the served features allow."""
    for endpoint, values in check_attributes(dut, SPECS[AIRQUAL]).items():
        features = dut.read(endpoint, AIRQUAL.Attributes.FeatureMap)
        allowed = {0, 1, 3, 5} | ({2} if features & 1 else set()) | ({4} if features & 2 else set()) \
            | ({5} if features & 4 else set()) | ({6} if features & 8 else set())
        assert values["AirQuality"] in allowed


@pytest.mark.parametrize("dut", serving(TCTL), indirect=True)
def test_TC_TCTL_1_1(dut):
    check_global_attributes(dut, SPECS[TCTL])


@pytest.mark.parametrize("dut", serving(TCTL), indirect=True)
def test_TC_TCTL_2_1(dut):
    assert check_attributes(dut, SPECS[TCTL])


@pytest.mark.parametrize("dut", _duts(TCTL), indirect=True)
def test_TC_TCTL_2_2(dut):
    """SetTemperature: a setpoint in range (on the step) is taken; outside the range CONSTRAINT_ERROR;
    with levels, every supported level is taken and one past them is CONSTRAINT_ERROR."""
    for endpoint in endpoints_with(dut, TCTL):
        features = dut.read(endpoint, TCTL.Attributes.FeatureMap)
        if features & 0x1:
            low = dut.read(endpoint, TCTL.Attributes.MinTemperature)
            high = dut.read(endpoint, TCTL.Attributes.MaxTemperature)
            for target in (low, high):
                dut.invoke(endpoint, TCTL.Commands.SetTemperature(targetTemperature=target))
                assert dut.read(endpoint, TCTL.Attributes.TemperatureSetpoint) == target
            for target in (low - 1, high + 1):
                with pytest.raises(DutStatusError) as error:
                    dut.invoke(endpoint, TCTL.Commands.SetTemperature(targetTemperature=target))
                assert error.value.status == Status.CONSTRAINT_ERROR
        if features & 0x2:
            levels = dut.read(endpoint, TCTL.Attributes.SupportedTemperatureLevels)
            for level in range(len(levels)):
                dut.invoke(endpoint, TCTL.Commands.SetTemperature(targetTemperatureLevel=level))
                assert dut.read(endpoint, TCTL.Attributes.SelectedTemperatureLevel) == level
            with pytest.raises(DutStatusError) as error:
                dut.invoke(endpoint, TCTL.Commands.SetTemperature(targetTemperatureLevel=len(levels)))
            assert error.value.status == Status.CONSTRAINT_ERROR


@pytest.mark.parametrize("dut", serving(TCTL, feature=0x2), indirect=True)
def test_TC_TCTL_2_3(dut):
    """Temperature Level feature: SelectedTemperatureLevel within 0..31, SupportedTemperatureLevels
    a list of at most 32 strings of at most 16 bytes each, and the selected level one of them."""
    for endpoint in endpoints_with(dut, TCTL):
        if not dut.read(endpoint, TCTL.Attributes.FeatureMap) & 0x2:
            continue
        selected = dut.read(endpoint, TCTL.Attributes.SelectedTemperatureLevel)
        levels = dut.read(endpoint, TCTL.Attributes.SupportedTemperatureLevels)
        assert 0 <= selected <= 31 and selected < len(levels)
        assert 0 < len(levels) <= 32
        assert all(isinstance(level, str) and len(level.encode("utf-8")) <= 16 for level in levels)
