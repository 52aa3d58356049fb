"""What the endpoint-0 servers share: spec aliases, limits, helpers and `NodeServer`."""
from __future__ import annotations

from typing import Any

from clusters.base import Clusters, ClusterServer
from twin.node.fabrics import (
    NocStatus,
)

GC = Clusters.GeneralCommissioning
NC = Clusters.NetworkCommissioning
OC = Clusters.OperationalCredentials
AC = Clusters.AccessControl
GKM = Clusters.GroupKeyManagement
GD = Clusters.GeneralDiagnostics
ADC = Clusters.AdministratorCommissioning

CommissioningError = GC.Enums.CommissioningErrorEnum
RegulatoryLocation = GC.Enums.RegulatoryLocationTypeEnum
WindowStatus = ADC.Enums.CommissioningWindowStatusEnum
AdminStatus = ADC.Enums.StatusCode
Privilege = AC.Enums.AccessControlEntryPrivilegeEnum
AuthMode = AC.Enums.AccessControlEntryAuthModeEnum
ChangeType = AC.Enums.ChangeTypeEnum

NONCE_SIZE = 32
MAX_ELEMENTS_SIZE = 900          # AttestationElements / NOCSRElements (spec 11.18.4.6, 11.18.4.9)
MAX_DEBUG_TEXT = 128
MAX_LABEL = 32
SUBJECTS_PER_ENTRY, TARGETS_PER_ENTRY, ENTRIES_PER_FABRIC = 4, 3, 4
MAX_GROUP_KEYS_PER_FABRIC = 3    # the IPK plus two operational group key sets
MAX_GROUPS_PER_FABRIC = 0        # no endpoint has a Groups cluster, so no group can be mapped
INTERFACE_NAME = "twin"


# --- shared helpers ----------------------------------------------------------------------

def debug_text(text: str) -> str:
    return text[:MAX_DEBUG_TEXT]


def noc_response(status: NocStatus, fabric_index: int | None = None, text: str | None = None) -> Any:
    return OC.Commands.NOCResponse(statusCode=status, fabricIndex=fabric_index,
                                   debugText=debug_text(text) if text else None)


def set_session_fabric(session: Any, fabric_index: int | None) -> None:
    """AddNOC augments the PASE session context with the new fabric (spec 11.18.6.8), where
    the runtime's session object takes it; `fabric_for_session` answers for the others."""
    try:
        session.fabric_index = fabric_index
    except AttributeError:  # a frozen EstablishedSession, or no session at all
        pass


class NodeServer(ClusterServer):
    """A root-endpoint server whose state lives in NodeCommissioning, not in snapshots.
    Its `get()` reads that state, and whatever changes it calls `touch()`, so subscribers
    hear of it: nothing here is `derived` (sampled)."""

    in_snapshot = False

    def __init__(self, node: Any, feature_map: int = 0, **initial: Any):
        # node: the NodeCommissioning that owns this server (commissioning.py imports this package)
        self.node = node
        super().__init__(feature_map=feature_map, **initial)

    def touch(self, *names: str) -> None:
        """A derived attribute changed: bump DataVersion and tell listeners (subscriptions)."""
        self.data_version = (self.data_version + 1) & 0xFFFFFFFF
        for name in names:
            for listener in self.listeners:
                listener(self, name)

    def invoke(self, command: Any, fields: Any = None) -> Any:
        self.node.poll()  # a command after the fail-safe's expiry must see the rolled-back state
        return super().invoke(command, fields)

    def write(self, attribute: Any, data: Any) -> None:
        self.node.poll()
        super().write(attribute, data)
