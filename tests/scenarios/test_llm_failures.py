"""LLM runs fail loudly: a dead endpoint, a missing key and unusable replies stop or fail a run
in one line, and what failed for the harness's reasons is not recorded as done."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.openai_stub import OpenAIStub

REPO = Path(__file__).resolve().parents[2]
BENCH = [sys.executable, "-m", "matter_twin.cli", "bench"]
FEW = ["--category", "QT1-F", "--limit", "3", "--workers", "1", "--max-steps", "3"]
FINISH = json.dumps({"thought": "done", "action": "finish", "action_input": json.dumps({"answer": "I am not sure."})})


def _bench(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    return subprocess.run([*BENCH, *args], capture_output=True, text=True, timeout=600, cwd=REPO,
                          env={**base, "PYTHONPATH": str(REPO), **(env or {})})


def _recorded(out: Path) -> list[dict]:
    path = out / "results.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _one_error_line(done: subprocess.CompletedProcess) -> str:
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in done.stderr, done.stderr
    return lines[0]


def test_an_unreachable_endpoint_stops_the_run_and_a_rerun_retries(tmp_path):
    out = tmp_path / "run"
    dead = "http://127.0.0.1:9/v1"   # the discard port: nothing listens
    done = _bench("run", "--agent", "openai:m", "--base-url", dead, "--api-key", "k", "--out", str(out), *FEW)
    assert done.returncode == 2
    assert f"the model API at {dead}" in _one_error_line(done) and "a rerun retries them" in done.stderr
    assert _recorded(out) == []
    with OpenAIStub([FINISH] * 3) as stub:   # the endpoint is back: every episode runs now
        again = _bench("run", "--agent", "openai:m", "--base-url", stub.base_url, "--api-key", "k",
                       "--out", str(out), *FEW)
    assert again.returncode == 0, again.stderr
    assert len(_recorded(out)) == 3 and "0 of 3 model replies could not be used" in again.stdout


def test_a_missing_key_is_one_line_before_any_work(tmp_path):
    done = _bench("run", "--agent", "openai:gpt-4o-mini", "--out", str(tmp_path / "run"), *FEW)
    assert done.returncode == 2 and "needs an API key: set OPENAI_API_KEY" in _one_error_line(done)
    assert not (tmp_path / "run").exists()
    lifelong = _bench("lifelong", "--policy", "openai:gpt-4o-mini", "--scenario", "pref", "--seeds", "1",
                      "--no-frontier", "--out", str(tmp_path / "ll"))
    assert lifelong.returncode == 2 and "needs an API key" in _one_error_line(lifelong)


def test_a_model_whose_replies_never_parse_stops_the_run(tmp_path):
    out = tmp_path / "run"
    with OpenAIStub(["Sure! Happy to help."] * 100) as stub:
        done = _bench("run", "--agent", "openai:m", "--base-url", stub.base_url, "--api-key", "k",
                      "--out", str(out), *FEW)
    assert done.returncode == 2
    assert "none of the model's replies could be used in 3 episodes in a row" in _one_error_line(done)
    assert _recorded(out) == []   # nothing to show for the agent: a rerun retries every episode


def test_a_few_bad_replies_are_counted_and_fail_the_run_above_the_threshold(tmp_path):
    turns = ["not a step", FINISH] * 3   # each episode: one unusable reply, then a finish
    with OpenAIStub(turns) as stub:
        done = _bench("run", "--agent", "openai:m", "--base-url", stub.base_url, "--api-key", "k",
                      "--out", str(tmp_path / "strict"), *FEW)
    assert done.returncode == 1
    assert "3 of 6 model replies could not be used" in done.stdout
    assert "50% of the model's replies could not be used, above --max-unusable 0.2" in _one_error_line(done)
    assert [r["unusable_replies"] for r in _recorded(tmp_path / "strict")] == [1, 1, 1]
    with OpenAIStub(turns) as stub:
        lenient = _bench("run", "--agent", "openai:m", "--base-url", stub.base_url, "--api-key", "k",
                         "--out", str(tmp_path / "lenient"), "--max-unusable", "0.5", *FEW)
    assert lenient.returncode == 0, lenient.stderr
    assert "3 of 6 model replies could not be used" in lenient.stdout


def test_lifelong_counts_noop_fallbacks_and_fails_above_the_threshold(tmp_path):
    scenario = tmp_path / "small.yaml"
    scenario.write_text(json.dumps({"name": "small", "steps": 24, "window": 6, "calibration_steps": 6,
                                    "revisit_at": None, "drift": []}))
    with OpenAIStub(["I cannot decide."] * 200) as stub:
        done = _bench("lifelong", "--policy", "openai:m", "--base-url", stub.base_url, "--api-key", "k",
                      "--scenario", str(scenario), "--seeds", "2", "--no-frontier", "--out", str(tmp_path / "ll"))
        asked = len(stub.requests)
    assert asked > 0
    assert f"small openai:m: {asked} of {asked} replies held no action word and became NOOP" in done.stdout
    assert done.returncode == 1 and "--max-unusable" in _one_error_line(done)


def test_lifelong_stops_on_an_unreachable_endpoint(tmp_path):
    done = _bench("lifelong", "--policy", "openai:m", "--base-url", "http://127.0.0.1:9/v1", "--api-key", "k",
                  "--scenario", "pref", "--seeds", "1", "--no-frontier", "--out", str(tmp_path / "ll"))
    assert done.returncode == 2 and "model API at http://127.0.0.1:9/v1" in _one_error_line(done)


PERSONAL = ["personal", "run", "--category", "MC", "--limit", "3", "--max-steps", "3"]


def test_personal_counts_unusable_replies_and_fails_above_the_threshold(tmp_path):
    turns = ["not a step", FINISH] * 3   # each task: one unusable reply, then a finish
    with OpenAIStub(turns) as stub:
        done = _bench(*PERSONAL, "--agent", "openai:m", "--base-url", stub.base_url, "--api-key", "k",
                      "--out", str(tmp_path / "strict"))
    assert done.returncode == 1
    assert "3 of 6 model replies could not be used" in done.stdout
    assert "50% of the model's replies could not be used, above --max-unusable 0.2" in _one_error_line(done)
    assert [r["unusable_replies"] for r in _recorded(tmp_path / "strict")] == [1, 1, 1]


def test_personal_stops_when_no_reply_parses_and_records_nothing(tmp_path):
    out = tmp_path / "run"
    with OpenAIStub(["Sure! Happy to help."] * 100) as stub:
        done = _bench(*PERSONAL, "--agent", "openai:m", "--base-url", stub.base_url, "--api-key", "k",
                      "--out", str(out))
    assert done.returncode == 2
    assert "none of the model's replies could be used in 3 episodes in a row" in _one_error_line(done)
    assert _recorded(out) == []   # a rerun retries every task


SMH = ["smh", "run", "--category", "TC1", "--limit", "3", "--workers", "1", "--max-steps", "3"]


def test_smh_stops_on_an_unreachable_endpoint_in_either_setting(tmp_path):
    dead = "http://127.0.0.1:9/v1"
    for setting in ("eia", "dr"):
        out = tmp_path / setting
        done = _bench(*SMH, "--setting", setting, "--agent", "openai:m", "--base-url", dead, "--api-key", "k",
                      "--out", str(out))
        assert done.returncode == 2 and f"the model API at {dead}" in _one_error_line(done), setting
        assert _recorded(out / setting) == []   # a rerun retries every task


def test_smh_counts_unusable_replies_and_fails_above_the_threshold(tmp_path):
    with OpenAIStub(["not a step", FINISH] * 3) as stub:
        done = _bench(*SMH, "--agent", "openai:m", "--base-url", stub.base_url, "--api-key", "k",
                      "--out", str(tmp_path / "run"))
    assert done.returncode == 1
    assert "3 of 6 model replies could not be used" in done.stdout
    assert "above --max-unusable 0.2" in _one_error_line(done)
    assert [r["unusable_replies"] for r in _recorded(tmp_path / "run" / "eia")] == [1, 1, 1]


@pytest.mark.e2e   # a local Ray takes tens of seconds to start: the full suite only
def test_a_ray_run_against_a_dead_endpoint_ends_in_one_line(tmp_path):
    out = tmp_path / "run"
    done = _bench("run", "--agent", "openai:m", "--base-url", "http://127.0.0.1:9/v1", "--api-key", "k",
                  "--out", str(out), "--ray", "local", "--workers", "1", "--category", "QT1-F", "--limit", "1",
                  "--max-steps", "3")
    assert done.returncode == 2   # the task's error, not Ray's wrapper with its remote traceback
    assert "the model API at http://127.0.0.1:9/v1" in _one_error_line(done) and "ray::" not in done.stderr
    assert _recorded(out) == []
