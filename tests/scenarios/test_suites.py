"""One shape for every benchmark suite (issue #26 point 7): one registry, one CLI word per suite,
a suite's own tools only in the sessions that carry them."""
from __future__ import annotations

import pytest
from pydantic import Field
from typer.testing import CliRunner

from bridge.tools import TOOL_NAMES, TOOL_SCHEMAS, Session, ToolSet, call_tool
from bridge.twin_backend import TwinBackend
from matter_twin.cli import app
from matter_twin.cli_bench import SUITE_CLIS
from scenarios.suites import SUITES, suite_named
from twin.home import Home
from twin.tool_arguments import Arguments, Text


def test_every_registered_suite_has_its_folder_tasks_and_verbs():
    assert list(SUITES) == ["simuhome", "lifelong", "personal", "smh", "homeflow"]
    assert set(SUITE_CLIS) == set(SUITES)
    for name, suite in SUITES.items():
        assert suite.name == name and suite.summary and suite.categories
        if suite.default_tasks is not None:
            assert suite.default_tasks.parent.parent.name == name   # scenarios/<name>/data/...
            assert len(suite.tasks()) > 0
    with pytest.raises(ValueError,
                       match="unknown suite 'smh-lite'; accepted: simuhome, lifelong, personal, smh, homeflow"):
        suite_named("smh-lite")


def test_the_gym_environments_come_from_the_registry():
    from scenarios.gym_env import ENV_IDS
    assert ENV_IDS == {"simuhome": "MatterTwin/SimuHome-v0", "personal": "MatterTwin/PersonalHomeBench-v0",
                       "smh": "MatterTwin/SMH-Bench-v0",
                       "homeflow": "MatterTwin/HomeFlow-v0"}   # lifelong has no per-task episodes
    with pytest.raises(ValueError, match="no per-task episodes"):
        from scenarios.gym_env import HomeEnv
        HomeEnv(suite="lifelong")


def test_bench_help_lists_the_suites_and_old_verbs_still_answer():
    runner = CliRunner()
    listing = runner.invoke(app, ["bench", "--help"], env={"COLUMNS": "160"})
    assert listing.exit_code == 0, listing.output
    for suite in SUITES.values():
        assert suite.name in listing.output and suite.summary in listing.output
    # SimuHome's verbs under its word and, as before, at `twin bench` itself.
    for words in (["bench", "simuhome", "run"], ["bench", "run"], ["bench", "personal", "validate"]):
        done = runner.invoke(app, [*words, "--help"], env={"COLUMNS": "160"})
        assert done.exit_code == 0 and "Examples:" in done.output, (words, done.output)


class Echo(Arguments):
    """Say the words back."""
    words: Text = Field(description="What to say back.")


def test_a_suite_tool_answers_only_in_its_session_and_through_its_model():
    tools = ToolSet({"echo": Echo}, {"echo": lambda backend, args, session: {"said": args.words}})
    backend = TwinBackend(Home.default())
    session = Session(tools=tools)
    assert call_tool(backend, "echo", {"words": "hi"}, session) == {"ok": True, "said": "hi"}
    bad = call_tool(backend, "echo", {"word": "hi"}, session)
    assert bad["ok"] is False and bad["error"]["code"] == "INVALID_ARGUMENT"
    elsewhere = call_tool(backend, "echo", {"words": "hi"})
    assert elsewhere["error"]["code"] == "UNKNOWN_TOOL" and "echo" not in elsewhere["error"]["accepted"]
    assert [s["function"]["name"] for s in tools.schemas] == ["echo"]
    assert len(TOOL_SCHEMAS) == 17 and "echo" not in TOOL_NAMES   # the core table never grows
    with pytest.raises(ValueError, match="core tools"):
        ToolSet({"finish": Echo}, {"finish": lambda backend, args, session: {}})
    with pytest.raises(ValueError, match="differ"):
        ToolSet({"echo": Echo}, {})
