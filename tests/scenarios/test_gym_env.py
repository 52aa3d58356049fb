"""The gymnasium environment (scenarios/gym_env.py): the checker, registered ids, random and
reference rollouts, the text action form, vectorised use, generated episodes."""
from __future__ import annotations

import json

import gymnasium
import pytest
from gymnasium.utils.env_checker import check_env

from scenarios.gym_env import ENV_ID, HomeEnv, parse_action, reference_actions
from scenarios.simuhome.schema import CATEGORIES, DEFAULT_EPISODES, load_episodes

EPISODES = load_episodes(DEFAULT_EPISODES)
#: The first episode of every category.
FIRSTS = [next(e for e in EPISODES if e.category == c) for c in CATEGORIES]


def test_check_env_passes_with_and_without_the_home_view():
    check_env(HomeEnv(FIRSTS[:3]), skip_render_check=True)
    check_env(HomeEnv(FIRSTS[:3], observe_home=True, advance_seconds=60), skip_render_check=True)


def test_the_registered_id_makes_the_environment():
    env = gymnasium.make(ENV_ID, episodes=FIRSTS, max_steps=5)
    obs, info = env.reset(seed=3)
    assert info["category"] in CATEGORIES and obs["query"]
    assert json.loads(obs["result"]) == {"ok": True, "episode": info["episode_id"]}


def test_a_random_policy_is_truncated_at_the_step_budget_and_scored():
    def rollout(seed: int) -> list:
        env = HomeEnv(FIRSTS, max_steps=8)
        env.action_space.seed(seed)
        obs, info = env.reset(seed=seed)
        seen = [obs]
        while True:
            obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
            seen.append((obs, reward, terminated, truncated))
            if terminated or truncated:
                return seen + [info]

    run = rollout(5)
    *_, (obs, reward, terminated, truncated), info = run
    assert truncated and not terminated and info["steps"] == 8
    assert reward == 0.0 and info["verdict"]["success"] is False      # random calls solve nothing
    assert all(json.loads(o[0]["result"])["ok"] is False for o in run[1:-1])   # random text: refused
    assert rollout(5) == run                                           # same seeds, same rollout


@pytest.mark.parametrize("episode", FIRSTS, ids=[e.id for e in FIRSTS])
def test_the_reference_policy_earns_the_full_reward(episode):
    env = HomeEnv([episode])
    env.reset(seed=0)
    for action in reference_actions(episode):
        obs, reward, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            break
    assert terminated and reward == 1.0, info["verdict"]["failures"]


def test_a_reset_starts_from_the_same_home_after_a_changed_one():
    episode = next(e for e in EPISODES if e.category == "QT3-F")
    env = HomeEnv([episode], observe_home=True)
    first, _ = env.reset(seed=0)
    for action in reference_actions(episode)[:-1]:
        env.step(action)
    assert env.step('get_rooms {}')[0]["home"] != first["home"]   # the reference acted
    again, _ = env.reset(seed=0)
    assert again == first


def test_text_actions_and_unreadable_ones():
    assert parse_action('get_rooms {}') == ("get_rooms", {})
    assert parse_action('{"tool": "finish", "args": {"answer": "x"}}') == ("finish", {"answer": "x"})
    assert parse_action({"tool": HomeEnv.tool_index("get_rooms"), "args": ""}) == ("get_rooms", {})
    env = HomeEnv(FIRSTS[:1])
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step("get_rooms {not json")
    result = json.loads(obs["result"])
    assert result["ok"] is False and result["error"]["code"] == "INVALID_ACTION"
    assert not terminated and info["steps"] == 1
    with pytest.raises(ValueError, match="unknown episode"):
        env.reset(options={"episode_id": "nope"})


def test_vectorised_environments_step_in_lockstep():
    envs = gymnasium.make_vec(ENV_ID, num_envs=2, vectorization_mode="sync", episodes=FIRSTS, max_steps=3)
    obs, info = envs.reset(seed=[1, 2])
    assert len(obs["query"]) == 2
    rooms = HomeEnv.tool_index("get_rooms")
    obs, rewards, terminated, truncated, info = envs.step({"tool": [rooms, rooms], "args": ["{}", "{}"]})
    assert all(json.loads(r)["ok"] for r in obs["result"]) and list(rewards) == [0.0, 0.0]
    envs.close()


def test_reset_can_generate_a_fresh_verifiable_episode():
    env = HomeEnv(FIRSTS[:1])
    _, info = env.reset(seed=11, options={"generate": "QT3-F"})
    episode = env.episode
    assert info["category"] == "QT3-F" and episode.id.startswith("qt3-f-seed-")
    for action in reference_actions(episode):
        *_, reward, terminated, truncated, info = env.step(action)
    assert terminated and reward == 1.0
