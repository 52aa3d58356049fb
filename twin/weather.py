"""The outdoor weather: a seeded daily curve, held constant hour by hour.

Each hour of simulated local time has one outdoor state (temperature, humidity, rain, daylight
fraction, barometric pressure), a pure function of the seed, the date and the hour:

- temperature: `mean_c` + `swing_c` * cos(2π (hour - 15) / 24) (warmest at 15:00, coolest at
  03:00) + a seeded offset per day (σ = `day_sigma_c`), 3 °C cooler while it rains;
- humidity: `humidity` + 12 %RH at the cool of night, less in the afternoon; 95 %RH in rain;
- rain: a day rains with probability `rain_chance`, in one spell (seeded start, 1..6 hours);
- daylight: the fraction of full sun (0 at night, sunrise `sunrise` to sunset `sunset`,
  a sine over the day; a third of it in rain); a room's `daylight_lux` is its light in full sun;
- pressure (kPa): 101.3 + 1.2 sin(2π day / 5), 0.8 lower in rain.

Holding each hour constant keeps the room physics exact: the home re-anchors its rooms at each
hour boundary (one event per simulated hour), so stepping and fast-forward agree to the bit.
`overrides` pin any quantity (tools, HTTP, a scenario: "a heat wave at 35 °C") until cleared.
A home without `weather` keeps its constant ambient, as before (the SimuHome homes).
"""
from __future__ import annotations

import math
import random
from datetime import datetime, timedelta
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

QUANTITIES = ("temperature", "humidity", "raining", "daylight", "pressure")


class WeatherSpec(BaseModel):
    """A home file's `weather:`; every field has a default, so `weather: {}` is a mild June."""
    model_config = ConfigDict(extra="forbid")
    mean_c: float = Field(17.0, ge=-40, le=45, description="daily mean outdoor temperature (°C)")
    swing_c: float = Field(5.0, ge=0, le=20, description="half the day-night difference (°C)")
    day_sigma_c: float = Field(2.0, ge=0, le=10, description="day-to-day spread of the mean (°C)")
    humidity: float = Field(65.0, ge=0, le=100, description="mean outdoor relative humidity (%RH)")
    rain_chance: float = Field(0.2, ge=0, le=1, description="probability that a day has a rain spell")
    sunrise: int = Field(6, ge=0, le=23)
    sunset: int = Field(21, ge=1, le=24)
    overrides: dict[str, float | bool] = Field(default_factory=dict)


def check_overrides(values: dict[str, Any]) -> dict[str, float | bool]:
    """Validated overrides (ValueError naming the bad one): temperature -40..60 °C, humidity 0..100,
    raining true/false, daylight 0..1, pressure 80..110 kPa."""
    bounds = {"temperature": (-40, 60), "humidity": (0, 100), "daylight": (0, 1), "pressure": (80, 110)}
    out: dict[str, float | bool] = {}
    for key, value in values.items():
        if key not in QUANTITIES:
            raise ValueError(f"weather: {key!r} is not a weather quantity; accepted: {', '.join(QUANTITIES)}")
        if key == "raining":
            if not isinstance(value, bool):
                raise ValueError(f"weather.raining: true or false, got {value!r}")
            out[key] = value
            continue
        low, high = bounds[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
            raise ValueError(f"weather.{key}: a number {low}..{high}, got {value!r}")
        out[key] = float(value)
    return out


class Weather:
    """The outdoor weather of a home (`home.weather`); values by the hour, from `spec` and the seed."""

    def __init__(self, spec: WeatherSpec, seed: int):
        if spec.sunset <= spec.sunrise:
            raise ValueError("weather: sunset must be after sunrise")
        self.spec = spec
        self.seed = int(seed)
        self.overrides = check_overrides(spec.overrides)

    def at(self, when: datetime) -> dict[str, Any]:
        """The outdoor state during the hour that contains `when`."""
        s = self.spec
        day = random.Random(f"matter-twin weather|{self.seed}|{when.date().isoformat()}")
        offset = day.gauss(0.0, s.day_sigma_c)
        rainy = day.random() < s.rain_chance
        start, length = day.randrange(24), day.randint(1, 6)
        raining = rainy and start <= when.hour < start + length
        phase = math.cos(2 * math.pi * (when.hour - 15) / 24)
        temperature = s.mean_c + s.swing_c * phase + offset - (3.0 if raining else 0.0)
        humidity = 95.0 if raining else min(100.0, max(0.0, s.humidity - 12.0 * phase))
        light = 0.0
        if s.sunrise <= when.hour < s.sunset:
            light = math.sin(math.pi * (when.hour + 0.5 - s.sunrise) / (s.sunset - s.sunrise))
        days = (when.date() - datetime(2000, 1, 1).date()).days
        state = {"temperature": round(temperature, 2), "humidity": round(humidity, 2), "raining": raining,
                 "daylight": round(light * (1 / 3 if raining else 1.0), 4),
                 "pressure": round(101.3 + 1.2 * math.sin(2 * math.pi * days / 5) - (0.8 if raining else 0.0), 2)}
        state.update(self.overrides)
        return state

    @staticmethod
    def hour_of(when: datetime) -> datetime:
        return when.replace(minute=0, second=0, microsecond=0)

    def next_change(self, when: datetime) -> datetime:
        """The start of the hour after the one containing `when`."""
        return self.hour_of(when) + timedelta(hours=1)

    def set(self, values: dict[str, Any]) -> None:
        """Pin quantities (None clears one); ValueError and nothing changed for a bad one."""
        cleared = [k for k, v in values.items() if v is None]
        for key in cleared:
            if key not in QUANTITIES:
                raise ValueError(f"weather: {key!r} is not a weather quantity; accepted: {', '.join(QUANTITIES)}")
        pinned = check_overrides({k: v for k, v in values.items() if v is not None})
        self.overrides = {k: v for k, v in {**self.overrides, **pinned}.items() if k not in cleared}

    def state(self) -> dict[str, Any]:
        return {**self.spec.model_dump(mode="json"), "overrides": dict(sorted(self.overrides.items()))}

    @classmethod
    def from_state(cls, state: dict[str, Any], seed: int) -> Weather:
        return cls(WeatherSpec.model_validate(state), seed)
