"""Mode Base derived clusters' test cases: RVC Run Mode (TC_RVCRUNM), RVC Clean Mode
(TC_RVCCLEANM), Dishwasher Mode (TC_DISHM), Laundry Washer Mode (TC_LWM) and Refrigerator and
Temperature Controlled Cabinet Mode (TC_TCCM), from their test plans."""
from __future__ import annotations

import pytest
from chip.clusters import Objects as C
from conftest import serving
from steps import IN_PROCESS, ClusterSpec, check_global_attributes, endpoints_with

#: Mode Base's common ChangeToModeResponse status codes, and its common mode tags (0..0x3FFF range).
SUCCESS, UNSUPPORTED_MODE, INVALID_IN_MODE = 0x00, 0x01, 0x03
COMMON_TAGS = set(range(0x00, 0x0A))    # Auto, Quick, Quiet, LowNoise, LowEnergy, Vacation, Min, Max, Night, Day


def _spec(cluster, revisions, start_up_and_on_mode=True):
    attributes = {"SupportedModes": "M", "CurrentMode": "M"}
    if start_up_and_on_mode:   # the RVC modes dropped them (X) and Objects no longer has them
        attributes |= {"StartUpMode": "O", "OnMode": "[DEPONOFF]"}
    return ClusterSpec(cluster, revisions=revisions, features={"DEPONOFF": 0}, attributes=attributes,
                       accepted={"ChangeToMode": "M"}, generated={"ChangeToModeResponse": "M"})


RVCRUNM, RVCCLEANM = C.RvcRunMode, C.RvcCleanMode
DISHM, LWM, TCCM = C.DishwasherMode, C.LaundryWasherMode, C.RefrigeratorAndTemperatureControlledCabinetMode
SPECS = {
    RVCRUNM: _spec(RVCRUNM, range(1, 5), start_up_and_on_mode=False),
    RVCCLEANM: _spec(RVCCLEANM, range(1, 6), start_up_and_on_mode=False),
    DISHM: _spec(DISHM, range(1, 4)),
    LWM: _spec(LWM, range(1, 4)),
    TCCM: _spec(TCCM, range(1, 4)),
}
#: The derived cluster's own mode tags (0x4000 and up).
DERIVED_TAGS = {
    RVCRUNM: {0x4000, 0x4001, 0x4002},                  # Idle, Cleaning, Mapping
    RVCCLEANM: {0x4000, 0x4001, 0x4002},                # DeepClean, Vacuum, Mop
    DISHM: {0x4000, 0x4001, 0x4002},                    # Normal, Heavy, Light
    LWM: {0x4000, 0x4001, 0x4002, 0x4003},              # Normal, Delicate, Heavy, Whites
    TCCM: {0x4000, 0x4001},                             # RapidCool, RapidFreeze
}

NOT_APPLICABLE = {
    **{f"TC_{p}_3_{i}": "StartUpMode / OnMode (and a reboot): not served, Matter 1.4 made them X for this cluster"
       for p in ("DISHM", "LWM", "TCCM") for i in (1, 2, 3)},
    "TC_RVCRUNM_3_1": "OnMode: not served (X since Matter 1.3 for RVC Run Mode)",
    "TC_RVCRUNM_3_2": "StartUpMode and a reboot: not served (X since Matter 1.3)",
    "TC_RVCRUNM_3_3": "StartUpMode with OnMode: not served (X since Matter 1.3)",
    "TC_RVCCLEANM_3_1": "OnMode: not served (X since Matter 1.3 for RVC Clean Mode)",
    "TC_RVCCLEANM_3_2": "StartUpMode and a reboot: not served (X since Matter 1.3)",
    "TC_RVCCLEANM_3_3": "StartUpMode with OnMode: not served (X since Matter 1.3)",
}


def check_modes(dut, cluster):
    """The _1_2 steps: SupportedModes has 2..255 entries with unique modes, labels of at most 64
    characters and valid tags (at least one per mode); CurrentMode is one of them."""
    for endpoint in endpoints_with(dut, cluster):
        modes = dut.read(endpoint, cluster.Attributes.SupportedModes)
        assert 2 <= len(modes) <= 255, len(modes)
        assert len({m.mode for m in modes}) == len(modes), "mode values repeat"
        assert len({m.label for m in modes}) == len(modes), "labels repeat"
        for mode in modes:
            assert 0 < len(mode.label) <= 64 and mode.modeTags, mode
            assert len(mode.modeTags) <= 8
            for tag in mode.modeTags:
                assert tag.value in COMMON_TAGS | DERIVED_TAGS[cluster] or tag.value >> 15 == 1 \
                    or tag.mfgCode is not None, (mode.label, tag)
        assert dut.read(endpoint, cluster.Attributes.CurrentMode) in {m.mode for m in modes}
        yield endpoint, modes


def change_modes(dut, cluster, when_refused=()):
    """The _2_1 steps: ChangeToMode to every supported mode answers SUCCESS and moves CurrentMode
    (or a status from `when_refused` and leaves it), an unknown mode answers UnsupportedMode."""
    for endpoint, modes in check_modes(dut, cluster):
        for mode in [*modes[1:], modes[0]]:
            before = dut.read(endpoint, cluster.Attributes.CurrentMode)
            response = dut.invoke(endpoint, cluster.Commands.ChangeToMode(newMode=mode.mode))
            assert isinstance(response, cluster.Commands.ChangeToModeResponse)
            if response.status in when_refused:
                assert dut.read(endpoint, cluster.Attributes.CurrentMode) == before
                continue
            assert response.status == SUCCESS, (mode, response)
            assert dut.read(endpoint, cluster.Attributes.CurrentMode) == mode.mode
        unknown = max(m.mode for m in modes) + 1
        before = dut.read(endpoint, cluster.Attributes.CurrentMode)
        response = dut.invoke(endpoint, cluster.Commands.ChangeToMode(newMode=unknown))
        assert response.status == UNSUPPORTED_MODE
        assert dut.read(endpoint, cluster.Attributes.CurrentMode) == before


# ---- RVC Run Mode ---------------------------------------------------------------------------
@pytest.mark.parametrize("dut", serving(RVCRUNM), indirect=True)
def test_TC_RVCRUNM_1_1(dut):
    check_global_attributes(dut, SPECS[RVCRUNM])


@pytest.mark.parametrize("dut", serving(RVCRUNM), indirect=True)
def test_TC_RVCRUNM_1_2(dut):
    for _, modes in check_modes(dut, RVCRUNM):
        tags = [{t.value for t in m.modeTags} for m in modes]
        assert any(0x4000 in t for t in tags), "no Idle mode"
        assert any(0x4001 in t for t in tags), "no Cleaning mode"
        assert not any({0x4000, 0x4001} <= t for t in tags), "a mode both Idle and Cleaning"


@pytest.mark.parametrize("dut", serving(RVCRUNM), indirect=True)
def test_TC_RVCRUNM_2_1(dut):
    change_modes(dut, RVCRUNM, when_refused=(INVALID_IN_MODE,))


@pytest.mark.parametrize("dut", serving(RVCRUNM, kinds=IN_PROCESS), indirect=True)
def test_TC_RVCRUNM_2_2(dut):
    """Idle -> Cleaning starts the robot (RVC Operational State Running); back to Idle docks it."""
    for endpoint, modes in check_modes(dut, RVCRUNM):
        idle = next(m.mode for m in modes if any(t.value == 0x4000 for t in m.modeTags))
        cleaning = next(m.mode for m in modes if any(t.value == 0x4001 for t in m.modeTags))
        assert dut.invoke(endpoint, RVCRUNM.Commands.ChangeToMode(newMode=idle)).status == SUCCESS
        assert dut.invoke(endpoint, RVCRUNM.Commands.ChangeToMode(newMode=cleaning)).status == SUCCESS
        state = dut.read(endpoint, C.RvcOperationalState.Attributes.OperationalState)
        assert state == C.RvcOperationalState.Enums.OperationalStateEnum.kRunning
        assert dut.invoke(endpoint, RVCRUNM.Commands.ChangeToMode(newMode=idle)).status == SUCCESS
        assert dut.read(endpoint, C.RvcOperationalState.Attributes.OperationalState) != state


# ---- RVC Clean Mode -------------------------------------------------------------------------
@pytest.mark.parametrize("dut", serving(RVCCLEANM), indirect=True)
def test_TC_RVCCLEANM_1_1(dut):
    check_global_attributes(dut, SPECS[RVCCLEANM])


@pytest.mark.parametrize("dut", serving(RVCCLEANM), indirect=True)
def test_TC_RVCCLEANM_1_2(dut):
    for _, modes in check_modes(dut, RVCCLEANM):
        assert any({t.value for t in m.modeTags} & {0x4001, 0x4002} for m in modes), "no Vacuum or Mop mode"


@pytest.mark.parametrize("dut", serving(RVCCLEANM), indirect=True)
def test_TC_RVCCLEANM_2_1(dut):
    change_modes(dut, RVCCLEANM, when_refused=(INVALID_IN_MODE,))


# ---- Dishwasher, Laundry Washer, Refrigerator cabinet modes -------------------------------
@pytest.mark.parametrize("dut", serving(DISHM), indirect=True)
def test_TC_DISHM_1_1(dut):
    check_global_attributes(dut, SPECS[DISHM])


@pytest.mark.parametrize("dut", serving(DISHM), indirect=True)
def test_TC_DISHM_1_2(dut):
    assert list(check_modes(dut, DISHM))


@pytest.mark.parametrize("dut", serving(DISHM), indirect=True)
def test_TC_DISHM_2_1(dut):
    change_modes(dut, DISHM)


@pytest.mark.parametrize("dut", serving(LWM), indirect=True)
def test_TC_LWM_1_1(dut):
    check_global_attributes(dut, SPECS[LWM])


@pytest.mark.parametrize("dut", serving(LWM), indirect=True)
def test_TC_LWM_1_2(dut):
    assert list(check_modes(dut, LWM))


@pytest.mark.parametrize("dut", serving(LWM), indirect=True)
def test_TC_LWM_2_1(dut):
    change_modes(dut, LWM)


@pytest.mark.parametrize("dut", serving(TCCM), indirect=True)
def test_TC_TCCM_1_1(dut):
    check_global_attributes(dut, SPECS[TCCM])


@pytest.mark.parametrize("dut", serving(TCCM), indirect=True)
def test_TC_TCCM_1_2(dut):
    assert list(check_modes(dut, TCCM))


@pytest.mark.parametrize("dut", serving(TCCM), indirect=True)
def test_TC_TCCM_2_1(dut):
    change_modes(dut, TCCM)


@pytest.mark.parametrize("dut", serving(DISHM, LWM, kinds=IN_PROCESS), indirect=True)
def test_mode_change_during_a_cycle_answers_invalid_in_mode(dut):
    """Mode Base allows a device to refuse a change while it runs (the twin's appliances do):
    the answer is then ChangeToModeResponse(InvalidInMode), never an IM error."""
    served = {ep: dut.read(ep, C.Descriptor.Attributes.ServerList) for ep in dut.endpoints()}
    checked = 0
    for endpoint, clusters in served.items():
        for cluster in (c for c in (DISHM, LWM) if c.id in clusters):
            modes = dut.read(endpoint, cluster.Attributes.SupportedModes)
            dut.invoke(endpoint, C.OnOff.Commands.On())
            dut.invoke(endpoint, C.OperationalState.Commands.Start())
            current = dut.read(endpoint, cluster.Attributes.CurrentMode)
            other = next(m.mode for m in modes if m.mode != current)
            assert dut.invoke(endpoint, cluster.Commands.ChangeToMode(newMode=other)).status == INVALID_IN_MODE
            assert dut.read(endpoint, cluster.Attributes.CurrentMode) == current
            dut.invoke(endpoint, C.OperationalState.Commands.Stop())
            checked += 1
    assert checked


@pytest.mark.parametrize("dut", serving(RVCCLEANM, kinds=IN_PROCESS), indirect=True)
def test_TC_RVCCLEANM_2_2(dut):
    """While the run mode is not Idle, a clean mode change answers InvalidInMode (without the
    Direct Mode Change feature) and keeps the clean mode."""
    for endpoint, modes in check_modes(dut, RVCCLEANM):
        run_modes = dut.read(endpoint, RVCRUNM.Attributes.SupportedModes)
        cleaning = next(m.mode for m in run_modes if any(t.value == 0x4001 for t in m.modeTags))
        assert dut.invoke(endpoint, RVCRUNM.Commands.ChangeToMode(newMode=cleaning)).status == SUCCESS
        current = dut.read(endpoint, RVCCLEANM.Attributes.CurrentMode)
        other = next(m.mode for m in modes if m.mode != current)
        response = dut.invoke(endpoint, RVCCLEANM.Commands.ChangeToMode(newMode=other))
        direct = dut.read(endpoint, RVCCLEANM.Attributes.FeatureMap) & (1 << 16)
        assert response.status == (SUCCESS if direct else INVALID_IN_MODE)
        assert dut.read(endpoint, RVCCLEANM.Attributes.CurrentMode) == (other if direct else current)
