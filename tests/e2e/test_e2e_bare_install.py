"""A fresh venv with only `pip install -e .`: what a new user gets from the README's first command.

The base install must run the main job (the home, its Matter nodes in a namespace, the tools,
the codes); every command that needs an extra must refuse in one line, exit 2, naming the extra
and the pip command; and each extra, installed on its own, must make its commands work. One
venv for the module (pip's cache makes the installs quick), extras added one at a time, each
checked to still be refused just before its own install.
"""
from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest
from netns import REPO, network_namespace
from openai_stub import OpenAIStub

pytestmark = pytest.mark.e2e

PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
DEAD_SERVER = "ws://127.0.0.1:9/ws"   # nothing listens on the discard port


class Venv:
    def __init__(self, root: Path, work: Path) -> None:
        self.root, self.work = root, work
        self.python = root / "bin" / "python"

    def pip(self, *args: str) -> None:
        done = subprocess.run([str(self.python), "-m", "pip", "install", "-q", *args],
                              capture_output=True, text=True, timeout=1800)
        assert done.returncode == 0, done.stderr[-3000:]

    def twin(self, *args: str, timeout: float = 300, ns=None) -> subprocess.CompletedProcess:
        command = [str(self.root / "bin" / "twin"), *args]
        if ns is not None:
            command = ns.command(command)
        return subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=self.work)

    def refuses(self, extra: str, *args: str) -> None:
        done = self.twin(*args)
        lines = done.stderr.strip().splitlines()
        assert done.returncode == 2 and len(lines) == 1, done.stderr[-3000:]
        assert f"needs the `{extra}` extra: " in lines[0], lines[0]
        command = shlex.split(lines[0].split(" extra: ", 1)[1])
        assert command[:4] == [str(self.python), "-m", "pip", "install"]
        assert command[-1] == f"{REPO}[{extra}]"

    def works(self, *args: str, timeout: float = 300, ns=None) -> subprocess.CompletedProcess:
        done = self.twin(*args, timeout=timeout, ns=ns)
        assert done.returncode == 0, f"twin {' '.join(args)}: {done.stderr[-3000:]}"
        assert "extra: " not in done.stderr
        return done


@pytest.fixture(scope="module")
def bare(tmp_path_factory) -> Venv:
    root = tmp_path_factory.mktemp("bare") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(root)], check=True, timeout=300)
    venv = Venv(root, tmp_path_factory.mktemp("work"))
    venv.pip("-e", str(REPO))
    return venv


@pytest.fixture(scope="module")
def reference_run(bare) -> Path:
    """A small benchmark run of the reference agent (base install), for `twin bench report`."""
    out = bare.work / "runs" / "reference"
    bare.works("bench", "run", "--agent", "reference", "--category", "QT1-F", "--limit", "1", "--out", str(out))
    return out


def test_the_base_install_is_exactly_the_declared_dependencies(bare):
    done = subprocess.run([str(bare.python), "-m", "pip", "check"], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout
    for extra_only in ("openai", "matplotlib", "matter_server", "gymnasium", "ray", "aiomqtt", "amqtt"):
        probe = subprocess.run([str(bare.python), "-c", f"import {extra_only}"], capture_output=True)
        assert probe.returncode != 0, f"{extra_only} came with the base install"


IMPORT_ALL = """
import importlib, json, pkgutil
failed = {}
for top in json.loads(__import__("sys").argv[1]):
    for info in pkgutil.walk_packages(importlib.import_module(top).__path__, top + "."):
        try:
            importlib.import_module(info.name)
        except ImportError as err:
            failed[info.name] = (err.name or "", str(err))
print(json.dumps(failed))
"""


def test_every_module_imports_on_the_base_install_but_those_of_an_extra(bare):
    """What makes a removed base dependency fail here even where no command below reaches it."""
    from matter_twin.extras import EXTRA_MODULES
    packages = [p.rstrip("*") for p in PYPROJECT["tool"]["setuptools"]["packages"]["find"]["include"]]
    done = subprocess.run([str(bare.python), "-c", IMPORT_ALL, json.dumps(packages)], capture_output=True, text=True,
                          timeout=600, cwd=bare.work)
    assert done.returncode == 0, done.stderr[-3000:]
    # chip is the base install's data model; only the SDK's controller in it is an extra
    extras = {m.split(".")[0] for modules in EXTRA_MODULES.values() for m in modules} - {"chip"}
    wrong = {name: why for name, (missing, why) in json.loads(done.stdout).items()
             if missing.split(".")[0] not in extras}
    assert not wrong, wrong


def test_base_commands_run(bare, reference_run):
    assert "twin run" not in bare.works("--help").stderr
    assert bare.works("--version").stdout.startswith("twin (matter-twin) ")
    snapshot = json.loads(bare.works("run", "--speed", "max", "--duration", "600", "--json").stdout)
    assert snapshot["clock"]["tick"] == 6000
    answer = json.loads(bare.works("tool", "get_current_time", "{}").stdout)
    assert answer["ok"] and answer["current_time"]
    codes = json.loads(bare.works("codes", "--json").stdout)
    assert codes and all(row["manual_code"] and row["qr_code"].startswith("MT:") for row in codes)
    assert "▀" in bare.works("codes", "kitchen_light").stdout.replace("█", "▀")   # the QR code drawn
    assert (reference_run / "results.jsonl").read_text().count("\n") == 1


def test_twin_run_serves_matter_nodes_in_a_namespace(bare):
    with network_namespace("bare") as ns:
        process = subprocess.Popen(ns.command([str(bare.root / "bin" / "twin"), "run", "--matter", "--speed", "1",
                                               "--duration", "20", "--storage", str(bare.work / "storage")]),
                                   cwd=bare.work, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            listening = ""
            for _ in range(60):   # the nodes bind their UDP ports once the home is up
                listening = ns.run(["ss", "-Hlun"]).stdout
                if ":5540 " in listening:
                    break
                time.sleep(0.5)
            assert ":5540 " in listening, listening
            _, err = process.communicate(timeout=120)
        finally:
            if process.poll() is None:
                process.kill()
                process.communicate()
    assert process.returncode == 0, err[-3000:]
    assert "matter: " in err and " nodes on UDP ports 5540-" in err


def _stub_finish() -> str:
    return json.dumps({"thought": "done", "action": "finish", "action_input": json.dumps({"answer": "done"})})


def test_each_extra_alone_makes_its_commands_work(bare, reference_run):
    runs = bare.work / "runs"
    # ---- refusals on the bare install: one line each, before any work
    refused = {
        "plots": [("bench", "report", str(reference_run))],
        "llm": [("bench", "run", "--agent", "openai:m", "--out", str(runs / "llm"))],
        "mqtt": [("run", "--mqtt", "--no-matter", "--duration", "1")],
        "ray": [("bench", "run", "--agent", "reference", "--ray", "local", "--out", str(runs / "ray"))],
        "matter-server": [("bridge", "init", "--server", DEAD_SERVER),
                          ("device", "export", "--server", DEAD_SERVER, "--node", "1")],
        "lab": [("lab", "demo", "--folder", str(bare.work / "demo"))],
    }
    for extra, commands in refused.items():
        for args in commands:
            bare.refuses(extra, *args)
    gym = subprocess.run([str(bare.python), "-c", "import scenarios.gym_env"], capture_output=True, text=True)
    assert gym.returncode != 0 and "gymnasium" in gym.stderr

    def install(extra: str) -> None:
        for args in refused.get(extra, []):   # the extras installed so far did not bring this one
            bare.refuses(extra, *args)
        bare.pip("-e", f"{REPO}[{extra}]")

    # lifelong's plots are optional: without the extra the report is written, the pictures left out
    done = bare.works("bench", "lifelong", "--scenario", "pref", "--seeds", "1", "--no-frontier", "--policy", "ONLINE",
                      "--out", str(runs / "ll"))
    assert "plots none (the `plots` extra is not installed" in done.stdout, done.stdout
    assert (runs / "ll" / "report.json").exists() and not list((runs / "ll").glob("*.png"))

    install("plots")
    bare.works("bench", "report", str(reference_run), "--out", str(runs / "report"))
    assert (runs / "report" / "report.md").exists() and list((runs / "report").glob("*.png"))

    install("llm")
    with OpenAIStub([_stub_finish()] * 4) as stub:
        done = bare.works("bench", "run", "--agent", "openai:m", "--base-url", stub.base_url, "--api-key", "k",
                          "--category", "QT1-F", "--limit", "1", "--out", str(runs / "llm"))
        assert stub.requests and re.search(r"\b[01]/1 episodes succeeded", done.stdout), done.stdout

    install("mqtt")
    with network_namespace("bare") as ns:
        done = bare.works("run", "--mqtt", "--mqtt-listen", "127.0.0.1:18830", "--no-matter", "--speed", "1",
                          "--duration", "2", ns=ns)
        assert "mqtt" in done.stderr.lower()

    install("gym")
    episode = subprocess.run([str(bare.python), "-c", "import gymnasium, scenarios.gym_env as g\n"
                              "env = gymnasium.make(g.ENV_ID)\nobs, info = env.reset(seed=0)\nprint(obs['query'])"],
                             capture_output=True, text=True, timeout=300)
    assert episode.returncode == 0 and episode.stdout.strip(), episode.stderr[-3000:]

    install("matter-server")
    for args in refused["matter-server"]:   # now they run, and fail on the dead server in one line
        done = bare.twin(*args, timeout=120)
        assert done.returncode == 2 and "extra: " not in done.stderr and "Traceback" not in done.stderr, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr

    install("ray")
    bare.works("bench", "run", "--agent", "reference", "--ray", "local", "--workers", "1", "--category", "QT1-F",
               "--limit", "1", "--out", str(runs / "ray"), timeout=600)
    assert (runs / "ray" / "results.jsonl").read_text() == (reference_run / "results.jsonl").read_text()

    install("lab")
    for probe in ("import chip.ChipDeviceCtrl", "import matter_server.server"):
        done = subprocess.run([str(bare.python), "-c", probe], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr[-3000:]
    assert subprocess.run([str(bare.root / "bin" / "matter-server"), "--help"], capture_output=True,
                          timeout=120).returncode == 0


def test_the_extras_tested_are_the_declared_ones():
    declared = set(PYPROJECT["project"]["optional-dependencies"]) - {"test"}
    assert declared == {"plots", "llm", "mqtt", "gym", "matter-server", "ray", "lab"}
