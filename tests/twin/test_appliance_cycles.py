"""Appliances and energy devices in a home: cycles, tanks, cars, sun and batteries behave,
and stepping equals fast-forward with all of them."""
import json

import pytest
from chip.clusters import Objects as C

from clusters.status import MatterError, Status
from twin.home import Home

OPTS = {"optionsMask": 0, "optionsOverride": 0}


def home_with(*devices, start="2026-06-01T00:00:00"):
    from datetime import datetime
    home = Home("h", start=datetime.fromisoformat(start))
    home.add_room("kitchen")
    for device_id, key, options in devices:
        home.add_device(device_id, key, "kitchen", options=options)
    return home


def test_oven_bakes_and_its_cavity_heats_then_cools():
    home = home_with(("oven", "oven", {}))
    oven = home.device("oven")
    assert oven.read("TemperatureMeasurement", "MeasuredValue", 2) == 2200
    oven.invoke("TemperatureControl", "SetTemperature", {"targetTemperature": 20000}, endpoint_id=2)
    oven.invoke("OvenMode", "ChangeToMode", {"newMode": 0}, endpoint_id=2)
    oven.invoke("OvenCavityOperationalState", "Start", endpoint_id=2)
    assert oven.read("ElectricalPowerMeasurement", "ActivePower", 1) == 2_400_000
    home.advance(600)
    hot = oven.read("TemperatureMeasurement", "MeasuredValue", 2)
    assert 13_000 < hot < 20_000
    assert oven.read("OvenCavityOperationalState", "CurrentPhase", 2) == 1     # preheating -> baking
    home.advance(2400)
    assert oven.read("OvenCavityOperationalState", "OperationalState", 2) == 0
    assert oven.read("ElectricalPowerMeasurement", "ActivePower", 1) == 0
    assert oven.read("ElectricalEnergyMeasurement", "CumulativeEnergyImported", 1).energy == 2_400_000 * 3000 // 3600
    assert oven.read("TemperatureMeasurement", "MeasuredValue", 2) > hot      # still hot, now cooling
    home.advance(7200)
    assert oven.read("TemperatureMeasurement", "MeasuredValue", 2) < 8000
    with pytest.raises(MatterError) as err:
        oven.invoke("OvenCavityOperationalState", "Pause", endpoint_id=2)
    assert err.value.status == Status.UNSUPPORTED_COMMAND


def test_cooktop_surfaces_and_off_only():
    home = home_with(("hob", "cooktop", {"surfaces": 2}))
    hob = home.device("hob")
    assert hob.read("OnOff", "FeatureMap") == int(C.OnOff.Bitmaps.Feature.kOffOnly)
    with pytest.raises(MatterError) as err:
        hob.invoke("OnOff", "On")
    assert err.value.status == Status.UNSUPPORTED_COMMAND
    hob.invoke("TemperatureControl", "SetTemperature", {"targetTemperatureLevel": 3}, endpoint_id=2)
    assert hob.read("OnOff", "OnOff") and hob.read("ElectricalPowerMeasurement", "ActivePower") == 1_800_000
    hob.invoke("OnOff", "Off")
    assert hob.read("TemperatureControl", "SelectedTemperatureLevel", 2) == 0
    assert hob.read("ElectricalPowerMeasurement", "ActivePower") == 0


def test_microwave_cooks_for_cook_time_and_more_time():
    home = home_with(("mw", "microwave_oven", {}))
    mw = home.device("mw")
    mw.invoke("MicrowaveOvenControl", "SetCookingParameters", {"cookMode": 1, "cookTime": 60, "powerSetting": 50,
                                                               "startAfterSetting": True})
    assert mw.read("OperationalState", "OperationalState") == 1
    assert mw.read("MicrowaveOvenMode", "CurrentMode") == 1
    assert mw.read("ElectricalPowerMeasurement", "ActivePower") == 450_000
    with pytest.raises(MatterError) as err:
        mw.invoke("MicrowaveOvenControl", "SetCookingParameters", {"cookTime": 5})
    assert err.value.status == Status.INVALID_IN_STATE
    home.advance(30)
    mw.invoke("MicrowaveOvenControl", "AddMoreTime", {"timeToAdd": 20})
    assert mw.read("OperationalState", "CountdownTime") == 50
    home.advance(49)
    assert mw.read("OperationalState", "OperationalState") == 1
    home.advance(1)
    assert mw.read("OperationalState", "OperationalState") == 0
    for bad in ({"powerSetting": 55}, {"cookTime": 0}, {"cookMode": 9}):
        with pytest.raises(MatterError) as err:
            mw.invoke("MicrowaveOvenControl", "SetCookingParameters", bad)
        assert err.value.status == Status.CONSTRAINT_ERROR


def test_water_heater_heats_draws_and_boosts():
    home = home_with(("wh", "water_heater", {"volume_l": 100, "draws": [["07:00", 50]]}))
    wh = home.device("wh")
    assert wh.read("Thermostat", "LocalTemperature") == 5500
    home.run_until("2026-06-01T07:00:00")
    t = wh.read("Thermostat", "LocalTemperature")
    assert t < 3500 and wh.read("WaterHeaterManagement", "HeatDemand") == 1   # the morning draw, heating
    assert wh.read("ElectricalPowerMeasurement", "ActivePower") == 3_000_000
    home.advance(3600)   # 100 l from ~32 to 55 degC at 3 kW: ~55 min
    assert 5490 <= wh.read("Thermostat", "LocalTemperature") <= 5500   # reached, a few minutes cooling since
    assert wh.read("WaterHeaterManagement", "HeatDemand") == 0
    assert wh.read("WaterHeaterManagement", "TankPercentage") == 99
    home.advance(3 * 3600)   # the insulated tank loses ~1.5 degC in 3 h, above the 5 degC reheat band
    assert 5300 < wh.read("Thermostat", "LocalTemperature") < 5500
    assert wh.read("WaterHeaterManagement", "HeatDemand") == 0
    wh.invoke("WaterHeaterMode", "ChangeToMode", {"newMode": 0})   # Off
    home.draw_hot_water("wh", 60)
    assert wh.read("WaterHeaterManagement", "HeatDemand") == 0
    info = C.WaterHeaterManagement.Structs.WaterHeaterBoostInfoStruct(duration=600, temporarySetpoint=6000)
    wh.invoke("WaterHeaterManagement", "Boost", {"boostInfo": info})
    assert wh.read("WaterHeaterManagement", "BoostState") == 1 and wh.read("WaterHeaterManagement", "HeatDemand") == 1
    home.advance(600)
    assert wh.read("WaterHeaterManagement", "BoostState") == 0 and wh.read("WaterHeaterManagement", "HeatDemand") == 0
    assert [e["event"] for e in home.events if e["cluster"] == "WaterHeaterManagement"] == ["BoostStarted",
                                                                                             "BoostEnded"]


def test_valve_opens_for_its_duration():
    home = home_with(("v", "water_valve", {}))
    v = home.device("v")
    v.invoke("ValveConfigurationAndControl", "Open", {"openDuration": 60})
    assert v.read("ValveConfigurationAndControl", "CurrentState") == 2   # transitioning
    home.advance(2)
    assert v.read("ValveConfigurationAndControl", "CurrentState") == 1
    assert v.read("ValveConfigurationAndControl", "RemainingDuration") == 58
    home.advance(60)
    assert v.read("ValveConfigurationAndControl", "CurrentState") == 0
    assert [e["fields"]["valveState"] for e in home.events] == [1, 0]


def test_pump_runs_at_its_level():
    home = home_with(("p", "pump", {}))
    p = home.device("p")
    p.invoke("OnOff", "On")
    assert p.read("PumpConfigurationAndControl", "Speed") == 3000
    assert p.read("PumpConfigurationAndControl", "PumpStatus") & 0x20
    p.invoke("LevelControl", "MoveToLevel", {"level": 127, "transitionTime": 0, **OPTS})
    assert p.read("PumpConfigurationAndControl", "Speed") == 1500
    home.advance(7200)
    assert p.read("PumpConfigurationAndControl", "LifetimeRunningHours") == 2
    with pytest.raises(MatterError):
        p.write("PumpConfigurationAndControl", "ControlMode", 1)


def test_ev_charges_at_the_evse_current_until_its_target():
    home = home_with(("ev", "evse", {"circuit_amps": 32}))
    ev = home.device("ev")
    home.plug_in_ev("ev", capacity_kwh=50, soc_percent=20, target_percent=80)
    assert ev.read("EnergyEvse", "State") == C.EnergyEvse.Enums.StateEnum.kPluggedInDemand
    ev.invoke("EnergyEvse", "EnableCharging", {"chargingEnabledUntil": None, "minimumChargeCurrent": 6000,
                                               "maximumChargeCurrent": 16000})
    assert ev.read("EnergyEvse", "State") == C.EnergyEvse.Enums.StateEnum.kPluggedInCharging
    assert ev.read("ElectricalPowerMeasurement", "ActivePower") == 16000 * 230      # 3.68 kW
    home.advance(3600)
    assert ev.read("EnergyEvse", "SessionEnergyCharged") == 3_680_000
    assert ev.read("EnergyEvse", "StateOfCharge") == 27                             # 20 % + 3.68/50
    home.advance(8 * 3600)                                                          # 30 kWh needs 8.15 h
    assert ev.read("EnergyEvse", "StateOfCharge") == 80
    assert ev.read("EnergyEvse", "State") == C.EnergyEvse.Enums.StateEnum.kPluggedInNoDemand
    assert ev.read("ElectricalPowerMeasurement", "ActivePower") == 0
    names = [e["event"] for e in home.events if e["cluster"] == "EnergyEvse"]
    assert names == ["EVConnected", "EnergyTransferStarted", "EnergyTransferStopped"]
    home.unplug_ev("ev")
    assert ev.read("EnergyEvse", "State") == C.EnergyEvse.Enums.StateEnum.kNotPluggedIn
    with pytest.raises(MatterError) as err:
        ev.invoke("EnergyEvse", "EnableCharging", {"chargingEnabledUntil": None, "minimumChargeCurrent": 9000,
                                                   "maximumChargeCurrent": 6000})
    assert err.value.status == Status.CONSTRAINT_ERROR


def test_solar_follows_the_day_and_exports():
    home = home_with(("pv", "solar_power", {"peak_watts": 4000}))
    pv = home.device("pv")
    assert pv.read("ElectricalPowerMeasurement", "ActivePower") == 0
    home.run_until("2026-06-01T13:00:00")
    noon = pv.read("ElectricalPowerMeasurement", "ActivePower")
    assert -4_000_000 <= noon < -3_800_000
    home.run_until("2026-06-02T00:00:00")
    exported = pv.read("ElectricalEnergyMeasurement", "CumulativeEnergyExported").energy
    assert 30_000_000 < exported < 38_000_000     # about 4 kW x 14 h x 2/pi
    assert pv.read("ElectricalPowerMeasurement", "ActivePower") == 0


def test_solar_follows_the_weather():
    """With weather, the output is the peak times the weather's daylight (a third of it in rain)
    at the period's middle; a pinned rain cuts it from the next period on; stepping, fast-forward,
    a fork and a restore agree."""
    import json

    def build():
        home = home_with(("pv", "solar_power", {"peak_watts": 4000}), start="2026-06-01T11:00:00")
        home.set_weather({"rain_chance": 0.0, "sunrise": 6, "sunset": 21})
        return home
    home = build()
    pv = home.device("pv")
    home.advance(900)   # the first period ends: its power is the 11:00-12:00 hour's daylight
    sun = home.weather.at(home.clock.now)["daylight"]
    assert sun > 0.5 and pv.read("ElectricalPowerMeasurement", "ActivePower") == round(-4000 * sun * 1000)
    home.pin_weather({"raining": True, "daylight": 0.1})
    home.advance(900)
    assert pv.read("ElectricalPowerMeasurement", "ActivePower") == -400_000
    home.pin_weather({"raining": None, "daylight": None})
    fork, again = home.fork(), Home.restore(home.snapshot())
    for h in (home, fork, again):
        h.advance(6 * 3600)
    assert len({json.dumps(h.snapshot(), sort_keys=True) for h in (home, fork, again)}) == 1
    a, b = build(), build()
    a.step(3600 * 10)
    b.advance(3600)
    assert json.dumps(a.snapshot(), sort_keys=True) == json.dumps(b.snapshot(), sort_keys=True)
    exported = a.device("pv").read("ElectricalEnergyMeasurement", "CumulativeEnergyExported").energy
    clear = build()
    clear.set_weather(None)   # a clear day's sun again
    clear.advance(3600)
    assert 0 < exported != clear.device("pv").read("ElectricalEnergyMeasurement", "CumulativeEnergyExported").energy


def test_battery_charges_on_request_until_full():
    home = home_with(("bat", "battery_storage", {"capacity_kwh": 5, "max_watts": 5000}))
    bat = home.device("bat")
    bat.invoke("DeviceEnergyManagement", "PowerAdjustRequest", {"power": 1_000_000, "duration": 7200, "cause": 0})
    bat.invoke("DeviceEnergyManagement", "PowerAdjustRequest", {"power": 5_000_000, "duration": 7200, "cause": 0})
    assert bat.read("ElectricalPowerMeasurement", "ActivePower") == 5_000_000   # a new request replaces the target
    home.advance(7200)
    assert bat.read("PowerSource", "BatPercentRemaining") == 200
    assert bat.read("ElectricalPowerMeasurement", "ActivePower") == 0
    bat.invoke("DeviceEnergyManagement", "PowerAdjustRequest", {"power": -2_500_000, "duration": 3600, "cause": 0})
    home.advance(3600)
    assert bat.read("PowerSource", "BatPercentRemaining") == 100   # 100 % less 2.5 kWh of 5
    assert bat.read("ElectricalEnergyMeasurement", "CumulativeEnergyExported").energy == 2_500_000


def test_stepping_equals_fast_forward_with_every_appliance():
    def build():
        home = home_with(("oven", "oven", {}), ("hob", "cooktop", {}), ("mw", "microwave_oven", {}),
                         ("hood", "extractor_hood", {}), ("wh", "water_heater", {"draws": [["00:20", 80]]}),
                         ("v", "water_valve", {}), ("p", "pump", {}), ("ev", "evse", {}),
                         ("pv", "solar_power", {}), ("bat", "battery_storage", {}), ("b", "generic_switch", {}),
                         start="2026-06-01T05:50:00")
        home.device("oven").invoke("OvenCavityOperationalState", "Start", endpoint_id=2)
        home.device("hob").invoke("TemperatureControl", "SetTemperature", {"targetTemperatureLevel": 2}, endpoint_id=3)
        home.device("mw").invoke("MicrowaveOvenControl", "SetCookingParameters", {"cookTime": 95,
                                                                                  "startAfterSetting": True})
        home.device("hood").write("FanControl", "PercentSetting", 60)
        home.device("v").invoke("ValveConfigurationAndControl", "Open", {"openDuration": 300})
        home.device("p").invoke("OnOff", "On")
        home.plug_in_ev("ev", capacity_kwh=10, soc_percent=50, target_percent=60)
        home.device("ev").invoke("EnergyEvse", "EnableCharging", {"chargingEnabledUntil": None,
                                                                  "minimumChargeCurrent": 6000,
                                                                  "maximumChargeCurrent": 32000})
        home.device("bat").invoke("DeviceEnergyManagement", "PowerAdjustRequest",
                                  {"power": -3_000_000, "duration": 1800, "cause": 0})
        home.press("b", presses=2)
        return home
    a, b = build(), build()
    a.step(3 * 3600 * 10)
    b.advance(3 * 3600)
    assert json.dumps(a.snapshot(), sort_keys=True) == json.dumps(b.snapshot(), sort_keys=True)


def test_kitchen_physics_oven_heats_cooking_smokes_hood_clears():
    def kitchen(*devices):
        home = home_with(*devices)
        return home, home.rooms["kitchen"]
    home, room = kitchen(("oven", "oven", {}))
    before = room.temperature
    home.device("oven").invoke("OvenCavityOperationalState", "Start", endpoint_id=2)
    home.advance(3000)
    assert room.temperature > before + 0.3          # a bake warms the kitchen
    home, room = kitchen(("hob", "cooktop", {}), ("hood", "extractor_hood", {}))
    pm_before, rh_before = room.pm10, room.humidity
    home.device("hob").invoke("TemperatureControl", "SetTemperature", {"targetTemperatureLevel": 4}, endpoint_id=2)
    home.advance(600)
    smoky = room.pm10
    assert smoky > pm_before + 30 and room.humidity > rh_before + 3   # frying: smoke and steam
    home.device("hob").invoke("OnOff", "Off")
    home.device("hood").write("FanControl", "PercentSetting", 100)
    home.advance(600)
    assert room.pm10 < smoky / 3                     # the hood's filters clear the smoke


def test_the_modern_home_loads_and_runs_a_day_exactly():
    from twin.home import Home
    a, b = Home.embedded("modern"), Home.embedded("modern")
    assert 40 <= len(a.devices) <= 50
    assert {"evse", "solar_power", "battery_storage", "water_heater", "extended_color_light", "on_off_plug",
            "door_lock", "contact_sensor", "smoke_co_alarm"} <= {d.type.key for d in a.devices.values()}
    a.press("living_room_switch", "toggle")
    b.press("living_room_switch", "toggle")
    assert a.device("living_room_lamp").read("OnOff", "OnOff")
    a.step(2 * 3600 * 10)
    b.advance(2 * 3600)
    assert json.dumps(a.snapshot(), sort_keys=True) == json.dumps(b.snapshot(), sort_keys=True)
    b.advance(22 * 3600)
    assert b.device("utility_solar").read("ElectricalEnergyMeasurement", "CumulativeEnergyExported").energy > 0
    assert b.device("utility_water_heater").read("WaterHeaterManagement", "HeatDemand") in (0, 1)
    with pytest.raises(Exception, match="embedded homes: default, modern"):
        Home.embedded("castle")


def test_evse_charging_targets_are_kept_per_day():
    home = home_with(("ev", "evse", {}))
    ev = home.device("ev")
    T, S = C.EnergyEvse.Structs.ChargingTargetStruct, C.EnergyEvse.Structs.ChargingTargetScheduleStruct
    weekday = S(dayOfWeekForSequence=0x3E, chargingTargets=[T(targetTimeMinutesPastMidnight=420, targetSoC=80)])
    sunday = S(dayOfWeekForSequence=0x01, chargingTargets=[T(targetTimeMinutesPastMidnight=600, addedEnergy=5000)])
    ev.invoke("EnergyEvse", "SetTargets", {"chargingTargetSchedules": [weekday, sunday]})
    got = ev.invoke("EnergyEvse", "GetTargets").chargingTargetSchedules
    assert sorted((s.dayOfWeekForSequence, s.chargingTargets[0].targetTimeMinutesPastMidnight) for s in got) \
        == [(0x01, 600), (0x3E, 420)]
    snapshot = Home.restore(home.snapshot())
    assert len(snapshot.device("ev").invoke("EnergyEvse", "GetTargets").chargingTargetSchedules) == 2
    with pytest.raises(MatterError) as err:
        ev.invoke("EnergyEvse", "SetTargets", {"chargingTargetSchedules": [
            S(dayOfWeekForSequence=0x80, chargingTargets=[])]})
    assert err.value.status == Status.CONSTRAINT_ERROR
    ev.invoke("EnergyEvse", "ClearTargets")
    assert ev.invoke("EnergyEvse", "GetTargets").chargingTargetSchedules == []
