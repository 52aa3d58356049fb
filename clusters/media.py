"""Media cluster servers for the TV: MediaPlayback, Channel, KeypadInput.

MediaPlayback has the VariableSpeed feature (so Rewind and FastForward exist); speed is
kept privately because PlaybackSpeed belongs to the AdvancedSeek feature we do not
claim. Channel has ChannelList and LineupInfo. KeypadInput has NavigationKeyCodes; a few
keys act on sibling clusters (channel, volume, playback, power).
"""
from __future__ import annotations

from typing import Any

from clusters.base import Clusters, ClusterServer, MatterError, Status, check_range
from clusters.values import from_json

MP = Clusters.MediaPlayback
CH = Clusters.Channel
KI = Clusters.KeypadInput
State = MP.Enums.PlaybackStateEnum
PlaybackStatus = MP.Enums.StatusEnum
Key = KI.Enums.CECKeyCodeEnum

MAX_SPEED = 16.0  # fastest FastForward/Rewind multiple


class MediaPlaybackServer(ClusterServer):
    persists = False   # an operation in progress: a restart starts it afresh
    cluster = MP
    revision = 2
    attributes = ("CurrentState",)
    commands = ("Play", "Pause", "Stop", "StartOver", "Previous", "Next", "Rewind", "FastForward")
    notes = ("FastForward/Rewind double the speed in their direction up to 16x (then "
             "SpeedOutOfRange); from pause, stop or the other direction they start at 1x.",
             "Pause while not playing answers InvalidStateForCommand.")

    def __init__(self, **initial: Any):
        super().__init__(feature_map=int(MP.Bitmaps.Feature.kVariableSpeed), **initial)
        self._speed = 1.0 if self._values["CurrentState"] == State.kPlaying else 0.0

    def defaults(self) -> dict[str, Any]:
        return {"CurrentState": State.kNotPlaying}

    @property
    def speed(self) -> float:
        """Playback speed: 1 normal, >1 fast forward, <0 rewind, 0 not moving."""
        return self._speed

    def private_state(self) -> dict[str, Any]:
        return {"speed": self._speed}

    def load_private_state(self, state: dict[str, Any]) -> None:
        self._speed = float(state.get("speed", 0.0))

    def _play_at(self, speed: float, state: State = State.kPlaying) -> Any:
        self._speed = speed
        self.set("CurrentState", state)
        return MP.Commands.PlaybackResponse(status=PlaybackStatus.kSuccess)

    def Play(self, request: Any = None) -> Any:
        return self._play_at(1.0)

    def Pause(self, request: Any = None) -> Any:
        if self.get("CurrentState") == State.kNotPlaying:
            return MP.Commands.PlaybackResponse(status=PlaybackStatus.kInvalidStateForCommand,
                                                data="nothing is playing; send Play first")
        return self._play_at(0.0, State.kPaused)

    def Stop(self, request: Any = None) -> Any:
        return self._play_at(0.0, State.kNotPlaying)

    def StartOver(self, request: Any = None) -> Any:
        return self._play_at(1.0)

    def Previous(self, request: Any = None) -> Any:
        return self._play_at(1.0)

    def Next(self, request: Any = None) -> Any:
        return self._play_at(1.0)

    def _change_speed(self, direction: float) -> Any:
        if self._speed * direction >= 1:  # already moving this way: go faster
            if abs(self._speed) >= MAX_SPEED:
                return MP.Commands.PlaybackResponse(status=PlaybackStatus.kSpeedOutOfRange,
                                                    data=f"already at the fastest speed ({MAX_SPEED:g}x)")
            return self._play_at(self._speed * 2)
        return self._play_at(direction)  # start at 1x in this direction

    def FastForward(self, request: Any = None) -> Any:
        return self._change_speed(1.0)

    def Rewind(self, request: Any = None) -> Any:
        return self._change_speed(-1.0)


DEFAULT_CHANNELS = [
    {"majorNumber": 1, "minorNumber": 0, "name": "News 24", "callSign": "NEWS"},
    {"majorNumber": 2, "minorNumber": 0, "name": "Sports One", "callSign": "SPRT"},
    {"majorNumber": 3, "minorNumber": 0, "name": "Movie Central", "callSign": "MOVI"},
    {"majorNumber": 4, "minorNumber": 0, "name": "Kids Zone", "callSign": "KIDS"},
    {"majorNumber": 5, "minorNumber": 0, "name": "Music Hits", "callSign": "MUSC"},
    {"majorNumber": 6, "minorNumber": 0, "name": "Nature Documentary", "callSign": "DOCU"},
    {"majorNumber": 7, "minorNumber": 1, "name": "Weather", "callSign": "WTHR"},
    {"majorNumber": 9, "minorNumber": 0, "name": "Cooking", "callSign": "COOK"},
]


class ChannelServer(ClusterServer):
    persists = False   # an operation in progress: a restart starts it afresh
    cluster = CH
    revision = 2
    attributes = ("ChannelList", "Lineup", "CurrentChannel")
    commands = ("ChangeChannel", "ChangeChannelByNumber", "SkipChannel")
    notes = ("ChangeChannel matches, case-insensitively and exactly, a channel's name, "
             "call sign, affiliate call sign, identifier or number ('7.1', or '5' for 5.0).",
             "SkipChannel moves count places through ChannelList, wrapping around.")

    def __init__(self, **initial: Any):
        super().__init__(feature_map=int(CH.Bitmaps.Feature.kChannelList | CH.Bitmaps.Feature.kLineupInfo),
                         **initial)
        if not self._values["ChannelList"]:
            raise MatterError(Status.CONSTRAINT_ERROR, "Channel.ChannelList needs at least one channel")
        if "CurrentChannel" not in initial:
            self._values["CurrentChannel"] = self._values["ChannelList"][0]

    def defaults(self) -> dict[str, Any]:
        typ = CH.Attributes.ChannelList.attribute_type.Type
        return {"ChannelList": from_json(typ, DEFAULT_CHANNELS, "Channel.ChannelList"),
                "Lineup": CH.Structs.LineupInfoStruct(operatorName="matter-twin", lineupName="Home",
                                                      lineupInfoType=CH.Enums.LineupInfoTypeEnum.kMso),
                "CurrentChannel": None}

    @staticmethod
    def _labels(channel: Any) -> set[str]:
        labels = {f"{channel.majorNumber}.{channel.minorNumber}"}
        if channel.minorNumber == 0:
            labels.add(str(channel.majorNumber))
        for text in (channel.name, channel.callSign, channel.affiliateCallSign, channel.identifier):
            if text:
                labels.add(text.lower())
        return labels

    def ChangeChannel(self, request: Any) -> Any:
        match = request.match.strip().lower()
        found = [c for c in self.get("ChannelList") if match in self._labels(c)]
        if len(found) != 1:
            status = CH.Enums.StatusEnum.kNoMatches if not found else CH.Enums.StatusEnum.kMultipleMatches
            return CH.Commands.ChangeChannelResponse(status=status, data=None)
        self.set("CurrentChannel", found[0])
        return CH.Commands.ChangeChannelResponse(status=CH.Enums.StatusEnum.kSuccess, data=None)

    def ChangeChannelByNumber(self, request: Any) -> None:
        for channel in self.get("ChannelList"):
            if (channel.majorNumber, channel.minorNumber) == (request.majorNumber, request.minorNumber):
                self.set("CurrentChannel", channel)
                return
        raise MatterError(Status.CONSTRAINT_ERROR,
                          f"no channel {request.majorNumber}.{request.minorNumber}; channels: "
                          + ", ".join(f"{c.majorNumber}.{c.minorNumber}" for c in self.get("ChannelList")))

    def SkipChannel(self, request: Any) -> None:
        check_range("SkipChannel.count", request.count, -0x8000, 0x7FFF)
        channels = self.get("ChannelList")
        current = self.get("CurrentChannel")
        index = channels.index(current) if current in channels else 0
        self.set("CurrentChannel", channels[(index + request.count) % len(channels)])


NAVIGATION_KEYS = frozenset({
    Key.kSelect, Key.kUp, Key.kDown, Key.kLeft, Key.kRight, Key.kRightUp, Key.kRightDown,
    Key.kLeftUp, Key.kLeftDown, Key.kRootMenu, Key.kSetupMenu, Key.kContentsMenu,
    Key.kFavoriteMenu, Key.kExit, Key.kMediaTopMenu, Key.kMediaContextSensitiveMenu})
POWER_KEYS = frozenset({Key.kPower, Key.kPowerToggleFunction, Key.kPowerOnFunction, Key.kPowerOffFunction})
PLAYBACK_KEYS = {Key.kPlay: "Play", Key.kPause: "Pause", Key.kStop: "Stop",
                 Key.kRewind: "Rewind", Key.kFastForward: "FastForward"}


class KeypadInputServer(ClusterServer):
    persists = False   # an operation in progress: a restart starts it afresh
    cluster = KI
    revision = 1
    commands = ("SendKey",)
    notes = ("Navigation keys are accepted. ChannelUp/ChannelDown skip a channel, "
             "VolumeUp/VolumeDown step the volume (LevelControl) by 1, Play/Pause/Stop/"
             "Rewind/FastForward drive MediaPlayback, Power toggles OnOff.",
             "While the TV is off only power keys work (others: InvalidKeyInCurrentState); "
             "other keys answer UnsupportedKey.")

    def __init__(self, **initial: Any):
        super().__init__(feature_map=int(KI.Bitmaps.Feature.kNavigationKeyCodes), **initial)

    def defaults(self) -> dict[str, Any]:
        return {}

    def _reply(self, status: Any) -> Any:
        return KI.Commands.SendKeyResponse(status=status)

    def SendKey(self, request: Any) -> Any:
        key = request.keyCode
        onoff = self.sibling(Clusters.OnOff)
        if key in POWER_KEYS and onoff is not None:
            turn_on = {Key.kPowerOnFunction: True, Key.kPowerOffFunction: False}.get(key, not onoff.get("OnOff"))
            onoff.On() if turn_on else onoff.Off()
            return self._reply(KI.Enums.StatusEnum.kSuccess)
        if onoff is not None and not onoff.get("OnOff"):
            return self._reply(KI.Enums.StatusEnum.kInvalidKeyInCurrentState)
        if key in NAVIGATION_KEYS:
            return self._reply(KI.Enums.StatusEnum.kSuccess)
        channel = self.sibling(CH)
        if key in (Key.kChannelUp, Key.kChannelDown) and channel is not None:
            channel.invoke("SkipChannel", {"count": 1 if key == Key.kChannelUp else -1})
            return self._reply(KI.Enums.StatusEnum.kSuccess)
        level = self.sibling(Clusters.LevelControl)
        if key in (Key.kVolumeUp, Key.kVolumeDown) and level is not None:
            level.invoke("Step", {"stepMode": 0 if key == Key.kVolumeUp else 1, "stepSize": 1,
                                  "transitionTime": 0, "optionsMask": 0, "optionsOverride": 0})
            return self._reply(KI.Enums.StatusEnum.kSuccess)
        playback = self.sibling(MP)
        if key in PLAYBACK_KEYS and playback is not None:
            response = playback.invoke(PLAYBACK_KEYS[key])
            ok = response.status == PlaybackStatus.kSuccess
            return self._reply(KI.Enums.StatusEnum.kSuccess if ok else KI.Enums.StatusEnum.kInvalidKeyInCurrentState)
        return self._reply(KI.Enums.StatusEnum.kUnsupportedKey)
