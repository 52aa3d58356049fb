"""Commissioning clusters on endpoint 0 and the object the node runtime drives them through.

`NodeCommissioning` owns the node's `FabricTable` (persisted in the node's storage directory),
its `FailSafe` and its `CommissioningWindow`, and adds these servers to `device.endpoint(0)`:
GeneralCommissioning, NetworkCommissioning (Ethernet), OperationalCredentials, AccessControl,
GroupKeyManagement, GeneralDiagnostics and AdministratorCommissioning. Their state lives in
the fabric table and the node objects, so they are node-only (`in_snapshot = False`) and derive
their attributes in `get()`.

What the servers need from the caller (set by the Interaction Model in `clusters.base.current_access`):
  - `auth_mode` "pase" or "case"; `fabric_index` (None on PASE until AddNOC, see below);
    `peer_node_id` (CASE) for AccessControlEntryChanged events;
  - `session.keys.attestation_challenge` (16 bytes, `matter_protocol.session_types.EstablishedSession`
    shape) for AttestationRequest and CSRRequest, which sign elements || challenge with the DAC;
  - the same `session` object for every command of one session: AddNOC binds the new fabric
    to the PASE session it arrived on, and `fabric_for_session(session)` / the accessing fabric
    of later commands on that session report it.
  - `fabric_filtered` (default True; False in a read that is not fabric-filtered) lets a read of
    a fabric-scoped list (Fabrics, NOCs, ACL, GroupKeyMap) show every fabric's entries; the IM
    leaves the fabric-sensitive fields of other fabrics' entries out (values.FABRIC_SENSITIVE).
Without an access context (local callers) fabric-scoped attributes show every fabric and
session-bound commands answer UNSUPPORTED_ACCESS.

What the runtime must call: `poll(now_ms)` when `next_timer()` is due (fail-safe expiry rolls
back; the window times out), `on_pase_established(session)` (arms the fail-safe for 60 s as the
commissioning flow requires), `on_pase_failed()` (20 failures close the window),
`pase_parameters()` for the verifier to run PASE with, and `to_case_fabrics()` for CASE.
It hears about changes through `listeners` (NodeEvent): advertise, withdraw, close sessions.

ACL enforcement (and the implicit Administer grant of a PASE commissioning session) belongs to
the Interaction Model; this module keeps the entries and validates writes.
"""
from __future__ import annotations

import os
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

from chip.clusters.Types import NullValue

from clusters.base import AccessContext, Clusters, ClusterServer, MatterError, Status, current_access
from clusters.device import Device
from matter_protocol.case import FabricInfo
from matter_protocol.spake2p import (
    PBKDF_MAX_SALT_LEN,
    make_verifier,
)
from twin.node.credentials import DeviceCredentials
from twin.node.fabrics import (
    DEFAULT_FAILSAFE_EXPIRY_S,
    Fabric,
    FabricTable,
    FailSafe,
)
from twin.node.servers.access_control import AccessControlServer
from twin.node.servers.administrator_commissioning import AdministratorCommissioningServer
from twin.node.servers.base import (
    AC,
    ChangeType,
    set_session_fabric,
)
from twin.node.servers.general_commissioning import GeneralCommissioningServer
from twin.node.servers.general_diagnostics import GeneralDiagnosticsServer
from twin.node.servers.group_key_management import GroupKeyManagementServer
from twin.node.servers.network_commissioning import NetworkCommissioningServer
from twin.node.servers.operational_credentials import OperationalCredentialsServer
from twin.node.window import CommissioningWindow, NodeEvent, PakeParameters

__all__ = ["NodeCommissioning", "CommissioningWindow", "PakeParameters", "NodeEvent",
           "GeneralCommissioningServer", "NetworkCommissioningServer", "OperationalCredentialsServer",
           "AccessControlServer", "GroupKeyManagementServer", "GeneralDiagnosticsServer",
           "AdministratorCommissioningServer"]

DEFAULT_PBKDF_ITERATIONS = 1000


# --- the node's commissioning state ------------------------------------------------------

class NodeCommissioning:
    """Fabric table, fail-safe and commissioning window of one node, and its endpoint-0 servers.

    `storage_dir` is this node's own directory (e.g. `<storage>/<device_id>`; the DAC lives there
    too). `now_ms` is the runtime's millisecond clock; the fail-safe, the window timeout and
    UpTime run on it. `rng` draws the PBKDF salt, CSR key pairs and the interface address.
    """

    PASE_FAILSAFE_S = DEFAULT_FAILSAFE_EXPIRY_S

    def __init__(self, storage_dir: str | os.PathLike[str], device: Device, credentials: DeviceCredentials | None,
                 passcode: int, discriminator: int, rng: random.Random, *, now_ms: Callable[[], int],
                 max_fabrics: int = 16, pbkdf_iterations: int = DEFAULT_PBKDF_ITERATIONS):
        self.storage_dir = Path(storage_dir)
        self.device = device
        self.rng = rng
        self.now_ms = now_ms
        self.listeners: list[Callable[[NodeEvent], None]] = []
        self.table = FabricTable.load(self.storage_dir, max_fabrics)
        counters = self.table.counters
        counters["reboot_count"] = counters["reboot_count"] + 1 if "reboot_count" in counters else 0
        self.table.save()
        self._boot_ms = now_ms()
        if credentials is None:
            basic = device.endpoint(0).server(Clusters.BasicInformation)
            credentials = DeviceCredentials.load_or_create(self.storage_dir, basic.get("VendorID"),
                                                           basic.get("ProductID"), rng=rng)
        self.credentials = credentials
        self._cd: bytes | None = None
        salt = rng.randbytes(PBKDF_MAX_SALT_LEN)  # the node keeps only the verifier, never the passcode
        self.window = CommissioningWindow(
            PakeParameters(make_verifier(passcode, salt, pbkdf_iterations), salt, pbkdf_iterations), discriminator)
        self.failsafe = FailSafe()

        mac = bytearray(rng.randbytes(6))
        mac[0] = (mac[0] | 0x02) & 0xFE  # locally administered, unicast
        self.general = GeneralCommissioningServer(self)
        self.network = NetworkCommissioningServer(self)
        self.operational_credentials = OperationalCredentialsServer(self)
        self.access_control = AccessControlServer(self)
        self.group_keys = GroupKeyManagementServer(self)
        self.diagnostics = GeneralDiagnosticsServer(self, bytes(mac))
        self.administrator = AdministratorCommissioningServer(self)
        root = device.endpoint(0)
        for server in self.servers:
            root.add(server)
        if not len(self.table):
            self.window.open_initial(self._boot_ms)

    @property
    def servers(self) -> list[ClusterServer]:
        return [self.general, self.network, self.operational_credentials, self.access_control, self.group_keys,
                self.diagnostics, self.administrator]

    # ---- queries for the runtime -----------------------------------------------------
    def pase_parameters(self) -> PakeParameters | None:
        return self.window.pase_verifier()

    def to_case_fabrics(self) -> list[FabricInfo]:
        return self.table.to_case_fabrics()

    def fabric_for_session(self, session: Any) -> int | None:
        """The fabric AddNOC bound to this PASE session, if any."""
        fs = self.failsafe
        return fs.added_fabric if session is not None and session is fs.bound_session else None

    def accessing_fabric(self) -> int | None:
        access: AccessContext | None = current_access.get()
        if access is None:
            return None
        if access.fabric_index is not None:
            return access.fabric_index
        return self.fabric_for_session(access.session)

    def visible_fabrics(self) -> list[Fabric]:
        """Whose entries a fabric-scoped list shows: all of them to local callers and to a read that
        is not fabric-filtered (the IM sets `fabric_filtered=False` on its access context, and omits
        the fabric-sensitive fields of other fabrics' entries); otherwise the accessing fabric's."""
        access = current_access.get()
        if access is None or not access.fabric_filtered:
            return list(self.table)
        fabric = self.table.get(self.accessing_fabric())
        return [fabric] if fabric is not None else []

    def attestation_challenge(self) -> bytes:
        access = current_access.get()
        keys = getattr(getattr(access, "session", None), "keys", None)
        challenge = getattr(keys, "attestation_challenge", None)
        if not challenge:
            raise MatterError(Status.UNSUPPORTED_ACCESS,
                              "this command signs with the session's attestation challenge: "
                              "invoke it over a PASE or CASE session")
        return bytes(challenge)

    @property
    def certification_declaration(self) -> bytes:
        if self._cd is None:
            self._cd = self.credentials.certification_declaration(self.device.type.device_type_id)
        return self._cd

    def uptime_ms(self) -> int:
        return max(0, self.now_ms() - self._boot_ms)

    def next_timer(self) -> int | None:
        due = [t for t in (self.failsafe.next_timer(), self.window.next_timer()) if t is not None]
        return min(due) if due else None

    # ---- inputs from the runtime -----------------------------------------------------
    def poll(self, now_ms: int | None = None) -> None:
        """Apply what is due: fail-safe expiry (rollback) and window timeout."""
        now = self.now_ms() if now_ms is None else now_ms
        if self.failsafe.expired(now):
            self.expire_failsafe()
        if self.window.expired(now):
            self.window.close()
            self.window_changed()

    def on_pase_established(self, session: Any = None) -> None:
        """A commissioner opened PASE: arm the fail-safe for 60 s (Core spec 5.5, step 'arm fail-safe')."""
        if not self.failsafe.armed:
            self.failsafe.arm(self.now_ms(), self.PASE_FAILSAFE_S, None)

    def on_pase_failed(self) -> None:
        if self.window.record_failure():
            self.window_changed()

    # ---- state changes ---------------------------------------------------------------
    def notify(self, event: NodeEvent) -> None:
        for listener in list(self.listeners):
            listener(event)

    def window_changed(self) -> None:
        self.administrator.touch("WindowStatus", "AdminFabricIndex", "AdminVendorId")
        self.notify(NodeEvent("window_changed"))

    def expire_failsafe(self) -> None:
        """Fail-safe expiry or ArmFailSafe(0): roll back everything staged under it."""
        bound = self.failsafe.bound_session
        if bound is not None and getattr(bound, "fabric_index", None) == self.failsafe.added_fabric:
            set_session_fabric(bound, None)
        removed = self.failsafe.rollback(self.table)
        self.general.set("Breadcrumb", 0)
        self.operational_credentials._changed()
        if removed:
            self.access_control.touch("Acl")
            self.group_keys.touch("GroupKeyMap")
        self.notify(NodeEvent("failsafe_expired", removed=tuple(removed)))

    def complete_commissioning(self, fabric_index: int | None) -> None:
        self.failsafe.commit(self.table)
        self.table.save()
        was_open = self.window.is_open
        self.window.close()
        self.operational_credentials._changed()
        self.notify(NodeEvent("commissioning_complete", fabric_index))
        if was_open:
            self.window_changed()

    def remove_fabric(self, fabric_index: int) -> None:
        fabric = self.table.remove(fabric_index)
        fs = self.failsafe
        if fs.added_fabric == fabric_index:
            if fs.bound_session is not None:
                set_session_fabric(fs.bound_session, None)
            fs.added_fabric, fs.bound_session = None, None
        if fs.updated_fabric == fabric_index:
            fs.updated_fabric = None
        self.table.save()
        for server in self.device.servers():   # the fabric's groups, scenes, bindings, ... go too
            server.forget_fabric(fabric_index)
        self.operational_credentials._changed()
        self.access_control.touch("Acl")
        self.group_keys.touch("GroupKeyMap")
        self.administrator.touch("AdminFabricIndex")   # null once its fabric is gone
        for entry in fabric.acl:
            self.acl_changed(fabric_index, ChangeType.kRemoved, entry)
        self.notify(NodeEvent("fabric_removed", fabric_index))
        if not len(self.table) and not self.window.is_open:
            # With no administrator left the node would be unreachable: offer the initial window again.
            self.window.open_initial(self.now_ms())
            self.window_changed()

    def acl_changed(self, fabric_index: int, change: ChangeType, entry: Any) -> None:
        """AccessControlEntryChanged, naming the admin who made the change."""
        access = current_access.get()
        node_id = access.peer_node_id if access is not None and access.auth_mode == "case" else None
        passcode_id = 0 if access is not None and access.auth_mode == "pase" else None
        self.access_control.emit_event(AC.Events.AccessControlEntryChanged(
            adminNodeID=node_id if node_id is not None else NullValue,
            adminPasscodeID=passcode_id if passcode_id is not None else NullValue,
            changeType=change, latestValue=entry, fabricIndex=fabric_index))
