"""AccessControl: the ACL entries of each fabric, validated on write (Core spec 9.10)."""
from __future__ import annotations

from typing import Any

from chip.clusters.Types import NullValue

from clusters.base import MatterError, Status, current_access
from twin.node.fabrics import (
    is_cat_subject,
    is_operational_node_id,
)
from twin.node.servers.base import (
    AC,
    ENTRIES_PER_FABRIC,
    SUBJECTS_PER_ENTRY,
    TARGETS_PER_ENTRY,
    AuthMode,
    ChangeType,
    NodeServer,
    Privilege,
)


def _check_acl_entry(entry: Any, where: str) -> None:
    """The spec's ACL entry rules (Core 9.10.5.5); CONSTRAINT_ERROR naming the rule broken."""
    def bad(msg: str) -> MatterError:
        return MatterError(Status.CONSTRAINT_ERROR, f"{where}: {msg}")
    if entry.privilege == Privilege.kUnknownEnumValue:
        raise bad("privilege must be 1 (View) .. 5 (Administer)")
    if entry.authMode not in (AuthMode.kCase, AuthMode.kGroup):
        raise bad("authMode must be 2 (CASE) or 3 (Group); PASE entries are implicit and not stored")
    if entry.authMode == AuthMode.kGroup and entry.privilege == Privilege.kAdminister:
        raise bad("a Group entry may not grant Administer")
    subjects = [] if entry.subjects is NullValue else list(entry.subjects)
    if len(subjects) > SUBJECTS_PER_ENTRY:
        raise bad(f"{len(subjects)} subjects; at most {SUBJECTS_PER_ENTRY}")
    for s in subjects:
        if entry.authMode == AuthMode.kCase and not (is_operational_node_id(s) or is_cat_subject(s)):
            raise bad(f"CASE subject {s:#x} is neither an operational node id nor a CAT")
        if entry.authMode == AuthMode.kGroup and not 1 <= s <= 0xFFFF:
            raise bad(f"Group subject {s:#x} is not a group id (1..0xffff)")
    targets = [] if entry.targets is NullValue else list(entry.targets)
    if len(targets) > TARGETS_PER_ENTRY:
        raise bad(f"{len(targets)} targets; at most {TARGETS_PER_ENTRY}")
    for t in targets:
        cluster, endpoint, device_type = (None if v is NullValue else v for v in (t.cluster, t.endpoint, t.deviceType))
        if cluster is None and endpoint is None and device_type is None:
            raise bad("a target needs a cluster, an endpoint or a device type")
        if endpoint is not None and device_type is not None:
            raise bad("a target may name an endpoint or a device type, not both")
        if endpoint is not None and endpoint > 0xFFFE:
            raise bad(f"target endpoint {endpoint} is not an endpoint id")
        if cluster is not None and cluster > 0xFFFFFFFF:
            raise bad(f"target cluster {cluster:#x} is not a cluster id")


def acl_changes(old: list[Any], new: list[Any], appended: bool = False) -> list[tuple[ChangeType, Any]]:
    """The AccessControlEntryChanged events of a write of a fabric's entries (Core 9.10.7.1, one
    per entry), as the plans (TC_ACL_2_6, 2_8) expect: a list written whole is Changed for each
    index both lists have, Added past the old list's end, Removed past the new one's (with the
    removed entry); an appended entry (`appended`: ListIndex null) is one Added. So the SDK's
    chunked write, [] then one append per entry, is Removed for each old entry, then Added."""
    if appended:
        return [(ChangeType.kAdded, n) for n in new[len(old):]]
    changes = [(ChangeType.kChanged, n) for n in new[:len(old)]]
    changes += [(ChangeType.kAdded, n) for n in new[len(old):]]
    changes += [(ChangeType.kRemoved, o) for o in old[len(new):]]
    return changes


class AccessControlServer(NodeServer):
    cluster = AC
    revision = 1
    attributes = ("Acl", "SubjectsPerAccessControlEntry", "TargetsPerAccessControlEntry",
                  "AccessControlEntriesPerFabric")
    writable = frozenset({"Acl"})
    notes = ("ACL is fabric-scoped: a write replaces the accessing fabric's entries only.",)

    def defaults(self) -> dict[str, Any]:
        return {"Acl": [], "SubjectsPerAccessControlEntry": SUBJECTS_PER_ENTRY,
                "TargetsPerAccessControlEntry": TARGETS_PER_ENTRY,
                "AccessControlEntriesPerFabric": ENTRIES_PER_FABRIC}

    def get(self, name: str) -> Any:
        if name == "Acl":
            return [e for f in self.node.visible_fabrics() for e in f.acl]
        return super().get(name)

    def write(self, attribute: Any, data: Any) -> None:
        name = self.resolve_attribute(attribute)
        if name != "Acl":
            return super().write(attribute, data)
        self.node.poll()
        fabric = self.node.table.get(self.node.accessing_fabric())
        if fabric is None:
            raise MatterError(Status.UNSUPPORTED_ACCESS, "ACL is fabric-scoped: write it over a session on a fabric")
        if isinstance(data, list):  # the entries' fabricIndex is the accessing fabric's, whatever was sent
            data = [dict(e, fabricIndex=fabric.fabric_index) if isinstance(e, dict) else e for e in data]
        entries = self._coerce("Acl", data)
        if len(entries) > ENTRIES_PER_FABRIC:
            raise MatterError(Status.RESOURCE_EXHAUSTED,
                              f"{len(entries)} ACL entries; at most {ENTRIES_PER_FABRIC} per fabric")
        entries = [AC.Structs.AccessControlEntryStruct(
            privilege=e.privilege, authMode=e.authMode, subjects=e.subjects, targets=e.targets,
            fabricIndex=fabric.fabric_index) for e in entries]
        for i, entry in enumerate(entries):
            _check_acl_entry(entry, f"ACL[{i}]")
        old = fabric.acl
        fabric.acl = entries
        self.node.table.save()
        self.touch("Acl")
        access = current_access.get()
        for change, entry in acl_changes(old, entries, appended=access is not None and access.list_append):
            self.node.acl_changed(fabric.fabric_index, change, entry)
