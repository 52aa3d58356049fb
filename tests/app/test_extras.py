"""The optional extras: what matter_twin/extras.py checks is what pyproject.toml installs."""
import sys
import tomllib
from pathlib import Path

import pytest

from matter_twin import extras
from matter_twin.console import CliError

PYPROJECT = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())


def test_every_extra_but_test_is_checked_by_name():
    declared = set(PYPROJECT["project"]["optional-dependencies"]) - {"test"}
    assert declared == set(extras.EXTRA_MODULES)


def test_the_test_extra_installs_every_other_extra():
    test = " ".join(PYPROJECT["project"]["optional-dependencies"]["test"])
    for extra in extras.EXTRA_MODULES:
        assert extra in test.split("[", 1)[1].split("]", 1)[0].split(",")


def test_a_missing_extra_is_one_line_naming_it_and_the_pip_command(monkeypatch):
    monkeypatch.setitem(extras.EXTRA_MODULES, "plots", ("no_such_module_for_the_test",))
    with pytest.raises(CliError) as err:
        extras.require("plots", "twin bench report")
    message = err.value.format_message()
    assert message.startswith("twin bench report needs the `plots` extra: ")
    assert f"{sys.executable} -m pip install -e " in message and "[plots]" in message
    assert "\n" not in message


def test_installed_extras_pass_and_only_openai_models_need_llm():
    extras.require("plots", "charts")            # the test environment has every extra
    extras.require_for_model("reference", "x")
    extras.require_for_model(None, "x")


def test_the_lab_demo_stand_ins_ship_with_the_package():
    from hardware.demo import DEVICES_SCRIPT, MATTERJS_VERSION
    assert DEVICES_SCRIPT.is_file() and "tests" not in DEVICES_SCRIPT.parts
    assert "hardware" in PYPROJECT["tool"]["setuptools"]["package-data"]
    script = (Path(__file__).parents[2] / "scripts" / "install-test-deps.sh").read_text()
    assert f"MATTERJS_VERSION={MATTERJS_VERSION}" in script   # the tests and the demo use one matter.js
