"""Operational State (TC_OPSTATE) and RVC Operational State (TC_RVCOPSTATE) test cases."""
from __future__ import annotations

import pytest
from chip.clusters import Objects as C
from chip.clusters.Types import NullValue
from conftest import serving
from steps import IN_PROCESS, ClusterSpec, at_most, check_attributes, check_global_attributes, endpoints_with

OPSTATE, RVCOPSTATE = C.OperationalState, C.RvcOperationalState
STOPPED, RUNNING, PAUSED, ERROR = 0, 1, 2, 3
NO_ERROR, UNABLE_TO_START_OR_RESUME, UNABLE_TO_COMPLETE, INVALID_IN_STATE = 0, 1, 2, 3


def _spec(cluster, revisions, accepted, generated):
    return ClusterSpec(
        cluster, revisions=revisions,
        attributes={"PhaseList": "M", "CurrentPhase": "M", "CountdownTime": "O", "OperationalStateList": "M",
                    "OperationalState": "M", "OperationalError": "M"},
        accepted=accepted, generated=generated,
        constraints={
            "PhaseList": lambda v, _: v == NullValue or (len(v) <= 32 and all(len(p) <= 64 for p in v)),
            "CurrentPhase": lambda v, values: (v == NullValue) == (values["PhaseList"] in (NullValue, []))
            or (v != NullValue and v < len(values["PhaseList"])),
            "CountdownTime": at_most(259200, nullable=True),
            "OperationalState": lambda v, values: v in {s.operationalStateID for s in values["OperationalStateList"]},
        })


OPSTATE_SPEC = _spec(OPSTATE, range(1, 4),
                     accepted={"Pause": "Resume, O", "Stop": "Start, O", "Start": "O", "Resume": "Pause, O"},
                     generated={"OperationalCommandResponse": "Pause | Stop | Start | Resume"})
RVC_SPEC = _spec(RVCOPSTATE, range(1, 4),
                 accepted={"Pause": "Resume, O", "Resume": "Pause, O", "GoHome": "O"},
                 generated={"OperationalCommandResponse": "Pause | Resume | GoHome"})

NOT_APPLICABLE = {
    "TC_OPSTATE_2_4": "error states are injected by the plan's manufacturer-specific steps; the twin's are "
                      "driven by its fault engine (tests/twin/test_faults.py)",
    "TC_RVCOPSTATE_2_2": "Start/Stop: the RVC device type does not serve them (X in RVC Operational State)",
}


def _check_states(dut, cluster, values, rvc=False):
    ids = {s.operationalStateID for s in values["OperationalStateList"]}
    assert {STOPPED, RUNNING, PAUSED, ERROR} <= ids
    if rvc:
        assert ids <= {0, 1, 2, 3, 0x40, 0x41, 0x42} | set(range(0x80, 0xC0))
    else:
        assert ids <= {0, 1, 2, 3} | set(range(0x80, 0xC0))
    error = values["OperationalError"]
    allowed = {0, 1, 2, 3} | ({0x40, 0x41, 0x42, 0x43, 0x44, 0x45, 0x46, 0x47} if rvc else set())
    assert error.errorStateID in allowed or 0x80 <= error.errorStateID <= 0xBF


@pytest.mark.parametrize("dut", serving(OPSTATE), indirect=True)
def test_TC_OPSTATE_1_1(dut):
    check_global_attributes(dut, OPSTATE_SPEC)


@pytest.mark.parametrize("dut", serving(OPSTATE), indirect=True)
def test_TC_OPSTATE_2_1(dut):
    for _, values in check_attributes(dut, OPSTATE_SPEC).items():
        _check_states(dut, OPSTATE, values)


def _start(dut, endpoint):
    if C.OnOff.id in dut.read(endpoint, C.Descriptor.Attributes.ServerList):
        dut.invoke(endpoint, C.OnOff.Commands.On())   # the twin's appliances start only when on
    return dut.invoke(endpoint, OPSTATE.Commands.Start())


@pytest.mark.parametrize("dut", serving(OPSTATE, kinds=IN_PROCESS), indirect=True)
def test_TC_OPSTATE_2_2(dut):
    """Start / Stop: Running and Stopped, each answered with OperationalCommandResponse(NoError);
    a second Start while running is NoError too, as the plan asks."""
    for endpoint in endpoints_with(dut, OPSTATE):
        state = OPSTATE.Attributes.OperationalState
        assert dut.read(endpoint, state) == STOPPED
        response = _start(dut, endpoint)
        assert isinstance(response, OPSTATE.Commands.OperationalCommandResponse)
        assert response.commandResponseState.errorStateID == NO_ERROR
        assert dut.read(endpoint, state) == RUNNING
        assert dut.read(endpoint, OPSTATE.Attributes.OperationalError).errorStateID == NO_ERROR
        countdown = dut.read(endpoint, OPSTATE.Attributes.CountdownTime)
        dut.wait(5)
        if countdown != NullValue:
            assert dut.read(endpoint, OPSTATE.Attributes.CountdownTime) < countdown
        assert dut.invoke(endpoint, OPSTATE.Commands.Start()).commandResponseState.errorStateID == NO_ERROR
        assert dut.invoke(endpoint, OPSTATE.Commands.Stop()).commandResponseState.errorStateID == NO_ERROR
        assert dut.read(endpoint, state) == STOPPED
        assert dut.invoke(endpoint, OPSTATE.Commands.Stop()).commandResponseState.errorStateID == NO_ERROR


@pytest.mark.parametrize("dut", serving(OPSTATE, kinds=IN_PROCESS), indirect=True)
def test_TC_OPSTATE_2_3(dut):
    """Pause / Resume: Paused keeps CountdownTime still; Resume runs again; Pause while stopped
    answers CommandInvalidInState."""
    for endpoint in endpoints_with(dut, OPSTATE):
        state, countdown = OPSTATE.Attributes.OperationalState, OPSTATE.Attributes.CountdownTime
        response = dut.invoke(endpoint, OPSTATE.Commands.Pause())
        assert response.commandResponseState.errorStateID == INVALID_IN_STATE
        _start(dut, endpoint)
        dut.wait(2)
        assert dut.invoke(endpoint, OPSTATE.Commands.Pause()).commandResponseState.errorStateID == NO_ERROR
        assert dut.read(endpoint, state) == PAUSED
        held = dut.read(endpoint, countdown)
        dut.wait(5)
        assert dut.read(endpoint, countdown) == held
        assert dut.invoke(endpoint, OPSTATE.Commands.Pause()).commandResponseState.errorStateID == NO_ERROR
        assert dut.invoke(endpoint, OPSTATE.Commands.Resume()).commandResponseState.errorStateID == NO_ERROR
        assert dut.read(endpoint, state) == RUNNING
        assert dut.invoke(endpoint, OPSTATE.Commands.Resume()).commandResponseState.errorStateID == NO_ERROR
        dut.invoke(endpoint, OPSTATE.Commands.Stop())
        response = dut.invoke(endpoint, OPSTATE.Commands.Resume())
        assert response.commandResponseState.errorStateID == INVALID_IN_STATE


@pytest.mark.parametrize("dut", serving(RVCOPSTATE), indirect=True)
def test_TC_RVCOPSTATE_1_1(dut):
    check_global_attributes(dut, RVC_SPEC)


@pytest.mark.parametrize("dut", serving(RVCOPSTATE), indirect=True)
def test_TC_RVCOPSTATE_2_1(dut):
    for _, values in check_attributes(dut, RVC_SPEC).items():
        _check_states(dut, RVCOPSTATE, values, rvc=True)


def _clean(dut, endpoint):
    modes = dut.read(endpoint, C.RvcRunMode.Attributes.SupportedModes)
    cleaning = next(m.mode for m in modes if any(t.value == 0x4001 for t in m.modeTags))
    assert dut.invoke(endpoint, C.RvcRunMode.Commands.ChangeToMode(newMode=cleaning)).status == 0


@pytest.mark.parametrize("dut", serving(RVCOPSTATE, kinds=IN_PROCESS), indirect=True)
def test_TC_RVCOPSTATE_2_3(dut):
    """Pause / Resume of a cleaning run; both invalid while docked."""
    for endpoint in endpoints_with(dut, RVCOPSTATE):
        state = RVCOPSTATE.Attributes.OperationalState
        docked = dut.read(endpoint, state)
        assert docked in (STOPPED, 0x42)     # Stopped or Docked
        assert dut.invoke(endpoint, RVCOPSTATE.Commands.Pause()).commandResponseState.errorStateID \
            == INVALID_IN_STATE
        _clean(dut, endpoint)
        assert dut.read(endpoint, state) == RUNNING
        assert dut.invoke(endpoint, RVCOPSTATE.Commands.Pause()).commandResponseState.errorStateID == NO_ERROR
        assert dut.read(endpoint, state) == PAUSED
        assert dut.invoke(endpoint, RVCOPSTATE.Commands.Resume()).commandResponseState.errorStateID == NO_ERROR
        assert dut.read(endpoint, state) == RUNNING


@pytest.mark.parametrize("dut", serving(RVCOPSTATE, kinds=IN_PROCESS), indirect=True)
def test_TC_RVCOPSTATE_2_4(dut):
    """GoHome: from cleaning the robot heads to its dock (SeekingCharger), then docks."""
    for endpoint in endpoints_with(dut, RVCOPSTATE):
        state = RVCOPSTATE.Attributes.OperationalState
        _clean(dut, endpoint)
        assert dut.invoke(endpoint, RVCOPSTATE.Commands.GoHome()).commandResponseState.errorStateID == NO_ERROR
        assert dut.read(endpoint, state) in (0x40, 0x41, 0x42)   # SeekingCharger, Charging, Docked
        dut.wait(600)
        assert dut.read(endpoint, state) in (0x41, 0x42)


@pytest.mark.parametrize("dut", serving(RVCOPSTATE, kinds=IN_PROCESS), indirect=True)
def test_TC_RVCOPSTATE_2_5(dut):
    """GoHome and RVC Run Mode: from an Idle mode to the cleaning mode (CurrentMode follows, its mode
    carries the Cleaning tag), GoHome answers NoError and the robot is SeekingCharger; once docked,
    CurrentMode is a mode with the Idle tag."""
    run_mode, state = C.RvcRunMode.Attributes.CurrentMode, RVCOPSTATE.Attributes.OperationalState
    for endpoint in endpoints_with(dut, RVCOPSTATE):
        modes = dut.read(endpoint, C.RvcRunMode.Attributes.SupportedModes)
        assert len(modes) >= 2
        tags = {m.mode: {t.value for t in m.modeTags} for m in modes}
        assert 0x4000 in tags[dut.read(endpoint, run_mode)]          # starts Idle
        _clean(dut, endpoint)
        dut.wait(1)
        assert 0x4001 in tags[dut.read(endpoint, run_mode)]          # Cleaning
        assert dut.invoke(endpoint, RVCOPSTATE.Commands.GoHome()).commandResponseState.errorStateID == NO_ERROR
        assert dut.read(endpoint, state) == 0x40                      # SeekingCharger
        dut.wait(600)
        assert dut.read(endpoint, state) in (0x41, 0x42)              # docked
        assert 0x4000 in tags[dut.read(endpoint, run_mode)]          # Idle again



def _completions(subscription, wait):
    return [r.data for r in subscription.poll(wait) if getattr(r, "event", None) is OPSTATE.Events.OperationCompletion]


@pytest.mark.parametrize("dut", serving(OPSTATE, kinds=IN_PROCESS), indirect=True)
def test_TC_OPSTATE_2_5(dut):
    """OperationCompletion over a subscription: a run left for its whole countdown then stopped ends
    with one event (NoError, TotalOperationalTime within 1 s of the countdown, PausedTime 0); a run
    paused for half the countdown reports that pause in PausedTime."""
    for endpoint in endpoints_with(dut, OPSTATE):
        subscription = dut.subscribe([(endpoint, OPSTATE.Events.OperationCompletion)], 1, 5)
        subscription.poll(0)   # the priming report (events of earlier runs, if any)
        assert _start(dut, endpoint).commandResponseState.errorStateID == NO_ERROR
        countdown = dut.read(endpoint, OPSTATE.Attributes.CountdownTime)
        if countdown == NullValue:
            subscription.close()
            continue   # the plan ends here for a DUT without a countdown
        assert dut.read(endpoint, OPSTATE.Attributes.OperationalState) == RUNNING
        dut.wait(countdown)
        assert dut.invoke(endpoint, OPSTATE.Commands.Stop()).commandResponseState.errorStateID == NO_ERROR
        (done,) = _completions(subscription, 10)
        assert done.completionErrorCode == NO_ERROR and done.pausedTime == 0
        assert done.totalOperationalTime == NullValue or abs(done.totalOperationalTime - countdown) <= 1
        assert dut.read(endpoint, OPSTATE.Attributes.OperationalState) == STOPPED

        assert _start(dut, endpoint).commandResponseState.errorStateID == NO_ERROR
        countdown = dut.read(endpoint, OPSTATE.Attributes.CountdownTime)
        assert dut.invoke(endpoint, OPSTATE.Commands.Pause()).commandResponseState.errorStateID == NO_ERROR
        assert dut.read(endpoint, OPSTATE.Attributes.OperationalState) == PAUSED
        dut.wait(countdown // 2)
        assert dut.invoke(endpoint, OPSTATE.Commands.Resume()).commandResponseState.errorStateID == NO_ERROR
        assert dut.read(endpoint, OPSTATE.Attributes.OperationalState) == RUNNING
        dut.wait(countdown)
        assert dut.invoke(endpoint, OPSTATE.Commands.Stop()).commandResponseState.errorStateID == NO_ERROR
        (done,) = _completions(subscription, 10)
        assert done.completionErrorCode == NO_ERROR
        assert done.pausedTime == NullValue or abs(done.pausedTime - countdown // 2) <= 1
        subscription.close()


def _countdown_reports(subscription, wait):
    reports = subscription.poll(wait)
    return [r.value for r in reports if getattr(r, "attribute", None) is OPSTATE.Attributes.CountdownTime]


@pytest.mark.parametrize("dut", serving(OPSTATE, kinds=IN_PROCESS), indirect=True)
def test_TC_OPSTATE_2_6(dut):
    """CountdownTime over a subscription (its Q quality): reported when a run starts, at most 5
    times in 10 s of running, reported again when the run ends, and when it is paused."""
    countdown, state = OPSTATE.Attributes.CountdownTime, OPSTATE.Attributes.OperationalState
    for endpoint in endpoints_with(dut, OPSTATE):
        subscription = dut.subscribe([(endpoint, countdown)], 0, 30)
        subscription.poll(0)   # the priming report
        _start(dut, endpoint)
        dut.wait(1)
        assert dut.read(endpoint, state) == RUNNING
        left = dut.read(endpoint, countdown)
        if left == NullValue:
            subscription.close()
            continue   # the plan's reporting steps need a countdown
        assert _countdown_reports(subscription, 0), "no CountdownTime report when the run started"
        assert len(_countdown_reports(subscription, 10)) <= 5
        dut.wait(dut.read(endpoint, countdown) + 1)        # until the run ends
        assert dut.read(endpoint, state) == STOPPED
        ended = _countdown_reports(subscription, 0)
        assert ended and ended[-1] in (0, NullValue), ended
        _start(dut, endpoint)
        dut.wait(1)
        assert dut.read(endpoint, state) == RUNNING
        assert _countdown_reports(subscription, 0), "no CountdownTime report when the second run started"
        dut.wait(3)
        subscription.poll(0)
        assert dut.invoke(endpoint, OPSTATE.Commands.Pause()).commandResponseState.errorStateID == NO_ERROR
        assert _countdown_reports(subscription, 1), "no CountdownTime report when the run paused"
        subscription.close()
