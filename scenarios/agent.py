"""What every suite's agents are: something that works a request through the tools and answers.

An agent gets the user's request, a `Backend` (the home, in process or over Matter) and the tool
`Session` (which carries the suite's extra tools and its simulated user), and returns an
`AgentOutput`. Suites score what it did from the session's history and the home it left.
"""
from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from bridge.backend import Backend
from bridge.tools import Session
from bridge.twin_backend import TwinBackend
from twin.home import Home


@dataclass
class AgentOutput:
    answer: str | None
    steps: int
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    error: str | None = None
    #: Model agents: replies received, and how many of them could not be used (no parseable step).
    replies: int | None = None
    unusable_replies: int | None = None


class Agent(Protocol):
    name: str

    def run(self, query: str, backend: Backend, session: Session, max_steps: int) -> AgentOutput:
        ...


#: How the agent reaches its copy of the home: given that `Home`, a context that yields the
#: agent's backend (default: `TwinBackend` in process; scenarios/over_matter.py: over Matter).
Serve = Callable[[Home], contextlib.AbstractContextManager[Backend]]


def in_process(home: Home) -> contextlib.AbstractContextManager[Backend]:
    return contextlib.nullcontext(TwinBackend(home))
