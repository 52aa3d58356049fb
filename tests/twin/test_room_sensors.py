"""Room-sensor nodes: composition, Matter units, following physics, and staying out of the home."""
import json
import math

import pytest
from chip.clusters import Objects as Clusters
from chip.clusters.Types import NullValue

from clusters.air_quality import Level, pm10_air_quality
from clusters.devices import DEVICE_TYPES, NODE_ONLY_TYPES, create_device
from clusters.status import MatterError, Status
from twin.home import Home
from twin.node.values import encode_value
from twin.room_sensors import room_sensor_devices, room_sensor_id


def make_home(seed=3):
    home = Home("sensor home", seed=seed)
    home.add_room("living_room", "Living Room", temperature=28.0, humidity=40.0, pm10=80.0,
                  daylight_lux=250.0)
    home.add_room("bedroom", "Bedroom", temperature=21.5, humidity=63.2, pm10=12.0, daylight_lux=0.0)
    home.add_device("ac", "air_conditioner", "living_room")
    home.add_device("purifier", "air_purifier", "living_room")
    home.add_device("lamp", "dimmable_light", "living_room")
    home.add_device("bed_lamp", "on_off_light", "bedroom")
    return home


def values(sensor):
    return {"temperature": sensor.read("TemperatureMeasurement", "MeasuredValue", 1),
            "humidity": sensor.read("RelativeHumidityMeasurement", "MeasuredValue", 2),
            "illuminance": sensor.read("IlluminanceMeasurement", "MeasuredValue", 3),
            "pm10": sensor.read("Pm10ConcentrationMeasurement", "MeasuredValue", 4),
            "air_quality": sensor.read("AirQuality", "AirQuality", 4)}


def test_composition_one_endpoint_per_sensor_type_with_identify():
    device = create_device("s", NODE_ONLY_TYPES["room_sensor"])
    layout = {ep_id: ([dt.deviceType for dt in ep.servers[Clusters.Descriptor.id].get("DeviceTypeList")],
                      sorted(ep.servers)) for ep_id, ep in device.endpoints.items()}
    ident, desc = Clusters.Identify.id, Clusters.Descriptor.id
    assert layout == {
        0: ([0x0016], sorted([desc, Clusters.BasicInformation.id])),
        1: ([0x0302], sorted([ident, desc, Clusters.TemperatureMeasurement.id])),
        2: ([0x0307], sorted([ident, desc, Clusters.RelativeHumidityMeasurement.id])),
        3: ([0x0106], sorted([ident, desc, Clusters.IlluminanceMeasurement.id])),
        4: ([0x002C], sorted([ident, desc, Clusters.AirQuality.id, Clusters.Pm10ConcentrationMeasurement.id])),
    }
    assert device.read("Descriptor", "PartsList", 0) == [1, 2, 3, 4]
    assert device.read("BasicInformation", "ProductID", 0) == NODE_ONLY_TYPES["room_sensor"].product_id
    assert device.read("AirQuality", "FeatureMap", 4) == 0b1111


def test_room_sensor_is_not_a_simuhome_type():
    # Home files, tools and cluster docs keep offering exactly the SimuHome types.
    assert "room_sensor" not in DEVICE_TYPES
    assert NODE_ONLY_TYPES["room_sensor"].product_id not in {t.product_id for t in DEVICE_TYPES.values()}
    home = make_home()
    with pytest.raises(MatterError) as e:
        home.add_device("x", "room_sensor", "bedroom")
    assert e.value.status == Status.NOT_FOUND


def test_reports_room_values_in_matter_units():
    home = make_home()
    sensors = room_sensor_devices(home)
    assert list(sensors) == ["living_room", "bedroom"]
    bedroom = sensors["bedroom"]
    assert bedroom.id == room_sensor_id("bedroom")
    assert bedroom.read("BasicInformation", "NodeLabel", 0) == "Bedroom sensors"
    v = values(bedroom)
    assert v["temperature"] == 2150                                   # 0.01 °C
    assert v["humidity"] == 6320                                      # 0.01 %RH
    assert v["illuminance"] == 0                                      # dark: too dark to measure
    assert v["pm10"] == pytest.approx(12.0)                           # µg/m³
    assert v["air_quality"] == Level.kGood
    home.device("bed_lamp").invoke("OnOff", "On")
    assert values(bedroom)["illuminance"] == round(10000 * math.log10(300.0) + 1)
    living = values(sensors["living_room"])
    assert living["temperature"] == 2800 and living["air_quality"] == Level.kFair   # 80 µg/m³


def test_sensors_follow_physics_when_the_home_advances():
    home = make_home()
    sensor = room_sensor_devices(home)["living_room"]
    ac, purifier = home.device("ac"), home.device("purifier")
    ac.invoke("OnOff", "On")
    ac.write("Thermostat", "SystemMode", 3)                          # Cool
    ac.write("Thermostat", "OccupiedCoolingSetpoint", 2000)
    ac.write("FanControl", "PercentSetting", 100)
    purifier.invoke("OnOff", "On")
    purifier.write("FanControl", "PercentSetting", 100)
    before = values(sensor)
    for seconds in (60, 600, 1800):
        home.advance(seconds)
        now = values(sensor)
        room = home.rooms["living_room"]
        assert now["temperature"] == round(room.temperature * 100)
        assert now["pm10"] == round(room.pm10, 2)                    # 0.01 µg/m³
        assert now["temperature"] < before["temperature"] and now["pm10"] < before["pm10"]
        before = now
    assert before["air_quality"] == pm10_air_quality(home.rooms["living_room"].pm10)


def test_sensors_are_views_not_part_of_the_home():
    home = make_home()
    snapshot = json.dumps(home.snapshot(), sort_keys=True)
    rng_state = home.rng.getstate()
    sensors = room_sensor_devices(home)
    assert set(home.devices) == {"ac", "purifier", "lamp", "bed_lamp"}
    assert home.rng.getstate() == rng_state
    assert json.dumps(home.snapshot(), sort_keys=True) == snapshot
    # Same seed, same identities; nothing of the room is stored in the servers.
    again = room_sensor_devices(make_home())
    for room_id in sensors:
        for name in ("SerialNumber", "UniqueID"):
            mine, theirs = sensors[room_id], again[room_id]
            assert mine.read("BasicInformation", name, 0) == theirs.read("BasicInformation", name, 0)
    temp = sensors["bedroom"].locate("TemperatureMeasurement", 1)
    assert temp.state()["attributes"]["MeasuredValue"] is None
    assert temp.clock is home.clock


def test_clamped_to_the_declared_range_and_measurements_read_only():
    home = Home("h")
    home.add_room("hot", temperature=60.0, humidity=100.0, pm10=2000.0, daylight_lux=200000.0)
    sensor = room_sensor_devices(home)["hot"]
    v = values(sensor)
    assert v["temperature"] == 6000 and v["humidity"] == 10000
    assert v["illuminance"] == round(10000 * math.log10(200000.0) + 1)
    assert v["air_quality"] == Level.kExtremelyPoor
    with pytest.raises(MatterError) as e:
        sensor.write("TemperatureMeasurement", "MeasuredValue", 100, 1)
    assert e.value.status == Status.UNSUPPORTED_WRITE


@pytest.mark.parametrize("pm10,level", [(0.0, Level.kGood), (54.9, Level.kGood), (55.0, Level.kFair),
                                        (154.9, Level.kFair), (155.0, Level.kModerate), (300.0, Level.kPoor),
                                        (400.0, Level.kVeryPoor), (425.0, Level.kExtremelyPoor)])
def test_air_quality_bands(pm10, level):
    assert pm10_air_quality(pm10) == level


def test_air_quality_unknown_without_a_pm10_value():
    device = create_device("s", NODE_ONLY_TYPES["room_sensor"])   # no room wired: MeasuredValue is null
    assert device.read("Pm10ConcentrationMeasurement", "MeasuredValue", 4) is NullValue
    assert device.read("AirQuality", "AirQuality", 4) == Level.kUnknown


def test_every_attribute_encodes_with_the_im_codec():
    home = make_home()
    for sensor in room_sensor_devices(home).values():
        for ep_id, ep in sensor.endpoints.items():
            for server in ep.servers.values():
                for name in server.attribute_names():
                    typ = server.attribute_class(name).attribute_type.Type
                    assert encode_value(typ, sensor.read(server.id, name, ep_id)), (ep_id, server.name, name)
