"""Run agents on personalised tasks, score them, check the task set, sum up.

Each task runs on its own household: the task's household file, lived to the task's `at` (the
same simulation that generated it). The agent gets the question and the tools (SimuHome's and
the household tools); its `finish` answer is scored:

- IG, CF: exact match after normalisation, else (when a judge model is configured) the
  semantic-equivalence judge (Eq. 1-3). CF is reported per changed/unchanged and macro (Eq. 4-5).
- MC: the letter (or the one option text) chosen (Eq. 6).
- FR: AP@1 (success), AP@3 and the relevant-rank deviation (Eq. 7-9, 12-13).
- PG: the plan's steps run on a fork of the household (validity, Eq. 10-11); the resident's own
  arrival is then left out and the clock run to it: the share of the values they would have
  set that the plan set is the rule score. With a judge model, the role-play judge (RPJ abs)
  scores the plan 1-5 overall and per member.
"""
from __future__ import annotations

import json
import os
import random
import re
from collections import Counter
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from bridge.backend import TIME_FORMAT
from bridge.tools import TOOL_SCHEMAS, Session, call_tool
from scenarios.agent import AgentOutput, Serve, in_process
from scenarios.agents.react import ReActAgent, tool_list
from scenarios.agents.simple import NullAgent
from scenarios.model_api import create_completion
from scenarios.personal.household import Household, HouseholdBackend
from scenarios.personal.households import load_spec
from scenarios.personal.reading import (
    WITHDRAWN,
    answer_matches,
    choice,
    doubts,
    json_plans,
    made_up,
    plain,
    plans_in,
    prose_of,
    ranking,
    unwrapped,
)
from scenarios.personal.tasks import (
    ARRIVAL_MIN,
    CATEGORIES,
    LEVEL_TOLERANCE,
    PersonalTask,
    arrival_actions,
    arrival_checks,
    average_precision,
    day_end,
    exact_match,
    household_view,
    normalize,
    rank_deviation,
    relevant_features,
    solve,
)
from scenarios.personal.tools import SCHEMAS, household_tools
from scenarios.runner import run as run_items
from twin.schema import UserFileError

PLAN_TOOLS = ("execute_command", "write_attribute", "schedule_workflow")
#: A plan is a recommendation: "what I think works best" weighs plans, it does not doubt this one.
RECOMMENDS = re.compile(r"\bi (?:think|believe|feel)\b(?=[^.;!?\n]{0,25}\b(?:best|better|ideal|works?|suits?)\b)",
                        re.IGNORECASE)
MAX_STEPS = 15   # the paper's turn budget per task

PROMPT = """You are the assistant of a smart home and of the people who live in it. You answer \
questions about the household and plan for its members by calling tools.

HOW YOU WORK
- Repeat: think, pick ONE tool and its arguments, read the observation, think again.
- When you have the answer, call "finish" with it. Answers are exact and short: a name, a time \
"HH:MM", a number with its unit, an option letter, or the JSON the question asks for.
{protocol}

WHERE THINGS ARE
- get_household_members: who lives here, their personas, habits and preferences, where they are now.
- search_household_memory: what happened, in time order (filters: query words, member, room_id, kind, \
date; page with offset and limit). Times are virtual "YYYY-MM-DD HH:MM:SS".
- perceive_room: who is in a room now, which devices are on, its conditions.
- The device tools read and control the home; get_current_time tells the virtual time.
- A question that starts "Suppose ..." asks about that hypothetical: reason from the memory as if it \
had happened; everything not changed by it stays as it was.

TOOLS
{tools}"""

JSON_PROTOCOL = """- Every reply is exactly one JSON object and nothing else:
  {"thought": "...", "action": "<tool name>", "action_input": "<the arguments as a JSON string>"}"""


SOLE_PROMPT = """You are the assistant of a smart home and of the people who live in it. You answer \
questions about the household and plan for its members from what you are given: the household's \
members and its memory (what happened, in time order) come with the question. You have no tools \
to look anything up; call "finish" once with the answer. Answers are exact and short: a name, a \
time "HH:MM", a number with its unit, an option letter, or the JSON the question asks for. A \
question that starts "Suppose ..." asks about that hypothetical: reason as if it had happened.
{protocol}

TOOLS
{tools}"""


def agent_tools(tools: bool = True) -> list[dict[str, Any]]:
    """The tools an agent is shown: SimuHome's and the household tools, or (sole reasoning) finish."""
    schemas = TOOL_SCHEMAS + SCHEMAS
    return schemas if tools else [s for s in schemas if s["function"]["name"] == "finish"]


def prompt(mode: str, tools: bool = True) -> str:
    protocol = JSON_PROTOCOL if mode == "json" else "- Call tools through function calls."
    return (PROMPT if tools else SOLE_PROMPT).format(protocol=protocol, tools=tool_list(agent_tools(tools)))


# ---- the paper's settings: with or without tools, personalised or anonymised ---------------------
def sole_context(household: Household) -> str:
    """Everything the tools would give, written out for sole reasoning (No-Tools): the members,
    and the memory up to now, one record a line."""
    lines = [f"{r['time']} {r['text']}" for r in household.memory]
    return (f"Household members:\n{json.dumps(household.members(), ensure_ascii=False)}\n\n"
            f"Household memory ({len(lines)} records):\n" + "\n".join(lines))


def anonymised(question: str, household: Household) -> str:
    """The ID-based question of the paper: each member's name replaced by their member id."""
    for rid, person in sorted(household.residents.items(), key=lambda kv: -len(kv[1].name)):
        question = re.sub(rf"\b{re.escape(person.name)}\b", rid, question)
    return question


def named(answer: str | None, household: Household) -> str | None:
    """An answer to an ID-based question read back: member ids as the members' names."""
    if answer is None:
        return None
    for rid, person in household.residents.items():
        answer = re.sub(rf"\b{re.escape(rid)}\b", person.name, answer)
    return answer


# ---- agents ----------------------------------------------------------------------------------
class ReferenceAgent:
    """The upper bound: reads the task's rule and computes the answer from what the household
    tools return. For CF it replays the hypothetical on the simulator (privileged: no tool can
    fork the home), so the CF bound is the ground truth's own mechanism; for PG it lives the day
    ahead likewise (`_plan`)."""
    name = "reference"

    def __init__(self, task: PersonalTask):
        self.task = task

    def _all(self, backend: Any, session: Session, **filters: Any) -> list[dict[str, Any]]:
        records: list[dict[str, Any]] = []
        while True:
            page = call_tool(backend, "search_household_memory", {**filters, "offset": len(records), "limit": 200},
                             session)
            records += page["records"]
            if len(records) >= page["total"] or not page["records"]:
                return records

    def run(self, query: str, backend: Any, session: Session, max_steps: int) -> AgentOutput:
        task = self.task
        members = call_tool(backend, "get_household_members", {}, session)["members"]
        if task.category == "FR":
            resident = task.params["resident"]
            records = self._all(backend, session, member=resident)
            days = sorted({r["time"][:10] for r in records if r["time"][:10] < task.params["day"]})
            order = [f for f in relevant_features(records, resident, days) if f in task.features]
            answer = json.dumps(order + [f for f in task.features if f not in order])
        elif task.category == "PG":
            answer = json.dumps(self._plan(backend, session))
        elif task.category == "CF":
            cf = task.counterfactual or {}
            replay = backend.household.counterfactual(cf["day"], cf["edit"], day_end(cf["day"]))
            answer = solve(task.template or "", *household_view(replay), task.params)
        else:
            day = task.params.get("day")
            records = self._all(backend, session, **({"date": day} if day else {}))
            answer = solve(task.template or "", records, members, task.params)
            options = [o.lower() for o in task.options]
            if task.category == "MC" and answer.lower() in options:
                answer = "ABCDE"[options.index(answer.lower())]
        call_tool(backend, "finish", {"answer": answer}, session)
        return AgentOutput(answer, len(session.history))

    def _plan(self, backend: Any, session: Session) -> list[dict[str, Any]]:
        """What the resident does on coming home today, scheduled for their arrival: their own acts
        in the first ARRIVAL_MIN minutes home, in the order they did them (an AC switched on before
        its mode and setpoint are written, a light on before it is dimmed), those that failed left
        out. Privileged, like the CF bound: which acts today calls for (heat or cool from the
        room's temperature then, the AC only in a warm evening room, the lights left on or off as
        dinner moves them on) follows from the resident's preferences and the day's conditions at
        the arrival, which no tool shows an hour ahead; so the day is lived on a copy of the home
        to the end of the arrival, the simulation the checks come from. The plan is the acts, not
        the checks: the checks are the values these acts leave."""
        resident, day, arrival = (self.task.params[k] for k in ("resident", "day", "arrival"))
        ahead = backend.household.fork()   # the household the plan is scored on stays at the task's time
        ahead.simulate(datetime.strptime(arrival, TIME_FORMAT) + timedelta(minutes=ARRIVAL_MIN + 1))
        steps = [{"tool": r["detail"]["tool"], "args": r["detail"]["args"]}
                 for r in arrival_actions(ahead.memory, resident, day) if r["detail"]["ok"]]
        return [{"program_id": "arrival", "tool": "schedule_workflow",
                 "args": {"start_time": arrival, "steps": steps}}] if steps else []


class Stuffer:
    """A bound: names every member, "nobody", every time of day (5-minute steps), every number
    0-100 and every option letter, and plans to switch every device on at the task's time. Must
    score 0 in IG, CF, MC and PG. (In FR it lists the features in the question's order, a
    ranking like any other: it scores what that order happens to score.)"""
    name = "stuffer"

    def __init__(self, task: PersonalTask):
        self.task = task

    def run(self, query: str, backend: Any, session: Session, max_steps: int) -> AgentOutput:
        members = call_tool(backend, "get_household_members", {}, session)["members"]
        devices = [d["device_id"] for room in call_tool(backend, "get_rooms", {}, session)["rooms"]
                   for d in call_tool(backend, "get_room_devices", {"room.id": room["room_id"]}, session)["devices"]]
        plan = [{"program_id": "all", "tool": "schedule_workflow", "args": {
            "start_time": self.task.params.get("arrival", self.task.at),
            "steps": [{"tool": "execute_command", "args": {"device.id": d, "endpoint.id": 1, "cluster.id": "OnOff",
                                                           "command.id": "On", "args": {}}} for d in devices]}}]
        words = [m["name"] for m in members] + ["nobody", "A B C D E"]
        words += [f"{h:02d}:{m:02d}" for h in range(24) for m in range(0, 60, 5)] + [str(n) for n in range(101)]
        words += self.task.features
        answer = (json.dumps(plan) + " " if self.task.category == "PG" else "") + " ".join(words)
        call_tool(backend, "finish", {"answer": answer}, session)
        return AgentOutput(answer, len(session.history))


class Copier:
    """A bound: answers with the question and the household's members verbatim. Must score 0 in
    IG, CF, MC and PG (in FR the question's order of the features is its ranking)."""
    name = "copier"

    def run(self, query: str, backend: Any, session: Session, max_steps: int) -> AgentOutput:
        members = call_tool(backend, "get_household_members", {}, session)
        answer = f"{query}\n{json.dumps(members, ensure_ascii=False)}"
        call_tool(backend, "finish", {"answer": answer}, session)
        return AgentOutput(answer, len(session.history))


#: Bound agents and the categories they must score 0 in (the reference must score 1).
BOUNDS = {"null": ("IG", "CF", "MC", "FR", "PG"), "stuffer": ("IG", "CF", "MC", "PG"),
          "copier": ("IG", "CF", "MC", "PG")}


def make_agent(spec: str, task: PersonalTask, base_url: str | None = None, api_key: str | None = None,
               mode: str = "json", tools: bool = True) -> Any:
    """`reference`, a bound (`null`, `stuffer`, `copier`) or `openai:MODEL` (as `twin bench run`;
    `tools=False`: shown finish only, for sole reasoning)."""
    if spec == "reference":
        return ReferenceAgent(task)
    if spec == "null":
        return NullAgent()
    if spec == "stuffer":
        return Stuffer(task)
    if spec == "copier":
        return Copier()
    if spec.startswith("openai:") and len(spec) > len("openai:"):
        return ReActAgent(spec[len("openai:"):], mode=mode, base_url=base_url or os.environ.get("OPENAI_BASE_URL"),
                          api_key=api_key or os.environ.get("OPENAI_API_KEY"), tools=agent_tools(tools),
                          prompt=prompt(mode, tools))
    raise ValueError(f"unknown agent {spec!r}; accepted: reference, null, stuffer, copier, openai:MODEL")


# ---- the LLM judge (only where no rule decides) ------------------------------------------------
class PersonalJudge:
    """An OpenAI-compatible model as the paper's semantic-equivalence judge (Eq. 2) and its
    role-playing judge (RPJ, Algorithm 1, abs mode)."""

    def __init__(self, model: str, base_url: str | None = None, api_key: str | None = None, client: Any = None):
        if client is None:
            import openai
            client = openai.OpenAI(base_url=base_url, api_key=api_key or "none")
        self.client, self.model = client, model
        self.name = f"llm:{model}"

    def _ask(self, system: str, user: str) -> str:
        reply = create_completion(self.client, {
            "model": self.model, "temperature": 0,
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}]})
        return (reply.choices[0].message.content or "").strip()

    def equivalent(self, question: str, truth: str, answer: str) -> bool:
        text = self._ask("You check answers. Reply with exactly YES if the answer means the same as the "
                         "reference answer for the question, else NO.",
                         f"Question: {question}\nReference answer: {truth}\nAnswer: {answer}")
        return text.upper().startswith("YES")

    def rank(self, members: list[dict[str, Any]], situation: str, plans: list[str]) -> list[int] | None:
        """The paper's relative role-play judge: the plans ranked best first, as indices into
        `plans` (shown as Plan A, B, ...); None if the reply is not a ranking of all of them."""
        letters = [chr(ord("A") + i) for i in range(len(plans))]
        shown = "\n\n".join(f"Plan {letter}:\n{plan}" for letter, plan in zip(letters, plans, strict=True))
        text = self._ask(
            "You play each member of a household in turn, then the household as a whole, and rank an "
            "assistant's candidate plans from the one you would be most satisfied with to the least. Reply "
            "with JSON only: {\"ranking\": [\"<plan letter>\", ...]} naming every plan once.",
            f"Household members:\n{json.dumps(members, ensure_ascii=False)}\n\nSituation: {situation}\n\n{shown}")
        match = re.search(r"\{.*\}", text, re.DOTALL)
        try:
            ranking = [str(x).strip().upper() for x in json.loads(match.group(0))["ranking"]] if match else None
        except (TypeError, KeyError, json.JSONDecodeError):
            return None
        if ranking is None or sorted(ranking) != letters:
            return None
        return [letters.index(x) for x in ranking]

    def role_play(self, members: list[dict[str, Any]], situation: str, plan: str) -> dict[str, Any]:
        """{"overall": 1-5, "members": {id: 1-5}}; a reply that is not that JSON scores None."""
        text = self._ask(
            "You play each member of a household in turn, then the household as a whole, and score how "
            "satisfied you would be with an assistant's plan, from 1 (not at all) to 5 (fully). Reply "
            "with JSON only: {\"overall\": n, \"members\": {\"<member id>\": n, ...}}.",
            f"Household members:\n{json.dumps(members, ensure_ascii=False)}\n\nSituation: {situation}\n\n"
            f"Plan:\n{plan}")
        match = re.search(r"\{.*\}", text, re.DOTALL)
        try:
            data = json.loads(match.group(0)) if match else None
            scores = {"overall": int(data["overall"]),
                      "members": {str(k): int(v) for k, v in dict(data.get("members", {})).items()}}
        except (TypeError, ValueError, KeyError, json.JSONDecodeError):
            return {"overall": None, "members": {}, "error": "the judge did not reply with the scores JSON"}
        if not all(1 <= v <= 5 for v in [scores["overall"], *scores["members"].values()]):
            return {"overall": None, "members": {}, "error": "a score is outside 1-5"}
        return scores


# ---- scoring ---------------------------------------------------------------------------------
def plan_steps(answer: str | None) -> list[Any] | None:
    """The plan's steps: the first plan in the answer (json_plans; None: there is none)."""
    lists = json_plans(answer) if answer else []
    return lists[0][2] if lists else None


def score_plan(task: PersonalTask, household: Household, answer: str | None,
               decided: bool = False) -> dict[str, Any]:
    """Run the plan on a fork; validity per step (a scheduled workflow counts once it has run
    every step by the arrival), then the arrival checks: a check is met when the value is in
    place at the arrival in the home as the plan found it, the other members' acts until then
    left out (the plan set it, or it was already there: what others do meanwhile, undoing it or
    doing the plan's work, is not the plan's).
    One plan: an answer holding two, or words withdrawing or doubting its plan, leave no steps.
    `decided`: a plan with no steps, or an invalid one, fails whatever the checks say: its
    preference is not computed (None)."""
    one = answer is not None and plans_in(answer) == 1 and not WITHDRAWN.search(prose_of(answer)) \
        and not doubts(RECOMMENDS.sub(" ", plain(prose_of(answer))))
    steps = (plan_steps(answer) or []) if one else []
    if decided and not steps:
        return {"steps": 0, "validity": 0.0, "preference": None}
    fork, results = _run_plan(task, household, steps)
    valid = sum(bool(r["ok"]) for r in results)
    # A workflow is valid once every step of it ran (scheduling checks only the arguments' shape).
    ran = {w["id"]: w["status"] == "completed" and all(s["status"] == "ok" for s in w["steps"])
           for w in fork.backend.workflows()}
    valid -= sum(1 for r in results if r["ok"] and "workflow_id" in r and not ran.get(r["workflow_id"]))
    if decided and valid < len(steps):
        return {"steps": len(steps), "validity": valid / len(steps), "preference": None}
    quiet, _ = _run_plan(task, household, steps, quiet=True)
    met = [_meets(quiet, check) for check in task.checks]
    return {"steps": len(steps), "validity": valid / len(steps) if steps else 0.0,
            "preference": sum(met) / len(task.checks) if task.checks else 0.0}


def _run_plan(task: PersonalTask, household: Household, steps: list[Any],
              quiet: bool = False) -> tuple[Household, list[dict[str, Any]]]:
    """The plan's steps on a fork, then the clock to just after the arrival, the resident's own
    arrival left out (`quiet`: every member's acts until then left out)."""
    fork = household.fork()
    results = []
    for step in steps:
        ok = isinstance(step, dict) and step.get("tool") in PLAN_TOOLS and isinstance(step.get("args"), dict)
        results.append(call_tool(fork.backend, step["tool"], step["args"]) if ok else {"ok": False})
    resident, day = task.params["resident"], task.params["day"]
    arrival = datetime.strptime(task.params["arrival"], TIME_FORMAT)
    skipped = [(a.resident, a.name) for a in fork.acts(arrival.date()) if a.time >= fork.home.now] if quiet \
        else [(resident, "back")]
    fork.edits += [{"kind": "skip", "resident": rid, "act": act, "day": day} for rid, act in skipped]
    fork.simulate(arrival + timedelta(minutes=1))
    return fork, results


def _meets(fork: Household, check: dict[str, Any]) -> bool:
    cluster, attribute = check["attribute"].split(".")
    try:
        value = fork.backend.read_attribute(check["device"], check["endpoint"], cluster, attribute)["value"]
    except Exception:   # a device the plan broke or removed: the check is not met
        return False
    tolerance = LEVEL_TOLERANCE if attribute == "CurrentLevel" else 0
    return bool(value == check["value"] or (tolerance and isinstance(value, int)
                                            and abs(value - check["value"]) <= tolerance))


def score(task: PersonalTask, answer: str | None, household: Household | None,
          judge: PersonalJudge | None = None, decided: bool = False) -> dict[str, Any]:
    """A task's answer scored; only a plan (PG) needs the household, lived to the task's time."""
    out: dict[str, Any] = {}
    if task.category in ("IG", "CF", "MC"):
        answer = unwrapped(answer)
    if task.category in ("IG", "CF"):
        truth = task.answer or ""
        out["exact"] = exact_match(answer, truth)
        correct = answer_matches(truth, answer, task.question, *_facts(household))
        if not correct and judge is not None and answer:
            correct = judge.equivalent(task.question, truth, answer)
        out["success"] = correct
        if task.counterfactual is not None:
            out["changed"] = task.counterfactual["changed"]
    elif task.category == "MC":
        out["choice"] = choice(answer, task.options)
        out["success"] = out["choice"] == task.answer and not _made_up(task, answer, household)
    elif task.category == "FR":
        ranked = ranking(answer, task.features)
        out.update({"ap1": average_precision(ranked, task.relevant, 1),
                    "ap3": average_precision(ranked, task.relevant, 3),
                    "rrs": rank_deviation(ranked, task.relevant, len(task.features))})
        out["success"] = out["ap1"] == 1.0 and not _made_up(task, answer, household)
    else:
        if household is None:
            raise ValueError(f"{task.id}: a plan is scored on its household")
        out.update(score_plan(task, household, answer, decided))
        out["success"] = out["validity"] == 1.0 and out["preference"] == 1.0 \
            and not _made_up(task, prose_of(answer or ""), household)
        if judge is not None:
            out["rpj"] = judge.role_play(household.members(), task.question, answer or "")
    return out


def _facts(household: Household | None) -> tuple[list[dict[str, Any]], dict[str, str], list[str] | None,
                                                  list[dict[str, Any]]]:
    """What an answer's claims are checked against: the members, the rooms, the devices and the pets."""
    if household is None:
        return [], {}, None, []
    return (household.members(), {rid: room.name for rid, room in household.home.rooms.items()},
            list(household.home.devices), household.about().get("pets", []))


def _made_up(task: PersonalTask, answer: str | None, household: Household | None) -> bool:
    """An answer beside its choice, ranking or plan claims what the household does not support."""
    if not answer or household is None:
        return False
    members, rooms, devices, pets = _facts(household)
    return made_up(answer, members, rooms, devices, task.question, pets)


# ---- the paper's tool-usage error taxonomy ---------------------------------------------------------
#: The paper's error types, from what the one tool vocabulary answers (bridge/tools.py) and the replies.
ERROR_TYPES = ("INVALID_TOOL_NAME", "MISSING_ARGUMENTS", "UNEXPECTED_ARGUMENTS", "EXECUTION_ERROR",
               "UPSTREAM_FORMAT_ERROR", "EMPTY_OUTPUT")


def tool_errors(history: list[dict[str, Any]], unusable_replies: int | None, answer: str | None) -> dict[str, int]:
    """How many of each error type one task's attempt made: failed calls by their error (an unknown
    tool; arguments missing, or ones the tool does not take; any other failure at execution),
    replies that could not be used, and no (or an empty) final answer."""
    out = dict.fromkeys(ERROR_TYPES, 0)
    for call in history:
        error = call["result"].get("error") if not call["result"].get("ok") else None
        if error is None:
            continue
        message = error.get("message", "")
        kind = ("INVALID_TOOL_NAME" if error.get("code") == "UNKNOWN_TOOL"
                else "MISSING_ARGUMENTS" if error.get("code") == "INVALID_ARGUMENT" and "missing" in message
                else "UNEXPECTED_ARGUMENTS" if error.get("code") == "INVALID_ARGUMENT" and "unknown argument" in message
                else "EXECUTION_ERROR")
        out[kind] += 1
    out["UPSTREAM_FORMAT_ERROR"] = unusable_replies or 0
    out["EMPTY_OUTPUT"] = int(not (answer or "").strip())
    return out


# ---- running ---------------------------------------------------------------------------------
def lived(task: PersonalTask, base: Path) -> Household:
    household = Household.from_spec(load_spec(base, task.household), source=task.household)
    household.simulate(task.at)
    return household


def run_task(task: PersonalTask, agent: Any, base: Path, judge: PersonalJudge | None = None,
             max_steps: int = MAX_STEPS, household: Household | None = None, decided: bool = False,
             tools: bool = True, anonymise: bool = False, reflect: bool = False, extra: str = "",
             serve: Serve = in_process) -> dict[str, Any]:
    """One task; `household` (already lived to the task's time) is forked instead of living it again.
    `decided`: only success matters (validation), so a plan already invalid is not run on.
    `serve`: how the agent reaches the household's home (in process, or over Matter:
    scenarios/over_matter.py); the household tools answer in process either way, and the answer
    is scored in process on the household whose home the agent worked on.
    The paper's settings: `tools=False` (sole reasoning) puts the household's members and memory
    in the query; `anonymise` asks the ID-based question (member ids for names), and reads the
    ids in the answer back as names. `reflect`: a failed attempt is tried once more from the same
    start, the question followed by the first answer and the judge's verdict on it (`extra`)."""
    if reflect:   # both attempts start from the same lived household
        household = household if household is not None else lived(task, base)
        first = run_task(task, agent, base, judge, max_steps, household, decided, tools, anonymise, serve=serve)
        if first["success"]:
            return {**first, "reflection": {"first_success": True}}
        feedback = (f"\n\nYour previous answer was:\n{first.get('answer') or '(none)'}\nThe judge found it "
                    f"wrong ({feedback_of(first)}). Think again and answer anew.")
        again = run_task(task, agent, base, judge, max_steps, household, decided, tools, anonymise,
                         extra=feedback, serve=serve)
        return {**again, "reflection": {"first_success": False, "first_answer": first.get("answer")}}
    household = household.fork() if household is not None else lived(task, base)
    session = Session(tools=household_tools(household))
    question = (anonymised(task.question, household) if anonymise else task.question) + extra
    query = question if tools else f"{sole_context(household)}\n\nQuestion: {question}"
    with serve(household.home) as backend:
        output = agent.run(query, HouseholdBackend(household, backend), session, max_steps)
    answer = named(session.answer, household) if anonymise else session.answer
    result = {"task_id": task.id, "category": task.category, "difficulty": task.difficulty,
              "setting": {"tools": tools, "anonymised": anonymise},
              "agent": agent.name, "answer": session.answer, "tool_calls": len(session.history),
              **({"error": output.error} if output.error else {}),
              **({"replies": output.replies, "unusable_replies": output.unusable_replies}
                 if output.replies is not None else {}),
              "tool_errors": tool_errors(session.history, output.unusable_replies, session.answer)}
    return {**result, **score(task, answer, household, judge, decided)}


def feedback_of(result: dict[str, Any]) -> str:
    """The judge's verdict on an attempt, in words (the scores it gave)."""
    shown = {k: result[k] for k in ("exact", "choice", "ap1", "ap3", "validity", "preference") if k in result}
    return ", ".join(f"{k} {v}" for k, v in shown.items()) or "not the answer"


def run(tasks: list[PersonalTask], agent_factory: Callable[[PersonalTask], Any], out: Path, base: Path,
        judge: PersonalJudge | None = None, max_steps: int = MAX_STEPS, progress: bool = False,
        tools: bool = True, anonymise: bool = False, reflect: bool = False,
        serve: Serve = in_process) -> list[dict[str, Any]]:
    """Run the tasks not yet in `out` through the one runner (scenarios/runner.py): results to
    `out`/results.jsonl (each keyed by "episode_id", the task id), resumable; a task in which no reply
    of the model could be used is not recorded, so a rerun retries it. Returns the new records.
    `serve`: as `run_task` (a `MatterServing` serves each task's household home over Matter)."""
    def run_item(task: PersonalTask) -> dict[str, Any]:
        return {"episode_id": task.id, **run_task(task, agent_factory(task), base, judge, max_steps,
                                                  tools=tools, anonymise=anonymise, reflect=reflect, serve=serve)}
    # One worker: the tasks' households are simulated in process, and the judge keeps no lock.
    return run_items(tasks, None, None, out, workers=1, progress=progress, run_item=run_item)


def summarize(results: list[dict[str, Any]]) -> dict[str, Any]:
    """The paper's figures per category (Table 8): accuracies, CF macro, MAP@1/3 and RRS, PG
    validity; then the reactive categories per difficulty (easy, medium, hard)."""
    def mean(values: list[float]) -> float | None:
        return round(sum(values) / len(values), 3) if values else None
    by: dict[str, list[dict[str, Any]]] = {}
    for r in results:
        by.setdefault(r["category"], []).append(r)
    out: dict[str, Any] = {}
    for cat in ("IG", "MC"):
        if cat in by:
            out[cat] = {"n": len(by[cat]), "accuracy": mean([float(r["success"]) for r in by[cat]])}
    if "CF" in by:
        changed = mean([float(r["success"]) for r in by["CF"] if r.get("changed")])
        unchanged = mean([float(r["success"]) for r in by["CF"] if not r.get("changed")])
        out["CF"] = {"n": len(by["CF"]), "changed": changed, "unchanged": unchanged,
                     "macro": mean([x for x in (changed, unchanged) if x is not None])}
    if "FR" in by:
        out["FR"] = {"n": len(by["FR"]), "map1": mean([r["ap1"] for r in by["FR"]]),
                     "map3": mean([r["ap3"] for r in by["FR"]]), "rrs": mean([r["rrs"] for r in by["FR"]])}
    if "PG" in by:
        rpj = [r["rpj"]["overall"] for r in by["PG"] if r.get("rpj", {}).get("overall") is not None]
        out["PG"] = {"n": len(by["PG"]), "validity": mean([r["validity"] for r in by["PG"]]),
                     "preference": mean([r["preference"] for r in by["PG"]]),
                     **({"rpj_abs": mean(rpj)} if rpj else {})}
    # Reflection: the share solved at the first attempt, beside the final accuracy.
    first = {cat: mean([float(r["reflection"]["first_success"]) for r in rows])
             for cat, rows in by.items() if all("reflection" in r for r in rows)}
    if first:
        out["first_attempt"] = first
    # The tool-usage error taxonomy: each type's mean count per task, by category (Fig. 8).
    errors = {cat: {kind: mean([float(r["tool_errors"][kind]) for r in rows]) for kind in ERROR_TYPES}
              for cat, rows in by.items() if all("tool_errors" in r for r in rows)}
    if errors:
        out["tool_errors"] = errors
    # The reactive categories (IG, CF, MC) by difficulty, as the paper reports them.
    for level in ("easy", "medium", "hard"):
        rows = [r for r in results if r.get("difficulty") == level and r["category"] in ("IG", "CF", "MC")]
        if rows:
            out[level] = {"n": len(rows), "accuracy": mean([float(r["success"]) for r in rows]),
                          **{c: mean([float(r["success"]) for r in rows if r["category"] == c])
                             for c in ("IG", "CF", "MC") if any(r["category"] == c for r in rows)}}
    return out


# ---- the relative role-play judge: plans of several runs, ranked -----------------------------------
def win_rates(tasks: list[PersonalTask], runs: dict[str, list[dict[str, Any]]], base: Path,
              judge: PersonalJudge) -> dict[str, Any]:
    """The PG tasks every run answered: the judge ranks the runs' plans (in a seeded order per
    task, so no run always comes first); a run's win rate is the share it ranked first. A reply
    that ranks no plan leaves the task undecided."""
    answers = {name: {r["episode_id"]: r.get("answer") or "" for r in results} for name, results in runs.items()}
    names = list(runs)
    wins = dict.fromkeys(names, 0)
    decided = undecided = 0
    for task in tasks:
        if task.category != "PG" or not all(task.id in answers[n] for n in names):
            continue
        order = list(names)
        random.Random(f"rpj/{task.id}").shuffle(order)
        members = Household.from_spec(load_spec(base, task.household), source=task.household).members()
        ranking = judge.rank(members, task.question, [answers[n][task.id] for n in order])
        if ranking is None:
            undecided += 1
            continue
        decided += 1
        wins[order[ranking[0]]] += 1
    return {"tasks": decided, "undecided": undecided,
            "win_rate": {n: round(wins[n] / decided, 3) if decided else None for n in names}}


# ---- validating the set -------------------------------------------------------------------------
def household_sample(tasks: list[PersonalTask], at_least: int, seed: int) -> list[PersonalTask]:
    """Whole households, in a seeded order, until they hold `at_least` tasks; in the set's order.
    (A household lives once for all its tasks, so validating part of one saves little.)"""
    names = sorted({t.household for t in tasks})
    random.Random(f"personal-sample/{seed}").shuffle(names)
    count = Counter(t.household for t in tasks)
    chosen: set[str] = set()
    for name in names:
        if sum(count[n] for n in chosen) >= at_least:
            break
        chosen.add(name)
    return [t for t in tasks if t.household in chosen]


#: {agent: {category: [successes, runs]}}: how each agent validation runs did, per category.
Tally = dict[str, dict[str, list[int]]]


def validate(tasks: list[PersonalTask], base: Path, progress: Callable[[], None] | None = None,
             jobs: int = 1, tally: Tally | None = None) -> list[str]:
    """Problems with the set (none: every answer recomputes from the simulation, every CF by
    replay, the reference solves every task of every category and the null / bound agents none
    of theirs): one line each. Each household lives once, its tasks in time order on forks of it;
    `jobs` processes share the households. `tally`, when given, gathers each agent's successes
    and runs per category (`bounds_line` says them in one line)."""
    groups: dict[str, list[PersonalTask]] = {}
    for task in tasks:
        groups.setdefault(task.household, []).append(task)
    work = [(base, group) for group in groups.values()]
    problems: list[str] = []
    totals: Tally = tally if tally is not None else {}

    def add(found: tuple[list[str], Tally]) -> None:
        problems.extend(found[0])
        for agent, cats in found[1].items():
            for cat, (won, runs) in cats.items():
                counts = totals.setdefault(agent, {}).setdefault(cat, [0, 0])
                counts[0] += won
                counts[1] += runs

    if jobs > 1:
        import multiprocessing
        with multiprocessing.get_context("spawn").Pool(jobs) as pool:
            for (_, group), found in zip(work, pool.imap(_validate_household, work), strict=True):
                add(found)
                for _ in group if progress is not None else ():
                    progress()
        return problems
    for item in work:
        add(_validate_household(item))
        for _ in item[1] if progress is not None else ():
            progress()
    return problems


def bounds_line(tally: Tally) -> str:
    """Each agent's success rate per category in the set's category order, e.g. "reference IG 1.0
    (1000), ...; null IG 0.0 (1000), ..." (tasks run in brackets)."""
    return "; ".join(agent + " " + ", ".join(f"{cat} {cats[cat][0] / cats[cat][1]:.3g} ({cats[cat][1]})"
                                           for cat in CATEGORIES if cat in cats)
                     for agent, cats in tally.items())


def _validate_household(job: tuple[Path, list[PersonalTask]]) -> tuple[list[str], Tally]:
    base, tasks = job
    name = tasks[0].household
    try:
        spec = load_spec(base, name)
    except UserFileError:
        return [f"{t.id}: household {name} is missing" for t in tasks], {}
    problems: list[str] = []
    tally: Tally = {}
    household = Household.from_spec(spec, source=name)
    # The household lives once: the tasks in time order on forks of it, and FR and PG, which
    # read the whole day they are about, checked against its memory once it has lived that far.
    later: list[PersonalTask] = []
    for task in sorted(tasks, key=lambda t: (t.at, t.id)):
        where = task.id
        household.simulate(task.at)
        if task.category in ("IG", "MC", "CF"):
            truth = solve(task.template or "", *household_view(household), task.params)
            if task.category == "CF":
                cf = task.counterfactual or {}
                replay = household.counterfactual(cf["day"], cf["edit"], day_end(cf["day"]))
                truth = solve(task.template or "", *household_view(replay), task.params)
                if (normalize(truth) != normalize(cf.get("original_answer") or "")) != cf.get("changed"):
                    problems.append(f"{where}: the replay says changed={not cf.get('changed')}")
            elif task.category == "MC":
                truth = "ABCDE"[[o.lower() for o in task.options].index(truth.lower())] \
                    if truth.lower() in [o.lower() for o in task.options] else f"(not an option: {truth})"
            if truth != task.answer:
                problems.append(f"{where}: the simulation answers {truth!r}, the task says {task.answer!r}")
        else:
            later.append(task)
        bounds = [(spec, False) for spec, categories in BOUNDS.items() if task.category in categories]
        for spec, must in [("reference", True)] + bounds:
            result = run_task(task, make_agent(spec, task), base, household=household, decided=True)
            counts = tally.setdefault(spec, {}).setdefault(task.category, [0, 0])
            counts[0] += bool(result["success"])
            counts[1] += 1
            if bool(result["success"]) != must:
                problems.append(f"{where}: the {spec} agent {'fails' if must else 'succeeds'} "
                                f"({feedback_of(result)})")
    ends = [f"{t.params['day']} 23:59:59" for t in later]
    if ends and max(ends) > household.home.clock.format():
        household.simulate(max(ends))
    records = household.memory
    for task in later:
        resident, day = task.params["resident"], task.params["day"]
        if task.category == "FR":
            days = sorted({r["time"][:10] for r in records if r["time"][:10] < day})
            if relevant_features(records, resident, days)[:3] != task.relevant:
                problems.append(f"{task.id}: the simulation ranks other features first")
        elif arrival_checks(records, resident, day) != task.checks:
            problems.append(f"{task.id}: the simulation leaves other values on arrival")
    return problems, tally
