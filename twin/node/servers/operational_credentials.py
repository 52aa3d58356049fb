"""OperationalCredentials: attestation, CSR, NOCs, trusted roots and fabrics (Core spec 11.18)."""
from __future__ import annotations

from typing import Any

from chip.clusters.Types import NullValue
from cryptography.hazmat.primitives.serialization import Encoding

from clusters.base import MatterError, Status, current_access
from clusters.constraints import utf8_length
from matter_protocol.attestation import attestation_elements, generate_csr, nocsr_elements
from matter_protocol.certs import CertificateError
from twin.node.fabrics import (
    Fabric,
    FabricError,
    NocStatus,
    check_root_certificate,
    is_cat_subject,
    is_operational_node_id,
)
from twin.node.servers.base import (
    AC,
    MAX_ELEMENTS_SIZE,
    MAX_LABEL,
    NONCE_SIZE,
    OC,
    AuthMode,
    ChangeType,
    NodeServer,
    Privilege,
    noc_response,
    set_session_fabric,
)
from twin.node.window import NodeEvent


class OperationalCredentialsServer(NodeServer):
    cluster = OC
    revision = 1
    attributes = ("NOCs", "Fabrics", "SupportedFabrics", "CommissionedFabrics", "TrustedRootCertificates",
                  "CurrentFabricIndex")
    commands = ("AttestationRequest", "CertificateChainRequest", "CSRRequest", "AddNOC", "UpdateNOC",
                "UpdateFabricLabel", "RemoveFabric", "AddTrustedRootCertificate")
    notes = ("A read that is not fabric-filtered shows every fabric's NOCs entry, other fabrics' "
             "without NOC and ICAC (fabric-sensitive).",)

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
                label=f.label, fabricIndex=f.fabric_index) for f in node.visible_fabrics()]
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
        fabric: int | None = self.node.accessing_fabric()
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
        signature: bytes = self.node.credentials.sign(elements, self.node.attestation_challenge())
        return signature

    def AttestationRequest(self, request: Any) -> Any:
        self._check_nonce(request.attestationNonce, "attestationNonce")
        elements = attestation_elements(self.node.certification_declaration, request.attestationNonce)
        signature = self._sign(elements, "AttestationElements")
        return OC.Commands.AttestationResponse(attestationElements=elements, attestationSignature=signature)

    def CertificateChainRequest(self, request: Any) -> Any:
        kind = OC.Enums.CertificateChainTypeEnum
        creds = self.node.credentials
        if request.certificateType == kind.kDACCertificate:
            return OC.Commands.CertificateChainResponse(certificate=creds.dac.public_bytes(Encoding.DER))
        if request.certificateType == kind.kPAICertificate:
            return OC.Commands.CertificateChainResponse(certificate=creds.pai.public_bytes(Encoding.DER))
        raise MatterError(Status.INVALID_COMMAND,
                          f"certificateType {int(request.certificateType)}; accepted: 1 (DAC), 2 (PAI)")

    def CSRRequest(self, request: Any) -> Any:
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

    def AddTrustedRootCertificate(self, request: Any) -> Any:
        fs = self.node.failsafe
        self._require_failsafe("AddTrustedRootCertificate")
        if fs.pending_root is not None and bytes(request.rootCACertificate) == fs.pending_root:
            return   # already installed, byte for byte: succeeds with no change (Core spec 11.18.6.13)
        if fs.pending_root is not None or fs.noc_invoked:
            raise MatterError(Status.CONSTRAINT_ERROR,
                              "a root certificate was already added (or AddNOC/UpdateNOC ran) under this fail-safe")
        try:
            check_root_certificate(request.rootCACertificate)
        except CertificateError as e:
            raise MatterError(Status.INVALID_COMMAND, f"rootCACertificate: {e}") from None
        fs.pending_root = bytes(request.rootCACertificate)
        self.touch("TrustedRootCertificates")

    def AddNOC(self, request: Any) -> Any:
        node, fs, table = self.node, self.node.failsafe, self.node.table
        self._require_failsafe("AddNOC")
        if fs.noc_invoked:
            raise MatterError(Status.CONSTRAINT_ERROR, "AddNOC/UpdateNOC already ran under this fail-safe")
        if fs.pending_key is None:
            return noc_response(NocStatus.kMissingCsr, text="no CSRRequest under this fail-safe")
        if fs.csr_for_update:
            raise MatterError(Status.CONSTRAINT_ERROR, "the CSRRequest was for UpdateNOC, not AddNOC")
        if fs.pending_root is None:
            return noc_response(NocStatus.kInvalidNOC, text="no AddTrustedRootCertificate under this fail-safe")
        if len(request.IPKValue) != 16:
            raise MatterError(Status.INVALID_COMMAND, f"IPKValue is {len(request.IPKValue)} bytes; accepted: 16")
        if not 1 <= request.adminVendorId <= 0xFFFE:
            raise MatterError(Status.INVALID_COMMAND,
                              f"adminVendorId {request.adminVendorId:#x} is not a vendor id (1..0xfffe)")
        subject = request.caseAdminSubject
        if not (is_operational_node_id(subject) or is_cat_subject(subject)):
            return noc_response(NocStatus.kInvalidAdminSubject,
                                 text=f"caseAdminSubject {subject:#x} is neither an operational node id nor a CAT")
        if table.is_full():
            return noc_response(NocStatus.kTableFull, text=f"all {table.max_fabrics} fabrics are in use")
        try:
            # An empty ICACValue means "no intermediate" (matter.js sends b"" rather than omitting it).
            fabric = Fabric.build(table.allocate_index(), fs.pending_root, request.ICACValue or None, request.NOCValue,
                                  fs.pending_key, request.IPKValue, request.adminVendorId)
        except FabricError as e:
            return noc_response(e.status, text=str(e))
        if table.find(fabric.root_public_key, fabric.fabric_id) is not None:
            return noc_response(NocStatus.kFabricConflict,
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
            set_session_fabric(access.session, fabric.fabric_index)
        table.save()
        self._changed()
        node.access_control.touch("Acl")
        node.acl_changed(fabric.fabric_index, ChangeType.kAdded, fabric.acl[0])
        node.notify(NodeEvent("fabric_added", fabric.fabric_index))
        return noc_response(NocStatus.kOk, fabric.fabric_index)

    def UpdateNOC(self, request: Any) -> Any:
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
            return noc_response(NocStatus.kMissingCsr, text="UpdateNOC needs a CSRRequest(isForUpdateNOC) "
                                                             "and no new root under this fail-safe")
        try:
            updated = Fabric.build(fabric.fabric_index, fabric.rcac, request.ICACValue or None, request.NOCValue,
                                   fs.pending_key, fabric.ipk_epoch_key, fabric.vendor_id)
        except FabricError as e:
            return noc_response(e.status, text=str(e))
        if updated.fabric_id != fabric.fabric_id:
            return noc_response(NocStatus.kInvalidNOC,
                                 text=f"new NOC is for fabric {updated.fabric_id:#x}, not {fabric.fabric_id:#x}")
        table.update_pending(fabric_index, updated.noc, updated.icac, updated.operational_key, updated.node_id)
        fs.updated_fabric = fabric_index
        fs.pending_key, fs.csr_for_update = None, None
        self._changed()
        node.notify(NodeEvent("fabric_updated", fabric_index))
        return noc_response(NocStatus.kOk, fabric_index)

    def UpdateFabricLabel(self, request: Any) -> Any:
        node, table = self.node, self.node.table
        fabric = table.get(node.accessing_fabric())
        if fabric is None:
            raise MatterError(Status.UNSUPPORTED_ACCESS, "UpdateFabricLabel needs a session on a fabric")
        label = request.label
        if utf8_length(label) > MAX_LABEL:
            raise MatterError(Status.CONSTRAINT_ERROR, f"label is {utf8_length(label)} bytes long; at most {MAX_LABEL}")
        owner = table.label_owner(label)
        if owner is not None and owner.fabric_index != fabric.fabric_index:
            return noc_response(NocStatus.kLabelConflict,
                                 text=f"label {label!r} is already used by fabric {owner.fabric_index}")
        fabric.label = label
        table.save()
        self.touch("Fabrics")
        return noc_response(NocStatus.kOk, fabric.fabric_index)

    def RemoveFabric(self, request: Any) -> Any:
        index = request.fabricIndex
        if self.node.table.get(index) is None:
            return noc_response(NocStatus.kInvalidFabricIndex, text=f"no fabric with index {index}")
        self.node.remove_fabric(index)
        return noc_response(NocStatus.kOk, index)
