"""Media clusters' test cases: Media Playback (TC_MEDIAPLAYBACK), Channel (TC_CHANNEL) and Keypad
Input (TC_KEYPADINPUT), from their test plans (the TV device type)."""
from __future__ import annotations

import pytest
from chip.clusters import Objects as C
from conftest import serving
from steps import IN_PROCESS, ClusterSpec, at_most, check_attributes, check_global_attributes, endpoints_with

MP, CH, KI = C.MediaPlayback, C.Channel, C.KeypadInput
PLAYING, PAUSED, NOT_PLAYING = 0, 1, 2
SUCCESS = 0

SPECS = {
    MP: ClusterSpec(
        MP, revisions=range(1, 3), features={"AS": 0, "VS": 1, "TT": 2, "AT": 3, "AA": 4},
        attributes={"CurrentState": "M", "StartTime": "AS", "Duration": "AS", "SampledPosition": "AS",
                    "PlaybackSpeed": "AS", "SeekRangeEnd": "AS", "SeekRangeStart": "AS", "ActiveAudioTrack": "AT",
                    "AvailableAudioTracks": "AT", "ActiveTextTrack": "TT", "AvailableTextTracks": "TT"},
        accepted={"Play": "M", "Pause": "M", "Stop": "M", "StartOver": "O", "Previous": "O", "Next": "O",
                  "Rewind": "VS", "FastForward": "VS", "SkipForward": "O", "SkipBackward": "O", "Seek": "AS",
                  "ActivateAudioTrack": "AT", "ActivateTextTrack": "TT", "DeactivateTextTrack": "TT"},
        generated={"PlaybackResponse": "M"},
        constraints={"CurrentState": at_most(3)}),
    CH: ClusterSpec(
        CH, revisions=range(1, 3), features={"CL": 0, "LI": 1, "EG": 2, "RP": 3},
        feature_rules={"RP": "[EG]"},
        attributes={"ChannelList": "CL", "Lineup": "LI", "CurrentChannel": "O"},
        accepted={"ChangeChannel": "CL | LI", "ChangeChannelByNumber": "M", "SkipChannel": "M",
                  "GetProgramGuide": "EG", "RecordProgram": "RP & EG", "CancelRecordProgram": "RP & EG"},
        generated={"ChangeChannelResponse": "CL | LI", "ProgramGuideResponse": "EG"},
        constraints={"CurrentChannel": lambda v, values: v is None or v in values.get("ChannelList", [v])}),
    KI: ClusterSpec(
        KI, revisions=range(1, 2), features={"NV": 0, "LK": 1, "NK": 2},
        accepted={"SendKey": "M"}, generated={"SendKeyResponse": "M"}),
}

NOT_APPLICABLE = {
    "TC_MEDIAPLAYBACK_6_3": "Advanced Seek feature (AS) is not served",
    "TC_MEDIAPLAYBACK_6_5": "Text Tracks / Audio Tracks features (TT, AT) are not served",
    "TC_MEDIAPLAYBACK_6_6": "Audio Tracks feature (AT) is not served",
    "TC_MEDIAPLAYBACK_6_7": "Text Tracks feature (TT) is not served",
    "TC_CHANNEL_5_4": "Electronic Guide feature (EG) is not served",
    "TC_CHANNEL_5_5": "Record Program feature (RP) is not served",
    "TC_CHANNEL_5_6": "Electronic Guide and Record Program features (EG, RP) are not served",
    "TC_KEYPADINPUT_3_1": "Location Keys feature (LK) is not served",
    "TC_KEYPADINPUT_3_3": "Number Keys feature (NK) is not served",
}


def _duts(cluster):
    return serving(cluster, kinds=IN_PROCESS)


def _on(dut, endpoint):
    dut.invoke(endpoint, C.OnOff.Commands.On())


def _play(dut, endpoint, command):
    response = dut.invoke(endpoint, command)
    assert isinstance(response, MP.Commands.PlaybackResponse)
    return response.status


@pytest.mark.parametrize("dut", serving(MP), indirect=True)
def test_TC_MEDIAPLAYBACK_1_7(dut):
    check_global_attributes(dut, SPECS[MP])


@pytest.mark.parametrize("dut", _duts(MP), indirect=True)
def test_TC_MEDIAPLAYBACK_6_1(dut):
    """Play, Pause and Stop answer PlaybackResponse(Success) and set CurrentState."""
    for endpoint in endpoints_with(dut, MP):
        check_attributes(dut, SPECS[MP])
        _on(dut, endpoint)
        for command, state in ((MP.Commands.Play(), PLAYING), (MP.Commands.Pause(), PAUSED),
                               (MP.Commands.Play(), PLAYING), (MP.Commands.Stop(), NOT_PLAYING)):
            assert _play(dut, endpoint, command) == SUCCESS
            assert dut.read(endpoint, MP.Attributes.CurrentState) == state


@pytest.mark.parametrize("dut", _duts(MP), indirect=True)
def test_TC_MEDIAPLAYBACK_6_2(dut):
    """The optional StartOver, Next and Previous (where served) answer Success while playing."""
    for endpoint in endpoints_with(dut, MP):
        _on(dut, endpoint)
        accepted = dut.read(endpoint, MP.Attributes.AcceptedCommandList)
        _play(dut, endpoint, MP.Commands.Play())
        served = [c for c in (MP.Commands.StartOver(), MP.Commands.Next(), MP.Commands.Previous())
                  if c.command_id in accepted]
        assert served
        for command in served:
            assert _play(dut, endpoint, command) == SUCCESS
            assert dut.read(endpoint, MP.Attributes.CurrentState) == PLAYING


@pytest.mark.parametrize("dut", serving(MP, feature=0x2, kinds=IN_PROCESS), indirect=True)
def test_TC_MEDIAPLAYBACK_6_4(dut):
    """Variable speed: FastForward and Rewind while playing answer Success and keep it playing."""
    for endpoint in endpoints_with(dut, MP):
        _on(dut, endpoint)
        _play(dut, endpoint, MP.Commands.Play())
        for command in (MP.Commands.FastForward(), MP.Commands.Rewind(), MP.Commands.Play()):
            assert _play(dut, endpoint, command) == SUCCESS
            assert dut.read(endpoint, MP.Attributes.CurrentState) == PLAYING


@pytest.mark.parametrize("dut", serving(CH), indirect=True)
def test_TC_CHANNEL_1_6(dut):
    check_global_attributes(dut, SPECS[CH])


@pytest.mark.parametrize("dut", _duts(CH), indirect=True)
def test_TC_CHANNEL_5_1(dut):
    """ChannelList and Lineup read with their types; channel numbers are unique."""
    for values in check_attributes(dut, SPECS[CH]).values():
        channels = values["ChannelList"]
        assert channels and len({(c.majorNumber, c.minorNumber) for c in channels}) == len(channels)
        assert values["Lineup"].operatorName and values["Lineup"].lineupInfoType == 0


@pytest.mark.parametrize("dut", _duts(CH), indirect=True)
def test_TC_CHANNEL_5_2(dut):
    """ChangeChannelByNumber moves CurrentChannel to that channel."""
    for endpoint in endpoints_with(dut, CH):
        _on(dut, endpoint)
        for channel in dut.read(endpoint, CH.Attributes.ChannelList)[:3]:
            dut.invoke(endpoint, CH.Commands.ChangeChannelByNumber(majorNumber=channel.majorNumber,
                                                                   minorNumber=channel.minorNumber))
            current = dut.read(endpoint, CH.Attributes.CurrentChannel)
            assert (current.majorNumber, current.minorNumber) == (channel.majorNumber, channel.minorNumber)


@pytest.mark.parametrize("dut", _duts(CH), indirect=True)
def test_TC_CHANNEL_5_3(dut):
    """SkipChannel moves through ChannelList by count (both ways); ChangeChannel by name answers
    ChangeChannelResponse(Success) and an unknown name NoMatches."""
    for endpoint in endpoints_with(dut, CH):
        _on(dut, endpoint)
        channels = dut.read(endpoint, CH.Attributes.ChannelList)
        first = channels[0]
        dut.invoke(endpoint, CH.Commands.ChangeChannelByNumber(majorNumber=first.majorNumber,
                                                               minorNumber=first.minorNumber))
        dut.invoke(endpoint, CH.Commands.SkipChannel(count=2))
        assert dut.read(endpoint, CH.Attributes.CurrentChannel) == channels[2 % len(channels)]
        dut.invoke(endpoint, CH.Commands.SkipChannel(count=-1))
        assert dut.read(endpoint, CH.Attributes.CurrentChannel) == channels[1 % len(channels)]
        response = dut.invoke(endpoint, CH.Commands.ChangeChannel(match=first.name))
        assert isinstance(response, CH.Commands.ChangeChannelResponse) and response.status == SUCCESS
        assert dut.read(endpoint, CH.Attributes.CurrentChannel) == first
        response = dut.invoke(endpoint, CH.Commands.ChangeChannel(match="no such channel anywhere"))
        assert response.status == CH.Enums.StatusEnum.kNoMatches


@pytest.mark.parametrize("dut", serving(KI), indirect=True)
def test_TC_KEYPADINPUT_1_2(dut):
    check_global_attributes(dut, SPECS[KI])


@pytest.mark.parametrize("dut", serving(KI, feature=0x1, kinds=IN_PROCESS), indirect=True)
def test_TC_KEYPADINPUT_3_2(dut):
    """Navigation keys answer SendKeyResponse(Success)."""
    Key = KI.Enums.CECKeyCodeEnum
    for endpoint in endpoints_with(dut, KI):
        _on(dut, endpoint)
        for key in (Key.kSelect, Key.kUp, Key.kDown, Key.kLeft, Key.kRight, Key.kRootMenu, Key.kExit):
            response = dut.invoke(endpoint, KI.Commands.SendKey(keyCode=key))
            assert isinstance(response, KI.Commands.SendKeyResponse) and response.status == SUCCESS, key
