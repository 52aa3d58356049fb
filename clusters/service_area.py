"""Service Area cluster server (Matter 1.4, 1.17, revision 1) for a robot vacuum. Feature:
ProgressReporting.

The areas are the rooms of the home the robot lives in (one map, so no Maps feature): each room
is an area whose LocationDescriptor names the room, with the area type matched from the room's
name where the spec has one (kitchen, bedroom, ...). SelectAreas picks the rooms the next run
cleans (an empty list: every room). A run cleans the selected rooms one after another: the
cleaning cycle of the current RVC Clean Mode is the time for the whole home, so a run over some
rooms takes their share of it (`plan_cycle`, asked by RVC Run Mode when cleaning starts), split
evenly between them. CurrentArea and Progress move at each room's end, a discrete event in
virtual time; a run that ends early leaves the rooms it did not finish Skipped. SkipArea
skips the current room (the run moves on to the next at once) or a pending one; either way the
run is shorter by the time that room had left.
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from chip.clusters.Types import NullValue

from clusters.base import TICKS_PER_SECOND, Clusters, ClusterServer
from clusters.status import MatterError, Status

SA = Clusters.ServiceArea
RvcOpState = Clusters.RvcOperationalState
AreaStatus = SA.Enums.OperationalStatusEnum
Select = SA.Enums.SelectAreasStatus
AreaType = Clusters.Globals.Enums.AreaTypeTag
MAX_AREAS = 255
MAX_NAME = 128


def _key(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


_AREA_TYPES = {_key(m.name[1:]): m for m in AreaType if m.name != "kUnknownEnumValue"}


def area_type(name: str) -> Any:
    """The spec's AreaTypeTag for a room name ("Living room", "living" -> LivingRoom), or null."""
    key = re.sub(r"[0-9]+$", "", _key(name))   # "bedroom2" is a bedroom
    return _AREA_TYPES.get(key, _AREA_TYPES.get(key + "room", NullValue))


class ServiceAreaServer(ClusterServer):
    cluster = SA
    revision = 1
    attributes = ("SupportedAreas", "SelectedAreas", "CurrentArea", "Progress")
    commands = ("SelectAreas", "SkipArea")
    notes = ("Areas are the rooms of the home (areaID 1, 2, ... in the home's room order).",
             "SelectAreas picks the rooms the next run cleans; [] means every room. While a run is "
             "under way it answers InvalidInMode (no SelectWhileRunning).",
             "A run cleans the selected rooms in order, each for an equal share of the cleaning "
             "cycle's time scaled to the selection; CurrentArea and Progress follow.",
             "SkipArea skips the current room (the robot moves on to the next) or a pending one; "
             "the run is shorter by the time that room had left. It needs a non-empty SelectedAreas "
             "(InvalidAreaList) and a run under way that still has the room ahead (InvalidInMode).")

    def __init__(self, areas: Iterable[str] = (), **initial: Any):
        names = list(areas)
        if not 1 <= len(names) <= MAX_AREAS or len(set(names)) != len(names) \
                or any(not 0 < len(n) <= MAX_NAME for n in names):
            raise MatterError(Status.CONSTRAINT_ERROR,
                              f"ServiceArea needs 1..{MAX_AREAS} distinct area names of 1..{MAX_NAME} "
                              f"characters; got {names!r}")
        self._names = names
        super().__init__(feature_map=int(SA.Bitmaps.Feature.kProgressReporting), **initial)
        #: the run under way: area ids in cleaning order and the work ticks of each one's end
        self._plan: dict[str, Any] | None = None
        self._base_cycle: list[tuple[str, int]] | None = None   # the unscaled cycle we last scaled
        self._scaled_cycle: list[tuple[str, int]] | None = None

    def defaults(self) -> dict[str, Any]:
        S = SA.Structs
        areas = [S.AreaStruct(areaID=i, mapID=NullValue, areaInfo=S.AreaInfoStruct(
            locationInfo=Clusters.Globals.Structs.LocationDescriptorStruct(
                locationName=name, floorNumber=NullValue, areaType=area_type(name)),
            landmarkInfo=NullValue)) for i, name in enumerate(self._names, start=1)]
        return {"SupportedAreas": areas, "SelectedAreas": [], "CurrentArea": NullValue, "Progress": []}

    def area_ids(self) -> list[int]:
        return [a.areaID for a in self.get("SupportedAreas")]

    def area_name(self, area_id: int) -> str:
        return next(a.areaInfo.locationInfo.locationName for a in self.get("SupportedAreas") if a.areaID == area_id)

    def _ops(self) -> Any:
        return self.sibling(RvcOpState)

    # ---- commands ----------------------------------------------------------------
    def _respond(self, status: Select, text: str = "") -> Any:
        return SA.Commands.SelectAreasResponse(status=status, statusText=text)

    def SelectAreas(self, request: Any) -> Any:
        new = list(dict.fromkeys(request.newAreas))   # duplicates count once
        supported = self.area_ids()
        unknown = [a for a in new if a not in supported]
        if unknown:
            return self._respond(Select.kUnsupportedArea,
                                 f"no area {unknown[0]}; areas: "
                                 + ", ".join(f"{a} ({self.area_name(a)})" for a in supported))
        if new == list(self.get("SelectedAreas")):
            return self._respond(Select.kSuccess)
        ops = self._ops()
        if ops is not None and ops.in_operation:
            return self._respond(Select.kInvalidInMode,
                                 "a run is under way; set RVC Run Mode to Idle to choose other areas")
        self.set("SelectedAreas", new)
        return self._respond(Select.kSuccess)

    # ---- the run -----------------------------------------------------------------
    def plan_cycle(self, cycle: list[tuple[str, int]]) -> list[tuple[str, int]]:
        """The cleaning cycle for the selected rooms: each phase scaled to their share of the
        home. Called by RVC Run Mode just before a run starts."""
        if cycle == self._scaled_cycle and self._base_cycle is not None:
            cycle = self._base_cycle   # the operational state kept our last scaled cycle
        chosen = len(self.get("SelectedAreas")) or len(self.area_ids())
        share = [(name, max(1, seconds * chosen // len(self.area_ids()))) for name, seconds in cycle]
        self._base_cycle, self._scaled_cycle = list(cycle), share
        return share

    def attach(self) -> None:
        ops = self._ops()
        if ops is not None:
            ops.listeners.append(self._operation_changed)

    def _operation_changed(self, server: Any, name: str) -> None:
        if name != "OperationalState":
            return
        if self._plan is None and server.in_operation:
            self._start(server)
        elif self._plan is not None and not server.in_operation:
            self._finish(server.last_worked)   # the run ended (completed, or stopped early)

    def _start(self, ops: Any) -> None:
        order = list(self.get("SelectedAreas")) or self.area_ids()
        total = ops.cycle_ticks()
        ends = [total * (i + 1) // len(order) for i in range(len(order))]
        #: ends: work ticks at which each area's turn ends (moved by skips); slots: each area's
        #: planned work ticks; worked: for a skipped area, the ticks it got before the skip
        self._plan = {"areas": order, "ends": ends, "index": 0,
                      "slots": [e - (ends[n - 1] if n else 0) for n, e in enumerate(ends)],
                      "worked": [None] * len(order)}
        self._store_progress()

    def _store_progress(self) -> None:
        plan = self._plan
        assert plan is not None
        S, i = SA.Structs, plan["index"]
        progress = []
        for n, (area, slot, worked) in enumerate(zip(plan["areas"], plan["slots"], plan["worked"])):
            if worked is not None:
                status, spent = AreaStatus.kSkipped, worked // TICKS_PER_SECOND
            elif n < i:
                status, spent = AreaStatus.kCompleted, slot // TICKS_PER_SECOND
            else:
                status, spent = AreaStatus.kOperating if n == i else AreaStatus.kPending, NullValue
            progress.append(S.ProgressStruct(areaID=area, status=status, totalOperationalTime=spent,
                                             estimatedTime=slot // TICKS_PER_SECOND))
        self.set("Progress", progress)
        self.set("CurrentArea", plan["areas"][i] if i < len(plan["areas"]) else NullValue)

    def _finish(self, worked_ticks: int) -> None:
        """The run ended: rooms whose time was worked are Completed, the rest Skipped."""
        plan = self._plan
        assert plan is not None
        self._plan = None
        S, progress = SA.Structs, []
        for area, end, slot, skipped in zip(plan["areas"], plan["ends"], plan["slots"], plan["worked"]):
            done = skipped is None and worked_ticks >= end
            spent = skipped if skipped is not None else min(max(worked_ticks - (end - slot), 0), slot)
            progress.append(S.ProgressStruct(
                areaID=area, status=AreaStatus.kCompleted if done else AreaStatus.kSkipped,
                totalOperationalTime=spent // TICKS_PER_SECOND, estimatedTime=slot // TICKS_PER_SECOND))
        self.set("Progress", progress)
        self.set("CurrentArea", NullValue)

    def _last_live(self) -> int:
        """The position of the run's last area that is not skipped (-1: none)."""
        assert self._plan is not None
        return max((n for n, w in enumerate(self._plan["worked"]) if w is None), default=-1)

    def next_event_tick(self) -> int | None:
        plan, ops = self._plan, self._ops()
        if plan is None or ops is None or plan["index"] >= self._last_live():
            return None   # the last room ends with the run (OperationCompletion)
        origin = ops.run_origin()
        return None if origin is None else origin + plan["ends"][plan["index"]]

    def advance_to(self, tick: int) -> None:
        while (due := self.next_event_tick()) is not None and due <= tick:
            self._next_area()

    def _next_area(self) -> None:
        plan = self._plan
        assert plan is not None
        plan["index"] += 1
        while plan["index"] < len(plan["areas"]) and plan["worked"][plan["index"]] is not None:
            plan["index"] += 1   # skipped areas are passed over
        self._store_progress()

    def SkipArea(self, request: Any) -> Any:
        """Skip an area of the run under way: the current one (the robot moves on to the next
        area now) or one still pending (the run leaves it out). Either way the run is shorter
        by the time the area had left, and its Progress entry reads Skipped."""
        Skip, area = SA.Enums.SkipAreaStatus, request.skippedArea

        def respond(status: Any, text: str = "") -> Any:
            return SA.Commands.SkipAreaResponse(status=status, statusText=text)
        if not self.get("SelectedAreas"):   # per spec, even though an empty selection cleans every room
            return respond(Skip.kInvalidAreaList)
        if area not in self.area_ids():
            return respond(Skip.kInvalidSkippedArea,
                           f"no area {area}; areas: " + ", ".join(map(str, self.area_ids())))
        plan, ops = self._plan, self._ops()
        if plan is None or ops is None or not ops.in_operation:
            return respond(Skip.kInvalidInMode, "no cleaning run is under way; set RVC Run Mode to Cleaning first")
        name = f"area {area} ({self.area_name(area)})"
        if area not in plan["areas"]:
            return respond(Skip.kInvalidInMode, f"{name} is not part of this run")
        j = plan["areas"].index(area)
        if plan["worked"][j] is not None or j < plan["index"]:
            done = "skipped" if plan["worked"][j] is not None else "done"
            return respond(Skip.kInvalidInMode, f"{name} is already {done}")
        elapsed = ops.run_elapsed()
        start = plan["ends"][j] - plan["slots"][j]
        left = plan["ends"][j] - max(elapsed, start)
        plan["worked"][j] = max(elapsed - start, 0)
        for k in range(plan["index"], j):
            plan["ends"][k] += left   # the areas before it keep their real times
        if j == plan["index"]:
            self._next_area()          # moves on now, even while paused
        else:
            self._store_progress()
        ops.skip_work(left)            # the run ends `left` sooner (now, if nothing is left)
        return respond(Skip.kSuccess)

    def private_state(self) -> dict[str, Any]:
        return {"plan": self._plan, "base_cycle": self._base_cycle, "scaled_cycle": self._scaled_cycle}

    def load_private_state(self, state: dict[str, Any]) -> None:
        self._plan = plan = state.get("plan")
        if plan is not None and "slots" not in plan:   # saved before SkipArea existed
            ends = plan["ends"]
            plan["slots"] = [e - (ends[n - 1] if n else 0) for n, e in enumerate(ends)]
            plan["worked"] = [None] * len(ends)
        self._base_cycle = [tuple(p) for p in state["base_cycle"]] if state.get("base_cycle") else None
        self._scaled_cycle = [tuple(p) for p in state["scaled_cycle"]] if state.get("scaled_cycle") else None

    def stop_motion(self) -> None:
        self._plan = None   # the run does not survive a power cut (RVC Operational State restarts too)
        self._values["CurrentArea"] = NullValue
