"""Room physics: how devices move temperature, humidity, PM10 and illuminance.

Model
-----
Temperature (°C), humidity (%RH) and PM10 (µg/m³) follow first-order dynamics. Per tick
(0.1 s), for each of them::

    x[n+1] = x[n] + k_amb * (ambient - x[n]) + Σ_d k_d * (target_d - x[n])

While the set of active terms is unchanged this is a linear recurrence with constant
coefficients, solved in closed form::

    x[n] = x* + (x0 - x*) * a**n,   a = 1 - K,   K = k_amb + Σ k_d,
    x*   = (k_amb * ambient + Σ k_d * target_d) / K

Each room variable keeps one anchor (x0, tick0) plus its terms; the value at any tick is
that formula. A new anchor is taken only when the terms change (a device input changed,
or a thermostat term switched on or off). Stepping tick by tick and fast-forwarding
evaluate the same formula at the same ticks, so they agree to the last bit.

Illuminance is instantaneous and computed on read: room daylight times the mean
openness of the room's window coverings, plus each light's full output times its on/off
state and level. Light transitions and moving covers are therefore exact at every tick.

Coefficients (per tick; "pct" is FanControl.PercentCurrent / 100)
------------------------------------------------------------------
=====================  ==========  =========================  ==========================
source                 variable    k per tick                 target
=====================  ==========  =========================  ==========================
ambient (envelope)     temperature 5e-6  (time const. ~5.6 h)  home ambient temperature
ambient (envelope)     humidity    5e-6                        home ambient humidity
ambient (infiltration) pm10        5e-6                        home ambient PM10
air conditioner        temperature 6.7e-5 * pct                Occupied{Cooling,Heating}Setpoint
heat pump (no fan)     temperature 5e-5                        Occupied{Cooling,Heating}Setpoint
humidifier             humidity    3e-5 * pct                  80 %RH
dehumidifier           humidity    3e-5 * pct                  25 %RH
air purifier           pm10        1.2e-4 * pct (~14 min)      0 µg/m³
fan                    (none)      -                           -
oven (cavity running)  temperature 3e-7                        the cavity's setpoint
cook surface           temperature 4e-7 * power/2300 W         150 °C
cook surface           humidity    2e-5 * power/2300 W         90 %RH (steam)
cook surface           pm10        2e-5 * power/2300 W         400 µg/m³ (frying smoke)
microwave (running)    humidity    5e-7                        90 %RH
extractor hood         pm10        2.5e-4 * pct                0 µg/m³ (grease and carbon filters)
extractor hood         humidity    5e-5 * pct                  50 %RH
on/off light           illuminance +300 lux when on            -
dimmable light         illuminance +400 lux * CurrentLevel/254 -
=====================  ==========  =========================  ==========================

Devices are matched by Matter device types and clusters (`air_role`, `LIGHT_TYPES`,
`measures_room`), never by our type keys, so clones of real products take part.

An AC at 100 % fan, 5 °C above its setpoint, cools by 6.7e-5 * 5 * 3000 ≈ 1 °C in the first
5 minutes. The ambient terms give every room a small pull towards the outdoor values.

Thermostats (any device with a Thermostat server; it is gated by an OnOff on the device
when there is one, and its strength follows FanControl.PercentCurrent when there is a
FanControl, else it is the fixed heat-pump value). SystemMode Cool/Precooling: pulls
towards OccupiedCoolingSetpoint, active only while x > setpoint. Heat/EmergencyHeat:
towards OccupiedHeatingSetpoint, active only while x < setpoint. Auto: both (the spec's
MinSetpointDeadBand keeps the two setpoints apart). Other modes (Off, FanOnly, Dry, Sleep)
have no thermal effect.

Why switching never chatters: a thermostat term is k * (setpoint - x) on the far side of
its setpoint and 0 on the near side, so it is continuous in x (it is zero at the switch
point). The total drift F(x) is then continuous and strictly decreasing (the ambient term
is strictly decreasing, each device term non-increasing), so it has exactly one zero, and
the per-tick map x -> x + F(x) is increasing (K < 1): trajectories approach that zero
monotonically and never cross back over a threshold they crossed. Numerically, switching
a term at its own setpoint moves x* to a weighted mean of the old x* and that setpoint,
which lies on the same side of the setpoint, so the next span keeps going the same way.

Finding the switch tick: within a span x[n] is monotone in n, so the first tick at which a
term's condition flips is found exactly by exponential search plus bisection over whole
ticks, evaluating the same closed form. The home jumps to that tick and re-anchors.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

from chip.clusters import Objects as Clusters
from chip.clusters.Types import Nullable

from clusters.devices import (
    AIR_PURIFIER,
    COLOR_TEMPERATURE_LIGHT,
    CONTACT_SENSOR,
    COOK_SURFACE,
    DIMMABLE_LIGHT,
    EXTENDED_COLOR_LIGHT,
    EXTRACTOR_HOOD,
    FAN,
    MICROWAVE_OVEN,
    ON_OFF_LIGHT,
    REFRIGERATOR,
    TEMPERATURE_CONTROLLED_CABINET,
    WATER_FREEZE_DETECTOR,
    WATER_HEATER,
    WINDOW_COVERING,
)
from clusters.devices_appl import SURFACE_WATTS
from clusters.lazy_objects import CLUSTER_ID
from twin.sensors import FREEZE_C, our_server, smoke_levels

VARIABLES = ("temperature", "humidity", "pm10")

#: The one coefficient table (see the module docstring).
COEFFICIENTS: dict[str, Any] = {
    "ambient_k": {"temperature": 5e-6, "humidity": 5e-6, "pm10": 5e-6},
    "ac_k_full_fan": 6.7e-5,
    "heat_pump_k": 5e-5,
    "humidifier": {"k_full_fan": 3e-5, "target": 80.0},
    "dehumidifier": {"k_full_fan": 3e-5, "target": 25.0},
    "air_purifier": {"k_full_fan": 1.2e-4, "target": 0.0},
    "light_lux": {"on_off_light": 300.0, "dimmable_light": 400.0},
    # Kitchen appliances (see `appliance_terms`); cook surface k's are at full power.
    "oven": {"k": 3e-7},
    "cook_surface_heat": {"k_full": 4e-7, "target": 150.0},
    "cook_surface_steam": {"k_full": 2e-5, "target": 90.0},
    "cook_surface_smoke": {"k_full": 2e-5, "target": 400.0},
    "microwave_steam": {"k": 5e-7, "target": 90.0},
    "hood_pm10": {"k_full_fan": 2.5e-4, "target": 0.0},
    "hood_humidity": {"k_full_fan": 5e-5, "target": 50.0},
    # An open door or window trades air with outside (time constant ~35 min for a window).
    "open_window_k": 5e-5,
    "open_door_k": 3e-5,
    # People warm (and humidify) a room: about a tenth of a small heater each.
    "occupant_heat": {"k_per_person": 2e-6, "target": 37.0},
    "occupant_moisture": {"k_per_person": 1e-6, "target": 90.0},
}



def with_overrides(overrides: dict[str, Any] | None) -> dict[str, Any]:
    """COEFFICIENTS with a home's calibrated values in place (`twin calibrate` writes them
    under `physics:` in the home file). Raises ValueError naming the bad key: every key must
    be one of the table's, every value a positive number (a k below 1)."""
    merged = {k: dict(v) if isinstance(v, dict) else v for k, v in COEFFICIENTS.items()}
    for key, value in (overrides or {}).items():
        if key not in COEFFICIENTS:
            raise ValueError(f"{key}: not a physics coefficient; known: {', '.join(COEFFICIENTS)}")
        default = COEFFICIENTS[key]
        if isinstance(default, dict):
            if not isinstance(value, dict):
                raise ValueError(f"{key}: expected a mapping of {', '.join(default)}")
            for sub, number in value.items():
                if sub not in default:
                    raise ValueError(f"{key}.{sub}: not a coefficient; known: {', '.join(default)}")
                merged[key][sub] = _coefficient(f"{key}.{sub}", number, sub != "target" and key != "light_lux")
        else:
            merged[key] = _coefficient(key, value, True)
    return merged


def _coefficient(what: str, value: Any, is_k: bool) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
        raise ValueError(f"{what}: expected a number >= 0, got {value!r}")
    if is_k and not value < 0.5:
        raise ValueError(f"{what}: a coefficient per 0.1 s tick must be below 0.5, got {value!r}")
    return float(value)


# Devices act on the room by what they are in Matter terms (the device types on their endpoints
# and the clusters there), never by our device-type keys, so clones of real products act too.
#: Device types whose measurement servers measure something other than the room (a cabinet).
NOT_ROOM_TYPES = frozenset({REFRIGERATOR[0], TEMPERATURE_CONTROLLED_CABINET[0], WATER_HEATER[0]})   # tank, not room
#: Light device types and their `light_lux` coefficient (colour lights dim as dimmable ones do).
LIGHT_TYPES = {ON_OFF_LIGHT[0]: "on_off_light", DIMMABLE_LIGHT[0]: "dimmable_light",
               COLOR_TEMPERATURE_LIGHT[0]: "dimmable_light", EXTENDED_COLOR_LIGHT[0]: "dimmable_light"}

SENSOR_QUANTITIES = {
    CLUSTER_ID.TemperatureMeasurement: "temperature",
    CLUSTER_ID.RelativeHumidityMeasurement: "humidity",
    CLUSTER_ID.IlluminanceMeasurement: "illuminance",
    CLUSTER_ID.Pm10ConcentrationMeasurement: "pm10",
    CLUSTER_ID.Thermostat: "temperature",  # LocalTemperature
}

_Mode = Clusters.Thermostat.Enums.SystemModeEnum
#: Thermostat SystemModes in which a device cools / heats; public because the
#: get_environment_control_rules tool describes them to agents.
COOL_MODES = frozenset({_Mode.kCool, _Mode.kPrecooling, _Mode.kAuto})
HEAT_MODES = frozenset({_Mode.kHeat, _Mode.kEmergencyHeat, _Mode.kAuto})

ALWAYS, ABOVE, BELOW = 0, 1, -1


class Term(NamedTuple):
    """k * (target - x), active always, only while x > target (ABOVE) or x < target (BELOW)."""
    source: str
    k: float
    target: float
    when: int = ALWAYS

    def active_at(self, x: float) -> bool:
        if self.when == ABOVE:
            return x > self.target
        if self.when == BELOW:
            return x < self.target
        return True


class Trajectory:
    """One room variable from its anchor: x(tick) = x* + (x0 - x*) * a**(tick - tick0).

    Everything here is a pure function of (x0, tick0, terms), so snapshots store just those
    and a restored trajectory is bit-identical.
    """

    __slots__ = ("x0", "tick0", "terms", "active", "xstar", "a", "flip_tick")

    def __init__(self, x0: float, tick0: int, terms: tuple[Term, ...]):
        self.x0 = float(x0)
        self.tick0 = int(tick0)
        self.terms = terms
        self.active = tuple(t.active_at(self.x0) for t in terms)
        total_k = weighted = 0.0
        for term, on in zip(terms, self.active):
            if on:
                total_k += term.k
                weighted += term.k * term.target
        if not 0.0 < total_k < 1.0:
            raise ValueError(f"sum of physics coefficients {total_k} must be in (0, 1)")
        self.xstar = weighted / total_k
        self.a = 1.0 - total_k
        self.flip_tick = self._first_flip()

    def at(self, n: int) -> float:
        """Value n ticks after the anchor."""
        if n == 0:
            return self.x0
        return self.xstar + (self.x0 - self.xstar) * self.a ** n

    def value(self, tick: int) -> float:
        return self.at(tick - self.tick0)

    def _first_flip(self) -> int | None:
        first: int | None = None
        for term, on in zip(self.terms, self.active):
            if term.when == ALWAYS or term.active_at(self.xstar) == on:
                continue  # x moves monotonically towards x*, so no crossing is possible
            # a**n reaches 0.0 for large n, where x == x*, so the search terminates.
            hi = 1
            while term.active_at(self.at(hi)) == on:
                hi *= 2
            lo = hi // 2
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if term.active_at(self.at(mid)) == on:
                    lo = mid
                else:
                    hi = mid
            first = hi if first is None else min(first, hi)
        return None if first is None else self.tick0 + first

    def state(self) -> dict[str, Any]:
        return {"x0": self.x0, "tick0": self.tick0, "terms": [list(t) for t in self.terms]}

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> Trajectory:
        return cls(state["x0"], state["tick0"], tuple(Term(*t) for t in state["terms"]))


# ---- reading device inputs ------------------------------------------------------------
def _attr(server: Any, name: str) -> Any:
    """An attribute's value, or None when the server lacks it (optional/feature-gated)."""
    if server is None or name not in server.attributes:
        return None
    value = server.get(name)
    return None if value is None or isinstance(value, Nullable) else value


def _find(device: Any, endpoint: Any, cluster: Any) -> Any:
    """The server for `cluster` on `endpoint`, else anywhere on the device, else None."""
    server = endpoint.servers.get(cluster.id)
    if server is not None:
        return server
    for ep_id in sorted(device.endpoints):
        server = device.endpoints[ep_id].servers.get(cluster.id)
        if server is not None:
            return server
    return None


def _is_on(device: Any, endpoint: Any) -> bool:
    onoff = _find(device, endpoint, Clusters.OnOff)
    return True if onoff is None else bool(onoff.get("OnOff"))


def _fan_fraction(device: Any, endpoint: Any) -> float | None:
    fan = _find(device, endpoint, Clusters.FanControl)
    if fan is None:
        return None
    return (_attr(fan, "PercentCurrent") or 0) / 100.0


def _types(endpoint: Any) -> set[int]:
    return {type_id for type_id, _ in endpoint.device_types}


def measures_room(device: Any) -> bool:
    """False for a device whose sensors and thermostats are about its inside (a fridge)."""
    return not any(_types(ep) & NOT_ROOM_TYPES for ep in device.endpoints.values())


def air_role(device: Any, endpoint: Any) -> str | None:
    """Which air coefficient an endpoint acts with: "air_purifier" for an Air Purifier;
    "humidifier" / "dehumidifier" for a Fan that measures relative humidity, as ours are
    (Matter has no humidifier device type, so the product's name says which way it works:
    a fan named neither moves no humidity); None otherwise."""
    types = _types(endpoint)
    if AIR_PURIFIER[0] in types:
        return "air_purifier"
    if FAN[0] in types and CLUSTER_ID.RelativeHumidityMeasurement in endpoint.servers:
        name = device.type.label.lower()
        return "dehumidifier" if "dehumidif" in name else "humidifier" if "humidif" in name else None
    return None


def device_terms(device: Any, coefficients: dict[str, Any] = COEFFICIENTS) -> list[tuple[str, Term]]:
    """The (variable, term) contributions of one device in its current state."""
    C = coefficients
    out: list[tuple[str, Term]] = []
    room = measures_room(device)
    for ep_id in sorted(device.endpoints):
        ep = device.endpoints[ep_id]
        thermostat = ep.servers.get(CLUSTER_ID.Thermostat)
        if thermostat is not None and room and _is_on(device, ep):
            fan = _fan_fraction(device, ep)
            k = C["heat_pump_k"] if fan is None else C["ac_k_full_fan"] * fan
            mode = _attr(thermostat, "SystemMode")
            cool = _attr(thermostat, "OccupiedCoolingSetpoint")
            heat = _attr(thermostat, "OccupiedHeatingSetpoint")
            if k > 0 and mode in COOL_MODES and cool is not None:
                out.append(("temperature", Term(device.id, k, cool / 100.0, ABOVE)))
            if k > 0 and mode in HEAT_MODES and heat is not None:
                out.append(("temperature", Term(device.id, k, heat / 100.0, BELOW)))
        for source in TERM_SOURCES:
            out.extend(source(device, ep, C))
        role = air_role(device, ep)
        if role is not None:
            fan = _fan_fraction(device, ep)
            k = C[role]["k_full_fan"] * (1.0 if fan is None else fan)
            if k > 0 and _is_on(device, ep):
                var = "pm10" if role == "air_purifier" else "humidity"
                out.append((var, Term(device.id, k, C[role]["target"])))
    return out


def room_terms(devices: Iterable[Any], ambient: dict[str, float],
               coefficients: dict[str, Any] = COEFFICIENTS, occupants: int = 0) -> dict[str, tuple[Term, ...]]:
    """All terms per variable for a room: ambient first, then its occupants, then devices by id."""
    terms: dict[str, list[Term]] = {
        var: [Term("ambient", coefficients["ambient_k"][var], float(ambient[var]))] for var in VARIABLES}
    if occupants:
        for var, key in (("temperature", "occupant_heat"), ("humidity", "occupant_moisture")):
            c = coefficients[key]
            terms[var].append(Term("occupants", c["k_per_person"] * occupants, c["target"]))
    for device in sorted(devices, key=lambda d: d.id):
        for var, term in device_terms(device, coefficients):
            terms[var].append(term._replace(target=float(ambient[var])) if term.source.startswith(OUTSIDE) else term)
    return {var: tuple(ts) for var, ts in terms.items()}


# ---- more sources of terms ----------------------------------------------------------------------
#: Other modules' per-endpoint contributions: `(device, endpoint, coefficients) -> [(variable, Term)]`,
#: asked for every endpoint of every device whenever a room's terms are re-derived (so they must be
#: pure functions of the device's state). Register with `@term_source`. A heat or moisture source
#: is a term pulling towards a hot or wet target (an oven: k toward 200 °C); an extractor, a term
#: towards the outside (`outside(device, k)`: the home's ambient value is filled in).
TermSource = Callable[[Any, Any, dict[str, Any]], list[tuple[str, Term]]]
TERM_SOURCES: list[TermSource] = []
#: Source prefix of a term whose target is the outside (ambient/weather) value of its variable.
OUTSIDE = "outside:"


def term_source(source: TermSource) -> TermSource:
    TERM_SOURCES.append(source)
    return source


def outside(device: Any, k: float) -> list[tuple[str, Term]]:
    """Terms exchanging every room variable with outside at strength k (the target is filled in)."""
    return [(var, Term(OUTSIDE + device.id, k, 0.0)) for var in VARIABLES]


@term_source
def appliance_terms(device: Any, ep: Any, C: dict[str, Any]) -> list[tuple[str, Term]]:
    """Kitchen appliances on one endpoint: a running oven cavity warms the kitchen towards its
    setpoint; a cook surface heats, steams and (frying) smokes in proportion to its power; a
    running microwave steams; an extractor hood's fan filters PM10 out and draws steam off."""
    out: list[tuple[str, Term]] = []
    types = _types(ep)
    ops = ep.servers.get(CLUSTER_ID.OvenCavityOperationalState)
    if ops is not None and _attr(ops, "OperationalState") == 1:
        setpoint = _attr(ep.servers.get(CLUSTER_ID.TemperatureControl), "TemperatureSetpoint")
        out.append(("temperature", Term(device.id, C["oven"]["k"], (setpoint or 18000) / 100.0)))
    if COOK_SURFACE[0] in types:
        level = _attr(ep.servers.get(CLUSTER_ID.TemperatureControl), "SelectedTemperatureLevel") or 0
        f = SURFACE_WATTS[min(level, len(SURFACE_WATTS) - 1)] / max(SURFACE_WATTS)
        if f > 0:
            for var, key in (("temperature", "cook_surface_heat"), ("humidity", "cook_surface_steam"),
                             ("pm10", "cook_surface_smoke")):
                out.append((var, Term(device.id, C[key]["k_full"] * f, C[key]["target"])))
    if MICROWAVE_OVEN[0] in types:
        running = _attr(ep.servers.get(CLUSTER_ID.OperationalState), "OperationalState") == 1
        if running:
            out.append(("humidity", Term(device.id, C["microwave_steam"]["k"], C["microwave_steam"]["target"])))
    if EXTRACTOR_HOOD[0] in types:
        fan = _fan_fraction(device, ep) or 0.0
        if fan > 0:
            for var, key in (("pm10", "hood_pm10"), ("humidity", "hood_humidity")):
                out.append((var, Term(device.id, C[key]["k_full_fan"] * fan, C[key]["target"])))
    return out


@term_source
def openings(device: Any, endpoint: Any, C: dict[str, Any]) -> list[tuple[str, Term]]:
    """An open door (a door lock's DoorState) or an open window (a contact sensor reading open:
    it watches a window or a covering that opens one; one on a lock's door adds nothing, the
    lock counts that door) exchanges air with outside."""
    lock = endpoint.servers.get(CLUSTER_ID.DoorLock)
    if lock is not None and _attr(lock, "DoorState") == Clusters.DoorLock.Enums.DoorStateEnum.kDoorOpen:
        return outside(device, C["open_door_k"])
    contact = endpoint.servers.get(CLUSTER_ID.BooleanState)
    if contact is not None and CONTACT_SENSOR[0] in _types(endpoint) and not contact.get("StateValue") \
            and not getattr(contact, "on_door", False):
        return outside(device, C["open_window_k"])
    return []


#: Zero-strength terms that only watch a threshold: their flip is where a sensor's reading changes
#: (a smoke alarm's PM10 levels, a freeze detector's temperature), found exactly like a
#: thermostat's switch point; twin/sensors.py re-reads the sensors there.
@term_source
def watch_terms(device: Any, endpoint: Any, C: dict[str, Any]) -> list[tuple[str, Term]]:
    alarm = our_server(endpoint.servers, "SmokeCoAlarm")   # a clone's is a store of its values
    if alarm is not None:
        warning, critical = smoke_levels(alarm)
        return [("pm10", Term(device.id, 0.0, warning, ABOVE)), ("pm10", Term(device.id, 0.0, critical, ABOVE))]
    if WATER_FREEZE_DETECTOR[0] in _types(endpoint) and CLUSTER_ID.BooleanState in endpoint.servers:
        return [("temperature", Term(device.id, 0.0, FREEZE_C, ABOVE))]
    return []


def illuminance(daylight_lux: float, devices: Iterable[Any],
                coefficients: dict[str, Any] = COEFFICIENTS) -> float:
    """Room illuminance now: daylight through the coverings plus the lights."""
    openness: list[float] = []
    lights = 0.0
    for device in devices:
        for ep_id in sorted(device.endpoints):
            ep = device.endpoints[ep_id]
            types = _types(ep)
            cover = ep.servers.get(CLUSTER_ID.WindowCovering)
            if WINDOW_COVERING[0] in types and cover is not None:
                position = _attr(cover, "CurrentPositionLiftPercent100ths")
                tilt = _attr(cover, "CurrentPositionTiltPercent100ths") or 0   # closed slats let 10 % through
                openness.append((1.0 - (position or 0) / 10000.0) * (1.0 - 0.9 * tilt / 10000.0))  # unknown: open
            light = next((LIGHT_TYPES[t] for t in sorted(types) if t in LIGHT_TYPES), None)
            onoff = ep.servers.get(CLUSTER_ID.OnOff)
            if light is None or onoff is None or not onoff.get("OnOff"):
                continue
            level = ep.servers.get(CLUSTER_ID.LevelControl)
            fraction = 1.0 if level is None else (_attr(level, "CurrentLevel") or 0) / 254.0
            lights += coefficients["light_lux"][light] * fraction
    daylight = daylight_lux * (sum(openness) / len(openness) if openness else 1.0)
    return daylight + lights


def sensor_quantity(device: Any, server: Any) -> str | None:
    """Which room quantity a measurement server reports, or None if not the room's."""
    if not hasattr(server, "sensor_source") or not measures_room(device):
        return None
    return SENSOR_QUANTITIES.get(server.id)
