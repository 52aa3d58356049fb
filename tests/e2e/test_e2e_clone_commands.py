"""Clones behave as the devices they were dumped from, over Matter: a robot vacuum, a thermostat
and a colour light are exported, cloned into the same home (`products:`), and `twin run` serves
both; python-matter-server (in a namespace this module creates) commissions all six and sends
each pair the same commands. Every answer, and the state each command leaves, must be the same
on the clone as on the built-in (a clone whose clusters were only stored values would answer
UNSUPPORTED_COMMAND). The in-process side is tests/clusters/test_clone.py."""
from __future__ import annotations

import json
from typing import Any

import pytest
from e2e_twin import twin_lab

pytestmark = pytest.mark.e2e   # a namespace, python-matter-server

MODULE = "test_e2e_clone_commands"
KINDS = ("robot_vacuum_cleaner", "thermostat", "extended_color_light")

#: per kind, the state its commands leave (endpoint 1), compared between built-in and clone;
#: the vacuum's operational state is left out: it moves on with virtual time.
SETTLED = {
    "robot_vacuum_cleaner": [("ServiceArea", "SelectedAreas"), ("RvcRunMode", "CurrentMode")],
    "thermostat": [("Thermostat", "OccupiedHeatingSetpoint"), ("Thermostat", "OccupiedCoolingSetpoint")],
    "extended_color_light": [("OnOff", "OnOff"), ("LevelControl", "CurrentLevel"), ("ColorControl", "CurrentHue"),
                             ("ColorControl", "CurrentSaturation"), ("ColorControl", "ColorTemperatureMireds"),
                             ("ColorControl", "ColorMode")],
}


def commands(kind: str) -> list[Any]:
    from chip.clusters import Objects as C
    level = {"transitionTime": 0, "optionsMask": 0, "optionsOverride": 0}
    return {
        "robot_vacuum_cleaner": [C.ServiceArea.Commands.SelectAreas(newAreas=[1]),   # the home's one room
                                 C.RvcRunMode.Commands.ChangeToMode(newMode=1),
                                 C.RvcOperationalState.Commands.Pause(), C.RvcOperationalState.Commands.Resume(),
                                 C.RvcOperationalState.Commands.GoHome(),
                                 C.ServiceArea.Commands.SelectAreas(newAreas=[99])],   # no such area
        "thermostat": [C.Thermostat.Commands.SetpointRaiseLower(
            mode=C.Thermostat.Enums.SetpointRaiseLowerModeEnum.kBoth, amount=10)],
        "extended_color_light": [C.OnOff.Commands.On(), C.LevelControl.Commands.MoveToLevel(level=100, **level),
                                 C.ColorControl.Commands.MoveToHueAndSaturation(hue=120, saturation=200, **level),
                                 C.ColorControl.Commands.MoveToColorTemperature(colorTemperatureMireds=300, **level)],
    }[kind]


def home(workdir) -> str:
    """The built-ins, and a clone of each made from its export as this home serves it (a robot
    vacuum's service areas are the home's rooms)."""
    from clusters.clone import export_attributes
    from twin.home import Home
    rooms = ["rooms:", "  - id: lab", "    devices:"] + [f"      - {{id: {kind}, type: {kind}}}" for kind in KINDS]
    head = ["name: Clones", "seed: 0", 'start_time: "2025-06-01 12:00:00"']
    (workdir / "builtins.yaml").write_text("\n".join(head + rooms) + "\n")
    builtins = Home.load(workdir / "builtins.yaml")
    head.append("products:")
    for kind in KINDS:
        dump = {"attributes": json.loads(json.dumps(export_attributes(builtins.device(kind))))}
        (workdir / f"{kind}.product.json").write_text(json.dumps(dump))
        head.append(f"  cloned_{kind}: {kind}.product.json")
        rooms.append(f"      - {{id: clone_{kind}, type: cloned_{kind}}}")
    return "\n".join(head + rooms) + "\n"


def answer(response: Any) -> Any:
    """What a command's answer says, without what names the node (a command failure's text)."""
    if response is None or isinstance(response, (bool, int, float, str)):
        return response
    return json.loads(json.dumps(response, default=lambda o: getattr(o, "__dict__", repr(o))))


async def drive_pairs(client: Any, twin: Any, node_ids: dict[str, int]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kind in KINDS:
        for index, command in enumerate(commands(kind)):
            name = f"{kind} {index} {type(command).__qualname__}"
            for device in (kind, f"clone_{kind}"):
                try:
                    got = answer(await client.send_device_command(node_ids[device], 1, command))
                except Exception as err:  # noqa: BLE001 - an error answer is compared like any other
                    got = f"error {type(err).__name__}"
                out.setdefault(name, []).append(got)
    for kind in KINDS:
        for cluster, attribute in SETTLED[kind]:
            for device in (kind, f"clone_{kind}"):
                value = (await twin.tool("get_attribute", {"device.id": device, "endpoint.id": 1,
                                                           "cluster.id": cluster, "attribute.id": attribute}))["value"]
                out.setdefault(f"{kind} {cluster}.{attribute}", []).append(value)
    return out


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("clone-commands")
    (workdir / "home.yaml").write_text(home(workdir))
    with twin_lab(workdir, "cc", "--home", str(workdir / "home.yaml"), "--open-windows", "all-qr") as the_lab:
        yield the_lab


def test_clones_answer_commands_over_matter_as_the_built_ins_do(lab):
    devices = {d: d for kind in KINDS for d in (kind, f"clone_{kind}")}
    first = lab.call("test_e2e_all_types", "commission_all", devices, timeout=600)
    assert set(first["node_ids"]) == set(devices) and first["wrong"] == [], first["wrong"]
    pairs = lab.call(MODULE, "drive_pairs", first["node_ids"], timeout=300)
    print(json.dumps(pairs, indent=1, default=str))
    assert len(pairs) == sum(len(commands(k)) + len(SETTLED[k]) for k in KINDS)
    assert {name: both for name, both in pairs.items() if both[0] != both[1]} == {}
    # The commands did something: the state moved to what they asked.
    assert pairs["robot_vacuum_cleaner ServiceArea.SelectedAreas"][0] == [1]
    assert pairs["extended_color_light LevelControl.CurrentLevel"][0] == 100
    assert pairs["extended_color_light ColorControl.ColorTemperatureMireds"][0] == 300
    assert not any(str(both[0]).startswith("error") for name, both in pairs.items()
                   if "SelectAreas" in name or "Thermostat" in name or "light" in name)
