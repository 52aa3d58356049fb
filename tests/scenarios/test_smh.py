"""SMH-Bench (issue #28): tiered homes, the 22 subcategories, one verifier for DR and EIA, the
reference solver at 100 %, the null and bound agents at 0 %, and the committed set."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from bridge.tools import call_tool
from bridge.twin_backend import TwinBackend
from scenarios.agents.simple import NullAgent
from scenarios.smh import language as L
from scenarios.smh.evaluate import run_dr, run_eia, same_trigger, verify
from scenarios.smh.reference import ReferenceAgent, direct_reference
from scenarios.smh.tasks import (
    CATEGORIES,
    DEFAULT_TASKS,
    HOME_TYPES,
    HOMES,
    PER_CATEGORY,
    SEED,
    SUBCATEGORIES,
    build_home,
    dump_task,
    generate,
    generate_one,
    home_spec,
    load_tasks,
)
from scenarios.smh.validate import bound_problems, shape, shape_problems, validate
from twin.generator import make_home
from twin.goals import Goal
from twin.schema import UserFileError


@pytest.fixture(scope="module")
def tasks():
    return load_tasks(DEFAULT_TASKS)


@pytest.fixture(scope="module")
def sample(tasks):
    """One task of every subcategory (22), the tiers taken in turn, so every tier is in it."""
    subs = [s for subs in SUBCATEGORIES.values() for s in subs]
    tiers = ("simple", "medium", "complex")
    return [next(t for t in tasks if t.subcategory == s and t.tier == tiers[i % 3]) for i, s in enumerate(subs)]


def test_homes_are_homemakers_in_three_tiers():
    def sizes(tier):
        specs = [home_spec(tier, k) for k in range(HOMES[tier])]
        return [len(s.rooms) for s in specs], [sum(len(r.devices) for r in s.rooms) for s in specs], specs
    rooms, devices, _ = sizes("simple")
    assert 4.5 <= sum(rooms) / len(rooms) <= 6.5 and 4.5 <= sum(devices) / len(devices) <= 7
    rooms, devices, _ = sizes("medium")
    assert 9.5 <= sum(rooms) / len(rooms) <= 11.5 and 30 <= sum(devices) / len(devices) <= 40
    rooms, devices, specs = sizes("complex")
    assert set(rooms) == {31} and set(devices) == {135}
    nested = [r for r in specs[0].rooms if r.parent]
    assert nested and len({r.floor for r in specs[0].rooms}) >= 3
    assert any("bedside" in d.tags or "reading" in d.tags for r in specs[0].rooms for d in r.devices)
    # The one home generator: an SMH home is HomeMaker's home of its tier, renamed.
    assert home_spec("medium", 1).rooms == make_home(28_101, tier="medium", types=HOME_TYPES).rooms
    assert home_spec("complex", 2) is home_spec("complex", 2)


def test_the_committed_set_has_the_papers_shape(tasks):
    found = shape(tasks)
    assert found["tasks"] == sum(PER_CATEGORY.values()) == 1150 and not shape_problems(tasks)
    assert found["categories"] == PER_CATEGORY and found["subcategories"] == 22
    assert found["tiers"] == {"simple": 576, "medium": 344, "complex": 230}   # 5:3:2 in each subcategory
    assert all(t.history for t in tasks if t.category == "TC5") and all(t.memory for t in tasks if t.category == "TC6")
    assert all(t.rule for t in tasks if t.category == "TC4") and all(t.answer for t in tasks if t.category == "TC7")
    noisy = [t.query for t in tasks if t.subcategory == "noisy"]
    assert all("wait" in q for q in noisy) and any(q.split()[0] in ("Uh,", "Um,", "Erm,", "Hmm,") for q in noisy)


def test_the_wording_reads_back_in_every_style():
    names = {"a": "Bedroom 2 Fan", "b": "Kitchen On/Off Light"}
    import random
    rng = random.Random(3)
    for op in ({"op": "fan_speed", "device": "a", "value": 40}, {"op": "off", "device": "b"}):
        for style in ("clear", "colloquial", "noisy"):
            for _ in range(5):
                said = L.say(op, names, style, rng, decoy="b" if op["device"] == "a" else "a")
                assert L.parse_clause(said, names) == op, said


def test_reference_passes_and_null_fails_the_sample_in_both_settings(sample):
    for task in sample:
        eia, dr = run_eia(task, ReferenceAgent()), run_dr(task, direct_reference, "reference")
        assert eia["success"] and dr["success"], (task.id, eia["error"], dr["error"])
        assert eia["success"] == dr["success"]     # DR and EIA give the same verdict for the reference
        assert not run_eia(task, NullAgent())["success"], task.id
        assert not run_dr(task, lambda p, s: '{"mode": "execute", "response": "ok", "actions": []}', "null")["success"]


def test_bound_agents_score_zero_where_they_must(sample):
    problems, scores = bound_problems(sample)
    assert problems == [] and set(scores) == {"act-all", "stuffer", "copier"}
    assert sum(scores["stuffer"].values()) == 0 and sum(scores["copier"].values()) == 0


def _first(tasks, sub, tier="medium"):
    return next(t for t in tasks if t.subcategory == sub and t.tier == tier)


def test_a_changed_untouched_device_fails_the_task(tasks):
    task = _first(tasks, "clear")
    start = build_home(task)
    acted = start.fork()
    goal = Goal(acted, [*task.goal, {"type": "unchanged", "except": task.targets}])
    backend = TwinBackend(acted)
    for op in L.parse_clauses(task.query, {d: acted.device_info(d)["name"] for d in acted.devices.objects}):
        for call in L.calls(op):
            assert call_tool(backend, call["tool"], call["args"])["ok"]
    assert verify(task, start, acted, goal, "Done.", [], None)["success"]
    other = next(d for d in acted.devices.objects if d not in task.targets
                 and acted.device_info(d)["type"] in L.OP_TYPES["on"])
    was = backend.read_attribute(other, None, "OnOff", "OnOff")["value"]
    call_tool(backend, "execute_command", {"device.id": other, "endpoint.id": 1, "cluster.id": "OnOff",
                                           "command.id": "Off" if was else "On", "args": {}})
    verdict = verify(task, start, acted, goal, "Done.", [], None)
    assert not verdict["success"] and verdict["error"] == "collateral"


def test_a_rule_with_the_right_actions_and_the_wrong_trigger_fails(tasks):
    for sub in ("time_specific", "state_driven", "time_and_state"):
        task = _first(tasks, sub)
        start = build_home(task)
        acted = start.fork()
        goal = Goal(acted, [*task.goal, {"type": "unchanged", "except": task.targets}])
        trigger = json.loads(json.dumps(task.rule["trigger"]))
        if "cron" in trigger:
            minute, rest = trigger["cron"].split(" ", 1)
            trigger["cron"] = f"{(int(minute) + 1) % 60} {rest}"
        else:
            trigger["value"] = (not trigger["value"]) if isinstance(trigger["value"], bool) else trigger["value"] + 2
        acted.automations.create(trigger, task.rule["steps"])
        verdict = verify(task, start, acted, goal, "Done.", [], None)
        assert not verdict["success"] and verdict["error"] == "trigger_mismatch", sub
        right = start.fork()
        goal = Goal(right, [*task.goal, {"type": "unchanged", "except": task.targets}])
        right.automations.create(task.rule["trigger"], task.rule["steps"])
        assert verify(task, start, right, goal, "Done.", [], None)["success"], sub


def test_trigger_equivalence_is_by_meaning(tasks):
    home = build_home(_first(tasks, "time_specific"))
    room = next(iter(home.rooms))
    at = {"type": "time", "cron": "30 7 * * 1-5"}
    rule = lambda trigger, conditions=(): {"trigger": trigger, "conditions": list(conditions), "enabled": True}  # noqa: E731
    assert same_trigger(home, at, rule({"type": "time", "cron": "30 7 * * mon,tue,wed,thu,fri"}))
    assert not same_trigger(home, at, rule({"type": "time", "cron": "30 7 * * *"}))
    assert not same_trigger(home, at, {**rule(at), "enabled": False})
    hot = {"type": "room", "room_id": room, "state": "temperature", "op": ">", "value": 28}
    both = {"type": "time_and_state", "cron": "0 14 * * *", "state": hot}
    assert same_trigger(home, both, rule({"type": "time", "cron": "0 14 * * *"}, [hot]))
    assert not same_trigger(home, both, rule({"type": "time", "cron": "0 14 * * *"}, [{**hot, "op": ">="}]))
    assert same_trigger(home, hot, rule({**hot, "value": 28.0}))


def test_generation_is_seeded_and_stable(tasks):
    again = [generate_one(SEED, t.category, t.subcategory, int(t.id.rsplit("-", 1)[1]), t.tier) for t in tasks[::97]]
    assert [dump_task(t) for t in again] == [dump_task(t) for t in tasks[::97]]
    assert set(CATEGORIES) == set(SUBCATEGORIES)


def test_a_bad_task_file_is_one_line(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x", "category": "TC1"}\n')
    with pytest.raises(UserFileError) as err:
        load_tasks(bad)
    assert str(err.value).startswith(f"{bad}:1: ") and "\n" not in str(err.value)


def test_cli_validate_a_sample_and_run(tmp_path):
    twin = [sys.executable, "-m", "matter_twin.cli", "bench", "smh"]
    done = subprocess.run([*twin, "validate", "--sample", "1"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "22 tasks valid" in done.stdout
    run = subprocess.run([*twin, "run", "--agent", "reference", "--setting", "both", "--category", "TC4",
                          "--limit", "2", "--out", str(tmp_path / "r")], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    assert "4/4 succeeded" in run.stdout and (tmp_path / "r" / "summary.json").exists()
    assert len((tmp_path / "r" / "dr" / "results.jsonl").read_text().splitlines()) == 2
    bad = subprocess.run([*twin, "run", "--agent", "oracle", "--out", str(tmp_path / "x")],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and bad.stderr.startswith("error: unknown agent 'oracle'")
    assert "Traceback" not in bad.stderr


@pytest.mark.e2e   # not a network test: the whole set takes minutes, so it runs in CI, not in -m unit
def test_the_whole_committed_set_regenerates_and_validates(tasks):
    assert "".join(dump_task(t) + "\n" for t in generate()) == DEFAULT_TASKS.read_text(encoding="utf-8")
    assert validate(tasks) == []
    problems, _ = bound_problems(tasks)
    assert problems == []


def test_the_gym_environment_serves_smh_tasks(sample):
    import gymnasium

    import scenarios.gym_env  # noqa: F401  (registers the suites' environments)
    from scenarios.smh.evaluate import begin
    chosen = [t for t in sample if t.subcategory in ("batch", "state_driven", "slot_missing", "quantity")][:4]
    env = gymnasium.make("MatterTwin/SMH-Bench-v0", episodes=chosen, max_steps=60)
    assert "query_home" in env.unwrapped.tool_names and "create_automation" in env.unwrapped.tool_names
    for task in chosen:
        attempt = begin(task)
        ReferenceAgent().run(attempt.query, TwinBackend(attempt.home), attempt.session, 60)
        env.reset(options={"episode_id": task.id})
        reward = 0.0
        for h in attempt.session.history:
            _, reward, terminated, _, info = env.step(f"{h['tool']} {json.dumps(h['args'] or {})}")
        assert terminated and reward == 1.0, (task.id, info.get("verdict"))
        env.reset(options={"episode_id": task.id})
        _, reward, terminated, _, _ = env.step('finish {"answer": "ok"}')
        assert terminated and reward == 0.0


def test_the_llm_judge_decides_tc3_and_tc7_through_an_openai_compatible_api(tasks):
    from scenarios.smh.judges import RULE_JUDGE, LLMJudge, make_judge
    from tests.openai_stub import OpenAIStub
    query = _first(tasks, "quantity")
    slot = _first(tasks, "slot_missing")
    with OpenAIStub(["A", "B", "A", "B", "B", "A"] + ["A"] * 3 + ["B"] * 3) as stub:
        judge = make_judge("openai:judge-model", base_url=stub.base_url, api_key="k")
        assert isinstance(judge, LLMJudge) and judge.name == "llm:judge-model"
        # TC7: the majority of three votes decides, whatever the rule judge would say.
        verdict = run_eia(query, ReferenceAgent(), judge=judge)
        assert verdict["success"] and len(stub.requests) == 3
        asked = stub.requests[0]["messages"]
        assert "Correct answer" in asked[1]["content"] and query.query in asked[1]["content"]
        verdict = run_eia(query, ReferenceAgent(), judge=judge)
        assert not verdict["success"] and verdict["error"] == "wrong_answer"
        # TC3: the judge sees the request, the hidden intent and the questions asked.
        assert run_eia(slot, ReferenceAgent(), judge=judge)["success"]
        assert slot.user["goal"] in stub.requests[6]["messages"][1]["content"]
        verdict = run_eia(slot, ReferenceAgent(), judge=judge)
        assert not verdict["success"] and verdict["error"] == "clarification_inappropriate"
    # No model given: the rule judge, as before.
    assert make_judge("rule") is RULE_JUDGE and run_eia(query, ReferenceAgent())["success"]
    assert not RULE_JUDGE.clarification(slot, [" "])[0]
    with pytest.raises(ValueError, match="unknown judge"):
        make_judge("gpt")
