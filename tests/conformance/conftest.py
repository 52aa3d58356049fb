"""Devices under test for the conformance test cases (TC_*).

The duts are the default home's devices (the first of each device type), one room-sensor node and
the bridge (bridge mode: the whole home behind an Aggregator). Each is offered in every `KINDS`
entry: in process (tests/conformance/inprocess.py) and over the network (the e2e suite). The
device library's other types (`LIBRARY_IDS`: one device each in a home of their own) are offered
in process, and over the network (a third `twin run` of that home) to the test cases of their
clusters (`serving`); the cases every node runs (`all_duts`) run over the network on the default
home's nodes and the bridge.

- `dut`: one Dut per (kind, dut key); a test case that applies only to some clusters selects its
  duts with `@pytest.mark.parametrize("dut", serving(C.OnOff), indirect=True)`, so duts without
  the cluster are never collected (no skips); without that mark it runs on every dut.
- `dut_inprocess`: the in-process Dut of every dut key.
"""
from __future__ import annotations

from typing import Any

import pytest
from chip.clusters import Objects as C
from inprocess import InProcessDut
from netns import network_namespace
from network import NetworkLab

from twin.aggregator import BRIDGE_ID, build_bridge
from twin.home import Home
from twin.room_sensors import ROOM_SENSOR_TYPE, room_sensor_device

BRIDGE = "bridge"

#: How a Dut is reached -> the marks its tests carry; the network kind (network.py's NetworkDut,
#: in the session's namespace) is e2e.
KINDS: dict[str, list[Any]] = {"inprocess": [], "network": [pytest.mark.e2e]}

_REFERENCE = Home.default()


def _device_ids(home: Home) -> dict[str, str]:
    """dut key (device type key) -> the id of the first device of that type in `home`."""
    ids: dict[str, str] = {}
    for device in home.devices.values():
        ids.setdefault(device.type.key, device.id)
    return ids


DEVICE_IDS = _device_ids(_REFERENCE)
FIRST_ROOM = next(iter(_REFERENCE.rooms))


def _library_home() -> Home:
    """One device of each registered type the default home lacks, its id its type key."""
    from clusters.devices import DEVICE_TYPES
    home = Home("library")
    home.add_room("lab")
    for key in sorted(DEVICE_TYPES):
        if key not in DEVICE_IDS and DEVICE_TYPES[key].root is None:
            home.add_device(key, key, "lab")
    return home


_LIBRARY = _library_home()
LIBRARY_IDS = {device.type.key: device.id for device in _LIBRARY.devices.values()}


#: The clusters whose test cases run over the network on the library home's nodes too: those
#: the device library added (the older ones already run over the network on the default home's).
NETWORK_LIBRARY = frozenset({
    C.DoorLock, C.BooleanState, C.BooleanStateConfiguration, C.OccupancySensing, C.SmokeCoAlarm,
    C.PressureMeasurement, C.FlowMeasurement, C.IcdManagement, C.ColorControl, C.Switch, C.EnergyEvse,
    C.EnergyEvseMode, C.WaterHeaterManagement, C.WaterHeaterMode, C.OvenCavityOperationalState, C.OvenMode,
    C.MicrowaveOvenControl, C.MicrowaveOvenMode, C.ValveConfigurationAndControl, C.PumpConfigurationAndControl})


def library_home_yaml() -> str:
    """The library home as a home file, for the network lab's `twin run --home` (the same room
    and devices as `_library_home`; another seed than the default home's, so no two nodes share
    a serial number)."""
    devices = "".join(f"      - {{id: {d.id}, type: {d.type.key}}}\n" for d in _LIBRARY.devices.values())
    return f"name: library\nseed: 2\nrooms:\n  - id: lab\n    devices:\n{devices}"


def build(key: str, home: Home) -> tuple[Any, str]:
    """The data model (device or bridge) of dut `key` in `home`, and its name."""
    if key == BRIDGE:
        return build_bridge(home), BRIDGE_ID
    if key == ROOM_SENSOR_TYPE.key:
        device = room_sensor_device(home, FIRST_ROOM)
        return device, device.id
    if key in LIBRARY_IDS:
        return home.device(LIBRARY_IDS[key]), LIBRARY_IDS[key]
    return home.device(DEVICE_IDS[key]), DEVICE_IDS[key]


def _features(model: Any) -> dict[int, set[int]]:
    """cluster id -> the FeatureMaps of its servers on the model's endpoints."""
    out: dict[int, set[int]] = {}
    for server in model.servers():
        out.setdefault(server.id, set()).add(server.feature_map)
    return out


#: dut key -> cluster id -> the FeatureMaps it serves that cluster with.
DUT_FEATURES: dict[str, dict[int, set[int]]] = {
    **{key: _features(build(key, _REFERENCE.fork())[0]) for key in [*DEVICE_IDS, ROOM_SENSOR_TYPE.key, BRIDGE]},
    **{key: _features(build(key, _LIBRARY.fork())[0]) for key in LIBRARY_IDS}}
#: dut key -> the cluster ids it serves on any endpoint.
DUT_CLUSTERS: dict[str, frozenset[int]] = {key: frozenset(served) for key, served in DUT_FEATURES.items()}


def inprocess_dut(key: str) -> InProcessDut:
    """A fresh in-process Dut of `key`, in its own copy of the default (or the library) home."""
    home = (_LIBRARY if key in LIBRARY_IDS else _REFERENCE).fork()
    model, name = build(key, home)
    return InProcessDut(home, model, name, key)


def serving(*clusters: Any, feature: int = 0, kinds: tuple[str, ...] | None = None) -> list[Any]:
    """`dut` parameters of every (kind, dut key) that serves one of `clusters` (Objects classes),
    on some endpoint with every FeatureMap bit of `feature`; only `kinds` if given (a test case
    that lets minutes of device time pass runs in process, where `wait` is virtual time)."""
    def serves(key: str) -> bool:
        maps = [m for cluster in clusters for m in DUT_FEATURES[key].get(cluster.id, ())]
        return any(m & feature == feature for m in maps)

    def offered(kind: str, key: str) -> bool:
        return kind == "inprocess" or key not in LIBRARY_IDS or any(c in NETWORK_LIBRARY for c in clusters)
    return [pytest.param((kind, key), id=f"{kind}-{key}", marks=marks)
            for kind, marks in KINDS.items() if kinds is None or kind in kinds
            for key in DUT_FEATURES if serves(key) and offered(kind, key)]


def over_network(params: list[Any]) -> list[Any]:
    """Only the network kind of `dut` parameters: for test cases that need the network
    (commissioning, CASE, mDNS, subscriptions)."""
    return [p for p in params if p.values[0][0] == "network"]


def all_duts() -> list[Any]:
    """Every dut for the cases every node runs: over the network not the library's (their
    nodes are the same node code as the default home's; in process they all run)."""
    return [pytest.param((kind, key), id=f"{kind}-{key}", marks=marks)
            for kind, marks in KINDS.items() for key in DUT_CLUSTERS if kind == "inprocess" or key not in LIBRARY_IDS]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    explicit = any("dut" in mark.args[0] for mark in metafunc.definition.iter_markers("parametrize"))
    if "dut" in metafunc.fixturenames and not explicit:
        metafunc.parametrize("dut", all_duts(), indirect=True)


def _make(kind: str, key: str, request: pytest.FixtureRequest) -> Any:
    if kind == "inprocess":
        return inprocess_dut(key)
    if kind == "network" and key in LIBRARY_IDS:
        return request.getfixturevalue("network_lab").dut(LIBRARY_IDS[key], key, "library")
    if kind == "network":
        return request.getfixturevalue("network_lab").dut(build(key, _REFERENCE.fork())[1], key)
    raise ValueError(f"unknown dut kind {kind!r}; known: {', '.join(KINDS)}")


@pytest.fixture
def dut(request: pytest.FixtureRequest) -> Any:
    kind, key = request.param
    return _make(kind, key, request)


@pytest.fixture(params=list(DUT_CLUSTERS))
def dut_inprocess(request: pytest.FixtureRequest) -> InProcessDut:
    return inprocess_dut(request.param)


@pytest.fixture(scope="session")
def network_lab(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """One namespace, one CHIP SDK controller, and the twin's nodes (the default home; bridge mode
    in a second process), each commissioned once per session (tests/conformance/network.py)."""
    with network_namespace("cf") as ns:
        lab = NetworkLab(ns, tmp_path_factory.mktemp("conformance"), library_home_yaml())
        try:
            yield lab
        finally:
            lab.close()
