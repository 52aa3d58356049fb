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

import datetime
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from chip.clusters import Objects as Clusters

from clusters.device import DeviceType, Endpoint, register
from clusters.device_types import (
    BASIC_VIDEO_PLAYER,
    BATTERY_STORAGE,
    CASTING_VIDEO_CLIENT,
    COLOR_DIMMER_SWITCH,
    COLOR_TEMPERATURE_LIGHT,
    CONTROL_BRIDGE,
    COOK_SURFACE,
    COOKTOP,
    DEVICE_ENERGY_MANAGEMENT,
    DIMMABLE_PLUG_IN_UNIT,
    DIMMER_SWITCH,
    ELECTRICAL_SENSOR,
    ENERGY_EVSE,
    EXTENDED_COLOR_LIGHT,
    EXTRACTOR_HOOD,
    GENERIC_SWITCH,
    MICROWAVE_OVEN,
    MODE_SELECT,
    MOUNTED_DIMMABLE_LOAD_CONTROL,
    MOUNTED_ON_OFF_CONTROL,
    ON_OFF_LIGHT_SWITCH,
    ON_OFF_PLUG_IN_UNIT,
    OVEN,
    POWER_SOURCE,
    PUMP,
    PUMP_CONTROLLER,
    SOLAR_POWER,
    SPEAKER,
    TEMPERATURE_CONTROLLED_CABINET,
    THERMOSTAT,
    VIDEO_REMOTE_CONTROL,
    WATER_HEATER,
    WATER_VALVE,
    WINDOW_COVERING_CONTROLLER,
)
from clusters.status import MatterError, Status

if TYPE_CHECKING:   # each builder imports its servers when it runs (see clusters/devices.py)
    from clusters.level_control import LevelControlServer
    from clusters.onoff import OnOffServer

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
    from clusters.energy import ElectricalEnergyMeasurementServer, ElectricalPowerMeasurementServer, PowerTopologyServer
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
    from clusters.color_control import ColorControlServer
    from clusters.identify import IdentifyServer
    from clusters.level_control import LevelControlServer
    from clusters.onoff import OnOffServer
    from clusters.scenes import GroupsServer, ScenesManagementServer
    from clusters.switches import BindingServer
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
    from clusters.identify import IdentifyServer
    from clusters.level_control import LevelControlServer
    from clusters.onoff import OnOffServer
    from clusters.scenes import GroupsServer, ScenesManagementServer
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
    from clusters.identify import IdentifyServer
    from clusters.switches import SwitchServer
    return [_endpoint(1, [GENERIC_SWITCH], IdentifyServer(),
                      SwitchServer(latching=latching, positions=positions, multi_press_max=multi_press_max))]


def _controller_clients(device_type: tuple[int, int]) -> tuple[int, ...]:
    """The client clusters of a switch (built when one is: the data model is lazy)."""
    return {
        ON_OFF_LIGHT_SWITCH: (C.Identify.id, C.OnOff.id, C.Groups.id, C.ScenesManagement.id),
        DIMMER_SWITCH: (C.Identify.id, C.OnOff.id, C.LevelControl.id, C.Groups.id, C.ScenesManagement.id),
        COLOR_DIMMER_SWITCH: (C.Identify.id, C.OnOff.id, C.LevelControl.id, C.ColorControl.id, C.Groups.id,
                              C.ScenesManagement.id),
    }[device_type]


def _controller(device_type: tuple[int, int], bound_to: list[str] | None) -> list[Endpoint]:
    from clusters.identify import IdentifyServer
    from clusters.switches import BindingServer
    if bound_to is not None and (not isinstance(bound_to, list) or not all(isinstance(t, str) for t in bound_to)):
        raise ValueError("bound_to: expected a list of device ids (optionally 'device_id:endpoint')")
    return [_endpoint(1, [device_type], IdentifyServer(), BindingServer(), clients=_controller_clients(device_type))]


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
    from clusters.level_control import LevelControlServer
    from clusters.onoff import OnOffServer
    volume = LevelControlServer(on_off=True, lighting=False, CurrentLevel=30, MinLevel=0, MaxLevel=100)
    return [_endpoint(1, [SPEAKER], OnOffServer(), volume)]   # (no Identify: the Speaker type has none)



# ---- appliances ---------------------------------------------------------------------------------
def _meters(power: Any, *drivers: tuple[Any, tuple[str, ...]], hooked: Any = None, exported: bool = False,
            stepped: bool = False, more: tuple[Any, ...] = ()) -> list[Any]:
    """Electrical Power and Energy Measurement of `power()` (W), re-anchored (with `more`
    meters) whenever one of the driving servers changes one of the named attributes, or
    `hooked` calls its power hooks (energy is exact between changes)."""
    from clusters.energy import ElectricalEnergyMeasurementServer, ElectricalPowerMeasurementServer, PowerTopologyServer
    meters = [ElectricalPowerMeasurementServer(power_source=power),
              ElectricalEnergyMeasurementServer(power_source=power, exported=exported, stepped=stepped)]

    def changed(*_: Any) -> None:
        for meter in (*meters, *more):
            meter.reanchor()
    for server, names in drivers:
        server.listeners.append(lambda s, n, names=names: n in names and changed())
    if hooked is not None:
        hooked.power_hooks.append(changed)
    return [PowerTopologyServer(), *meters]


def _oven(**_: Any) -> list[Endpoint]:
    """An oven: the Oven endpoint composed of one cavity (a Temperature Controlled Cabinet with
    its operational state, modes, setpoint 50..250 °C and the cavity's temperature)."""
    from clusters.identify import IdentifyServer
    from clusters.kitchen import CavityTemperature, OvenCavityOperationalStateServer, OvenModeServer
    from clusters.measurement import TemperatureMeasurementServer
    from clusters.temperature_control import TemperatureControlServer
    ops = OvenCavityOperationalStateServer()
    control = TemperatureControlServer(TemperatureSetpoint=18000, MinTemperature=5000, MaxTemperature=25000,
                                       Step=500)
    cavity = CavityTemperature(ops, control)
    measured = TemperatureMeasurementServer(MinMeasuredValue=0, MaxMeasuredValue=30000)
    measured.sensor_source = cavity.now
    ops.listeners.append(lambda s, n: n == "OperationalState" and cavity.reanchor())
    control.listeners.append(lambda s, n: n == "TemperatureSetpoint" and cavity.reanchor())
    power = lambda: 2400.0 if cavity.running() else 0.0  # noqa: E731
    body = _endpoint(1, [OVEN, ELECTRICAL_SENSOR], IdentifyServer(),
                     *_meters(power, (ops, ("OperationalState",))))
    body.children = (2,)
    return [body, _endpoint(2, [TEMPERATURE_CONTROLLED_CABINET], ops, OvenModeServer(), control, measured)]


#: A cook surface's heat settings and their power (W).
SURFACE_LEVELS = ("Off", "Low", "Medium", "High", "Boost")
SURFACE_WATTS = (0.0, 500.0, 1000.0, 1800.0, 2300.0)


#: Semantic tag namespaces (Matter standard namespaces): Common Number, Power Source (Solar 2, Battery 3).
COMMON_NUMBER, POWER_SOURCE_NAMESPACE = 0x07, 0x0F


def _surface(endpoint_id: int, number: int | None = None) -> Endpoint:
    """A cook surface; `number` tags it (Common Number) when a cooktop has several."""
    from clusters.temperature_control import TemperatureControlServer
    ep = _endpoint(endpoint_id, [COOK_SURFACE], TemperatureControlServer(
        levels=True, SupportedTemperatureLevels=list(SURFACE_LEVELS), SelectedTemperatureLevel=0))
    if number is not None:
        ep.tags = ((COMMON_NUMBER, number, f"Surface {number}"),)
    return ep


def _cooktop(surfaces: int = 4, **_: Any) -> list[Endpoint]:
    """A cooktop of `surfaces` cook surfaces (endpoints 2..): each heats at its level; the
    cooktop's OnOff (OffOnly) switches every surface off."""
    from clusters.identify import IdentifyServer
    from clusters.onoff import OnOffServer
    if isinstance(surfaces, bool) or not isinstance(surfaces, int) or not 1 <= surfaces <= 6:
        raise MatterError(Status.CONSTRAINT_ERROR, f"surfaces={surfaces!r}: give 1..6")
    plates = [_surface(2 + i, i + 1) for i in range(surfaces)]
    controls = [p.server(C.TemperatureControl) for p in plates]
    onoff = OnOffServer(off_only=True)

    def all_off(server: Any, name: str) -> None:
        if name == "OnOff" and not server.get("OnOff"):
            for control in controls:
                control.set("SelectedTemperatureLevel", 0)

    def lit(server: Any, name: str) -> None:
        # a surface turned up turns the cooktop on (OnOff reads whether any surface heats)
        if name == "SelectedTemperatureLevel":
            onoff.set("OnOff", any(c.get("SelectedTemperatureLevel") for c in controls))
    onoff.listeners.append(all_off)
    for control in controls:
        control.listeners.append(lit)
    power = lambda: sum(SURFACE_WATTS[c.get("SelectedTemperatureLevel")] for c in controls)  # noqa: E731
    body = _endpoint(1, [COOKTOP, ELECTRICAL_SENSOR], IdentifyServer(), onoff,
                     *_meters(power, *[(c, ("SelectedTemperatureLevel",)) for c in controls]))
    body.children = tuple(p.id for p in plates)
    return [body, *plates]


def _cook_surface(**_: Any) -> list[Endpoint]:
    """A single induction plate sold on its own."""
    plate = _surface(1)
    control = plate.server(C.TemperatureControl)
    power = lambda: SURFACE_WATTS[control.get("SelectedTemperatureLevel")]  # noqa: E731
    for server in _meters(power, (control, ("SelectedTemperatureLevel",))):
        plate.add(server)
    plate.device_types.append(ELECTRICAL_SENSOR)
    return [plate]


def _microwave_oven(watts: float = 900.0, **_: Any) -> list[Endpoint]:
    """A microwave: SetCookingParameters then Start (or startAfterSetting) cooks for CookTime."""
    from clusters.identify import IdentifyServer
    from clusters.kitchen import MicrowaveOvenControlServer, MicrowaveOvenModeServer
    from clusters.operational_state import OperationalStateServer
    ops = OperationalStateServer(cycle=[("cooking", 30)])
    control = MicrowaveOvenControlServer(watts=watts)
    power = control.power_watts
    return [_endpoint(1, [MICROWAVE_OVEN, ELECTRICAL_SENSOR], IdentifyServer(), ops, MicrowaveOvenModeServer(),
                      control, *_meters(power, (ops, ("OperationalState",)), (control, ("PowerSetting",))))]


def _extractor_hood(**_: Any) -> list[Endpoint]:
    """A hood: its fan extracts the kitchen's steam and smoke; its grease (HEPA-class) and carbon
    filters wear with use."""
    from clusters.fan_control import FanControlServer
    from clusters.filters import ActivatedCarbonFilterMonitoringServer, HepaFilterMonitoringServer
    from clusters.identify import IdentifyServer
    fan = FanControlServer(speed_max=3)
    usage = lambda: fan.get("PercentCurrent") / 100  # noqa: E731
    filters = [HepaFilterMonitoringServer(usage=usage), ActivatedCarbonFilterMonitoringServer(usage=usage)]
    fan.listeners.append(lambda s, n: n == "PercentCurrent" and [f.usage_changed() for f in filters])
    return [_endpoint(1, [EXTRACTOR_HOOD], IdentifyServer(), fan, *filters)]


def _water_heater(volume_l: float = 150.0, heater_watts: float = 3000.0, draws: list[Any] | None = None,
                  **_: Any) -> list[Endpoint]:
    """A hot water tank (`volume_l`) with an immersion heater (`heater_watts`); `draws`:
    [["07:00", 40], ...] litres of hot water used every day at those times."""
    from clusters.identify import IdentifyServer
    from clusters.thermostat import ThermostatServer
    from clusters.water import WaterHeaterManagementServer, WaterHeaterModeServer
    thermostat = ThermostatServer(heating=True, cooling=False, SystemMode=4, OccupiedHeatingSetpoint=5500,
                                  AbsMinHeatSetpointLimit=3000, AbsMaxHeatSetpointLimit=7500,
                                  MinHeatSetpointLimit=3000, MaxHeatSetpointLimit=7500)
    tank = WaterHeaterManagementServer(volume_l=volume_l, heater_watts=heater_watts, draws=draws)
    thermostat.sensor_source = tank.temperature
    power = tank.power_watts
    return [_endpoint(1, [WATER_HEATER, ELECTRICAL_SENSOR], IdentifyServer(), thermostat, tank,
                      WaterHeaterModeServer(), *_meters(power, (tank, ("HeatDemand",))))]


def _water_valve(**_: Any) -> list[Endpoint]:
    from clusters.identify import IdentifyServer
    from clusters.water import ValveConfigurationAndControlServer
    return [_endpoint(1, [WATER_VALVE], IdentifyServer(), ValveConfigurationAndControlServer())]


def _pump(**_: Any) -> list[Endpoint]:
    """A circulation pump: OnOff runs it, LevelControl sets its speed."""
    from clusters.identify import IdentifyServer
    from clusters.level_control import LevelControlServer
    from clusters.onoff import OnOffServer
    from clusters.water import PumpConfigurationAndControlServer
    pcc = PumpConfigurationAndControlServer()
    return [_endpoint(1, [PUMP], IdentifyServer(), OnOffServer(),
                      LevelControlServer(on_off=True, lighting=False, CurrentLevel=254, MinLevel=1), pcc)]


# ---- energy -----------------------------------------------------------------------------------
def _evse(circuit_amps: float = 32.0, **_: Any) -> list[Endpoint]:
    """An EV charger on a `circuit_amps` circuit; a car is plugged in by a hand (Home.plug_in_ev)."""
    from clusters.energy import DeviceEnergyManagementServer, PowerSourceServer
    from clusters.evse import EnergyEvseModeServer, EnergyEvseServer
    from clusters.identify import IdentifyServer
    evse = EnergyEvseServer(circuit_amps=circuit_amps)
    power = evse.power_watts
    dem = DeviceEnergyManagementServer(power_source=power, ESAType=C.DeviceEnergyManagement.Enums.ESATypeEnum.kEvse)
    meters = _meters(power, hooked=evse, more=(dem,))
    return [_endpoint(1, [ENERGY_EVSE, POWER_SOURCE, ELECTRICAL_SENSOR, DEVICE_ENERGY_MANAGEMENT], IdentifyServer(),
                      evse, EnergyEvseModeServer(), PowerSourceServer(EndpointList=[1]), *meters, dem)]


def clear_sky(hour: float) -> float:
    """Fraction of peak output at a time of day (0..24 h): a clear day's sun, 06:00 to 20:00."""
    return max(0.0, math.sin(math.pi * (hour - 6.0) / 14.0)) if 6.0 < hour < 20.0 else 0.0


class SolarOutput:
    """A solar inverter's power (W, exported: negative) in the energy meter's current period: its
    peak times the sun at the period's middle. `sky` gives the sun (0..1) at a time: the home's
    weather's daylight where the home has weather (the home sets it), else a clear day's."""

    def __init__(self, peak_watts: float):
        self.peak_watts = peak_watts
        self.meter: Any = None
        self.sky: Callable[[datetime.datetime], float] | None = None

    def __call__(self) -> float:
        eem = self.meter
        clock = getattr(eem, "clock", None)
        now = getattr(clock, "now", None)
        if eem is None or not isinstance(now, datetime.datetime):
            return 0.0
        middle = now + datetime.timedelta(seconds=(eem._boundary - clock.tick) / 10 + eem.period_ticks / 20)
        if self.sky is not None:
            return -self.peak_watts * self.sky(middle)
        return -self.peak_watts * clear_sky(middle.hour + middle.minute / 60 + middle.second / 3600)


def _solar_power(peak_watts: float = 5000.0, **_: Any) -> list[Endpoint]:
    """A solar inverter of `peak_watts`: its output follows the sun (`SolarOutput`), a step per
    15 min (the energy meter's period), exported (negative power)."""
    from clusters.energy import PowerSourceServer
    from clusters.identify import IdentifyServer
    if not 100 <= peak_watts <= 50_000:
        raise MatterError(Status.CONSTRAINT_ERROR, f"peak_watts={peak_watts}: give 100..50000")
    power = SolarOutput(peak_watts)
    meters = _meters(power, exported=True, stepped=True)
    power.meter = meters[2]
    ep = _endpoint(1, [SOLAR_POWER, POWER_SOURCE, ELECTRICAL_SENSOR], IdentifyServer(),
                   PowerSourceServer(EndpointList=[1], Description="Solar"), *meters)
    ep.tags = ((POWER_SOURCE_NAMESPACE, 2, "Solar"),)
    return [ep]


def _battery_storage(capacity_kwh: float = 10.0, max_watts: float = 5000.0, **_: Any) -> list[Endpoint]:
    """A home battery: it charges (positive) or discharges (negative) at the power a Device
    Energy Management PowerAdjustRequest asks, until full or empty."""
    from clusters.energy import DeviceEnergyManagementServer
    from clusters.identify import IdentifyServer
    from clusters.storage import StorageCellServer
    if not 1 <= capacity_kwh <= 200 or not 100 <= max_watts <= 20_000:
        raise MatterError(Status.CONSTRAINT_ERROR, "battery: capacity_kwh 1..200 and max_watts 100..20000")
    S = C.DeviceEnergyManagement.Structs
    limit = int(max_watts * 1000)
    cell = StorageCellServer(capacity_kwh=capacity_kwh, percent=50.0, EndpointList=[1])
    power = lambda: cell.power_watts  # noqa: E731
    dem = DeviceEnergyManagementServer(
        power_source=power, ESAType=C.DeviceEnergyManagement.Enums.ESATypeEnum.kBatteryStorage,
        ESACanGenerate=True, AbsMinPower=-limit, AbsMaxPower=limit,
        PowerAdjustmentCapability=S.PowerAdjustCapabilityStruct(
            powerAdjustCapability=[S.PowerAdjustStruct(minPower=-limit, maxPower=limit, minDuration=60,
                                                       maxDuration=86_400)],
            cause=C.DeviceEnergyManagement.Enums.PowerAdjustReasonEnum.kNoAdjustment))
    meters = _meters(power, hooked=cell, exported=True, more=(dem,))
    dem.listeners.append(lambda s, n: n == "ESAState" and cell.set_power(dem.requested_power or 0.0))
    dem.request_hooks.append(lambda: cell.set_power(dem.requested_power or 0.0))   # a new target while active
    ep = _endpoint(1, [BATTERY_STORAGE, POWER_SOURCE, ELECTRICAL_SENSOR, DEVICE_ENERGY_MANAGEMENT],
                   IdentifyServer(), cell, *meters, dem)
    ep.tags = ((POWER_SOURCE_NAMESPACE, 3, "Battery"),)
    return [ep]


# ---- more controllers, HVAC and media ---------------------------------------------------------
def _thermostat(**_: Any) -> list[Endpoint]:
    """A wall thermostat for the room's heating and cooling."""
    from clusters.identify import IdentifyServer
    from clusters.thermostat import ThermostatServer, ThermostatUserInterfaceConfigurationServer
    return [_endpoint(1, [THERMOSTAT], IdentifyServer(), ThermostatServer(heating=True, cooling=True, SystemMode=0),
                      ThermostatUserInterfaceConfigurationServer())]


def _basic_video_player(**_: Any) -> list[Endpoint]:
    """A streaming box: on/off, playback and a remote's keys (no volume of its own)."""
    from clusters.media import KeypadInputServer, MediaPlaybackServer
    from clusters.onoff import OnOffServer
    return [_endpoint(1, [BASIC_VIDEO_PLAYER], OnOffServer(), MediaPlaybackServer(), KeypadInputServer())]


def _client_controller(device_type: tuple[int, int], clients: tuple[int, ...], identify: bool = True) -> list[Endpoint]:
    """`identify`: the type lists an Identify server (the video clients' types do not)."""
    from clusters.identify import IdentifyServer
    from clusters.switches import BindingServer
    servers = (IdentifyServer(), BindingServer()) if identify else (BindingServer(),)
    return [_endpoint(1, [device_type], *servers, clients=clients)]


def _pump_controller(**_: Any) -> list[Endpoint]:
    return _client_controller(PUMP_CONTROLLER, (C.OnOff.id, C.PumpConfigurationAndControl.id, C.Identify.id))


def _window_covering_controller(**_: Any) -> list[Endpoint]:
    return _client_controller(WINDOW_COVERING_CONTROLLER, (C.WindowCovering.id, C.Identify.id))


def _video_remote_control(bound_to: list[str] | None = None, **_: Any) -> list[Endpoint]:
    """A TV remote: `Home.press(id, "toggle")` switches what it is bound to (`bound_to`)."""
    _controller(COLOR_DIMMER_SWITCH, bound_to)   # validates bound_to
    return _client_controller(VIDEO_REMOTE_CONTROL, (C.OnOff.id, C.LevelControl.id, C.MediaPlayback.id,
                                                     C.KeypadInput.id, C.Channel.id), identify=False)


def _casting_video_client(**_: Any) -> list[Endpoint]:
    """A phone app that casts to a video player (its client clusters and a Binding list)."""
    return _client_controller(CASTING_VIDEO_CLIENT, (C.OnOff.id, C.KeypadInput.id, C.ContentLauncher.id,
                                                     C.ApplicationBasic.id), identify=False)


def _mode_select(labels: list[str] | None = None, description: str = "Drink", **_: Any) -> list[Endpoint]:
    """A device with modes of its own (by default a coffee machine's drinks)."""
    from clusters.mode_select import ModeSelectServer
    return [_endpoint(1, [MODE_SELECT], ModeSelectServer(description=description,
                                                          labels=tuple(labels or ("Espresso", "Lungo", "Cappuccino"))))]


def _control_bridge(bound_to: list[str] | None = None, **_: Any) -> list[Endpoint]:
    """A lighting control panel: it switches, dims and colours what it is bound to."""
    _controller(COLOR_DIMMER_SWITCH, bound_to)   # validates bound_to
    return _client_controller(CONTROL_BRIDGE, _controller_clients(COLOR_DIMMER_SWITCH))

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
    ("oven", "Oven", OVEN, _oven, 0x814B, ("kitchen",), True),
    ("cooktop", "Cooktop", COOKTOP, _cooktop, 0x814C, ("kitchen",), True),
    ("cook_surface", "Cook Surface", COOK_SURFACE, _cook_surface, 0x814D, ("kitchen",), True),
    ("microwave_oven", "Microwave Oven", MICROWAVE_OVEN, _microwave_oven, 0x814E, ("kitchen",), True),
    ("extractor_hood", "Extractor Hood", EXTRACTOR_HOOD, _extractor_hood, 0x814F, ("kitchen",), True),
    ("water_heater", "Water Heater", WATER_HEATER, _water_heater, 0x8150, ("utility_room", "bathroom", "garage"),
     True),
    ("water_valve", "Water Valve", WATER_VALVE, _water_valve, 0x8151, ("garden", "utility_room", "bathroom"), False),
    ("pump", "Pump", PUMP, _pump, 0x8152, ("utility_room", "garden", "garage"), False),
    ("evse", "EV Charger", ENERGY_EVSE, _evse, 0x8153, ("garage",), True),
    ("solar_power", "Solar Power", SOLAR_POWER, _solar_power, 0x8154, ("garage", "utility_room", "garden"), True),
    ("battery_storage", "Battery Storage", BATTERY_STORAGE, _battery_storage, 0x8155,
     ("garage", "utility_room"), True),
    ("thermostat", "Thermostat", THERMOSTAT, _thermostat, 0x8156, ("living_room", "hallway", "bedroom"), False),
    ("basic_video_player", "Basic Video Player", BASIC_VIDEO_PLAYER, _basic_video_player, 0x8157,
     ("living_room", "bedroom"), False),
    ("pump_controller", "Pump Controller", PUMP_CONTROLLER, _pump_controller, 0x8158, ("utility_room", "garden"),
     False),
    ("window_covering_controller", "Window Covering Controller", WINDOW_COVERING_CONTROLLER,
     _window_covering_controller, 0x8159, ("living_room", "bedroom"), False),
    ("control_bridge", "Control Bridge", CONTROL_BRIDGE, _control_bridge, 0x815A, ("living_room", "hallway"), False),
    ("video_remote_control", "Video Remote Control", VIDEO_REMOTE_CONTROL, _video_remote_control, 0x815B,
     ("living_room", "bedroom"), False),
    ("casting_video_client", "Casting Video Client", CASTING_VIDEO_CLIENT, _casting_video_client, 0x815C,
     ("living_room", "bedroom", "office"), False),
    ("mode_select", "Mode Select", MODE_SELECT, _mode_select, 0x815D, ("kitchen", "living_room"), False),
]

#: type key -> the room kinds it belongs in (a home generator's prior; also DeviceType.room_kinds).
ROOM_KINDS: dict[str, tuple[str, ...]] = {}
#: type keys with physics of their own or coupled to the room's (a cavity, a tank, a car, the sun).
PHYSICS: set[str] = set()
for _key, _label, (_dt, _rev), _build, _product_id, _rooms, _physics in _TYPES:
    register(DeviceType(_key, _label, _dt, _rev, _build, product_id=_product_id, room_kinds=_rooms))
    ROOM_KINDS[_key] = _rooms
    if _physics:
        PHYSICS.add(_key)
