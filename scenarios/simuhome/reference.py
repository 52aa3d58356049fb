"""The reference solver: a deterministic agent that reads the query's template language and
works only through the SimuHome tools. It never sees the goal.

It is the upper bound the pipeline is checked against: it must solve every feasible episode
on the simulator and pass the rule-based judge on every infeasible one.
"""
from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from bridge.tools import Session, call_tool
from scenarios.agent import AgentOutput
from scenarios.simuhome import actions as A
from scenarios.simuhome import templates as T
from scenarios.simuhome.generate import natural
from scenarios.simuhome.reader import Reader

ASK = {"OnOff": "OnOff", "CurrentLevel": "LevelControl", "PercentCurrent": "FanControl",
       "OccupiedCoolingSetpoint": "Thermostat"}
UNITS = {"temperature": "°C", "humidity": "%", "illuminance": "lux", "pm10": "µg/m³"}
TIME_FORMAT = "%Y-%m-%d %H:%M:%S"


def _phrase(type_key: str, n: int) -> str:
    return f"{T.DEVICE_PHRASES[type_key]} {n}"


class _Run:
    def __init__(self, backend: Any, session: Session):
        self.backend = backend
        self.session = session
        self.room_devices: dict[str, list[dict]] = {}
        self.rooms = {r["name"].lower(): r["room_id"] for r in self.tool("get_rooms")["rooms"]}
        self.now = datetime.strptime(self.tool("get_current_time")["current_time"], TIME_FORMAT)
        self.said: list[str] = []
        self.blocked = False  # an infeasibility was found: act no further

    def tool(self, name: str, args: dict | None = None) -> dict:
        return call_tool(self.backend, name, args or {}, self.session)

    # ---- finding things ----------------------------------------------------------------------
    def room(self, name: str) -> str | None:
        snake = name.replace(" ", "_")
        return self.rooms.get(name) or (snake if snake in self.rooms.values() else None)

    def devices(self, room_id: str) -> list[dict]:
        if room_id not in self.room_devices:
            result = self.tool("get_room_devices", {"room.id": room_id})
            self.room_devices[room_id] = result.get("devices", []) if result.get("ok") else []
        return self.room_devices[room_id]

    def find(self, room_name: str, dev: tuple[str, int]) -> dict | None:
        room_id = self.room(room_name)
        if room_id is None:
            self.missing(f"there is no room called {room_name}")
            return None
        same = [d for d in self.devices(room_id) if d["device_type"] == dev[0]]
        if dev[1] > len(same):
            self.missing(f"there is no {_phrase(*dev)} in the {room_name} ({room_id}); "
                         f"I found {len(same)} {T.DEVICE_PHRASES[dev[0]]}(s) there")
            return None
        return same[dev[1] - 1]

    def missing(self, text: str) -> None:
        self.said.append(f"I can't do that: {text}.")
        self.blocked = True

    def read(self, device_id: str, cluster: str, attribute: str, endpoint: int | None = None) -> Any:
        args = {"device.id": device_id, "cluster.id": cluster, "attribute.id": attribute}
        if endpoint is not None:
            args["endpoint.id"] = endpoint
        result = self.tool("get_attribute", args)
        return result.get("value") if result.get("ok") else None

    def clock(self, text: str, near: datetime) -> datetime:
        """A "8:01 PM" clock time on the day that puts it nearest to `near`."""
        t = datetime.strptime(text.upper().replace(" ", ""), "%I:%M%p")
        base = near.replace(hour=t.hour, minute=t.minute, second=0, microsecond=0)
        return min((base + timedelta(days=k) for k in (-1, 0, 1)), key=lambda x: abs(x - near))

    # ---- actions -------------------------------------------------------------------------------
    def action_calls(self, device: dict, action: str, slots: dict) -> list[dict]:
        mode_id = None
        if action == "start_mode":
            modes = self.read(device["device_id"], A.MODE_CLUSTER[device["device_type"]], "SupportedModes") or []
            match = [m["mode"] for m in modes if m["label"].lower() == slots["mode"]]
            if not match:
                self.missing(f"the {device['device_type']} has no {slots['mode']} mode")
                return []
            mode_id = match[0]
        return A.calls(device["device_id"], device["device_type"], action, slots, mode_id)

    def do_now(self, device: dict, action: str, slots: dict) -> None:
        for call in self.action_calls(device, action, slots):
            result = self.tool(call["tool"], call["args"])
            if not result.get("ok"):
                self.said.append(f"{device['device_id']}: {result['error']['message']}")
        self.said.append(f"Done: {action.replace('_', ' ')} on {device['device_id']}.")

    def schedule(self, when: datetime, device: dict, action: str, slots: dict) -> None:
        steps = self.action_calls(device, action, slots)
        if not steps:
            return
        result = self.tool("schedule_workflow", {"start_time": when.strftime(TIME_FORMAT), "steps": steps})
        if result.get("ok"):
            self.said.append(f"Scheduled {action.replace('_', ' ')} on {device['device_id']} at "
                             f"{when.strftime(TIME_FORMAT)}.")
        else:
            self.said.append(f"Could not schedule {device['device_id']}: {result['error']['message']}")

    def finish_time(self, device: dict) -> datetime | None:
        countdown = self.read(device["device_id"], "OperationalState", "CountdownTime")
        state = self.read(device["device_id"], "OperationalState", "OperationalState")
        if countdown is None or state not in (1, 2):
            return None
        return self.now + timedelta(seconds=countdown)

    # ---- clause handlers -------------------------------------------------------------------------
    def ask_state(self, c: T.Clause) -> None:
        room_id = self.room(c.slots["room"])
        if room_id is None:
            return self.missing(f"there is no room called {c.slots['room']}")
        states = self.tool("get_room_states", {"room.id": room_id})
        state = c.slots["state"]
        self.said.append(f"The {T.STATE_PHRASES[state][0]} in the {c.slots['room']} ({room_id}) is "
                         f"{natural(states, state):g} {UNITS[state]}.")

    def ask_device(self, c: T.Clause) -> None:
        device = self.find(c.slots["room"], c.slots["dev"])
        if device is None:
            return
        attribute = c.slots["attribute"]
        value = self.read(device["device_id"], ASK[attribute], attribute)
        name = f"the {_phrase(*c.slots['dev'])} in the {c.slots['room']} ({device['device_id']})"
        if attribute == "OnOff":
            self.said.append(f"{name[0].upper()}{name[1:]} is {'on' if value else 'off'}.")
        elif attribute == "OccupiedCoolingSetpoint":
            self.said.append(f"The cooling setpoint of {name} is {value / 100:g} °C.")
        else:
            self.said.append(f"The {attribute} of {name} is {value}.")

    def complain(self, c: T.Clause) -> None:
        room_id = self.room(c.slots["room"])
        if room_id is None:
            return self.missing(f"there is no room called {c.slots['room']}")
        state, direction = c.slots["state"], c.slots["direction"]
        self.tool("get_room_states", {"room.id": room_id})
        actuators = [d for d in self.devices(room_id) if d["device_type"] in A.ACTUATORS[(state, direction)]]
        acted = []
        for device in actuators:
            steps = A.strongest(device["device_id"], device["device_type"], state, direction)
            if any(self.read(device["device_id"], cl, at, ep) != v for _, (ep, cl, at, v) in steps):
                for call, _ in steps:
                    self.tool(call["tool"], call["args"])
                acted.append(device["device_id"])
        verb = "raise" if direction == "increase" else "lower"
        if acted:
            self.said.append(f"To {verb} the {state} in the {c.slots['room']} I adjusted {', '.join(acted)}.")
        elif not actuators:
            needed = " or ".join(T.DEVICE_PHRASES[t] for t in A.ACTUATORS[(state, direction)])
            self.missing(f"there is no {needed} in the {c.slots['room']} ({room_id}) that could {verb} "
                         f"the {state}")
        else:
            names = ", ".join(d["device_id"] for d in actuators)
            self.missing(f"in the {c.slots['room']} ({room_id}) every device that could {verb} the {state} "
                         f"({names}) is already at its limit")

    def conflict(self, text: str) -> None:
        self.said.append(f"There is a timing conflict: {text}. I have not scheduled anything; "
                         "please tell me which time you want.")
        self.blocked = True


def _consistent(a: datetime, b: datetime) -> bool:
    return abs((a - b).total_seconds()) <= 60


class ReferenceAgent:
    name = "reference"

    def run(self, query: str, backend: Any, session: Session, max_steps: int) -> AgentOutput:
        r = _Run(backend, session)
        clauses = T.parse_query(query)
        if not _templated(query):   # SimuHome's own free text
            answer = Reader(r, query).act()
            call_tool(backend, "finish", {"answer": answer}, session)
            return AgentOutput(answer, len(session.history))
        # Check every premise before acting on any of them: nothing half-done on a bad request.
        claimed_now = next((c for c in clauses if c.intent == "claim_now"), None)
        last: datetime | None = None
        plan: list[tuple[str, Any]] = []
        for c in clauses:
            if c.intent in ("ask_state", "ask_device", "complain"):
                plan.append((c.intent, c))
                continue
            if c.intent == "claim_now":
                continue
            if c.intent == "deadline":
                self._deadline(r, c)
                continue
            device = r.find(c.slots["room"], c.slots["dev"])
            if device is None:
                continue
            when: datetime | None = None
            if c.intent == "in":
                when = r.now + timedelta(minutes=c.slots["min"])
            elif c.intent == "after_prev":
                when = (last or r.now) + timedelta(minutes=c.slots["min"])
            elif c.intent == "in_at":
                when = r.now + timedelta(minutes=c.slots["min"])
                said = r.clock(c.slots["time"], when)
                if not _consistent(said, when):
                    now_text = T.clock_text(r.now)
                    claim = (f"you said it is {c_time(claimed_now)} now, but " if claimed_now else "")
                    r.conflict(f"{claim}it is actually {now_text} now, so {c.slots['min']} minutes from now is "
                               f"{T.clock_text(when)}, not {T.clock_text(said)}")
                    continue
            elif c.intent.startswith("anchor"):
                anchor = r.find(c.slots["aroom"], c.slots["adev"])
                if anchor is None:
                    continue
                end = r.finish_time(anchor)
                if end is None:
                    r.conflict(f"the {_phrase(*c.slots['adev'])} in the {c.slots['aroom']} is not running, "
                               "so it has no finish time to plan around")
                    continue
                minutes = c.slots.get("min", 0)
                offset = timedelta(minutes=minutes)
                when = end - offset if c.intent == "anchor_before" else end + offset
                if c.intent == "anchor_claim":
                    claimed = r.clock(c.slots["claimed"], end)
                    said = r.clock(c.slots["time"], when)
                    if not _consistent(claimed, end) or not _consistent(said, when):
                        r.conflict(f"the {_phrase(*c.slots['adev'])} actually finishes at {T.clock_text(end)} "
                                   f"(not {T.clock_text(claimed)}), so {minutes} minutes after that is "
                                   f"{T.clock_text(when)}, not {T.clock_text(said)}")
                        continue
                elif c.intent == "anchor_after_at":
                    said = r.clock(c.slots["time"], when)
                    if not _consistent(said, when):
                        r.conflict(f"the {_phrase(*c.slots['adev'])} finishes at {T.clock_text(end)}, so "
                                   f"{minutes} minutes after that is {T.clock_text(when)}, not {T.clock_text(said)}")
                        continue
            last = when
            plan.append(("act", (when, device, c.action, c.slots)))
        if not r.blocked:
            for kind, item in plan:
                if kind == "act":
                    when, device, action, slots = item
                    if when is None:
                        r.do_now(device, action, slots)
                    else:
                        r.schedule(when, device, action, slots)
                else:
                    getattr(r, kind)(item)
        else:  # still answer the questions that can be answered
            for kind, item in plan:
                if kind in ("ask_state", "ask_device"):
                    getattr(r, kind)(item)
        if not clauses:
            r.said.append("I could not understand the request.")
        answer = " ".join(r.said)
        call_tool(backend, "finish", {"answer": answer}, session)
        return AgentOutput(answer, len(session.history))

    @staticmethod
    def _deadline(r: _Run, c: T.Clause) -> None:
        a = r.find(c.slots["aroom"], c.slots["adev"])
        b = r.find(c.slots["room"], c.slots["dev"])
        if a is None or b is None:
            return
        ends = [(r.finish_time(a) or r.now, c.slots["adev"], c.slots["aroom"]),
                (r.finish_time(b) or r.now, c.slots["dev"], c.slots["room"])]
        latest, dev, room = max(ends, key=lambda e: e[0])
        deadline = r.clock(c.slots["time"], latest)
        if latest > deadline + timedelta(minutes=1):
            r.missing(f"both cannot be done by {T.clock_text(deadline)}; the {_phrase(*dev)} in the {room} "
                      f"needs until {T.clock_text(latest)}, the earliest possible completion")
        else:
            r.said.append(f"Both will be done by {T.clock_text(deadline)} (the last at {T.clock_text(latest)}).")


def _templated(query: str) -> bool:
    """Is every sentence one of our templates or fillers? (SimuHome's wording can match one.)"""
    return all(s in T.FILLER or T.parse_sentence(s) is not None for s in T.split_sentences(query))


def c_time(clause: T.Clause | None) -> str:
    return clause.slots["claimed"] if clause is not None else ""
