"""Temperature Control cluster server (Matter 1.3, 8.2): a target temperature for an appliance.

Either a number (TemperatureNumber feature: TemperatureSetpoint within MinTemperature..
MaxTemperature, optionally on a Step grid) or a named level (TemperatureLevel feature:
SelectedTemperatureLevel indexes SupportedTemperatureLevels). The two features exclude each
other. Temperatures are in 0.01 °C. Nothing is writable: SetTemperature is the only way in.
"""
from __future__ import annotations

from typing import Any

from clusters.base import Clusters, ClusterServer
from clusters.status import MatterError, Status

TC = Clusters.TemperatureControl
Feature = TC.Bitmaps.Feature

MAX_LEVELS = 32       # SupportedTemperatureLevels: max 32 entries
MAX_LEVEL_LABEL = 16  # each entry: max 16 characters


class TemperatureControlServer(ClusterServer):
    cluster = TC
    revision = 1
    commands = ("SetTemperature",)
    notes = ("TemperatureNumber devices: SetTemperature needs targetTemperature (0.01 °C) within "
             "MinTemperature..MaxTemperature, on the Step grid from MinTemperature when Step is present.",
             "TemperatureLevel devices: SetTemperature needs targetTemperatureLevel, an index into "
             "SupportedTemperatureLevels.")

    def __init__(self, levels: bool = False, step: bool = True, **initial: Any):
        """`levels=False`: TemperatureNumber (+ Step if `step`); `levels=True`: TemperatureLevel."""
        if levels:
            self.attributes = ("SelectedTemperatureLevel", "SupportedTemperatureLevels")
            feature_map = int(Feature.kTemperatureLevel)
        else:
            self.attributes = ("TemperatureSetpoint", "MinTemperature", "MaxTemperature") + (("Step",) if step else ())
            feature_map = int(Feature.kTemperatureNumber) | (int(Feature.kTemperatureStep) if step else 0)
        super().__init__(feature_map=feature_map, **initial)
        self._check_configuration()

    def has(self, feature: Feature) -> bool:
        return bool(self.feature_map & int(feature))

    def defaults(self) -> dict[str, Any]:
        # A washing machine's range: 20..90 °C in 10 °C steps, 40 °C selected.
        return {"TemperatureSetpoint": 4000, "MinTemperature": 2000, "MaxTemperature": 9000, "Step": 1000,
                "SelectedTemperatureLevel": 1, "SupportedTemperatureLevels": ["Cold", "Warm", "Hot"]}

    def _check_configuration(self) -> None:
        v = self._values
        if self.has(Feature.kTemperatureNumber):
            low, high = v["MinTemperature"], v["MaxTemperature"]
            if not low < high:
                raise MatterError(Status.CONSTRAINT_ERROR,
                                  f"TemperatureControl: MinTemperature ({low}) must be below MaxTemperature ({high})")
            if self.has(Feature.kTemperatureStep) and not 1 <= v["Step"] <= high - low:
                raise MatterError(Status.CONSTRAINT_ERROR,
                                  f"TemperatureControl.Step={v['Step']} must be within 1..{high - low}")
            self._check_target(v["TemperatureSetpoint"])
        else:
            levels = v["SupportedTemperatureLevels"]
            if not 1 <= len(levels) <= MAX_LEVELS or any(not 0 < len(x) <= MAX_LEVEL_LABEL for x in levels):
                raise MatterError(Status.CONSTRAINT_ERROR,
                                  f"TemperatureControl.SupportedTemperatureLevels needs 1..{MAX_LEVELS} labels "
                                  f"of 1..{MAX_LEVEL_LABEL} characters")
            self._check_level(v["SelectedTemperatureLevel"])

    def _check_target(self, target: int) -> None:
        low, high = self._values["MinTemperature"], self._values["MaxTemperature"]
        if not low <= target <= high:
            raise MatterError(Status.CONSTRAINT_ERROR,
                              f"TemperatureControl: temperature {target} is outside {low}..{high} (0.01 °C)")
        if self.has(Feature.kTemperatureStep) and (target - low) % self._values["Step"]:
            step = self._values["Step"]
            raise MatterError(Status.CONSTRAINT_ERROR,
                              f"TemperatureControl: temperature {target} is not on the {step} step grid from {low}; "
                              f"nearest: {low + round((target - low) / step) * step}")

    def _check_level(self, level: int) -> None:
        levels = self._values["SupportedTemperatureLevels"]
        if not 0 <= level < len(levels):
            raise MatterError(Status.CONSTRAINT_ERROR,
                              f"TemperatureControl: level {level} is not an index into SupportedTemperatureLevels; "
                              + "accepted: " + ", ".join(f"{i} ({x})" for i, x in enumerate(levels)))

    def SetTemperature(self, request: Any) -> None:
        if self.has(Feature.kTemperatureNumber):
            if request.targetTemperature is None:
                raise MatterError(Status.INVALID_COMMAND,
                                  "SetTemperature needs targetTemperature (0.01 °C) on this device")
            self._check_target(request.targetTemperature)
            self.set("TemperatureSetpoint", request.targetTemperature)
        else:
            if request.targetTemperatureLevel is None:
                raise MatterError(Status.INVALID_COMMAND,
                                  "SetTemperature needs targetTemperatureLevel (an index into "
                                  "SupportedTemperatureLevels) on this device")
            self._check_level(request.targetTemperatureLevel)
            self.set("SelectedTemperatureLevel", request.targetTemperatureLevel)
