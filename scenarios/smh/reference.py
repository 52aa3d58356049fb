"""SMH-Bench's reference solver: reads the request language (scenarios/smh/language.py), finds
devices and states through what the setting gives it, and never sees the goal.

The same planner serves both settings through a `View`:
- EIA (`ReferenceAgent`): the tools. One `query_home` lists devices (and reads the attributes a
  request needs), `get_rooms`/`query_home` give rooms; `ask_user` asks the simulated user;
  operations are tool calls; rules are `create_automation`; answers go to `finish`.
- DR (`direct_reference`): the serialized home in the prompt; it cannot ask, so a request it
  cannot read becomes a clarification; it returns the one-shot JSON the DR setting replays.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from bridge.tools import Session, call_tool
from scenarios.agent import AgentOutput
from scenarios.smh import language as L


class NeedsClarifying(Exception):
    """The request cannot be read without asking, and nobody can be asked (DR)."""


class View:
    """What the planner may know about the home: devices, rooms, attribute values; asking."""
    devices: dict[str, dict[str, Any]]      # id -> {name, type, room}
    rooms: dict[str, dict[str, Any]]        # id -> {name, floor, states}

    def values(self, attrs: list[str]) -> dict[str, dict[str, Any]]:
        """device id -> {"Cluster.Attribute": value} for every device that has them."""
        raise NotImplementedError

    def ask(self, question: str) -> str:
        raise NeedsClarifying(question)

    def names(self) -> dict[str, str]:
        return {d: v["name"] for d, v in self.devices.items()}


class ToolView(View):
    def __init__(self, backend: Any, session: Session):
        self.backend, self.session = backend, session
        found = self._call("query_home", {})["devices"]
        self.devices = {d["device_id"]: {"name": d["name"], "type": d["device_type"], "room": d["room_id"]}
                        for d in found}
        self._rooms: dict[str, dict[str, Any]] | None = None

    def _call(self, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        return call_tool(self.backend, tool, args, self.session)

    @property
    def rooms(self) -> dict[str, dict[str, Any]]:   # type: ignore[override]
        if self._rooms is None:
            found = self._call("query_home", {"rooms_only": True})["rooms"]
            self._rooms = {r["room_id"]: {"name": r["name"], "floor": r.get("floor", 0), "states": r["states"]}
                           for r in found}
        return self._rooms

    def values(self, attrs: list[str]) -> dict[str, dict[str, Any]]:
        found = self._call("query_home", {"read": attrs})["devices"]
        return {d["device_id"]: {k: v for k, v in d.get("values", {}).items() if v is not None} for d in found}

    def ask(self, question: str) -> str:
        result = self._call("ask_user", {"question": question})
        if not result.get("ok"):
            raise NeedsClarifying(question)
        return str(result["answer"])


class StateView(View):
    """The DR setting's serialized home (`serialize` in scenarios/smh/evaluate.py)."""

    def __init__(self, state: dict[str, Any]):
        self.state = state
        self.devices = {d["id"]: {"name": d["name"], "type": d["type"], "room": d["room"]} for d in state["devices"]}
        self.rooms = {r["id"]: {"name": r["name"], "floor": r.get("floor", 0), "states": r["states"]}
                      for r in state["rooms"]}

    def values(self, attrs: list[str]) -> dict[str, dict[str, Any]]:
        out = {}
        for d in self.state["devices"]:
            got = {a: d["state"][f"1/{a.replace('.', '/')}"] for a in attrs if f"1/{a.replace('.', '/')}" in d["state"]}
            out[d["id"]] = got
        return out


@dataclass
class Plan:
    mode: str = "execute"                  # execute | answer
    calls: list[dict[str, Any]] = field(default_factory=list)
    automations: list[dict[str, Any]] = field(default_factory=list)
    response: str = "Done."


def sections(text: str) -> tuple[list[tuple[str, str]], list[str], str]:
    """(dialogue turns, memory lines, current request) from `scenarios.smh.tasks.prompt`."""
    turns, memory, current = [], [], text.strip()
    for block in text.strip().split("\n\n"):
        if block.startswith("Conversation so far:"):
            for line in block.splitlines()[1:]:
                role, _, said = line.partition(": ")
                turns.append((role, said))
        elif block.startswith("What you remember about the user:"):
            memory = [line[2:] for line in block.splitlines()[1:]]
        else:
            current = block[len("user: "):] if block.startswith("user: ") else block
    return turns, memory, current


def _name(text: str) -> str:
    return text.strip().lower()


class Planner:
    def __init__(self, view: View, text: str):
        self.view = view
        self.turns, self.memory, self.request = sections(text)
        self.by_name = {_name(v["name"]): d for d, v in view.devices.items()}
        self.room_by_name = {_name(v["name"]): r for r, v in view.rooms.items()} if self._needs_rooms() else {}

    def _needs_rooms(self) -> bool:
        return bool(re.search(r"room|temperature|humid|degrees|floor|in there", self.request.lower()))

    def ops(self, text: str) -> list[dict[str, Any]] | None:
        return L.parse_clauses(text, self.view.names())

    def room(self, name: str) -> str:
        return self.room_by_name[_name(name)]

    # ---- reading the request --------------------------------------------------------------
    def plan(self) -> Plan:
        q = L.normalize(self.request)
        for reader in (self.question, self.rule, self.compositional, self.dialogue, self.remembered):
            made = reader(q)
            if made is not None:
                return made
        ops = self.ops(self.request)
        if ops is None:
            ops = self.clarified(q)
        return Plan(calls=[c for op in ops for c in L.calls(op)])

    def clarified(self, q: str) -> list[dict[str, Any]]:
        for kind, (ask, keywords, _) in L.SLOT_REQUESTS.items():
            m = re.match("^" + re.escape(ask.lower().rstrip(".")).replace(r"\{d\}", "(?P<d>.+)") + "$", q)
            if m and m.group("d") in self.by_name:
                said = self.view.ask(f"What {keywords[0]} should the {m.group('d')} be set to?")
                number = re.search(r"\d+", said)
                if number:
                    return [{"op": kind, "device": self.by_name[m.group("d")], "value": int(number.group())}]
        said = self.view.ask("Which devices should change, and how?")
        ops = self.ops(re.sub(r"^please do this:\s*", "", said.strip(), flags=re.I))
        if ops is None:
            raise NeedsClarifying(said)
        return ops

    def question(self, q: str) -> Plan | None:
        m = re.match(r"^is the (.+) on$", q)
        if m and m.group(1) in self.by_name:
            on = self.view.values(["OnOff.OnOff"])[self.by_name[m.group(1)]]["OnOff.OnOff"]
            return Plan("answer", response=f"{'Yes' if on else 'No'}, the {m.group(1)} is {'on' if on else 'off'}.")
        m = re.match(r"^is the (.+) locked$", q)
        if m and m.group(1) in self.by_name:
            state = self.view.values(["DoorLock.LockState"])[self.by_name[m.group(1)]]["DoorLock.LockState"]
            locked = state == L.LOCKED
            return Plan("answer", response=f"{'Yes' if locked else 'No'}, the {m.group(1)} is "
                                           f"{'locked' if locked else 'not locked'}.")
        m = re.match(r"^what temperature is the (.+) set to, in degrees$", q)
        if m and m.group(1) in self.by_name:
            value = self.view.values(["Thermostat.OccupiedHeatingSetpoint"])[self.by_name[m.group(1)]]
            return Plan("answer", response=f"The {m.group(1)} is set to "
                                           f"{value['Thermostat.OccupiedHeatingSetpoint'] / 100:g} degrees.")
        m = re.match(r"^is charging enabled on the (.+)$", q)
        if m and m.group(1) in self.by_name:
            supply = self.view.values(["EnergyEvse.SupplyState"])[self.by_name[m.group(1)]]["EnergyEvse.SupplyState"]
            enabled = supply == L.CHARGING_ENABLED
            return Plan("answer", response=f"{'Yes' if enabled else 'No'}, charging is "
                                           f"{'enabled' if enabled else 'not enabled'} on the {m.group(1)}.")
        m = re.match(r"^is the (.+) charging right now$", q)
        if m and m.group(1) in self.by_name:
            power = self.view.values(["ElectricalPowerMeasurement.ActivePower"])[self.by_name[m.group(1)]]
            charging = power["ElectricalPowerMeasurement.ActivePower"] > 0
            return Plan("answer", response=f"{'Yes' if charging else 'No'}, the {m.group(1)} is "
                                           f"{'charging' if charging else 'not charging'}.")
        m = re.match(r"^what (brightness|fan speed) is the (.+) set to, in percent$", q)
        if m and m.group(2) in self.by_name:
            attr = "LevelControl.CurrentLevel" if m.group(1) == "brightness" else "FanControl.PercentSetting"
            value = self.view.values([attr])[self.by_name[m.group(2)]][attr]
            pct = L.pct_of(value) if m.group(1) == "brightness" else value
            return Plan("answer", response=f"The {m.group(2)} is set to {pct}%.")
        m = re.match(r"^what is the temperature in the (.+), in degrees$", q)
        if m:
            value = self.view.rooms[self.room(m.group(1))]["states"]["temperature"]
            return Plan("answer", response=f"It is {value:.1f} degrees in the {m.group(1)}.")
        if q == "how many lights are on in the home":
            on = self.view.values(["OnOff.OnOff"])
            n = sum(bool(on[d].get("OnOff.OnOff")) for d, v in self.view.devices.items() if v["type"] in L.LIGHT_TYPES)
            return Plan("answer", response=f"{n} lights are on.")
        m = re.match(r"^how many devices are in the (.+) itself \(not counting rooms inside it\)$", q)
        if m:
            room = self.room(m.group(1))
            n = sum(v["room"] == room for v in self.view.devices.values())
            return Plan("answer", response=f"There are {n} devices in the {m.group(1)}.")
        if q == "which room is the most humid":
            room = max(self.view.rooms, key=lambda r: self.view.rooms[r]["states"]["humidity"])
            return Plan("answer", response=f"The {self.view.rooms[room]['name']} is the most humid.")
        m = re.match(r"^how many rooms are warmer than (\d+) degrees$", q)
        if m:
            n = sum(r["states"]["temperature"] > int(m.group(1)) for r in self.view.rooms.values())
            return Plan("answer", response=f"{n} rooms are warmer than {m.group(1)} degrees.")
        return None

    def _condition(self, room: str, state: str, value: str) -> dict[str, Any]:
        return {"type": "room", "room_id": self.room(room), "state": state, "op": ">", "value": int(value)}

    def rule(self, q: str) -> Plan | None:
        trigger: dict[str, Any] | None = None
        m = re.match(r"^(every day|on weekdays) at (\d\d):(\d\d), if the (.+) (temperature|humidity) is above "
                     r"(\d+)(?:%| degrees), (.+)$", q)
        if m:
            days = "*" if m.group(1) == "every day" else "1-5"
            trigger = {"type": "time_and_state", "cron": f"{int(m.group(3))} {int(m.group(2))} * * {days}",
                       "state": self._condition(m.group(4), m.group(5), m.group(6))}
            clause = m.group(7)
        elif m := re.match(r"^(every day|on weekdays) at (\d\d):(\d\d), (.+)$", q):
            days = "*" if m.group(1) == "every day" else "1-5"
            trigger = {"type": "time", "cron": f"{int(m.group(3))} {int(m.group(2))} * * {days}"}
            clause = m.group(4)
        elif m := re.match(r"^when the (.+) (temperature|humidity) rises above (\d+)(?:%| degrees), (.+)$", q):
            trigger = self._condition(m.group(1), m.group(2), m.group(3))
            clause = m.group(4)
        elif (m := re.match(r"^when the (.+?) is switched off, (.+)$", q)) and m.group(1) in self.by_name:
            trigger = {"type": "device", "device_id": self.by_name[m.group(1)], "endpoint_id": 1,
                       "cluster_id": "OnOff", "attribute_id": "OnOff", "op": "==", "value": False}
            clause = m.group(2)
        elif (m := re.match(r"^when the (.+?) (detects someone|reports contact|is unlocked), (.+)$", q)) \
                and m.group(1) in self.by_name:
            cluster, attribute, value = {"detects someone": ("OccupancySensing", "Occupancy", 1),
                                         "reports contact": ("BooleanState", "StateValue", True),
                                         "is unlocked": ("DoorLock", "LockState", L.UNLOCKED)}[m.group(2)]
            trigger = {"type": "device", "device_id": self.by_name[m.group(1)], "endpoint_id": 1,
                       "cluster_id": cluster, "attribute_id": attribute, "op": "==", "value": value}
            clause = m.group(3)
        if trigger is None:
            return None
        ops = self.ops(clause)
        if ops is None:
            return None
        return Plan(automations=[{"trigger": trigger, "steps": [c for op in ops for c in L.calls(op)]}],
                    response="The automation is set up.")

    def _scope(self, phrase: str) -> list[str]:
        if phrase == "in the home":
            return list(self.view.devices)
        floor = int(phrase.rsplit(" ", 1)[1])
        return [d for d, v in self.view.devices.items() if self.view.rooms[v["room"]]["floor"] == floor]

    def compositional(self, q: str) -> Plan | None:
        dev = self.view.devices
        ops: list[dict[str, Any]] | None = None
        if m := re.match(r"^turn (on|off) all the lights (in the home|on floor \d+)$", q):
            ops = [{"op": m.group(1), "device": d} for d in self._scope(m.group(2)) if dev[d]["type"] in L.LIGHT_TYPES]
        elif m := re.match(r"^set all the dimmable lights (in the home|on floor \d+) to (\d+)% brightness$", q):
            ops = [{"op": "brightness", "device": d, "value": int(m.group(2))} for d in self._scope(m.group(1))
                   if dev[d]["type"] in L.OP_TYPES["brightness"]]
        elif m := re.match(r"^set every light that is on and brighter than (\d+)% to (\d+)% brightness$", q):
            values = self.view.values(["OnOff.OnOff", "LevelControl.CurrentLevel"])
            ops = [{"op": "brightness", "device": d, "value": int(m.group(2))} for d in dev
                   if dev[d]["type"] in L.OP_TYPES["brightness"] and values[d].get("OnOff.OnOff")
                   and values[d]["LevelControl.CurrentLevel"] > int(m.group(1)) * 2.54]
        elif m := re.match(r"^turn off the lights in every room where the (humidity|temperature) is above (\d+)"
                           r"(?:%| degrees), except the (.+)$", q):
            spared = self.room(m.group(3))
            rooms = {r for r, v in self.view.rooms.items() if v["states"][m.group(1)] > int(m.group(2)) and r != spared}
            values = self.view.values(["OnOff.OnOff"])
            ops = [{"op": "off", "device": d} for d in dev if dev[d]["room"] in rooms
                   and dev[d]["type"] in L.LIGHT_TYPES and values[d].get("OnOff.OnOff")]
        elif m := re.match(r"^turn off the (?:(two|three) )?(brightest|dimmest) lights? that (?:is|are) on$", q):
            values = self.view.values(["OnOff.OnOff", "LevelControl.CurrentLevel"])
            lit = [(values[d]["LevelControl.CurrentLevel"], d) for d in dev
                   if dev[d]["type"] in L.OP_TYPES["brightness"] and values[d].get("OnOff.OnOff")]
            lit.sort(reverse=m.group(2) == "brightest")
            ops = [{"op": "off", "device": d} for _, d in lit[:("one", "two", "three").index(m.group(1) or "one") + 1]]
        if ops is None:
            return None
        return Plan(calls=[c for op in ops for c in L.calls(op)])

    def dialogue(self, q: str) -> Plan | None:
        said = [t for role, t in self.turns if role == "user"]
        if not said:
            return None
        previous = self.ops(said[-1]) or []
        if m := re.match(r"^sorry, not the (.+), i meant the (.+)$", q):
            wrong, meant = self.by_name[m.group(1)], self.by_name[m.group(2)]
            ops = [{**op, "device": meant} for op in previous if op["device"] == wrong]
            reply = [t for role, t in self.turns if role == "assistant"][-1].lower()
            before = re.search(r"before, it was (off|on at (\d+)% brightness)", reply)
            assert before is not None
            undo = {"op": "off", "device": wrong} if before.group(1) == "off" else \
                {"op": "brightness", "device": wrong, "value": int(before.group(2))}
            return Plan(calls=[c for op in [undo, *ops] for c in L.calls(op)])
        if m := re.match(r"^turn on the (.+) in there too$", q):
            room = self.view.devices[previous[-1]["device"]]["room"]
            here = [d for d, v in self.view.devices.items() if v["room"] == room and m.group(1) in _name(v["name"])]
            return Plan(calls=L.calls({"op": "on", "device": here[0]}))
        if re.search(r"\bits?\b", q) and previous:
            name = self.view.devices[previous[-1]["device"]]["name"].lower()
            text = re.sub(r"\bits fan speed\b", f"the fan speed of the {name}", q)
            text = re.sub(r"\bits\b", f"the {name}", re.sub(r"\bit\b", f"the {name}", text))
            text = re.sub(r"^now ", "", text).replace(f"make the {name} cool to", f"cool with the {name} at")
            text = text.replace(f"turn the {name} off", f"turn off the {name}").replace(
                f"turn the {name} on", f"turn on the {name}")
            ops = self.ops(text)
            if ops is not None:
                return Plan(calls=[c for op in ops for c in L.calls(op)])
        return None

    def remembered(self, q: str) -> Plan | None:
        if not self.memory:
            return None
        if m := re.match(r"^set the (.+) the same way i had the (.+) earlier$", q):
            for line in self.memory:
                found = re.match(r"^earlier today the user asked you to (.+)\.$", line.lower())
                ops = self.ops(found.group(1)) if found else None
                if ops and self.view.devices[ops[0]["device"]]["name"].lower() == m.group(2):
                    op = {**ops[0], "device": self.by_name[m.group(1)]}
                    return Plan(calls=L.calls(op))
        for line in self.memory:
            found = re.match(r'^when the user says "(.+)", they want you to (.+)\.$', line.lower())
            if found and L.normalize(found.group(1)) == q:
                ops = self.ops(found.group(2))
                if ops is not None:
                    return Plan(calls=[c for op in ops for c in L.calls(op)])
        return None


class ReferenceAgent:
    """EIA: works only through the tools, the dialogue and the user's answers."""
    name = "reference"

    def run(self, query: str, backend: Any, session: Session, max_steps: int) -> AgentOutput:
        view = ToolView(backend, session)
        try:
            plan = Planner(view, query).plan()
        except NeedsClarifying as exc:
            call_tool(backend, "finish", {"answer": f"I could not tell what you want: {exc}"}, session)
            return AgentOutput(session.answer, len(session.history))
        for call in plan.calls:
            call_tool(backend, call["tool"], call["args"], session)
        for rule in plan.automations:
            call_tool(backend, "create_automation", rule, session)
        call_tool(backend, "finish", {"answer": plan.response}, session)
        return AgentOutput(session.answer, len(session.history))


def direct_reference(prompt_text: str, state: dict[str, Any]) -> str:
    """DR: the one-shot JSON answer from the serialized home (no tools, no asking)."""
    try:
        plan = Planner(StateView(state), prompt_text).plan()
    except NeedsClarifying as asked:   # the question it would have asked
        return json.dumps({"mode": "clarify", "response": str(asked)})
    return json.dumps({"mode": plan.mode, "response": plan.response, "actions": plan.calls,
                       "automations": plan.automations})
