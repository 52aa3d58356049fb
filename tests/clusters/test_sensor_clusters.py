"""Sensor servers: BooleanState(+Configuration), OccupancySensing, SmokeCoAlarm, pressure and flow."""
import pytest
from chip.clusters import Objects as Clusters

from clusters.devices import create_device
from clusters.status import MatterError, Status

SCO = Clusters.SmokeCoAlarm


class Clock:
    tick = 0


def make(key, **options):
    device = create_device("d", key, **options)
    clock = Clock()
    events = []
    for server in device.servers():
        server.clock = clock
        server.event_sink = lambda s, e: events.append(e)
    return device, clock, events


def test_boolean_state_event_and_configuration_alarms():
    device, _, events = make("water_leak_detector")
    state, config = device.locate("BooleanState"), device.locate("BooleanStateConfiguration")
    state.set_state(True)
    assert device.read("BooleanState", "StateValue") is True
    assert config.get("AlarmsActive") == 3
    assert [type(e).__name__ for e in events] == ["StateChange", "AlarmsStateChanged"]
    device.invoke("BooleanStateConfiguration", "SuppressAlarm", {"alarmsToSuppress": 2})
    assert config.get("AlarmsSuppressed") == 2
    device.invoke("BooleanStateConfiguration", "EnableDisableAlarm", {"alarmsToEnableDisable": 1})
    assert (config.get("AlarmsActive"), config.get("AlarmsSuppressed")) == (1, 0)
    with pytest.raises(MatterError) as exc:
        device.invoke("BooleanStateConfiguration", "EnableDisableAlarm", {"alarmsToEnableDisable": 4})
    assert exc.value.status == Status.CONSTRAINT_ERROR
    with pytest.raises(MatterError) as exc:
        device.invoke("BooleanStateConfiguration", "SuppressAlarm", {"alarmsToSuppress": 2})
    assert exc.value.status == Status.INVALID_IN_STATE
    with pytest.raises(MatterError) as exc:
        device.write("BooleanStateConfiguration", "CurrentSensitivityLevel", 3)
    assert exc.value.status == Status.CONSTRAINT_ERROR
    state.set_state(False)
    assert config.get("AlarmsActive") == 0


def test_occupancy_holds_then_clears():
    device, clock, events = make("occupancy_sensor", hold_time_s=5)
    occupancy = device.locate("OccupancySensing")
    occupancy.set_present(True)
    occupancy.set_present(False)
    assert device.read("OccupancySensing", "Occupancy") == 1 and occupancy.next_event_tick() == 50
    clock.tick = 50
    occupancy.advance_to(50)
    assert device.read("OccupancySensing", "Occupancy") == 0
    assert [e.occupancy for e in events] == [1, 0]
    with pytest.raises(MatterError) as exc:
        device.write("OccupancySensing", "HoldTime", 0)
    assert exc.value.status == Status.CONSTRAINT_ERROR


def test_smoke_alarm_expressed_state_and_self_test():
    device, clock, events = make("smoke_co_alarm")
    alarm = device.locate("SmokeCoAlarm")
    device.invoke("SmokeCoAlarm", "SelfTestRequest")
    assert alarm.get("ExpressedState") == SCO.Enums.ExpressedStateEnum.kTesting and alarm.get("TestInProgress")
    clock.tick = alarm.next_event_tick()
    alarm.advance_to(clock.tick)
    assert not alarm.get("TestInProgress") and isinstance(events[-1], SCO.Events.AllClear)
    assert any(isinstance(e, SCO.Events.SelfTestComplete) for e in events)
    alarm.sense_co(1)
    alarm.sense_smoke(2)
    assert alarm.get("ExpressedState") == SCO.Enums.ExpressedStateEnum.kSmokeAlarm   # smoke first
    with pytest.raises(MatterError) as exc:
        device.invoke("SmokeCoAlarm", "SelfTestRequest")
    assert exc.value.status == Status.BUSY
    alarm.sense_smoke(0)
    assert alarm.get("ExpressedState") == SCO.Enums.ExpressedStateEnum.kCOAlarm
    device.locate("PowerSource").set("BatChargeLevel", Clusters.PowerSource.Enums.BatChargeLevelEnum.kWarning)
    assert alarm.get("BatteryAlert") == SCO.Enums.AlarmStateEnum.kWarning


def test_smoke_alarm_expiry_date():
    # ExpiryDate is epoch-s, counted from 2000-01-01 (Matter's epoch): 2034-03-01 for a ten-year alarm.
    assert make("smoke_co_alarm")[0].locate("SmokeCoAlarm").get("ExpiryDate") == 1_078_099_200
    # The optional attribute can be left out (`expiry: false`), as some products do.
    assert "ExpiryDate" not in make("smoke_co_alarm", expiry=False)[0].locate("SmokeCoAlarm").attributes


def test_pressure_and_flow_units():
    device, _, _ = make("pressure_sensor")
    server = device.locate("PressureMeasurement")
    server.sensor_source = lambda: 101.3
    assert device.read("PressureMeasurement", "MeasuredValue") == 1013
    flow, _, _ = make("flow_sensor")
    assert flow.read("FlowMeasurement", "MeasuredValue") == 0


def test_reports_drain_a_sensor_battery():
    device, _, _ = make("contact_sensor")
    state = device.locate("BooleanState")
    for i in range(500):
        state.set_state(i % 2 == 0)
    assert device.read("PowerSource", "BatPercentRemaining") == 2 * 99     # 500 reports at 0.002 %
