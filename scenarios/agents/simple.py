"""The two trivial agents: one that does nothing, one that replays fixed tool calls."""
from __future__ import annotations

from typing import Any

from bridge.tools import Session, call_tool
from scenarios.agent import AgentOutput

NULL_ANSWER = "Okay, I have noted your request."


class NullAgent:
    """Answers at once without looking or acting: the floor of every feasible category."""
    name = "null"

    def run(self, query: str, backend: Any, session: Session, max_steps: int) -> AgentOutput:
        call_tool(backend, "finish", {"answer": NULL_ANSWER}, session)
        return AgentOutput(NULL_ANSWER, len(session.history))


class ScriptedAgent:
    """Makes the given calls in order, then finishes (the generator checks goals with it)."""
    name = "scripted"

    def __init__(self, calls: list[dict[str, Any]], answer: str = "Done."):
        self.calls = calls
        self.answer = answer

    def run(self, query: str, backend: Any, session: Session, max_steps: int) -> AgentOutput:
        for call in self.calls:
            call_tool(backend, call["tool"], call["args"], session)
        call_tool(backend, "finish", {"answer": self.answer}, session)
        return AgentOutput(self.answer, len(session.history))
