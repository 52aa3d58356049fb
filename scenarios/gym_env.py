"""Gymnasium environments over the twin, one per benchmark suite: one tool call per step, the
suite's verdict as reward. Every suite with per-task episodes (`Suite.attempt`, scenarios/suite.py)
is registered as `MatterTwin/<title>-v0`: MatterTwin/SimuHome-v0, MatterTwin/SMH-Bench-v0,
MatterTwin/PersonalHomeBench-v0, MatterTwin/HomeFlow-v0.

    import gymnasium, scenarios.gym_env            # registers the ids below
    env = gymnasium.make("MatterTwin/SimuHome-v0")  # the 600 committed episodes
    obs, info = env.reset(seed=0)                   # or options={"episode_id": "qt3-f-001"}
    obs, reward, terminated, truncated, info = env.step(
        {"tool": env.unwrapped.tool_index("get_rooms"), "args": "{}"})
    obs, reward, terminated, truncated, info = env.step('finish {"answer": "done"}')   # text form

Spaces (all text is printable ASCII; JSON with non-ASCII escaped):
- action: Dict(tool=Discrete(#tools: `TOOL_NAMES`, then the suite's own tools by name; `tool_names`),
  args=Text: a JSON object). A policy
  that writes text may instead pass a string, `TOOL {json args}` or `{"tool": ..., "args": {...}}`.
- observation: Dict(query=Text: the user's request, result=Text: the last tool result as JSON,
  and with `observe_home=True` home=Text: rooms' values and each device's main state as JSON).

Reward: 0 on every step but the last; when the agent calls `finish` (terminated) or runs out of
`max_steps` (truncated), the episode is scored exactly as the suite's runs score it (its
`Attempt.score`; SimuHome: simulator goals or the rule judge) and the reward is 1.0 for a
success, else 0.0; `info["verdict"]` holds the whole record.

Step-wise reward (`stepwise=True`, HomeFlow's equation): after every step the suite's verdict
is checked (its partial credit m_t: the fraction of goal predicates that hold) and the reward is
    r_t = lambda_prog (m_t - m_{t-1}) + lambda_succ 1[episode ends in success] - c_audit 1[blocked]
where a call is blocked when the twin's auditor refuses it (an unknown tool or function, bad
arguments, a value beyond the device's limits: the call returns an error and changes nothing).
The episode terminates as soon as the verdict is a success (or at `finish`); `info` carries
`m` and `blocked`. The coefficients are parameters (`lambda_prog`, `lambda_succ`, `c_audit`).

The simulated user in the loop (`user_turns=N`, suites with a `follow_up`: HomeFlow, SMH-Bench): when the
agent calls `finish` short of success, the user says what is still unmet (up to N times per
episode) and the episode goes on: the observation's query is what the user said, and `info`
carries it as `user`.

`reset(options=...)`: `episode_id`, or `category` and/or `tier` (a random episode among those
that match), or `generate` (a category: a fresh episode drawn by the suite, as HomeFlow's
procedural tasks); with `suite` (a registered name whose tools fit the action space, e.g.
smh from HomeFlow's environment) this and later episodes come from that suite.

Resets fork the episode's start (built once per episode), so they are cheap.
`advance_seconds` moves virtual time after each call (default 0: time stands still while the
agent works, as in the benchmark).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import gymnasium
from gymnasium import spaces

from bridge.tools import TOOL_NAMES, call_tool
from bridge.twin_backend import TwinBackend
from scenarios.simuhome.evaluate import Judge, agent_session, build_home
from scenarios.simuhome.reference import ReferenceAgent
from scenarios.simuhome.schema import Episode
from scenarios.suite import Attempt
from scenarios.suites import SUITES, suite_named
from twin.home import Home

ENV_ID = "MatterTwin/SimuHome-v0"
#: suite name -> its gym id
ENV_IDS = {name: f"MatterTwin/{suite.title or name}-v0" for name, suite in SUITES.items() if suite.attempt}
#: Printable ASCII: every observation is JSON dumped with ensure_ascii.
CHARSET = "".join(chr(c) for c in range(32, 127))
MAX_ARGS = 4096
MAX_OBSERVATION = 1 << 20


def _text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=True, sort_keys=True)


def parse_action(action: Any, names: tuple[str, ...] = TOOL_NAMES) -> tuple[str, Any]:
    """(tool name, args) from a structured action (a tool index into `names`) or its text form;
    ValueError when unreadable."""
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
    if not 0 <= tool < len(names):
        raise ValueError(f"tool index {tool} is out of range 0..{len(names) - 1}")
    args = action["args"]
    return names[tool], json.loads(args) if isinstance(args, str) and args.strip() else args or {}


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

    def __init__(self, episodes: list[Any] | str | Path | None = None, max_steps: int = 30,
                 observe_home: bool = False, advance_seconds: float = 0.0, judge: Judge | None = None,
                 render_mode: str | None = None, suite: str = "simuhome", stepwise: bool = False,
                 lambda_prog: float = 1.0, lambda_succ: float = 1.0, c_audit: float = 0.1, user_turns: int = 0):
        self.suite = suite_named(suite)
        if self.suite.attempt is None:
            raise ValueError(f"the {suite} suite has no per-task episodes; accepted: {', '.join(ENV_IDS)}")
        if episodes is None or isinstance(episodes, (str, Path)):
            episodes = self.suite.tasks(Path(episodes) if episodes else None)
        if not episodes:
            raise ValueError("HomeEnv needs at least one episode")
        self.episodes = list(episodes)
        self._by_id = {e.id: e for e in self.episodes}
        self.max_steps = max_steps
        self.observe_home = observe_home
        self.advance_seconds = advance_seconds
        self._options = {} if judge is None else {"judge": judge}   # SimuHome's attempt takes a judge
        self.render_mode = render_mode
        self.stepwise = stepwise
        self.coefficients = (float(lambda_prog), float(lambda_succ), float(c_audit))
        self.user_turns = int(user_turns)
        self._turns_left = 0
        self._m = 0.0
        first = self.suite.attempt(self.episodes[0], **self._options)
        self._starts: dict[str, Any] = {first.task_id: first.start}
        self._first_suite = self.suite
        #: suite name -> (episodes, starts): what a reset to another suite (options "suite") uses
        self._suites: dict[str, tuple[list[Any], dict[str, Any]]] = {self.suite.name: (self.episodes, self._starts)}
        #: The tools an action may name, by index: the core tools, then the suite's own.
        self.tool_names: tuple[str, ...] = TOOL_NAMES + tuple(sorted(first.session.tools.models))
        self.action_space = spaces.Dict({"tool": spaces.Discrete(len(self.tool_names)),
                                         "args": spaces.Text(MAX_ARGS, min_length=0, charset=CHARSET)})
        observed = {"query": spaces.Text(MAX_OBSERVATION, min_length=0, charset=CHARSET),
                    "result": spaces.Text(MAX_OBSERVATION, min_length=0, charset=CHARSET)}
        if observe_home:
            observed["home"] = spaces.Text(MAX_OBSERVATION, min_length=0, charset=CHARSET)
        self.observation_space = spaces.Dict(observed)
        self.episode: Any = None
        self._attempt: Attempt | None = None
        self._last: dict[str, Any] = {}

    def _use_suite(self, name: str) -> None:
        """Later episodes from suite `name` (its committed tasks), if its tools fit the action space."""
        suite = suite_named(name)
        if suite is self.suite:
            return
        if suite.attempt is None:
            raise ValueError(f"the {name} suite has no per-task episodes; accepted: {', '.join(ENV_IDS)}")
        episodes, starts = self._suites.get(name) or (suite.tasks(), {})
        missing = sorted(set(suite.tools(episodes[0]).models) - set(self.tool_names))
        if missing:
            raise ValueError(f"the {name} suite's tools ({', '.join(missing)}) are not in this environment's "
                             f"action space; make its own: gymnasium.make({ENV_IDS[name]!r})")
        self._suites[name] = (episodes, starts)
        self.suite, self.episodes, self._starts = suite, episodes, starts
        self._by_id = {e.id: e for e in episodes}

    @staticmethod
    def tool_index(name: str) -> int:
        """A core tool's action index (the same in every suite; a suite's own tools follow them:
        `env.tool_names.index(name)`)."""
        return TOOL_NAMES.index(name)

    # ---- gymnasium API ------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        options = options or {}
        if "suite" in options:
            self._use_suite(str(options["suite"]))
        if "episode_id" in options:
            if options["episode_id"] not in self._by_id:
                raise ValueError(f"unknown episode {options['episode_id']!r}")
            self.episode = self._by_id[options["episode_id"]]
        elif "generate" in options:   # a fresh verifiable episode of that category, from the seed
            category = options["generate"]
            if self.suite.draw is None:
                raise ValueError(f"the {self.suite.name} suite does not draw fresh episodes")
            if category not in self.suite.categories:
                raise ValueError(f"unknown category {category!r}; accepted: {', '.join(self.suite.categories)}")
            self.episode = self.suite.draw(category, int(self.np_random.integers(2**31)))
        else:
            pool = [e for e in self.episodes if all(getattr(e, key, None) == options[key]
                                                    for key in ("category", "tier") if key in options)]
            if not pool:
                wanted = ", ".join(f"{k} {options[k]!r}" for k in ("category", "tier") if k in options)
                raise ValueError(f"no episode of {wanted} in this environment")
            self.episode = pool[int(self.np_random.integers(len(pool)))]
        cached = None if "generate" in options else self._starts.get(self.episode.id)
        extra = self._options if self.suite is self._first_suite else {}   # a judge is SimuHome's
        self._attempt = self.suite.attempt(self.episode, start=cached, **extra)
        if "generate" not in options:
            self._starts[self.episode.id] = self._attempt.start
        self._last = {"ok": True, "episode": self.episode.id}
        self._turns_left = self.user_turns
        self._m = float(self._attempt.score().get("m", 0.0)) if self.stepwise else 0.0
        return self._observation(), self._info()

    def step(self, action: Any):
        if self._attempt is None:
            raise RuntimeError("call reset() before step()")
        session, home = self._attempt.session, self._attempt.home
        try:
            name, args = parse_action(action, self.tool_names)
        except (ValueError, TypeError, KeyError) as exc:
            # Like any tool error: data for the policy, recorded as a failed call.
            name, args = "<unreadable>", action if isinstance(action, str) else None
            self._last = {"ok": False, "error": {"code": "INVALID_ACTION", "message": f"unreadable action: {exc}"}}
            session.history.append({"tool": name, "args": args, "result": self._last})
        else:
            self._last = call_tool(TwinBackend(home), name, args, session)
        if self.advance_seconds:
            home.advance(self.advance_seconds)
        said = self._user_turn() if session.finished else None
        terminated = session.finished
        truncated = not terminated and len(session.history) >= self.max_steps
        reward, info = 0.0, self._info()
        if said is not None:
            info["user"] = said
        if self.stepwise:   # the goal checked after every step
            verdict = self._attempt.score()
            success = bool(verdict["success"])
            m = float(verdict.get("m", float(success)))
            terminated = terminated or success
            truncated = truncated and not terminated
            blocked = not self._last.get("ok", False)
            lam_prog, lam_succ, c_audit = self.coefficients
            reward = lam_prog * (m - self._m) + lam_succ * (success and (terminated or truncated)) - c_audit * blocked
            self._m = m
            info.update(m=m, blocked=blocked)
            if terminated or truncated:
                info["verdict"] = verdict
        elif terminated or truncated:
            verdict = self._attempt.score()
            reward, info["verdict"] = float(verdict["success"]), verdict
        return self._observation(), reward, terminated, truncated, info

    def _user_turn(self) -> str | None:
        """The simulated user's next turn after a `finish` short of success, if the suite has one
        and turns are left: the agent's turn is over (its answer cleared), the user's is the query."""
        assert self._attempt is not None
        follow_up = self.suite.follow_up
        if self._turns_left <= 0 or follow_up is None or self._attempt.score()["success"]:
            return None
        said = follow_up(self.episode, self._attempt)
        if said is not None:
            self._turns_left -= 1
            self._attempt.session.answer = None
            self._attempt.query = said
        return said

    def render(self) -> str | None:
        if self.render_mode != "ansi" or self._attempt is None:
            return None
        return f"{self._attempt.task_id}: {self._attempt.query}\nlast result: {_text(self._last)}"

    # ---- helpers ----------------------------------------------------------------------------
    def _observation(self) -> dict[str, str]:
        assert self._attempt is not None
        obs = {"query": _text(self._attempt.query)[1:-1], "result": _text(self._last)}
        if self.observe_home:
            obs["home"] = _text(home_view(self._attempt.home))
        return obs

    def _info(self) -> dict[str, Any]:
        assert self._attempt is not None
        return {"episode_id": self._attempt.task_id, "category": self._attempt.category,
                "steps": len(self._attempt.session.history)}


def reference_actions(episode: Episode) -> list[str]:
    """The reference solver's calls on `episode`, as text actions: a policy that earns the full
    reward wherever the solver does (it works only through the tools, never sees the goal)."""
    home = build_home(episode).fork()
    session = agent_session()
    ReferenceAgent().run(episode.query, TwinBackend(home), session, 100)
    return [f"{h['tool']} {json.dumps(h['args'] or {})}" for h in session.history]


for _suite, _env_id in ENV_IDS.items():
    gymnasium.register(id=_env_id, entry_point="scenarios.gym_env:HomeEnv", kwargs={"suite": _suite})
