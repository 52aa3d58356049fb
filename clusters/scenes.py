"""Groups (Matter 1.3, 1.3, revision 4) and Scenes Management (1.4, revision 1) cluster servers.

Both tables are fabric-scoped: each fabric sees and changes only its own groups and scenes.
Over Matter the accessing fabric is the session's; local callers (the simulation, tools in
process) use fabric index 0, which no commissioned fabric can have, so they never mix with a
controller's table. Group *messaging* (multicast to a group id) is not modelled: membership is
kept, reported and honoured by Scenes (a scene in group G needs the endpoint to be in G).

A scene is a set of (cluster, attribute, value) triples of the scene-capable attributes of the
endpoint's other clusters (SCENE_ATTRIBUTES). StoreScene captures where the endpoint is heading
(a moving level or cover counts at its target); RecallScene drives the siblings through their
own commands over the scene's transition time, so transitions, motion and reporting behave as if
a client had sent them. SceneValid stays true until one of those attributes heads elsewhere.
"""
from __future__ import annotations

from typing import Any

from chip.clusters.Types import NullValue

from clusters.base import Clusters, ClusterServer, current_access
from clusters.lazy_objects import CLUSTER_ID
from clusters.status import MatterError, Status

GR = Clusters.Groups
SM = Clusters.ScenesManagement
LOCAL_FABRIC = 0          # fabric index of in-process callers (never a real fabric's)
MAX_GROUP_NAME = 16
MAX_SCENE_NAME = 16
MAX_TRANSITION_MS = 60_000_000
GROUP_CAPACITY = 8        # per fabric (the spec asks for at least 4 groups per fabric)
SCENE_TABLE_SIZE = 16     # the spec's minimum SceneTableSize
#: What one fabric may hold: the spec's MaxRemainingCapacity, (SceneTableSize - 1) / 2 (TC_S_2_6
#: fills two fabrics to it and expects the rest, SceneTableSize - 2 * that, for a third).
SCENES_PER_FABRIC = (SCENE_TABLE_SIZE - 1) // 2


def _fabric() -> int:
    access = current_access.get()
    return access.fabric_index if access is not None and access.fabric_index else LOCAL_FABRIC


def _groups_of(server: ClusterServer) -> GroupsServer | None:
    groups = server.sibling(GR)
    return groups if isinstance(groups, GroupsServer) else None


class GroupsServer(ClusterServer):
    cluster = GR
    revision = 4
    attributes = ("NameSupport",)
    commands = ("AddGroup", "ViewGroup", "GetGroupMembership", "RemoveGroup", "RemoveAllGroups",
                "AddGroupIfIdentifying")
    notes = ("Membership is per fabric; group ids are 1..0xFFFF, names up to 16 characters.",
             f"Each fabric may hold {GROUP_CAPACITY} groups on this endpoint; more answer "
             "RESOURCE_EXHAUSTED. Removing a group removes its scenes.")

    def __init__(self, **initial: Any):
        super().__init__(feature_map=int(GR.Bitmaps.Feature.kGroupNames), **initial)
        self._table: dict[int, dict[int, str]] = {}   # fabric -> group id -> name

    def defaults(self) -> dict[str, Any]:
        return {"NameSupport": int(GR.Bitmaps.NameSupportBitmap.kGroupNames)}

    def groups(self, fabric: int | None = None) -> dict[int, str]:
        """This endpoint's groups of a fabric (default: the accessing one)."""
        return dict(self._table.get(_fabric() if fabric is None else fabric, {}))

    def _add(self, request: Any) -> int:
        group, name = request.groupID, request.groupName
        if not 1 <= group <= 0xFFFF or len(name) > MAX_GROUP_NAME:
            return Status.CONSTRAINT_ERROR
        table = self._table.setdefault(_fabric(), {})
        if group not in table and len(table) >= GROUP_CAPACITY:
            return Status.RESOURCE_EXHAUSTED
        table[group] = name
        return Status.SUCCESS

    def AddGroup(self, request: Any):
        return GR.Commands.AddGroupResponse(status=self._add(request), groupID=request.groupID)

    def AddGroupIfIdentifying(self, request: Any) -> None:
        identify = self.sibling(Clusters.Identify)
        if identify is None or not identify.get("IdentifyTime"):
            return  # spec: not identifying, so nothing to do (and SUCCESS)
        status = self._add(request)
        if status != Status.SUCCESS:
            raise MatterError(Status(status), f"AddGroupIfIdentifying: group {request.groupID} "
                              "is out of 1..0xFFFF, its name over 16 characters, or the table is full")

    def ViewGroup(self, request: Any):
        table = self._table.get(_fabric(), {})
        if not 1 <= request.groupID <= 0xFFFF:
            return GR.Commands.ViewGroupResponse(status=Status.CONSTRAINT_ERROR, groupID=request.groupID,
                                                 groupName="")
        name = table.get(request.groupID)
        return GR.Commands.ViewGroupResponse(status=Status.SUCCESS if name is not None else Status.NOT_FOUND,
                                             groupID=request.groupID, groupName=name or "")

    def GetGroupMembership(self, request: Any):
        mine = sorted(self._table.get(_fabric(), {}))
        listed = mine if not request.groupList else [g for g in request.groupList if g in mine]
        return GR.Commands.GetGroupMembershipResponse(
            capacity=GROUP_CAPACITY - len(mine), groupList=listed)

    def RemoveGroup(self, request: Any):
        if not 1 <= request.groupID <= 0xFFFF:
            status = Status.CONSTRAINT_ERROR
        elif self._table.get(_fabric(), {}).pop(request.groupID, None) is None:
            status = Status.NOT_FOUND
        else:
            status = Status.SUCCESS
            self._drop_scenes(request.groupID)
        return GR.Commands.RemoveGroupResponse(status=status, groupID=request.groupID)

    def RemoveAllGroups(self, request: Any = None) -> None:
        for group in self._table.pop(_fabric(), {}):
            self._drop_scenes(group)

    def forget_fabric(self, fabric_index: int) -> None:
        super().forget_fabric(fabric_index)
        self.changing()
        self._table.pop(fabric_index, None)   # its scenes go in ScenesManagement's forget_fabric

    def _drop_scenes(self, group: int) -> None:
        scenes = self.sibling(SM)
        if isinstance(scenes, ScenesManagementServer):
            scenes.drop_group(group)

    # group tables live in the node's non-volatile memory: snapshots and restarts keep them
    def private_state(self) -> dict[str, Any]:
        return {"groups": {str(f): {str(g): n for g, n in t.items()} for f, t in self._table.items()}}

    def load_private_state(self, state: dict[str, Any]) -> None:
        self._table = {int(f): {int(g): n for g, n in t.items()} for f, t in state.get("groups", {}).items()}

    def saved_state(self) -> dict[str, Any]:
        return {**super().saved_state(), **self.private_state()}

    def power_up(self, saved: dict[str, Any]) -> None:
        super().power_up(saved)
        self.load_private_state(saved)


# ---- scenes -----------------------------------------------------------------------------------
def _heading(server: ClusterServer, attribute: str) -> Any:
    """Where a scene attribute is heading: a moving level or cover counts at its target."""
    if attribute == "CurrentLevel" and getattr(server, "_transition", None):
        return server._transition[2]
    if server.id == CLUSTER_ID.ColorControl:   # a colour transition counts at its target
        motion = server._motion.get(attribute)  # type: ignore[attr-defined]
        if motion is not None and motion[5] is not None:
            return motion[5]
    if attribute.startswith("CurrentPosition") and attribute.endswith("Percent100ths"):
        target = server.get(attribute.replace("Current", "Target"))
        if target is not NullValue:
            return target
    return server.get(attribute)


def _recall_onoff(server: ClusterServer, values: dict[str, Any], ms: int) -> None:
    if "OnOff" in values:
        server.invoke("On" if values["OnOff"] else "Off")


def _recall_level(server: ClusterServer, values: dict[str, Any], ms: int) -> None:
    if "CurrentLevel" in values and values["CurrentLevel"] is not NullValue:
        server.invoke("MoveToLevel", {"level": values["CurrentLevel"], "transitionTime": ms // 100,
                                      "optionsMask": 1, "optionsOverride": 1})


def _recall_covering(server: ClusterServer, values: dict[str, Any], ms: int) -> None:
    # the cover moves at its own speed; a scene's transition time cannot hurry a motor
    if values.get("CurrentPositionLiftPercent100ths") not in (None, NullValue):
        server.invoke("GoToLiftPercentage", {"liftPercent100thsValue": values["CurrentPositionLiftPercent100ths"]})
    if values.get("CurrentPositionTiltPercent100ths") not in (None, NullValue) \
            and "GoToTiltPercentage" in server.commands:
        server.invoke("GoToTiltPercentage", {"tiltPercent100thsValue": values["CurrentPositionTiltPercent100ths"]})


def _recall_color(server: ClusterServer, values: dict[str, Any], ms: int) -> None:
    """The stored colour by the stored EnhancedColorMode (hue and saturation, enhanced hue, x/y or
    colour temperature) over the transition, as if off were on (a scene sets the colour it
    stores); then the colour loop as stored."""
    t, opts = ms // 100, {"optionsMask": 1, "optionsOverride": 1}
    mode, hue, sat = values.get("EnhancedColorMode"), values.get("EnhancedCurrentHue"), values.get("CurrentSaturation")
    if mode == 3 and hue is not None and "EnhancedMoveToHueAndSaturation" in server.commands:
        server.invoke("EnhancedMoveToHueAndSaturation",
                      {"enhancedHue": hue, "saturation": sat if sat is not None else server.get("CurrentSaturation"),
                       "transitionTime": t, **opts})
    elif mode in (0, 3) and hue is not None and "MoveToHueAndSaturation" in server.commands:
        server.invoke("MoveToHueAndSaturation",
                      {"hue": min(hue >> 8, 254), "saturation": sat if sat is not None
                       else server.get("CurrentSaturation"), "transitionTime": t, **opts})
    elif mode == 1 and values.get("CurrentX") is not None and values.get("CurrentY") is not None:
        server.invoke("MoveToColor", {"colorX": values["CurrentX"], "colorY": values["CurrentY"],
                                      "transitionTime": t, **opts})
    elif mode == 2 and values.get("ColorTemperatureMireds") is not None:
        server.invoke("MoveToColorTemperature", {"colorTemperatureMireds": values["ColorTemperatureMireds"],
                                                 "transitionTime": t, **opts})
    active = values.get("ColorLoopActive")
    if active is not None and "ColorLoopSet" in server.commands and active != server.get("ColorLoopActive"):
        server.invoke("ColorLoopSet", {"updateFlags": 0x7, "action": 2 if active else 0,
                                       "direction": values.get("ColorLoopDirection", server.get("ColorLoopDirection")),
                                       "time": values.get("ColorLoopTime", server.get("ColorLoopTime")),
                                       "startHue": 0, **opts})


def _recall_writes(server: ClusterServer, values: dict[str, Any], ms: int) -> None:
    for name, value in values.items():
        server.write(name, value)


#: Scene-capable attributes (the "S" quality) of the clusters our devices carry, and how a
#: recall applies them.
SCENE_ATTRIBUTES: dict[int, tuple[tuple[str, ...], Any]] = {
    CLUSTER_ID.OnOff: (("OnOff",), _recall_onoff),
    CLUSTER_ID.LevelControl: (("CurrentLevel",), _recall_level),
    CLUSTER_ID.WindowCovering: (("CurrentPositionLiftPercent100ths", "CurrentPositionTiltPercent100ths"),
                                 _recall_covering),
    CLUSTER_ID.Thermostat: (("OccupiedCoolingSetpoint", "OccupiedHeatingSetpoint", "SystemMode"),
                             _recall_writes),
    CLUSTER_ID.FanControl: (("PercentSetting",), _recall_writes),
    # the spec's scene-capable ColorControl attributes (those the light's features give it)
    CLUSTER_ID.ColorControl: (("CurrentX", "CurrentY", "EnhancedCurrentHue", "CurrentSaturation", "ColorLoopActive",
                                "ColorLoopDirection", "ColorLoopTime", "ColorTemperatureMireds", "EnhancedColorMode"),
                               _recall_color),
}

_VALUE_FIELDS = ("valueUnsigned8", "valueSigned8", "valueUnsigned16", "valueSigned16",
                 "valueUnsigned32", "valueSigned32", "valueUnsigned64", "valueSigned64")


class _Scene:
    def __init__(self, name: str, transition_ms: int, values: dict[int, dict[int, int]]):
        self.name, self.transition_ms, self.values = name, transition_ms, values   # cluster -> attr id -> int

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "ms": self.transition_ms,
                "values": {str(c): {str(a): v for a, v in attrs.items()} for c, attrs in self.values.items()}}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> _Scene:
        return cls(data["name"], data["ms"],
                   {int(c): {int(a): v for a, v in attrs.items()} for c, attrs in data["values"].items()})


class ScenesManagementServer(ClusterServer):
    cluster = SM
    revision = 1
    # No LastConfiguredBy: optional in the SDK and "do not use" (X) since Matter 1.4.
    attributes = ("SceneTableSize", "FabricSceneInfo")
    commands = ("AddScene", "ViewScene", "RemoveScene", "RemoveAllScenes", "StoreScene", "RecallScene",
                "GetSceneMembership", "CopyScene")
    notes = ("A scene is identified by (groupID, sceneID); group 0 needs no membership, any other "
             "group must be on this endpoint (Groups.AddGroup) or the command answers INVALID_COMMAND.",
             "StoreScene captures the endpoint's scene attributes (OnOff, CurrentLevel, colour, cover "
             "positions, thermostat setpoints and mode, fan PercentSetting); RecallScene drives them "
             "back over the scene's transition time (ms), or the transitionTime given.",
             f"{SCENE_TABLE_SIZE} scenes per endpoint, at most {SCENES_PER_FABRIC} per fabric.")

    def __init__(self, **initial: Any):
        super().__init__(feature_map=int(SM.Bitmaps.Feature.kSceneNames), **initial)
        self._scenes: dict[int, dict[tuple[int, int], _Scene]] = {}   # fabric -> (group, scene) -> scene
        self._current: dict[int, tuple[int, int, bool]] = {}           # fabric -> (group, scene, valid)
        self._recalling = False

    def defaults(self) -> dict[str, Any]:
        return {"SceneTableSize": SCENE_TABLE_SIZE, "FabricSceneInfo": []}

    derived = frozenset({"FabricSceneInfo"})

    def get(self, name: str) -> Any:
        if name == "FabricSceneInfo":
            access = current_access.get()
            fabrics = set(self._scenes) | set(self._current)
            if access is not None:   # over Matter: the reader's own entry (even with no scenes),
                # and in a read that is not fabric-filtered other fabrics' too (the IM filters)
                fabrics = (fabrics if not access.fabric_filtered else set()) - {LOCAL_FABRIC}
                fabrics |= {access.fabric_index} if access.fabric_index else set()
            return [self._info(f) for f in sorted(fabrics)]
        return super().get(name)

    def _info(self, fabric: int) -> Any:
        group, scene, valid = self._current.get(fabric, (0, 0, False))
        count = len(self._scenes.get(fabric, {}))
        free = SCENE_TABLE_SIZE - sum(len(t) for t in self._scenes.values())   # the table is shared
        return SM.Structs.SceneInfoStruct(sceneCount=count, currentScene=scene, currentGroup=group,
                                          sceneValid=valid, remainingCapacity=min(SCENES_PER_FABRIC - count, free),
                                          fabricIndex=fabric)

    def _changed(self) -> None:
        self.set("FabricSceneInfo", self.get("FabricSceneInfo"))

    # ---- siblings ----------------------------------------------------------------
    def attach(self) -> None:
        for server in self._scene_servers():
            server.listeners.append(self._on_sibling_changed)

    def _scene_servers(self) -> list[ClusterServer]:
        if self.endpoint is None:
            return []
        return [s for cid, s in sorted(self.endpoint.servers.items()) if cid in SCENE_ATTRIBUTES]

    def _on_sibling_changed(self, server: ClusterServer, name: str) -> None:
        """SceneValid goes false once a scene attribute heads away from the current scene."""
        if self._recalling or name not in SCENE_ATTRIBUTES[server.id][0]:
            return
        changed = False
        for fabric, (group, scene_id, valid) in list(self._current.items()):
            scene = self._scenes.get(fabric, {}).get((group, scene_id))
            stored = scene.values.get(server.id, {}) if scene is not None else {}
            attr_id = server.attribute_class(name).attribute_id
            if valid and (attr_id not in stored or _as_int(_heading(server, name)) != stored[attr_id]):
                self._current[fabric] = (group, scene_id, False)
                changed = True
        if changed:
            self._changed()

    def _capture(self) -> dict[int, dict[int, int]]:
        out: dict[int, dict[int, int]] = {}
        for server in self._scene_servers():
            names = [n for n in SCENE_ATTRIBUTES[server.id][0] if n in server.attributes]
            values = {server.attribute_class(n).attribute_id: _as_int(_heading(server, n)) for n in names}
            out[server.id] = {a: v for a, v in values.items() if v is not None}
        return out

    # ---- helpers -----------------------------------------------------------------
    def _check(self, group: int, scene: int | None = None) -> int:
        """SUCCESS, or the status a request for (group, scene) answers with."""
        if scene is not None and scene > 0xFE:
            return Status.CONSTRAINT_ERROR
        if group:
            groups = _groups_of(self)
            if groups is None or group not in groups.groups():
                return Status.INVALID_COMMAND
        return Status.SUCCESS

    def _room_for(self, fabric: int, key: tuple[int, int]) -> bool:
        mine = self._scenes.get(fabric, {})
        total = sum(len(t) for t in self._scenes.values())
        return key in mine or (len(mine) < SCENES_PER_FABRIC and total < SCENE_TABLE_SIZE)

    def drop_group(self, group: int) -> None:
        """Groups removed `group`: its scenes go too (the accessing fabric's)."""
        fabric = _fabric()
        table = self._scenes.get(fabric, {})
        for key in [k for k in table if k[0] == group]:
            del table[key]
        if self._current.get(fabric, (None,))[0] == group:
            self._current[fabric] = (0, 0, False)
        self._changed()

    def forget_fabric(self, fabric_index: int) -> None:
        super().forget_fabric(fabric_index)
        if fabric_index in self._scenes or fabric_index in self._current:
            self.changing()
            self._scenes.pop(fabric_index, None)
            self._current.pop(fabric_index, None)
            self._changed()

    def _field_sets(self, scene: _Scene) -> list[Any]:
        out = []
        for cluster_id, attrs in sorted(scene.values.items()):
            pairs = [SM.Structs.AttributeValuePairStruct(attributeID=a, **_value_field(v))
                     for a, v in sorted(attrs.items())]
            out.append(SM.Structs.ExtensionFieldSet(clusterID=cluster_id, attributeValueList=pairs))
        return out

    # ---- commands ----------------------------------------------------------------
    def AddScene(self, request: Any):
        status = self._check(request.groupID, request.sceneID)
        if status == Status.SUCCESS and (request.transitionTime > MAX_TRANSITION_MS
                                         or len(request.sceneName) > MAX_SCENE_NAME):
            status = Status.CONSTRAINT_ERROR
        fabric, key = _fabric(), (request.groupID, request.sceneID)
        if status == Status.SUCCESS and not self._room_for(fabric, key):
            status = Status.RESOURCE_EXHAUSTED
        if status == Status.SUCCESS:
            present = {s.id: s for s in self._scene_servers()}
            values: dict[int, dict[int, int]] = {}
            for field_set in request.extensionFieldSets:
                server = present.get(field_set.clusterID)
                if server is None:
                    continue   # spec: field sets for clusters not on this endpoint are ignored
                allowed = {server.attribute_class(n).attribute_id
                           for n in SCENE_ATTRIBUTES[server.id][0] if n in server.attributes}
                for pair in field_set.attributeValueList:
                    value = next((getattr(pair, f) for f in _VALUE_FIELDS if getattr(pair, f) is not None), None)
                    if pair.attributeID not in allowed or value is None:
                        status = Status.INVALID_COMMAND
                        break
                    values.setdefault(server.id, {})[pair.attributeID] = int(value)
        if status == Status.SUCCESS:
            self._scenes.setdefault(fabric, {})[key] = _Scene(request.sceneName, request.transitionTime, values)
            self._changed()
        return SM.Commands.AddSceneResponse(status=status, groupID=request.groupID, sceneID=request.sceneID)

    def ViewScene(self, request: Any):
        status = self._check(request.groupID, request.sceneID)
        scene = self._scenes.get(_fabric(), {}).get((request.groupID, request.sceneID))
        if status == Status.SUCCESS and scene is None:
            status = Status.NOT_FOUND
        if status != Status.SUCCESS or scene is None:
            return SM.Commands.ViewSceneResponse(status=status, groupID=request.groupID, sceneID=request.sceneID)
        return SM.Commands.ViewSceneResponse(status=status, groupID=request.groupID, sceneID=request.sceneID,
                                             transitionTime=scene.transition_ms, sceneName=scene.name,
                                             extensionFieldSets=self._field_sets(scene))

    def RemoveScene(self, request: Any):
        status = self._check(request.groupID, request.sceneID)
        fabric, key = _fabric(), (request.groupID, request.sceneID)
        if status == Status.SUCCESS:
            if self._scenes.get(fabric, {}).pop(key, None) is None:
                status = Status.NOT_FOUND
            else:
                if self._current.get(fabric, (None, None))[:2] == key:
                    self._current[fabric] = (*key, False)
                self._changed()
        return SM.Commands.RemoveSceneResponse(status=status, groupID=request.groupID, sceneID=request.sceneID)

    def RemoveAllScenes(self, request: Any):
        status = self._check(request.groupID)
        if status == Status.SUCCESS:
            self.drop_group(request.groupID)
        return SM.Commands.RemoveAllScenesResponse(status=status, groupID=request.groupID)

    def StoreScene(self, request: Any):
        status = self._check(request.groupID, request.sceneID)
        fabric, key = _fabric(), (request.groupID, request.sceneID)
        if status == Status.SUCCESS and not self._room_for(fabric, key):
            status = Status.RESOURCE_EXHAUSTED
        if status == Status.SUCCESS:
            old = self._scenes.get(fabric, {}).get(key)
            self._scenes.setdefault(fabric, {})[key] = _Scene(old.name if old else "",
                                                             old.transition_ms if old else 0, self._capture())
            self._current[fabric] = (*key, True)
            self._changed()
        return SM.Commands.StoreSceneResponse(status=status, groupID=request.groupID, sceneID=request.sceneID)

    def RecallScene(self, request: Any) -> None:
        status = self._check(request.groupID, request.sceneID)
        fabric, key = _fabric(), (request.groupID, request.sceneID)
        scene = self._scenes.get(fabric, {}).get(key)
        if status == Status.SUCCESS and scene is None:
            status = Status.NOT_FOUND
        if status != Status.SUCCESS or scene is None:
            raise MatterError(Status(status), f"RecallScene: no scene {request.sceneID} in group "
                              f"{request.groupID} on this endpoint (GetSceneMembership lists them)")
        ms = scene.transition_ms if request.transitionTime in (None, NullValue) else request.transitionTime
        if ms > MAX_TRANSITION_MS:
            raise MatterError(Status.CONSTRAINT_ERROR,
                              f"RecallScene.transitionTime={ms} is over {MAX_TRANSITION_MS} ms")
        self._recalling = True
        try:
            for server in self._scene_servers():
                stored = scene.values.get(server.id)
                if stored:
                    values = {n: _from_int(server, n, stored[server.attribute_class(n).attribute_id])
                              for n in server.attributes if server.attribute_class(n).attribute_id in stored}
                    SCENE_ATTRIBUTES[server.id][1](server, values, ms)
        finally:
            self._recalling = False
        self._current[fabric] = (*key, True)
        self._changed()

    def GetSceneMembership(self, request: Any):
        status = self._check(request.groupID)
        mine = self._scenes.get(_fabric(), {})
        capacity = SCENES_PER_FABRIC - len(mine)
        if status != Status.SUCCESS:
            return SM.Commands.GetSceneMembershipResponse(status=status, capacity=capacity, groupID=request.groupID)
        scenes = sorted(s for g, s in mine if g == request.groupID)
        return SM.Commands.GetSceneMembershipResponse(status=status, capacity=capacity, groupID=request.groupID,
                                                      sceneList=scenes)

    def CopyScene(self, request: Any):
        fabric = _fabric()
        mine = self._scenes.get(fabric, {})
        status = self._check(request.groupIdentifierFrom)
        if status == Status.SUCCESS:
            status = self._check(request.groupIdentifierTo)
        copy_all = bool(int(request.mode) & int(SM.Bitmaps.CopyModeBitmap.kCopyAllScenes))
        if status == Status.SUCCESS:
            if copy_all:
                pairs = [((request.groupIdentifierFrom, s), (request.groupIdentifierTo, s))
                         for g, s in sorted(mine) if g == request.groupIdentifierFrom]
            elif (request.groupIdentifierFrom, request.sceneIdentifierFrom) not in mine:
                status, pairs = Status.NOT_FOUND, []
            else:
                pairs = [((request.groupIdentifierFrom, request.sceneIdentifierFrom),
                          (request.groupIdentifierTo, request.sceneIdentifierTo))]
            new = {dst for _, dst in pairs if dst not in mine}
            total = sum(len(t) for t in self._scenes.values())
            if status == Status.SUCCESS and (len(mine) + len(new) > SCENES_PER_FABRIC
                                             or total + len(new) > SCENE_TABLE_SIZE):
                status = Status.RESOURCE_EXHAUSTED
            if status == Status.SUCCESS:
                for src, dst in pairs:
                    mine[dst] = _Scene.from_json(mine[src].to_json())
                self._scenes[fabric] = mine
                self._changed()
        return SM.Commands.CopySceneResponse(status=status, groupIdentifierFrom=request.groupIdentifierFrom,
                                             sceneIdentifierFrom=request.sceneIdentifierFrom)

    # scene tables live in non-volatile memory: snapshots and restarts keep them
    def private_state(self) -> dict[str, Any]:
        return {"scenes": {str(f): [[g, s, sc.to_json()] for (g, s), sc in sorted(t.items())]
                           for f, t in self._scenes.items()},
                "current": {str(f): list(c) for f, c in self._current.items()}}

    def load_private_state(self, state: dict[str, Any]) -> None:
        self._scenes = {int(f): {(g, s): _Scene.from_json(sc) for g, s, sc in t}
                        for f, t in state.get("scenes", {}).items()}
        self._current = {int(f): (c[0], c[1], bool(c[2])) for f, c in state.get("current", {}).items()}

    def saved_state(self) -> dict[str, Any]:
        return {**super().saved_state(), **self.private_state()}

    def power_up(self, saved: dict[str, Any]) -> None:
        super().power_up(saved)
        self.load_private_state(saved)
        self._current = {f: (g, s, False) for f, (g, s, _) in self._current.items()}  # spec: not valid after reboot


def _as_int(value: Any) -> int | None:
    if value is NullValue or value is None:
        return None
    return int(value)


def _from_int(server: ClusterServer, name: str, value: int) -> Any:
    if server.attribute_class(name).attribute_type.Type is bool:
        return bool(value)
    return server._coerce(name, value)


def _value_field(value: int) -> dict[str, int]:
    """The narrowest AttributeValuePair field that holds `value`."""
    if value < 0:
        field = "valueSigned8" if value >= -0x80 else "valueSigned16" if value >= -0x8000 else \
            "valueSigned32" if value >= -0x80000000 else "valueSigned64"
    else:
        field = "valueUnsigned8" if value <= 0xFF else "valueUnsigned16" if value <= 0xFFFF else \
            "valueUnsigned32" if value <= 0xFFFFFFFF else "valueUnsigned64"
    return {field: value}
