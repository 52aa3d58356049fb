"""AirQuality cluster server (Matter 1.3, revision 1), mandatory on an Air Quality Sensor.

The spec leaves the mapping from measurements to AirQuality to the manufacturer. The twin
derives it from the Pm10ConcentrationMeasurement on the same endpoint, using the six PM10
bands of the US EPA Air Quality Index (µg/m³: 0-54 good, 55-154 moderate, 155-254
unhealthy for sensitive groups, 255-354 unhealthy, 355-424 very unhealthy, 425+
hazardous) for the six AirQualityEnum levels. The EPA bands are for a 24-hour mean; the
twin applies them to the current value. Nothing is stored: AirQuality is read from the
sibling at every read, so it can never disagree with MeasuredValue.
"""
from __future__ import annotations

from typing import Any

from chip.clusters.Types import NullValue

from clusters.base import Clusters, ClusterServer, feature_bits

AQ = Clusters.AirQuality
Level = AQ.Enums.AirQualityEnum

#: (upper bound in µg/m³, exclusive; level), lowest first; above the last is ExtremelyPoor.
PM10_BANDS = ((55.0, Level.kGood), (155.0, Level.kFair), (255.0, Level.kModerate),
              (355.0, Level.kPoor), (425.0, Level.kVeryPoor))


def pm10_air_quality(pm10: float) -> Level:
    for upper, level in PM10_BANDS:
        if pm10 < upper:
            return level
    return Level.kExtremelyPoor


class AirQualityServer(ClusterServer):
    cluster = AQ
    revision = 1
    attributes = ("AirQuality",)
    notes = ("AirQuality follows the PM10 MeasuredValue on the same endpoint by the US EPA AQI "
             "PM10 bands: <55 Good, <155 Fair, <255 Moderate, <355 Poor, <425 VeryPoor, else "
             "ExtremelyPoor (µg/m³); Unknown while there is no PM10 value.",)

    def __init__(self) -> None:
        # All four optional levels are used, so all four features are on.
        super().__init__(feature_map=feature_bits(AQ.Bitmaps.Feature))

    def defaults(self) -> dict[str, Any]:
        return {"AirQuality": Level.kUnknown}

    derived = frozenset({"AirQuality"})

    def get(self, name: str) -> Any:
        if name == "AirQuality":
            pm10 = self.sibling(Clusters.Pm10ConcentrationMeasurement)
            value = pm10.get("MeasuredValue") if pm10 is not None else NullValue
            return Level.kUnknown if value is NullValue or value is None else pm10_air_quality(value)
        return super().get(name)
