"""Device categories: the chapter of the Matter device library a device type belongs to.

A home file may give a device its own `category`; otherwise it is the spec chapter of the
device type's main application endpoint (Matter 1.4 Device Library: lighting, smart plugs
and actuators, switches and controls, sensors, closures, HVAC, media, generic, robotic,
appliances, energy). Device types the table does not know are "other".
"""
from __future__ import annotations

from typing import Any

#: Matter device type id -> device library chapter.
_CHAPTER_OF_ID: dict[int, str] = {
    **dict.fromkeys((0x0100, 0x0101, 0x010C, 0x010D), "lighting"),
    **dict.fromkeys((0x010A, 0x010B, 0x010F, 0x0110, 0x0042, 0x0303), "actuators"),   # plugs, loads, valves
    **dict.fromkeys((0x0103, 0x0104, 0x0105, 0x0203, 0x0304, 0x0840, 0x0850, 0x000F), "switches"),
    **dict.fromkeys((0x0015, 0x0106, 0x0107, 0x0302, 0x0305, 0x0306, 0x0307, 0x0076, 0x002C,
                     0x0041, 0x0043, 0x0044), "sensors"),
    **dict.fromkeys((0x000A, 0x0202), "closures"),
    **dict.fromkeys((0x002B, 0x002D, 0x0301, 0x0072), "hvac"),
    **dict.fromkeys((0x0028, 0x0022, 0x0023, 0x0024, 0x0029, 0x002A), "media"),
    **dict.fromkeys((0x0074,), "robotic"),
    **dict.fromkeys((0x0070, 0x0071, 0x0073, 0x0075, 0x0077, 0x0078, 0x0079, 0x007A, 0x007B,
                     0x007C), "appliances"),
    **dict.fromkeys((0x050C, 0x050D, 0x050F, 0x0510, 0x0017, 0x0018, 0x0019, 0x0309), "energy"),
}
CATEGORIES = tuple(sorted(set(_CHAPTER_OF_ID.values()))) + ("other",)


def category_of(device_type: Any) -> str:
    """The library chapter of a `clusters.device.DeviceType` (by its device type id)."""
    return _CHAPTER_OF_ID.get(device_type.device_type_id, "other")
