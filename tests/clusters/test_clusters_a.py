"""Cluster servers part A: level, fan, thermostat, window covering, identify, measurement,
media and basic information."""
import json

import pytest
from chip.clusters import Objects as Clusters
from chip.clusters.Types import NullValue

from clusters.basic_information import BasicInformationServer
from clusters.device import Device, DeviceType, Endpoint
from clusters.fan_control import FanControlServer
from clusters.identify import IdentifyServer
from clusters.level_control import LevelControlServer
from clusters.measurement import (
    IlluminanceMeasurementServer,
    Pm10ConcentrationMeasurementServer,
    RelativeHumidityMeasurementServer,
    TemperatureMeasurementServer,
)
from clusters.media import ChannelServer, KeypadInputServer, MediaPlaybackServer
from clusters.onoff import OnOffServer
from clusters.status import MatterError, Status
from clusters.thermostat import ThermostatServer
from clusters.window_covering import WindowCoveringServer


class FakeClock:
    def __init__(self, tick=0):
        self.tick = tick


def clocked(server, clock=None):
    server.clock = clock or FakeClock()
    return server


def error_of(call, *args):
    with pytest.raises(MatterError) as err:
        call(*args)
    return err.value


def compose(*servers, key="test"):
    """A device with one application endpoint holding `servers`, sharing one clock."""
    clock = FakeClock()
    ep = Endpoint(1, [(0x0101, 3)])
    for server in servers:
        ep.add(clocked(server, clock))
    Device("dev", DeviceType(key, key, 0x0101, 3, lambda: []), [ep], root_servers=[])
    return clock


def mtl(level, tt=0, mask=0, override=0):
    return {"level": level, "transitionTime": tt, "optionsMask": mask, "optionsOverride": override}


def run_ticks(server, clock, until):
    """Advance one tick at a time, applying events the way the home does."""
    while clock.tick < until:
        clock.tick += 1
        server.advance_to(clock.tick)


def jump(server, clock, until):
    """Fast-forward: visit only the announced event ticks, then the final tick."""
    while (event := server.next_event_tick()) is not None and event <= until:
        clock.tick = event
        server.advance_to(event)
    clock.tick = until


# ---- LevelControl --------------------------------------------------------------------
def test_level_shape_per_feature():
    light = LevelControlServer(lighting=True)
    assert light.read("FeatureMap") == 0x03 and light.read("ClusterRevision") == 5
    assert light.read("MinLevel") == 1 and light.read("MaxLevel") == 254
    assert light.read("CurrentLevel") is NullValue  # spec default: unknown
    ids = light.read("AttributeList")
    assert Clusters.LevelControl.Attributes.RemainingTime.attribute_id in ids
    assert Clusters.LevelControl.Attributes.CurrentFrequency.attribute_id not in ids
    volume = LevelControlServer(MaxLevel=100, CurrentLevel=20)
    assert volume.read("FeatureMap") == 0x01 and volume.read("MinLevel") == 0
    assert Clusters.LevelControl.Attributes.RemainingTime.attribute_id not in volume.read("AttributeList")
    assert volume.read("AcceptedCommandList") == [0, 1, 2, 3, 4, 5, 6, 7]
    assert error_of(lambda: LevelControlServer(lighting=True, CurrentLevel=0)).status == Status.CONSTRAINT_ERROR


def test_level_transition_mid_way_and_end():
    s = clocked(LevelControlServer(lighting=True, CurrentLevel=10))
    s.invoke("MoveToLevel", mtl(110, tt=20))
    assert s.next_event_tick() == 20
    s.clock.tick = 10
    assert s.read("CurrentLevel") == 60 and s.read("RemainingTime") == 10
    s.clock.tick = 15
    assert s.read("CurrentLevel") == 85 and s.read("RemainingTime") == 5
    s.clock.tick = 20
    s.advance_to(20)
    assert s.read("CurrentLevel") == 110 and s.read("RemainingTime") == 0
    assert s.next_event_tick() is None


def test_level_path_independence():
    def scenario():
        s = clocked(LevelControlServer(lighting=True, CurrentLevel=200))
        s.invoke("MoveToLevel", mtl(20, tt=37))
        return s
    stepped, jumped = scenario(), scenario()
    run_ticks(stepped, stepped.clock, 23)
    jump(jumped, jumped.clock, 23)
    assert stepped.state() == jumped.state()
    assert stepped.read("CurrentLevel") == jumped.read("CurrentLevel") == 200 - 180 * 23 // 37
    # a new command mid-way, then to past the end
    for s in (stepped, jumped):
        s.invoke("Move", {"moveMode": 0, "rate": 30, "optionsMask": 0, "optionsOverride": 0})
    run_ticks(stepped, stepped.clock, 200)
    jump(jumped, jumped.clock, 200)
    assert stepped.state() == jumped.state()
    assert stepped.read("CurrentLevel") == 254 and stepped.data_version == jumped.data_version


def test_level_move_rate_stop_and_step():
    s = clocked(LevelControlServer(lighting=True, CurrentLevel=10))
    s.invoke("Move", {"moveMode": 0, "rate": 10, "optionsMask": 0, "optionsOverride": 0})
    assert s.next_event_tick() == 244  # 244 levels at 10 per second
    s.clock.tick = 50
    assert s.read("CurrentLevel") == 60
    s.invoke("Stop", {"optionsMask": 0, "optionsOverride": 0})
    assert s.next_event_tick() is None and s.read("CurrentLevel") == 60
    s.clock.tick = 90
    assert s.read("CurrentLevel") == 60
    s.invoke("Step", {"stepMode": 1, "stepSize": 100, "transitionTime": None,
                      "optionsMask": 0, "optionsOverride": 0})
    assert s.read("CurrentLevel") == 1  # clamped to MinLevel, at once for null TransitionTime
    s.invoke("Step", {"stepMode": 0, "stepSize": 40, "transitionTime": 20,
                      "optionsMask": 0, "optionsOverride": 0})
    s.clock.tick = 100
    assert s.read("CurrentLevel") == 21 and s.read("RemainingTime") == 10
    # null rate with null DefaultMoveRate moves at once; DefaultMoveRate is used when set
    s.invoke("Move", {"moveMode": 1, "rate": None, "optionsMask": 0, "optionsOverride": 0})
    assert s.read("CurrentLevel") == 1 and s.next_event_tick() is None
    s.write("DefaultMoveRate", 50)
    s.invoke("Move", {"moveMode": 0, "rate": None, "optionsMask": 0, "optionsOverride": 0})
    assert s.next_event_tick() == 100 + 51  # 253 levels at 50/s, rounded up to a tick


def test_level_errors():
    s = clocked(LevelControlServer(lighting=True, CurrentLevel=10))
    assert error_of(s.invoke, "MoveToLevel", mtl(255)).status == Status.CONSTRAINT_ERROR
    assert error_of(s.invoke, "Move", {"moveMode": 0, "rate": 0, "optionsMask": 0,
                                       "optionsOverride": 0}).status == Status.INVALID_COMMAND
    assert error_of(s.invoke, "Step", {"stepMode": 0, "stepSize": 0, "transitionTime": 0, "optionsMask": 0,
                                       "optionsOverride": 0}).status == Status.INVALID_COMMAND
    assert error_of(s.invoke, "MoveToLevel", {"level": 5}).status == Status.INVALID_COMMAND
    assert error_of(s.invoke, "Move", {"moveMode": 2, "rate": 1, "optionsMask": 0,
                                       "optionsOverride": 0}).status == Status.CONSTRAINT_ERROR
    assert error_of(s.invoke, "MoveToClosestFrequency", {"frequency": 5}).status == Status.UNSUPPORTED_COMMAND
    assert error_of(s.write, "CurrentLevel", 5).status == Status.UNSUPPORTED_WRITE
    assert error_of(s.write, "OnLevel", 0).status == Status.CONSTRAINT_ERROR
    assert error_of(s.write, "Options", 0x04).status == Status.CONSTRAINT_ERROR
    assert error_of(s.write, "DefaultMoveRate", 0).status == Status.CONSTRAINT_ERROR
    assert s.read("CurrentLevel") == 10 and s.data_version == 0  # nothing half-applied
    s.write("OnLevel", None)
    s.write("Options", 0x03)
    assert s.read("Options") == 3


def dimmable():
    onoff, level = OnOffServer(lighting=True), LevelControlServer(lighting=True, CurrentLevel=100)
    clock = compose(onoff, level)
    return onoff, level, clock


def test_level_execute_if_off_options():
    onoff, level, _ = dimmable()
    level.invoke("MoveToLevel", mtl(200))
    assert level.read("CurrentLevel") == 100  # off and no ExecuteIfOff: ignored
    level.invoke("MoveToLevel", mtl(150, mask=1, override=1))
    assert level.read("CurrentLevel") == 150  # override says execute
    level.write("Options", 1)
    level.invoke("MoveToLevel", mtl(160))
    assert level.read("CurrentLevel") == 160
    level.invoke("MoveToLevel", mtl(170, mask=1, override=0))
    assert level.read("CurrentLevel") == 160  # mask wins over Options
    assert onoff.read("OnOff") is False  # plain commands never switch OnOff
    onoff.On()
    level.write("Options", 0)
    level.invoke("MoveToLevel", mtl(180))
    assert level.read("CurrentLevel") == 180


def test_level_with_onoff_variants():
    onoff, level, clock = dimmable()
    level.invoke("MoveToLevelWithOnOff", mtl(200, tt=10))
    assert onoff.read("OnOff") is True
    clock.tick = 5
    assert level.read("CurrentLevel") == 150  # OnLevel is null: no jump on the way
    clock.tick = 10
    level.advance_to(10)
    level.invoke("MoveToLevelWithOnOff", mtl(0, tt=10))  # below MinLevel: clamps to 1
    clock.tick = 15
    level.advance_to(15)
    assert onoff.read("OnOff") is True and level.read("CurrentLevel") == 101
    clock.tick = 20
    level.advance_to(20)
    assert onoff.read("OnOff") is False and level.read("CurrentLevel") == 1
    level.invoke("StepWithOnOff", {"stepMode": 0, "stepSize": 9, "transitionTime": 0,
                                   "optionsMask": 0, "optionsOverride": 0})
    assert onoff.read("OnOff") is True and level.read("CurrentLevel") == 10
    level.invoke("MoveWithOnOff", {"moveMode": 1, "rate": 90, "optionsMask": 0, "optionsOverride": 0})
    assert level.next_event_tick() == 21  # 9 levels at 90 per second: one tick
    assert onoff.read("OnOff") is True
    clock.tick = 21
    level.advance_to(21)
    assert onoff.read("OnOff") is False and level.read("CurrentLevel") == 1
    assert level.next_event_tick() is None


def test_level_move_with_onoff_down_turns_off_at_end():
    onoff, level, clock = dimmable()
    onoff.On()
    level.invoke("MoveWithOnOff", {"moveMode": 1, "rate": 99, "optionsMask": 0, "optionsOverride": 0})
    assert level.next_event_tick() == 10  # 99 levels at 99 per second
    clock.tick = 9
    assert onoff.read("OnOff") is True
    clock.tick = 10
    level.advance_to(10)
    assert onoff.read("OnOff") is False and level.read("CurrentLevel") == 1


def test_level_follows_on_level_when_turned_on():
    onoff, level, clock = dimmable()
    onoff.On()
    assert level.read("CurrentLevel") == 100  # OnLevel null: previous level kept
    onoff.Off()
    level.write("OnLevel", 40)
    level.write("OnTransitionTime", 20)
    onoff.On()
    clock.tick = 10
    assert level.read("CurrentLevel") == 70 and level.read("RemainingTime") == 10
    clock.tick = 20
    level.advance_to(20)
    assert level.read("CurrentLevel") == 40
    # with OnTransitionTime null, OnOffTransitionTime is used (0: at once)
    onoff.Off()
    level.write("OnLevel", 90)
    level.write("OnTransitionTime", None)
    onoff.Toggle()
    assert level.read("CurrentLevel") == 90


def test_level_state_round_trip_mid_transition():
    s = clocked(LevelControlServer(lighting=True, CurrentLevel=10))
    s.invoke("MoveToLevel", mtl(110, tt=20))
    s.clock.tick = 7
    copy = clocked(LevelControlServer(lighting=True), FakeClock(7))
    copy.load_state(json.loads(json.dumps(s.state())))
    assert copy.state() == s.state() and copy.read("CurrentLevel") == s.read("CurrentLevel") == 45
    assert copy.next_event_tick() == 20


def test_level_start_up_current_level():
    s = clocked(LevelControlServer(lighting=True, CurrentLevel=80, MinLevel=5))
    s.apply_start_up()
    assert s.read("CurrentLevel") == 80  # null: previous level
    s.write("StartUpCurrentLevel", 0)
    s.apply_start_up()
    assert s.read("CurrentLevel") == 5  # 0 means MinLevel
    s.write("StartUpCurrentLevel", 200)
    s.invoke("MoveToLevel", mtl(10, tt=50))
    s.apply_start_up()
    assert s.read("CurrentLevel") == 200 and s.next_event_tick() is None
    assert error_of(s.write, "StartUpCurrentLevel", 255).status == Status.CONSTRAINT_ERROR
    assert error_of(LevelControlServer().write, "StartUpCurrentLevel", 5).status == Status.UNSUPPORTED_ATTRIBUTE


# ---- FanControl ----------------------------------------------------------------------
def test_fan_modes_drive_percent():
    fan = FanControlServer()
    assert fan.read("FeatureMap") == int(Clusters.FanControl.Bitmaps.Feature.kStep)
    assert fan.read("FanModeSequence") == 0 and fan.read("ClusterRevision") == 4
    for mode, percent in ((1, 33), (2, 66), (3, 100), (0, 0)):
        fan.write("FanMode", mode)
        assert fan.read("PercentSetting") == percent and fan.read("PercentCurrent") == percent
    fan.write("FanMode", 4)  # deprecated On means High
    assert fan.read("FanMode") == 3 and fan.read("PercentCurrent") == 100
    err = error_of(fan.write, "FanMode", 5)
    assert err.status == Status.CONSTRAINT_ERROR and "3 (High)" in err.message
    two = FanControlServer(FanModeSequence=1)
    two.write("FanMode", 1)
    assert two.read("PercentSetting") == 50
    assert error_of(two.write, "FanMode", 2).status == Status.CONSTRAINT_ERROR


def test_fan_percent_drives_mode():
    fan = FanControlServer(auto=True)
    assert fan.read("FeatureMap") == 0x12 and fan.read("FanModeSequence") == 2
    for percent, mode in ((0, 0), (1, 1), (33, 1), (34, 2), (66, 2), (67, 3), (100, 3)):
        fan.write("PercentSetting", percent)
        assert fan.read("FanMode") == mode and fan.read("PercentCurrent") == percent
    fan.write("FanMode", 5)
    assert fan.read("PercentSetting") is NullValue and fan.read("PercentCurrent") == 66
    fan.write("FanMode", 6)  # deprecated Smart means Auto when supported
    assert fan.read("FanMode") == 5
    fan.write("PercentSetting", 40)
    version = fan.data_version
    fan.write("PercentSetting", None)  # spec: null leaves it unchanged
    assert fan.read("PercentSetting") == 40 and fan.data_version == version
    assert error_of(fan.write, "PercentSetting", 101).status == Status.CONSTRAINT_ERROR
    assert error_of(fan.write, "PercentCurrent", 10).status == Status.UNSUPPORTED_WRITE
    assert error_of(fan.write, "FanModeSequence", 0).status == Status.UNSUPPORTED_WRITE
    assert error_of(fan.write, "FanMode", 9).status == Status.CONSTRAINT_ERROR
    assert fan.read("PercentSetting") == 40


def test_fan_step():
    fan = FanControlServer()
    fan.invoke("Step", {"direction": 0})
    assert fan.read("PercentSetting") == 33 and fan.read("FanMode") == 1
    fan.invoke("Step", {"direction": 0})
    fan.invoke("Step", {"direction": 0})
    fan.invoke("Step", {"direction": 0})  # no wrap: stays at High
    assert fan.read("PercentSetting") == 100
    fan.invoke("Step", {"direction": 0, "wrap": True})  # wraps to Off (lowestOff default true)
    assert fan.read("FanMode") == 0
    fan.invoke("Step", {"direction": 1, "wrap": True, "lowestOff": False})
    assert fan.read("PercentSetting") == 100
    fan.write("PercentSetting", 40)
    fan.invoke("Step", {"direction": 1, "lowestOff": False})
    assert fan.read("PercentSetting") == 33
    fan.invoke("Step", {"direction": 1, "lowestOff": False})  # already lowest
    assert fan.read("PercentSetting") == 33
    fan.invoke("Step", {"direction": 1})
    assert fan.read("PercentSetting") == 0 and fan.read("FanMode") == 0
    assert error_of(fan.invoke, "Step", {}).status == Status.INVALID_COMMAND
    assert error_of(fan.invoke, "Step", {"direction": 7}).status == Status.CONSTRAINT_ERROR
    assert error_of(FanControlServer(step=False).invoke, "Step", {"direction": 0}).status \
        == Status.UNSUPPORTED_COMMAND


def test_fan_sequence_must_match_auto_feature():
    assert error_of(lambda: FanControlServer(auto=False, FanModeSequence=2)).status == Status.CONSTRAINT_ERROR
    assert error_of(lambda: FanControlServer(auto=True, FanModeSequence=5)).status == Status.CONSTRAINT_ERROR


# ---- Thermostat ----------------------------------------------------------------------
def test_thermostat_shape_and_local_temperature():
    ac = ThermostatServer(heating=False, cooling=True)
    assert ac.read("FeatureMap") == 0x02 and ac.read("ClusterRevision") == 8
    assert ac.read("ControlSequenceOfOperation") == 0 and ac.read("SystemMode") == 3
    ids = ac.read("AttributeList")
    assert Clusters.Thermostat.Attributes.OccupiedCoolingSetpoint.attribute_id in ids
    assert Clusters.Thermostat.Attributes.OccupiedHeatingSetpoint.attribute_id not in ids
    assert error_of(ac.read, "OccupiedHeatingSetpoint").status == Status.UNSUPPORTED_ATTRIBUTE
    assert ac.read("LocalTemperature") is NullValue
    room = {"t": 23.456}
    ac.sensor_source = lambda: room["t"]
    before = ac.state()
    assert ac.read("LocalTemperature") == 2346
    room["t"] = -5.0
    assert ac.read("LocalTemperature") == -500
    assert ac.state() == before  # derived, never stored
    assert error_of(ac.write, "LocalTemperature", 2000).status == Status.UNSUPPORTED_WRITE
    assert error_of(lambda: ThermostatServer(heating=True, cooling=False, auto=True)).status \
        == Status.CONSTRAINT_ERROR


def test_thermostat_setpoint_limits_and_deadband():
    t = ThermostatServer(auto=True)
    assert t.read("FeatureMap") == 0x23 and t.read("SystemMode") == 1
    assert t.read("MinSetpointDeadBand") == 25
    t.write("OccupiedCoolingSetpoint", 2400)
    assert t.read("OccupiedCoolingSetpoint") == 2400
    assert error_of(t.write, "OccupiedCoolingSetpoint", 3300).status == Status.CONSTRAINT_ERROR
    assert error_of(t.write, "OccupiedHeatingSetpoint", 600).status == Status.CONSTRAINT_ERROR
    err = error_of(t.write, "OccupiedHeatingSetpoint", 2200)  # within 2.5 °C of cooling 24.0
    assert err.status == Status.CONSTRAINT_ERROR and "MinSetpointDeadBand" in err.message
    t.write("OccupiedHeatingSetpoint", 2150)
    # limits keep a deadband apart too (the spec defaults 3000/3200 do not, so lower heat first)
    assert error_of(t.write, "MaxCoolSetpointLimit", 3000).status == Status.CONSTRAINT_ERROR
    t.write("MaxHeatSetpointLimit", 2000)  # the setpoint follows into the new limits
    assert t.read("OccupiedHeatingSetpoint") == 2000
    t.write("MaxCoolSetpointLimit", 3000)
    assert error_of(t.write, "MaxCoolSetpointLimit", 1500).status == Status.CONSTRAINT_ERROR
    # revision 8 (since 7): the deadband goes to 127 (12.7 °C) where the gap allows it
    assert error_of(t.write, "MinSetpointDeadBand", 128).status == Status.CONSTRAINT_ERROR
    t.write("OccupiedHeatingSetpoint", 1400)
    assert error_of(t.write, "MinSetpointDeadBand", 101).status == Status.CONSTRAINT_ERROR   # gap is 10.0 °C
    t.write("MinSetpointDeadBand", 100)
    assert t.read("MinSetpointDeadBand") == 100 and t.deadband == 1000
    assert error_of(t.write, "AbsMinHeatSetpointLimit", 500).status == Status.UNSUPPORTED_WRITE
    assert error_of(lambda: ThermostatServer(OccupiedCoolingSetpoint=1000)).status == Status.CONSTRAINT_ERROR


def test_thermostat_system_mode_against_sequence():
    t = ThermostatServer()  # heating and cooling, no Auto
    assert t.read("SystemMode") == 3
    t.write("SystemMode", 4)
    err = error_of(t.write, "SystemMode", 1)
    assert err.status == Status.CONSTRAINT_ERROR and "4 (Heat)" in err.message
    t.write("ControlSequenceOfOperation", 0)  # cooling only: Heat no longer possible
    assert t.read("SystemMode") == 0
    assert error_of(t.write, "SystemMode", 4).status == Status.CONSTRAINT_ERROR
    t.write("SystemMode", 3)
    t.write("SystemMode", 8)  # Dry is always allowed
    cool_only = ThermostatServer(heating=False)
    assert error_of(cool_only.write, "ControlSequenceOfOperation", 2).status == Status.CONSTRAINT_ERROR
    assert error_of(cool_only.write, "SystemMode", 2).status == Status.CONSTRAINT_ERROR  # not an enum value


def test_thermostat_setpoint_raise_lower():
    t = ThermostatServer(auto=True)
    t.invoke("SetpointRaiseLower", {"mode": 0, "amount": 50})  # heat +5 °C pushes cooling
    assert (t.read("OccupiedHeatingSetpoint"), t.read("OccupiedCoolingSetpoint")) == (2500, 2750)
    t.invoke("SetpointRaiseLower", {"mode": 0, "amount": 100})  # cooling hits its limit
    assert (t.read("OccupiedHeatingSetpoint"), t.read("OccupiedCoolingSetpoint")) == (2950, 3200)
    t.invoke("SetpointRaiseLower", {"mode": 2, "amount": -20})
    assert (t.read("OccupiedHeatingSetpoint"), t.read("OccupiedCoolingSetpoint")) == (2750, 3000)
    t.invoke("SetpointRaiseLower", {"mode": 1, "amount": -128})  # cool pushes heat down
    assert (t.read("OccupiedHeatingSetpoint"), t.read("OccupiedCoolingSetpoint")) == (1470, 1720)
    ac = ThermostatServer(heating=False)
    ac.invoke("SetpointRaiseLower", {"mode": 1, "amount": -128})  # clamped at MinCool
    assert ac.read("OccupiedCoolingSetpoint") == 1600
    assert error_of(ac.invoke, "SetpointRaiseLower", {"mode": 0, "amount": 5}).status == Status.INVALID_COMMAND
    assert error_of(ac.invoke, "SetpointRaiseLower", {"mode": 1, "amount": 200}).status == Status.CONSTRAINT_ERROR
    assert error_of(ac.invoke, "SetpointRaiseLower", {"mode": 1}).status == Status.INVALID_COMMAND
    assert error_of(ac.invoke, "SetWeeklySchedule", {}).status == Status.UNSUPPORTED_COMMAND


# ---- WindowCovering ------------------------------------------------------------------
def test_window_covering_motion():
    w = clocked(WindowCoveringServer())
    assert w.read("FeatureMap") == 0x05 and w.read("ClusterRevision") == 5
    assert w.read("ConfigStatus") & 0x08  # LiftPositionAware
    w.invoke("GoToLiftPercentage", {"liftPercent100thsValue": 5000})
    assert w.next_event_tick() == 100  # half of a 20 s travel
    assert w.read("TargetPositionLiftPercent100ths") == 5000
    assert w.read("OperationalStatus") == 0b1010  # closing, global and lift
    w.clock.tick = 50
    assert w.read("CurrentPositionLiftPercent100ths") == 2500 and w.read("CurrentPositionLiftPercentage") == 25
    w.clock.tick = 100
    w.advance_to(100)
    assert w.read("CurrentPositionLiftPercent100ths") == 5000 and w.read("OperationalStatus") == 0
    assert w.read("NumberOfActuationsLift") == 1 and w.next_event_tick() is None
    w.invoke("UpOrOpen")
    assert w.read("OperationalStatus") == 0b0101  # opening
    w.clock.tick = 140
    w.invoke("StopMotion")
    assert w.read("CurrentPositionLiftPercent100ths") == 3000
    assert w.read("TargetPositionLiftPercent100ths") == 3000 and w.read("NumberOfActuationsLift") == 2
    w.clock.tick = 300
    assert w.read("CurrentPositionLiftPercent100ths") == 3000 and w.next_event_tick() is None
    w.invoke("DownOrClose")
    w.clock.tick = 310
    w.invoke("UpOrOpen")  # reverses from where it is
    assert w.read("CurrentPositionLiftPercent100ths") == 3500 and w.next_event_tick() == 310 + 70


def test_window_covering_path_independence():
    def scenario():
        w = clocked(WindowCoveringServer(CurrentPositionLiftPercent100ths=1234))
        w.invoke("DownOrClose")
        return w
    stepped, jumped = scenario(), scenario()
    run_ticks(stepped, stepped.clock, 77)
    jump(jumped, jumped.clock, 77)
    assert stepped.state() == jumped.state()
    for w in (stepped, jumped):
        w.invoke("GoToLiftPercentage", {"liftPercent100thsValue": 10})
    run_ticks(stepped, stepped.clock, 400)
    jump(jumped, jumped.clock, 400)
    assert stepped.state() == jumped.state()
    assert stepped.read("CurrentPositionLiftPercent100ths") == 10
    assert stepped.read("NumberOfActuationsLift") == 1


def test_window_covering_errors_and_mode():
    w = clocked(WindowCoveringServer())
    assert error_of(w.invoke, "GoToLiftPercentage", {"liftPercent100thsValue": 10001}).status \
        == Status.CONSTRAINT_ERROR
    assert error_of(w.invoke, "GoToLiftPercentage", {}).status == Status.INVALID_COMMAND
    assert error_of(w.invoke, "GoToTiltPercentage", {"tiltPercent100thsValue": 1}).status \
        == Status.UNSUPPORTED_COMMAND
    assert error_of(w.write, "Type", 1).status == Status.UNSUPPORTED_WRITE
    assert error_of(w.write, "Mode", 0x10).status == Status.CONSTRAINT_ERROR
    w.invoke("DownOrClose")
    w.clock.tick = 20
    w.write("Mode", 0x05)  # maintenance + reversed: motion freezes
    assert w.read("ConfigStatus") & 0x01 == 0 and w.read("ConfigStatus") & 0x04
    assert w.read("CurrentPositionLiftPercent100ths") == 1000 and w.next_event_tick() is None
    assert error_of(w.invoke, "UpOrOpen").status == Status.BUSY
    w.write("Mode", 0)
    assert w.read("ConfigStatus") & 0x01
    w.invoke("UpOrOpen")
    assert w.next_event_tick() == 40


# ---- Identify ------------------------------------------------------------------------
def test_identify_countdown_and_effects():
    i = clocked(IdentifyServer())
    i.write("IdentifyTime", 3)
    i.clock.tick = 5
    assert i.read("IdentifyTime") == 3  # 2.5 s left, in whole seconds rounded up
    i.clock.tick = 11
    assert i.read("IdentifyTime") == 2 and i.next_event_tick() == 30
    i.clock.tick = 30
    i.advance_to(30)
    assert i.read("IdentifyTime") == 0 and i.next_event_tick() is None
    i.invoke("Identify", {"identifyTime": 60})
    i.invoke("TriggerEffect", {"effectIdentifier": 1, "effectVariant": 0})
    assert i.effect == 1 and i.next_event_tick() == 30 + 150
    i.invoke("TriggerEffect", {"effectIdentifier": 0xFF, "effectVariant": 0})
    assert i.effect is None and i.read("IdentifyTime") == 0 and i.next_event_tick() is None
    i.invoke("Identify", {"identifyTime": 10})
    i.invoke("Identify", {"identifyTime": 0})
    assert i.read("IdentifyTime") == 0 and i.next_event_tick() is None
    assert error_of(i.invoke, "TriggerEffect", {"effectIdentifier": 3, "effectVariant": 0}).status \
        == Status.CONSTRAINT_ERROR
    assert error_of(i.write, "IdentifyType", 1).status == Status.UNSUPPORTED_WRITE
    assert error_of(i.write, "IdentifyTime", 70000).status == Status.CONSTRAINT_ERROR


def test_identify_path_independence():
    def scenario():
        i = clocked(IdentifyServer())
        i.invoke("Identify", {"identifyTime": 7})
        i.invoke("TriggerEffect", {"effectIdentifier": 11, "effectVariant": 0})
        return i
    stepped, jumped = scenario(), scenario()
    run_ticks(stepped, stepped.clock, 75)
    jump(jumped, jumped.clock, 75)
    assert stepped.state() == jumped.state() and stepped.read("IdentifyTime") == 0


# ---- Measurement ---------------------------------------------------------------------
def test_measurement_sources_and_units():
    t = TemperatureMeasurementServer(MinMeasuredValue=-4000, MaxMeasuredValue=12500)
    assert t.read("MeasuredValue") is NullValue and t.read("ClusterRevision") == 4
    room = {"v": 21.5}
    t.sensor_source = lambda: room["v"]
    assert t.read("MeasuredValue") == 2150
    room["v"] = 300.0
    assert t.read("MeasuredValue") == 12500  # clamped to MaxMeasuredValue
    assert t.state()["attributes"]["MeasuredValue"] is None  # never stored
    fridge = TemperatureMeasurementServer(MeasuredValue=400)
    assert fridge.read("MeasuredValue") == 400
    h = RelativeHumidityMeasurementServer()
    h.sensor_source = lambda: 45.678
    assert h.read("MeasuredValue") == 4568
    h.sensor_source = lambda: 130.0
    assert h.read("MeasuredValue") == 10000
    h.sensor_source = lambda: None
    assert h.read("MeasuredValue") is NullValue
    assert error_of(h.write, "MeasuredValue", 1).status == Status.UNSUPPORTED_WRITE
    assert error_of(lambda: TemperatureMeasurementServer(MinMeasuredValue=5, MaxMeasuredValue=5)).status \
        == Status.CONSTRAINT_ERROR


@pytest.mark.parametrize("lux,value", [(0, 0), (1, 1), (10, 10001), (1000, 30001), (0.5, 1), (1e9, 0xFFFE)])
def test_illuminance_conversion(lux, value):
    s = IlluminanceMeasurementServer()
    s.sensor_source = lambda: lux
    assert s.read("MeasuredValue") == value


def test_pm10():
    p = Pm10ConcentrationMeasurementServer()
    assert p.read("FeatureMap") == 1 and p.read("ClusterRevision") == 3
    assert p.read("MeasurementUnit") == Clusters.Pm10ConcentrationMeasurement.Enums.MeasurementUnitEnum.kUgm3
    assert p.read("MeasurementMedium") == Clusters.Pm10ConcentrationMeasurement.Enums.MeasurementMediumEnum.kAir
    p.sensor_source = lambda: 42.254
    assert p.read("MeasuredValue") == 42.25           # the sensor resolves 0.01 µg/m³
    p.sensor_source = lambda: 42.756
    assert p.read("MeasuredValue") == 42.76
    p.sensor_source = lambda: -3.0
    assert p.read("MeasuredValue") == 0.0


# ---- Media ---------------------------------------------------------------------------
def status_of(response):
    return int(response.status)


def test_media_playback():
    m = MediaPlaybackServer()
    assert m.read("FeatureMap") == 0x02 and m.read("CurrentState") == 2
    assert m.read("GeneratedCommandList") == [0x0A]
    assert status_of(m.invoke("Pause")) == 1  # InvalidStateForCommand while not playing
    assert status_of(m.invoke("Play")) == 0 and m.read("CurrentState") == 0 and m.speed == 1
    for expected in (2, 4, 8, 16):
        m.invoke("FastForward")
        assert m.speed == expected
    assert status_of(m.invoke("FastForward", {})) == 4  # SpeedOutOfRange
    m.invoke("Rewind")
    assert m.speed == -1
    m.invoke("Rewind")
    assert m.speed == -2 and m.read("CurrentState") == 0
    m.invoke("Pause")
    assert m.read("CurrentState") == 1 and m.speed == 0
    m.invoke("Next")
    assert m.read("CurrentState") == 0
    m.invoke("Stop")
    assert m.read("CurrentState") == 2
    assert error_of(m.invoke, "Seek", {"position": 1}).status == Status.UNSUPPORTED_COMMAND
    copy = MediaPlaybackServer()
    m.invoke("StartOver")
    copy.load_state(json.loads(json.dumps(m.state())))
    assert copy.state() == m.state() and copy.speed == 1


def test_channel():
    c = ChannelServer()
    assert c.read("FeatureMap") == 0x03 and c.read("CurrentChannel").majorNumber == 1
    response = c.invoke("ChangeChannel", {"match": "Weather"})
    assert isinstance(response, Clusters.Channel.Commands.ChangeChannelResponse) and status_of(response) == 0
    assert (c.read("CurrentChannel").majorNumber, c.read("CurrentChannel").minorNumber) == (7, 1)
    assert status_of(c.invoke("ChangeChannel", {"match": "3"})) == 0
    assert c.read("CurrentChannel").name == "Movie Central"
    assert status_of(c.invoke("ChangeChannel", {"match": "kids"})) == 0
    assert status_of(c.invoke("ChangeChannel", {"match": "Opera"})) == 2  # NoMatches
    assert c.read("CurrentChannel").name == "Kids Zone"
    c.invoke("ChangeChannelByNumber", {"majorNumber": 9, "minorNumber": 0})
    assert c.read("CurrentChannel").callSign == "COOK"
    err = error_of(c.invoke, "ChangeChannelByNumber", {"majorNumber": 8, "minorNumber": 0})
    assert err.status == Status.CONSTRAINT_ERROR and "7.1" in err.message
    c.invoke("SkipChannel", {"count": 1})  # wraps past the end
    assert c.read("CurrentChannel").majorNumber == 1
    c.invoke("SkipChannel", {"count": -3})
    assert c.read("CurrentChannel").majorNumber == 6
    twins = ChannelServer(ChannelList=[{"majorNumber": 1, "minorNumber": 0, "name": "Same"},
                                       {"majorNumber": 2, "minorNumber": 0, "name": "Same"}])
    assert status_of(twins.invoke("ChangeChannel", {"match": "same"})) == 1  # MultipleMatches
    assert error_of(c.invoke, "ChangeChannel", {"channel": "x"}).status == Status.INVALID_COMMAND
    assert error_of(c.write, "CurrentChannel", None).status == Status.UNSUPPORTED_WRITE
    copy = ChannelServer()
    copy.load_state(json.loads(json.dumps(c.state())))
    assert copy.state() == c.state()


def test_keypad_drives_tv_siblings():
    onoff, volume, channel, playback, keypad = (OnOffServer(), LevelControlServer(MaxLevel=100, CurrentLevel=20),
                                                ChannelServer(), MediaPlaybackServer(), KeypadInputServer())
    compose(onoff, volume, channel, playback, keypad, key="tv")
    send = lambda key: status_of(keypad.invoke("SendKey", {"keyCode": key}))  # noqa: E731
    Key = Clusters.KeypadInput.Enums.CECKeyCodeEnum
    assert send(Key.kChannelUp) == 2  # InvalidKeyInCurrentState: the TV is off
    assert send(Key.kPower) == 0 and onoff.read("OnOff") is True
    assert send(Key.kChannelUp) == 0 and channel.read("CurrentChannel").majorNumber == 2
    assert send(Key.kChannelDown) == 0 and send(Key.kChannelDown) == 0
    assert channel.read("CurrentChannel").majorNumber == 9
    assert send(Key.kVolumeUp) == 0 and volume.read("CurrentLevel") == 21
    assert send(Key.kVolumeDown) == 0 and send(Key.kVolumeDown) == 0 and volume.read("CurrentLevel") == 19
    assert send(Key.kPlay) == 0 and playback.read("CurrentState") == 0
    assert send(Key.kSelect) == 0
    assert send(Key.kNumbers5) == 1  # UnsupportedKey
    assert send(Key.kPowerOffFunction) == 0 and onoff.read("OnOff") is False
    assert error_of(keypad.invoke, "SendKey", {"keyCode": 14}).status == Status.CONSTRAINT_ERROR
    lone = KeypadInputServer()
    assert status_of(lone.invoke("SendKey", {"keyCode": int(Key.kChannelUp)})) == 1


# ---- BasicInformation ----------------------------------------------------------------
def test_basic_information():
    b = BasicInformationServer(VendorName="Acme", VendorID=0xFFF2, ProductName="Lamp", ProductID=0x8001,
                               SerialNumber="SN-001", UniqueID="u-1")
    assert (b.read("VendorName"), b.read("VendorID"), b.read("ProductID")) == ("Acme", 0xFFF2, 0x8001)
    assert b.read("DataModelRevision") == 17 and b.read("SpecificationVersion") == 0x01030000
    assert b.read("CapabilityMinima").caseSessionsPerFabric >= 3 and b.read("ClusterRevision") == 3
    b.write("NodeLabel", "Living room lamp")
    b.write("Location", "KR")
    assert b.read("NodeLabel") == "Living room lamp" and b.read("Location") == "KR"
    for value in ("Korea", "kr", "K1", ""):
        assert error_of(b.write, "Location", value).status == Status.CONSTRAINT_ERROR
    assert error_of(b.write, "NodeLabel", "x" * 33).status == Status.CONSTRAINT_ERROR
    assert error_of(b.write, "NodeLabel", "\u00e9" * 17).status == Status.CONSTRAINT_ERROR   # 34 bytes
    b.write("NodeLabel", "\u00e9" * 16)                                                       # 32 bytes
    assert error_of(b.write, "NodeLabel", 5).status == Status.INVALID_DATA_TYPE
    assert error_of(b.write, "VendorName", "Other").status == Status.UNSUPPORTED_WRITE
    assert error_of(lambda: BasicInformationServer(SerialNumber="s" * 33)).status == Status.CONSTRAINT_ERROR
    assert error_of(lambda: BasicInformationServer(Colour="red")).status == Status.UNSUPPORTED_ATTRIBUTE


# ---- every server: describe and JSON snapshots ----------------------------------------
ALL_SERVERS = [
    lambda: LevelControlServer(lighting=True, CurrentLevel=5), lambda: FanControlServer(auto=True),
    lambda: ThermostatServer(auto=True), WindowCoveringServer, IdentifyServer,
    TemperatureMeasurementServer, RelativeHumidityMeasurementServer, IlluminanceMeasurementServer,
    Pm10ConcentrationMeasurementServer, MediaPlaybackServer, ChannelServer, KeypadInputServer,
    BasicInformationServer,
]


@pytest.mark.parametrize("make", ALL_SERVERS)
def test_snapshot_round_trip_and_describe(make):
    server = make()
    text = json.dumps(server.state())
    copy = make()
    copy.load_state(json.loads(text))
    assert copy.state() == server.state()
    for name in server.attributes:
        assert copy.read(name) == server.read(name)
    desc = server.describe()
    assert json.dumps(desc) and desc["id"] == server.cluster.id
    assert {a["name"] for a in desc["attributes"]} >= set(server.attributes)
