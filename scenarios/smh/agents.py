"""Agents for SMH-Bench in either setting: `reference`, `null`, the bound agents, `openai:MODEL`.

EIA agents are `scenarios.agent.Agent`s; an OpenAI-compatible model runs as the ReAct agent
(scenarios/agents/react.py) with SimuHome's tools plus the home tools and a prompt of ours. DR
agents are functions (prompt, serialized home) -> reply; a model answers in one chat turn.
"""
from __future__ import annotations

import os
from typing import Any

from bridge.tools import TOOL_SCHEMAS
from scenarios.agents.react import ReActAgent, tool_list
from scenarios.model_api import create_completion
from scenarios.smh.bounds import BOUND_AGENTS
from scenarios.smh.evaluate import DirectAgent
from scenarios.smh.reference import ReferenceAgent, direct_reference
from scenarios.smh.suite import SUITE

AGENTS = ("reference", *BOUND_AGENTS, "openai:MODEL")
EIA_PROMPT = """You are a smart-home assistant. Do what the user asks by calling tools, then call \
"finish" with your reply. query_home finds devices and rooms across the whole home in one call \
(by type, room, floor, tags, states) and reads their attributes; the automation tools create \
persistent rules (time, device-state, room-state and time-and-state triggers). If the request \
leaves out something you need, ask the user (ask_user) before changing anything. Change only \
what the request is about.
{protocol}

TOOLS
{tools}"""
JSON_PROTOCOL = """- Every reply is exactly one JSON object and nothing else:
  {"thought": "...", "action": "<tool name>", "action_input": "<the arguments as a JSON string>"}"""


def tool_schemas() -> list[dict[str, Any]]:
    return TOOL_SCHEMAS + SUITE.tools(None).schemas


def _openai(spec: str, base_url: str | None, api_key: str | None) -> tuple[str, str | None, str | None]:
    return (spec[len("openai:"):], base_url or os.environ.get("OPENAI_BASE_URL"),
            api_key or os.environ.get("OPENAI_API_KEY"))


def make_agent(spec: str, base_url: str | None = None, api_key: str | None = None, mode: str = "json") -> Any:
    """An EIA agent."""
    if spec == "reference":
        return ReferenceAgent()
    if spec in BOUND_AGENTS:
        return BOUND_AGENTS[spec][0]
    if spec.startswith("openai:") and len(spec) > len("openai:"):
        model, url, key = _openai(spec, base_url, api_key)
        protocol = JSON_PROTOCOL if mode == "json" else "- Call tools through function calls."
        return ReActAgent(model, mode=mode, base_url=url, api_key=key, tools=tool_schemas(),
                          prompt=EIA_PROMPT.format(protocol=protocol, tools=tool_list(tool_schemas())))
    raise ValueError(f"unknown agent {spec!r}; accepted: {', '.join(AGENTS)}")


def make_direct(spec: str, base_url: str | None = None, api_key: str | None = None) -> DirectAgent:
    """A DR agent: the prompt and the serialized home in, one JSON reply out."""
    if spec == "reference":
        return direct_reference
    if spec in BOUND_AGENTS:
        return lambda prompt, state: '{"mode": "execute", "response": "Okay.", "actions": []}'
    if spec.startswith("openai:") and len(spec) > len("openai:"):
        import openai
        model, url, key = _openai(spec, base_url, api_key)
        client = openai.OpenAI(base_url=url, api_key=key or "none", timeout=120.0)

        def ask(prompt: str, state: dict[str, Any]) -> str:
            reply = create_completion(client, {"model": model, "temperature": 0.0,
                                               "messages": [{"role": "user", "content": prompt}]})
            return reply.choices[0].message.content or ""
        return ask
    raise ValueError(f"unknown agent {spec!r}; accepted: {', '.join(AGENTS)}")
