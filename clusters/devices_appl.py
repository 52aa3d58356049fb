"""The rest of the Matter device library, part one: lighting, plugs and mounted controls,
switches and controllers, media, appliances and energy (issue #27; locks and sensors are
in their own block).

Each builder composes the spec device type's mandatory clusters (and optional ones real
products commonly carry: Binding on lights and switches, electrical measurement on plugs).
Device type ids and revisions are the Matter 1.4 Device Library's.

Controllers (On/Off Light Switch, Dimmer Switch, Color Dimmer Switch) carry client clusters
and a Binding server; a hand's action on one (`Home.press`) is sent as commands to the
devices it is bound to (`bound_to` in the home file), through the targets' own servers.

`ROOM_KINDS` is each type's prior: the kinds of room it belongs in (a home generator draws
from it); `PHYSICS` names the types the room physics reacts to.
"""
from __future__ import annotations

from typing import Any

from chip.clusters import Objects as Clusters

from clusters.color_control import ColorControlServer
from clusters.device import DeviceType, Endpoint, register
from clusters.device_types import (
    COLOR_DIMMER_SWITCH,
    COLOR_TEMPERATURE_LIGHT,
    DIMMABLE_PLUG_IN_UNIT,
    DIMMER_SWITCH,
    ELECTRICAL_SENSOR,
    EXTENDED_COLOR_LIGHT,
    GENERIC_SWITCH,
    MOUNTED_DIMMABLE_LOAD_CONTROL,
    MOUNTED_ON_OFF_CONTROL,
    ON_OFF_LIGHT_SWITCH,
    ON_OFF_PLUG_IN_UNIT,
    SPEAKER,
)
from clusters.energy import ElectricalEnergyMeasurementServer, ElectricalPowerMeasurementServer, PowerTopologyServer
from clusters.identify import IdentifyServer
from clusters.level_control import LevelControlServer
from clusters.onoff import OnOffServer
from clusters.scenes import GroupsServer, ScenesManagementServer
from clusters.status import MatterError, Status
from clusters.switches import BindingServer, SwitchServer

C = Clusters


def _endpoint(endpoint_id: int, device_types: list[tuple[int, int]], *servers: Any,
              clients: tuple[int, ...] = ()) -> Endpoint:
    ep = Endpoint(endpoint_id, device_types, client_clusters=clients)
    for server in servers:
        ep.add(server)
    return ep


def _metered(load_watts: float, onoff: OnOffServer, level: LevelControlServer | None = None) -> list[Any]:
    """Electrical Power and Energy Measurement of what is plugged in: `load_watts` while on,
    scaled by the level for a dimmer (the level where the last change left it)."""
    if isinstance(load_watts, bool) or not isinstance(load_watts, (int, float)) or not 0 <= load_watts <= 3680:
        raise MatterError(Status.CONSTRAINT_ERROR, f"load_watts={load_watts!r}: give 0..3680 W")

    def power() -> float:
        if not onoff.get("OnOff"):
            return 0.0
        if level is None:
            return float(load_watts)
        current = level._values["CurrentLevel"]
        return float(load_watts) * (0 if current is None or not isinstance(current, int) else current) / 254

    meters = [ElectricalPowerMeasurementServer(power_source=power),
              ElectricalEnergyMeasurementServer(power_source=power)]

    def changed(server: Any, name: str) -> None:
        if name in ("OnOff", "CurrentLevel"):
            for meter in meters:
                meter.reanchor()
    onoff.listeners.append(changed)
    if level is not None:
        level.listeners.append(changed)
    return [PowerTopologyServer(), *meters]


# ---- lighting ----------------------------------------------------------------------------
def _color_light(extended: bool) -> list[Endpoint]:
    color = ColorControlServer(hue_and_saturation=extended, enhanced_hue=extended, color_loop=extended,
                               xy=extended, color_temperature=True)
    return [_endpoint(1, [EXTENDED_COLOR_LIGHT if extended else COLOR_TEMPERATURE_LIGHT], IdentifyServer(),
                      GroupsServer(), ScenesManagementServer(), OnOffServer(lighting=True),
                      LevelControlServer(on_off=True, lighting=True, CurrentLevel=254), color, BindingServer())]


def _color_temperature_light(**_: Any) -> list[Endpoint]:
    return _color_light(extended=False)


def _extended_color_light(**_: Any) -> list[Endpoint]:
    return _color_light(extended=True)


# ---- plugs and mounted load controls ---------------------------------------------------------
def _switched(device_type: tuple[int, int], dimmable: bool, load_watts: float) -> list[Endpoint]:
    onoff = OnOffServer(lighting=True)
    level = LevelControlServer(on_off=True, lighting=True, CurrentLevel=254) if dimmable else None
    servers = [IdentifyServer(), GroupsServer(), ScenesManagementServer(), onoff, *([level] if level else [])]
    return [_endpoint(1, [device_type, ELECTRICAL_SENSOR], *servers, *_metered(load_watts, onoff, level))]


def _on_off_plug(load_watts: float = 60.0, **_: Any) -> list[Endpoint]:
    """`load_watts`: what is plugged in draws this while the plug is on."""
    return _switched(ON_OFF_PLUG_IN_UNIT, False, load_watts)


def _dimmable_plug(load_watts: float = 60.0, **_: Any) -> list[Endpoint]:
    return _switched(DIMMABLE_PLUG_IN_UNIT, True, load_watts)


def _mounted_on_off_control(load_watts: float = 100.0, **_: Any) -> list[Endpoint]:
    return _switched(MOUNTED_ON_OFF_CONTROL, False, load_watts)


def _mounted_dimmable_load_control(load_watts: float = 100.0, **_: Any) -> list[Endpoint]:
    return _switched(MOUNTED_DIMMABLE_LOAD_CONTROL, True, load_watts)


# ---- switches and controllers ------------------------------------------------------------------
def _generic_switch(latching: bool = False, positions: int = 2, multi_press_max: int = 2, **_: Any) -> list[Endpoint]:
    """A button (momentary: press, long press, multi-press) or a rocker (`latching`)."""
    return [_endpoint(1, [GENERIC_SWITCH], IdentifyServer(),
                      SwitchServer(latching=latching, positions=positions, multi_press_max=multi_press_max))]


_CONTROLLER_CLIENTS = {
    ON_OFF_LIGHT_SWITCH: (C.Identify.id, C.OnOff.id, C.Groups.id, C.ScenesManagement.id),
    DIMMER_SWITCH: (C.Identify.id, C.OnOff.id, C.LevelControl.id, C.Groups.id, C.ScenesManagement.id),
    COLOR_DIMMER_SWITCH: (C.Identify.id, C.OnOff.id, C.LevelControl.id, C.ColorControl.id, C.Groups.id,
                          C.ScenesManagement.id),
}


def _controller(device_type: tuple[int, int], bound_to: list[str] | None) -> list[Endpoint]:
    if bound_to is not None and (not isinstance(bound_to, list) or not all(isinstance(t, str) for t in bound_to)):
        raise ValueError("bound_to: expected a list of device ids (optionally 'device_id:endpoint')")
    return [_endpoint(1, [device_type], IdentifyServer(), BindingServer(), clients=_CONTROLLER_CLIENTS[device_type])]


def _on_off_light_switch(bound_to: list[str] | None = None, **_: Any) -> list[Endpoint]:
    """`bound_to`: the devices it switches (the home delivers its commands to them)."""
    return _controller(ON_OFF_LIGHT_SWITCH, bound_to)


def _dimmer_switch(bound_to: list[str] | None = None, **_: Any) -> list[Endpoint]:
    return _controller(DIMMER_SWITCH, bound_to)


def _color_dimmer_switch(bound_to: list[str] | None = None, **_: Any) -> list[Endpoint]:
    return _controller(COLOR_DIMMER_SWITCH, bound_to)


# ---- media --------------------------------------------------------------------------------
def _speaker(**_: Any) -> list[Endpoint]:
    """A speaker: OnOff is mute, LevelControl the volume (0..100 %, as LevelControl 0..254 is not)."""
    volume = LevelControlServer(on_off=True, lighting=False, CurrentLevel=30, MinLevel=0, MaxLevel=100)
    return [_endpoint(1, [SPEAKER], IdentifyServer(), OnOffServer(), volume)]


# (key, label, device type, builder, ProductID, room kinds, physics). ProductIDs are fixed for
# good once given (0x8140-0x81BF is this block's range); room kinds are a home generator's prior.
_TYPES: list[tuple[str, str, tuple[int, int], Any, int, tuple[str, ...], bool]] = [
    ("color_temperature_light", "Color Temperature Light", COLOR_TEMPERATURE_LIGHT, _color_temperature_light,
     0x8140, ("living_room", "bedroom", "kitchen", "bathroom", "hallway", "office"), True),
    ("extended_color_light", "Extended Color Light", EXTENDED_COLOR_LIGHT, _extended_color_light,
     0x8141, ("living_room", "bedroom", "office", "kids_room"), True),
    ("on_off_plug", "On/Off Plug-in Unit", ON_OFF_PLUG_IN_UNIT, _on_off_plug,
     0x8142, ("living_room", "bedroom", "kitchen", "office", "utility_room"), False),
    ("dimmable_plug", "Dimmable Plug-in Unit", DIMMABLE_PLUG_IN_UNIT, _dimmable_plug,
     0x8143, ("living_room", "bedroom"), False),
    ("mounted_on_off_control", "Mounted On/Off Control", MOUNTED_ON_OFF_CONTROL, _mounted_on_off_control,
     0x8144, ("hallway", "kitchen", "bathroom", "garage", "garden"), False),
    ("mounted_dimmable_load_control", "Mounted Dimmable Load Control", MOUNTED_DIMMABLE_LOAD_CONTROL,
     _mounted_dimmable_load_control, 0x8145, ("living_room", "dining_room", "bedroom"), False),
    ("generic_switch", "Generic Switch", GENERIC_SWITCH, _generic_switch,
     0x8146, ("living_room", "bedroom", "hallway", "kitchen"), False),
    ("on_off_light_switch", "On/Off Light Switch", ON_OFF_LIGHT_SWITCH, _on_off_light_switch,
     0x8147, ("hallway", "bathroom", "kitchen", "bedroom"), False),
    ("dimmer_switch", "Dimmer Switch", DIMMER_SWITCH, _dimmer_switch,
     0x8148, ("living_room", "bedroom", "dining_room"), False),
    ("color_dimmer_switch", "Color Dimmer Switch", COLOR_DIMMER_SWITCH, _color_dimmer_switch,
     0x8149, ("living_room", "bedroom", "kids_room"), False),
    ("speaker", "Speaker", SPEAKER, _speaker, 0x814A, ("living_room", "kitchen", "bedroom", "office"), False),
]

#: type key -> the room kinds it belongs in (a home generator's prior).
ROOM_KINDS: dict[str, tuple[str, ...]] = {}
#: type keys whose devices the room physics reacts to (besides those it always did).
PHYSICS: set[str] = set()
for _key, _label, (_dt, _rev), _build, _product_id, _rooms, _physics in _TYPES:
    register(DeviceType(_key, _label, _dt, _rev, _build, product_id=_product_id))
    ROOM_KINDS[_key] = _rooms
    if _physics:
        PHYSICS.add(_key)
