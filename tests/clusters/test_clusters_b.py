"""Cluster servers part B: operational state, modes, temperature control, laundry, alarms, energy."""
import json

import pytest
from chip.clusters import Objects as Clusters
from chip.clusters.Types import NullValue

from clusters.alarms import DishwasherAlarmServer
from clusters.device import Device, DeviceType, Endpoint
from clusters.energy import (
    DeviceEnergyManagementServer,
    ElectricalEnergyMeasurementServer,
    ElectricalPowerMeasurementServer,
    PowerSourceServer,
    PowerTopologyServer,
)
from clusters.laundry import LaundryDryerControlsServer, LaundryWasherControlsServer
from clusters.modes import (
    DRYER_MODES,
    DishwasherModeServer,
    LaundryWasherModeServer,
    ModeChangeStatus,
    ModeOption,
    RefrigeratorAndTemperatureControlledCabinetModeServer,
    RvcCleanModeServer,
    RvcRunModeServer,
)
from clusters.onoff import OnOffServer
from clusters.operational_state import OperationalStateServer, RvcOperationalStateServer
from clusters.status import MatterError, Status
from clusters.temperature_control import TemperatureControlServer

OS = Clusters.OperationalState
RVC = Clusters.RvcOperationalState
ERR = OS.Enums.ErrorStateEnum
CYCLE = [("pre-wash", 60), ("main wash", 180), ("rinse", 90), ("dry", 120)]  # 450 s


class FakeClock:
    def __init__(self, tick=0):
        self.tick = tick


def wire(*servers, clock=None):
    """Servers sharing one clock and one event log; returns (clock, events)."""
    clock = clock or FakeClock()
    events = []
    for s in servers:
        s.clock = clock
        s.event_sink = lambda server, event: events.append((clock.tick, event))
    return clock, events


def compose(*servers, device_type_id=0x75):
    """A device with the servers on endpoint 1 (attach hooks run, as in a home)."""
    ep = Endpoint(1, [(device_type_id, 1)])
    for s in servers:
        ep.add(s)
    dt = DeviceType("test_appliance", "Test appliance", device_type_id, 1, lambda **o: [ep])
    return Device("dev", dt, [ep], root_servers=[])


def error_id(response):
    return response.commandResponseState.errorStateID


def move(clock, servers, tick):
    """Fast-forward as a home does: visit each event tick in order, then land on `tick`."""
    while True:
        due = [t for s in servers if (t := s.next_event_tick()) is not None and t <= tick]
        if not due:
            break
        clock.tick = min(due)
        for s in servers:
            s.advance_to(clock.tick)
    clock.tick = tick


def step(clock, servers, tick):
    """Tick by tick, calling advance_to on every tick."""
    while clock.tick < tick:
        clock.tick += 1
        for s in servers:
            s.advance_to(clock.tick)


# ---- Operational State ---------------------------------------------------------------------------
def test_cycle_runs_to_completion_and_emits_operation_completion():
    ops = OperationalStateServer(cycle=CYCLE)
    clock, events = wire(ops)
    assert ops.read("PhaseList") == ["pre-wash", "main wash", "rinse", "dry"]
    assert ops.read("CurrentPhase") == 0 and ops.read("CountdownTime") is NullValue   # a PhaseList: not null
    assert error_id(ops.invoke("Start")) == ERR.kNoError
    assert ops.read("OperationalState") == OS.Enums.OperationalStateEnum.kRunning
    assert ops.read("CountdownTime") == 450 and ops.read("CurrentPhase") == 0
    assert ops.next_event_tick() == 600
    move(clock, [ops], 1000)  # 100 s in: main wash
    assert ops.read("CurrentPhase") == 1 and ops.read("CountdownTime") == 350
    clock.tick = 1005          # between events CountdownTime is derived, rounded up to seconds
    assert ops.read("CountdownTime") == 350
    move(clock, [ops], 4499)
    assert ops.read("CurrentPhase") == 3 and ops.read("CountdownTime") == 1
    move(clock, [ops], 4500)
    assert ops.read("OperationalState") == OS.Enums.OperationalStateEnum.kStopped
    assert ops.read("CurrentPhase") == 0 and ops.read("CountdownTime") is NullValue
    assert events == [(4500, OS.Events.OperationCompletion(completionErrorCode=0, totalOperationalTime=450,
                                                            pausedTime=0))]
    assert ops.next_event_tick() is None and not ops.in_operation


def test_pause_and_resume_shift_the_finish():
    ops = OperationalStateServer(cycle=CYCLE)
    clock, events = wire(ops)
    ops.invoke("Start")
    move(clock, [ops], 700)
    assert error_id(ops.invoke("Pause")) == ERR.kNoError
    assert ops.read("OperationalState") == OS.Enums.OperationalStateEnum.kPaused
    assert ops.next_event_tick() is None
    frozen = ops.read("CountdownTime")
    move(clock, [ops], 1900)  # two minutes paused: nothing moves
    assert ops.read("CountdownTime") == frozen == 380 and ops.read("CurrentPhase") == 1
    assert error_id(ops.invoke("Pause")) == ERR.kNoError  # already paused: no-op
    assert error_id(ops.invoke("Resume")) == ERR.kNoError
    assert ops.next_event_tick() == 2400 + 1200  # main wash ends 120 s later than planned
    move(clock, [ops], 4500 + 1200)
    assert events[-1][1] == OS.Events.OperationCompletion(completionErrorCode=0, totalOperationalTime=570,
                                                          pausedTime=120)


@pytest.mark.parametrize("command,expected", [("Pause", ERR.kCommandInvalidInState),
                                              ("Resume", ERR.kCommandInvalidInState),
                                              ("Stop", ERR.kNoError)])
def test_commands_while_stopped(command, expected):
    ops = OperationalStateServer(cycle=CYCLE)
    before = ops.state()
    response = ops.invoke(command)
    assert error_id(response) == expected
    assert ops.state() == before  # nothing changed
    if expected:
        assert "Stopped" in response.commandResponseState.errorStateDetails


def test_start_while_running_and_stop_mid_run():
    ops = OperationalStateServer(cycle=CYCLE)
    clock, events = wire(ops)
    ops.invoke("Start")
    move(clock, [ops], 300)
    version = ops.data_version
    assert error_id(ops.invoke("Start")) == ERR.kNoError and ops.data_version == version
    assert error_id(ops.invoke("Resume")) == ERR.kNoError and ops.data_version == version
    assert error_id(ops.invoke("Stop")) == ERR.kNoError
    assert ops.read("OperationalState") == OS.Enums.OperationalStateEnum.kStopped
    assert events == [(300, OS.Events.OperationCompletion(completionErrorCode=0, totalOperationalTime=30,
                                                           pausedTime=0))]


def test_start_from_paused_resumes():
    ops = OperationalStateServer(cycle=CYCLE)
    clock, _ = wire(ops)
    ops.invoke("Start")
    ops.invoke("Pause")
    clock.tick = 50
    assert error_id(ops.invoke("Start")) == ERR.kNoError
    assert ops.read("OperationalState") == OS.Enums.OperationalStateEnum.kRunning
    assert ops.next_event_tick() == 650


def test_error_state_blocks_start_and_stop_clears_it():
    ops = OperationalStateServer(cycle=CYCLE)
    clock, events = wire(ops)
    ops.invoke("Start")
    clock.tick = 100
    ops.set_error(ERR.kUnableToCompleteOperation, "door opened")
    assert ops.read("OperationalState") == OS.Enums.OperationalStateEnum.kError
    assert ops.read("OperationalError").errorStateID == ERR.kUnableToCompleteOperation
    assert isinstance(events[-1][1], OS.Events.OperationalError)
    assert ops.next_event_tick() is None  # the cycle is held
    assert error_id(ops.invoke("Start")) == ERR.kUnableToStartOrResume
    assert error_id(ops.invoke("Resume")) == ERR.kCommandInvalidInState
    assert error_id(ops.invoke("Pause")) == ERR.kCommandInvalidInState
    clock.tick = 200
    assert error_id(ops.invoke("Stop")) == ERR.kNoError
    assert events[-1][1] == OS.Events.OperationCompletion(
        completionErrorCode=ERR.kUnableToCompleteOperation, totalOperationalTime=20, pausedTime=10)
    assert ops.read("OperationalError").errorStateID == ERR.kNoError
    with pytest.raises(MatterError) as err:
        ops.set_error(ERR.kNoError)
    assert err.value.status == Status.CONSTRAINT_ERROR


def test_clear_error_returns_to_paused():
    ops = OperationalStateServer(cycle=CYCLE)
    wire(ops)
    ops.invoke("Start")
    ops.set_error(0x80, "vendor fault")  # manufacturer-specific ids are allowed
    ops.clear_error()
    assert ops.read("OperationalState") == OS.Enums.OperationalStateEnum.kPaused
    assert error_id(ops.invoke("Resume")) == ERR.kNoError


def test_set_cycle_only_while_stopped_and_validated():
    ops = OperationalStateServer()
    wire(ops)
    assert ops.read("PhaseList") is NullValue
    ops.set_cycle([["wash", 30]])  # JSON shape works too
    assert ops.read("PhaseList") == ["wash"]
    ops.invoke("Start")
    with pytest.raises(MatterError) as err:
        ops.set_cycle(CYCLE)
    assert err.value.status == Status.INVALID_IN_STATE and ops.read("PhaseList") == ["wash"]
    for bad in ([("wash", 0)], [("", 10)], [("wash",)], [("x", 1)] * 33):
        with pytest.raises(MatterError) as err:
            OperationalStateServer(cycle=bad)
        assert err.value.status == Status.CONSTRAINT_ERROR
    with pytest.raises(MatterError):
        OperationalStateServer(PhaseList=["a"])


def test_cycle_less_operation_runs_until_stopped():
    ops = OperationalStateServer()
    clock, events = wire(ops)
    ops.invoke("Start")
    assert ops.next_event_tick() is None and ops.read("CountdownTime") is NullValue
    clock.tick = 90
    ops.invoke("Stop")
    assert events[-1][1].totalOperationalTime == 9


def _scripted_run(mover):
    """One scripted dishwasher run (with a pause) driven by `mover`; returns (state, events)."""
    ops = OperationalStateServer(cycle=CYCLE)
    clock, events = wire(ops)
    ops.invoke("Start")
    mover(clock, [ops], 1234)
    ops.invoke("Pause")
    mover(clock, [ops], 1555)
    ops.invoke("Resume")
    mover(clock, [ops], 6000)
    return ops.state(), events


def test_path_independence_tick_by_tick_vs_jump():
    stepped = _scripted_run(step)
    jumped = _scripted_run(move)
    assert stepped == jumped
    assert stepped[1][-1][1].pausedTime == 32  # 32.1 s paused, whole seconds
    # a single advance_to far past several events lands in the same place too
    ops = OperationalStateServer(cycle=CYCLE)
    clock, events = wire(ops)
    ops.invoke("Start")
    clock.tick = 6000
    ops.advance_to(6000)
    ref = OperationalStateServer(cycle=CYCLE)
    ref_clock, ref_events = wire(ref)
    ref.invoke("Start")
    move(ref_clock, [ref], 6000)
    assert ops.state() == ref.state()
    assert [e for _, e in events] == [e for _, e in ref_events]


def test_state_round_trip_mid_run_continues_identically():
    ops = OperationalStateServer(cycle=CYCLE)
    clock, _ = wire(ops)
    ops.invoke("Start")
    move(clock, [ops], 900)
    ops.invoke("Pause")
    clock.tick = 1000
    copy = OperationalStateServer()
    copy.load_state(json.loads(json.dumps(ops.state())))
    copy_clock, _ = wire(copy, clock=FakeClock(1000))
    for server, c in ((ops, clock), (copy, copy_clock)):
        server.invoke("Resume")
        move(c, [server], 5000)
    assert copy.state() == ops.state()


def test_operational_state_globals():
    ops = OperationalStateServer(cycle=CYCLE)
    assert ops.read("ClusterRevision") == 2
    assert ops.read("AcceptedCommandList") == [0, 1, 2, 3]
    assert ops.read("GeneratedCommandList") == [4]
    assert [s.operationalStateID for s in ops.read("OperationalStateList")] == [0, 1, 2, 3]
    with pytest.raises(MatterError) as err:
        ops.invoke("GoHome")
    assert err.value.status == Status.UNSUPPORTED_COMMAND


# ---- RVC -------------------------------------------------------------------------------------------
def rvc(**run_options):
    ops = RvcOperationalStateServer(home_seconds=30)
    run = RvcRunModeServer(**run_options)
    clean = RvcCleanModeServer()
    device = compose(ops, run, clean, device_type_id=0x74)
    clock, events = wire(ops, run, clean)
    return device, ops, run, clean, clock, events


def test_rvc_run_mode_starts_cycle_and_robot_returns_to_dock():
    device, ops, run, clean, clock, events = rvc()
    S = RVC.Enums.OperationalStateEnum
    assert ops.read("OperationalState") == S.kDocked
    assert ops.read("PhaseList") == ["vacuuming"]  # from the current clean mode
    assert clean.invoke("ChangeToMode", {"newMode": 2}).status == ModeChangeStatus.kSuccess
    assert ops.read("PhaseList") == ["vacuuming", "mopping"]
    assert device.invoke("RvcRunMode", "ChangeToMode", {"newMode": 1}).status == ModeChangeStatus.kSuccess
    assert ops.read("OperationalState") == S.kRunning and ops.read("CountdownTime") == 2700
    answer = clean.invoke("ChangeToMode", {"newMode": 0})
    assert answer.status == ModeChangeStatus.kInvalidInMode   # TC-RVCCLEANM-2.2
    assert run.invoke("ChangeToMode", {"newMode": 2}).status == ModeChangeStatus.kInvalidInMode
    move(clock, [ops], 27000)
    assert ops.read("OperationalState") == S.kSeekingCharger
    assert isinstance(events[-1][1], RVC.Events.OperationCompletion)
    assert run.read("CurrentMode") == 0  # back to Idle by itself
    move(clock, [ops], 27300)
    assert ops.read("OperationalState") == S.kDocked and ops.next_event_tick() is None


def test_rvc_go_home_mid_run_ends_the_run_once_docked():
    device, ops, run, clean, clock, events = rvc()
    S = RVC.Enums.OperationalStateEnum
    run.invoke("ChangeToMode", {"newMode": 1})
    move(clock, [ops], 6000)
    assert error_id(ops.invoke("GoHome")) == ERR.kNoError
    assert ops.read("OperationalState") == S.kSeekingCharger and ops.in_operation
    assert run.read("CurrentMode") == 1  # the cleaning run is suspended while it heads home
    assert error_id(ops.invoke("Pause")) == ERR.kNoError  # pausable on the way home
    assert error_id(ops.invoke("GoHome")) == ERR.kNoError  # GoHome again resumes the trip
    assert ops.read("OperationalState") == S.kSeekingCharger
    move(clock, [ops], 6300)
    # Docked: the run is over and RVC Run Mode is Idle again (TC_RVCOPSTATE_2_5 step 10)
    assert ops.read("OperationalState") == S.kDocked and not ops.in_operation
    assert run.read("CurrentMode") == 0
    assert events[-1][1] == RVC.Events.OperationCompletion(completionErrorCode=0, totalOperationalTime=630,
                                                           pausedTime=30)   # suspended for the 30 s trip
    assert error_id(ops.invoke("GoHome")) == ERR.kCommandInvalidInState
    assert error_id(ops.invoke("Resume")) == ERR.kUnableToStartOrResume
    assert ops.next_event_tick() is None


def test_rvc_commands_invalid_in_state():
    device, ops, run, clean, clock, events = rvc()
    assert error_id(ops.invoke("Pause")) == ERR.kCommandInvalidInState  # docked
    assert error_id(ops.invoke("Resume")) == ERR.kUnableToStartOrResume  # docked, nothing to resume
    with pytest.raises(MatterError) as err:
        ops.invoke("Start")
    assert err.value.status == Status.UNSUPPORTED_COMMAND
    run.invoke("ChangeToMode", {"newMode": 1})
    assert error_id(ops.invoke("Pause")) == ERR.kNoError
    assert error_id(ops.invoke("Resume")) == ERR.kNoError
    assert run.invoke("ChangeToMode", {"newMode": 0}).status == ModeChangeStatus.kSuccess
    assert ops.read("OperationalState") == RVC.Enums.OperationalStateEnum.kStopped
    assert isinstance(events[-1][1], RVC.Events.OperationCompletion)


def test_rvc_run_mode_reports_error_state_and_direct_mode_change():
    device, ops, run, clean, clock, events = rvc()
    ops.set_error(RVC.Enums.ErrorStateEnum.kStuck)
    answer = run.invoke("ChangeToMode", {"newMode": 1})
    assert answer.status == Clusters.RvcRunMode.Enums.StatusCode.kStuck and run.read("CurrentMode") == 0
    ops.clear_error()
    device, ops, run, clean, clock, events = rvc(direct_mode_change=True)
    assert run.read("FeatureMap") == int(Clusters.RvcRunMode.Bitmaps.Feature.kDirectModeChange)
    run.invoke("ChangeToMode", {"newMode": 1})
    assert run.invoke("ChangeToMode", {"newMode": 2}).status == ModeChangeStatus.kSuccess


# ---- Modes ------------------------------------------------------------------------------------------
def dishwasher(**mode_options):
    ops = OperationalStateServer()
    modes = DishwasherModeServer(**mode_options)
    onoff = OnOffServer()
    device = compose(ops, modes, onoff)
    clock, events = wire(ops, modes)
    return device, ops, modes, onoff, clock


def test_dishwasher_modes_tags_and_cycles():
    device, ops, modes, onoff, clock = dishwasher()
    supported = modes.read("SupportedModes")
    tags = {m.label: [t.value for t in m.modeTags] for m in supported}
    DW = Clusters.DishwasherMode.Enums.ModeTag
    assert tags["Normal"] == [DW.kNormal] and DW.kHeavy in tags["Heavy"] and DW.kLight in tags["Light"]
    assert modes.read("ClusterRevision") == 2 and modes.read("CurrentMode") == 0
    assert ops.read("PhaseList") == ["pre-wash", "main wash", "rinse", "dry"]  # composed from the mode
    answer = device.invoke("DishwasherMode", "ChangeToMode", {"newMode": 3})
    assert answer.status == ModeChangeStatus.kSuccess and answer.statusText is None
    assert ops.read("PhaseList") == ["main wash", "rinse"]
    assert device.invoke("DishwasherMode", "ChangeToMode", {"newMode": 3}).status == ModeChangeStatus.kSuccess
    answer = modes.invoke("ChangeToMode", {"newMode": 42})
    assert answer.status == ModeChangeStatus.kUnsupportedMode and "0 (Normal)" in answer.statusText
    assert modes.read("CurrentMode") == 3
    with pytest.raises(MatterError) as err:
        modes.write("CurrentMode", 1)
    assert err.value.status == Status.UNSUPPORTED_WRITE


def test_mode_change_rejected_while_running():
    device, ops, modes, onoff, clock = dishwasher()
    ops.invoke("Start")
    answer = modes.invoke("ChangeToMode", {"newMode": 1})
    assert answer.status == ModeChangeStatus.kInvalidInMode and "stop" in answer.statusText
    assert modes.read("CurrentMode") == 0 and ops.read("PhaseList")[0] == "pre-wash"
    ops.invoke("Pause")
    assert modes.invoke("ChangeToMode", {"newMode": 1}).status == ModeChangeStatus.kInvalidInMode
    ops.invoke("Stop")
    assert modes.invoke("ChangeToMode", {"newMode": 1}).status == ModeChangeStatus.kSuccess
    assert ops.cycle[1] == ("main wash", 2700)


def test_start_up_mode_and_on_mode():
    device, ops, modes, onoff, clock = dishwasher(start_up_mode=True, on_off=True, StartUpMode=2, OnMode=1)
    assert modes.read("CurrentMode") == 2  # StartUpMode applies at power-up
    assert modes.read("FeatureMap") == int(Clusters.DishwasherMode.Bitmaps.Feature.kOnOff)
    onoff.invoke("On")
    assert modes.read("CurrentMode") == 1 and ops.read("PhaseList")[1] == "main wash"
    with pytest.raises(MatterError) as err:
        modes.write("OnMode", 9)
    assert err.value.status == Status.CONSTRAINT_ERROR
    modes.write("OnMode", None)
    modes.write("StartUpMode", 3)
    assert modes.read("StartUpMode") == 3
    plain = DishwasherModeServer()
    with pytest.raises(MatterError) as err:
        plain.read("OnMode")
    assert err.value.status == Status.UNSUPPORTED_ATTRIBUTE


def test_dryer_uses_laundry_washer_mode_and_refrigerator_has_no_cycle():
    dryer = LaundryWasherModeServer(modes=DRYER_MODES)
    assert dryer.id == 0x51
    assert [m.label for m in dryer.read("SupportedModes")] == ["Normal", "Delicate", "Heavy", "Quick"]
    ops = OperationalStateServer()
    compose(ops, dryer)
    assert ops.read("PhaseList") == ["drying", "cool down"]
    fridge = RefrigeratorAndTemperatureControlledCabinetModeServer()
    assert fridge.invoke("ChangeToMode", {"newMode": 1}).status == ModeChangeStatus.kSuccess
    RF = Clusters.RefrigeratorAndTemperatureControlledCabinetMode.Enums.ModeTag
    assert fridge.read("SupportedModes")[1].modeTags[0].value == RF.kRapidCool


def test_mode_configuration_is_validated():
    DW = Clusters.DishwasherMode.Enums.ModeTag
    cases = [
        [ModeOption("Normal", 0, (DW.kNormal,))],                                  # too few modes
        [ModeOption("A", 0, (DW.kNormal,)), ModeOption("B", 0, (DW.kHeavy,))],     # repeated mode
        [ModeOption("A", 0, (DW.kNormal,)), ModeOption("B", 1, (0x4005,))],        # not a dishwasher tag
        [("A", 0, [DW.kNormal], [("wash", -1)]), ("B", 1, [DW.kHeavy])],           # bad cycle
    ]
    for modes in cases:
        with pytest.raises(MatterError) as err:
            DishwasherModeServer(modes=modes)
        assert err.value.status == Status.CONSTRAINT_ERROR
    with pytest.raises(MatterError):
        RvcRunModeServer(modes=[("Clean", 0, [Clusters.RvcRunMode.Enums.ModeTag.kCleaning]),
                                ("Map", 1, [Clusters.RvcRunMode.Enums.ModeTag.kMapping])])  # no Idle
    custom = DishwasherModeServer(modes=[{"label": "Eco", "mode": 5, "tags": [DW.kLowEnergy, DW.kNormal],
                                          "cycle": [["wash", 100]]},
                                         {"label": "Hot", "mode": 6, "tags": [DW.kHeavy]}])
    assert custom.read("CurrentMode") == 5 and custom.current.cycle == (("wash", 100),)


# ---- Temperature Control ------------------------------------------------------------------------------
def test_temperature_number_with_step():
    t = TemperatureControlServer(MinTemperature=2000, MaxTemperature=9000, Step=500, TemperatureSetpoint=4000)
    F = Clusters.TemperatureControl.Bitmaps.Feature
    assert t.read("FeatureMap") == int(F.kTemperatureNumber | F.kTemperatureStep)
    t.invoke("SetTemperature", {"targetTemperature": 6500})
    assert t.read("TemperatureSetpoint") == 6500
    for fields, status in [({"targetTemperature": 6600}, Status.CONSTRAINT_ERROR),
                           ({"targetTemperature": 9500}, Status.CONSTRAINT_ERROR),
                           ({"targetTemperature": 1500}, Status.CONSTRAINT_ERROR),
                           ({"targetTemperatureLevel": 1}, Status.INVALID_COMMAND),
                           ({}, Status.INVALID_COMMAND)]:
        with pytest.raises(MatterError) as err:
            t.invoke("SetTemperature", fields)
        assert err.value.status == status
    assert t.read("TemperatureSetpoint") == 6500
    with pytest.raises(MatterError) as err:
        t.read("SelectedTemperatureLevel")
    assert err.value.status == Status.UNSUPPORTED_ATTRIBUTE
    with pytest.raises(MatterError) as err:
        t.write("TemperatureSetpoint", 5000)
    assert err.value.status == Status.UNSUPPORTED_WRITE


def test_temperature_number_without_step_and_levels():
    fridge = TemperatureControlServer(step=False, MinTemperature=100, MaxTemperature=800, TemperatureSetpoint=400)
    fridge.invoke("SetTemperature", {"targetTemperature": 333})
    assert fridge.read("TemperatureSetpoint") == 333
    levels = TemperatureControlServer(levels=True, SupportedTemperatureLevels=["Cold", "30", "40", "60"])
    assert levels.read("FeatureMap") == int(Clusters.TemperatureControl.Bitmaps.Feature.kTemperatureLevel)
    levels.invoke("SetTemperature", {"targetTemperatureLevel": 3})
    assert levels.read("SelectedTemperatureLevel") == 3
    with pytest.raises(MatterError) as err:
        levels.invoke("SetTemperature", {"targetTemperatureLevel": 4})
    assert err.value.status == Status.CONSTRAINT_ERROR and "3 (60)" in err.value.message
    with pytest.raises(MatterError) as err:
        levels.invoke("SetTemperature", {"targetTemperature": 4000})
    assert err.value.status == Status.INVALID_COMMAND


def test_temperature_configuration_is_validated():
    for options in ({"MinTemperature": 500, "MaxTemperature": 400},
                    {"TemperatureSetpoint": 9999},
                    {"Step": 0},
                    {"levels": True, "SupportedTemperatureLevels": []},
                    {"levels": True, "SelectedTemperatureLevel": 7}):
        with pytest.raises(MatterError):
            TemperatureControlServer(**options)


# ---- Laundry controls ------------------------------------------------------------------------------
def test_laundry_washer_controls():
    w = LaundryWasherControlsServer()
    R = Clusters.LaundryWasherControls.Enums.NumberOfRinsesEnum
    assert w.read("FeatureMap") == 3
    w.write("SpinSpeedCurrent", 4)
    assert w.read("SpinSpeedCurrent") == 4
    w.write("SpinSpeedCurrent", None)
    assert w.read("SpinSpeedCurrent") is NullValue
    w.write("NumberOfRinses", int(R.kMax))
    assert w.read("NumberOfRinses") == R.kMax
    for name, value, status in [("SpinSpeedCurrent", 5, Status.CONSTRAINT_ERROR),
                                ("NumberOfRinses", 7, Status.CONSTRAINT_ERROR),
                                ("SpinSpeeds", ["fast"], Status.UNSUPPORTED_WRITE)]:
        with pytest.raises(MatterError) as err:
            w.write(name, value)
        assert err.value.status == status
    limited = LaundryWasherControlsServer(spin=False, SupportedRinses=[int(R.kNormal)])
    with pytest.raises(MatterError) as err:
        limited.write("NumberOfRinses", int(R.kExtra))
    assert err.value.status == Status.CONSTRAINT_ERROR and "1 (Normal)" in err.value.message
    with pytest.raises(MatterError):
        limited.read("SpinSpeeds")
    with pytest.raises(MatterError):
        LaundryWasherControlsServer(SpinSpeedCurrent=9)


def test_laundry_dryer_controls():
    d = LaundryDryerControlsServer(SupportedDrynessLevels=[0, 1, 2])
    d.write("SelectedDrynessLevel", 2)
    assert d.read("SelectedDrynessLevel") == Clusters.LaundryDryerControls.Enums.DrynessLevelEnum.kExtra
    with pytest.raises(MatterError) as err:
        d.write("SelectedDrynessLevel", 3)
    assert err.value.status == Status.CONSTRAINT_ERROR and d.read("SelectedDrynessLevel") == 2
    d.write("SelectedDrynessLevel", None)
    assert d.read("SelectedDrynessLevel") is NullValue


# ---- Dishwasher Alarm ----------------------------------------------------------------------------------
A = Clusters.DishwasherAlarm.Bitmaps.AlarmBitmap


def test_alarm_latch_reset_and_notify():
    alarm = DishwasherAlarmServer()
    clock, events = wire(alarm)
    alarm.raise_alarm(int(A.kInflowError))  # latching
    alarm.raise_alarm(int(A.kDoorError))    # not latching
    assert alarm.read("State") == int(A.kInflowError | A.kDoorError)
    alarm.clear_alarm(int(A.kInflowError | A.kDoorError))
    assert alarm.read("State") == int(A.kInflowError)  # latched until Reset
    alarm.invoke("Reset", {"alarms": int(A.kInflowError)})
    assert alarm.read("State") == 0
    N = Clusters.DishwasherAlarm.Events.Notify
    assert [e for _, e in events] == [
        N(active=1, inactive=0, state=1, mask=63), N(active=4, inactive=0, state=5, mask=63),
        N(active=0, inactive=4, state=1, mask=63), N(active=0, inactive=1, state=0, mask=63)]
    alarm.raise_alarm(int(A.kDrainError))
    alarm.invoke("Reset", {"alarms": int(A.kDrainError)})  # condition still present: stays
    assert alarm.read("State") == int(A.kDrainError)
    with pytest.raises(MatterError) as err:
        alarm.invoke("Reset", {"alarms": 64})
    assert err.value.status == Status.FAILURE


def test_alarm_mask():
    alarm = DishwasherAlarmServer(Supported=int(A.kDoorError | A.kTempTooHigh), Mask=int(A.kDoorError))
    clock, events = wire(alarm)
    alarm.raise_alarm(int(A.kTempTooHigh))
    assert alarm.read("State") == 0 and events == []  # suppressed
    alarm.invoke("ModifyEnabledAlarms", {"mask": int(A.kTempTooHigh)})
    assert alarm.read("Mask") == int(A.kTempTooHigh) and alarm.read("State") == int(A.kTempTooHigh)
    with pytest.raises(MatterError) as err:
        alarm.invoke("ModifyEnabledAlarms", {"mask": int(A.kInflowError)})
    assert err.value.status == Status.INVALID_COMMAND and alarm.read("Mask") == int(A.kTempTooHigh)
    with pytest.raises(MatterError):
        alarm.raise_alarm(int(A.kInflowError))
    with pytest.raises(MatterError):
        DishwasherAlarmServer(Supported=1, Mask=3)
    no_reset = DishwasherAlarmServer(reset=False)
    with pytest.raises(MatterError) as err:
        no_reset.invoke("Reset", {"alarms": 1})
    assert err.value.status == Status.UNSUPPORTED_COMMAND
    with pytest.raises(MatterError):
        no_reset.read("Latch")


# ---- Energy ------------------------------------------------------------------------------------------------
class Load:
    """A device model's power draw in watts."""
    def __init__(self, watts):
        self.watts = watts

    def __call__(self):
        return self.watts


def test_electrical_power_measurement_derives_from_power():
    load = Load(2000.0)
    epm = ElectricalPowerMeasurementServer(power_source=load, voltage=230.0, power_factor=0.8)
    assert epm.read("PowerMode") == Clusters.ElectricalPowerMeasurement.Enums.PowerModeEnum.kAc
    assert epm.read("ActivePower") == 2_000_000 and epm.read("ApparentPower") == 2_500_000
    assert epm.read("ReactivePower") == 1_500_000
    assert epm.read("ActiveCurrent") == round(2_000_000 * 1000 / 230_000)
    assert epm.read("RMSCurrent") == round(2_500_000 * 1000 / 230_000)
    assert epm.read("Voltage") == 230_000 and epm.read("Frequency") == 50_000 and epm.read("PowerFactor") == 8000
    assert epm.read("NumberOfMeasurementTypes") == len(epm.read("Accuracy")) == 12
    load.watts = 0.0
    assert epm.read("ActivePower") == 0
    version = epm.data_version
    epm.reanchor()
    assert epm.data_version != version and epm.state()["attributes"]["ActivePower"] == 0
    unmeasured = ElectricalPowerMeasurementServer()
    assert unmeasured.read("ActivePower") is NullValue
    with pytest.raises(MatterError) as err:
        epm.write("ActivePower", 5)
    assert err.value.status == Status.UNSUPPORTED_WRITE


def _energy_script(mover):
    load = Load(1500.0)
    eem = ElectricalEnergyMeasurementServer(power_source=load, exported=True, period_seconds=60)
    clock, events = wire(eem)
    eem.attach()
    for tick, watts in ((437, 333.3), (1201, -250.0), (2999, 0.0), (3001, 1234.5)):
        mover(clock, [eem], tick)
        load.watts = watts
        eem.reanchor()
    mover(clock, [eem], 5000)
    return eem, events


def test_cumulative_energy_is_exact_and_path_independent():
    stepped, stepped_events = _energy_script(step)
    jumped, jumped_events = _energy_script(move)
    assert stepped.state() == jumped.state() and stepped_events == jumped_events
    # exact: 1500 W * 43.7 s + 333.3 W * 76.4 s + 1234.5 W * 199.9 s, in mWh, floored
    imported_mw_ticks = 1_500_000 * 437 + 333_300 * 764 + 1_234_500 * 1999
    assert jumped.read("CumulativeEnergyImported").energy == imported_mw_ticks // 36000
    assert jumped.read("CumulativeEnergyExported").energy == 250_000 * 1798 // 36000
    assert jumped.read("CumulativeEnergyImported").endSystime == 500_000
    # the period 4200..4800 ticks ran at 1234.5 W: 60 s -> 20.575 Wh
    assert jumped.read("PeriodicEnergyImported").energy == 20575
    assert jumped.read("PeriodicEnergyImported").startSystime == 420_000
    kinds = [type(e).__name__ for _, e in jumped_events]
    assert kinds.count("PeriodicEnergyMeasured") == 8 and kinds.count("CumulativeEnergyMeasured") == 8


def test_energy_measurement_features_and_reset():
    load = Load(100.0)
    eem = ElectricalEnergyMeasurementServer(power_source=load, period_seconds=None)
    clock, _ = wire(eem)
    eem.attach()
    F = Clusters.ElectricalEnergyMeasurement.Bitmaps.Feature
    assert eem.read("FeatureMap") == int(F.kImportedEnergy | F.kCumulativeEnergy)
    assert eem.next_event_tick() is None
    with pytest.raises(MatterError):
        eem.read("CumulativeEnergyExported")
    clock.tick = 36000  # one hour at 100 W
    assert eem.read("CumulativeEnergyImported").energy == 100_000
    eem.reset_cumulative()
    assert eem.read("CumulativeEnergyImported").energy == 0
    assert eem.read("CumulativeEnergyReset").importedResetSystime == 3_600_000
    copy = ElectricalEnergyMeasurementServer(power_source=load, period_seconds=None)
    copy.load_state(json.loads(json.dumps(eem.state())))
    copy.clock = clock
    clock.tick = 72000
    assert copy.read("CumulativeEnergyImported") == eem.read("CumulativeEnergyImported")
    assert ElectricalEnergyMeasurementServer().read("CumulativeEnergyImported") is NullValue


def test_device_energy_management_power_adjustment():
    DEM = Clusters.DeviceEnergyManagement
    load = Load(2000.0)
    dem = DeviceEnergyManagementServer(power_source=load, ESAType=int(DEM.Enums.ESATypeEnum.kSpaceHeating))
    clock, events = wire(dem)
    dem.attach()
    request = {"power": 1_000_000, "duration": 600, "cause": int(DEM.Enums.AdjustmentCauseEnum.kGridOptimization)}
    dem.invoke("PowerAdjustRequest", request)
    assert dem.read("ESAState") == DEM.Enums.ESAStateEnum.kPowerAdjustActive and dem.requested_power == 1000.0
    assert dem.read("PowerAdjustmentCapability").cause == DEM.Enums.PowerAdjustReasonEnum.kGridOptimizationAdjustment
    load.watts = 1000.0  # the device model follows the request
    dem.reanchor()
    move(clock, [dem], 6000)
    assert dem.read("ESAState") == DEM.Enums.ESAStateEnum.kOnline and dem.requested_power is None
    assert [e for _, e in events] == [DEM.Events.PowerAdjustStart(), DEM.Events.PowerAdjustEnd(
        cause=DEM.Enums.CauseEnum.kNormalCompletion, duration=600, energyUse=166_666)]
    for fields, status in [({**request, "power": 4_000_000}, Status.CONSTRAINT_ERROR),
                           ({**request, "duration": 10}, Status.CONSTRAINT_ERROR)]:
        with pytest.raises(MatterError) as err:
            dem.invoke("PowerAdjustRequest", fields)
        assert err.value.status == status
    with pytest.raises(MatterError) as err:
        dem.invoke("CancelPowerAdjustRequest")
    assert err.value.status == Status.INVALID_IN_STATE   # TC-DEM-2.2 step 8
    dem.invoke("PowerAdjustRequest", request)
    dem.set_opt_out(DEM.Enums.OptOutStateEnum.kGridOptOut)  # the user vetoes grid requests
    assert dem.read("ESAState") == DEM.Enums.ESAStateEnum.kOnline
    assert events[-1][1].cause == DEM.Enums.CauseEnum.kUserOptOut
    with pytest.raises(MatterError) as err:
        dem.invoke("PowerAdjustRequest", request)
    assert err.value.status == Status.CONSTRAINT_ERROR and "opted out" in err.value.message
    dem.invoke("PowerAdjustRequest", {**request, "cause": 0})  # local optimisation still allowed
    dem.invoke("CancelPowerAdjustRequest")
    assert events[-1][1].cause == DEM.Enums.CauseEnum.kCancelled


def test_device_energy_management_forecast():
    dem = DeviceEnergyManagementServer(epoch_seconds=1000)
    clock, _ = wire(dem)
    assert dem.read("Forecast") is NullValue
    clock.tick = 100
    dem.set_forecast([(600, 1500.0), (300, 200.0)])
    clock.tick = 100 + 7000  # 700 s later: second slot, 100 s in
    f = dem.read("Forecast")
    assert (f.forecastID, f.startTime, f.endTime, f.activeSlotNumber) == (1, 1010, 1910, 1)
    assert (f.slots[1].elapsedSlotTime, f.slots[1].remainingSlotTime, f.slots[0].nominalPower) == (100, 200, 1_500_000)
    clock.tick = 100 + 9000
    assert dem.read("Forecast").activeSlotNumber is NullValue
    with pytest.raises(MatterError):
        dem.set_forecast([(0, 100.0)])
    dem.set_forecast(None)
    assert dem.read("Forecast") is NullValue


def test_power_source_wired_and_battery():
    PS = Clusters.PowerSource
    load = Load(2300.0)
    mains = PowerSourceServer(power_source=load, EndpointList=[1])
    assert mains.read("FeatureMap") == int(PS.Bitmaps.Feature.kWired)
    assert mains.read("WiredAssessedCurrent") == 10_000 and mains.read("EndpointList") == [1]
    assert mains.read("Description") == "Mains" and mains.read("Status") == PS.Enums.PowerSourceStatusEnum.kActive
    with pytest.raises(MatterError):
        mains.read("BatPercentRemaining")
    battery = PowerSourceServer(battery=True, rechargeable=True, Order=1)
    battery.set_battery(15.5, charging=True)
    assert battery.read("BatPercentRemaining") == 31
    assert battery.read("BatChargeLevel") == PS.Enums.BatChargeLevelEnum.kWarning
    assert battery.read("BatChargeState") == PS.Enums.BatChargeStateEnum.kIsCharging
    with pytest.raises(MatterError):
        battery.set_battery(120)
    with pytest.raises(MatterError):
        mains.set_battery(50)
    with pytest.raises(MatterError):
        PowerSourceServer(rechargeable=True)


def test_power_topology_features():
    PT = Clusters.PowerTopology.Bitmaps.Feature
    node = PowerTopologyServer()
    assert node.read("FeatureMap") == int(PT.kNodeTopology)
    with pytest.raises(MatterError):
        node.read("AvailableEndpoints")
    flow = PowerTopologyServer(topology="set", dynamic=True, AvailableEndpoints=[1, 2])
    assert flow.read("FeatureMap") == int(PT.kSetTopology | PT.kDynamicPowerFlow)
    flow.set_active_endpoints([2])
    assert flow.read("ActiveEndpoints") == [2]
    with pytest.raises(MatterError) as err:
        flow.set_active_endpoints([3])
    assert err.value.status == Status.CONSTRAINT_ERROR and flow.read("ActiveEndpoints") == [2]
    for options in ({"topology": "star"}, {"topology": "tree", "dynamic": True}):
        with pytest.raises(MatterError):
            PowerTopologyServer(**options)


def test_meter_starts_when_the_device_joins_a_home_and_restores_keep_anchors():
    load = Load(1000.0)
    eem = ElectricalEnergyMeasurementServer(power_source=load, period_seconds=60)
    dem = DeviceEnergyManagementServer(power_source=load)
    compose(eem, dem)  # attach() anchors on the standalone clock (tick 0)
    home_clock = FakeClock(10_000)
    eem.clock = dem.clock = home_clock  # the home places the device at tick 10000
    assert eem.read("CumulativeEnergyImported").energy == 0
    assert eem.next_event_tick() == 10_600
    home_clock.tick = 10_360  # 36 s at 1 kW
    assert eem.read("CumulativeEnergyImported").energy == 10_000
    restored = ElectricalEnergyMeasurementServer(power_source=load, period_seconds=60)
    restored.load_state(json.loads(json.dumps(eem.state())))
    restored.clock = home_clock
    assert restored.read("CumulativeEnergyImported") == eem.read("CumulativeEnergyImported")
    assert restored.next_event_tick() == 10_600
