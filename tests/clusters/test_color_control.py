"""ColorControl: transitions on the virtual clock, hue on its circle, colour loop, modes,
status codes, and stepping == fast-forward."""
import json

import pytest
from chip.clusters import Objects as C

from clusters.color_control import ColorControlServer, enhanced_to_hue, hue_to_enhanced
from clusters.devices import create_device
from clusters.status import MatterError, Status
from twin.home import Home

CC = C.ColorControl
OPTS = {"optionsMask": 0, "optionsOverride": 0}


class Clock:
    tick = 0


def light(key="extended_color_light"):
    device = create_device("l", key)
    clock = Clock()
    for server in device.servers():
        server.clock = clock
    device.invoke("OnOff", "On")
    return device, device.locate("ColorControl"), clock


def run(server, clock, ticks):
    for _ in range(ticks):
        clock.tick += 1
        due = server.next_event_tick()
        if due is not None and due <= clock.tick:
            server.advance_to(clock.tick)


def test_hue_round_trips_through_enhanced_units():
    for hue in range(255):
        assert enhanced_to_hue(hue_to_enhanced(hue)) == hue
    assert enhanced_to_hue(65535) == 254


def test_features_shape_the_cluster():
    _, ct, _ = light("color_temperature_light")
    assert ct.feature_map == int(CC.Bitmaps.Feature.kColorTemperature)
    assert "CurrentHue" not in ct.attributes and "MoveToHue" not in ct.commands
    assert ct.read("ColorCapabilities") == ct.feature_map
    _, ext, _ = light()
    assert ext.feature_map == 0x1F and {"EnhancedCurrentHue", "ColorLoopActive", "CurrentX"} <= set(ext.attributes)
    with pytest.raises(MatterError):
        ColorControlServer(color_loop=True)


def test_move_to_hue_transition_goes_the_short_way_and_lands_exactly():
    device, cc, clock = light()
    device.invoke("ColorControl", "MoveToHue", {"hue": 250, "direction": 0, "transitionTime": 0, **OPTS})
    assert cc.read("CurrentHue") == 250
    assert cc.read("ColorMode") == CC.Enums.ColorModeEnum.kCurrentHueAndCurrentSaturation
    device.invoke("ColorControl", "MoveToHue", {"hue": 10, "direction": 0, "transitionTime": 20, **OPTS})
    assert cc.read("RemainingTime") == 20
    run(cc, clock, 10)
    assert cc.read("CurrentHue") in range(0, 6) or cc.read("CurrentHue") > 250   # went up through 254 -> 0
    run(cc, clock, 10)
    assert cc.read("CurrentHue") == 10 and cc.read("RemainingTime") == 0


def test_move_hue_never_ends_and_wraps():
    device, cc, clock = light()
    device.invoke("ColorControl", "MoveHue", {"moveMode": 1, "rate": 51, **OPTS})   # 51 steps/s: a turn in 5 s
    assert cc.next_event_tick() is None
    run(cc, clock, 25)
    assert 124 <= cc.read("CurrentHue") <= 128
    run(cc, clock, 25)
    assert cc.read("CurrentHue") in (0, 254)
    device.invoke("ColorControl", "MoveHue", {"moveMode": 0, "rate": 0, **OPTS})   # stop
    held = cc.read("CurrentHue")
    run(cc, clock, 10)
    assert cc.read("CurrentHue") == held


def test_color_temperature_clamped_and_xy_mode():
    device, cc, clock = light()
    device.invoke("ColorControl", "MoveToColorTemperature", {"colorTemperatureMireds": 50, "transitionTime": 0,
                                                               **OPTS})
    assert cc.read("ColorTemperatureMireds") == cc.read("ColorTempPhysicalMinMireds")
    assert cc.read("ColorMode") == CC.Enums.ColorModeEnum.kColorTemperatureMireds
    device.invoke("ColorControl", "MoveColorTemperature", {"moveMode": 1, "rate": 100,
                                                             "colorTemperatureMinimumMireds": 0,
                                                             "colorTemperatureMaximumMireds": 300, **OPTS})
    run(cc, clock, 30)
    assert cc.read("ColorTemperatureMireds") == 300 and cc.next_event_tick() is None
    device.invoke("ColorControl", "MoveToColor", {"colorX": 20000, "colorY": 21000, "transitionTime": 10, **OPTS})
    run(cc, clock, 10)
    assert (cc.read("CurrentX"), cc.read("CurrentY")) == (20000, 21000)
    assert cc.read("EnhancedColorMode") == CC.Enums.EnhancedColorModeEnum.kCurrentXAndCurrentY


def test_status_codes_and_nothing_half_applied():
    device, cc, _ = light()
    before = cc.state()
    with pytest.raises(MatterError) as err:
        device.invoke("ColorControl", "MoveToHue", {"hue": 255, "direction": 0, "transitionTime": 0, **OPTS})
    assert err.value.status == Status.CONSTRAINT_ERROR
    with pytest.raises(MatterError) as err:
        device.invoke("ColorControl", "MoveSaturation", {"moveMode": 1, "rate": 0, **OPTS})
    assert err.value.status == Status.INVALID_COMMAND
    with pytest.raises(MatterError) as err:
        device.invoke("ColorControl", "StepHue", {"stepMode": 1, "stepSize": 0, "transitionTime": 0, **OPTS})
    assert err.value.status == Status.INVALID_COMMAND
    with pytest.raises(MatterError) as err:
        device.write("ColorControl", "Options", 2)
    assert err.value.status == Status.CONSTRAINT_ERROR
    assert cc.state() == before


def test_off_light_ignores_colour_unless_execute_if_off():
    device, cc, _ = light()
    device.invoke("OnOff", "Off")
    device.invoke("ColorControl", "MoveToSaturation", {"saturation": 100, "transitionTime": 0, **OPTS})
    assert cc.read("CurrentSaturation") == 0
    device.invoke("ColorControl", "MoveToSaturation", {"saturation": 100, "transitionTime": 0,
                                                         "optionsMask": 1, "optionsOverride": 1})
    assert cc.read("CurrentSaturation") == 100
    device.write("ColorControl", "Options", 1)
    device.invoke("ColorControl", "MoveToSaturation", {"saturation": 7, "transitionTime": 0, **OPTS})
    assert cc.read("CurrentSaturation") == 7


def test_colour_loop_runs_and_restores_the_hue():
    device, cc, clock = light()
    device.invoke("ColorControl", "EnhancedMoveToHue", {"enhancedHue": 1000, "direction": 0, "transitionTime": 0,
                                                         **OPTS})
    # activate from the current hue, incrementing, one turn every 10 s
    device.invoke("ColorControl", "ColorLoopSet", {"updateFlags": 0x7, "action": 2, "direction": 1, "time": 10,
                                                    "startHue": 0, **OPTS})
    assert cc.read("ColorLoopActive") == 1 and cc.read("ColorLoopStoredEnhancedHue") == 1000
    run(cc, clock, 50)
    assert cc.read("EnhancedCurrentHue") == 1000 + 65536 // 2
    device.invoke("ColorControl", "StopMoveStep", OPTS)       # does not stop the loop
    run(cc, clock, 50)
    assert cc.read("EnhancedCurrentHue") == 1000
    device.invoke("ColorControl", "ColorLoopSet", {"updateFlags": 0x1, "action": 0, "direction": 0, "time": 0,
                                                    "startHue": 0, **OPTS})
    assert cc.read("ColorLoopActive") == 0 and cc.read("EnhancedCurrentHue") == 1000


def test_start_up_colour_temperature():
    _, cc, _ = light("color_temperature_light")
    cc.write("StartUpColorTemperatureMireds", 250)
    cc.power_up(cc.saved_state())
    assert cc.read("ColorTemperatureMireds") == 250


def test_stepping_equals_fast_forward_in_a_home():
    def build():
        home = Home("h")
        home.add_room("r")
        home.add_device("lamp", "extended_color_light", "r")
        home.add_device("bulb", "color_temperature_light", "r")
        home.device("lamp").invoke("OnOff", "On")
        home.device("bulb").invoke("OnOff", "On")
        home.device("lamp").invoke("ColorControl", "MoveToHueAndSaturation",
                                   {"hue": 200, "saturation": 150, "transitionTime": 37, **OPTS})
        home.device("lamp").invoke("ColorControl", "MoveColor", {"rateX": 300, "rateY": -200, **OPTS})
        home.device("bulb").invoke("ColorControl", "StepColorTemperature",
                                   {"stepMode": 1, "stepSize": 90, "transitionTime": 23,
                                    "colorTemperatureMinimumMireds": 0, "colorTemperatureMaximumMireds": 0, **OPTS})
        return home
    a, b = build(), build()
    a.step(1200)
    b.advance(120)
    assert json.dumps(a.snapshot(), sort_keys=True) == json.dumps(b.snapshot(), sort_keys=True)
    assert b.device("lamp").read("ColorControl", "CurrentSaturation") == 150


def test_listeners_only_hear_attributes_the_server_has():
    # a Matter node reports what listeners name: the private hue channel must never be named
    for server in (ColorControlServer(hue_and_saturation=True), light()[1]):
        heard = []
        server.listeners.append(lambda s, name, heard=heard: heard.append(name))
        server.invoke("MoveToHue", {"hue": 120, "direction": 0, "transitionTime": 0, **OPTS})
        server.invoke("StepHue", {"stepMode": 1, "stepSize": 10, "transitionTime": 0, **OPTS})
        assert "CurrentHue" in heard and set(heard) <= set(server.attribute_names()), heard
