"""Switch events on the virtual clock, Binding constraints, and light switches acting on
what they are bound to (in process, through the home)."""
import json

import pytest
from chip.clusters import Objects as C

from clusters.status import MatterError, Status
from twin.home import Home


def home_with(*devices):
    home = Home("h")
    home.add_room("r")
    for device_id, key, options in devices:
        home.add_device(device_id, key, "r", options=options)
    return home


def events(home, device_id):
    return [(e["event"], e["fields"]) for e in home.events if e["device"] == device_id]


def test_short_press_then_multi_press_complete():
    home = home_with(("b", "generic_switch", {}))
    home.press("b", presses=1, hold_seconds=0.2)
    assert events(home, "b") == [("InitialPress", {"newPosition": 1})]
    assert home.device("b").read("Switch", "CurrentPosition") == 1
    home.advance(2)
    assert [e for e, _ in events(home, "b")] == ["InitialPress", "ShortRelease", "MultiPressComplete"]
    assert events(home, "b")[-1][1] == {"previousPosition": 1, "totalNumberOfPressesCounted": 1}
    assert home.device("b").read("Switch", "CurrentPosition") == 0


def test_double_press_and_long_press():
    home = home_with(("b", "generic_switch", {}))
    home.press("b", presses=2)
    home.advance(2)
    names = [e for e, _ in events(home, "b")]
    assert names == ["InitialPress", "ShortRelease", "InitialPress", "MultiPressOngoing", "ShortRelease",
                     "MultiPressComplete"]
    assert events(home, "b")[-1][1]["totalNumberOfPressesCounted"] == 2
    home.events.clear()
    home.press("b", hold_seconds=1.5)
    home.advance(3)
    assert [e for e, _ in events(home, "b")] == ["InitialPress", "LongPress", "LongRelease", "MultiPressComplete"]


def test_too_many_presses_count_zero_and_busy_switch_refuses():
    home = home_with(("b", "generic_switch", {}))
    home.press("b", presses=3)
    with pytest.raises(MatterError) as err:
        home.press("b")
    assert err.value.status == Status.BUSY
    home.advance(3)
    assert events(home, "b")[-1][1]["totalNumberOfPressesCounted"] == 0   # MultiPressMax is 2


def test_latching_switch():
    home = home_with(("rocker", "generic_switch", {"latching": True, "positions": 3}))
    home.press("rocker", position=2)
    assert events(home, "rocker") == [("SwitchLatched", {"newPosition": 2})]
    assert home.device("rocker").read("Switch", "FeatureMap") == 1
    with pytest.raises(MatterError):
        home.press("rocker", position=3)


def test_switch_events_step_equals_fast_forward():
    def build():
        home = home_with(("b", "generic_switch", {}))
        home.press("b", presses=2, hold_seconds=1.2)
        return home
    a, b = build(), build()
    a.step(60)
    b.advance(6)
    assert json.dumps(a.snapshot(), sort_keys=True) == json.dumps(b.snapshot(), sort_keys=True)


def test_binding_targets_are_node_or_group():
    home = home_with(("sw", "on_off_light_switch", {}))
    T = C.Binding.Structs.TargetStruct
    sw = home.device("sw")
    sw.write("Binding", "Binding", [T(node=5, endpoint=1, cluster=6, fabricIndex=1), T(group=3, fabricIndex=1)])
    assert len(sw.read("Binding", "Binding")) == 2
    for bad in ([T(node=5, group=3, endpoint=1, fabricIndex=1)], [T(node=5, fabricIndex=1)]):
        with pytest.raises(MatterError) as err:
            sw.write("Binding", "Binding", bad)
        assert err.value.status == Status.CONSTRAINT_ERROR
    assert len(sw.read("Binding", "Binding")) == 2


def test_light_switches_act_on_what_they_are_bound_to():
    home = home_with(("lamp", "extended_color_light", {}), ("bulb", "color_temperature_light", {}),
                     ("plug", "on_off_plug", {}),
                     ("sw", "on_off_light_switch", {"bound_to": ["lamp", "plug:1"]}),
                     ("dim", "color_dimmer_switch", {"bound_to": ["lamp", "bulb"]}))
    out = home.press("sw", "toggle")
    assert [r["status"] for r in out["sent"]] == ["SUCCESS", "SUCCESS"]
    assert home.device("lamp").read("OnOff", "OnOff") and home.device("plug").read("OnOff", "OnOff")
    home.press("dim", "dimmer")
    home.advance(1)
    assert home.device("lamp").read("LevelControl", "CurrentLevel") == 254 - 32
    out = home.press("dim", "hue", value=100)
    assert [r.get("status") for r in out["sent"]] == ["SUCCESS", None]   # the bulb has no hue
    assert "MoveToHueAndSaturation" in out["sent"][1]["error"]
    home.advance(1)
    assert home.device("lamp").read("ColorControl", "CurrentHue") == 100
    with pytest.raises(ValueError, match="accepted: toggle, on, off"):
        home.press("sw", "hue", value=3)
    with pytest.raises(ValueError, match="not a switch"):
        home.press("lamp")


def test_binding_entries_naming_other_nodes_go_to_the_bound_sender():
    """Binding entries written over Matter name nodes: a press hands their commands to the node
    manager's sender (the e2e test sends them); the entry's cluster narrows what goes where."""
    home = home_with(("dim", "dimmer_switch", {}))
    T = C.Binding.Structs.TargetStruct
    home.device("dim").write("Binding", "Binding", [T(node=5, endpoint=1, cluster=C.OnOff.id, fabricIndex=1),
                                                    T(node=6, endpoint=2, fabricIndex=2), T(group=3, fabricIndex=1)])
    out = home.press("dim", "on")
    assert [r["status"] for r in out["sent"]] == ["NOT SERVED OVER MATTER"] * 2
    sent = []
    home.bound_sender = lambda device_id, sends: sent.append((device_id, sends))
    out = home.press("dim", "brighter")   # a LevelControl command: not for the OnOff-only entry
    assert [(r["target"], r["status"]) for r in out["sent"]] == [("node 0x6:2", "QUEUED")]
    assert sent == [("dim", [{"fabric_index": 2, "node": 6, "endpoint": 2, "cluster": "LevelControl",
                              "command": "StepWithOnOff", "fields": sent[0][1][0]["fields"]}])]


def test_bound_to_names_devices_of_the_home(tmp_path):
    from twin.schema import UserFileError
    path = tmp_path / "home.yaml"
    path.write_text("name: t\nrooms:\n- id: r\n  devices:\n  - {id: sw, type: on_off_light_switch, "
                    "options: {bound_to: [nothing]}}\n")
    with pytest.raises(UserFileError, match="bound_to"):
        Home.load(path)
