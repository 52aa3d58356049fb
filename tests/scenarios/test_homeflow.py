"""HomeFlow (issue #29): Blueprints on HomeMaker homes, the three filters and verification on the
twin, byte-identical generation, and the committed SmartHome-Bench-sized set."""
from __future__ import annotations

import json
import random
from collections import Counter

import pytest

from scenarios.agents.simple import NullAgent
from scenarios.homeflow import blueprint as B
from scenarios.homeflow.evaluate import problems, run, shape, shape_problems, validate
from scenarios.homeflow.generate import generate, generate_one, generate_procedural
from scenarios.homeflow.tasks import (
    PER_CATEGORY,
    SUBCATEGORIES,
    dump_task,
    dump_tasks,
    home_spec,
    load_tasks,
)
from scenarios.smh.reference import ReferenceAgent
from twin.schema import UserFileError


@pytest.fixture(scope="module")
def tasks():
    return load_tasks()


def test_profiles_keep_the_papers_consistency_constraints():
    for seed in range(300):
        p = B.make_profile(random.Random(seed))
        if p["age_band"] == "young adult":
            assert p["health"] not in ("arthritis", "poor vision", "hearing loss")
        if p["health"] == "poor vision":
            assert p["preferences"]["brightness"] >= 80
        if p["health"] == "hearing loss":
            assert p["preferences"]["volume"] >= 40
        if "night owl" in p["habits"]:
            assert p["preferences"]["color_temperature"] == 2700


def test_the_filters_name_what_they_drop():
    one = {"type": "device", "device_id": "a", "endpoint_id": 1, "cluster_id": "OnOff", "attribute_id": "OnOff",
           "op": "==", "value": True}
    made = {"query": "Turn on a.", "goal": [one, {**one, "value": False}], "targets": ["a"]}
    assert B.consistency_problem(made) == "two conditions on a/1/OnOff/OnOff"
    assert B.consistency_problem({**made, "goal": [one], "targets": ["b"]}) == \
        "a condition on a, which no intent targets"
    assert B.consistency_problem({**made, "query": " "}) == "empty request"
    assert B.consistency_problem({**made, "goal": [one]}) is None
    # Diversity: the same request (fillers aside) and goal on the same home is the same task.
    assert B.content_key({**made, "query": "Uh, turn on a."}, "hm:1:3:4:5") == B.content_key(made, "hm:1:3:4:5")
    assert B.content_key(made, "hm:1:3:4:5") != B.content_key(made, "hm:2:3:4:5")


def test_procedural_tasks_are_verified_and_byte_identical_across_runs(tmp_path):
    rejected: Counter[str] = Counter()
    first = generate_procedural(11, 4, rejected=rejected)
    again = generate_procedural(11, 4)
    assert [dump_task(t) for t in first] == [dump_task(t) for t in again]
    for task in first:
        assert task.profile and task.scene["text"] and set(task.perturbation) == set(B.PERTURBATION)
        assert run(task, ReferenceAgent())["success"] and not run(task, NullAgent())["success"]
    assert set(rejected) <= {"no fitting intent", *B.FILTERS}
    dump_tasks(first, tmp_path / "a.jsonl.gz")
    dump_tasks(again, tmp_path / "b.jsonl.gz")
    assert (tmp_path / "a.jsonl.gz").read_bytes() == (tmp_path / "b.jsonl.gz").read_bytes()
    assert [dump_task(t) for t in load_tasks(tmp_path / "a.jsonl.gz")] == [dump_task(t) for t in first]


def test_the_committed_set_has_the_benchmarks_shape(tasks):
    found = shape(tasks)
    assert found["tasks"] == sum(PER_CATEGORY.values()) == 1678
    assert found["categories"] == PER_CATEGORY and found["subcategories"] == 18
    assert found["devices"][0] < 10 < 100 < found["devices"][1]
    assert shape_problems(tasks) == []
    assert {t.perturbation["clarity"] for t in tasks} == set(B.PERTURBATION["clarity"])
    assert {t.perturbation["scope"] for t in tasks} == set(B.PERTURBATION["scope"])


def test_a_sample_regenerates_and_validates(tasks):
    # The first task of every subcategory (a small home) is redrawn to the same bytes, and passes.
    firsts = {}
    for t in tasks:
        firsts.setdefault(t.subcategory, t)
    assert len(firsts) == 18
    for sub in ("clear", "top_n", "slot_missing", "correction", "preference"):
        task = firsts[sub]
        assert dump_task(generate_one(20260701, sub, 1, task.tier, True, set(), Counter())) == dump_task(task)
    found, scores = validate(list(firsts.values()))
    assert found == []
    assert scores["act-all"].get("TC3", 0) == 0 and not any(scores["stuffer"].values())


def test_a_broken_task_is_named_not_raised(tasks, tmp_path):
    task = tasks[0].model_copy(update={"goal": [{**tasks[0].goal[0], "device_id": "no_such_device"}]})
    found = problems(task)
    assert len(found) == 1 and found[0].startswith(f"{task.id}: ") and "no_such_device" in found[0]
    bad = tmp_path / "bad.jsonl"
    bad.write_text(dump_task(tasks[0]) + "\n" + '{"id": "x"}\n', encoding="utf-8")
    with pytest.raises(UserFileError, match="bad.jsonl:2: "):
        load_tasks(bad)
    with pytest.raises(ValueError, match="not hm:<seed>:<rooms>:<devices>:<hour>"):
        home_spec("tier-3")


def test_cli_generates_the_same_bytes_as_the_library_and_refuses_bad_input(tmp_path):
    from typer.testing import CliRunner

    from matter_twin.cli import app
    runner = CliRunner()
    done = runner.invoke(app, ["bench", "homeflow", "generate", "--seed", "5", "-n", "2", "--out",
                               str(tmp_path / "a.jsonl")])
    assert done.exit_code == 0, done.output
    assert "wrote 2 verified tasks" in done.output and "candidates dropped:" in done.output
    assert (tmp_path / "a.jsonl").read_text() == "".join(dump_task(t) + "\n" for t in generate_procedural(5, 2))
    bad = runner.invoke(app, ["bench", "homeflow", "generate", "--llm", "gpt", "-n", "1", "--out",
                              str(tmp_path / "c.jsonl")])
    assert bad.exit_code != 0 and "--llm must be openai:MODEL" in bad.output
    assert not (tmp_path / "c.jsonl").exists()


@pytest.mark.e2e   # not a network test: the whole set takes minutes, so it runs in CI, not in -m unit
def test_the_whole_committed_set_regenerates_and_validates(tasks):
    # Generating keeps a task only when the reference solver passes it and the null agent fails
    # it (evaluate.verify, what validate checks per task): the same bytes mean every task passed.
    assert [dump_task(t) for t in generate()] == [dump_task(t) for t in tasks]
    found, scores = validate(tasks, each=False)
    assert found == [] and scores["act-all"].get("TC3", 0) == 0


def test_every_group_has_its_subcategories(tasks):
    seen = {c: {t.subcategory for t in tasks if t.category == c} for c in SUBCATEGORIES}
    assert seen == {c: set(subs) for c, subs in SUBCATEGORIES.items()}


# ---- the step-wise RL environment ------------------------------------------------------------
def _replay(task):
    """The reference solver's calls on a task, as text actions."""
    from bridge.twin_backend import TwinBackend
    from scenarios.homeflow.evaluate import begin
    attempt = begin(task)
    ReferenceAgent().run(attempt.query, TwinBackend(attempt.home), attempt.session, 60)
    return [f"{h['tool']} {json.dumps(h['args'] or {})}" for h in attempt.session.history]


def test_check_env_passes_for_every_registered_environment():
    import gymnasium
    from gymnasium.utils.env_checker import check_env

    from scenarios.gym_env import ENV_IDS
    from scenarios.suites import SUITES
    for suite, env_id in ENV_IDS.items():
        episodes = SUITES[suite].tasks()[:3]
        for stepwise in (False, True):
            env = gymnasium.make(env_id, episodes=episodes, max_steps=6, stepwise=stepwise)
            check_env(env.unwrapped, skip_render_check=True)


def test_stepwise_reward_has_its_three_terms_and_ends_on_success(tasks):
    from scenarios.gym_env import HomeEnv
    task = next(t for t in tasks if t.subcategory == "multi_device" and len(t.goal) >= 3)
    env = HomeEnv([task], suite="homeflow", stepwise=True, lambda_prog=2.0, lambda_succ=5.0, c_audit=0.5)
    env.reset(seed=0)
    m0 = env._m
    assert m0 < 1.0
    # A blocked call (an unknown tool, a value beyond the device's limits): -c_audit, no progress.
    obs, reward, terminated, truncated, info = env.step('no_such_tool {}')
    assert (reward, info["blocked"], info["m"], terminated) == (-0.5, True, m0, False)
    device = task.targets[0]
    obs, reward, terminated, truncated, info = env.step(
        "write_attribute " + json.dumps({"device.id": device, "endpoint.id": 1, "cluster.id": "OnOff",
                                         "attribute.id": "OnOff", "value": 7}))
    assert info["blocked"] and reward == -0.5
    # The reference's calls: progress 2.0 x (m_t - m_{t-1}) per step, +5 at success, which ends it.
    total, steps, last = 0.0, 0, None
    for action in _replay(task):
        obs, reward, terminated, truncated, info = env.step(action)
        steps += 1
        assert not info["blocked"]
        total += reward
        last = (reward, info["m"])
        if terminated:
            break
    assert terminated and info["verdict"]["success"] and last[1] == 1.0
    assert total == pytest.approx(2.0 * (1.0 - m0) + 5.0)
    assert not action.startswith("finish")   # it ended on success, before the agent said it was done


def test_reset_options_pick_category_tier_or_a_procedural_task(tasks):
    import gymnasium

    import scenarios.gym_env  # noqa: F401  (registers the environments)
    chosen = [t for t in tasks if t.subcategory == "clear"][:20] + [t for t in tasks if t.subcategory == "batch"][:20]
    env = gymnasium.make("MatterTwin/HomeFlow-v0", episodes=chosen, stepwise=True)
    _, info = env.reset(seed=1, options={"category": "TC2"})
    assert info["category"] == "TC2"
    _, info = env.reset(seed=2, options={"tier": "small", "category": "TC1"})
    assert info["episode_id"].startswith("tc1-")
    with pytest.raises(ValueError, match="no episode of category 'TC9'"):
        env.reset(options={"category": "TC9"})
    obs, info = env.reset(seed=3, options={"generate": "TC4"})
    assert info["category"] == "TC4" and obs["query"].startswith("Scene: ")


def test_the_simulated_user_in_the_loop_says_what_is_unmet_after_finish(tasks):
    from scenarios.gym_env import HomeEnv
    from scenarios.smh import language as L
    from twin.user import REMIND
    task = next(t for t in tasks if t.subcategory == "multi_device" and t.tier == "small")
    first, second = L.ops_of(task.goal)
    as_text = [f"{c['tool']} {json.dumps(c['args'])}" for c in L.calls(first)]
    env = HomeEnv([task], suite="homeflow", stepwise=True, user_turns=1)
    env.reset(seed=0)
    for action in as_text:
        env.step(action)
    obs, reward, terminated, truncated, info = env.step('finish {"answer": "Done."}')   # short of success
    names = {d: env.unwrapped._attempt.home.device_info(d)["name"] for d in task.targets}
    assert not terminated and info["user"] == f"{REMIND}\n\n" + L.join([L.say(second, names)])
    assert json.loads(f'"{obs["query"]}"') == info["user"] and L.say(first, names) not in info["user"]
    for action in [f"{c['tool']} {json.dumps(c['args'])}" for c in L.calls(second)]:
        obs, reward, terminated, truncated, info = env.step(action)
    assert terminated and info["verdict"]["success"]
    # The turns are used up: a finish short of success ends the episode.
    env.reset(seed=0)
    for action in ['finish {"answer": "Done."}', 'finish {"answer": "Done."}']:
        *_, terminated, truncated, info = env.step(action)
    assert terminated and not info["verdict"]["success"]
    # None asked for: finish ends the episode as before.
    plain = HomeEnv([task], suite="homeflow", stepwise=True)
    plain.reset(seed=0)
    *_, terminated, _, info = plain.step('finish {"answer": "Done."}')
    assert terminated and "user" not in info and not info["verdict"]["success"]
    # SMH-Bench's environment has the same user (its tasks share the request language).
    from scenarios.smh.tasks import load_tasks as smh_tasks
    smh = next(t for t in smh_tasks() if t.subcategory == "multi_device")
    env = HomeEnv([smh], suite="smh", user_turns=1)
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step('finish {"answer": "Done."}')
    names = {d: env.unwrapped._attempt.home.device_info(d)["name"] for d in smh.targets}
    assert not terminated and info["user"] == f"{REMIND}\n\n" + L.join([L.say(op, names) for op in L.ops_of(smh.goal)])


def test_make_vec_runs_the_homeflow_environment(tasks):
    import gymnasium

    import scenarios.gym_env  # noqa: F401
    chosen = [t for t in tasks if t.subcategory == "clear"][:4]
    envs = gymnasium.make_vec("MatterTwin/HomeFlow-v0", num_envs=2, vectorization_mode="sync",
                              episodes=chosen, stepwise=True, max_steps=3)
    obs, infos = envs.reset(seed=0)
    assert len(obs["query"]) == 2
    from scenarios.gym_env import HomeEnv
    tools = [HomeEnv.tool_index("get_rooms"), HomeEnv.tool_index("write_attribute")]
    obs, rewards, terminated, truncated, infos = envs.step({"tool": tools, "args": ["{}", "{}"]})   # 2nd: bad args
    assert rewards[0] == 0.0 and rewards[1] == pytest.approx(-0.1)
    envs.close()


def test_ray_vector_env_refuses_an_unknown_id_and_has_an_rllib_style_creator(tasks):
    from scenarios.gym_ray import RayVectorEnv, rllib_env_creator
    with pytest.raises(ValueError, match="unknown environment 'MatterTwin/Nope-v0'"):
        RayVectorEnv("MatterTwin/Nope-v0", 2)   # refused before Ray starts
    with pytest.raises(ValueError, match="num_envs must be at least 1"):
        RayVectorEnv("MatterTwin/HomeFlow-v0", 0)
    env = rllib_env_creator("MatterTwin/HomeFlow-v0")({"episodes": tasks[:1], "stepwise": True})
    obs, info = env.reset(seed=0)
    assert info["episode_id"] == tasks[0].id and env.unwrapped.stepwise


def _plain(x):
    import numpy as np
    if isinstance(x, dict):
        return {k: _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    if isinstance(x, np.ndarray):
        return _plain(x.tolist())
    return x.item() if isinstance(x, np.generic) else x


# ---- MCTS-Flow --------------------------------------------------------------------------------
def test_mcts_flow_yields_verified_dialogues_and_pairs_that_replay(tasks):
    from scenarios.homeflow.flow import K_AGENT, Search, flow, records, replay
    task = next(t for t in tasks if t.subcategory == "multi_device" and t.tier == "small")
    search = Search(task, seed=0).run(24)
    first = search.root.children[0]
    assert [c.choice for c in first.children] == list(K_AGENT)
    assert first.children[0].success and not first.children[2].success   # the slip leaves it unmet
    assert search.root.n == 24 or not search.root.open(2)
    sft, prefs = records(task, seed=0, rollouts=24)
    assert sft and prefs
    for r in sft:
        m = r["messages"]
        assert m[0]["role"] == "system" and m[1]["role"] == "user" and r["tools"] and r["split"] in ("train", "heldout")
        assert any(msg.get("tool_calls") for msg in m) and replay(task, m)
    assert any(sum(msg["role"] == "user" for msg in r["messages"]) > 1 for r in sft)   # a second user turn
    for p in prefs:
        assert p["chosen"] != p["rejected"] and replay(task, p["prompt"] + p["chosen"])
    assert flow([task], 0, 24) == (sft, prefs)   # the same records again
    tampered = [dict(msg) for msg in sft[0]["messages"]]
    last_tool = max(i for i, msg in enumerate(tampered) if msg["role"] == "tool")
    tampered[last_tool]["content"] = '{"ok": false}'
    assert not replay(task, tampered)


def test_a_later_user_turn_names_only_what_is_unmet(tasks):
    # A hand-made trajectory: the first of two goal operations done, a light the request was not
    # about switched on; the user's next turn names the second operation and the switch-back only.
    from bridge.tools import call_tool
    from bridge.twin_backend import TwinBackend
    from scenarios.homeflow.flow import Search, unmet
    from scenarios.smh import language as L
    from scenarios.smh.evaluate import agent_session, verify
    from twin.user import REMIND, ScriptedUser
    task = next(t for t in tasks if t.subcategory == "multi_device" and t.tier == "small")
    search = Search(task)
    home = search.start.fork()
    ops = L.ops_of(task.goal)
    assert ops is not None and len(ops) == 2
    names = {d: home.device_info(d)["name"] for d in home.devices.objects}
    bystander = next(d for d in home.devices.objects if d not in task.targets
                     and home.device_info(d)["type"] in L.OP_TYPES["on"])
    was_on = bool(home.devices[bystander].read("OnOff", "OnOff"))
    backend, session = TwinBackend(home), agent_session(task)
    for call in [*L.calls(ops[0]), *L.calls({"op": "off" if was_on else "on", "device": bystander})]:
        assert call_tool(backend, call["tool"], call["args"], session)["ok"]
    todo = unmet(task, home, search.goal)
    assert todo == [L.say(ops[1], names), L.say({"op": "on" if was_on else "off", "device": bystander}, names)]
    text = ScriptedUser(search.root.user.intent).remind(todo)
    assert text == f"{REMIND}\n\n{todo[0][0].upper()}{todo[0][1:]}; {todo[1]}."
    assert L.say(ops[0], names) not in text and task.query not in text
    # What the user said is enough: the reference solver, told only that, completes the task.
    ReferenceAgent().run(text, backend, session, 30)
    assert verify(task, search.start, home, search.goal, session.answer, session.history, None)["success"]
    assert unmet(task, home, search.goal) == []


def test_mcts_flow_later_turns_restate_nothing_already_done(tasks):
    from scenarios.homeflow.flow import Search
    from twin.user import REMIND
    task = next(t for t in tasks if t.subcategory == "multi_device" and t.tier == "small")
    search = Search(task, seed=0).run(24)
    first = search.root.children[0].messages[-1]["content"].split("\n\n")[-1]
    later = [n for n in _nodes(search.root) if n.role == "user" and n.turn > 0]
    assert later
    for node in later:
        said = node.messages[-1]["content"]
        assert said.startswith(REMIND) and said.split("\n\n")[-1] != first
        assert said.count(";") == 0   # one operation left after the stepwise or slipped turn


def _nodes(node):
    yield node
    for child in node.children:
        yield from _nodes(child)


def _env_rollouts_on_ray_and_locally(tasks):
    """The HomeFlow environment's rollouts: gymnasium's sync vector env, then RayVectorEnv (Ray
    already started), each sub-environment following the reference's calls for its episode."""
    import gymnasium
    import numpy as np

    from scenarios.gym_env import HomeEnv, parse_action
    from scenarios.gym_ray import RayVectorEnv
    chosen = [next(t for t in tasks if t.subcategory == s and t.tier == "small") for s in ("clear", "multi_device")]
    names = HomeEnv(chosen, suite="homeflow").tool_names
    plans = {t.id: [(names.index(name), json.dumps(args)) for name, args in map(parse_action, _replay(t))]
             for t in chosen}
    kwargs = {"episodes": chosen, "stepwise": True, "max_steps": 8}

    def rollout(envs):
        obs, infos = envs.reset(seed=3)
        out, pos, ended = [_plain((obs, infos))], [0, 0], [False, False]
        for _ in range(12):
            acts = []
            for i, episode in enumerate(infos["episode_id"]):
                plan = plans[episode]
                acts.append(plan[0] if ended[i] else plan[min(pos[i], len(plan) - 1)])
                pos[i] = 0 if ended[i] else pos[i] + 1
            step = envs.step({"tool": np.array([a[0] for a in acts]), "args": tuple(a[1] for a in acts)})
            obs, rewards, terminated, truncated, infos = step
            ended = list(terminated | truncated)
            out.append(_plain(step))
        envs.close()
        return out
    local = rollout(gymnasium.make_vec("MatterTwin/HomeFlow-v0", num_envs=2, vectorization_mode="sync", **kwargs))
    assert any(step[1][i] >= 1.0 and step[2][i] for step in local[1:] for i in range(2))   # episodes succeed
    return rollout(RayVectorEnv("MatterTwin/HomeFlow-v0", 2, "local", 1, **kwargs)), local


@pytest.mark.e2e   # a local Ray (loopback only): starting it takes a while
def test_on_ray_mcts_flow_and_the_environment_match_local_runs(tasks):
    # MCTS-Flow: byte-identical for 1 and 2 workers; the gym environment as RayVectorEnv (on the
    # one-worker Ray, not started twice): the same rollouts as gymnasium's sync vector env.
    import ray

    from scenarios.homeflow.flow import flow
    chosen = [t for t in tasks if t.tier == "small"][::150][:6]
    local = flow(chosen, 0, 8)
    runs = []
    for workers in (1, 2):
        try:
            runs.append(flow(chosen, 0, 8, workers=workers, ray_address="local"))
            if workers == 1:
                on_ray, locally = _env_rollouts_on_ray_and_locally(tasks)
                assert on_ray == locally
        finally:
            ray.shutdown()
    assert runs[0] == runs[1] == local and local[0]


def test_an_llm_rewrites_only_the_scene(tmp_path):
    from scenarios.homeflow.generate import generate_procedural as draw_tasks
    from tests.openai_stub import OpenAIStub
    plain = draw_tasks(5, 1)
    with OpenAIStub([lambda request: "An evening at home.\n\nQuiet."] * 200) as stub:
        told = draw_tasks(5, 1, narrate=B.llm_narrator("stub-model", stub.base_url, "test"))
        assert "Scene:" in stub.requests[0]["messages"][0]["content"]
    assert told[0].scene["text"] == "An evening at home. Quiet."
    assert told[0].model_copy(update={"scene": plain[0].scene}) == plain[0]   # goal, query, home: the same


def test_cli_flow_writes_replayed_dialogues_split_by_content(tmp_path):
    from typer.testing import CliRunner

    from matter_twin.cli import app
    done = CliRunner().invoke(app, ["bench", "homeflow", "flow", "--seed", "5", "-n", "2", "--rollouts", "10",
                                    "--out", str(tmp_path)])
    assert done.exit_code == 0, done.output
    assert "all replayed" in done.output
    rows = [json.loads(line) for name in ("sft-train.jsonl", "sft-heldout.jsonl")
            for line in (tmp_path / name).read_text().splitlines()]
    assert rows and all(r["messages"][0]["role"] == "system" and r["tools"] for r in rows)
    assert (tmp_path / "preferences-train.jsonl").exists() and (tmp_path / "preferences-heldout.jsonl").exists()
    bad = CliRunner().invoke(app, ["bench", "homeflow", "flow", "--user", "gpt", "--out", str(tmp_path / "x")])
    assert bad.exit_code != 0 and "--user must be scripted or openai:MODEL" in bad.output
    assert not (tmp_path / "x").exists()


def test_mcts_flow_takes_any_agent_such_as_an_llms_samples(tasks):
    from scenarios.homeflow.flow import flow, replay
    from scenarios.smh.agents import make_agent
    from tests.openai_stub import OpenAIStub
    task = next(t for t in tasks if t.subcategory == "clear" and len(t.goal) == 1
                and t.goal[0]["attribute_id"] == "OnOff")
    want = task.goal[0]

    def reply(request):   # act once, then finish after seeing the observation
        if request["messages"][-1]["content"].startswith("Observation"):
            return json.dumps({"thought": "done", "action": "finish", "action_input": '{"answer": "Done."}'})
        args = {"device.id": want["device_id"], "endpoint.id": want["endpoint_id"], "cluster.id": "OnOff",
                "command.id": "On" if want["value"] else "Off", "args": {}}
        return json.dumps({"thought": "do it", "action": "execute_command", "action_input": json.dumps(args)})
    with OpenAIStub([reply] * 100) as stub:
        agents = [(f"stub#{i}", make_agent("openai:stub", stub.base_url, "test")) for i in range(2)]
        sft, _ = flow([task], 0, 6, agents=agents)
    assert sft and all(replay(task, r["messages"]) for r in sft)
    calls = [c["function"]["name"] for m in sft[0]["messages"] for c in m.get("tool_calls") or []]
    assert calls == ["execute_command", "finish"]


def test_mcts_flow_takes_an_llm_user_through_the_openai_client(tasks):
    from scenarios.homeflow.flow import LLMUserSpec, flow, replay
    from tests.openai_stub import OpenAIStub
    from twin.user import REMIND
    task = next(t for t in tasks if t.subcategory == "multi_device" and t.tier == "small")

    def user(request):   # the model playing the user says what is still to do, in its words
        cue = request["messages"][-1]["content"]
        todo = cue.partition("still not done: ")[2].partition(". Tell it")[0]
        return f"Please {todo}." if todo else "Yes, please go ahead."
    with OpenAIStub([user] * 200) as stub:
        spec = LLMUserSpec("user-model", stub.base_url, "test", seed=4)
        sft, prefs = flow([task], 0, 24, user=spec)
        asked = len(stub.requests)
        assert sft and all(replay(task, r["messages"], spec) for r in sft)
    assert asked and all(r["model"] == "user-model" and r["seed"] == 4 for r in stub.requests)
    assert task.query in stub.requests[0]["messages"][0]["content"]   # it plays the task's intent
    later = [m["content"] for r in sft for m in r["messages"] if m["role"] == "user"][1:]
    later = [t for t in later if not t.startswith("Scene:")]
    assert later and all(t.startswith("Please ") and REMIND not in t for t in later)
    assert (sft, prefs) != flow([task], 0, 24)   # the scripted user's words differ


def test_reset_can_switch_to_another_suite_whose_tools_fit(tasks):
    from scenarios.gym_env import HomeEnv
    env = HomeEnv(tasks[:2], suite="homeflow", stepwise=True)
    _, info = env.reset(seed=0, options={"suite": "smh", "category": "TC7"})
    assert info["category"] == "TC7" and info["episode_id"].startswith("tc7-")
    _, info = env.reset(seed=1, options={"suite": "homeflow"})   # back to the environment's own episodes
    assert info["episode_id"] in {t.id for t in tasks[:2]}
    from scenarios.simuhome.schema import DEFAULT_EPISODES, load_episodes
    plain = HomeEnv(load_episodes(DEFAULT_EPISODES)[:1])
    with pytest.raises(ValueError, match="the smh suite's tools .* are not in this environment's action space"):
        plain.reset(options={"suite": "smh"})


def test_cli_run_scores_an_agent_per_group_and_size(tmp_path):
    from typer.testing import CliRunner

    from matter_twin.cli import app
    runner = CliRunner()
    done = runner.invoke(app, ["bench", "homeflow", "run", "--agent", "reference", "--limit", "1",
                               "--out", str(tmp_path / "r")])
    assert done.exit_code == 0, done.output
    assert "5/5 succeeded" in done.output and (tmp_path / "r" / "summary.json").exists()
    null = runner.invoke(app, ["bench", "homeflow", "run", "--agent", "null", "--limit", "1", "--category", "TC2",
                               "--out", str(tmp_path / "n")])
    assert null.exit_code == 0 and "0/1 succeeded" in null.output
    bad = runner.invoke(app, ["bench", "homeflow", "run", "--agent", "oracle", "--out", str(tmp_path / "x")])
    assert bad.exit_code != 0 and "unknown agent 'oracle'" in bad.output
