"""Gymnasium environments over the twin: one tool call per step, the evaluator's verdict as reward.

    import gymnasium, scenarios.gym_env            # registers the ids below
    env = gymnasium.make("MatterTwin/SimuHome-v0")  # the 600 committed episodes
    obs, info = env.reset(seed=0)                   # or options={"episode_id": "qt3-f-001"}
    obs, reward, terminated, truncated, info = env.step(
        {"tool": env.unwrapped.tool_index("get_rooms"), "args": "{}"})
    obs, reward, terminated, truncated, info = env.step('finish {"answer": "done"}')   # text form

Spaces (all text is printable ASCII; JSON with non-ASCII escaped):
- action: Dict(tool=Discrete(#tools, in `TOOL_NAMES` order), args=Text: a JSON object). A policy
  that writes text may instead pass a string, `TOOL {json args}` or `{"tool": ..., "args": {...}}`.
- observation: Dict(query=Text: the user's request, result=Text: the last tool result as JSON,
  and with `observe_home=True` home=Text: rooms' values and each device's main state as JSON).

Reward: 0 on every step but the last; when the agent calls `finish` (terminated) or runs out of
`max_steps` (truncated), the episode is scored exactly as `twin bench run` scores it
(`scenarios.simuhome.evaluate.score`: simulator goals, or the rule judge) and the reward is 1.0 for a
success, else 0.0; `info["verdict"]` holds the whole record.

Resets fork the episode's starting home (built once per episode), so they are cheap.
`advance_seconds` moves virtual time after each call (default 0: time stands still while the
agent works, as in the benchmark).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import gymnasium
from gymnasium import spaces

from bridge.tools import TOOL_NAMES, Session, call_tool
from bridge.twin_backend import TwinBackend
from scenarios.simuhome.evaluate import Judge, agent_session, build_home, score
from scenarios.simuhome.generate import generate_category
from scenarios.simuhome.judges import RuleJudge
from scenarios.simuhome.schema import CATEGORIES, DEFAULT_EPISODES, Episode, load_episodes
from twin.home import Home

ENV_ID = "MatterTwin/SimuHome-v0"
#: Printable ASCII: every observation is JSON dumped with ensure_ascii.
CHARSET = "".join(chr(c) for c in range(32, 127))
MAX_ARGS = 4096
MAX_OBSERVATION = 1 << 20


def _text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=True, sort_keys=True)


def parse_action(action: Any) -> tuple[str, Any]:
    """(tool name, args) from a structured action or its text form; ValueError when unreadable."""
    if isinstance(action, str):
        text = action.strip()
        if text.startswith("{"):
            data = json.loads(text)
            if not isinstance(data, dict) or "tool" not in data:
                raise ValueError('a JSON action is {"tool": NAME, "args": {...}}')
            return str(data["tool"]), data.get("args", {})
        name, _, rest = text.partition(" ")
        return name, json.loads(rest) if rest.strip() else {}
    tool = int(action["tool"])
    if not 0 <= tool < len(TOOL_NAMES):
        raise ValueError(f"tool index {tool} is out of range 0..{len(TOOL_NAMES) - 1}")
    args = action["args"]
    return TOOL_NAMES[tool], json.loads(args) if isinstance(args, str) and args.strip() else args or {}


def home_view(home: Home) -> dict[str, Any]:
    """What a structured observation shows: the time, every room's values, every device's room,
    type and main state (OnOff where it has one)."""
    backend = TwinBackend(home)
    devices = {}
    for device_id in sorted(home.devices):
        device = home.devices[device_id]
        entry: dict[str, Any] = {"room": home.room_of(device_id), "type": device.type.key}
        try:
            entry["on"] = bool(device.read("OnOff", "OnOff"))
        except Exception:  # no OnOff cluster: no on/off state to show
            pass
        devices[device_id] = entry
    return {"time": home.clock.format(),
            "rooms": {r: backend.room_states(r) for r in sorted(home.rooms)},
            "devices": devices}


class HomeEnv(gymnasium.Env):
    """One benchmark episode per reset, one tool call per step (see the module docstring)."""

    metadata = {"render_modes": ["ansi"]}

    def __init__(self, episodes: list[Episode] | str | Path | None = None, max_steps: int = 30,
                 observe_home: bool = False, advance_seconds: float = 0.0, judge: Judge | None = None,
                 render_mode: str | None = None):
        if episodes is None or isinstance(episodes, (str, Path)):
            episodes = load_episodes(episodes or DEFAULT_EPISODES)
        if not episodes:
            raise ValueError("HomeEnv needs at least one episode")
        self.episodes = list(episodes)
        self._by_id = {e.id: e for e in self.episodes}
        self.max_steps = max_steps
        self.observe_home = observe_home
        self.advance_seconds = advance_seconds
        self.judge = judge or RuleJudge()
        self.render_mode = render_mode
        self.action_space = spaces.Dict({"tool": spaces.Discrete(len(TOOL_NAMES)),
                                         "args": spaces.Text(MAX_ARGS, min_length=0, charset=CHARSET)})
        observed = {"query": spaces.Text(MAX_OBSERVATION, min_length=0, charset=CHARSET),
                    "result": spaces.Text(MAX_OBSERVATION, min_length=0, charset=CHARSET)}
        if observe_home:
            observed["home"] = spaces.Text(MAX_OBSERVATION, min_length=0, charset=CHARSET)
        self.observation_space = spaces.Dict(observed)
        self._starts: dict[str, Home] = {}
        self.episode: Episode | None = None
        self._start: Home | None = None
        self._home: Home | None = None
        self._session = Session()
        self._last: dict[str, Any] = {}

    @staticmethod
    def tool_index(name: str) -> int:
        return TOOL_NAMES.index(name)

    # ---- gymnasium API ------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        options = options or {}
        if "episode_id" in options:
            if options["episode_id"] not in self._by_id:
                raise ValueError(f"unknown episode {options['episode_id']!r}")
            self.episode = self._by_id[options["episode_id"]]
        elif "generate" in options:   # a fresh verifiable episode of that category, from the seed
            category = options["generate"]
            if category not in CATEGORIES:
                raise ValueError(f"unknown category {category!r}; accepted: {', '.join(CATEGORIES)}")
            seed_drawn = int(self.np_random.integers(2**31))
            generated = generate_category(category, seed_drawn, 1)[0]
            self.episode = generated.model_copy(update={"id": f"{category.lower()}-seed-{seed_drawn}"})
        else:
            self.episode = self.episodes[int(self.np_random.integers(len(self.episodes)))]
        start = self._starts.get(self.episode.id)
        if start is None or "generate" in options:
            start = build_home(self.episode)
            if "generate" not in options:
                self._starts[self.episode.id] = start
        self._start, self._home = start, start.fork()
        self._session = agent_session()
        self._last = {"ok": True, "episode": self.episode.id}
        return self._observation(), self._info()

    def step(self, action: Any):
        if self._home is None or self.episode is None:
            raise RuntimeError("call reset() before step()")
        try:
            name, args = parse_action(action)
        except (ValueError, TypeError, KeyError) as exc:
            # Like any tool error: data for the policy, recorded as a failed call.
            name, args = "<unreadable>", action if isinstance(action, str) else None
            self._last = {"ok": False, "error": {"code": "INVALID_ACTION", "message": f"unreadable action: {exc}"}}
            self._session.history.append({"tool": name, "args": args, "result": self._last})
        else:
            self._last = call_tool(TwinBackend(self._home), name, args, self._session)
        if self.advance_seconds:
            self._home.advance(self.advance_seconds)
        terminated = self._session.finished
        truncated = not terminated and len(self._session.history) >= self.max_steps
        reward, info = 0.0, self._info()
        if terminated or truncated:
            verdict = score(self.episode, self._start, self._home.fork(), self._session, self.judge,
                            self._session.answer)
            reward, info["verdict"] = float(verdict["success"]), verdict
        return self._observation(), reward, terminated, truncated, info

    def render(self) -> str | None:
        if self.render_mode != "ansi" or self.episode is None:
            return None
        return f"{self.episode.id}: {self.episode.query}\nlast result: {_text(self._last)}"

    # ---- helpers ----------------------------------------------------------------------------
    def _observation(self) -> dict[str, str]:
        assert self.episode is not None and self._home is not None
        obs = {"query": _text(self.episode.query)[1:-1], "result": _text(self._last)}
        if self.observe_home:
            obs["home"] = _text(home_view(self._home))
        return obs

    def _info(self) -> dict[str, Any]:
        assert self.episode is not None
        return {"episode_id": self.episode.id, "category": self.episode.category,
                "steps": len(self._session.history)}


def reference_actions(episode: Episode) -> list[str]:
    """The reference solver's calls on `episode`, as text actions: a policy that earns the full
    reward wherever the solver does (it works only through the tools, never sees the goal)."""
    from scenarios.simuhome.reference import ReferenceAgent
    home = build_home(episode).fork()
    session = agent_session()
    ReferenceAgent().run(episode.query, TwinBackend(home), session, 100)
    return [f"{h['tool']} {json.dumps(h['args'] or {})}" for h in session.history]


gymnasium.register(id=ENV_ID, entry_point="scenarios.gym_env:HomeEnv")
