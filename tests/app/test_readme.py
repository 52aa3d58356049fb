"""The README and docs/ as a user reads them: short, consistent, and every example runs as printed.

Fences: ```sh blocks are run here line by line (a line whose comment says "until Ctrl-C" runs
in the background until the block ends, then gets Ctrl-C); ```python blocks are run as they
are; ```shell blocks are the set-up commands, which the bare-install test
(tests/e2e/test_e2e_bare_install.py) and CI (scripts/test.sh) run.
"""
from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest
from netns import REPO, network_namespace
from openai_stub import OpenAIStub

README = (REPO / "README.md").read_text(encoding="utf-8")
DOCS = {p.name: p.read_text(encoding="utf-8") for p in sorted((REPO / "docs").glob("*.md"))}
SCRIPTS = {p.name: p.read_text(encoding="utf-8") for p in sorted((REPO / "scripts").glob("*.sh"))}


def blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```", text, flags=re.S | re.M)


def commands(block: str) -> list[str]:
    return [line.strip() for line in block.replace("\\\n", " ").splitlines() if line.strip()]


# ---- shape and consistency ----------------------------------------------------------------

def test_the_readme_is_short_with_contents_and_links_that_resolve():
    assert len(README.splitlines()) <= 350
    for anchor in re.findall(r"\]\(#([a-z0-9-]+)\)", README):
        assert any(re.sub(r"[^a-z0-9 -]", "", h.lower()).replace(" ", "-") == anchor
                   for h in re.findall(r"^#+ (.*)$", README, flags=re.M)), anchor
    for name, text in {"README.md": README, **{f"docs/{k}": v for k, v in DOCS.items()}}.items():
        base = REPO if name == "README.md" else REPO / "docs"
        for target in re.findall(r"\]\(([^)#:]+\.md)(?:#[^)]*)?\)", text):
            assert (base / target).is_file(), f"{name} links to missing {target}"


def test_every_docs_page_is_linked_from_the_readme():
    linked = set(re.findall(r"\]\(docs/([^)#]+\.md)", README))
    missing = sorted(set(DOCS) - linked)
    assert not missing, f"add a row to README's Documentation table for: {', '.join(missing)}"


def test_no_issue_numbers_or_development_narrative_in_user_docs():
    for name, text in {"README.md": README, **DOCS}.items():
        assert not re.search(r"\(#\d+\)|\bissues? #?\d+|\bthe issue\b", text, flags=re.I), name


def test_the_command_table_is_generated_from_the_command_line():
    sys.path.insert(0, str(REPO / "scripts"))
    try:
        from commands_table import readme_with_table
    finally:
        sys.path.pop(0)
    assert README == readme_with_table(README), "run: python scripts/commands_table.py --write"


def test_every_extra_is_in_the_readme_table():
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    table = README.split("## Extras", 1)[1].split("\n## ", 1)[0]
    for extra in extras:
        assert f"| `{extra}` |" in table, extra


def _suite_figures() -> dict[str, tuple[str, str]]:
    """suite -> (tests, time) from docs/performance.md's test-suite table (the one source)."""
    rows = re.findall(r"^\| (fast|whole)[^|]*\| [^|]*\| ([\d,]+) \| ([^|]+) \|", DOCS["performance.md"], flags=re.M)
    return {suite: (tests, when.strip()) for suite, tests, when in rows}


def test_test_counts_and_times_agree_everywhere():
    figures = _suite_figures()
    assert set(figures) == {"fast", "whole"}
    counts = {tests for tests, _ in figures.values()}
    for name, text in {"README.md": README, **DOCS, **SCRIPTS}.items():
        for count in re.findall(r"\b(\d[\d,]*) tests\b", text):
            if int(count.replace(",", "")) >= 1000:   # a suite's size, not "the 30 tests of X"
                assert count in counts, f"{name}: {count} tests; docs/performance.md says {sorted(counts)}"
        for suite, when in re.findall(r"\b(fast|whole) (?:test )?suite[^.]*?\b(\d+(?:–\d+)? min(?:utes)?)", text):
            assert figures[suite][1].startswith(("about " + when, when)), f"{name}: {suite} suite {when}"


# ---- the examples run as printed ------------------------------------------------------------

@pytest.mark.parametrize("index", range(len(blocks(README, "python"))))
def test_readme_python_examples_run(index, tmp_path):
    code = blocks(README, "python")[index]
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=600,
                          env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert done.returncode == 0, done.stderr[-3000:]


def _finish_reply(request: dict) -> str:
    return json.dumps({"thought": "done", "action": "finish", "action_input": json.dumps({"answer": "done"})})


def _wait_for_http(ns, line: str, process: subprocess.Popen) -> None:
    port = re.search(r"--http (\d+)", line)
    if port is None:
        time.sleep(5)
        return
    probe = f"import urllib.request; urllib.request.urlopen('http://127.0.0.1:{port.group(1)}/health', timeout=2)"
    for _ in range(240):
        assert process.poll() is None, f"{line} stopped: {process.stderr.read()[-3000:]}"
        if ns.run([sys.executable, "-c", probe], check=False).returncode == 0:
            return
        time.sleep(0.5)
    raise AssertionError(f"{line}: no HTTP after 120 s")


@pytest.mark.e2e
def test_readme_shell_examples_run(tmp_path):
    """Every ```sh line, in order, in one working directory; blocks that start `twin run` with
    its Matter nodes run inside a network namespace made for the test."""
    env = dict(os.environ, PYTHONPATH=str(REPO), COLUMNS="100",
               PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    with OpenAIStub([_finish_reply] * 200) as stub, network_namespace("readme") as ns:
        env.update(OPENAI_BASE_URL=stub.base_url, OPENAI_API_KEY="test-key")
        for block in blocks(README, "sh"):
            lines = commands(block)
            inside = any("until Ctrl-C" in line for line in lines)
            background: list[tuple[str, subprocess.Popen]] = []
            # Inside the namespace as a user runs them: without PYTEST_CURRENT_TEST, which keeps
            # `twin run`'s nodes off (outside it, it stays: no node may start on the real network).
            run_env = {k: v for k, v in env.items() if k != "PYTEST_CURRENT_TEST"} if inside else env
            for line in lines:
                # exec: Ctrl-C (SIGINT) reaches the command itself, not a shell waiting for it
                argv = ["bash", "-c", "exec " + line if "until Ctrl-C" in line else line]
                if inside:
                    argv = ns.command(["env", *(f"{k}={v}" for k, v in env.items() if k in (
                        "PYTHONPATH", "PATH", "COLUMNS", "OPENAI_BASE_URL", "OPENAI_API_KEY")), *argv])
                if "until Ctrl-C" in line:
                    process = subprocess.Popen(argv, cwd=tmp_path, env=run_env, stdout=subprocess.DEVNULL,
                                               stderr=subprocess.PIPE, text=True)
                    background.append((line, process))
                    _wait_for_http(ns, line, process)
                    continue
                done = subprocess.run(argv, cwd=tmp_path, env=run_env, capture_output=True, text=True, timeout=1200)
                assert done.returncode == 0, f"{line}\n{done.stderr[-3000:]}"
            for line, process in background:
                process.send_signal(signal.SIGINT)
                _, err = process.communicate(timeout=60)
                assert process.returncode == 0, f"{line}: exit {process.returncode}\n{err[-3000:]}"
    assert stub.requests, "the LLM example never called the model"


def test_shell_examples_name_only_real_commands_and_options(capsys):
    """Cheap, in the fast suite: every `twin ...` line of the README parses (`--help` after it).
    In process: a fresh interpreter per line cost a start-up each."""
    from matter_twin.cli import app
    for block in blocks(README, "sh"):
        for line in commands(block):
            words = shlex.split(line.split(" #", 1)[0].split(">", 1)[0])
            if not words or words[0] != "twin":
                continue
            try:
                code = app(args=[*words[1:], "--help"])
            except SystemExit as exit_:
                code = exit_.code
            assert not code, f"{line}: {capsys.readouterr().err}"
