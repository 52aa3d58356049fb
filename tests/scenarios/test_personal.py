"""Personalised households (PersonalHomeBench, issue #16 section 3): residents in a home file, the
household memory as the twin's own history, the household tools, the five task categories with
rule ground truth (counterfactuals by fork and replay), scoring, agents and the committed set."""
from __future__ import annotations

import json
import subprocess
import sys
from datetime import datetime

import openai
import pytest
import yaml

from bridge.tools import TOOL_NAMES, TOOL_SCHEMAS, Session, call_tool
from bridge.twin_backend import TwinBackend
from matter_twin.cli_personal import DAYS, DEFAULT_TASKS, HOUSEHOLDS, PER_CATEGORY, SEED
from scenarios.personal.evaluate import (
    PersonalJudge,
    make_agent,
    run,
    run_task,
    score_plan,
    summarize,
    validate,
)
from scenarios.personal.household import Household
from scenarios.personal.households import make_household, write_households
from scenarios.personal.tasks import (
    CATEGORIES,
    average_precision,
    came_home_times,
    choice_of,
    dump_task,
    exact_match,
    generate,
    load_tasks,
    rank_deviation,
    solve,
)
from scenarios.personal.tools import SCHEMAS, household_tools
from scenarios.runner import load_results
from tests.openai_stub import OpenAIStub
from twin.home import Home
from twin.schema import HomeSpec, UserFileError, parse_data, parse_file, to_yaml

DAY1, DAY2 = "2025-06-02", "2025-06-03"
END = "2025-06-04 00:00:00"


@pytest.fixture(scope="module")
def spec() -> HomeSpec:
    return make_household(3, 0)


@pytest.fixture(scope="module")
def lived(spec) -> Household:
    household = Household.from_spec(spec)
    household.simulate(END)
    return household


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    """One household lived two days, two tasks of each category drawn from it."""
    base = tmp_path_factory.mktemp("personal")
    paths = write_households(base, 3, 1)
    return base, generate(paths, 3, days=2, per_category=2)


# ---- residents in the home file ----------------------------------------------------------------
def test_a_home_without_residents_dumps_as_before(tmp_path):
    spec = parse_file("twin/default_home.yaml")
    assert "residents" not in spec.model_dump(mode="json") and "residents" not in to_yaml(spec)


def test_residents_round_trip_through_a_home_file(spec, tmp_path):
    path = tmp_path / "home.yaml"
    path.write_text(to_yaml(spec))
    again = parse_file(path)
    assert again == spec and len(again.residents) == 3
    # The twin itself ignores residents: the home is the one without them.
    plain = spec.model_copy(update={"residents": []})
    assert Home.from_spec(spec).snapshot() == Home.from_spec(plain).snapshot()


@pytest.mark.parametrize("change, problem", [
    ({"bedroom": "attic"}, "residents[0].bedroom: no room 'attic'"),
    ({"preferences": {"wake": "09:00", "bed": "08:00"}}, "residents[0].preferences: Value error, times must run"),
    ({"preferences": {"leave": "08:00"}}, "leave and back go together"),
    ({"age": 300}, "residents[0].age"),
])
def test_bad_residents_give_one_line(change, problem):
    data = yaml.safe_load(open("twin/default_home.yaml"))
    data["residents"] = [{"id": "ada", "name": "Ada", "age": 40, **change}]
    with pytest.raises(UserFileError) as err:
        parse_data(data, "home.yaml")
    assert "\n" not in str(err.value) and str(err.value).startswith("home.yaml: ")
    assert problem.split(": Value error, ")[-1] in str(err.value)


# ---- the household's memory is the twin's history ------------------------------------------------
def test_memory_is_deterministic_and_made_of_the_twins_history(spec, lived):
    again = Household.from_spec(spec)
    again.simulate(END)
    assert again.memory == lived.memory
    kinds = {r["kind"] for r in lived.memory}
    assert {"action", "change", "presence", "room"} <= kinds
    # Every action is a tool call the twin answered, and its effect is in the change stream.
    actions = [r for r in lived.memory if r["kind"] == "action"]
    assert actions and all(r["detail"]["ok"] for r in actions)
    on = next(r for r in actions if r["detail"]["feature"].endswith("OnOff.On"))
    assert any(r["kind"] == "change" and r["device"] == on["device"] and r["actor"] == on["actor"]
               and r["time"] == on["time"] for r in lived.memory)
    # At the end of the day everyone is in bed and the bedroom light is off, as the last act left it.
    assert set(lived.where.values()) == {"bedroom"}
    assert lived.backend.read_attribute("bedroom_light", None, "OnOff", "OnOff")["value"] is False


def test_a_counterfactual_replay_without_a_change_reproduces_history(lived):
    same = lived.counterfactual(DAY2, {"kind": "shift", "resident": "nobody", "act": "back", "minutes": 0}, END)
    assert same.memory == lived.memory
    assert json.dumps(same.home.snapshot(), sort_keys=True) == json.dumps(lived.home.snapshot(), sort_keys=True)


def test_a_counterfactual_replay_moves_what_the_change_moves(lived):
    goer = next(m for m in lived.members() if m["preferences"].get("back"))
    before = came_home_times(lived.memory, goer["id"], DAY2)[0]
    later = lived.counterfactual(DAY2, {"kind": "shift", "resident": goer["id"], "act": "back", "minutes": 90,
                                        "day": DAY2}, END)
    after = came_home_times(later.memory, goer["id"], DAY2)[0]
    delta = datetime.fromisoformat(after) - datetime.fromisoformat(before)
    assert delta.total_seconds() == 90 * 60
    # The day before the change is untouched.
    first = [r for r in lived.memory if r["time"] < DAY2]
    assert later.memory[:len(first)] == first


# ---- the household tools -----------------------------------------------------------------------
def test_household_tools_answer_from_the_household(lived):
    session = Session(tools=household_tools(lived))
    members = call_tool(lived.backend, "get_household_members", {}, session)["members"]
    assert [m["id"] for m in members] == list(lived.residents) and all(m["persona"] for m in members)
    who = members[0]
    found = call_tool(lived.backend, "search_household_memory",
                      {"member": who["name"], "kind": "presence", "date": DAY1, "limit": 3}, session)
    assert found["ok"] and found["total"] > 3 and len(found["records"]) == 3
    assert all(r["actor"] == who["id"] and r["time"].startswith(DAY1) for r in found["records"])
    page2 = call_tool(lived.backend, "search_household_memory",
                      {"member": who["id"], "kind": "presence", "date": DAY1, "limit": 3, "offset": 3}, session)
    assert page2["records"][0] not in found["records"]
    words = call_tool(lived.backend, "search_household_memory", {"query": "dishwasher start"}, session)
    assert words["total"] >= 1 and all("dishwasher" in r["text"].lower() for r in words["records"])
    seen = call_tool(lived.backend, "perceive_room", {"room.id": "bedroom"}, session)
    assert sorted(seen["people"]) == sorted(lived.residents) and "temperature" in seen
    assert {t["function"]["name"] for t in SCHEMAS}.isdisjoint(TOOL_NAMES)


@pytest.mark.parametrize("tool, args, code", [
    ("search_household_memory", {"kind": "rumour"}, "INVALID_ARGUMENT"),
    ("search_household_memory", {"member": "zed"}, "NOT_FOUND"),
    ("search_household_memory", {"date": "yesterday"}, "INVALID_ARGUMENT"),
    ("search_household_memory", {"limit": 0}, "INVALID_ARGUMENT"),
    ("perceive_room", {"room.id": "attic"}, "NOT_FOUND"),
])
def test_household_tool_errors_are_data(lived, tool, args, code):
    result = call_tool(lived.backend, tool, args, Session(tools=household_tools(lived)))
    assert result["ok"] is False and result["error"]["code"] == code


def test_household_tools_answer_only_in_a_session_that_carries_them(lived):
    # A SimuHome session has its 17 tools only: the household's are the suite's, not the core's.
    result = call_tool(TwinBackend(Home.default()), "get_household_members", {})
    assert result["error"]["code"] == "UNKNOWN_TOOL" and "get_household_members" not in result["error"]["accepted"]
    assert len(TOOL_SCHEMAS) == 17 and not set(household_tools(lived).models) & set(TOOL_NAMES)


# ---- tasks: generated, validated, scored -------------------------------------------------------
def test_every_category_is_generated_and_validates(small):
    base, tasks = small
    assert {t.category for t in tasks} == set(CATEGORIES)
    cf = [t for t in tasks if t.category == "CF"]
    assert sorted(t.counterfactual["changed"] for t in cf) == [False, True]
    assert validate(tasks, base) == []


def test_validation_catches_a_wrong_answer_and_a_wrong_counterfactual(small):
    base, tasks = small
    ig = next(t for t in tasks if t.category == "IG")
    cf = next(t for t in tasks if t.category == "CF" and t.counterfactual["changed"])
    broken_cf = cf.model_copy(update={"answer": cf.counterfactual["original_answer"]})
    problems = validate([ig.model_copy(update={"answer": "Nobody at all"}), broken_cf], base)
    assert any(p.startswith(ig.id) and "the simulation answers" in p for p in problems)
    assert any(p.startswith(cf.id) for p in problems)


def test_counterfactual_ground_truth_is_the_replay(small):
    base, tasks = small
    for task in (t for t in tasks if t.category == "CF"):
        household = Household.load(base / task.household)
        household.simulate(task.at)
        cf = task.counterfactual
        replay = household.counterfactual(cf["day"], cf["edit"], task.at)
        assert solve(task.template, replay.memory, replay.members(), task.params) == task.answer
        original = solve(task.template, household.memory, household.members(), task.params)
        assert original == cf["original_answer"] and (original != task.answer) == cf["changed"]


def test_reference_and_null_bounds_and_the_summary(small, tmp_path):
    base, tasks = small
    ref = summarize(run(tasks, lambda t: make_agent("reference", t), tmp_path / "ref", base))
    null = summarize(run(tasks, lambda t: make_agent("null", t), tmp_path / "null", base))
    assert ref["IG"]["accuracy"] == ref["MC"]["accuracy"] == ref["CF"]["macro"] == ref["FR"]["map1"] == 1.0
    assert ref["PG"]["validity"] == 1.0 and ref["FR"]["rrs"] == 0
    assert null["IG"]["accuracy"] == null["MC"]["accuracy"] == null["CF"]["macro"] == null["FR"]["map1"] == 0.0
    assert null["PG"]["validity"] == 0.0
    path = tmp_path / "ref" / "results.jsonl"
    lines = path.read_text().splitlines()
    path.write_text("\n".join(lines[:-1]) + "\n" + lines[-1][:30])   # a crash mid-line
    again = run(tasks, lambda t: make_agent("reference", t), tmp_path / "ref", base)   # resumes: the cut task only
    assert len(again) == 1 and len(load_results(tmp_path / "ref")) == len(tasks)
    assert sorted(json.loads(line)["episode_id"] for line in lines) == sorted(t.id for t in tasks)


def setting(check: dict) -> dict:
    """The workflow step that leaves a checked value on a device."""
    target = {"device.id": check["device"], "endpoint.id": check["endpoint"]}
    cluster, attribute = check["attribute"].split(".")
    if attribute == "OnOff":
        return {"tool": "execute_command", "args": {**target, "cluster.id": "OnOff",
                                                    "command.id": "On" if check["value"] else "Off", "args": {}}}
    if attribute == "CurrentLevel":
        return {"tool": "execute_command", "args": {**target, "cluster.id": "LevelControl", "command.id": "MoveToLevel",
                                                    "args": {"level": check["value"], "transitionTime": 0,
                                                             "optionsMask": 0, "optionsOverride": 0}}}
    return {"tool": "write_attribute", "args": {**target, "cluster.id": cluster, "attribute.id": attribute,
                                                "value": check["value"]}}


def test_a_plan_is_scored_by_running_it_on_a_fork(small):
    base, tasks = small
    task = next(t for t in tasks if t.category == "PG")
    household = Household.load(base / task.household)
    household.simulate(task.at)
    before = household.home.snapshot()
    # On first: a light that is off ignores MoveToLevel (LevelControl Options, as on a real light).
    ordered = sorted(task.checks, key=lambda c: c["attribute"] != "OnOff.OnOff")
    steps = [{"program_id": "p1", "tool": "schedule_workflow",
              "args": {"start_time": task.params["arrival"], "steps": [setting(c) for c in ordered]}},
             {"program_id": "p2", "tool": "open_the_pod_bay_doors", "args": {}}]
    scored = score_plan(task, household, "Here is the plan: " + json.dumps(steps))
    assert scored == {"steps": 2, "validity": 0.5, "preference": 1.0}
    assert household.home.snapshot() == before   # scoring ran on a fork
    assert score_plan(task, household, "I would rather not.")["validity"] == 0.0


def test_scoring_rules():
    assert exact_match("She came home at 17:05.", "17:05") and not exact_match("17:05 or 17:45", "17:05")
    assert exact_match("It was 28 °C", "28 °C") and not exact_match("29", "28 °C")
    assert exact_match("Ada", "Ada") and not exact_match("Ben", "Ada") and not exact_match(None, "Ada")
    assert choice_of("B", ["x", "y"]) == "B" and choice_of("(C) because", []) == "C"
    assert choice_of("y", ["x", "y"]) == "B" and choice_of("x or y", ["x", "y"]) is None
    relevant = ["a", "b", "c"]
    assert average_precision(["a", "x", "b"], relevant, 1) == 1.0
    assert average_precision(["x", "a"], relevant, 1) == 0.0
    assert average_precision(["a", "x", "b"], relevant, 3) == pytest.approx((1 + 2 / 3) / 3)
    assert rank_deviation(["a", "b", "c"], relevant, 10) == 0
    assert rank_deviation(["b", "a"], relevant, 10) == 1 + 1 + (11 - 3)
    cf = [{"category": "CF", "success": True, "changed": True}, {"category": "CF", "success": False, "changed": False},
          {"category": "CF", "success": True, "changed": False}]
    assert summarize(cf)["CF"] == {"n": 3, "changed": 1.0, "unchanged": 0.5, "macro": 0.75}


# ---- an LLM agent and the LLM judge over the OpenAI API ------------------------------------------
def test_an_openai_agent_sees_the_household_tools_and_is_scored(small):
    base, tasks = small
    task = next(t for t in tasks if t.category == "IG")
    with OpenAIStub([
        json.dumps({"thought": "who lives here", "action": "get_household_members", "action_input": "{}"}),
        lambda body: json.dumps({"thought": "done", "action": "finish",
                                 "action_input": json.dumps({"answer": task.answer})}),
    ]) as stub:
        agent = make_agent("openai:stub", task, base_url=stub.base_url, api_key="test")
        result = run_task(task, agent, base)
        system = stub.requests[0]["messages"][0]["content"]
    assert result["success"] and result["tool_calls"] == 2
    assert "search_household_memory" in system and "get_rooms" in system
    assert "Observation" in stub.requests[1]["messages"][-1]["content"]
    assert len(TOOL_SCHEMAS) == 17   # SimuHome's list is unchanged


def test_the_judges_decide_only_what_no_rule_can(small):
    base, tasks = small
    ig = next(t for t in tasks if t.category == "IG")
    pg = next(t for t in tasks if t.category == "PG")
    with OpenAIStub(["YES", '{"overall": 4, "members": {"a": 5}}', "not json"]) as stub:
        judge = PersonalJudge("stub", client=openai.OpenAI(base_url=stub.base_url, api_key="test"))
        household = Household.load(base / pg.household)
        household.simulate(pg.at)
        assert run_task(ig, make_agent("reference", ig), base, judge)["success"]   # exact: no call
        assert len(stub.requests) == 0
        assert run_task(ig, make_agent("null", ig), base, judge)["success"]       # the judge said YES
        first = run_task(pg, make_agent("null", pg), base, judge)
        second = run_task(pg, make_agent("null", pg), base, judge)
    assert first["rpj"] == {"overall": 4, "members": {"a": 5}}
    assert second["rpj"]["overall"] is None and "error" in second["rpj"]


# ---- the committed set -------------------------------------------------------------------------
def test_the_committed_set_regenerates_byte_for_byte(tmp_path):
    committed = load_tasks(DEFAULT_TASKS)
    assert {t.category for t in committed} == set(CATEGORIES)
    paths = write_households(tmp_path, SEED, HOUSEHOLDS)
    for path in paths:
        assert path.read_text() == (DEFAULT_TASKS.parent / path.name).read_text()
    fresh = generate(paths, SEED, DAYS, PER_CATEGORY)
    assert "".join(dump_task(t) + "\n" for t in fresh) == DEFAULT_TASKS.read_text()


@pytest.mark.parametrize("fields, problem", [
    ({"category": "ZZ"}, ":1: category"),
    ({"category": "MC", "template": "age", "answer": "A"}, "a MC task needs options"),
    ({"category": "IG", "template": "horoscope", "answer": "A"}, "template: unknown 'horoscope'"),
    ({"category": "PG", "checks": [{"device": "d"}], "params": {"resident": "ada"}},
     "params: a PG task needs day, arrival"),
])
def test_a_bad_task_file_gives_one_line(tmp_path, fields, problem):
    path = tmp_path / "tasks.jsonl"
    path.write_text(json.dumps({"id": "x", "household": "h", "at": "t", "question": "q", **fields}) + "\n")
    with pytest.raises(UserFileError) as err:
        load_tasks(path)
    assert str(err.value).startswith(f"{path}:1: ") and problem in str(err.value) and "\n" not in str(err.value)


# ---- the command line, as a user runs it -------------------------------------------------------
def twin(*args):
    return subprocess.run([sys.executable, "-m", "matter_twin.cli", "bench", "personal", *args],
                          capture_output=True, text=True, timeout=300)


def test_cli_runs_an_agent_and_prints_the_figures(tmp_path):
    proc = twin("run", "--agent", "reference", "--category", "MC", "--category", "FR", "--limit", "1",
                "--out", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert "MC: n 1, accuracy 1.0" in proc.stdout and "FR: n 1, map1 1.0" in proc.stdout
    assert json.loads((tmp_path / "summary.json").read_text())["MC"] == {"n": 1, "accuracy": 1.0}


@pytest.mark.parametrize("args, message", [
    (("run", "--agent", "oracle"), "unknown agent 'oracle'"),
    (("run", "--agent", "null", "--category", "QT1"), "unknown category QT1"),
    (("run", "--agent", "null", "--judge", "rule"), "unknown judge 'rule'"),
    (("validate", "--tasks", "missing.jsonl"), "missing.jsonl: (file): cannot read"),
    (("run", "--agent", "null", "--tasks", "TASKS"), "gone.yaml: (file): cannot read"),
])
def test_cli_bad_input_gives_one_line(tmp_path, args, message):
    tasks = tmp_path / "tasks.jsonl"   # a task whose household file is not there
    tasks.write_text(DEFAULT_TASKS.read_text().splitlines()[0].replace("personal_household_1.yaml", "gone.yaml"))
    args = tuple(str(tasks) if a == "TASKS" else a for a in args)
    proc = twin(*args, *(("--out", str(tmp_path / "run")) if args[0] == "run" else ()))
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and message in lines[0], proc.stderr
