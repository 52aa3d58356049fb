"""GroupKeyManagement: the IPK and group key sets per fabric (Core spec 11.2)."""
from __future__ import annotations

from typing import Any

from chip.clusters.Types import NullValue

from clusters.base import MatterError, Status
from twin.node.fabrics import (
    IPK_KEY_SET_ID,
    Fabric,
)
from twin.node.servers.base import (
    GKM,
    MAX_GROUP_KEYS_PER_FABRIC,
    MAX_GROUPS_PER_FABRIC,
    NodeServer,
)


class GroupKeyManagementServer(NodeServer):
    cluster = GKM
    revision = 1
    attributes = ("GroupKeyMap", "GroupTable", "MaxGroupsPerFabric", "MaxGroupKeysPerFabric")
    writable = frozenset({"GroupKeyMap"})
    commands = ("KeySetWrite", "KeySetRead", "KeySetRemove", "KeySetReadAllIndices")
    notes = ("Key set 0 is the fabric's IPK (from AddNOC); epoch keys are never readable.",
             "GroupTable is empty and MaxGroupsPerFabric 0: no endpoint has a Groups cluster.")

    def defaults(self) -> dict[str, Any]:
        return {"GroupKeyMap": [], "GroupTable": [], "MaxGroupsPerFabric": MAX_GROUPS_PER_FABRIC,
                "MaxGroupKeysPerFabric": MAX_GROUP_KEYS_PER_FABRIC}

    def get(self, name: str) -> Any:
        if name == "GroupKeyMap":
            return [m for f in self.node.visible_fabrics() for m in f.group_key_map]
        return super().get(name)

    def _fabric(self, what: str) -> Fabric:
        fabric: Fabric | None = self.node.table.get(self.node.accessing_fabric())
        if fabric is None:
            raise MatterError(Status.UNSUPPORTED_ACCESS, f"{what} is fabric-scoped: use a session on a fabric")
        return fabric

    def write(self, attribute: Any, data: Any) -> None:
        name = self.resolve_attribute(attribute)
        if name != "GroupKeyMap":
            return super().write(attribute, data)
        self.node.poll()
        fabric = self._fabric("GroupKeyMap")
        if isinstance(data, list):
            data = [dict(e, fabricIndex=fabric.fabric_index) if isinstance(e, dict) else e for e in data]
        entries = [GKM.Structs.GroupKeyMapStruct(groupId=e.groupId, groupKeySetID=e.groupKeySetID,
                                                 fabricIndex=fabric.fabric_index)
                   for e in self._coerce("GroupKeyMap", data)]
        seen: set[int] = set()
        for e in entries:
            if not 1 <= e.groupId <= 0xFEFF:
                raise MatterError(Status.CONSTRAINT_ERROR, f"groupId {e.groupId:#x} is not an application group id")
            if e.groupKeySetID == IPK_KEY_SET_ID or not 0 <= e.groupKeySetID <= 0xFFFF:
                raise MatterError(Status.CONSTRAINT_ERROR, "groupKeySetID 0 (the IPK) cannot be mapped to a group")
            if e.groupId in seen:
                raise MatterError(Status.CONSTRAINT_ERROR, f"groupId {e.groupId:#x} appears twice")
            seen.add(e.groupId)
        if len(entries) > MAX_GROUPS_PER_FABRIC:
            raise MatterError(Status.RESOURCE_EXHAUSTED,
                              f"{len(entries)} groups; this node supports {MAX_GROUPS_PER_FABRIC} per fabric")
        fabric.group_key_map = entries
        self.node.table.save()
        self.touch("GroupKeyMap")

    def KeySetWrite(self, request: Any) -> Any:
        fabric = self._fabric("KeySetWrite")
        ks = request.groupKeySet
        keys = [ks.epochKey0, ks.epochKey1, ks.epochKey2]
        times = [ks.epochStartTime0, ks.epochStartTime1, ks.epochStartTime2]

        def invalid(msg: str) -> MatterError:
            return MatterError(Status.INVALID_COMMAND, f"KeySetWrite: {msg}")
        if ks.groupKeySecurityPolicy != GKM.Enums.GroupKeySecurityPolicyEnum.kTrustFirst:
            raise invalid("groupKeySecurityPolicy must be 0 (TrustFirst); CacheAndSync is not supported")
        if keys[0] is NullValue or times[0] is NullValue:
            raise invalid("epochKey0 and epochStartTime0 are required")
        for i in range(3):
            if (keys[i] is NullValue) != (times[i] is NullValue):
                raise invalid(f"epochKey{i} and epochStartTime{i} must be both given or both null")
            if keys[i] is not NullValue and len(keys[i]) != 16:
                raise MatterError(Status.CONSTRAINT_ERROR, f"KeySetWrite: epochKey{i} must be 16 bytes")
        if keys[2] is not NullValue and keys[1] is NullValue:
            raise invalid("epochKey2 needs epochKey1")
        for i in (1, 2):
            if keys[i] is not NullValue and times[i] <= times[i - 1]:
                raise invalid(f"epochStartTime{i} must be later than epochStartTime{i - 1}")
        if ks.groupKeySetID == IPK_KEY_SET_ID:
            if keys[1] is not NullValue:
                raise invalid("key set 0 is the IPK and holds exactly one epoch key")
            fabric.ipk_epoch_key = bytes(keys[0])
        else:
            if times[0] == 0:
                raise invalid("epochStartTime0 must not be 0")
            if (ks.groupKeySetID not in fabric.group_key_sets
                    and len(fabric.group_key_sets) + 1 >= MAX_GROUP_KEYS_PER_FABRIC):
                raise MatterError(Status.RESOURCE_EXHAUSTED,
                                  f"at most {MAX_GROUP_KEYS_PER_FABRIC} key sets per fabric, the IPK included")
            fabric.group_key_sets[ks.groupKeySetID] = ks
        self.node.table.save()

    def KeySetRead(self, request: Any) -> Any:
        fabric = self._fabric("KeySetRead")
        set_id = request.groupKeySetID
        kinds = GKM.Structs.GroupKeySetStruct
        if set_id == IPK_KEY_SET_ID:
            ks = kinds(groupKeySetID=0, groupKeySecurityPolicy=GKM.Enums.GroupKeySecurityPolicyEnum.kTrustFirst,
                       epochKey0=NullValue, epochStartTime0=0, epochKey1=NullValue, epochStartTime1=NullValue,
                       epochKey2=NullValue, epochStartTime2=NullValue)
        elif set_id in fabric.group_key_sets:
            stored = fabric.group_key_sets[set_id]
            ks = kinds(groupKeySetID=set_id, groupKeySecurityPolicy=stored.groupKeySecurityPolicy,
                       epochKey0=NullValue, epochStartTime0=stored.epochStartTime0,
                       epochKey1=NullValue, epochStartTime1=stored.epochStartTime1,
                       epochKey2=NullValue, epochStartTime2=stored.epochStartTime2)
        else:
            raise MatterError(Status.NOT_FOUND, f"no group key set {set_id} on this fabric")
        return GKM.Commands.KeySetReadResponse(groupKeySet=ks)

    def KeySetRemove(self, request: Any) -> Any:
        fabric = self._fabric("KeySetRemove")
        set_id = request.groupKeySetID
        if set_id == IPK_KEY_SET_ID:
            raise MatterError(Status.INVALID_COMMAND, "key set 0 is the IPK and cannot be removed")
        if set_id not in fabric.group_key_sets:
            raise MatterError(Status.NOT_FOUND, f"no group key set {set_id} on this fabric")
        del fabric.group_key_sets[set_id]
        before = len(fabric.group_key_map)
        fabric.group_key_map = [m for m in fabric.group_key_map if m.groupKeySetID != set_id]
        self.node.table.save()
        if len(fabric.group_key_map) != before:
            self.touch("GroupKeyMap")

    def KeySetReadAllIndices(self, request: Any) -> Any:
        fabric = self._fabric("KeySetReadAllIndices")
        return GKM.Commands.KeySetReadAllIndicesResponse(
            groupKeySetIDs=[IPK_KEY_SET_ID, *sorted(fabric.group_key_sets)])
