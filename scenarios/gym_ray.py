"""The gymnasium environments on Ray: a vector environment whose sub-environments are Ray
actors, each stepping its own environment (scenarios/gym_env.py) in its own process, on this
machine (`"local"`) or a cluster.

    from scenarios.gym_ray import RayVectorEnv
    envs = RayVectorEnv("MatterTwin/HomeFlow-v0", num_envs=4, ray_address="local", workers=2,
                        stepwise=True)
    obs, infos = envs.reset(seed=0)            # sub-environment i is seeded seed + i
    obs, rewards, terminated, truncated, infos = envs.step({"tool": [...], "args": [...]})
    envs.close()                               # ends the actors

It behaves as `gymnasium.make_vec(env_id, num_envs, vectorization_mode="sync", **kwargs)` does
(the same spaces, batching, infos and next-step autoreset: a sub-environment that ended is reset
by its next step, with reward 0), so the same seeds and actions give the same rollouts; only the
sub-environments' steps run in parallel. `rllib_env_creator` is the same environments as an
RLlib-style creator (`register_env(name, rllib_env_creator(env_id))`; RLlib is not a dependency).
"""
from __future__ import annotations

from collections.abc import Callable
from copy import deepcopy
from typing import Any

import gymnasium
import numpy as np
from gymnasium.vector import VectorEnv
from gymnasium.vector.utils import batch_space, concatenate, create_empty_array, iterate

import scenarios.gym_env  # noqa: F401  (registers the MatterTwin ids)
from scenarios.runner import start_ray


class _Worker:
    """One sub-environment inside a Ray actor, with next-step autoreset."""

    def __init__(self, env_id: str, kwargs: dict[str, Any]):
        self.env = gymnasium.make(env_id, **kwargs)
        self.ended = False

    def spaces(self) -> tuple[gymnasium.Space[Any], gymnasium.Space[Any]]:
        return self.env.observation_space, self.env.action_space

    def reset(self, seed: int | None, options: dict[str, Any] | None) -> tuple[Any, dict[str, Any]]:
        self.ended = False
        return self.env.reset(seed=seed, options=options)

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        if self.ended:
            obs, info = self.env.reset()
            self.ended = False
            return obs, 0.0, False, False, info
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.ended = bool(terminated or truncated)
        return obs, float(reward), bool(terminated), bool(truncated), info


class RayVectorEnv(VectorEnv):  # type: ignore[type-arg]
    """`num_envs` copies of a registered environment, each in a Ray actor (see the module docstring)."""

    def __init__(self, env_id: str, num_envs: int, ray_address: str = "local", workers: int = 1, **kwargs: Any):
        if num_envs < 1:
            raise ValueError(f"num_envs must be at least 1, got {num_envs}")
        if env_id not in gymnasium.registry:
            raise ValueError(f"unknown environment {env_id!r}")
        self._ray = start_ray(ray_address, workers)
        # The actors share the workers' CPUs: each asks for its share, so all of them are placed.
        actor = self._ray.remote(num_cpus=min(1.0, workers / num_envs))(_Worker)
        self._actors = [actor.remote(env_id, kwargs) for _ in range(num_envs)]
        self.num_envs = num_envs
        self.single_observation_space, self.single_action_space = self._ray.get(self._actors[0].spaces.remote())
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self.metadata = {"autoreset_mode": gymnasium.vector.AutoresetMode.NEXT_STEP}
        self._observations = create_empty_array(self.single_observation_space, num_envs)

    def reset(self, *, seed: int | list[int | None] | None = None,
              options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        seeds = ([None] * self.num_envs if seed is None else [seed + i for i in range(self.num_envs)]
                 if isinstance(seed, int) else list(seed))
        if len(seeds) != self.num_envs:
            raise ValueError(f"{len(seeds)} seeds for {self.num_envs} environments")
        if options and "reset_mask" in options:
            raise ValueError("RayVectorEnv resets every sub-environment (no reset_mask)")
        done = self._ray.get([a.reset.remote(s, options) for a, s in zip(self._actors, seeds)])
        return self._gather([obs for obs, _ in done], [info for _, info in done])

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        each = list(iterate(self.action_space, actions))
        done = self._ray.get([a.step.remote(x) for a, x in zip(self._actors, each)])
        obs, infos = self._gather([d[0] for d in done], [d[4] for d in done])
        rewards = np.array([d[1] for d in done], dtype=np.float64)
        terminated = np.array([d[2] for d in done], dtype=np.bool_)
        truncated = np.array([d[3] for d in done], dtype=np.bool_)
        return obs, rewards, terminated, truncated, infos

    def _gather(self, obs: list[Any], infos: list[dict[str, Any]]) -> tuple[Any, dict[str, Any]]:
        self._observations = concatenate(self.single_observation_space, obs, self._observations)
        batched: dict[str, Any] = {}
        for i, info in enumerate(infos):
            batched = self._add_info(batched, info, i)
        return deepcopy(self._observations), batched

    def close_extras(self, **kwargs: Any) -> None:
        for a in self._actors:
            self._ray.kill(a)
        self._actors = []


def rllib_env_creator(env_id: str) -> Callable[[dict[str, Any]], gymnasium.Env[Any, Any]]:
    """An RLlib-style creator (env config -> one environment): RLlib's own Ray workers then each
    hold their environments, `register_env("homeflow", rllib_env_creator("MatterTwin/HomeFlow-v0"))`."""
    if env_id not in gymnasium.registry:
        raise ValueError(f"unknown environment {env_id!r}")
    return lambda config: gymnasium.make(env_id, **dict(config or {}))
