"""The device catalogue (`twin device types`): one entry per registered type, described from
the type itself."""
import json

from typer.testing import CliRunner

from clusters.devices import DEVICE_TYPES
from matter_twin.cli import app
from twin.catalogue import catalogue, markdown


def test_every_type_is_described():
    entries = catalogue()
    assert [e["key"] for e in entries] == sorted(DEVICE_TYPES)
    by_key = {e["key"]: e for e in entries}
    for e in entries:
        assert e["endpoints"] and e["room_kinds"], e["key"]
        assert e["endpoints"][0]["device_types"][0]["id"] == e["device_type_id"]
        assert DEVICE_TYPES[e["key"]].product_id == e["product_id"]
    assert "OvenCavityOperationalState" in by_key["oven"]["endpoints"][1]["servers"]
    assert by_key["dimmer_switch"]["endpoints"][0]["clients"][:3] == ["Identify", "OnOff", "LevelControl"]
    physics = {e["key"] for e in entries if e["physics"]}
    assert {"oven", "water_heater", "evse", "solar_power", "air_conditioner", "dimmable_light",
            "extended_color_light", "window_covering"} <= physics
    assert not physics & {"dimmer_switch", "speaker", "on_off_plug", "dishwasher"}


def test_cli_lists_json_and_markdown():
    result = CliRunner().invoke(app, ["device", "types", "--json"])
    assert result.exit_code == 0, result.output
    entries = json.loads(result.output)
    assert len(entries) == len(DEVICE_TYPES) and entries[0]["key"] == "air_conditioner"
    table = CliRunner().invoke(app, ["device", "types", "--markdown"]).output
    assert table == markdown() and table.count("\n| `") == len(DEVICE_TYPES)
    plain = CliRunner().invoke(app, ["device", "types"]).output
    assert plain.endswith(f"{len(DEVICE_TYPES)} device types\n")
