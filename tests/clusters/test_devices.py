"""The 17 SimuHome device types: composition, spec ids, and the cross-cluster rules."""
import json

import pytest
from chip.clusters import Objects as Clusters

from clusters.devices import DEVICE_TYPES, create_device
from clusters.rules import RULES
from clusters.status import MatterError, Status
from clusters.values import to_json

SIMUHOME_TYPES = {"air_conditioner", "air_purifier", "dehumidifier", "dimmable_light", "dishwasher",
                  "electrical_sensor", "fan", "freezer", "heat_pump", "humidifier", "laundry_dryer",
                  "laundry_washer", "on_off_light", "refrigerator", "robot_vacuum_cleaner", "tv",
                  "window_covering"}

# SimuHome Table 7: the clusters each device type must carry (Descriptor/BasicInformation
# are on every node; Laundry Dryer Mode is Laundry Washer Mode in Matter).
TABLE_7 = {
    "air_conditioner": {"FanControl", "OnOff", "Thermostat"},
    "air_purifier": {"FanControl", "Identify", "OnOff"},
    "dehumidifier": {"FanControl", "OnOff", "RelativeHumidityMeasurement"},
    "dimmable_light": {"LevelControl", "OnOff"},
    "dishwasher": {"OnOff", "OperationalState"},
    "electrical_sensor": {"ElectricalEnergyMeasurement", "ElectricalPowerMeasurement", "PowerTopology"},
    "fan": {"FanControl", "OnOff"},
    "freezer": {"RefrigeratorAndTemperatureControlledCabinetMode", "TemperatureControl", "TemperatureMeasurement"},
    "heat_pump": {"DeviceEnergyManagement", "ElectricalEnergyMeasurement", "ElectricalPowerMeasurement",
                  "PowerSource", "PowerTopology", "Thermostat"},
    "humidifier": {"FanControl", "OnOff", "RelativeHumidityMeasurement"},
    "laundry_dryer": {"LaundryDryerControls", "LaundryWasherMode", "OnOff", "OperationalState"},
    "laundry_washer": {"LaundryWasherControls", "LaundryWasherMode", "OnOff", "OperationalState",
                       "TemperatureControl"},
    "on_off_light": {"OnOff"},
    "refrigerator": {"RefrigeratorAndTemperatureControlledCabinetMode", "TemperatureControl",
                     "TemperatureMeasurement"},
    "robot_vacuum_cleaner": {"RvcCleanMode", "RvcOperationalState", "RvcRunMode"},
    "tv": {"Channel", "KeypadInput", "LevelControl", "MediaPlayback", "OnOff"},
    "window_covering": {"WindowCovering"},
}


class Clock:
    tick = 0


def make(key, device_id="d1"):
    device = create_device(device_id, key)
    clock = Clock()
    for server in device.servers():
        server.clock = clock
    return device, clock


def test_all_seventeen_types_registered():
    assert SIMUHOME_TYPES <= set(DEVICE_TYPES)   # and the rest of the device library (test_devices_appl.py)


@pytest.mark.parametrize("key", sorted(DEVICE_TYPES))
def test_composition_is_complete_and_readable(key):
    device, _ = make(key)
    names = {s.name for s in device.servers()}
    assert TABLE_7.get(key, set()) <= names
    root = device.endpoint(0)
    assert {s.name for s in root.servers.values()} >= {"Descriptor", "BasicInformation"}
    assert root.server("Descriptor").read("DeviceTypeList")[0].deviceType == 0x0016
    assert root.server("Descriptor").read("PartsList") == sorted(e for e in device.endpoints if e)
    main = device.endpoint(1).server("Descriptor").read("DeviceTypeList")[0]
    assert main.deviceType == DEVICE_TYPES[key].device_type_id
    for server in device.servers():
        for attribute in server.attribute_names():
            json.dumps(to_json(server.read(attribute)))  # every attribute reads and is JSON-able
        json.dumps(server.describe())


def test_identity_is_seeded_and_unique():
    import random
    a = create_device("a", "fan", rng=random.Random(1))
    b = create_device("a", "fan", rng=random.Random(1))
    c = create_device("c", "fan", rng=random.Random(2))
    serial = lambda d: d.read("BasicInformation", "SerialNumber")  # noqa: E731
    assert serial(a) == serial(b) != serial(c)
    assert a.read("BasicInformation", "VendorID") == 0xFFF1
    assert a.read("BasicInformation", "ProductID") == DEVICE_TYPES["fan"].product_id


def test_ac_must_be_on_before_fan_speed_changes():
    ac, _ = make("air_conditioner")
    with pytest.raises(MatterError) as err:
        ac.write("FanControl", "PercentSetting", 50)
    assert err.value.status == Status.INVALID_IN_STATE and "turn it on" in err.value.message
    assert ac.read("FanControl", "PercentSetting") == 0  # nothing half-applied
    with pytest.raises(MatterError):
        ac.write("Thermostat", "SystemMode", 3)
    ac.invoke("OnOff", "On")
    ac.write("Thermostat", "SystemMode", 3)
    ac.write("FanControl", "PercentSetting", 50)
    assert ac.read("FanControl", "PercentCurrent") == 50


def test_running_dishwasher_rejects_mode_change():
    dw, clock = make("dishwasher")
    with pytest.raises(MatterError) as err:
        dw.invoke("OperationalState", "Start")
    assert err.value.status == Status.INVALID_IN_STATE
    dw.invoke("OnOff", "On")
    dw.invoke("OperationalState", "Start")
    response = dw.invoke("DishwasherMode", "ChangeToMode", {"newMode": 1})
    assert response.status == 3  # InvalidInMode, as Mode Base specifies
    assert dw.read("DishwasherMode", "CurrentMode") == 0


def test_running_washer_keeps_its_controls():
    washer, _ = make("laundry_washer")
    washer.invoke("OnOff", "On")
    washer.write("LaundryWasherControls", "NumberOfRinses", 2)
    washer.invoke("OperationalState", "Start")
    with pytest.raises(MatterError) as err:
        washer.write("LaundryWasherControls", "NumberOfRinses", 1)
    assert err.value.status == Status.INVALID_IN_STATE
    assert int(washer.read("LaundryWasherControls", "NumberOfRinses")) == 2


def test_tv_off_rejects_channel_change():
    tv, _ = make("tv")
    with pytest.raises(MatterError) as err:
        tv.invoke("Channel", "ChangeChannelByNumber", {"majorNumber": 7, "minorNumber": 0})
    assert err.value.status == Status.INVALID_IN_STATE


def test_fridge_cabinet_measurement_follows_setpoint():
    fridge, _ = make("refrigerator")
    fridge.invoke("TemperatureControl", "SetTemperature", {"targetTemperature": 300}, endpoint_id=2)
    assert fridge.read("TemperatureMeasurement", "MeasuredValue") == 300


def test_heat_pump_energy_integrates_power_exactly():
    hp, clock = make("heat_pump")
    hp.write("Thermostat", "SystemMode", 4)  # Heat: 1800 W
    clock.tick = 36000  # one hour
    energy = hp.read("ElectricalEnergyMeasurement", "CumulativeEnergyImported")
    assert energy.energy == 1_800_000  # mWh
    assert hp.read("ElectricalPowerMeasurement", "ActivePower") == 1_800_000  # mW


def test_rules_reference_real_clusters_and_operations():
    for rule in RULES:
        cluster = getattr(Clusters, rule.cluster)
        for op in rule.operations:
            assert (hasattr(getattr(cluster, "Commands", None), op)
                    or hasattr(cluster.Attributes, op)), (rule.cluster, op)
        assert set(rule.device_types) <= SIMUHOME_TYPES


#: Every ProductID the twin gives its own device types. Controllers remember a node's ProductID
#: (and its DAC and CD carry it): a number once given never changes, and adding a type must not
#: move another. Add a new type here with the next free number of its range (clusters/devices.py).
PRODUCT_IDS = {
    "air_conditioner": 0x8001, "air_purifier": 0x8002, "dehumidifier": 0x8003, "dimmable_light": 0x8004,
    "dishwasher": 0x8005, "electrical_sensor": 0x8006, "fan": 0x8007, "freezer": 0x8008, "heat_pump": 0x8009,
    "humidifier": 0x800A, "laundry_dryer": 0x800B, "laundry_washer": 0x800C, "on_off_light": 0x800D,
    "refrigerator": 0x800E, "robot_vacuum_cleaner": 0x800F, "tv": 0x8010, "window_covering": 0x8011,
    "room_sensor": 0x8012, "bridge": 0x8013,
    # lighting, plugs, switches, media, appliances, energy (clusters/devices_appl.py)
    "color_temperature_light": 0x8140, "extended_color_light": 0x8141, "on_off_plug": 0x8142,
    "dimmable_plug": 0x8143, "mounted_on_off_control": 0x8144, "mounted_dimmable_load_control": 0x8145,
    "generic_switch": 0x8146, "on_off_light_switch": 0x8147, "dimmer_switch": 0x8148,
    "color_dimmer_switch": 0x8149, "speaker": 0x814A, "oven": 0x814B, "cooktop": 0x814C, "cook_surface": 0x814D,
    "microwave_oven": 0x814E, "extractor_hood": 0x814F, "water_heater": 0x8150, "water_valve": 0x8151,
    "pump": 0x8152, "evse": 0x8153, "solar_power": 0x8154, "battery_storage": 0x8155, "thermostat": 0x8156,
    "basic_video_player": 0x8157, "pump_controller": 0x8158, "window_covering_controller": 0x8159,
    "control_bridge": 0x815A, "video_remote_control": 0x815B, "casting_video_client": 0x815C, "mode_select": 0x815D,
    "door_lock": 0x8100, "contact_sensor": 0x8101, "occupancy_sensor": 0x8102, "smoke_co_alarm": 0x8103,
    "water_leak_detector": 0x8104, "water_freeze_detector": 0x8105, "rain_sensor": 0x8106,
    "pressure_sensor": 0x8107, "flow_sensor": 0x8108, "temperature_sensor": 0x8109, "humidity_sensor": 0x810A,
    "light_sensor": 0x810B,
}


def test_product_ids_are_stable_and_unique():
    from clusters.aggregator import BRIDGE_TYPE
    from clusters.devices import NODE_ONLY_TYPES
    own = [t for t in DEVICE_TYPES.values() if t.root is None] + list(NODE_ONLY_TYPES.values()) + [BRIDGE_TYPE]
    assert {t.key: t.product_id for t in own} == PRODUCT_IDS
    assert len(set(PRODUCT_IDS.values())) == len(PRODUCT_IDS)
    # and the node carries it in BasicInformation.ProductID
    assert create_device("d", "tv").read("BasicInformation", "ProductID", 0) == 0x8010
