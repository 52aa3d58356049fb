"""SMH-Bench (issue #28): tiered homes, the 22 subcategories, one verifier for DR and EIA, the
reference solver at 100 %, the null and bound agents at 0 %, and the committed set."""
from __future__ import annotations

import json
import random
import re
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
    REQUIRED,
    SEED,
    SUBCATEGORIES,
    build_home,
    dump_task,
    fresh_home,
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
    made = make_home(28_101, tier="medium", types=HOME_TYPES, required=REQUIRED["medium"])
    assert home_spec("medium", 1).rooms == made.rooms
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


APPLIANCES = ("water_heater", "oven", "evse", "battery_storage")


def test_tasks_operate_the_energy_and_kitchen_appliances_and_the_reference_solves_them(tasks):
    def types(task):
        tier, _, index = task.home.rpartition("-")
        kinds = {d.id: d.type for r in home_spec(tier, int(index)).rooms for d in r.devices}
        return {kinds[d] for d in task.targets}
    operated = {(t.category, kind) for t in tasks for kind in types(t)}
    for kind in APPLIANCES:   # scheduling (TC4) uses every one of them, control (TC1) most
        assert ("TC4", kind) in operated, kind
    assert {("TC1", k) for k in ("water_heater", "oven", "battery_storage")} <= operated
    assert ("TC3", "water_heater") in operated     # "the hot water is barely warm": ask, then heat
    asked = [t for t in tasks if t.category == "TC7" and re.search(r"charging|set to, in degrees", t.query)]
    assert asked
    chosen = [next(t for t in tasks if t.category == "TC4" and kind in types(t)) for kind in APPLIANCES]
    for task in chosen + asked[:2]:
        eia, dr = run_eia(task, ReferenceAgent()), run_dr(task, direct_reference, "reference")
        assert eia["success"] and dr["success"], (task.id, eia["error"], dr["error"])
        assert not run_eia(task, NullAgent())["success"], task.id


def test_appliance_operations_read_back_and_reach_their_state():
    home = fresh_home("medium-0")
    names = {d: home.device_info(d)["name"] for d in home.devices.objects}
    kinds = {d: home.device_info(d)["type"] for d in home.devices.objects}
    backend = TwinBackend(home)
    rng = random.Random(3)
    for kind, types in L.APPLIANCE_OPS.items():
        device = next(d for d in sorted(kinds) if kinds[d] in types)
        op = {"op": kind, "device": device, **({"value": L.VALUES[kind][0]} if kind in L.VALUES else {})}
        for style in ("clear", "colloquial", "noisy"):
            said = L.say(op, names, style, rng, decoy=next(d for d in kinds if d != device))
            assert L.parse_clause(said, names) == op, said
        for call in L.calls(op):
            assert call_tool(backend, call["tool"], call["args"])["ok"], (kind, call)
        goal = Goal(home, L.predicates(op))
        assert goal.check(home)["success"], kind
        assert L.ops_of(L.predicates(op)) == [op], kind   # the goal reads back as the operation


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


def test_scene_and_complaint_tasks_act_in_the_room_the_request_names(tasks):
    for task in tasks:
        if task.subcategory in ("scene_ambiguity", "state_ambiguity"):
            tier, _, index = task.home.rpartition("-")
            rooms = {d.id: (r.name or r.id).lower() for r in home_spec(tier, int(index)).rooms for d in r.devices}
            assert any(rooms[d] in task.query.lower() for d in task.targets), task.id


def test_the_rule_judge_reads_answers_and_questions_by_their_class(tasks):
    from scenarios.smh.judges import RULE_JUDGE
    temperature = next(t for t in tasks if t.query.startswith("What is the temperature in")
                       and not float(t.answer["value"]).is_integer() and abs(t.answer["value"] % 1 - 0.5) > 0.2)
    home, value = build_home(temperature), temperature.answer["value"]
    judge = RULE_JUDGE.answer
    assert judge(temperature, f"It is {value:.1f} degrees.", home)[0]
    assert judge(temperature, f"{value * 9 / 5 + 32:.1f} °F.", home)[0]                # another unit
    assert judge(temperature, f"About {round(value)} degrees.", home)[0]              # rounded as written
    assert not judge(temperature, f"{value:.1f} degrees, but it could be something else.", home)[0]   # doubt
    assert not judge(temperature, f"Either {value:.1f} or {value + 2:.1f}.", home)[0]
    count = next(t for t in tasks if t.query.startswith("How many") and t.answer["value"] == 3)
    assert judge(count, "Three.", build_home(count))[0] and not judge(count, "Two.", build_home(count))[0]
    on = next(t for t in tasks if re.match(r"Is the .+ on\?$", t.query) and t.answer["value"] is False)
    assert judge(on, "Right now it is off.", build_home(on))[0]
    assert not judge(on, "It's on.", build_home(on))[0]
    slot = next(t for t in tasks if t.subcategory == "slot_missing" and "colour temperature" in t.query)
    home, device = build_home(slot), slot.user["goal"].split(" to ")[0][len("Set the "):]
    assert RULE_JUDGE.clarification(slot, [f"Which colour temperature should the {device} have?"], home)[0]
    assert not RULE_JUDGE.clarification(slot, [f"Shall I adjust the {device}?"], home)[0]   # the slot unasked
    scene = next(t for t in tasks if t.subcategory == "scene_ambiguity")
    home = build_home(scene)
    assert RULE_JUDGE.clarification(scene, ["Which devices should change, and how?"], home)[0]
    assert not RULE_JUDGE.clarification(scene, ["Do you want me to set a timer?"], home)[0]
    assert not RULE_JUDGE.clarification(scene, ["OK, I'll handle it."], home)[0]      # not a question


def test_judge_agreement_measures_labelled_replies_per_category_and_split(tasks, tmp_path):
    from typer.testing import CliRunner

    from matter_twin.cli_smh import smh_app
    from scenarios.smh.agreement import load_labels
    count = next(t for t in tasks if t.category == "TC7" and t.answer["kind"] == "number")
    slot = next(t for t in tasks if t.subcategory == "slot_missing")
    word = slot.user["slots"]["value"]["keywords"][0]
    rows = [{"task_id": count.id, "answer": f"It is {count.answer['value']}.", "label": "pass", "split": "dev"},
            {"task_id": count.id, "answer": "I don't know.", "label": "fail", "split": "heldout"},
            {"task_id": slot.id, "questions": [f"What {word} would you like?"], "label": "pass", "split": "dev"},
            {"task_id": slot.id, "questions": ["Shall I set a timer?"], "label": "fail", "split": "heldout"}]
    labels, free = tmp_path / "labels.jsonl", tmp_path / "free.jsonl"
    labels.write_text("".join(json.dumps(r) + "\n" for r in rows))
    free.write_text(json.dumps({**rows[0], "split": "dev2"}) + "\n")
    # the parts in the set's order, the free-wording file beside the template one
    result = CliRunner().invoke(smh_app, ["judge-agreement", "--labels", str(labels), "--labels", str(free)])
    assert result.exit_code == 0, result.output
    assert result.output.index("### dev (2 answers)") < result.output.index("### heldout (2 answers)") \
        < result.output.index("### dev2 (1 answers)")
    only = CliRunner().invoke(smh_app, ["judge-agreement", "--labels", str(labels), "--labels", str(free),
                                        "--split", "dev2"])
    assert only.exit_code == 0 and "### dev2 (1 answers)" in only.output and "### dev " not in only.output
    for split in ("heldout2", "test"):   # a part with no rows, a part that does not exist: one line each
        none = CliRunner().invoke(smh_app, ["judge-agreement", "--labels", str(free), "--split", split])
        assert none.exit_code == 2 and "Traceback" not in none.output and split in none.output
    result = CliRunner().invoke(smh_app, ["judge-agreement", "--labels", str(labels)])
    assert result.exit_code == 0, result.output
    assert "| TC3 | 1 | 1/1 (100 %) |" in result.output and "| TC7 | 1 | 1/1 (100 %) |" in result.output
    from tests.openai_stub import OpenAIStub
    with OpenAIStub(["A"] * 6 + ["B"] * 6) as stub:   # an LLM judge beside the rule judge, three votes a row
        both = CliRunner().invoke(smh_app, ["judge-agreement", "--labels", str(labels), "--judge", "openai:m",
                                            "--base-url", stub.base_url, "--api-key", "k"])
    assert both.exit_code == 0, (both.output, both.exception)
    assert len(stub.requests) == 12 and "| TC7 | 1 | 1/1 (100 %) | 1/1 (100 %) |" in both.output   # dev: A
    assert "| TC3 | 1 | 1/1 (100 %) | 1/1 (100 %) |" in both.output   # held-out TC3 fail row: B
    labels.write_text('{"task_id": "tc7-status-001", "label": "maybe", "answer": "yes"}\n')
    with pytest.raises(ValueError, match=r"labels.jsonl:1: needs task_id and a label in pass, fail$"):
        load_labels(labels)
    bad = CliRunner().invoke(smh_app, ["judge-agreement", "--labels", str(labels)])
    assert bad.exit_code == 2 and "Traceback" not in bad.output
