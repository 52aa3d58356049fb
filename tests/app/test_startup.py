"""Start-up: each command imports only what it uses (the figures are bench/bench_startup.py's)."""
import json
import os
import subprocess
import sys

import pytest
import typer

from matter_twin.cli import app
from matter_twin.console import _source_help

PROBE = """
import json, sys
from matter_twin.cli import app
try:
    app(sys.argv[1:])
except SystemExit:
    pass
print(json.dumps(sorted(sys.modules)), file=sys.stderr)
"""


#: `twin` as its console script runs it: the Matter data model built class by class.
MAIN_PROBE = """
import gc, json, sys
from matter_twin.cli import main
from clusters import lazy_objects
sys.argv[0] = "twin"
try:
    main()
except SystemExit:
    pass
print(json.dumps({"built": lazy_objects.built(), "modules": sorted(sys.modules), "frozen": gc.get_freeze_count(),
                  "schemas": "TOOL_SCHEMAS" in vars(sys.modules.get("bridge.tools", sys))}), file=sys.stderr)
"""
#: Classes a tool call on the default home builds beyond the clusters its devices serve: the
#: measurement module holds servers the home uses and these two. Globals holds shared types.
#: Code that only looks a server up by its cluster's id builds nothing (`CLUSTER_ID`).
BEYOND_THE_HOME = {"Globals", "Pm10ConcentrationMeasurement", "IlluminanceMeasurement"}


def _modules(*args: str, probe: str = PROBE) -> set[str]:
    done = subprocess.run([sys.executable, "-c", probe, *args], capture_output=True, text=True, timeout=300)
    return set(json.loads(done.stderr.strip().splitlines()[-1]))


def _tops(modules: set[str]) -> set[str]:
    return {m.split(".")[0] for m in modules}


def test_help_imports_no_command():
    modules = _modules("--help")
    ours = {m for m in modules if _tops({m}) & {"twin", "bridge", "scenarios", "hardware", "clusters"}}
    assert ours <= {"twin", "twin.node", "twin.node.defaults"}   # the option defaults only
    assert not _tops(modules) & {"chip", "fastapi", "uvicorn", "mcp", "segno"}


def test_the_console_scripts_help_imports_no_data_model():
    """`twin` (main) readies the lazy data model, which costs nothing until chip.clusters is imported."""
    probe = PROBE.replace("from matter_twin.cli import app", "from matter_twin.cli import main") \
                 .replace("app(sys.argv[1:])", "sys.argv[0] = 'twin'; main()")
    assert not _tops(_modules("--help", probe=probe)) & {"chip"}


def test_a_tool_call_imports_no_server_benchmark_or_lab():
    tops = _tops(_modules("tool", "get_current_time", "{}"))
    assert "bridge" in tops and "twin" in tops
    assert not tops & {"fastapi", "uvicorn", "mcp", "scenarios", "hardware", "openai", "matplotlib"}


@pytest.mark.parametrize("name", sorted(type(typer.main.get_command(app)).lazy))
def test_a_lazy_command_is_listed_with_the_help_it_runs_with(name):
    group = typer.main.get_command(app)
    listed = group.get_command(None, name)
    assert listed.help and listed.help == _source_help(group.lazy[name])
    loaded = group.load(name)
    assert loaded.help.strip() == listed.help.strip()


def test_a_tool_call_builds_only_the_data_model_the_default_home_serves_and_imports_no_rich(tmp_path):
    from chip.clusters.ClusterObjects import ALL_CLUSTERS

    from twin.home import Home
    home = Home.default()
    served = {ALL_CLUSTERS[server.id].__name__ for device in home.devices.values()
              for endpoint in device.endpoints.values() for server in endpoint.servers.values()}
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    env.pop("TWIN_LAZY_MODEL", None)
    done = subprocess.run([sys.executable, "-c", MAIN_PROBE, "tool", "get_current_time", "{}"],
                          capture_output=True, text=True, timeout=300, env=env)
    assert json.loads(done.stdout)["ok"] is True
    probed = json.loads(done.stderr.strip().splitlines()[-1])
    built = set(probed["built"])
    assert built <= served | BEYOND_THE_HOME, sorted(built - served - BEYOND_THE_HOME)
    assert served <= built and len(built) < 40   # of the model's 125
    assert not probed["schemas"]   # the tools' JSON schemas are made for those who list the tools
    assert probed["frozen"] > 10_000   # what is alive at exit is left to the OS, not collected
    # as `twin` runs (chip's controller modules not imported): neither rich (tables, progress
    # bars) nor click where typer parses with a copy of its own
    modules = set(probed["modules"])
    assert not _tops(modules) & {"rich", "segno"}
    assert "click" not in modules or "typer._click" not in modules
