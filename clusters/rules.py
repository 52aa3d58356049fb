"""Cross-attribute dependencies between clusters of one device, in one place.

SimuHome devices have rules that span clusters (the AC must be on before its fan speed
changes; a running washer keeps its settings). Each rule names the device types it
applies to, the operations it guards, the condition and the Matter status it answers
with. `Device.write` and `Device.invoke` check them for every caller (tools, workflows,
the Matter node), and `get_cluster_doc` lists them, so agents read the table the twin
enforces.

Rules the spec gives a cluster its own answer for stay in that cluster and are listed
here with `enforced_here=False`: a mode change during a running cycle answers
ChangeToModeResponse(InvalidInMode), as Mode Base specifies, not an IM error.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from chip.clusters import Objects as Clusters

from clusters.status import MatterError, Status

FANS = ("air_conditioner", "air_purifier", "fan", "humidifier", "dehumidifier")
APPLIANCES = ("dishwasher", "laundry_washer", "laundry_dryer")


@dataclass(frozen=True)
class Rule:
    device_types: tuple[str, ...]        # device type keys the rule applies to
    cluster: str                         # spec cluster name of the guarded operations
    operations: tuple[str, ...]          # command or attribute names guarded
    allowed: Callable[[Any], bool]       # (device) -> may the operation proceed?
    status: Status
    explanation: str                     # shown to the agent, and in docs
    enforced_here: bool = True


def is_on(device: Any) -> bool:
    """OnOff.OnOff of the device's first OnOff server (devices without one count as on)."""
    try:
        return bool(device.locate(Clusters.OnOff).get("OnOff"))
    except MatterError:
        return True


def is_idle(device: Any) -> bool:
    """No operational cycle running or paused."""
    try:
        ops = device.locate(Clusters.OperationalState)
    except MatterError:
        return True
    return ops.get("OperationalState") not in (ops.E.kRunning, ops.E.kPaused)


RULES: list[Rule] = [
    Rule(FANS, "FanControl", ("FanMode", "PercentSetting", "Step"), is_on, Status.INVALID_IN_STATE,
         "the device is off; turn it on (OnOff On) before changing its fan speed or mode"),
    Rule(("air_conditioner",), "Thermostat",
         ("SystemMode", "OccupiedCoolingSetpoint", "OccupiedHeatingSetpoint", "SetpointRaiseLower",
          "SetActivePresetRequest"),
         is_on, Status.INVALID_IN_STATE,
         "the air conditioner is off; turn it on (OnOff On) before changing its mode or setpoints"),
    Rule(("tv",), "Channel", ("ChangeChannel", "ChangeChannelByNumber", "SkipChannel"), is_on,
         Status.INVALID_IN_STATE, "the TV is off; turn it on (OnOff On) before changing channel"),
    Rule(("tv",), "MediaPlayback",
         ("Play", "Pause", "Stop", "StartOver", "Previous", "Next", "Rewind", "FastForward"), is_on,
         Status.INVALID_IN_STATE, "the TV is off; turn it on (OnOff On) before controlling playback"),
    # The *WithOnOff commands are the spec's way to change the level of a device that is off.
    Rule(("tv",), "LevelControl", ("MoveToLevel", "Move", "Step", "Stop"), is_on,
         Status.INVALID_IN_STATE, "the TV is off; turn it on (OnOff On) before changing the volume"),
    Rule(APPLIANCES, "OperationalState", ("Start", "Resume"), is_on, Status.INVALID_IN_STATE,
         "the appliance is off; turn it on (OnOff On) before starting or resuming a cycle"),
    Rule(("laundry_washer",), "LaundryWasherControls", ("SpinSpeedCurrent", "NumberOfRinses"), is_idle,
         Status.INVALID_IN_STATE, "the washer is running; spin speed and rinses change only while it is stopped"),
    Rule(("laundry_dryer",), "LaundryDryerControls", ("SelectedDrynessLevel",), is_idle,
         Status.INVALID_IN_STATE, "the dryer is running; the dryness level changes only while it is stopped"),
    Rule(("laundry_washer",), "TemperatureControl", ("SetTemperature",), is_idle,
         Status.INVALID_IN_STATE, "the washer is running; its temperature changes only while it is stopped"),
    Rule(APPLIANCES, "DishwasherMode", ("ChangeToMode",), is_idle, Status.INVALID_IN_STATE,
         "a running dishwasher keeps its mode: ChangeToMode answers InvalidInMode until the cycle ends",
         enforced_here=False),
    Rule(APPLIANCES, "LaundryWasherMode", ("ChangeToMode",), is_idle, Status.INVALID_IN_STATE,
         "a running washer or dryer keeps its mode: ChangeToMode answers InvalidInMode until the cycle ends",
         enforced_here=False),
]


def _check(device: Any, server: Any, name: str) -> None:
    for rule in RULES:
        if (rule.enforced_here and device.type.key in rule.device_types
                and rule.cluster == server.name and name in rule.operations
                and not rule.allowed(device)):
            raise MatterError(rule.status, f"{device.id}: {rule.explanation}")


def check_write(device: Any, server: Any, name: str, value: Any) -> None:
    _check(device, server, name)


def check_invoke(device: Any, server: Any, name: str, fields: Any) -> None:
    _check(device, server, name)
