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
  - `session.keys.attestation_challenge` (16 bytes, `twin.protocol.session_types.EstablishedSession`
    shape) for AttestationRequest and CSRRequest, which sign elements || challenge with the DAC;
  - the same `session` object for every command of one session: AddNOC binds the new fabric
    to the PASE session it arrived on, and `fabric_for_session(session)` / the accessing fabric
    of later commands on that session report it.
  - optionally `fabric_filtered` (default True): False lets a read of Fabrics show every fabric;
    NOCs and ACL (fabric-sensitive) always show only the accessing fabric's entries.
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
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from chip.clusters.Types import NullValue

from clusters.base import AccessContext, ClusterServer, Clusters, MatterError, Status, current_access
from clusters.device import Device
from twin.node.credentials import DeviceCredentials
from twin.protocol.attestation import attestation_elements, generate_csr, nocsr_elements
from twin.protocol.certs import CertificateError
from twin.node.fabrics import IPK_KEY_SET_ID, MAX_CUMULATIVE_FAILSAFE_S, DEFAULT_FAILSAFE_EXPIRY_S, Fabric, FabricError, FabricTable, FailSafe, NocStatus, check_root_certificate, is_cat_subject, is_operational_node_id
from twin.protocol.spake2p import PBKDF_MAX_ITERATIONS, PBKDF_MAX_SALT_LEN, PBKDF_MIN_ITERATIONS, PBKDF_MIN_SALT_LEN, Spake2pError, make_verifier, parse_verifier

__all__ = ["NodeCommissioning", "CommissioningWindow", "PakeParameters", "NodeEvent",
           "GeneralCommissioningServer", "NetworkCommissioningServer", "OperationalCredentialsServer",
           "AccessControlServer", "GroupKeyManagementServer", "GeneralDiagnosticsServer",
           "AdministratorCommissioningServer"]

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
DEFAULT_PBKDF_ITERATIONS = 1000


# --- the commissioning window ------------------------------------------------------------

@dataclass(frozen=True)
class PakeParameters:
    """What PASE runs with: the SPAKE2+ verifier (w0 || L) and the PBKDF parameters."""
    verifier: bytes
    salt: bytes
    iterations: int


class CommissioningWindow:
    """Open/closed, basic/enhanced, timeout and failed PASE attempts (Core spec 5.4.2, 11.19).

    The *initial* window of a node without fabrics uses the node's own passcode and reports
    WindowStatus WindowNotOpen, as the spec says for a window no administrator opened.
    """

    MAX_FAILED_ATTEMPTS = 20
    MIN_TIMEOUT_S, MAX_TIMEOUT_S = 180, 900

    def __init__(self, basic: PakeParameters, discriminator: int):
        self.basic = basic
        self.basic_discriminator = discriminator
        self._reset()

    def _reset(self) -> None:
        self.is_open = False
        self.status = WindowStatus.kWindowNotOpen
        self.expires_ms: int | None = None
        self.failed_attempts = 0
        self.admin_fabric_index: int | None = None
        self.admin_vendor_id: int | None = None
        self._pake: PakeParameters | None = None
        self._discriminator: int | None = None

    def _open(self, now_ms: int, timeout_s: int | None, pake: PakeParameters, discriminator: int,
              status: WindowStatus, admin_fabric_index: int | None, admin_vendor_id: int | None) -> None:
        if timeout_s is not None and not (status == WindowStatus.kWindowNotOpen
                                          or self.MIN_TIMEOUT_S <= timeout_s <= self.MAX_TIMEOUT_S):
            raise ValueError(f"commissioning timeout {timeout_s} s outside {self.MIN_TIMEOUT_S}..{self.MAX_TIMEOUT_S}")
        self._reset()
        self.is_open, self.status = True, status
        self.expires_ms = now_ms + timeout_s * 1000 if timeout_s is not None else None
        self._pake, self._discriminator = pake, discriminator
        self.admin_fabric_index, self.admin_vendor_id = admin_fabric_index, admin_vendor_id

    def open_initial(self, now_ms: int, timeout_s: int | None = None) -> None:
        """The factory-new window with the node's passcode; no timeout unless given."""
        self._open(now_ms, timeout_s, self.basic, self.basic_discriminator, WindowStatus.kWindowNotOpen, None, None)

    def open_basic(self, now_ms: int, timeout_s: int, admin_fabric_index: int | None = None,
                   admin_vendor_id: int | None = None) -> None:
        self._open(now_ms, timeout_s, self.basic, self.basic_discriminator, WindowStatus.kBasicWindowOpen,
                   admin_fabric_index, admin_vendor_id)

    def open_enhanced(self, now_ms: int, timeout_s: int, pake: PakeParameters, discriminator: int,
                      admin_fabric_index: int | None = None, admin_vendor_id: int | None = None) -> None:
        self._open(now_ms, timeout_s, pake, discriminator, WindowStatus.kEnhancedWindowOpen,
                   admin_fabric_index, admin_vendor_id)

    def close(self) -> None:
        self._reset()

    def pase_verifier(self) -> PakeParameters | None:
        """The verifier PASE must use now, or None while the window is closed."""
        return self._pake if self.is_open else None

    @property
    def discriminator(self) -> int | None:
        """The discriminator to advertise while open (an enhanced window brings its own)."""
        return self._discriminator if self.is_open else None

    def record_failure(self) -> bool:
        """Count a failed PASE attempt; True when this closed the window."""
        if not self.is_open:
            return False
        self.failed_attempts += 1
        if self.failed_attempts >= self.MAX_FAILED_ATTEMPTS:
            self.close()
            return True
        return False

    def expired(self, now_ms: int) -> bool:
        return self.is_open and self.expires_ms is not None and now_ms >= self.expires_ms

    def next_timer(self) -> int | None:
        return self.expires_ms if self.is_open else None


# --- events for the runtime --------------------------------------------------------------

@dataclass(frozen=True)
class NodeEvent:
    """Something the runtime reacts to (advertise, withdraw, close sessions).

    kind: "fabric_added" (AddNOC, uncommitted), "fabric_updated" (UpdateNOC),
    "commissioning_complete" (close PASE sessions; advertise the operational instance),
    "fabric_removed" (close that fabric's sessions; withdraw its operational instance),
    "failsafe_expired" (close PASE sessions; `removed` lists the fabrics rolled back),
    "window_changed" (advertise or withdraw `_matterc._udp` with `window.discriminator`).
    """
    kind: str
    fabric_index: int | None = None
    removed: tuple[int, ...] = ()


# --- shared helpers ----------------------------------------------------------------------

def _debug(text: str) -> str:
    return text[:MAX_DEBUG_TEXT]


def _noc_response(status: NocStatus, fabric_index: int | None = None, text: str | None = None):
    return OC.Commands.NOCResponse(statusCode=status, fabricIndex=fabric_index,
                                   debugText=_debug(text) if text else None)


def _set_session_fabric(session: Any, fabric_index: int | None) -> None:
    """AddNOC augments the PASE session context with the new fabric (spec 11.18.6.8), where
    the runtime's session object takes it; `fabric_for_session` answers for the others."""
    try:
        session.fabric_index = fabric_index
    except AttributeError:  # a frozen EstablishedSession, or no session at all
        pass


class _NodeServer(ClusterServer):
    """A root-endpoint server whose state lives in NodeCommissioning, not in snapshots.
    Its `get()` reads that state, and whatever changes it calls `touch()`, so subscribers
    hear of it: nothing here is `derived` (sampled)."""

    in_snapshot = False

    def __init__(self, node: "NodeCommissioning", feature_map: int = 0, **initial: Any):
        self.node = node
        super().__init__(feature_map=feature_map, **initial)

    def touch(self, *names: str) -> None:
        """A derived attribute changed: bump DataVersion and tell listeners (subscriptions)."""
        self.data_version = (self.data_version + 1) & 0xFFFFFFFF
        for name in names:
            for listener in self.listeners:
                listener(self, name)

    def invoke(self, command, fields=None):
        self.node.poll()  # a command after the fail-safe's expiry must see the rolled-back state
        return super().invoke(command, fields)

    def write(self, attribute, data) -> None:
        self.node.poll()
        super().write(attribute, data)


# --- GeneralCommissioning ----------------------------------------------------------------

class GeneralCommissioningServer(_NodeServer):
    cluster = GC
    revision = 1
    attributes = ("Breadcrumb", "BasicCommissioningInfo", "RegulatoryConfig", "LocationCapability",
                  "SupportsConcurrentConnection")
    writable = frozenset({"Breadcrumb"})
    commands = ("ArmFailSafe", "SetRegulatoryConfig", "CommissioningComplete")
    notes = ("ArmFailSafe(0) disarms and rolls back; CommissioningComplete must come over CASE on the "
             "fabric that AddNOC created.",)

    def defaults(self) -> dict[str, Any]:
        return {"Breadcrumb": 0,
                "BasicCommissioningInfo": GC.Structs.BasicCommissioningInfo(
                    failSafeExpiryLengthSeconds=DEFAULT_FAILSAFE_EXPIRY_S,
                    maxCumulativeFailsafeSeconds=MAX_CUMULATIVE_FAILSAFE_S),
                "RegulatoryConfig": RegulatoryLocation.kIndoorOutdoor,
                "LocationCapability": RegulatoryLocation.kIndoorOutdoor,
                "SupportsConcurrentConnection": True}

    def get(self, name: str) -> Any:
        if name == "RegulatoryConfig":  # persisted with the node, like the fabrics
            stored = self.node.table.settings.get("regulatory_config")
            return RegulatoryLocation(stored) if stored is not None else self.get("LocationCapability")
        return super().get(name)

    def _response(self, cls, error: CommissioningError, text: str = ""):
        return cls(errorCode=error, debugText=_debug(text))

    def ArmFailSafe(self, request):
        node, fs = self.node, self.node.failsafe
        access, fabric = current_access.get(), node.accessing_fabric()
        resp = GC.Commands.ArmFailSafeResponse
        if not fs.armed and node.window.is_open and access is not None and access.auth_mode == "case":
            return self._response(resp, CommissioningError.kBusyWithOtherAdmin,
                                  "commissioning window is open: only its PASE commissioner may arm the fail-safe")
        if fs.armed and not fs.matches(fabric):
            return self._response(resp, CommissioningError.kBusyWithOtherAdmin,
                                  f"fail-safe is armed by fabric {fs.fabric_index}")
        if request.expiryLengthSeconds == 0:
            if fs.armed:
                node.expire_failsafe()
            return self._response(resp, CommissioningError.kOk)
        fs.arm(node.now_ms(), request.expiryLengthSeconds, fabric)
        self.set("Breadcrumb", request.breadcrumb)
        return self._response(resp, CommissioningError.kOk)

    def SetRegulatoryConfig(self, request):
        resp = GC.Commands.SetRegulatoryConfigResponse
        capability = self.get("LocationCapability")
        new = request.newRegulatoryConfig
        if new == RegulatoryLocation.kUnknownEnumValue or (
                capability != RegulatoryLocation.kIndoorOutdoor and new != capability):
            return self._response(resp, CommissioningError.kValueOutsideRange,
                                  f"regulatory config {int(new)} not allowed; LocationCapability is {int(capability)}")
        code = request.countryCode
        basic = self.sibling(Clusters.BasicInformation)
        if len(code) != 2:
            raise MatterError(Status.CONSTRAINT_ERROR,
                              f"countryCode {code!r} must be two characters (ISO 3166-1 alpha-2, or XX)")
        if basic is not None:
            basic.validate_write("Location", code)  # same rule as a Location write
        self.node.table.settings["regulatory_config"] = int(new)
        self.node.table.save()
        if basic is not None:
            basic.set("Location", code)  # BasicInformation.Location is the node's country code
        self.touch("RegulatoryConfig")
        self.set("Breadcrumb", request.breadcrumb)
        return self._response(resp, CommissioningError.kOk)

    def CommissioningComplete(self, request):
        node, fs = self.node, self.node.failsafe
        resp = GC.Commands.CommissioningCompleteResponse
        access = current_access.get()
        if access is None or access.auth_mode != "case":
            return self._response(resp, CommissioningError.kInvalidAuthentication,
                                  "CommissioningComplete must arrive over a CASE session")
        if not fs.armed:
            return self._response(resp, CommissioningError.kNoFailSafe, "fail-safe is not armed")
        fabric = node.accessing_fabric()
        if fabric != fs.fabric_index:
            return self._response(resp, CommissioningError.kInvalidAuthentication,
                                  f"session fabric {fabric} is not the fail-safe's fabric {fs.fabric_index}")
        node.complete_commissioning(fabric)
        self.set("Breadcrumb", 0)
        return self._response(resp, CommissioningError.kOk)


# --- NetworkCommissioning (Ethernet) ------------------------------------------------------

class NetworkCommissioningServer(_NodeServer):
    """Ethernet feature: one always-connected interface, no network commands.

    InterfaceEnabled is writable as the spec requires; the twin keeps its UDP port either way.
    """
    cluster = NC
    revision = 1
    attributes = ("MaxNetworks", "Networks", "InterfaceEnabled", "LastNetworkingStatus", "LastNetworkID",
                  "LastConnectErrorValue")
    writable = frozenset({"InterfaceEnabled"})

    def __init__(self, node: "NodeCommissioning"):
        super().__init__(node, feature_map=int(NC.Bitmaps.Feature.kEthernetNetworkInterface))

    def defaults(self) -> dict[str, Any]:
        return {"MaxNetworks": 1,
                "Networks": [NC.Structs.NetworkInfoStruct(networkID=INTERFACE_NAME.encode(), connected=True)],
                "InterfaceEnabled": True, "LastNetworkingStatus": NullValue, "LastNetworkID": NullValue,
                "LastConnectErrorValue": NullValue}


# --- OperationalCredentials --------------------------------------------------------------

class OperationalCredentialsServer(_NodeServer):
    cluster = OC
    revision = 1
    attributes = ("NOCs", "Fabrics", "SupportedFabrics", "CommissionedFabrics", "TrustedRootCertificates",
                  "CurrentFabricIndex")
    commands = ("AttestationRequest", "CertificateChainRequest", "CSRRequest", "AddNOC", "UpdateNOC",
                "UpdateFabricLabel", "RemoveFabric", "AddTrustedRootCertificate")
    notes = ("NOCs shows only the accessing fabric's entry (its fields are fabric-sensitive).",)

    def defaults(self) -> dict[str, Any]:
        return {"NOCs": [], "Fabrics": [], "SupportedFabrics": 0, "CommissionedFabrics": 0,
                "TrustedRootCertificates": [], "CurrentFabricIndex": 0}

    def get(self, name: str) -> Any:
        node, table = self.node, self.node.table
        if name == "NOCs":
            return [OC.Structs.NOCStruct(noc=f.noc, icac=f.icac if f.icac is not None else NullValue,
                                         fabricIndex=f.fabric_index) for f in node.visible_fabrics()]
        if name == "Fabrics":
            return [OC.Structs.FabricDescriptorStruct(
                rootPublicKey=f.root_public_key, vendorID=f.vendor_id, fabricID=f.fabric_id, nodeID=f.node_id,
                label=f.label, fabricIndex=f.fabric_index) for f in node.visible_fabrics(sensitive=False)]
        if name == "SupportedFabrics":
            return table.max_fabrics
        if name == "CommissionedFabrics":
            return len(table)
        if name == "TrustedRootCertificates":
            roots = [f.rcac for f in table]
            if node.failsafe.pending_root is not None:
                roots.append(node.failsafe.pending_root)
            return list(dict.fromkeys(roots))
        if name == "CurrentFabricIndex":
            return node.accessing_fabric() or 0
        return super().get(name)

    def _changed(self) -> None:
        self.touch("NOCs", "Fabrics", "CommissionedFabrics", "TrustedRootCertificates", "CurrentFabricIndex")

    def _require_failsafe(self, command: str) -> int | None:
        fabric = self.node.accessing_fabric()
        if not self.node.failsafe.matches(fabric):
            raise MatterError(Status.FAILSAFE_REQUIRED,
                              f"{command} needs the fail-safe armed (ArmFailSafe) by this session's fabric")
        return fabric

    @staticmethod
    def _check_nonce(nonce: bytes, what: str) -> None:
        if len(nonce) != NONCE_SIZE:
            raise MatterError(Status.INVALID_COMMAND, f"{what} is {len(nonce)} bytes; accepted: 32")

    def _sign(self, elements: bytes, what: str) -> bytes:
        if len(elements) > MAX_ELEMENTS_SIZE:
            raise MatterError(Status.FAILURE, f"{what} would be {len(elements)} bytes; the limit is 900")
        return self.node.credentials.sign(elements, self.node.attestation_challenge())

    def AttestationRequest(self, request):
        self._check_nonce(request.attestationNonce, "attestationNonce")
        elements = attestation_elements(self.node.certification_declaration, request.attestationNonce)
        signature = self._sign(elements, "AttestationElements")
        return OC.Commands.AttestationResponse(attestationElements=elements, attestationSignature=signature)

    def CertificateChainRequest(self, request):
        from cryptography.hazmat.primitives.serialization import Encoding
        kind = OC.Enums.CertificateChainTypeEnum
        creds = self.node.credentials
        if request.certificateType == kind.kDACCertificate:
            return OC.Commands.CertificateChainResponse(certificate=creds.dac.public_bytes(Encoding.DER))
        if request.certificateType == kind.kPAICertificate:
            return OC.Commands.CertificateChainResponse(certificate=creds.pai.public_bytes(Encoding.DER))
        raise MatterError(Status.INVALID_COMMAND,
                          f"certificateType {int(request.certificateType)}; accepted: 1 (DAC), 2 (PAI)")

    def CSRRequest(self, request):
        self._check_nonce(request.CSRNonce, "CSRNonce")
        fs = self.node.failsafe
        self._require_failsafe("CSRRequest")
        access = current_access.get()
        if request.isForUpdateNOC and access is not None and access.auth_mode == "pase":
            raise MatterError(Status.INVALID_COMMAND, "CSRRequest for UpdateNOC must come over CASE, not PASE")
        if fs.noc_invoked:
            raise MatterError(Status.CONSTRAINT_ERROR,
                              "CSRRequest after AddNOC/UpdateNOC in the same fail-safe; re-arm to start over")
        challenge = self.node.attestation_challenge()
        csr, key = generate_csr(self.node.rng)
        elements = nocsr_elements(csr, request.CSRNonce)
        if len(elements) > MAX_ELEMENTS_SIZE:
            raise MatterError(Status.FAILURE, "NOCSRElements would exceed 900 bytes")
        signature = self.node.credentials.sign(elements, challenge)
        fs.pending_key, fs.csr_for_update = key, bool(request.isForUpdateNOC)
        return OC.Commands.CSRResponse(NOCSRElements=elements, attestationSignature=signature)

    def AddTrustedRootCertificate(self, request):
        fs = self.node.failsafe
        self._require_failsafe("AddTrustedRootCertificate")
        if fs.pending_root is not None or fs.noc_invoked:
            raise MatterError(Status.CONSTRAINT_ERROR,
                              "a root certificate was already added (or AddNOC/UpdateNOC ran) under this fail-safe")
        try:
            check_root_certificate(request.rootCACertificate)
        except CertificateError as e:
            raise MatterError(Status.INVALID_COMMAND, f"rootCACertificate: {e}") from None
        fs.pending_root = bytes(request.rootCACertificate)
        self.touch("TrustedRootCertificates")

    def AddNOC(self, request):
        node, fs, table = self.node, self.node.failsafe, self.node.table
        self._require_failsafe("AddNOC")
        if fs.noc_invoked:
            raise MatterError(Status.CONSTRAINT_ERROR, "AddNOC/UpdateNOC already ran under this fail-safe")
        if fs.pending_key is None:
            return _noc_response(NocStatus.kMissingCsr, text="no CSRRequest under this fail-safe")
        if fs.csr_for_update:
            raise MatterError(Status.CONSTRAINT_ERROR, "the CSRRequest was for UpdateNOC, not AddNOC")
        if fs.pending_root is None:
            return _noc_response(NocStatus.kInvalidNOC, text="no AddTrustedRootCertificate under this fail-safe")
        if len(request.IPKValue) != 16:
            raise MatterError(Status.INVALID_COMMAND, f"IPKValue is {len(request.IPKValue)} bytes; accepted: 16")
        if not 1 <= request.adminVendorId <= 0xFFFE:
            raise MatterError(Status.INVALID_COMMAND,
                              f"adminVendorId {request.adminVendorId:#x} is not a vendor id (1..0xfffe)")
        subject = request.caseAdminSubject
        if not (is_operational_node_id(subject) or is_cat_subject(subject)):
            return _noc_response(NocStatus.kInvalidAdminSubject,
                                 text=f"caseAdminSubject {subject:#x} is neither an operational node id nor a CAT")
        if table.is_full():
            return _noc_response(NocStatus.kTableFull, text=f"all {table.max_fabrics} fabrics are in use")
        try:
            # An empty ICACValue means "no intermediate" (matter.js sends b"" rather than omitting it).
            fabric = Fabric.build(table.allocate_index(), fs.pending_root, request.ICACValue or None, request.NOCValue,
                                  fs.pending_key, request.IPKValue, request.adminVendorId)
        except FabricError as e:
            return _noc_response(e.status, text=str(e))
        if table.find(fabric.root_public_key, fabric.fabric_id) is not None:
            return _noc_response(NocStatus.kFabricConflict,
                                 text=f"this node is already on fabric {fabric.fabric_id:#x} under that root")
        # The new fabric's administrator: CASE, the given subject, every target.
        fabric.acl.append(AC.Structs.AccessControlEntryStruct(
            privilege=Privilege.kAdminister, authMode=AuthMode.kCase, subjects=[subject], targets=NullValue,
            fabricIndex=fabric.fabric_index))
        table.add_pending(fabric)
        access = current_access.get()
        fs.added_fabric = fs.fabric_index = fabric.fabric_index
        fs.pending_root, fs.pending_key, fs.csr_for_update = None, None, None
        if access is not None and access.auth_mode == "pase":
            fs.bound_session = access.session
            _set_session_fabric(access.session, fabric.fabric_index)
        table.save()
        self._changed()
        node.access_control.touch("Acl")
        node.acl_changed(fabric.fabric_index, ChangeType.kAdded, fabric.acl[0])
        node.notify(NodeEvent("fabric_added", fabric.fabric_index))
        return _noc_response(NocStatus.kOk, fabric.fabric_index)

    def UpdateNOC(self, request):
        node, fs, table = self.node, self.node.failsafe, self.node.table
        fabric_index = self._require_failsafe("UpdateNOC")
        fabric = table.get(fabric_index)
        if fabric is None:
            raise MatterError(Status.INVALID_COMMAND, "UpdateNOC needs a CASE session on the fabric to update")
        if fs.noc_invoked:
            raise MatterError(Status.CONSTRAINT_ERROR, "AddNOC/UpdateNOC already ran under this fail-safe")
        if fs.pending_key is not None and not fs.csr_for_update:
            raise MatterError(Status.CONSTRAINT_ERROR, "the CSRRequest was for AddNOC, not UpdateNOC")
        if fs.pending_root is not None or fs.pending_key is None:
            return _noc_response(NocStatus.kMissingCsr, text="UpdateNOC needs a CSRRequest(isForUpdateNOC) "
                                                             "and no new root under this fail-safe")
        try:
            updated = Fabric.build(fabric_index, fabric.rcac, request.ICACValue or None, request.NOCValue, fs.pending_key,
                                   fabric.ipk_epoch_key, fabric.vendor_id)
        except FabricError as e:
            return _noc_response(e.status, text=str(e))
        if updated.fabric_id != fabric.fabric_id:
            return _noc_response(NocStatus.kInvalidNOC,
                                 text=f"new NOC is for fabric {updated.fabric_id:#x}, not {fabric.fabric_id:#x}")
        table.update_pending(fabric_index, updated.noc, updated.icac, updated.operational_key, updated.node_id)
        fs.updated_fabric = fabric_index
        fs.pending_key, fs.csr_for_update = None, None
        self._changed()
        node.notify(NodeEvent("fabric_updated", fabric_index))
        return _noc_response(NocStatus.kOk, fabric_index)

    def UpdateFabricLabel(self, request):
        node, table = self.node, self.node.table
        fabric = table.get(node.accessing_fabric())
        if fabric is None:
            raise MatterError(Status.UNSUPPORTED_ACCESS, "UpdateFabricLabel needs a session on a fabric")
        label = request.label
        if len(label) > MAX_LABEL:
            raise MatterError(Status.CONSTRAINT_ERROR, f"label is {len(label)} characters; at most 32")
        owner = table.label_owner(label)
        if owner is not None and owner.fabric_index != fabric.fabric_index:
            return _noc_response(NocStatus.kLabelConflict,
                                 text=f"label {label!r} is already used by fabric {owner.fabric_index}")
        fabric.label = label
        table.save()
        self.touch("Fabrics")
        return _noc_response(NocStatus.kOk, fabric.fabric_index)

    def RemoveFabric(self, request):
        index = request.fabricIndex
        if self.node.table.get(index) is None:
            return _noc_response(NocStatus.kInvalidFabricIndex, text=f"no fabric with index {index}")
        self.node.remove_fabric(index)
        return _noc_response(NocStatus.kOk, index)


# --- AccessControl -----------------------------------------------------------------------

def _check_acl_entry(entry, where: str) -> None:
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


class AccessControlServer(_NodeServer):
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

    def write(self, attribute, data) -> None:
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
        for entry in old:
            self.node.acl_changed(fabric.fabric_index, ChangeType.kRemoved, entry)
        for entry in entries:
            self.node.acl_changed(fabric.fabric_index, ChangeType.kAdded, entry)


# --- GroupKeyManagement ------------------------------------------------------------------

class GroupKeyManagementServer(_NodeServer):
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
        fabric = self.node.table.get(self.node.accessing_fabric())
        if fabric is None:
            raise MatterError(Status.UNSUPPORTED_ACCESS, f"{what} is fabric-scoped: use a session on a fabric")
        return fabric

    def write(self, attribute, data) -> None:
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

    def KeySetWrite(self, request):
        fabric = self._fabric("KeySetWrite")
        ks = request.groupKeySet
        keys = [ks.epochKey0, ks.epochKey1, ks.epochKey2]
        times = [ks.epochStartTime0, ks.epochStartTime1, ks.epochStartTime2]
        invalid = lambda msg: MatterError(Status.INVALID_COMMAND, f"KeySetWrite: {msg}")  # noqa: E731
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

    def KeySetRead(self, request):
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

    def KeySetRemove(self, request):
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

    def KeySetReadAllIndices(self, request):
        fabric = self._fabric("KeySetReadAllIndices")
        return GKM.Commands.KeySetReadAllIndicesResponse(
            groupKeySetIDs=[IPK_KEY_SET_ID, *sorted(fabric.group_key_sets)])


# --- GeneralDiagnostics ------------------------------------------------------------------

class GeneralDiagnosticsServer(_NodeServer):
    """Interfaces, reboot count (persisted), uptime on the runtime's clock, TimeSnapshot.

    TestEventTriggersEnabled is false: the twin takes no test event triggers over Matter.
    """
    cluster = GD
    revision = 2
    attributes = ("NetworkInterfaces", "RebootCount", "UpTime", "BootReason", "TestEventTriggersEnabled")
    commands = ("TestEventTrigger", "TimeSnapshot")
    changes_omitted = frozenset({"UpTime"})   # spec quality C: read it, never reported on change

    def __init__(self, node: "NodeCommissioning", hardware_address: bytes):
        super().__init__(node)
        self.hardware_address = hardware_address
        self.ipv4_addresses: list[bytes] = []
        self.ipv6_addresses: list[bytes] = []

    def defaults(self) -> dict[str, Any]:
        return {"NetworkInterfaces": [], "RebootCount": 0, "UpTime": 0,
                "BootReason": GD.Enums.BootReasonEnum.kPowerOnReboot, "TestEventTriggersEnabled": False}

    def set_addresses(self, ipv4: list[bytes], ipv6: list[bytes]) -> None:
        """The runtime reports the addresses it serves on (4- and 16-byte forms)."""
        self.ipv4_addresses, self.ipv6_addresses = [bytes(a) for a in ipv4], [bytes(a) for a in ipv6]
        self.touch("NetworkInterfaces")

    def get(self, name: str) -> Any:
        if name == "NetworkInterfaces":
            return [GD.Structs.NetworkInterface(
                name=INTERFACE_NAME, isOperational=True, offPremiseServicesReachableIPv4=NullValue,
                offPremiseServicesReachableIPv6=NullValue, hardwareAddress=self.hardware_address,
                IPv4Addresses=list(self.ipv4_addresses), IPv6Addresses=list(self.ipv6_addresses),
                type=GD.Enums.InterfaceTypeEnum.kEthernet)]
        if name == "RebootCount":
            return self.node.table.counters.get("reboot_count", 0)
        if name == "UpTime":
            return self.node.uptime_ms() // 1000
        return super().get(name)

    def TestEventTrigger(self, request):
        if len(request.enableKey) != 16:
            raise MatterError(Status.CONSTRAINT_ERROR, "enableKey must be 16 bytes")
        raise MatterError(Status.CONSTRAINT_ERROR,
                          "test event triggers are disabled on this node (TestEventTriggersEnabled is false)")

    def TimeSnapshot(self, request):
        return GD.Commands.TimeSnapshotResponse(systemTimeMs=self.node.uptime_ms(), posixTimeMs=NullValue)


# --- AdministratorCommissioning ----------------------------------------------------------

class AdministratorCommissioningServer(_NodeServer):
    cluster = ADC
    revision = 1
    attributes = ("WindowStatus", "AdminFabricIndex", "AdminVendorId")
    commands = ("OpenCommissioningWindow", "OpenBasicCommissioningWindow", "RevokeCommissioning")
    notes = ("OpenCommissioningWindow takes a SPAKE2+ verifier (w0 || L, 97 bytes), PBKDF salt (16..32 bytes) "
             "and iterations (1000..100000); timeouts 180..900 s.",)

    def __init__(self, node: "NodeCommissioning"):
        super().__init__(node, feature_map=int(ADC.Bitmaps.Feature.kBasic))

    def defaults(self) -> dict[str, Any]:
        return {"WindowStatus": WindowStatus.kWindowNotOpen, "AdminFabricIndex": NullValue, "AdminVendorId": NullValue}

    def get(self, name: str) -> Any:
        window = self.node.window
        if name == "WindowStatus":
            return window.status
        if name == "AdminFabricIndex":  # null once that fabric is gone
            index = window.admin_fabric_index
            return index if index is not None and self.node.table.get(index) is not None else NullValue
        if name == "AdminVendorId":
            return window.admin_vendor_id if window.admin_vendor_id is not None else NullValue
        return super().get(name)

    def _check_can_open(self) -> None:
        if self.node.window.is_open:
            raise MatterError(Status.FAILURE, "a commissioning window is already open", int(AdminStatus.kBusy))
        if self.node.failsafe.armed:
            raise MatterError(Status.FAILURE, "the fail-safe is armed: commissioning is in progress",
                              int(AdminStatus.kBusy))

    def _check_timeout(self, timeout: int) -> None:
        lo, hi = CommissioningWindow.MIN_TIMEOUT_S, CommissioningWindow.MAX_TIMEOUT_S
        if not lo <= timeout <= hi:
            raise MatterError(Status.INVALID_COMMAND, f"commissioningTimeout {timeout} s outside {lo}..{hi}")

    def _admin(self) -> tuple[int | None, int | None]:
        fabric = self.node.table.get(self.node.accessing_fabric())
        return (fabric.fabric_index, fabric.vendor_id) if fabric is not None else (None, None)

    def OpenCommissioningWindow(self, request):
        self._check_can_open()
        pake_error = int(AdminStatus.kPAKEParameterError)
        try:
            parse_verifier(request.PAKEPasscodeVerifier)
        except Spake2pError as e:
            raise MatterError(Status.FAILURE, f"PAKEPasscodeVerifier: {e}", pake_error) from None
        if not PBKDF_MIN_ITERATIONS <= request.iterations <= PBKDF_MAX_ITERATIONS:
            raise MatterError(Status.FAILURE, f"iterations {request.iterations} outside "
                              f"{PBKDF_MIN_ITERATIONS}..{PBKDF_MAX_ITERATIONS}", pake_error)
        if not PBKDF_MIN_SALT_LEN <= len(request.salt) <= PBKDF_MAX_SALT_LEN:
            raise MatterError(Status.FAILURE, f"salt is {len(request.salt)} bytes; accepted: "
                              f"{PBKDF_MIN_SALT_LEN}..{PBKDF_MAX_SALT_LEN}", pake_error)
        self._check_timeout(request.commissioningTimeout)
        if request.discriminator > 0xFFF:
            raise MatterError(Status.CONSTRAINT_ERROR, f"discriminator {request.discriminator} outside 0..4095")
        pake = PakeParameters(bytes(request.PAKEPasscodeVerifier), bytes(request.salt), request.iterations)
        self.node.window.open_enhanced(self.node.now_ms(), request.commissioningTimeout, pake,
                                       request.discriminator, *self._admin())
        self.node.window_changed()

    def OpenBasicCommissioningWindow(self, request):
        self._check_can_open()
        self._check_timeout(request.commissioningTimeout)
        self.node.window.open_basic(self.node.now_ms(), request.commissioningTimeout, *self._admin())
        self.node.window_changed()

    def RevokeCommissioning(self, request):
        if self.node.failsafe.armed:
            self.node.expire_failsafe()
        if not self.node.window.is_open:
            raise MatterError(Status.FAILURE, "no commissioning window is open", int(AdminStatus.kWindowNotOpen))
        self.node.window.close()
        self.node.window_changed()


# --- the node's commissioning state ------------------------------------------------------

class NodeCommissioning:
    """Fabric table, fail-safe and commissioning window of one node, and its endpoint-0 servers.

    `storage_dir` is this node's own directory (e.g. `<storage>/<device_id>`; the DAC lives there
    too). `now_ms` is the runtime's millisecond clock; the fail-safe, the window timeout and
    UpTime run on it. `rng` draws the PBKDF salt, CSR key pairs and the interface address.
    """

    PASE_FAILSAFE_S = DEFAULT_FAILSAFE_EXPIRY_S

    def __init__(self, storage_dir: str | os.PathLike, device: Device, credentials: DeviceCredentials | None,
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

    def to_case_fabrics(self):
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

    def visible_fabrics(self, sensitive: bool = True) -> list[Fabric]:
        """Whose entries a fabric-scoped list shows: all of them to local callers; over Matter the
        accessing fabric's, or every fabric's for a read that is not fabric-filtered (the IM may set
        `fabric_filtered=False` on its access context) of a list without fabric-sensitive fields."""
        access = current_access.get()
        if access is None or (not sensitive and getattr(access, "fabric_filtered", True) is False):
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
            _set_session_fabric(bound, None)
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
                _set_session_fabric(fs.bound_session, None)
            fs.added_fabric, fs.bound_session = None, None
        if fs.updated_fabric == fabric_index:
            fs.updated_fabric = None
        self.table.save()
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
