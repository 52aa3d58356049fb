"""A ReAct agent over any OpenAI-compatible chat API (SimuHome Appendix N, O.1).

Two protocols:
- `json`: SimuHome's own. Each reply is one JSON object {"thought", "action", "action_input"}
  with action_input a JSON string of arguments; the tool result comes back as the next user
  message ("Observation: ..."). The system prompt is our wording of the paper's ReAct prompt.
- `tools`: native function calling with `bridge.tools.TOOL_SCHEMAS`.

The loop stops at `finish` or after `max_steps` model turns. Token counts are summed from
the API's usage fields when the server reports them.
"""
from __future__ import annotations

import json
import re
from typing import Any

from bridge.tools import TOOL_SCHEMAS, Session, call_tool
from scenarios.agent import AgentOutput
from scenarios.model_api import create_completion

SYSTEM_PROMPT = """You are a smart-home assistant. You fulfil the user's request by calling tools that \
read and control Matter devices in the home.

HOW YOU WORK (ReAct)
- Repeat: think, pick ONE tool and its arguments, read the observation, think again.
- When the request is fully handled, call the tool "finish" with your final answer for the user.
{protocol}

RULES
- Use only the tool names listed below, spelled exactly.
- Never guess or invent facts: check them with tools (rooms with get_rooms, devices and their ids with \
get_room_devices, room conditions with get_room_states, the time with get_current_time).
- Tell apart questions (answer them) and requests to change something (do it).
- If a room or device does not exist, say so plainly in the final answer.
- Name the device ids, room ids and room values you relied on.
- If the user's relative and absolute times disagree, or the timing otherwise does not add up, do not \
act: explain the conflict to the user.
- The user's claims may be wrong (the time, a device, a finish time). Trust the tools, not the claims.
- Never report success you have not seen confirmed; if something failed, say why.
- Speak plainly to the user, without jargon.

DEVICES
Types: on_off_light (light), dimmable_light (dimmer light), air_conditioner, air_purifier, tv, heat_pump, \
humidifier, dehumidifier, window_covering (blinds), dishwasher, laundry_washer (washer), laundry_dryer \
(dryer), fan, robot_vacuum_cleaner, freezer, refrigerator, electrical_sensor. A "light" is not a \
"dimmer light".

MATTER
- A device has endpoints; an endpoint has clusters; a cluster has attributes and commands. Use the \
exact ids the tools return.
- If unsure how to control something, read get_device_structure and get_cluster_doc.
- Appliances with an OperationalState cluster: CountdownTime (seconds) tells when a running cycle ends.
- Devices often must be on (OnOff On) before other settings are accepted.

UNITS
get_room_states reports temperature and humidity in hundredths (2350 = 23.50 °C, 5500 = 55.00 %), \
illuminance in lux and PM10 in µg/m³.

SCHEDULING
- schedule_workflow runs its steps at an absolute virtual time "YYYY-MM-DD HH:MM:SS". Compute it from \
get_current_time. A scheduled workflow is only accepted, not yet executed: make sure every step's \
parameters are right before scheduling.

TOOLS
{tools}"""

JSON_PROTOCOL = """- Every reply is exactly one JSON object and nothing else:
  {"thought": "...", "action": "<tool name>", "action_input": "<the arguments as a JSON string>"}
  e.g. {"thought": "I have the answer.", "action": "finish", "action_input": "{\\"answer\\": \\"...\\"}"}"""
TOOLS_PROTOCOL = "- Call tools through function calls; give your reasoning briefly in the message text."


def tool_list(schemas: list[dict[str, Any]] = TOOL_SCHEMAS) -> str:
    lines = []
    for schema in schemas:
        fn = schema["function"]
        params = fn["parameters"]["properties"]
        required = set(fn["parameters"].get("required", ()))
        args = ", ".join(f"{k}{'' if k in required else '?'}" for k in params)
        lines.append(f"- {fn['name']}({args}): {fn['description']}")
    return "\n".join(lines)


def system_prompt(mode: str) -> str:
    return SYSTEM_PROMPT.format(protocol=JSON_PROTOCOL if mode == "json" else TOOLS_PROTOCOL, tools=tool_list())


def parse_step(text: str) -> tuple[str, Any]:
    """(action, arguments) from a JSON-protocol reply; ValueError says what is wrong."""
    match = re.search(r"\{.*\}", text or "", re.DOTALL)
    if not match:
        raise ValueError("the reply has no JSON object; answer with {\"thought\", \"action\", \"action_input\"}")
    try:
        step = json.loads(match.group(0))
    except json.JSONDecodeError as exc:
        raise ValueError(f"the reply is not valid JSON ({exc.msg})") from None
    if not isinstance(step, dict) or not isinstance(step.get("action"), str):
        raise ValueError("the JSON object needs a string \"action\"")
    raw = step.get("action_input", "{}")
    if isinstance(raw, str):
        try:
            raw = json.loads(raw) if raw.strip() else {}
        except json.JSONDecodeError as exc:
            raise ValueError(f"action_input is not a JSON string of arguments ({exc.msg})") from None
    return step["action"], raw


def thought_of(text: str) -> str | None:
    """The "thought" of a JSON-protocol reply, if it has one."""
    match = re.search(r"\{.*\}", text or "", re.DOTALL)
    try:
        step = json.loads(match.group(0)) if match else None
    except json.JSONDecodeError:
        return None
    thought = step.get("thought") if isinstance(step, dict) else None
    return thought if isinstance(thought, str) and thought.strip() else None


def _note_thought(session: Session, first_call: int, thought: str | None) -> None:
    """Keep the assistant's text with the first tool call it led to: the trace shows why.
    Only LLM agents think aloud, so the reference agent's histories are unchanged."""
    if thought and len(session.history) > first_call:
        session.history[first_call]["thought"] = thought


class ReActAgent:
    def __init__(self, model: str, mode: str = "json", base_url: str | None = None,
                 api_key: str | None = None, client: Any = None, temperature: float = 0.0,
                 timeout: float = 120.0, tools: list[dict[str, Any]] | None = None,
                 prompt: str | None = None):
        if mode not in ("json", "tools"):
            raise ValueError(f"mode {mode!r} is not accepted; use 'json' or 'tools'")
        if client is None:
            import openai
            client = openai.OpenAI(base_url=base_url, api_key=api_key or "none", timeout=timeout)
        self.client = client
        self.model = model
        self.mode = mode
        self.temperature = temperature
        #: Another benchmark's tool list and system prompt (scenarios/personal); default SimuHome's.
        self.tools = TOOL_SCHEMAS if tools is None else tools
        self.prompt = prompt
        self.name = f"openai:{model}" + ("" if mode == "json" else ":tools")

    def run(self, query: str, backend: Any, session: Session, max_steps: int) -> AgentOutput:
        system = self.prompt if self.prompt is not None else system_prompt(self.mode)
        messages: list[dict[str, Any]] = [{"role": "system", "content": system},
                                          {"role": "user", "content": query}]
        tokens = [0, 0]
        replies = unusable = 0
        for _ in range(max_steps):
            kwargs: dict[str, Any] = {"model": self.model, "messages": messages, "temperature": self.temperature}
            if self.mode == "tools":
                kwargs["tools"] = self.tools
            reply = create_completion(self.client, kwargs)
            replies += 1
            if reply.usage is not None:
                tokens[0] += reply.usage.prompt_tokens or 0
                tokens[1] += reply.usage.completion_tokens or 0
            message = reply.choices[0].message
            if self.mode == "json":
                usable = self._json_turn(message.content or "", messages, backend, session)
            else:
                usable = self._tools_turn(message, messages, backend, session)
            unusable += not usable
            if session.finished:
                return AgentOutput(session.answer, len(session.history), *tokens, replies=replies,
                                   unusable_replies=unusable)
        return AgentOutput(None, len(session.history), *tokens, error=f"no finish within {max_steps} steps",
                           replies=replies, unusable_replies=unusable)

    def _json_turn(self, text: str, messages: list, backend: Any, session: Session) -> bool:
        """One reply in the JSON protocol; False when it held no step to take (unusable)."""
        messages.append({"role": "assistant", "content": text})
        try:
            action, args = parse_step(text)
        except ValueError as exc:
            observation: dict[str, Any] = {"ok": False, "error": {"code": "INVALID_STEP", "message": str(exc)}}
            usable = False
        else:
            first_call = len(session.history)
            observation = call_tool(backend, action, args, session)
            _note_thought(session, first_call, thought_of(text))
            usable = True
        messages.append({"role": "user", "content": "Observation: " + json.dumps(observation, ensure_ascii=False)})
        return usable

    def _tools_turn(self, message: Any, messages: list, backend: Any, session: Session) -> bool:
        """One reply with function calling; False when none of its calls had JSON arguments."""
        calls = message.tool_calls or []
        messages.append({"role": "assistant", "content": message.content or "",
                         **({"tool_calls": [c.model_dump() for c in calls]} if calls else {})})
        if not calls:  # plain text: treat it as the final answer
            call_tool(backend, "finish", {"answer": message.content or ""}, session)
            return True
        first_call = len(session.history)
        usable = False
        for call in calls:
            try:
                args = json.loads(call.function.arguments or "{}")
            except json.JSONDecodeError as exc:
                result: dict[str, Any] = {"ok": False, "error": {"code": "INVALID_ARGUMENT",
                                                                 "message": f"arguments are not JSON ({exc.msg})"}}
            else:
                result = call_tool(backend, call.function.name, args, session)
                usable = True
            messages.append({"role": "tool", "tool_call_id": call.id,
                             "content": json.dumps(result, ensure_ascii=False)})
            _note_thought(session, first_call, (message.content or "").strip())
            if session.finished:
                break
        return usable
