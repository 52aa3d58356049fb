"""Adversarial agents: validity bounds for the judges, next to the reference solver and null agent.

Each one games a different weakness a scorer could have, and must score 0 % on the categories
listed in its `must_fail` (`twin bench validate` and the tests check it):

- `KeywordStuffer` reads every device, changes nothing, and answers with every stock refusal
  phrase, every room and device of the home, the user's query and the clock times in it. It
  tests that a judge wants the answer to be about this episode, not keyword recall.
- `ActOnEverything` performs every plausible command on every device in the rooms the query
  names, then answers as the reference solver would. It tests that acting on an infeasible
  request fails however good the words are (and that timed goals are not met by acting now).
- `AnswerCopier` reads everything and returns the tool observations verbatim as its answer.
  It tests that raw data is not taken for an explanation.
"""
from __future__ import annotations

import json
import re
from typing import Any

from bridge.tools import Session, call_tool
from scenarios.agent import AgentOutput
from scenarios.simuhome import actions as A
from scenarios.simuhome.reference import ReferenceAgent
from scenarios.simuhome.schema import CATEGORIES

INFEASIBLE = tuple(c for c in CATEGORIES if c.endswith("-IF"))
#: Stock refusal phrases of every problem kind (missing device, limits, timing).
STOCK_PHRASES = ("I cannot do that.", "There is no such device.", "The device was not found.",
                 "There is a conflict.", "It is already at its limit.")
_CLOCK = re.compile(r"\b\d{1,2}:\d{2}\s*(?:[AP]M)?", re.IGNORECASE)
#: Command arguments for "every plausible command" (mid-range values).
ACT_SLOTS = {"level": 100, "pct": 50, "deg": 20.0, "n": 1}


def _read_everything(backend: Any, session: Session) -> list[dict[str, Any]]:
    """get_rooms, the time, and every room's states and devices, every device's attributes."""
    rooms = call_tool(backend, "get_rooms", {}, session).get("rooms", [])
    call_tool(backend, "get_current_time", {}, session)
    devices = []
    for room in rooms:
        call_tool(backend, "get_room_states", {"room.id": room["room_id"]}, session)
        found = call_tool(backend, "get_room_devices", {"room.id": room["room_id"]}, session)
        for device in found.get("devices", []):
            call_tool(backend, "get_all_attributes", {"device.id": device["device_id"]}, session)
            devices.append({**device, "room_id": room["room_id"], "room_name": room["name"]})
    return devices


def _finish(backend: Any, session: Session, answer: str) -> AgentOutput:
    call_tool(backend, "finish", {"answer": answer}, session)
    return AgentOutput(answer, len(session.history))


class KeywordStuffer:
    """Recall without precision: every problem phrase, every name, the query itself."""
    name = "stuffer"
    must_fail = CATEGORIES  # it never acts (feasible QT2-QT4) and never answers a question

    def run(self, query: str, backend: Any, session: Session, max_steps: int) -> AgentOutput:
        devices = _read_everything(backend, session)
        rooms = sorted({(d["room_id"], d["room_name"]) for d in devices})
        parts = list(STOCK_PHRASES)
        parts += [f"{name} ({room_id})." for room_id, name in rooms]
        parts += [f"{d['device_id']} ({d.get('name') or d['device_type']})." for d in devices]
        parts += [query, " ".join(_CLOCK.findall(query))]
        return _finish(backend, session, " ".join(p for p in parts if p))


class ActOnEverything:
    """Every plausible command on every device of the rooms the query names, then the
    reference solver's own answer (so only the acting can fail it)."""
    name = "act-all"
    #: Acting is never right on an infeasible request, and a question (QT1-F) is not a command.
    #: Feasible QT2-QT4 are not here: the simulator checks the goals, not side effects on other
    #: devices (as SimuHome does), so it passes where its moves happen to leave the goals intact.
    must_fail = ("QT1-F",) + INFEASIBLE

    def run(self, query: str, backend: Any, session: Session, max_steps: int) -> AgentOutput:
        rooms = call_tool(backend, "get_rooms", {}, session).get("rooms", [])
        low = query.lower()
        named = [r for r in rooms if r["name"].lower() in low] or rooms
        for room in named:
            found = call_tool(backend, "get_room_devices", {"room.id": room["room_id"]}, session)
            for device in found.get("devices", []):
                for call in self.moves(backend, session, device["device_id"], device["device_type"]):
                    call_tool(backend, call["tool"], call["args"], session)
        return ReferenceAgent().run(query, backend, session, max_steps)

    @staticmethod
    def moves(backend: Any, session: Session, device_id: str, type_key: str) -> list[dict[str, Any]]:
        """Calls that leave the device somewhere else than it was: off if it is on, else every
        action of its type; the other mode, the other end, pause or start for the rest."""
        def read(cluster: str, attribute: str, endpoint: int = 1) -> Any:
            result = call_tool(backend, "get_attribute", {"device.id": device_id, "endpoint.id": endpoint,
                                                          "cluster.id": cluster, "attribute.id": attribute}, session)
            return result.get("value") if result.get("ok") else None
        if type_key == "heat_pump":
            mode = read("Thermostat", "SystemMode", A.THERMOSTAT_ENDPOINT[type_key])
            return A.calls(device_id, type_key, "hp_cool" if mode == 4 else "hp_heat", ACT_SLOTS)
        if type_key == "window_covering":
            lift = read("WindowCovering", "CurrentPositionLiftPercentage") or 0
            return A.calls(device_id, type_key, "open" if lift > 50 else "close", ACT_SLOTS)
        if type_key in A.APPLIANCES:
            if read("OperationalState", "OperationalState") == 1:
                return [A.command(device_id, "OperationalState", "Pause")]
            return A.calls(device_id, type_key, "start", ACT_SLOTS)
        if type_key not in A.ACTIONS:
            return []
        if read("OnOff", "OnOff"):
            return A.calls(device_id, type_key, "off", ACT_SLOTS)
        return [call for action in A.ACTIONS[type_key] if action != "off"
                for call in A.calls(device_id, type_key, action, ACT_SLOTS)]


class AnswerCopier:
    """Reads everything, answers with the raw observations."""
    name = "copier"
    must_fail = CATEGORIES  # it never acts, and raw tool output is no answer

    def run(self, query: str, backend: Any, session: Session, max_steps: int) -> AgentOutput:
        _read_everything(backend, session)
        answer = "\n".join(json.dumps(h["result"], ensure_ascii=False) for h in session.history)
        return _finish(backend, session, answer)


ADVERSARIES = {"stuffer": KeywordStuffer, "act-all": ActOnEverything, "copier": AnswerCopier}
