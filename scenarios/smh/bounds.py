"""Validity bounds for SMH-Bench's verifier: agents that must score 0 where they game a weakness.

- `NullAgent` (scenarios/agents/simple.py): answers at once, does nothing; must fail everything.
- `ActOnEverything`: switches on every device that can be switched, then says it is done; must
  fail TC3 (it never asks), TC4 (it makes no rule) and TC7 (it changes the home and states no
  answer). (On a home of nothing but lights, "turn on all the lights" is truly done by it, so
  TC1/TC2 are not in its list.)
- `KeywordStuffer`: changes nothing and answers with yes and no, every number from 0 to 100
  and every room: a judge that looks for the right words must not pass it; fails everything.
- `AnswerCopier`: reads the whole home and returns the tool output verbatim; fails everything.
"""
from __future__ import annotations

import json
from typing import Any

from bridge.tools import Session, call_tool
from scenarios.agent import AgentOutput
from scenarios.agents.simple import NullAgent
from scenarios.smh.tasks import CATEGORIES


def _finish(backend: Any, session: Session, answer: str) -> AgentOutput:
    call_tool(backend, "finish", {"answer": answer}, session)
    return AgentOutput(answer, len(session.history))


class ActOnEverything:
    name = "act-all"

    def run(self, query: str, backend: Any, session: Session, max_steps: int) -> AgentOutput:
        for device in call_tool(backend, "query_home", {}, session)["devices"]:
            call_tool(backend, "execute_command", {"device.id": device["device_id"], "endpoint.id": 1,
                                                   "cluster.id": "OnOff", "command.id": "On", "args": {}}, session)
        return _finish(backend, session, "Done, everything is on.")


class KeywordStuffer:
    name = "stuffer"

    def run(self, query: str, backend: Any, session: Session, max_steps: int) -> AgentOutput:
        rooms = ", ".join(r["name"] for r in call_tool(backend, "get_rooms", {}, session)["rooms"])
        numbers = " ".join(str(n) for n in range(101))
        return _finish(backend, session, f"Yes. No. {numbers}. {rooms}.")


class AnswerCopier:
    name = "copier"

    def run(self, query: str, backend: Any, session: Session, max_steps: int) -> AgentOutput:
        found = call_tool(backend, "query_home", {"rooms_only": True}, session)
        return _finish(backend, session, json.dumps(found))


#: name -> (agent, the categories it must score 0 on)
BOUND_AGENTS: dict[str, tuple[Any, tuple[str, ...]]] = {
    "null": (NullAgent(), CATEGORIES),
    "act-all": (ActOnEverything(), ("TC3", "TC4", "TC7")),
    "stuffer": (KeywordStuffer(), CATEGORIES),
    "copier": (AnswerCopier(), CATEGORIES),
}
