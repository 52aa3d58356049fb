"""MCTS-Flow (HomeFlow's tree search over dialogues, our implementation from the paper's
definitions) on forks of the twin, and the verified data it yields.

The tree alternates user and agent nodes. A node is a reusable prefix: its dialogue so far and
its own fork of the home (a child forks its parent's home, so a prefix is executed once).
- User nodes say something: the root the task's request; a later one reacts to the home the
  agent's last turn left: it names only the goal operations not yet met (and switches back a
  device the request was not about), never the whole request again (`unmet`; the request
  again only when nothing is left to name, e.g. an agent that should have asked first). The
  simulated user says it: twin.user.ScriptedUser by default (a fixed sentence), or any user
  playing the task's intent, such as an LLM (`user=LLMUserSpec(model, ...)`, the OpenAI-
  compatible client); the same user answers `ask_user` from the task's hidden intent.
  Branching k_user: the words as said, or with spoken-style fillers.
- Agent nodes are one agent turn: tool calls up to `finish`, by one of `K_AGENT` policies built
  on the reference solver: `reference` (the whole request), `stepwise` (the first clause only,
  the rest left for a later turn) and `slip` (one value taken wrong); k_agent > k_user, as the
  paper allots its budget. Any agents may play instead (`agents=`: an LLM's samples, e.g.
  `twin bench homeflow flow --agent openai:MODEL --samples 3`).
- Selection is UCB (the paper's equation 3, `c_ucb`) over children still open (rho = 1);
  expansion adds the next untried child; the turn is run on the twin and verified: R = 1 when
  the task's verdict is a success and no call was blocked, 0 otherwise (also at the turn
  limit, `max_turns`), backed up through Q and N of every ancestor.

Out of the tree: every path to a verified success as an SFT dialogue (OpenAI chat format:
messages with tool calls and tool results, and the tool schemas), and preference pairs (one
prefix, an agent turn after which the task was done and one after which it was not). Each
record replays (`replay`) to identical tool results, and carries its split: train or heldout
by a hash of its content.
"""
from __future__ import annotations

import hashlib
import json
import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from bridge.home_tools import HOME_TOOLS
from bridge.tools import TOOL_SCHEMAS, Session, call_tool
from bridge.twin_backend import TwinBackend
from scenarios.agent import Agent
from scenarios.homeflow.blueprint import add_noise
from scenarios.homeflow.tasks import HomeFlowTask, build_home, prompt
from scenarios.model_api import create_completion
from scenarios.smh import language as L
from scenarios.smh import tasks as smh
from scenarios.smh.evaluate import _act_predicates, agent_session, intent_of, unmet, verify
from scenarios.smh.reference import ReferenceAgent
from twin.goals import Goal
from twin.home import Home
from twin.user import Intent, LLMUser, ScriptedUser

K_AGENT = ("reference", "stepwise", "slip")
K_USER = ("as written", "noisy")
SYSTEM = ("You are a smart-home assistant. Do what the user asks by calling tools; ask the user (ask_user) "
          "when the request leaves out something you need; change only what the request is about; end each "
          "turn with finish and your reply.")


def tools() -> list[dict[str, Any]]:
    return TOOL_SCHEMAS + HOME_TOOLS.schemas


#: Intent -> the simulated user playing it (ScriptedUser, LLMUserSpec(...), ...).
UserMaker = Callable[[Intent], Any]


@dataclass(frozen=True)
class LLMUserSpec:
    """An LLM user (twin.user.LLMUser) through an OpenAI-compatible endpoint, as data (so a Ray
    worker can make its own)."""
    model: str
    base_url: str | None = None
    api_key: str | None = None
    seed: int = 0

    def __call__(self, intent: Intent) -> LLMUser:
        user = LLMUser(intent, self.model, self.base_url, self.api_key, seed=self.seed)
        raw = user.client   # an API failure is the harness's: ModelAPIError, one line
        user.client = SimpleNamespace(chat=SimpleNamespace(completions=SimpleNamespace(
            create=lambda **kwargs: create_completion(raw, kwargs))))
        return user


@dataclass
class Node:
    role: str                          # "user" (it spoke) or "agent" (it acted)
    turn: int                          # agent turns so far, this one included
    home: Home
    session: Session
    messages: list[dict[str, Any]]
    choice: str = ""                   # which variant or policy made it
    user: Any = None                   # the simulated user, as this branch has heard it
    children: list[Node] = field(default_factory=list)
    tried: int = 0
    n: int = 0
    q: float = 0.0
    terminal: bool = False
    reward: float = 0.0
    success: bool = False
    parent: Node | None = None

    def open(self, k_agent: int) -> bool:
        """rho(v) = 1: something below it is still to be searched."""
        k = k_agent if self.role == "user" else len(K_USER)
        return not self.terminal and (self.tried < k or any(c.open(k_agent) for c in self.children))


def _ucb(child: Node, parent: Node, c_ucb: float) -> float:
    if child.n == 0:
        return math.inf
    return child.q / child.n + c_ucb * math.sqrt(2 * math.log(max(parent.n, 1)) / child.n)


class Search:
    """MCTS-Flow on one task."""

    def __init__(self, task: HomeFlowTask, seed: int = 0, c_ucb: float = 1.0, max_turns: int = 3,
                 agents: list[tuple[str, Agent]] | None = None, user: UserMaker | None = None):
        self.task, self.c_ucb, self.max_turns = task, c_ucb, max_turns
        #: The agent policies (k_agent of them): the reference-based three, or any agents (an
        #: LLM's samples), each playing one turn on the node's fork with `run`.
        self.agents = dict(agents) if agents else None
        self.k_agent = list(self.agents) if self.agents else list(K_AGENT)
        self.rng = random.Random(f"flow:{seed}:{task.id}")
        self.start = build_home(task)
        acted = self.start.fork()
        self.goal = Goal(acted, _act_predicates(task) if task.goal else
                         [{"type": "unchanged", "except": list(task.targets)}])
        root_user = (user or ScriptedUser)(intent_of(task, self.start))
        self.root = Node("agent", 0, acted, agent_session(task, root_user), [{"role": "system", "content": SYSTEM}],
                         user=root_user)
        self.root_prompt = prompt(task)

    # ---- the tree ---------------------------------------------------------------------------
    def run(self, rollouts: int) -> Search:
        for _ in range(rollouts):
            node = self.root
            while node.tried >= self._k(node) and not node.terminal:   # selection
                candidates = [c for c in node.children if c.open(len(self.k_agent))]
                if not candidates:
                    break
                node = max(candidates, key=lambda c: _ucb(c, node, self.c_ucb))
            if node.terminal or node.tried >= self._k(node):
                break   # the whole tree is searched
            child = self.expand(node)
            self.backup(child, child.reward)
        return self

    def _k(self, node: Node) -> int:
        return len(self.k_agent) if node.role == "user" else len(K_USER)

    def expand(self, node: Node) -> Node:
        index = node.tried
        node.tried += 1
        user = node.user.fork()
        home, session = node.home.fork(), _copy(self.task, node.session, user)
        if node.role == "agent":   # the user speaks next
            todo = unmet(self.task, node.home, self.goal) if node.turn else []
            if todo:
                text = user.remind(todo)
            else:   # the first turn, or nothing left to name: the request as the task has it
                text = self.root_prompt if node.turn == 0 else smh.prompt(self.task)
                if node.turn:
                    user.transcript.append({"role": "user", "content": text})
            if K_USER[index] == "noisy":
                *context, request = text.split("\n\n")
                text = "\n\n".join([*context, add_noise(self.rng, request)])
                if node.turn:   # the user heard itself say it so
                    user.transcript[-1] = {"role": "user", "content": text}
            session.answer = None   # a new turn
            child = Node("user", node.turn, home, session, [*node.messages, {"role": "user", "content": text}],
                         K_USER[index], user=user, parent=node)
        else:
            before = len(session.history)
            self.act(self.k_agent[index], node.messages[-1]["content"], home, session)
            calls = session.history[before:]
            child = Node("agent", node.turn + 1, home, session, [*node.messages, *_chat(calls, before)],
                         self.k_agent[index], user=user, parent=node)
            verdict = verify(self.task, self.start, home, self.goal, session.answer, session.history, None)
            blocked = any(not c["result"].get("ok") for c in calls)
            child.success = bool(verdict["success"]) and not blocked
            child.terminal = child.success or blocked or child.turn >= self.max_turns
            child.reward = float(child.success)
        node.children.append(child)
        return child

    def backup(self, node: Node | None, reward: float) -> None:
        while node is not None:
            node.n += 1
            node.q += reward
            node = node.parent

    # ---- agent policies ------------------------------------------------------------------
    def act(self, policy: str, text: str, home: Home, session: Session) -> None:
        backend = TwinBackend(home)
        if self.agents is not None:
            self.agents[policy].run(text, backend, session, 30)
            if not session.finished:
                call_tool(backend, "finish", {"answer": "Done."}, session)
            return
        request = text.split("\n\n")[-1].removeprefix("user: ")
        names = {d: home.device_info(d)["name"] for d in home.devices.objects}
        ops = L.parse_clauses(request, names)
        if policy != "reference" and ops:
            if policy == "stepwise" and len(ops) > 1:
                text = _replace_request(text, L.say(ops[0], names) + ".")
            elif policy == "slip":
                op = dict(ops[0])
                other = [v for v in L.VALUES.get(op["op"], ()) if v != op.get("value")]
                if other:
                    op["value"] = self.rng.choice(other)
                    text = _replace_request(text, L.join([L.say(o, names) for o in [op, *ops[1:]]]))
        ReferenceAgent().run(text, backend, session, 30)
        if not session.finished:
            call_tool(backend, "finish", {"answer": "Done."}, session)

    # ---- data out ---------------------------------------------------------------------------
    def successes(self) -> list[Node]:
        return [n for n in _walk(self.root) if n.success]

    def pairs(self) -> list[tuple[Node, Node]]:
        """(chosen, rejected) agent turns after the same user node."""
        out = []
        for node in _walk(self.root):
            if node.role != "user":
                continue
            good = [c for c in node.children if c.success]
            bad = [c for c in node.children if not c.success]
            if good and bad:
                out.append((good[0], bad[0]))
        return out


def _replace_request(text: str, request: str) -> str:
    *context, last = text.split("\n\n")
    return "\n\n".join([*context, ("user: " if last.startswith("user: ") else "") + request])


def _copy(task: HomeFlowTask, session: Session, user: Any) -> Session:
    """A branch's own session: the history so far, and its own fork of the simulated user (who
    has heard the same dialogue)."""
    out = agent_session(task, user)
    out.history, out.answer = list(session.history), session.answer
    return out


def _walk(node: Node) -> list[Node]:
    out, stack = [], [node]
    while stack:
        n = stack.pop(0)
        out.append(n)
        stack.extend(n.children)
    return out


def _chat(calls: list[dict[str, Any]], first: int) -> list[dict[str, Any]]:
    """One agent turn as OpenAI chat messages: each call an assistant tool call and its result."""
    out: list[dict[str, Any]] = []
    for i, call in enumerate(calls, first):
        call_id = f"call_{i}"
        out.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": call_id, "type": "function",
             "function": {"name": call["tool"], "arguments": json.dumps(call["args"] or {}, sort_keys=True)}}]})
        out.append({"role": "tool", "tool_call_id": call_id, "content": json.dumps(call["result"], sort_keys=True)})
    return out


def _hash(data: Any) -> str:
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


def split_of(content: Any, heldout_fraction: float = 0.1) -> str:
    """"heldout" for a fixed share of all possible records, by a hash of their content."""
    return "heldout" if int(_hash(content)[:8], 16) / 0x1_0000_0000 < heldout_fraction else "train"


def records(task: HomeFlowTask, seed: int = 0, rollouts: int = 24, heldout_fraction: float = 0.1,
            agents: list[tuple[str, Agent]] | None = None, user: UserMaker | None = None
            ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """MCTS-Flow on one task: (SFT dialogues, preference pairs), in tree order."""
    search = Search(task, seed, agents=agents, user=user).run(rollouts)
    sft, seen = [], set()
    for node in search.successes():   # two policies may make the same turn: one record each
        record = {"task_id": task.id, "messages": node.messages, "tools": tools()}
        key = _hash(record)
        if key not in seen:
            seen.add(key)
            sft.append({"id": key[:16], **record, "split": split_of(node.messages, heldout_fraction)})
    prefs = []
    for chosen, rejected in search.pairs():
        shared = len(chosen.parent.messages) if chosen.parent else 0
        record = {"task_id": task.id, "prompt": chosen.messages[:shared], "chosen": chosen.messages[shared:],
                  "rejected": rejected.messages[shared:], "tools": tools()}
        prefs.append({"id": _hash(record)[:16], **record, "split": split_of(record["prompt"], heldout_fraction)})
    return sft, prefs


def replay(task: HomeFlowTask, messages: list[dict[str, Any]], user: UserMaker | None = None) -> bool:
    """Whether a dialogue's tool calls, made again on the task's start home with the same
    simulated user (`user`, default ScriptedUser, told the same later turns), return exactly the
    recorded results."""
    home = build_home(task).fork()
    player = (user or ScriptedUser)(intent_of(task, home))
    backend, session = TwinBackend(home), agent_session(task, player)
    results = {m["tool_call_id"]: m["content"] for m in messages if m["role"] == "tool"}
    said = 0
    for message in messages:
        if message["role"] == "user":
            session.answer = None
            if said:   # the first is the request, which the user's transcript starts with
                player.transcript.append({"role": "user", "content": message["content"]})
            said += 1
        for call in message.get("tool_calls") or []:
            got = call_tool(backend, call["function"]["name"], json.loads(call["function"]["arguments"]), session)
            if json.dumps(got, sort_keys=True) != results.get(call["id"]):
                return False
    return True


def flow(tasks: list[HomeFlowTask], seed: int = 0, rollouts: int = 24, workers: int = 1,
         ray_address: str | None = None, agents: list[tuple[str, Agent]] | None = None,
         user: UserMaker | None = None) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """MCTS-Flow over tasks, in order; with `ray_address` each task is a Ray task (the results
    are the same for any number of workers: each task's search depends on it and the seed only)."""
    if ray_address:
        from scenarios.runner import start_ray
        ray = start_ray(ray_address, workers)
        remote = ray.remote(records)
        done = ray.get([remote.remote(t, seed, rollouts, 0.1, agents, user) for t in tasks])
    else:
        done = [records(t, seed, rollouts, 0.1, agents, user) for t in tasks]
    sft = [r for s, _ in done for r in s]
    prefs = [p for _, p in done for p in p]
    return sft, prefs
