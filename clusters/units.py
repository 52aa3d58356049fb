"""The units of attribute values, as the Matter spec defines them, for views that show numbers to
people (the live page, MQTT payloads). Attributes not listed are unitless (booleans, enums,
modes, counts, structs without a single unit)."""
from __future__ import annotations

_CENTI_C = "0.01 °C"

#: (cluster, attribute) spec names -> unit of the raw Matter value.
ATTRIBUTE_UNITS: dict[tuple[str, str], str] = {
    **{("TemperatureMeasurement", a): _CENTI_C for a in ("MeasuredValue", "MinMeasuredValue", "MaxMeasuredValue")},
    **{("Thermostat", a): _CENTI_C for a in (
        "LocalTemperature", "OccupiedCoolingSetpoint", "OccupiedHeatingSetpoint", "AbsMinHeatSetpointLimit",
        "AbsMaxHeatSetpointLimit", "AbsMinCoolSetpointLimit", "AbsMaxCoolSetpointLimit", "MinHeatSetpointLimit",
        "MaxHeatSetpointLimit", "MinCoolSetpointLimit", "MaxCoolSetpointLimit")},
    ("Thermostat", "MinSetpointDeadBand"): "0.1 °C",
    **{("TemperatureControl", a): _CENTI_C
       for a in ("TemperatureSetpoint", "MinTemperature", "MaxTemperature", "Step")},
    **{("RelativeHumidityMeasurement", a): "0.01 %RH" for a in ("MeasuredValue", "MinMeasuredValue",
                                                               "MaxMeasuredValue")},
    ("FanControl", "PercentSetting"): "%", ("FanControl", "PercentCurrent"): "%",
    **{("WindowCovering", a): "0.01 %" for a in ("CurrentPositionLiftPercent100ths", "TargetPositionLiftPercent100ths",
                                                "CurrentPositionTiltPercent100ths", "TargetPositionTiltPercent100ths")},
    ("WindowCovering", "CurrentPositionLiftPercentage"): "%", ("WindowCovering", "CurrentPositionTiltPercentage"): "%",
    ("LevelControl", "RemainingTime"): "0.1 s", ("LevelControl", "OnOffTransitionTime"): "0.1 s",
    ("OnOff", "OnTime"): "0.1 s", ("OnOff", "OffWaitTime"): "0.1 s",
    ("Identify", "IdentifyTime"): "s",
    ("OperationalState", "CountdownTime"): "s", ("RvcOperationalState", "CountdownTime"): "s",
    ("ElectricalPowerMeasurement", "ActivePower"): "mW", ("ElectricalPowerMeasurement", "Voltage"): "mV",
    ("ElectricalPowerMeasurement", "ActiveCurrent"): "mA",
    ("ElectricalEnergyMeasurement", "CumulativeEnergyImported"): "mWh",
    ("ElectricalEnergyMeasurement", "CumulativeEnergyExported"): "mWh",
    ("PowerSource", "BatPercentRemaining"): "0.5 %", ("PowerSource", "BatVoltage"): "mV",
}


def unit_of(cluster: str, attribute: str) -> str | None:
    return ATTRIBUTE_UNITS.get((cluster, attribute))
