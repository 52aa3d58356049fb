"""The SimuHome benchmark: episodes, generation, validation, scoring, agents, runs and reports."""
from __future__ import annotations

import json

import pytest
from openai_stub import OpenAIStub, last_observation

from bridge.tools import Session
from matter_twin.cli_bench import bench_app
from scenarios.agents.react import ReActAgent, parse_step
from scenarios.agents.simple import NullAgent, ScriptedAgent
from scenarios.report import write_report
from scenarios.runner import RESULTS, run
from scenarios.simuhome import templates as T
from scenarios.simuhome.evaluate import build_home, run_episode
from scenarios.simuhome.generate import generate, generate_category
from scenarios.simuhome.judges import LLMJudge, RuleJudge
from scenarios.simuhome.reference import ReferenceAgent
from scenarios.simuhome.schema import CATEGORIES, DEFAULT_EPISODES, Episode, TimedGoal, dump_episode, load_episodes
from scenarios.simuhome.validate import problems, validate
from twin.schema import UserFileError


@pytest.fixture(scope="module")
def episodes() -> list[Episode]:
    return load_episodes(DEFAULT_EPISODES)


@pytest.fixture(scope="module")
def subset(episodes) -> list[Episode]:
    """The first 5 episodes of every category."""
    out, seen = [], {}
    for e in episodes:
        seen[e.category] = seen.get(e.category, 0) + 1
        if seen[e.category] <= 5:
            out.append(e)
    return out


def _first(episodes, category):
    return next(e for e in episodes if e.category == category)


# ---- the data set ----------------------------------------------------------------------------------------
def test_committed_set_has_50_per_category(episodes):
    counts = {c: sum(e.category == c for e in episodes) for c in CATEGORIES}
    assert counts == {c: 50 for c in CATEGORIES}
    assert len({e.id for e in episodes}) == 600
    assert all(e.infeasibility is not None for e in episodes if not e.feasible)
    assert all(2 <= len(e.initial.home.rooms) <= 7 for e in episodes)
    # time-indexed goals exist for every feasible QT4 category
    for c in ("QT4-1-F", "QT4-2-F", "QT4-3-F"):
        assert all(any(isinstance(g, TimedGoal) for g in e.goals) for e in episodes if e.category == c)


def test_generation_is_byte_identical_to_the_committed_file():
    committed = DEFAULT_EPISODES.read_text(encoding="utf-8").splitlines()
    fresh = [dump_episode(e) for e in generate(per_category=3)]
    leading = []
    for c in CATEGORIES:
        leading += [line for line in committed if json.loads(line)["category"] == c][:3]
    assert fresh == leading
    # and one whole category, all 50
    whole = [dump_episode(e) for e in generate_category("QT3-IF")]
    assert whole == [line for line in committed if json.loads(line)["category"] == "QT3-IF"]


def test_every_committed_episode_replays_and_names_real_things(episodes):
    assert validate(episodes, solve=False) == []


def test_validator_flags_broken_episodes(episodes):
    good = _first(episodes, "QT3-F")
    data = good.model_dump(mode="json")
    data["goals"][0]["device_id"] = "no_such_device"
    assert any("no_such_device" in p for p in problems(Episode.model_validate(data)))
    data = good.model_dump(mode="json")
    data["initial"]["setup"].append({"tool": "execute_command", "at_seconds": 0, "args": {
        "device.id": "ghost", "endpoint.id": 1, "cluster.id": "OnOff", "command.id": "On", "args": {}}})
    data["initial"]["setup"].sort(key=lambda c: c["at_seconds"])
    assert any("setup" in p and "failed" in p for p in problems(Episode.model_validate(data)))
    # a goal the home already shows: the null agent would pass, so the episode is unsound
    data = good.model_dump(mode="json")
    home = build_home(good)
    g = data["goals"][0]
    g["value"] = json.loads(json.dumps(home.device(g["device_id"]).read(g["cluster"], g["attribute"])))
    data["goals"] = [g]
    found = problems(Episode.model_validate(data))
    assert found and ("null agent succeeds" in found[-1] or "reference" in found[-1])


def test_bad_episode_file_gives_one_line(tmp_path):
    path = tmp_path / "eps.jsonl"
    path.write_text('{"id": "x"}\n', encoding="utf-8")
    with pytest.raises(UserFileError) as err:
        load_episodes(path)
    assert str(err.value).startswith(f"{path}:1: ") and "\n" not in str(err.value)
    path.write_text("not json\n", encoding="utf-8")
    with pytest.raises(match=r":1: JSON syntax error"):
        load_episodes(path)


def test_templates_round_trip():
    slots = dict(room="living room", aroom="utility room", dev=("dimmable_light", 2), adev=("laundry_washer", 1),
                 level=40, pct=30, deg=22, min=9, n=2, mode="quick", time="11:25 AM", claimed="6:05 PM",
                 state="humidity")
    for intent, wrapper in T.WRAPPERS:
        for action, body in T.BODIES:
            clause = T.parse_sentence(T.render_clause(wrapper, body, **slots))
            assert clause is not None and (clause.intent, clause.action) == (intent, action), (wrapper, body)
            assert clause.slots["dev"] == ("dimmable_light", 2) and clause.slots["room"] == "living room"
    for intent, params, template in T.SENTENCES:
        clause = T.parse_sentence(T.render(template, **slots))
        assert clause is not None and clause.intent == intent and all(clause.slots[k] == v for k, v in params.items())
    assert all(T.parse_sentence(f) is None for f in T.FILLER)


# ---- agents bound the score from both sides ---------------------------------------------------------------
def test_reference_solves_everything_and_null_agent_nothing(subset):
    judge = RuleJudge()
    for episode in subset:
        start = build_home(episode)
        ref = run_episode(episode, ReferenceAgent(), judge, start=start)
        assert ref["success"], (episode.id, ref["failures"], ref["answer"])
        null = run_episode(episode, NullAgent(), judge, start=start)
        assert not null["success"], episode.id
        if not episode.feasible:
            assert not ref["state_changed"]  # infeasible: nothing touched


def test_simulator_checks_times_to_the_tick(episodes):
    episode = _first(episodes, "QT4-1-F")
    timed = [g for g in episode.goals if isinstance(g, TimedGoal)]
    reference = run_episode(episode, ReferenceAgent(), RuleJudge())
    assert reference["success"]
    calls = [h for h in reference["history"] if h["tool"] == "schedule_workflow"]
    assert len(calls) == len(timed)
    for shift in (-1, 1):  # one second early or late fails
        shifted = []
        for h in reference["history"]:
            if h["tool"] == "finish":
                continue
            args = dict(h["args"])
            if h["tool"] == "schedule_workflow":
                from datetime import datetime, timedelta
                when = datetime.strptime(args["start_time"], "%Y-%m-%d %H:%M:%S") + timedelta(seconds=shift)
                args["start_time"] = when.strftime("%Y-%m-%d %H:%M:%S")
            shifted.append({"tool": h["tool"], "args": args})
        result = run_episode(episode, ScriptedAgent(shifted), RuleJudge())
        assert not result["success"] and result["error_type"] == "TR", result["failures"]


def test_required_actions_are_enforced(episodes):
    episode = _first(episodes, "QT3-F")
    reference = run_episode(episode, ReferenceAgent(), RuleJudge())
    acting = [{"tool": h["tool"], "args": h["args"]} for h in reference["history"]
              if h["tool"] in ("execute_command", "write_attribute")]
    result = run_episode(episode, ScriptedAgent(acting), RuleJudge())
    assert not result["success"]
    assert any("get_room_devices" in f for f in result["failures"])


def test_room_direction_goal_is_judged_by_sign_against_the_untouched_home(episodes):
    episode = next(e for e in episodes if e.category == "QT2-F" and len(e.goals) == 1)
    reference = run_episode(episode, ReferenceAgent(), RuleJudge())
    assert reference["success"]
    goal = episode.goals[0]
    wrong = "increase" if goal.direction == "decrease" else "decrease"
    flipped = Episode.model_validate({**episode.model_dump(mode="json"),
                                      "goals": [{**goal.model_dump(mode="json"), "direction": wrong}]})
    replay = [{"tool": h["tool"], "args": h["args"]} for h in reference["history"] if h["tool"] != "finish"]
    result = run_episode(flipped, ScriptedAgent(replay), RuleJudge())
    assert not result["success"] and "should" in result["failures"][0]


def test_rule_judge_fails_acting_on_an_infeasible_request(episodes):
    episode = _first(episodes, "QT4-1-IF")
    reference = run_episode(episode, ReferenceAgent(), RuleJudge())
    assert reference["success"]
    timed = episode.goals[0]
    home = build_home(episode)
    when = home.clock.time_at(home.clock.tick + timed.at_seconds * 10).strftime("%Y-%m-%d %H:%M:%S")
    g = timed.goals[-1]
    step = {"tool": "write_attribute", "args": {"device.id": g.device_id, "cluster.id": "Identify",
                                                "attribute.id": "IdentifyTime", "value": 5}}
    agent = ScriptedAgent([{"tool": "schedule_workflow", "args": {"start_time": when, "steps": [step]}}],
                          answer=reference["answer"])
    result = run_episode(episode, agent, RuleJudge())
    assert not result["success"] and result["state_changed"]
    assert any("changed device state" in f for f in result["failures"])


# ---- runs and reports -------------------------------------------------------------------------------------
def test_runs_resume_and_reports_are_written(subset, tmp_path):
    out = tmp_path / "run"
    first = run(subset[:6], ReferenceAgent, RuleJudge(), out, workers=2, progress=False)
    assert len(first) == 6
    with (out / RESULTS).open("a") as fh:
        fh.write('{"episode_id": "cut sh')  # a crash mid-line: ignored, that episode reruns
    second = run(subset[:10], ReferenceAgent, RuleJudge(), out, workers=2, progress=False)
    assert sorted(r["episode_id"] for r in second) == sorted(e.id for e in subset[6:10])
    assert run(subset[:10], ReferenceAgent, RuleJudge(), out, workers=2, progress=False) == []
    null_out = tmp_path / "null"
    run(subset, NullAgent, RuleJudge(), null_out, workers=2, progress=False)
    report = write_report([out, null_out], tmp_path / "report")
    text = report.read_text()
    assert "| reference |" in text and "| null |" in text and "QT4-3 IF" in text
    assert "| null | QT3 | 0 | 5 |" in text  # II: answered without acting
    for png in ("success_by_category.png", "latency.png"):
        assert (tmp_path / "report" / png).read_bytes()[:4] == b"\x89PNG"


def test_cli_run_and_report(subset, tmp_path):
    from typer.testing import CliRunner
    eps = tmp_path / "eps.jsonl"
    eps.write_text("".join(dump_episode(e) + "\n" for e in subset[:12]), encoding="utf-8")
    runner = CliRunner()
    result = runner.invoke(bench_app, ["run", "--agent", "reference", "--episodes", str(eps),
                                       "--out", str(tmp_path / "r"), "--workers", "2"])
    assert result.exit_code == 0, result.output
    assert "12/12 episodes succeeded" in result.output
    result = runner.invoke(bench_app, ["report", str(tmp_path / "r")])
    assert result.exit_code == 0 and (tmp_path / "r" / "report.md").exists()
    result = runner.invoke(bench_app, ["run", "--agent", "gpt", "--episodes", str(eps), "--out", str(tmp_path / "x")])
    assert result.exit_code == 2 and "unknown agent" in result.output  # bad input: exit 2
    result = runner.invoke(bench_app, ["validate", "--episodes", str(eps)])
    assert result.exit_code == 0 and "12 episodes valid" in result.output


# ---- the LLM path, against a local OpenAI-compatible server ----------------------------------------------
def _reference_calls(episode: Episode) -> list[tuple[str, dict]]:
    record = run_episode(episode, ReferenceAgent(), RuleJudge())
    return [(h["tool"], h["args"]) for h in record["history"]]


@pytest.mark.parametrize("category", ["QT3-F", "QT4-2-F"])
def test_react_json_protocol(episodes, category):
    episode = _first(episodes, category)
    calls = _reference_calls(episode)
    turns = ["Let me think about this first."]  # not JSON: the agent gets an error observation
    turns += [json.dumps({"thought": f"step {i}", "action": name, "action_input": json.dumps(args)})
              for i, (name, args) in enumerate(calls)]
    with OpenAIStub(turns) as stub:
        agent = ReActAgent("stub-model", mode="json", base_url=stub.base_url, api_key="test")
        record = run_episode(episode, agent, RuleJudge())
        first = stub.requests[0]
        assert first["model"] == "stub-model" and first["messages"][0]["role"] == "system"
        assert "action_input" in first["messages"][0]["content"] and first["messages"][1]["content"] == episode.query
        assert last_observation(stub.requests[1])["error"]["code"] == "INVALID_STEP"
        assert last_observation(stub.requests[2])["ok"] is True  # get_rooms answered
    assert record["success"], record["failures"]
    assert record["steps"] == len(calls)
    # The assistant's thoughts are kept with the calls they led to (the page's trace shows them),
    # and trajectory export gives them back as the assistant's text.
    assert [h["thought"] for h in record["history"]] == [f"step {i}" for i in range(len(calls))]
    from scenarios.simuhome.export import trajectory_messages
    assert trajectory_messages(record)[0]["content"] == "step 0"
    assert record["prompt_tokens"] == 11 * len(turns) and record["completion_tokens"] == 7 * len(turns)
    assert record["agent"] == "openai:stub-model"


def test_react_function_calling(episodes):
    episode = _first(episodes, "QT2-F")
    calls = _reference_calls(episode)
    turns = [{"content": "checking", "tool_calls": [c]} for c in calls]
    with OpenAIStub(turns) as stub:
        agent = ReActAgent("stub-model", mode="tools", base_url=stub.base_url, api_key="test")
        record = run_episode(episode, agent, RuleJudge())
        assert {t["function"]["name"] for t in stub.requests[0]["tools"]} >= {"finish", "schedule_workflow"}
        tool_msgs = [m for m in stub.requests[-1]["messages"] if m["role"] == "tool"]
        assert len(tool_msgs) == len(calls) - 1 and json.loads(tool_msgs[0]["content"])["ok"]
    assert record["success"], record["failures"]
    assert {h.get("thought") for h in record["history"]} == {"checking"}
    # The reference agent thinks nothing aloud: its result lines have no thought at all.
    assert not any("thought" in h for h in run_episode(episode, ReferenceAgent(), RuleJudge())["history"])


def test_react_step_limit(episodes):
    episode = _first(episodes, "QT3-F")
    turns = [json.dumps({"thought": "look", "action": "get_rooms", "action_input": "{}"})] * 3
    with OpenAIStub(turns) as stub:
        agent = ReActAgent("m", base_url=stub.base_url, api_key="test")
        record = run_episode(episode, agent, RuleJudge(), max_steps=3)
    assert not record["success"] and "no finish within 3 steps" in record["agent_error"]
    assert len(stub.requests) == 3


def test_parse_step():
    fenced = '```json\n{"thought": "t", "action": "get_rooms", "action_input": "{}"}\n```'
    assert parse_step(fenced) == ("get_rooms", {})
    with pytest.raises(ValueError, match="action_input"):
        parse_step('{"action": "finish", "action_input": "{not json"}')


def test_llm_judge_takes_the_majority_of_three(episodes):
    episode = _first(episodes, "QT3-IF")
    session = Session()
    session.answer = "There is no such device in that room."
    with OpenAIStub(["A", "B", "A"]) as stub:
        verdict = LLMJudge("judge-model", base_url=stub.base_url, api_key="k").judge(episode, session, False)
        prompt = stub.requests[0]["messages"]
        assert "does not exist" in prompt[0]["content"] and episode.query in prompt[1]["content"]
        assert session.answer in prompt[1]["content"]
    assert verdict.passed and verdict.votes == ["A", "B", "A"]
    with OpenAIStub(["B", "B", "A"]) as stub:
        verdict = LLMJudge("judge-model", base_url=stub.base_url, api_key="k").judge(episode, session, False)
    assert not verdict.passed
