"""Access control (Core spec 6.6): which privilege an operation needs, and whether a session's
subject holds it under the node's ACL.

`required_privilege(kind, cluster, item)` is the one table of privileges: chip's Objects do not
carry them. Defaults per the spec: reading an attribute or an event needs View, writing an
attribute or invoking a command needs Operate. The exceptions are the spec's for the clusters
we serve (node administration needs Administer, some configuration needs Manage).

`AclCheck(node, device)` is the Interaction Model's `access_check`: PASE sessions (they exist
only while commissioning) have the implicit Administer privilege; CASE sessions are granted
what the accessing fabric's ACL entries with AuthMode CASE give their subject (the peer's node
id, or one of its CASE Authenticated Tags) on the target (cluster, endpoint, device type). The
entries are read at each check, so an ACL write takes effect at once. Group sessions are not
served (no endpoint has a Groups cluster), so AuthMode Group entries grant nothing here.
"""
from __future__ import annotations

from typing import Any, TypeAlias

from chip.clusters import Objects as Clusters
from chip.clusters.Types import NullValue

from clusters.base import AccessContext
from twin.node.fabrics import CAT_PREFIX

Privilege: TypeAlias = Clusters.AccessControl.Enums.AccessControlEntryPrivilegeEnum
AuthMode = Clusters.AccessControl.Enums.AccessControlEntryAuthModeEnum
VIEW, PROXY_VIEW, OPERATE, MANAGE, ADMINISTER = (Privilege.kView, Privilege.kProxyView, Privilege.kOperate,
                                                 Privilege.kManage, Privilege.kAdminister)

#: What each privilege grants besides itself (spec: Administer > Manage > Operate > View;
#: ProxyView > View; Administer > ProxyView).
_GRANTS = {
    ADMINISTER: {ADMINISTER, MANAGE, OPERATE, PROXY_VIEW, VIEW},
    MANAGE: {MANAGE, OPERATE, VIEW},
    OPERATE: {OPERATE, VIEW},
    PROXY_VIEW: {PROXY_VIEW, VIEW},
    VIEW: {VIEW},
}

_C = Clusters
_DEFAULT = {"read": VIEW, "event": VIEW, "write": OPERATE, "invoke": OPERATE}

# (kind, cluster id) -> privilege for every item of that kind on the cluster.
_BY_CLUSTER: dict[tuple[str, int], Privilege] = {
    ("write", _C.AccessControl.id): ADMINISTER,
    ("event", _C.AccessControl.id): ADMINISTER,
    ("invoke", _C.OperationalCredentials.id): ADMINISTER,
    ("invoke", _C.GeneralCommissioning.id): ADMINISTER,
    ("write", _C.GeneralCommissioning.id): ADMINISTER,          # Breadcrumb
    ("invoke", _C.AdministratorCommissioning.id): ADMINISTER,
    ("invoke", _C.NetworkCommissioning.id): ADMINISTER,
    ("write", _C.NetworkCommissioning.id): ADMINISTER,          # InterfaceEnabled
    ("invoke", _C.GroupKeyManagement.id): ADMINISTER,
    ("write", _C.GroupKeyManagement.id): MANAGE,                # GroupKeyMap
    ("write", _C.BasicInformation.id): MANAGE,                  # NodeLabel, LocalConfigDisabled
    ("invoke", _C.Identify.id): MANAGE,                         # Identify, TriggerEffect
    ("write", _C.Identify.id): MANAGE,
    ("write", _C.Binding.id): MANAGE,
    # DoorLock: users, credentials and schedules are Administer; lock/unlock Operate (below);
    # its attributes Manage, the code-entry policy Administer (spec 5.2.9).
    ("invoke", _C.DoorLock.id): ADMINISTER,
    ("write", _C.DoorLock.id): MANAGE,
}

# (kind, cluster id, attribute/command/event id) -> privilege, for single items.
_BY_ITEM: dict[tuple[str, int, int], Privilege] = {
    ("read", _C.AccessControl.id, _C.AccessControl.Attributes.Acl.attribute_id): ADMINISTER,
    ("read", _C.AccessControl.id, _C.AccessControl.Attributes.Extension.attribute_id): ADMINISTER,
    ("read", _C.OperationalCredentials.id, _C.OperationalCredentials.Attributes.NOCs.attribute_id): ADMINISTER,
    ("write", _C.BasicInformation.id, _C.BasicInformation.Attributes.Location.attribute_id): ADMINISTER,
    ("invoke", _C.GeneralDiagnostics.id, _C.GeneralDiagnostics.Commands.TestEventTrigger.command_id): MANAGE,
    ("write", _C.OnOff.id, _C.OnOff.Attributes.StartUpOnOff.attribute_id): MANAGE,
    ("invoke", _C.DoorLock.id, _C.DoorLock.Commands.LockDoor.command_id): OPERATE,
    ("invoke", _C.DoorLock.id, _C.DoorLock.Commands.UnlockDoor.command_id): OPERATE,
    ("invoke", _C.DoorLock.id, _C.DoorLock.Commands.UnlockWithTimeout.command_id): OPERATE,
    ("invoke", _C.DoorLock.id, _C.DoorLock.Commands.UnboltDoor.command_id): OPERATE,
    ("write", _C.DoorLock.id, _C.DoorLock.Attributes.WrongCodeEntryLimit.attribute_id): ADMINISTER,
    ("write", _C.DoorLock.id, _C.DoorLock.Attributes.UserCodeTemporaryDisableTime.attribute_id): ADMINISTER,
    ("write", _C.DoorLock.id, _C.DoorLock.Attributes.RequirePINforRemoteOperation.attribute_id): ADMINISTER,
    ("write", _C.LevelControl.id, _C.LevelControl.Attributes.StartUpCurrentLevel.attribute_id): MANAGE,
    ("write", _C.ColorControl.id, _C.ColorControl.Attributes.StartUpColorTemperatureMireds.attribute_id): MANAGE,
    ("write", _C.Thermostat.id, _C.Thermostat.Attributes.MinHeatSetpointLimit.attribute_id): MANAGE,
    ("write", _C.Thermostat.id, _C.Thermostat.Attributes.MaxHeatSetpointLimit.attribute_id): MANAGE,
    ("write", _C.Thermostat.id, _C.Thermostat.Attributes.MinCoolSetpointLimit.attribute_id): MANAGE,
    ("write", _C.Thermostat.id, _C.Thermostat.Attributes.MaxCoolSetpointLimit.attribute_id): MANAGE,
    ("write", _C.Thermostat.id, _C.Thermostat.Attributes.MinSetpointDeadBand.attribute_id): MANAGE,
    ("write", _C.Thermostat.id, _C.Thermostat.Attributes.ControlSequenceOfOperation.attribute_id): MANAGE,
}


def required_privilege(kind: str, cluster: int, item: int) -> Privilege:
    """The privilege an operation needs. kind: "read", "write", "invoke" or "event"."""
    if kind not in _DEFAULT:
        raise ValueError(f"unknown access kind {kind!r}; accepted: {', '.join(_DEFAULT)}")
    needed: Privilege = _BY_ITEM.get((kind, cluster, item)) or _BY_CLUSTER.get((kind, cluster)) or _DEFAULT[kind]
    return needed


def grants(held: int, required: int) -> bool:
    return required in _GRANTS.get(held, ())


def subject_matches(subject: int, node_id: int | None, cats: tuple[int, ...]) -> bool:
    """A subject names the peer's node id, or a CAT the peer holds at the same or a higher version."""
    if subject & 0xFFFFFFFF00000000 == CAT_PREFIX:
        ident, version = (subject >> 16) & 0xFFFF, subject & 0xFFFF
        return any((cat >> 16) & 0xFFFF == ident and cat & 0xFFFF >= version for cat in cats)
    return node_id is not None and subject == node_id


class AclCheck:
    """The IM's access_check over a NodeCommissioning's fabric table (see the module docstring)."""

    def __init__(self, node: Any, device: Any):
        self.node = node
        self.device = device

    def __call__(self, kind: str, access: AccessContext, endpoint: int, cluster: int, item: int) -> bool:
        required = required_privilege(kind, cluster, item)
        if access.auth_mode == "pase":
            return True   # implicit Administer while commissioning
        if access.auth_mode != "case" or access.fabric_index is None:
            return False
        fabric = self.node.table.get(access.fabric_index)
        if fabric is None:
            return False
        cats = tuple(getattr(access.session, "peer_cats", ()) or ())
        for entry in fabric.acl:
            if entry.authMode != AuthMode.kCase or not grants(entry.privilege, required):
                continue
            subjects = entry.subjects
            if subjects not in (None, NullValue) and subjects and not any(
                    subject_matches(s, access.peer_node_id, cats) for s in subjects):
                continue
            if self._targets_match(entry.targets, endpoint, cluster):
                return True
        return False

    def admits(self, access: AccessContext) -> bool:
        """Whether the peer holds any privilege here at all: a PASE session (commissioning), or a
        CASE subject some ACL entry of its fabric names (or an entry without subjects)."""
        if access.auth_mode == "pase":
            return True
        fabric = self.node.table.get(access.fabric_index) if access.fabric_index is not None else None
        if access.auth_mode != "case" or fabric is None:
            return False
        cats = tuple(getattr(access.session, "peer_cats", ()) or ())
        return any(entry.authMode == AuthMode.kCase and (
            entry.subjects in (None, NullValue) or not entry.subjects
            or any(subject_matches(s, access.peer_node_id, cats) for s in entry.subjects)) for entry in fabric.acl)

    def _targets_match(self, targets: Any, endpoint: int, cluster: int) -> bool:
        if targets in (None, NullValue) or not targets:
            return True
        for t in targets:
            if t.cluster not in (None, NullValue) and t.cluster != cluster:
                continue
            if t.endpoint not in (None, NullValue) and t.endpoint != endpoint:
                continue
            if t.deviceType not in (None, NullValue) and t.deviceType not in self._device_types(endpoint):
                continue
            return True
        return False

    def _device_types(self, endpoint: int) -> set[int]:
        ep = self.device.endpoints.get(endpoint)
        return {int(d[0]) for d in getattr(ep, "device_types", ())} if ep is not None else set()
