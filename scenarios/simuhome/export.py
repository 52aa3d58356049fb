"""Trajectories for training (HomeFlow): benchmark runs as chat fine-tuning data.

- `chat_examples`: every successful episode of the runs as one OpenAI chat fine-tuning line,
  `{"messages": [system, user, assistant tool_calls, tool results, ..., final assistant], "tools":
  [...]}`, in the function-calling protocol of `scenarios.agents.react` (its system prompt and
  `bridge.tools.TOOL_SCHEMAS`), so a model trained on them speaks to the same tools.
- `preference_pairs`: for each episode that one run solved and another failed, `{"input":
  {"messages": [system, user], "tools": [...]}, "preferred_output": [...], "non_preferred_output":
  [...]}` with the two trajectories' assistant/tool messages.
- `replay`: runs an exported line's tool calls again on the episode's starting home and returns
  the results, so a trajectory is checked against the simulator (the export round trip).

Tool results are the ones the run recorded (`history[*].result`, written by `twin bench run`).
"""
from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from bridge.tools import TOOL_SCHEMAS, call_tool
from bridge.twin_backend import TwinBackend
from scenarios.agents.react import system_prompt
from scenarios.simuhome.evaluate import agent_session, build_home
from scenarios.simuhome.schema import Episode


class ExportError(ValueError):
    """A run directory whose results cannot be exported (too old, or not from `twin bench run`)."""


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def trajectory_messages(record: dict[str, Any]) -> list[dict[str, Any]]:
    """The assistant and tool messages of one result record, in the tools protocol."""
    messages: list[dict[str, Any]] = []
    for i, call in enumerate(record["history"]):
        if "result" not in call:
            raise ExportError(f"{record['episode_id']}: the run recorded no tool results "
                              "(made before trajectories were kept); run it again")
        call_id = f"call_{i}"
        messages.append({"role": "assistant", "content": call.get("thought", ""),
                         "tool_calls": [{"id": call_id, "type": "function",
                                         "function": {"name": call["tool"], "arguments": _dumps(call["args"] or {})}}]})
        messages.append({"role": "tool", "tool_call_id": call_id, "content": _dumps(call["result"])})
    if record.get("answer") is not None:
        messages.append({"role": "assistant", "content": record["answer"]})
    return messages


def _prompt(episode: Episode) -> list[dict[str, Any]]:
    return [{"role": "system", "content": system_prompt("tools")}, {"role": "user", "content": episode.query}]


def chat_examples(results: Iterable[dict[str, Any]], episodes: dict[str, Episode]) -> list[dict[str, Any]]:
    """One fine-tuning example per successful record (sorted by episode id, then agent)."""
    examples = []
    for record in sorted(results, key=lambda r: (r["episode_id"], r.get("agent", ""))):
        if not record.get("success") or record["episode_id"] not in episodes:
            continue
        examples.append({"messages": _prompt(episodes[record["episode_id"]]) + trajectory_messages(record),
                         "tools": TOOL_SCHEMAS,
                         "metadata": {"episode_id": record["episode_id"], "agent": record.get("agent")}})
    return examples


def preference_pairs(results: Iterable[dict[str, Any]], episodes: dict[str, Episode]) -> list[dict[str, Any]]:
    """For each episode with both a success and a failure among the records: one pair (the
    first success and first failure by agent name)."""
    by_episode: dict[str, list[dict[str, Any]]] = {}
    for record in results:
        by_episode.setdefault(record["episode_id"], []).append(record)
    pairs = []
    for episode_id in sorted(by_episode):
        if episode_id not in episodes:
            continue
        records = sorted(by_episode[episode_id], key=lambda r: r.get("agent", ""))
        good = next((r for r in records if r.get("success")), None)
        bad = next((r for r in records if not r.get("success")), None)
        if good is None or bad is None:
            continue
        pairs.append({"input": {"messages": _prompt(episodes[episode_id]), "tools": TOOL_SCHEMAS},
                      "preferred_output": trajectory_messages(good),
                      "non_preferred_output": trajectory_messages(bad),
                      "metadata": {"episode_id": episode_id, "preferred_agent": good.get("agent"),
                                   "non_preferred_agent": bad.get("agent")}})
    return pairs


def replay(example: dict[str, Any], episode: Episode) -> list[dict[str, Any]]:
    """The example's tool calls run again on the episode's starting home: their results, in order."""
    home = build_home(episode).fork()
    backend, session = TwinBackend(home), agent_session()
    results = []
    for message in example["messages"]:
        for call in message.get("tool_calls") or ():
            fn = call["function"]
            results.append(call_tool(backend, fn["name"], json.loads(fn["arguments"]), session))
    return results


def recorded_results(example: dict[str, Any]) -> list[dict[str, Any]]:
    """The tool results an example carries, in order."""
    return [json.loads(m["content"]) for m in example["messages"] if m["role"] == "tool"]
