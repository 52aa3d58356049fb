"""The 17 SimuHome device types (SimuHome Appendix D) as Matter compositions.

Each builder returns the application endpoints; `create_device` adds root endpoint 0 with
Descriptor and BasicInformation. Device type ids and revisions are those of the Matter 1.3
Device Library. Where SimuHome names a device Matter does not define, the nearest spec
composition is used and said so:

- humidifier / dehumidifier: Matter has no such device types. They are a Fan (0x002B)
  whose endpoint is also a Humidity Sensor (0x0307): FanControl drives the (de)humidifying
  fan, RelativeHumidityMeasurement reports the room.
- freezer / refrigerator: a Refrigerator (0x0070) endpoint with the cabinet mode cluster and
  Refrigerator Alarm, and Temperature Controlled Cabinet (0x0071) endpoints with
  TemperatureControl and the cabinet's TemperatureMeasurement, each tagged (Descriptor
  TagList) Refrigerator or Freezer: the refrigerator is a fridge-freezer (fridge cabinet on
  endpoint 2, freezer on 3), the freezer has one freezer cabinet on endpoint 2.
- heat pump: endpoint 1 is Heat Pump (0x0309) + Power Source + Electrical Sensor + Device
  Energy Management; endpoint 2 is the Thermostat (0x0301) it is controlled by.
- laundry dryer: Matter has no Laundry Dryer Mode cluster; it uses Laundry Washer Mode.
- TV: Basic Video Player (0x0028) and Speaker (0x0022) on one endpoint: its LevelControl is the
  volume, which the Speaker device type brings (Basic Video Player has no LevelControl).
- window covering: SimuHome's "Window Covering Controller" carries the WindowCovering
  *server*, which is the Window Covering device type (0x0202).
Lights and window coverings carry Groups (mandatory for them, as for the Fan device type
that fans, humidifiers and dehumidifiers are) and Scenes Management, as real products do;
group membership is kept per fabric, group multicast is not modelled.

`room_sensor` is not a SimuHome device: it is the per-room sensor node (see
twin/room_sensors.py). It lives in `NODE_ONLY_TYPES`, not `DEVICE_TYPES`, so home files,
tools and cluster docs keep offering exactly the 17 SimuHome types.
"""
from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from clusters.device import DEVICE_TYPES as DEVICE_TYPES  # re-exported: the registry this module fills
from clusters.device import Device, DeviceType, Endpoint, register
from clusters.device_types import (  # noqa: F401 - re-exported: physics and docs import them from here
    AIR_PURIFIER,
    AIR_QUALITY_SENSOR,
    BASIC_VIDEO_PLAYER,
    COLOR_TEMPERATURE_LIGHT,
    CONTACT_SENSOR,
    COOK_SURFACE,
    DEVICE_ENERGY_MANAGEMENT,
    DIMMABLE_LIGHT,
    DISHWASHER,
    DOOR_LOCK,
    ELECTRICAL_SENSOR,
    EXTENDED_COLOR_LIGHT,
    EXTRACTOR_HOOD,
    FAN,
    FLOW_SENSOR,
    HEAT_PUMP,
    HUMIDITY_SENSOR,
    LAUNDRY_DRYER,
    LAUNDRY_WASHER,
    LIGHT_SENSOR,
    MICROWAVE_OVEN,
    OCCUPANCY_SENSOR,
    ON_OFF_LIGHT,
    POWER_SOURCE,
    PRESSURE_SENSOR,
    RAIN_SENSOR,
    REFRIGERATOR,
    ROBOTIC_VACUUM_CLEANER,
    ROOM_AIR_CONDITIONER,
    SMOKE_CO_ALARM,
    SPEAKER,
    TEMPERATURE_CONTROLLED_CABINET,
    TEMPERATURE_SENSOR,
    THERMOSTAT,
    WATER_FREEZE_DETECTOR,
    WATER_HEATER,
    WATER_LEAK_DETECTOR,
    WINDOW_COVERING,
)
from clusters.status import MatterError, Status

if TYPE_CHECKING:   # each builder imports its servers when it runs: a home builds only the data
    # model of the clusters its devices serve (clusters/lazy_objects.py)
    from clusters.energy import PowerSourceServer
    from clusters.fan_control import FanControlServer
    from clusters.modes import ModeOption


def _endpoint(endpoint_id: int, device_types: list[tuple[int, int]], *servers: Any) -> Endpoint:
    ep = Endpoint(endpoint_id, device_types)
    for server in servers:
        ep.add(server)
    return ep


def _fan(auto: bool = False) -> FanControlServer:
    from clusters.fan_control import FanControlServer
    return FanControlServer(auto=auto)


# ---- builders: (**options) -> application endpoints -------------------------------------
def _on_off_light(**_: Any) -> list[Endpoint]:
    from clusters.identify import IdentifyServer
    from clusters.onoff import OnOffServer
    from clusters.scenes import GroupsServer, ScenesManagementServer
    return [_endpoint(1, [ON_OFF_LIGHT], IdentifyServer(), GroupsServer(), ScenesManagementServer(),
                      OnOffServer(lighting=True))]


# `level_frequency`: [min, max] Hz gives LevelControl the Frequency feature (SimuHome's
# lights and TV carry its attributes); `level_startup` gives the TV's LevelControl the
# optional RemainingTime and StartUpCurrentLevel.
def _dimmable_light(level_frequency: list[int] | None = None, **_: Any) -> list[Endpoint]:
    from clusters.identify import IdentifyServer
    from clusters.level_control import LevelControlServer
    from clusters.onoff import OnOffServer
    from clusters.scenes import GroupsServer, ScenesManagementServer
    return [_endpoint(1, [DIMMABLE_LIGHT], IdentifyServer(), GroupsServer(), ScenesManagementServer(),
                      OnOffServer(lighting=True), LevelControlServer(on_off=True, lighting=True, CurrentLevel=254,
                                                                     frequency=level_frequency))]


def _air_conditioner(heating: bool = True, cooling: bool = True, **_: Any) -> list[Endpoint]:
    # heating=False: a cooling-only unit (most room ACs; SimuHome's), cooling=False: heat only
    from clusters.identify import IdentifyServer
    from clusters.onoff import OnOffServer
    from clusters.thermostat import ThermostatServer, ThermostatUserInterfaceConfigurationServer
    thermostat = ThermostatServer(heating=heating, cooling=cooling, presets=True, SystemMode=0)
    return [_endpoint(1, [ROOM_AIR_CONDITIONER], IdentifyServer(), OnOffServer(dead_front=True),
                      thermostat, ThermostatUserInterfaceConfigurationServer(), _fan())]


def _air_purifier(**_: Any) -> list[Endpoint]:
    from clusters.filters import ActivatedCarbonFilterMonitoringServer, HepaFilterMonitoringServer
    from clusters.identify import IdentifyServer
    from clusters.onoff import OnOffServer
    onoff, fan = OnOffServer(), _fan(auto=True)
    usage = lambda: fan.get("PercentCurrent") / 100 if onoff.get("OnOff") else 0.0  # noqa: E731
    filters = [HepaFilterMonitoringServer(usage=usage), ActivatedCarbonFilterMonitoringServer(usage=usage)]

    def air_changed(server: Any, name: str) -> None:
        if name in ("OnOff", "PercentCurrent"):
            for monitor in filters:
                monitor.usage_changed()
    onoff.listeners.append(air_changed)
    fan.listeners.append(air_changed)
    return [_endpoint(1, [AIR_PURIFIER], IdentifyServer(), onoff, fan, *filters)]


def _fan_device(**_: Any) -> list[Endpoint]:
    # a pedestal fan as sold: ten speeds, Auto, oscillation, natural/sleep wind, reverse airflow
    from clusters.fan_control import FanControlServer
    from clusters.identify import IdentifyServer
    from clusters.onoff import OnOffServer
    from clusters.scenes import GroupsServer
    fan = FanControlServer(auto=True, speed_max=10, rocking=True, wind=True, airflow_direction=True)
    return [_endpoint(1, [FAN], IdentifyServer(), GroupsServer(), OnOffServer(), fan)]   # Fan: Groups is M


def _humidity_fan(**_: Any) -> list[Endpoint]:
    from clusters.identify import IdentifyServer
    from clusters.measurement import RelativeHumidityMeasurementServer
    from clusters.onoff import OnOffServer
    from clusters.scenes import GroupsServer
    return [_endpoint(1, [FAN, HUMIDITY_SENSOR], IdentifyServer(), GroupsServer(), OnOffServer(), _fan(),
                      RelativeHumidityMeasurementServer(MinMeasuredValue=0, MaxMeasuredValue=10000))]


def _timed(modes: tuple[ModeOption, ...] | list[Any], cycles: dict[str, Any] | None) -> tuple[ModeOption, ...]:
    """Modes whose cycles a home file gives (`options: {cycles: {<mode label>: [[phase,
    seconds], ...]}}`, as `twin calibrate` measures them); other modes keep theirs.
    `modes` may come from the home file too (`options: {modes: [{label, mode, tags, cycle}]}`,
    for homes that number their modes otherwise, e.g. an imported SimuHome episode)."""
    from clusters.modes import as_mode_option
    from clusters.operational_state import normalize_cycle
    modes = tuple(as_mode_option(m) for m in modes)
    if not cycles:
        return modes
    if not isinstance(cycles, dict):
        raise ValueError("cycles: expected a mapping of mode label -> [[phase, seconds], ...]")
    labels = [m.label for m in modes]
    unknown = sorted(set(cycles) - set(labels))
    if unknown:
        raise ValueError(f"cycles: no mode {', '.join(map(repr, unknown))}; modes: {', '.join(labels)}")
    return tuple(dataclasses.replace(m, cycle=tuple(normalize_cycle(cycles[m.label]))) if m.label in cycles else m
                 for m in modes)


def _dishwasher(cycles: dict[str, Any] | None = None, modes: list[Any] | None = None, **_: Any) -> list[Endpoint]:
    from clusters.alarms import DishwasherAlarmServer
    from clusters.modes import DishwasherModeServer
    from clusters.onoff import OnOffServer
    from clusters.operational_state import OperationalStateServer
    return [_endpoint(1, [DISHWASHER], OnOffServer(dead_front=True), OperationalStateServer(),
                      DishwasherModeServer(modes=_timed(modes or DishwasherModeServer.default_modes, cycles)),
                      DishwasherAlarmServer())]


def _laundry_washer(cycles: dict[str, Any] | None = None, modes: list[Any] | None = None,
                    temperature_setpoint: bool = False, **_: Any) -> list[Endpoint]:
    """`temperature_setpoint`: TemperatureControl by number (a setpoint, as SimuHome's washer)
    instead of the levels real washers use."""
    from clusters.laundry import LaundryWasherControlsServer
    from clusters.modes import LaundryWasherModeServer
    from clusters.onoff import OnOffServer
    from clusters.operational_state import OperationalStateServer
    from clusters.temperature_control import TemperatureControlServer
    temperature = (TemperatureControlServer(step=False, TemperatureSetpoint=4000, MinTemperature=2000,
                                            MaxTemperature=9000)
                   if temperature_setpoint else TemperatureControlServer(levels=True, **_WASHER_TEMPERATURES))
    return [_endpoint(1, [LAUNDRY_WASHER], OnOffServer(dead_front=True), OperationalStateServer(),
                      LaundryWasherModeServer(modes=_timed(modes or LaundryWasherModeServer.default_modes, cycles)),
                      LaundryWasherControlsServer(), temperature)]


def _laundry_dryer(cycles: dict[str, Any] | None = None, modes: list[Any] | None = None,
                   **_: Any) -> list[Endpoint]:
    from clusters.laundry import LaundryDryerControlsServer
    from clusters.modes import DRYER_MODES, LaundryWasherModeServer
    from clusters.onoff import OnOffServer
    from clusters.operational_state import OperationalStateServer
    return [_endpoint(1, [LAUNDRY_DRYER], OnOffServer(dead_front=True), OperationalStateServer(),
                      LaundryWasherModeServer(modes=_timed(modes or DRYER_MODES, cycles)),
                      LaundryDryerControlsServer())]


#: Semantic tags (Matter Standard Namespaces): namespace Refrigerator (0x41), its tags
#: Refrigerator (0) and Freezer (1), telling a fridge's cabinets apart in Descriptor.TagList.
REFRIGERATOR_NAMESPACE, FRIDGE_TAG, FREEZER_TAG = 0x41, 0, 1
FRIDGE_RANGE = (400, 100, 700)         # setpoint, min, max (0.01 °C)
FREEZER_RANGE = (-1800, -2400, -1500)


def _cabinet(endpoint_id: int, tag: int, setpoint: int, low: int, high: int) -> Endpoint:
    # Cabinet temperatures are not the room's: the measurement is stored, and follows the
    # setpoint (the compressor is assumed to hold it).
    from clusters.measurement import TemperatureMeasurementServer
    from clusters.temperature_control import TemperatureControlServer
    control = TemperatureControlServer(TemperatureSetpoint=setpoint, MinTemperature=low,
                                       MaxTemperature=high, Step=100)
    measurement = TemperatureMeasurementServer(MeasuredValue=setpoint, MinMeasuredValue=low - 500,
                                               MaxMeasuredValue=high + 500)
    control.listeners.append(lambda server, name: name == "TemperatureSetpoint"
                             and measurement.set("MeasuredValue", server.get(name)))
    ep = _endpoint(endpoint_id, [TEMPERATURE_CONTROLLED_CABINET], control, measurement)
    ep.tags = ((REFRIGERATOR_NAMESPACE, tag, "Freezer" if tag == FREEZER_TAG else "Refrigerator"),)
    return ep


def _fridge_body(cabinets: tuple[int, ...], modes: list[Any] | None = None) -> Endpoint:
    """The Refrigerator endpoint, composed of its cabinets' endpoints (its PartsList)."""
    from clusters.alarms import RefrigeratorAlarmServer
    from clusters.modes import RefrigeratorAndTemperatureControlledCabinetModeServer
    body = _endpoint(1, [REFRIGERATOR], RefrigeratorAndTemperatureControlledCabinetModeServer(modes=modes),
                     RefrigeratorAlarmServer())
    body.children = cabinets
    return body


def _refrigerator(modes: list[Any] | None = None, **_: Any) -> list[Endpoint]:
    """A fridge-freezer, as most sold: the fridge cabinet on endpoint 2, the freezer on 3."""
    return [_fridge_body((2, 3), modes), _cabinet(2, FRIDGE_TAG, *FRIDGE_RANGE),
            _cabinet(3, FREEZER_TAG, *FREEZER_RANGE)]


def _freezer(modes: list[Any] | None = None, **_: Any) -> list[Endpoint]:
    return [_fridge_body((2,), modes), _cabinet(2, FREEZER_TAG, *FREEZER_RANGE)]


def _electrical_sensor(load_watts: float = 120.0, **_: Any) -> list[Endpoint]:
    from clusters.energy import ElectricalEnergyMeasurementServer, ElectricalPowerMeasurementServer, PowerTopologyServer
    power = lambda: load_watts  # noqa: E731 - the metered circuit's steady load
    return [_endpoint(1, [ELECTRICAL_SENSOR], PowerTopologyServer(),
                      ElectricalPowerMeasurementServer(power_source=power),
                      ElectricalEnergyMeasurementServer(power_source=power))]


def _heat_pump(heating: bool = True, cooling: bool = True, **_: Any) -> list[Endpoint]:
    # cooling=False: a heating-only pump (SimuHome's), heating=False: cooling only
    from clusters.energy import (
        DeviceEnergyManagementServer,
        ElectricalEnergyMeasurementServer,
        ElectricalPowerMeasurementServer,
        PowerSourceServer,
        PowerTopologyServer,
    )
    from clusters.identify import IdentifyServer
    from clusters.thermostat import ThermostatServer, ThermostatUserInterfaceConfigurationServer
    thermostat = ThermostatServer(heating=heating, cooling=cooling, presets=True, SystemMode=0)
    running = lambda: 0.0 if int(thermostat.get("SystemMode")) == 0 else 1800.0  # noqa: E731
    meters = [ElectricalPowerMeasurementServer(power_source=running),
              ElectricalEnergyMeasurementServer(power_source=running),
              DeviceEnergyManagementServer(power_source=running)]

    def power_changed(server: Any, name: str) -> None:
        # Energy is integrated in closed form between power changes: re-anchor on each.
        if name == "SystemMode":
            for meter in meters:
                meter.reanchor()
    thermostat.listeners.append(power_changed)
    pump = _endpoint(1, [HEAT_PUMP, POWER_SOURCE, ELECTRICAL_SENSOR, DEVICE_ENERGY_MANAGEMENT],
                     PowerSourceServer(), PowerTopologyServer(), *meters)
    pump.children = (2,)     # the Heat Pump is composed of the Thermostat that controls it
    return [pump,
            _endpoint(2, [THERMOSTAT], IdentifyServer(), thermostat, ThermostatUserInterfaceConfigurationServer())]


#: A robot vacuum's battery: 0.02 %/s while it works (a full charge cleans for about 83 min),
#: 0.01 %/s back on its dock (about 2.8 h from empty to full).
RVC_DRAIN, RVC_CHARGE = 0.02, 0.01
DEFAULT_AREAS = ("Living room", "Kitchen", "Bedroom")


def _robot_vacuum_cleaner(areas: list[str] | None = None, run_modes: list[Any] | None = None,
                          clean_modes: list[Any] | None = None, battery_drain: float = RVC_DRAIN,
                          **_: Any) -> list[Endpoint]:
    """`areas`: the rooms it can clean (a home passes its rooms' names); `run_modes` and
    `clean_modes`: SupportedModes of its mode clusters, when a home numbers them otherwise;
    `battery_drain`: % of charge per second of work (0: it never needs to go home to charge)."""
    from clusters.energy import PS, PowerSourceServer
    from clusters.identify import IdentifyServer
    from clusters.modes import RvcCleanModeServer, RvcRunModeServer
    from clusters.operational_state import RvcOperationalStateServer
    from clusters.service_area import ServiceAreaServer
    ops = RvcOperationalStateServer()
    E = ops.E

    def battery_rate() -> float:
        state = ops.get("OperationalState")
        if state in (E.kRunning, E.kSeekingCharger):
            return -battery_drain
        return RVC_CHARGE if state in (E.kDocked, E.kCharging) else 0.0

    battery = PowerSourceServer(battery=True, rechargeable=True, battery_rate=battery_rate,
                                EndpointList=[1], BatPercentRemaining=200)
    ops.listeners.append(lambda server, name: name == "OperationalState" and battery.battery_changed())

    def low_battery(server: Any, name: str) -> None:
        # a robot whose battery turns critical mid-run goes back to charge (Resume continues)
        if name == "BatChargeLevel" and server.get(name) == PS.Enums.BatChargeLevelEnum.kCritical \
                and ops.get("OperationalState") == E.kRunning:
            ops.GoHome()
    battery.listeners.append(low_battery)
    return [_endpoint(1, [ROBOTIC_VACUUM_CLEANER, POWER_SOURCE], IdentifyServer(), RvcRunModeServer(modes=run_modes),
                      RvcCleanModeServer(modes=clean_modes), ops, ServiceAreaServer(areas or DEFAULT_AREAS), battery)]


def _tv(level_frequency: list[int] | None = None, level_startup: bool = False, **_: Any) -> list[Endpoint]:
    from clusters.level_control import LevelControlServer
    from clusters.media import ChannelServer, KeypadInputServer, MediaPlaybackServer
    from clusters.onoff import OnOffServer
    volume = LevelControlServer(on_off=True, lighting=False, CurrentLevel=30, MinLevel=0, MaxLevel=100,
                                frequency=level_frequency,
                                optional=("RemainingTime", "StartUpCurrentLevel") if level_startup else ())
    return [_endpoint(1, [BASIC_VIDEO_PLAYER, SPEAKER], OnOffServer(), volume, MediaPlaybackServer(),
                      ChannelServer(), KeypadInputServer())]


def _window_covering(lift_travel_s: float | None = None, tilt_travel_s: float | None = None,
                     **_: Any) -> list[Endpoint]:
    from clusters.identify import IdentifyServer
    from clusters.scenes import GroupsServer, ScenesManagementServer
    from clusters.window_covering import WindowCoveringServer
    return [_endpoint(1, [WINDOW_COVERING], IdentifyServer(), GroupsServer(), ScenesManagementServer(),
                      WindowCoveringServer(tilt=True, lift_travel_s=lift_travel_s, tilt_travel_s=tilt_travel_s))]


def _room_sensor(**_: Any) -> list[Endpoint]:
    """A room's sensors: one endpoint per sensor device type, each with its mandatory Identify.

    One endpoint each, as the spec composes multi-sensor products: Temperature, Humidity and
    Light Sensor each require their own measurement cluster plus Identify, a cluster can
    appear only once per endpoint, and Light Sensor is no subset of another type. PM10 sits
    on an Air Quality Sensor, whose AirQuality cluster is mandatory (derived from PM10).
    Ranges cover what home files allow (-40..60 °C, 0..100 %RH, PM10 up to 2000 µg/m³).
    """
    from clusters.air_quality import AirQualityServer
    from clusters.identify import IdentifyServer
    from clusters.measurement import (
        IlluminanceMeasurementServer,
        Pm10ConcentrationMeasurementServer,
        RelativeHumidityMeasurementServer,
        TemperatureMeasurementServer,
    )
    return [_endpoint(1, [TEMPERATURE_SENSOR], IdentifyServer(),
                      TemperatureMeasurementServer(MinMeasuredValue=-4000, MaxMeasuredValue=6000)),
            _endpoint(2, [HUMIDITY_SENSOR], IdentifyServer(),
                      RelativeHumidityMeasurementServer(MinMeasuredValue=0, MaxMeasuredValue=10000)),
            _endpoint(3, [LIGHT_SENSOR], IdentifyServer(),
                      IlluminanceMeasurementServer(MinMeasuredValue=1, MaxMeasuredValue=0xFFFE)),
            _endpoint(4, [AIR_QUALITY_SENSOR], IdentifyServer(), AirQualityServer(),
                      Pm10ConcentrationMeasurementServer(MinMeasuredValue=0.0, MaxMeasuredValue=2000.0))]


#: A washer's wash temperatures as its dial names them (TemperatureLevel, as real washers do).
_WASHER_TEMPERATURES = dict(SupportedTemperatureLevels=["Cold", "20°C", "30°C", "40°C", "60°C", "90°C"],
                            SelectedTemperatureLevel=3)

#: (key, label, device type, builder, ProductID). A ProductID is fixed for good once given:
#: controllers remember it (and the DAC and CD carry it), so a type keeps its number however
#: the list grows. Ranges: 0x8001-0x80FF the SimuHome types, room_sensor (0x8012) and the
#: bridge (0x8013, clusters/aggregator.py); 0x8100-0x813F locks and access control;
#: 0x8140-0x81BF appliances. Take the next free number in your range, never reuse one;
#: tests/clusters/test_devices.py pins every one.
_TYPES = [
    ("air_conditioner", "Air Conditioner", ROOM_AIR_CONDITIONER, _air_conditioner, 0x8001),
    ("air_purifier", "Air Purifier", AIR_PURIFIER, _air_purifier, 0x8002),
    ("dehumidifier", "Dehumidifier", FAN, _humidity_fan, 0x8003),
    ("dimmable_light", "Dimmable Light", DIMMABLE_LIGHT, _dimmable_light, 0x8004),
    ("dishwasher", "Dishwasher", DISHWASHER, _dishwasher, 0x8005),
    ("electrical_sensor", "Electrical Sensor", ELECTRICAL_SENSOR, _electrical_sensor, 0x8006),
    ("fan", "Fan", FAN, _fan_device, 0x8007),
    ("freezer", "Freezer", REFRIGERATOR, _freezer, 0x8008),
    ("heat_pump", "Heat Pump", HEAT_PUMP, _heat_pump, 0x8009),
    ("humidifier", "Humidifier", FAN, _humidity_fan, 0x800A),
    ("laundry_dryer", "Laundry Dryer", LAUNDRY_DRYER, _laundry_dryer, 0x800B),
    ("laundry_washer", "Laundry Washer", LAUNDRY_WASHER, _laundry_washer, 0x800C),
    ("on_off_light", "On/Off Light", ON_OFF_LIGHT, _on_off_light, 0x800D),
    ("refrigerator", "Refrigerator", REFRIGERATOR, _refrigerator, 0x800E),
    ("robot_vacuum_cleaner", "Robot Vacuum Cleaner", ROBOTIC_VACUUM_CLEANER, _robot_vacuum_cleaner, 0x800F),
    ("tv", "TV", BASIC_VIDEO_PLAYER, _tv, 0x8010),
    ("window_covering", "Window Covering", WINDOW_COVERING, _window_covering, 0x8011),
]
for _key, _label, (_dt, _rev), _build, _product_id in _TYPES:
    register(DeviceType(_key, _label, _dt, _rev, _build, product_id=_product_id))


# ---- locks and sensors of a real home (issue #27; ProductIDs 0x8100-0x813F) -------------------
#: The device types whose BooleanState the home drives (twin/sensors.py), by what they detect.
BOOLEAN_SENSORS = {CONTACT_SENSOR[0]: "contact", WATER_LEAK_DETECTOR[0]: "leak",
                   WATER_FREEZE_DETECTOR[0]: "freeze", RAIN_SENSOR[0]: "rain"}


#: What one action costs a lock's or sensor's battery (% of a full charge): a bolt thrown (a set
#: of AA cells lasts ~5,000 operations), a change reported over the radio, a self-test's siren.
BOLT_PERCENT, REPORT_PERCENT, SELF_TEST_PERCENT = 0.02, 0.002, 0.05


def _battery(*watched: tuple[Any, str, float]) -> PowerSourceServer:
    """A user-replaceable battery powering endpoint 1 (door locks and sensors are battery products),
    drained by each change of the `watched` (server, attribute, percent) (PowerSourceServer.drain)."""
    from clusters.energy import PS, PowerSourceServer
    battery = PowerSourceServer(battery=True, EndpointList=[1],
                                BatReplaceability=PS.Enums.BatReplaceabilityEnum.kUserReplaceable)
    for server, attribute, percent in watched:
        server.listeners.append(lambda s, name, a=attribute, p=percent: name == a and battery.drain(p))
    return battery


def _sleepy(endpoints: list[Endpoint], sleepy: bool, slow_poll_ms: int = 3000,
            idle_mode_s: int = 60, lit_slow_poll_ms: int | None = None) -> list[Endpoint]:
    """A battery product as a Thread sleepy end device: IcdManagement on the root endpoint (its
    slow and fast polling, and `idle_mode_s`, how often it wakes to send Check-In messages;
    `lit_slow_poll_ms` makes it a Long Idle Time ICD; `create_device` puts `root_servers` there)."""
    from clusters.icd import IcdManagementServer
    if sleepy:
        endpoints[0].root_servers = (   # type: ignore[attr-defined]
            IcdManagementServer(slow_poll_ms=slow_poll_ms, lit_slow_poll_ms=lit_slow_poll_ms,
                                IdleModeDuration=int(idle_mode_s)),)
    return endpoints


def _door_lock(door_sensor: bool = True, auto_relock_s: int = 0, require_pin: bool = False,
               users: list[Any] | None = None, sleepy: bool = True, slow_poll_ms: int = 3000, idle_mode_s: int = 60,
               **_: Any) -> list[Endpoint]:
    """A keypad deadbolt. `users`: [{name, pin, type?}] programmed at install (user and PIN
    credential index 1, 2, ... in order); `auto_relock_s`: AutoRelockTime; `require_pin`:
    RequirePINforRemoteOperation; `door_sensor`: a door position sensor (DoorState)."""
    from clusters.door_lock import DoorLockServer
    from clusters.identify import IdentifyServer
    lock = DoorLockServer(door_sensor=door_sensor, AutoRelockTime=int(auto_relock_s),
                          RequirePINforRemoteOperation=bool(require_pin))
    lock.install_users(users or [])
    return _sleepy([_endpoint(1, [DOOR_LOCK, POWER_SOURCE], IdentifyServer(), lock,
                              _battery((lock, "LockState", BOLT_PERCENT)))],
                   sleepy, slow_poll_ms, idle_mode_s)


def _boolean_sensor(device_type: tuple[int, int], configuration: bool) -> Callable[..., list[Endpoint]]:
    def build(sleepy: bool = True, slow_poll_ms: int = 3000, idle_mode_s: int = 60,
              lit_slow_poll_ms: int | None = None, **_: Any) -> list[Endpoint]:
        from clusters.identify import IdentifyServer
        from clusters.sensors import BooleanStateConfigurationServer, BooleanStateServer
        state = BooleanStateServer()
        servers: list[Any] = [IdentifyServer(), state]
        if configuration:
            servers.append(BooleanStateConfigurationServer())
        return _sleepy([_endpoint(1, [device_type, POWER_SOURCE], *servers,
                                  _battery((state, "StateValue", REPORT_PERCENT)))],
                       sleepy, slow_poll_ms, idle_mode_s, lit_slow_poll_ms)
    return build


def _contact_sensor(mounted_on: str | None = None, sleepy: bool = True, slow_poll_ms: int = 3000,
                    idle_mode_s: int = 60, lit_slow_poll_ms: int | None = None, **_: Any) -> list[Endpoint]:
    """`mounted_on`: the id of the door lock or window covering whose opening it watches (the
    home wires it, twin/sensors.py); without it, scenario events open and close it. `sleepy`
    (battery sensors and locks): an ICD polling every `slow_poll_ms` (clusters/icd.py)."""
    return _boolean_sensor(CONTACT_SENSOR, False)(sleepy=sleepy, slow_poll_ms=slow_poll_ms,
                                                  idle_mode_s=idle_mode_s, lit_slow_poll_ms=lit_slow_poll_ms)


def _occupancy_sensor(hold_time_s: int = 60, sleepy: bool = True, slow_poll_ms: int = 3000,
                      idle_mode_s: int = 60, lit_slow_poll_ms: int | None = None, **_: Any) -> list[Endpoint]:
    from clusters.identify import IdentifyServer
    from clusters.sensors import OccupancySensingServer
    occupancy = OccupancySensingServer(HoldTime=int(hold_time_s))
    return _sleepy([_endpoint(1, [OCCUPANCY_SENSOR, POWER_SOURCE], IdentifyServer(), occupancy,
                              _battery((occupancy, "Occupancy", REPORT_PERCENT)))],
                   sleepy, slow_poll_ms, idle_mode_s, lit_slow_poll_ms)


def _smoke_co_alarm(co: bool = True, sleepy: bool = True, slow_poll_ms: int = 3000, idle_mode_s: int = 60,
                    expiry: bool = True, **_: Any) -> list[Endpoint]:
    from clusters.identify import IdentifyServer
    from clusters.sensors import SmokeCoAlarmServer
    alarm = SmokeCoAlarmServer(co=co, expiry=bool(expiry))
    battery = _battery((alarm, "TestInProgress", SELF_TEST_PERCENT / 2), (alarm, "ExpressedState", REPORT_PERCENT))
    battery.listeners.append(lambda server, name: name == "BatChargeLevel" and alarm.battery(int(server.get(name))))
    return _sleepy([_endpoint(1, [SMOKE_CO_ALARM, POWER_SOURCE], IdentifyServer(), alarm, battery)], sleepy,
                   slow_poll_ms, idle_mode_s)


def _measurement_sensor(device_type: tuple[int, int], server: str, **initial: Any) -> Callable[..., list[Endpoint]]:
    """`server`: the measurement server's class name, in clusters/measurement.py or clusters/sensors.py."""
    def build(**_: Any) -> list[Endpoint]:
        from clusters import measurement
        from clusters.identify import IdentifyServer
        cls = getattr(measurement, server, None)
        if cls is None:   # imported only for its servers: its module builds six clusters
            from clusters import sensors
            cls = getattr(sensors, server)
        return [_endpoint(1, [device_type], IdentifyServer(), cls(**initial))]
    return build


_SENSOR_TYPES = [
    ("door_lock", "Door Lock", DOOR_LOCK, _door_lock, 0x8100, ("hallway",)),
    ("contact_sensor", "Contact Sensor", CONTACT_SENSOR, _contact_sensor, 0x8101,
     ("hallway", "living_room", "bedroom", "kitchen")),
    ("occupancy_sensor", "Occupancy Sensor", OCCUPANCY_SENSOR, _occupancy_sensor, 0x8102,
     ("hallway", "living_room", "office")),
    ("smoke_co_alarm", "Smoke CO Alarm", SMOKE_CO_ALARM, _smoke_co_alarm, 0x8103, ("kitchen", "hallway", "bedroom")),
    ("water_leak_detector", "Water Leak Detector", WATER_LEAK_DETECTOR,
     _boolean_sensor(WATER_LEAK_DETECTOR, True), 0x8104, ("bathroom", "kitchen", "utility_room")),
    ("water_freeze_detector", "Water Freeze Detector", WATER_FREEZE_DETECTOR,
     _boolean_sensor(WATER_FREEZE_DETECTOR, True), 0x8105, ("utility_room",)),
    ("rain_sensor", "Rain Sensor", RAIN_SENSOR, _boolean_sensor(RAIN_SENSOR, True), 0x8106, ("hallway",)),
    ("pressure_sensor", "Pressure Sensor", PRESSURE_SENSOR, _measurement_sensor(
        PRESSURE_SENSOR, "PressureMeasurementServer", MinMeasuredValue=300, MaxMeasuredValue=1100),
     0x8107, ("utility_room",)),
    ("flow_sensor", "Flow Sensor", FLOW_SENSOR, _measurement_sensor(
        FLOW_SENSOR, "FlowMeasurementServer", MeasuredValue=0, MinMeasuredValue=0, MaxMeasuredValue=500),
     0x8108, ("utility_room",)),
    ("temperature_sensor", "Temperature Sensor", TEMPERATURE_SENSOR, _measurement_sensor(
        TEMPERATURE_SENSOR, "TemperatureMeasurementServer", MinMeasuredValue=-4000, MaxMeasuredValue=6000),
     0x8109, ("bedroom", "living_room", "office", "kids_room")),
    ("humidity_sensor", "Humidity Sensor", HUMIDITY_SENSOR, _measurement_sensor(
        HUMIDITY_SENSOR, "RelativeHumidityMeasurementServer", MinMeasuredValue=0, MaxMeasuredValue=10000),
     0x810A, ("bathroom", "bedroom")),
    ("light_sensor", "Light Sensor", LIGHT_SENSOR, _measurement_sensor(
        LIGHT_SENSOR, "IlluminanceMeasurementServer", MinMeasuredValue=1, MaxMeasuredValue=0xFFFE),
     0x810B, ("living_room", "hallway")),
]
#: The types the home drives beyond a measured room quantity (twin/sensors.py, twin/physics.py).
HOME_DRIVEN = frozenset({"door_lock", "contact_sensor", "occupancy_sensor", "smoke_co_alarm", "water_freeze_detector",
                         "rain_sensor", "pressure_sensor"})
for _key, _label, (_dt, _rev), _build, _product_id, _rooms in _SENSOR_TYPES:
    register(DeviceType(_key, _label, _dt, _rev, _build, product_id=_product_id, room_kinds=_rooms))

#: Device types served as Matter nodes that are not SimuHome devices (see the module docstring).
NODE_ONLY_TYPES: dict[str, DeviceType] = {
    "room_sensor": DeviceType("room_sensor", "Room Sensor", *TEMPERATURE_SENSOR, _room_sensor,
                              product_id=0x8012),
}


def create_device(device_id: str, type_key: str | DeviceType, rng: random.Random | None = None,
                  name: str | None = None, **options: Any) -> Device:
    """Build a device of a registered type (by key), or of a node-only type (given itself).

    `rng` draws the device's serial number and unique id (so a seeded home gives the same
    identities every time); `name` becomes the NodeLabel; `options` go to the builder.
    """
    from clusters.basic_information import BasicInformationServer
    device_type = type_key if isinstance(type_key, DeviceType) else DEVICE_TYPES.get(type_key)
    if device_type is None:
        raise MatterError(Status.NOT_FOUND, f"unknown device type {type_key!r}; known: "
                          + ", ".join(sorted(DEVICE_TYPES)))
    rng = rng or random.Random(device_id)
    if device_type.root is not None:
        return Device(device_id, device_type, device_type.build(**options), root_servers=device_type.root(name))
    endpoints = device_type.build(**options)
    # servers a builder asks for on the root endpoint (a sleepy device's IcdManagement)
    extra = [s for ep in endpoints for s in vars(ep).pop("root_servers", ())]
    identity = BasicInformationServer(
        VendorName="matter-twin", ProductName=f"Twin {device_type.label}"[:32],
        ProductID=device_type.product_id, NodeLabel=(name or device_id)[:32],
        SerialNumber=f"TW{rng.getrandbits(40):010X}", UniqueID=f"{rng.getrandbits(64):016X}",
        ProductLabel=device_type.label, PartNumber=f"TW-{device_type.product_id:04X}",
        # example.com (RFC 2606): the twin has no product page of its own
        ProductURL=f"https://example.com/matter-twin/{device_type.key}")
    return Device(device_id, device_type, endpoints, root_servers=[identity, *extra])


# ---- the rest of the device library (issue #27): registered by its own module ---------------
import clusters.devices_appl  # noqa: E402,F401 - registers its types after the SimuHome ones
