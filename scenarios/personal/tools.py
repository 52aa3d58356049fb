"""PersonalHomeBench's household tools: the household's members, its memory and what a room
holds now. A suite's own tools (bridge.tools.ToolSet): `household_tools(household)` gives the
set bound to one household, and a session that carries it answers them beside the core tools.
"""
from __future__ import annotations

import datetime as _dt
from typing import Any

from pydantic import Field

from bridge.backend import INVALID_ARGUMENT, NOT_FOUND, Backend, ToolError
from bridge.tools import Session, ToolSet, room_states, tool_schemas
from scenarios.personal.household import Household
from twin.tool_arguments import Arguments, Integer, Text

_DAY = "Date \"YYYY-MM-DD\"; optional."
_ROOM = "Room id, as listed by get_rooms (e.g. \"living_room\")."
MEMORY_KINDS = ("action", "change", "event", "presence", "room", "life")


class GetHouseholdMembers(Arguments):
    """Get the household's members: who they are (name, age, role, persona), their habits and
    preferences (wake, leave, back and bed times, preferred temperature and light level,
    hobbies), and where each is now (a room id or "away"); with the household's kind and pets."""


class SearchHouseholdMemory(Arguments):
    """Search the household's memory: what happened in the home, in time order. Records are
    residents' device actions ("action"), device values that changed and who caused them
    ("change"), device events ("event"), residents moving, leaving and coming home
    ("presence"), hourly room temperature, humidity, illuminance and PM10 ("room"), and life
    events in words ("life": a sick day, guests, working late, ...)."""
    query: Text = Field(None, description="Words that must all appear in a record's text "
                        "(e.g. \"dishwasher Start\"); none: every record.")
    member: Text = Field(None, description="Only records of this member (id or name).")
    room_id: Text = Field(None, description="Only records about this room.")
    kind: Text = Field(None, description="Only this kind: action, change, event, presence, room or life.")
    date: Text = Field(None, description=_DAY)
    offset: Integer = Field(None, ge=0, description="Skip this many matches (paging; default 0).")
    limit: Integer = Field(None, ge=1, le=200, description="At most this many records (1-200; default 50).")


class PerceiveRoom(Arguments):
    """Perceive a room now: who is in it, which of its devices are switched on, and its
    environmental states (as get_room_states reports them)."""
    room_id: Text = Field(description=_ROOM)


MODELS: dict[str, type[Arguments]] = {
    "get_household_members": GetHouseholdMembers, "search_household_memory": SearchHouseholdMemory,
    "perceive_room": PerceiveRoom,
}


def _search(household: Household, backend: Backend, args: SearchHouseholdMemory) -> dict[str, Any]:
    kind = args.kind
    if kind is not None and kind not in MEMORY_KINDS:
        raise ToolError(INVALID_ARGUMENT, f"unknown record kind {kind!r}", accepted=list(MEMORY_KINDS))
    member = args.member
    if member is not None:
        ids = {m["id"]: m["id"] for m in household.members()}
        ids.update({m["name"].lower(): m["id"] for m in household.members()})
        if member.lower() not in ids and member not in ids:
            raise ToolError(NOT_FOUND, f"there is no member {member!r}",
                            accepted=[m["id"] for m in household.members()])
        member = ids.get(member, ids.get(member.lower()))
    room = args.room_id
    if room is not None:
        backend.room_states(room)   # NOT_FOUND with the room ids if there is no such room
    day = args.date
    if day is not None:
        try:
            _dt.date.fromisoformat(day)
        except ValueError:
            raise ToolError(INVALID_ARGUMENT, f"date {day!r} is not \"YYYY-MM-DD\"") from None
    words = (args.query or "").lower().split()
    found = [r for r in household.memory
             if (kind is None or r["kind"] == kind) and (member is None or r["actor"] == member)
             and (room is None or r["room"] == room) and (day is None or r["time"].startswith(day))
             and all(w in r["text"].lower() for w in words)]
    offset = 0 if args.offset is None else args.offset
    limit = 50 if args.limit is None else args.limit
    page = found[offset:offset + limit]
    return {"total": len(found), "offset": offset, "records": [
        {k: r[k] for k in ("time", "kind", "actor", "room", "device", "text", "detail")} for r in page]}


def _perceive(household: Household, backend: Backend, args: PerceiveRoom) -> dict[str, Any]:
    states = room_states(backend, args.room_id)
    on = []
    for device in backend.room_devices(args.room_id):
        try:
            if backend.read_attribute(device["device_id"], None, "OnOff", "OnOff")["value"]:
                on.append(device["device_id"])
        except ToolError:   # a device without OnOff (a sensor, blinds) is neither on nor off
            continue
    return {**states, "people": household.present(args.room_id), "devices_on": on}


def household_tools(household: Household) -> ToolSet:
    """The household tools, answering from `household` (its members, memory and presence)."""
    def members(backend: Backend, args: GetHouseholdMembers, session: Session) -> dict[str, Any]:
        return {"members": household.members(), **household.about()}

    def search(backend: Backend, args: SearchHouseholdMemory, session: Session) -> dict[str, Any]:
        return _search(household, backend, args)

    def perceive(backend: Backend, args: PerceiveRoom, session: Session) -> dict[str, Any]:
        return _perceive(household, backend, args)
    return ToolSet(MODELS, {"get_household_members": members, "search_household_memory": search,
                            "perceive_room": perceive})


#: The tools' schemas (no household needed to describe them): agents get TOOL_SCHEMAS + these.
SCHEMAS = tool_schemas(MODELS)
