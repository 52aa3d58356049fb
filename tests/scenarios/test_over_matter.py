"""`twin bench run --over-matter` without a network: how an episode home is described to the
Matter backend, and the command's one-line errors. The run itself, over a real
python-matter-server, is tests/e2e/test_e2e_bench_over_matter.py."""
from __future__ import annotations

from chip.clusters import Objects as Clusters
from typer.testing import CliRunner

from matter_twin.cli_bench import bench_app
from scenarios.over_matter import MatterServing, runs_over_matter
from scenarios.simuhome.evaluate import build_home
from scenarios.simuhome.schema import DEFAULT_EPISODES, load_episodes
from twin.aggregator import build_bridge
from twin.room_sensors import room_sensor_id


def test_the_backend_config_shows_each_bridged_device_as_in_process():
    episode = next(e for e in load_episodes(DEFAULT_EPISODES) if e.category == "QT2-F")
    home = build_home(episode)
    bridge = build_bridge(home)
    serving = MatterServing("ws://127.0.0.1:5580/ws")
    try:
        config = serving._config(home, bridge, node_id=7).config
    finally:
        serving.close()
    assert [r.id for r in config.rooms] == list(home.rooms)
    assert [d.id for d in config.devices] == list(home.devices)
    for spec in config.devices:
        device, bridged = home.device(spec.id), bridge.endpoint_ids(spec.id)
        assert spec.room == home.room_of(spec.id) and spec.name == home.device_info(spec.id)["label"]
        assert spec.matter.node_id == 7 and spec.matter.endpoint == bridged[0]
        # Renumbered to the device's own ids, and the bridge serves those very servers there.
        assert sorted(spec.matter.renumber.values()) == sorted(e for e in device.endpoints if e)
        for node_ep, own in spec.matter.renumber.items():
            for cluster_id, server in device.endpoints[own].servers.items():
                if cluster_id != Clusters.Descriptor.id:
                    assert bridge.endpoints[node_ep].servers[cluster_id] is server
    for room in config.rooms:
        sensor = bridge.bridged[room_sensor_id(room.id)]
        for state, cluster in (("temperature", Clusters.TemperatureMeasurement),
                               ("illuminance", Clusters.IlluminanceMeasurement),
                               ("pm10", Clusters.Pm10ConcentrationMeasurement)):
            ref = room.sensors[state]
            assert ref.node_id == 7
            assert bridge.endpoints[ref.endpoint].servers[cluster.id].endpoint.device is sensor


def test_over_matter_runs_the_categories_without_waits():
    assert all(runs_over_matter(c) for c in ("QT1-F", "QT2-IF", "QT3-F"))
    assert not any(runs_over_matter(c) for c in ("QT4-1-F", "QT4-3-IF"))


def test_over_matter_errors_are_one_line(tmp_path):
    runner = CliRunner()
    base = ["run", "--agent", "reference", "--out", str(tmp_path / "r")]
    result = runner.invoke(bench_app, [*base, "--matter-server", "ws://127.0.0.1:5580/ws"])
    assert result.exit_code == 2 and "--matter-server goes with --over-matter" in result.output
    result = runner.invoke(bench_app, [*base, "--over-matter", "--category", "QT4-1-F", "--limit", "1"])
    assert result.exit_code == 2, result.output
    assert "--over-matter runs QT1-QT3 only" in result.output and "QT4-1-F" in result.output
    assert not (tmp_path / "r").exists()


def test_over_matter_says_it_needs_root(tmp_path, monkeypatch):
    monkeypatch.setattr("os.geteuid", lambda: 1000)
    result = CliRunner().invoke(bench_app, ["run", "--agent", "reference", "--out", str(tmp_path / "r"),
                                            "--over-matter", "--category", "QT1-F", "--limit", "1"])
    assert result.exit_code == 2, result.output
    assert "--over-matter needs root" in result.output and "--matter-server URL" in result.output
    assert not (tmp_path / "r").exists()


def test_room_states_over_matter_differ_only_by_illuminance_encoding():
    """Inherent, not a bug: Matter carries illuminance as 10000·log10(lux) + 1 in a uint16, so
    near a .5 boundary the rounded lux can differ by one (about 1.7 % of the episode rooms'
    readings at the start of QT1-QT3; the rule judge allows 1 lux). Temperature, humidity (in
    0.01) and PM10 come through exactly."""
    from bridge.matter_backend import MatterBackend
    from bridge.tools import _rounded
    from twin.home import Home
    from twin.room_sensors import room_sensor_device

    sensor = room_sensor_device(Home.default(), "living_room")
    off_by_one = 0
    for k in range(400):
        values = {"temperature": 15 + k * 0.0371, "humidity": 30 + k * 0.1013,
                  "illuminance": 1 + k * 7.31, "pm10": k * 0.77}
        for state, (cluster, convert) in MatterBackend._SENSORS.items():
            server = next(s for s in sensor.servers() if s.id == getattr(Clusters, cluster).id)
            server.sensor_source = lambda v=values[state]: v     # the room's value, as the home wires it
            unit = server.read("MeasurementUnit") if state == "pm10" else None
            over = _rounded(state, float(convert(server.read("MeasuredValue"), unit)))
            here = _rounded(state, values[state])
            if state == "illuminance":
                assert abs(over - here) <= 1, (values[state], over, here)
                off_by_one += over != here
            else:
                assert over == here, (state, values[state], over, here)
    assert 0 < off_by_one < 60, off_by_one   # 34 of these 400 (up to 2,900 lux)


def _one_personal_task(tmp_path):
    from scenarios.personal.households import read_text
    from scenarios.personal.suite import DEFAULT_TASKS
    path = tmp_path / "tasks.jsonl"
    path.write_text(read_text(DEFAULT_TASKS).splitlines()[0] + "\n", encoding="utf-8")
    return path


def test_personal_over_matter_errors_are_one_line(tmp_path, monkeypatch):
    """`twin bench personal run --over-matter` keeps the rules of the other suites' runs."""
    runner = CliRunner()
    base = ["personal", "run", "--agent", "reference", "--out", str(tmp_path / "r"),
            "--tasks", str(_one_personal_task(tmp_path))]
    result = runner.invoke(bench_app, [*base, "--matter-server", "ws://127.0.0.1:5580/ws"])
    assert result.exit_code == 2 and "--matter-server goes with --over-matter" in result.output, result.output
    monkeypatch.setattr("os.geteuid", lambda: 1000)
    result = runner.invoke(bench_app, [*base, "--over-matter"])
    assert result.exit_code == 2, result.output
    assert "--over-matter needs root" in result.output and "--matter-server URL" in result.output
    monkeypatch.setattr("matter_twin.extras.missing", lambda extra: extra == "matter-server")
    result = runner.invoke(bench_app, [*base, "--over-matter"])
    assert result.exit_code == 2 and "--over-matter needs the `matter-server` extra" in result.output, result.output
    assert not (tmp_path / "r").exists()


def test_smh_over_matter_goes_without_ray(tmp_path, monkeypatch):
    monkeypatch.setattr("matter_twin.extras.missing", lambda extra: False)
    result = CliRunner().invoke(bench_app, ["smh", "run", "--agent", "reference", "--out", str(tmp_path / "r"),
                                            "--over-matter", "--ray", "local"])
    assert result.exit_code == 2, result.output
    assert "--ray runs tasks in process; it does not go with --over-matter" in result.output
    assert not (tmp_path / "r").exists()
