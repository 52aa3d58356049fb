"""Run SMH-Bench tasks in either setting and score them with one verifier.

Settings (the paper's Appendix D, our implementation):
- EIA: the agent works through the tools (SimuHome's 17 plus the home tools, `query_home` and
  the automation tools, carried by its session) on its own copy of the task's home; `ask_user`
  is answered by the simulated user (twin.user.ScriptedUser) from the task's hidden intent.
- DR: the agent gets the whole home serialized in its prompt and answers once with JSON
  `{"mode": "execute"|"clarify"|"answer", "response", "actions": [{"tool", "args"}],
  "automations": [{"trigger", "steps", "conditions"?}]}`; the actions and automations are
  replayed on a fresh copy through the same tools.

The verifier, the same for both (each rule written down):
- act: every goal predicate holds, and every device not targeted is as it would be had nobody
  acted (twin.goals `unchanged`: irrelevant-state preservation).
- clarify (TC3): EIA: the agent asked the user before its first state change (at most three
  questions), the judge finds the questions appropriate, and then the act check passes; DR: mode
  is clarify, the judge finds its response an appropriate question, and nothing is replayed.
- rule (TC4): some automation the agent created fires exactly when the expected one does
  (trigger validation, `Automations.same_firing`: the same cron minutes; state conditions on
  the same device attribute or room state, true for the same values), and its steps, run on the start
  home, pass the act check (action validation); and no device changed now.
- answer (TC7): the judge (scenarios/smh/judges.py: the rule judge by default, or an LLM)
  finds the reply right; no device changed.
A mode that does not fit the task (DR clarify on an execution task) fails it.
"""
from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from typing import Any

from bridge.home_tools import HOME_TOOLS
from bridge.tools import Session, call_tool
from bridge.twin_backend import TwinBackend
from scenarios.agent import Agent, AgentOutput, Serve, in_process
from scenarios.model_api import ModelAPIError
from scenarios.smh import language as L
from scenarios.smh.judges import RULE_JUDGE, Judge
from scenarios.smh.tasks import SmhTask, build_home, prompt
from scenarios.suite import Attempt
from twin.automations import AutomationError
from twin.goals import Goal, changed_devices, device_state
from twin.home import Home
from twin.user import Intent, ScriptedUser

STATE_TOOLS = ("execute_command", "write_attribute", "schedule_workflow", "create_automation",
               "enable_automation", "disable_automation", "delete_automation")
MAX_QUESTIONS = 3
#: What the user says when nothing is being clarified (a task without a hidden intent).
NO_INTENT = "I've said all I want; please go ahead."


# ---- what an agent is given ---------------------------------------------------------------------
def agent_session(task: SmhTask, user: Any = None) -> Session:
    """A session whose `ask_user` the task's simulated user answers (`user`: one playing the task's
    intent, e.g. twin.user.LLMUser; default ScriptedUser); a task without an intent: NO_INTENT."""
    user = (user or ScriptedUser(Intent.from_json(task.user))) if task.user else None
    return Session(ask_user=user.answer if user else (lambda question: NO_INTENT), tools=HOME_TOOLS)


def serialize(home: Home) -> dict[str, Any]:
    """The whole home as the DR setting shows it: rooms with states, devices with every attribute."""
    rooms = []
    for room_id, spec in home.rooms.items():
        rooms.append({"id": room_id, "name": spec.name, "floor": spec.floor, "kind": spec.kind,
                      "parent": spec.parent, "states": {s: round(getattr(spec, s), 1) for s in
                                                        ("temperature", "humidity", "illuminance", "pm10")}})
    devices = []
    for device_id in home.devices.objects:
        info = home.device_info(device_id)
        devices.append({"id": device_id, "name": info["name"], "type": info["type"], "room": info["room"],
                        "tags": home.tags_of(device_id), "state": device_state(home.devices[device_id])})
    return {"time": home.now.strftime("%Y-%m-%d %H:%M:%S"), "rooms": rooms, "devices": devices}


DR_PROMPT = """You control a smart home. The whole home is below as JSON: rooms with their states \
(temperature °C, humidity %RH, illuminance lux, pm10 µg/m³), devices with every attribute \
("endpoint/Cluster/Attribute": value). Answer with ONE JSON object and nothing else:
{{"mode": "execute" | "clarify" | "answer", "response": "<what you tell the user>",
 "actions": [{{"tool": "execute_command" | "write_attribute", "args": {{...as the tools take them...}}}}],
 "automations": [{{"trigger": {{...}}, "steps": [...], "conditions": [...]}}]}}
execute: do it now (actions) or set up rules (automations); clarify: ask the user instead of acting;
answer: reply to a question about the home (no actions).

HOME
{home}

{request}"""


# ---- checks ---------------------------------------------------------------------------------
def _act_predicates(task: SmhTask) -> list[dict[str, Any]]:
    return [*task.goal, {"type": "unchanged", "except": list(task.targets)}]


def same_trigger(home: Home, expected: dict[str, Any], rule: dict[str, Any]) -> bool:
    """Trigger validation: the rule is enabled and fires exactly when `expected` does
    (`Automations.same_firing`: the same cron minutes; state conditions on the same thing, true
    for the same values). A time trigger with one state condition is a time-and-state trigger."""
    trigger, conditions = rule["trigger"], rule.get("conditions") or []
    if trigger.get("type") == "time" and len(conditions) == 1 and conditions[0].get("type") in ("device", "room"):
        trigger, conditions = {"type": "time_and_state", "cron": trigger["cron"], "state": conditions[0]}, []
    if conditions or not rule.get("enabled", True):
        return False
    try:
        return bool(home.automations.same_firing(expected, trigger))
    except (AutomationError, ValueError, KeyError):
        return False


def steps_reach_goal(task: SmhTask, start: Home, steps: list[dict[str, Any]]) -> bool:
    """Action validation: the rule's steps, run on the start home, pass the act check."""
    home = start.fork()
    goal = Goal(home, _act_predicates(task))
    backend = TwinBackend(home)
    for step in steps:
        if not call_tool(backend, step["tool"], step["args"]).get("ok"):
            return False
    return bool(goal.check(home)["success"])


def asked_first(history: list[dict[str, Any]]) -> tuple[bool, str]:
    tools = [h["tool"] for h in history]
    asks = [i for i, t in enumerate(tools) if t == "ask_user"]
    changes = [i for i, t in enumerate(tools) if t in STATE_TOOLS]
    if not asks or (changes and changes[0] < asks[0]):
        return False, "clarification_missing"
    if len(asks) > MAX_QUESTIONS:
        return False, "too_many_questions"
    return True, ""


def verify(task: SmhTask, start: Home, acted: Home, goal_now: Goal, answer: str | None,
           history: list[dict[str, Any]] | None, mode: str | None, judge: Judge = RULE_JUDGE) -> dict[str, Any]:
    """The one verifier: {"success", "m" (partial credit), "error" (taxonomy label or None)}."""
    checked = goal_now.check(acted)
    unchanged = bool(checked["satisfied"][-1])
    if task.expect == "answer":
        ok, why = judge.answer(task, answer, acted) if answer and answer.strip() else (False, "missing_response")
        if mode not in (None, "answer"):
            ok, why = False, "mode_selection"
        success = ok and unchanged
        return {"success": success, "m": float(success), "error": None if success else why if not ok else "collateral"}
    if task.expect == "rule":
        rules = [r.to_json() for r in acted.automations.list()]
        if not rules:
            return {"success": False, "m": 0.0, "error": "missing_automation"}
        triggered = [r for r in rules if same_trigger(acted, task.rule["trigger"], r)] if task.rule else []
        if not triggered:
            return {"success": False, "m": 0.0, "error": "trigger_mismatch"}
        if not any(steps_reach_goal(task, start, r["steps"]) for r in triggered):
            return {"success": False, "m": 0.5, "error": "action_mismatch"}
        return {"success": unchanged, "m": 1.0 if unchanged else 0.5, "error": None if unchanged else "collateral"}
    if task.expect == "clarify":
        if mode is not None:    # DR: one shot, so the right move is to ask
            if mode != "clarify":
                return {"success": False, "m": 0.0, "error": "mode_selection"}
            ok, why = judge.clarification(task, [answer] if answer else [], start)
            return {"success": ok, "m": float(ok), "error": None if ok else why}
        ok, why = asked_first(history or [])
        if ok:
            questions = [str((h.get("args") or {}).get("question", ""))
                         for h in history or [] if h["tool"] == "ask_user"]
            ok, why = judge.clarification(task, questions, start)
        if not ok:
            return {"success": False, "m": 0.0, "error": why}
    elif mode == "clarify":
        return {"success": False, "m": 0.0, "error": "mode_selection"}
    goal_part = checked["satisfied"][:-1]
    m = sum(goal_part) / len(goal_part)
    if not checked["success"]:
        error = "collateral" if all(goal_part) else "missing_labels" if not any(goal_part) else "wrong_state"
        return {"success": False, "m": m, "error": error}
    return {"success": True, "m": 1.0, "error": None}


# ---- the simulated user's later turns ----------------------------------------------------
def _names(home: Home, devices: Any) -> dict[str, str]:
    return {d: home.device_info(d)["name"] for d in devices}


def intent_of(task: SmhTask, home: Home) -> Intent:
    """The task's hidden intent; a task without one wants what its goal says."""
    if task.user:
        return Intent.from_json(task.user)
    ops = L.ops_of(task.goal) if task.goal else None
    goal = "; ".join(L.say(op, _names(home, task.targets)) for op in ops) if ops else task.query
    return Intent(request=task.query, goal=goal)


def unmet(task: SmhTask, home: Home, goal: Goal) -> list[str]:
    """What is still to do on `home`, in the request language's clear words: each goal operation
    with a predicate that does not hold, then each device the request was not about that changed
    (switched back, or put back as it was). [] when there is nothing to name."""
    ops = L.ops_of(task.goal) if task.goal else None
    if ops is None:
        return []
    satisfied = goal.check(home)["satisfied"]
    held = {json.dumps(p, sort_keys=True): ok for p, ok in zip(task.goal, satisfied)}
    todo = [op for op in ops if not all(held[json.dumps(p, sort_keys=True)] for p in L.predicates(op))]
    out = [L.say(op, _names(home, [op["device"]])) for op in todo]
    if not satisfied[-1]:   # irrelevant state changed
        before = goal.counterfactual()
        for device_id in changed_devices(home, before, set(task.targets)):
            name = home.device_info(device_id)["name"]
            was, now = _on(before, device_id), _on(home, device_id)
            if was is not None and was != now:
                out.append(L.say({"op": "on" if was else "off", "device": device_id}, {device_id: name}))
            else:
                out.append(f"put the {name.lower()} back as it was")
    return out


def follow_up(task: SmhTask, attempt: Attempt) -> str | None:
    """The scripted user's next turn on an attempt the agent ended short of success (the gym's
    `user_turns`): what is still unmet on its home, or None when there is nothing to name."""
    if not task.goal or task.expect not in ("act", "clarify"):   # a rule is set up, an answer given: not unmet state
        return None
    goal = Goal(attempt.home, _act_predicates(task), baseline=attempt.start.fork())
    todo = unmet(task, attempt.home, goal)
    return ScriptedUser(intent_of(task, attempt.start)).remind(todo) if todo else None


def _on(home: Home, device_id: str) -> bool | None:
    try:
        return bool(home.devices.objects[device_id].read("OnOff", "OnOff"))
    except Exception:  # no OnOff cluster: nothing to switch back
        return None


# ---- running --------------------------------------------------------------------------------
def _start(task: SmhTask, start: Home | None = None) -> tuple[Home, Home, Goal]:
    start = start if start is not None else build_home(task)
    acted = start.fork()
    return start, acted, Goal(acted, _act_predicates(task) if task.goal else
                              [{"type": "unchanged", "except": list(task.targets)}])


def begin(task: SmhTask, start: Home | None = None, judge: Judge = RULE_JUDGE) -> Attempt:
    """An EIA attempt (scenarios.suite.Attempt): the agent's copy of the start home (`start`: the
    task's home already built), its session, and the verifier (with `judge`) on what it has done so far."""
    start = start if start is not None else build_home(task)
    acted = start.fork()
    goal_now = Goal(acted, _act_predicates(task) if task.goal else
                    [{"type": "unchanged", "except": list(task.targets)}])
    session = agent_session(task)
    return Attempt(task.id, task.category, prompt(task), acted, session,
                   lambda: verify(task, start, acted, goal_now, session.answer, session.history, None, judge), start)


def _result(task: SmhTask, setting: str, agent: str, verdict: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"task_id": task.id, "category": task.category, "subcategory": task.subcategory, "tier": task.tier,
            "setting": setting, "agent": agent, **verdict, **extra}


def run_eia(task: SmhTask, agent: Agent, max_steps: int = 30, judge: Judge = RULE_JUDGE,
            serve: Serve = in_process, start: Home | None = None) -> dict[str, Any]:
    """The agent on its copy of the task's home, reached through `serve` (in process, or over
    Matter: scenarios/over_matter.py), then scored in process."""
    attempt = begin(task, start, judge)
    session = attempt.session
    with serve(attempt.home) as backend:
        try:
            out = agent.run(attempt.query, backend, session, max_steps)
        except ModelAPIError:      # the harness's failure, not the agent's: it stops the run
            raise
        except Exception as exc:   # an agent that crashes fails its task, with the reason kept
            out = AgentOutput(None, len(session.history), error=f"{type(exc).__name__}: {exc}")
    verdict = attempt.score()
    invalid = sum(not h["result"].get("ok") for h in session.history)
    return _result(task, "EIA", agent.name, verdict, answer=session.answer, tool_calls=len(session.history),
                   invalid_calls=invalid, prompt_tokens=out.prompt_tokens, completion_tokens=out.completion_tokens,
                   **({"agent_error": out.error} if out.error else {}),
                   **({"replies": out.replies, "unusable_replies": out.unusable_replies}
                      if out.replies is not None else {}))


#: A DR agent: (the prompt text, the serialized home) -> its one reply (JSON text).
DirectAgent = Callable[[str, dict[str, Any]], str]


def run_dr(task: SmhTask, agent: DirectAgent, name: str, judge: Judge = RULE_JUDGE,
           start: Home | None = None) -> dict[str, Any]:
    """`start`: the task's home already built (never changed: the agent acts on a fork)."""
    start, acted, goal_now = _start(task, start)
    reply = agent(DR_PROMPT.format(home=json.dumps(serialize(start), ensure_ascii=False), request=prompt(task)),
                  serialize(start))
    try:
        data = json.loads(reply)
        if not isinstance(data, dict):
            raise ValueError("not an object")
    except ValueError:
        return _result(task, "DR", name, {"success": False, "m": 0.0, "error": "format"}, answer=reply)
    backend, session = TwinBackend(acted), Session(tools=HOME_TOOLS)
    for action in data.get("actions") or []:
        call_tool(backend, str(action.get("tool")), action.get("args"), session)
    for rule in data.get("automations") or []:
        call_tool(backend, "create_automation", rule, session)
    mode = str(data.get("mode", "execute"))
    verdict = verify(task, start, acted, goal_now, data.get("response"), None, mode if mode != "execute" else "execute",
                     judge)
    invalid = sum(not h["result"].get("ok") for h in session.history)
    return _result(task, "DR", name, verdict, answer=data.get("response"), tool_calls=len(session.history),
                   invalid_calls=invalid)


def summarize(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Success rates per setting, category, tier and subcategory, and the error taxonomy."""
    def rate(rows: list[dict[str, Any]]) -> dict[str, Any]:
        return {"n": len(rows), "success": round(sum(r["success"] for r in rows) / len(rows), 4) if rows else None}
    out: dict[str, Any] = {"overall": rate(results)}
    for key in ("setting", "category", "tier", "subcategory"):
        out[key] = {v: rate([r for r in results if r[key] == v]) for v in sorted({r[key] for r in results})}
    out["errors"] = dict(Counter(r["error"] for r in results if r["error"]).most_common())
    out["tool_calls"] = sum(r.get("tool_calls", 0) for r in results)
    return out


__all__ = ["DR_PROMPT", "follow_up", "intent_of", "run_dr", "run_eia", "same_trigger", "serialize", "summarize",
           "unmet", "verify"]
