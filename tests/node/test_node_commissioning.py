"""Commissioning driven in-process as a controller would, against the endpoint-0 servers.

Sessions are real: PASE runs with the node's own verifier and CASE with the fabric the
node got from AddNOC, so the attestation challenge and fabric binding are the genuine ones.
"""
import contextlib
import json
import os
import random
import stat

import pytest
from chip.clusters import Objects as C
from chip.clusters.Types import NullValue
from chip.tlv import TLVReader
from cryptography import x509

from clusters.base import AccessContext, current_access
from clusters.devices import create_device
from clusters.status import MatterError, Status
from matter_protocol import certs
from matter_protocol.attestation import decode_certification_declaration, verify_attestation_signature
from matter_protocol.case import CaseInitiator, CaseResponder, FabricInfo
from matter_protocol.pase import PaseInitiator, PaseResponder
from matter_protocol.spake2p import make_verifier
from twin.node.commissioning import CommissioningWindow, NodeCommissioning, PakeParameters
from twin.node.credentials import DeviceCredentials, development_cd_signing_cert
from twin.node.fabrics import FABRICS_FILE, FabricStorageError, FabricTable

GC, OC, AC = C.GeneralCommissioning, C.OperationalCredentials, C.AccessControl
GKM, ADC, GD, NC = C.GroupKeyManagement, C.AdministratorCommissioning, C.GeneralDiagnostics, C.NetworkCommissioning
NocStatus = OC.Enums.NodeOperationalCertStatusEnum
Err = GC.Enums.CommissioningErrorEnum
PASSCODE, DISCRIMINATOR = 20202021, 3840
IPK = bytes(range(16))
ADMIN_NODE_ID = 0x1122334455
NODE_ID = 0xABCD0001
FABRIC_ID = 0x0000_0000_0000_0F01


class Clock:
    def __init__(self):
        self.ms = 1_000_000

    def __call__(self):
        return self.ms


def run(initiator, responder):
    msgs, to = initiator.start(), responder
    while msgs:
        out = []
        for op, payload in msgs:
            out += to.handle(op, payload)
        msgs, to = out, (initiator if to is responder else responder)


class Controller:
    """A commissioner's fabric: root key, admin NOC, and sessions to one node."""

    def __init__(self, node, seed=1, fabric_id=FABRIC_ID, rcac_id=1, vendor_id=0xFFF1):
        self.node, self.rng, self.fabric_id, self.vendor_id = node, random.Random(seed), fabric_id, vendor_id
        self.root, self.root_key = certs.mint_root(rcac_id, fabric_id, rng=self.rng)
        noc, key = certs.mint_noc(self.root, self.root_key, ADMIN_NODE_ID, fabric_id, rng=self.rng)
        self.me = FabricInfo.from_certificates(1, self.root.to_tlv(), noc.to_tlv(), None, key, IPK)
        self.fabric_index = None
        self.node_id = None

    def pase(self):
        params = self.node.pase_parameters()
        responder = PaseResponder(params.verifier, params.salt, params.iterations, 0x0101, rng=self.rng)
        initiator = PaseInitiator(PASSCODE, 0x0202, rng=self.rng)
        run(initiator, responder)
        assert responder.result is not None, responder.error_message
        self.node.on_pase_established(responder.result)
        return AccessContext("pase", None, None, session=responder.result)

    def case(self):
        responder = CaseResponder(self.node.to_case_fabrics(), 0x0303, rng=self.rng)
        initiator = CaseInitiator(self.me, self.node_id, 0x0404, rng=self.rng)
        run(initiator, responder)
        assert responder.result is not None, responder.error_message
        s = responder.result
        return AccessContext("case", s.fabric_index, s.peer_node_id, session=s)

    def noc_for(self, csr_response, node_id=NODE_ID, issuer=None, issuer_key=None):
        elements = read_tlv(csr_response.NOCSRElements)
        csr = x509.load_der_x509_csr(elements[1])
        noc, _ = certs.mint_noc(issuer or self.root, issuer_key or self.root_key, node_id, self.fabric_id,
                                csr.public_key(), rng=self.rng)
        return noc.to_tlv()


def read_tlv(data):
    return TLVReader(data).get()["Any"]


@contextlib.contextmanager
def acting(access):
    token = current_access.set(access)
    try:
        yield
    finally:
        current_access.reset(token)


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture(scope="module")
def credentials(tmp_path_factory):
    return DeviceCredentials.load_or_create(tmp_path_factory.mktemp("dac"), 0xFFF1, 0x8100, rng=random.Random(3))


def make_node(path, clock, credentials, **kw):
    device = create_device("light1", "on_off_light", rng=random.Random(1))
    return NodeCommissioning(path, device, credentials, PASSCODE, DISCRIMINATOR, random.Random(7), now_ms=clock, **kw)


@pytest.fixture
def node(tmp_path, clock, credentials):
    return make_node(tmp_path / "light1", clock, credentials)


def invoke(node, cluster, command, fields=None):
    return node.device.invoke(cluster, command, fields or {}, endpoint_id=0)


def read(node, cluster, attribute):
    return node.device.read(cluster, attribute, endpoint_id=0)


def commission(node, ctl, *, complete=True, icac=False):
    """The standard flow up to (and with `complete`, including) CommissioningComplete."""
    pase = ctl.pase()
    with acting(pase):
        assert invoke(node, "GeneralCommissioning", "ArmFailSafe",
                      {"expiryLengthSeconds": 60, "breadcrumb": 1}).errorCode == Err.kOk
        csr = invoke(node, "OperationalCredentials", "CSRRequest", {"CSRNonce": bytes(32)})
        invoke(node, "OperationalCredentials", "AddTrustedRootCertificate",
               {"rootCACertificate": ctl.root.to_tlv()})
        icac_tlv = None
        if icac:
            ica, ica_key = certs.mint_icac(ctl.root, ctl.root_key, 9, ctl.fabric_id, rng=ctl.rng)
            noc, icac_tlv = ctl.noc_for(csr, issuer=ica, issuer_key=ica_key), ica.to_tlv()
        else:
            noc = ctl.noc_for(csr)
        resp = invoke(node, "OperationalCredentials", "AddNOC",
                      {"NOCValue": noc, "ICACValue": icac_tlv, "IPKValue": IPK,
                       "caseAdminSubject": ADMIN_NODE_ID, "adminVendorId": ctl.vendor_id})
    assert resp.statusCode == NocStatus.kOk, resp.debugText
    ctl.fabric_index, ctl.node_id = resp.fabricIndex, NODE_ID
    if complete:
        with acting(ctl.case()):
            assert invoke(node, "GeneralCommissioning", "CommissioningComplete").errorCode == Err.kOk
    return pase


# --- the full flow ---------------------------------------------------------------------

def test_full_commissioning_sequence(node, credentials):
    events = []
    node.listeners.append(events.append)
    ctl = Controller(node)
    assert node.window.is_open and read(node, "AdministratorCommissioning", "WindowStatus") == \
        ADC.Enums.CommissioningWindowStatusEnum.kWindowNotOpen  # initial window, not opened by an admin
    pase = ctl.pase()
    challenge = pase.session.keys.attestation_challenge
    with acting(pase):
        r = invoke(node, "GeneralCommissioning", "ArmFailSafe", {"expiryLengthSeconds": 120, "breadcrumb": 5})
        assert r.errorCode == Err.kOk and read(node, "GeneralCommissioning", "Breadcrumb") == 5
        r = invoke(node, "GeneralCommissioning", "SetRegulatoryConfig",
                   {"newRegulatoryConfig": 0, "countryCode": "KR", "breadcrumb": 6})
        assert r.errorCode == Err.kOk
        assert read(node, "BasicInformation", "Location") == "KR"
        assert read(node, "GeneralCommissioning", "RegulatoryConfig") == 0

        dac = invoke(node, "OperationalCredentials", "CertificateChainRequest", {"certificateType": 1}).certificate
        pai = invoke(node, "OperationalCredentials", "CertificateChainRequest", {"certificateType": 2}).certificate
        dac_cert, pai_cert = x509.load_der_x509_certificate(dac), x509.load_der_x509_certificate(pai)
        dac_cert.verify_directly_issued_by(pai_cert)

        nonce = bytes(range(32))
        att = invoke(node, "OperationalCredentials", "AttestationRequest", {"attestationNonce": nonce})
        verify_attestation_signature(att.attestationElements, challenge, att.attestationSignature, dac_cert)
        elements = read_tlv(att.attestationElements)
        assert elements[2] == nonce
        cd = decode_certification_declaration(elements[1], development_cd_signing_cert())  # verifies the CD signature
        assert cd.vendor_id == credentials.vendor_id and credentials.product_id in cd.product_ids
        assert cd.device_type_id == node.device.type.device_type_id

        csr_nonce = bytes(range(100, 132))
        csr = invoke(node, "OperationalCredentials", "CSRRequest", {"CSRNonce": csr_nonce})
        verify_attestation_signature(csr.NOCSRElements, challenge, csr.attestationSignature, dac_cert)
        nocsr = read_tlv(csr.NOCSRElements)
        assert nocsr[2] == csr_nonce and x509.load_der_x509_csr(nocsr[1]).is_signature_valid

        invoke(node, "OperationalCredentials", "AddTrustedRootCertificate", {"rootCACertificate": ctl.root.to_tlv()})
        assert ctl.root.to_tlv() in read(node, "OperationalCredentials", "TrustedRootCertificates")
        resp = invoke(node, "OperationalCredentials", "AddNOC",
                      {"NOCValue": ctl.noc_for(csr), "IPKValue": IPK, "caseAdminSubject": ADMIN_NODE_ID,
                       "adminVendorId": 0xFFF1})
        assert resp.statusCode == NocStatus.kOk and resp.fabricIndex == 1
        # The PASE session now acts for the new fabric.
        assert node.fabric_for_session(pase.session) == 1
        assert read(node, "OperationalCredentials", "CurrentFabricIndex") == 1
        (acl,) = read(node, "AccessControl", "ACL")
        assert (acl.privilege, acl.authMode, acl.subjects, acl.targets, acl.fabricIndex) == \
            (AC.Enums.AccessControlEntryPrivilegeEnum.kAdminister, AC.Enums.AccessControlEntryAuthModeEnum.kCase,
             [ADMIN_NODE_ID], NullValue, 1)
        (fabric,) = read(node, "OperationalCredentials", "Fabrics")
        assert (fabric.fabricID, fabric.nodeID, fabric.vendorID, fabric.rootPublicKey) == \
            (FABRIC_ID, NODE_ID, 0xFFF1, ctl.root.public_key)
        # CommissioningComplete over PASE is refused.
        r = invoke(node, "GeneralCommissioning", "CommissioningComplete")
        assert r.errorCode == Err.kInvalidAuthentication

    ctl.node_id = NODE_ID
    case = ctl.case()  # CASE works with the uncommitted fabric, as it must
    assert case.fabric_index == 1 and case.peer_node_id == ADMIN_NODE_ID
    with acting(case):
        assert invoke(node, "GeneralCommissioning", "CommissioningComplete").errorCode == Err.kOk
        assert read(node, "OperationalCredentials", "CommissionedFabrics") == 1
        (noc,) = read(node, "OperationalCredentials", "NOCs")
        assert noc.icac is NullValue and noc.fabricIndex == 1
    assert not node.failsafe.armed and not node.window.is_open
    assert read(node, "GeneralCommissioning", "Breadcrumb") == 0
    assert [e.kind for e in events] == ["fabric_added", "commissioning_complete", "window_changed"]
    # Committed: a later fail-safe expiry leaves the fabric alone.
    node.failsafe.arm(node.now_ms(), 1, 1)
    node.poll(node.now_ms() + 2000)
    assert len(node.table) == 1


def test_commissioning_with_an_icac(node):
    ctl = Controller(node)
    commission(node, ctl, icac=True)
    with acting(ctl.case()):
        (noc,) = read(node, "OperationalCredentials", "NOCs")
        assert noc.icac is not NullValue


def test_acl_events_name_the_admin(node):
    seen = []
    node.access_control.event_sink = lambda server, event: seen.append(event)
    commission(node, Controller(node))
    (added,) = seen
    assert added.changeType == AC.Enums.ChangeTypeEnum.kAdded and added.adminPasscodeID == 0
    assert added.adminNodeID is NullValue and added.fabricIndex == 1


# --- fail-safe -------------------------------------------------------------------------

def test_failsafe_expiry_rolls_back_root_and_noc(node, clock):
    events = []
    node.listeners.append(events.append)
    ctl = Controller(node)
    pase = commission(node, ctl, complete=False)
    assert len(node.table) == 1 and node.next_timer() == clock.ms + 60_000
    clock.ms += 59_999
    node.poll()
    assert len(node.table) == 1
    clock.ms += 1
    node.poll()
    assert len(node.table) == 0 and not node.failsafe.armed
    assert events[-1].kind == "failsafe_expired" and events[-1].removed == (1,)
    assert read(node, "OperationalCredentials", "TrustedRootCertificates") == []
    assert read(node, "GeneralCommissioning", "Breadcrumb") == 0
    assert node.to_case_fabrics() == []
    assert node.fabric_for_session(pase.session) is None
    # Nothing was persisted and the window is still open for another try.
    assert FabricTable.load(node.storage_dir).fabrics == {}
    assert node.window.is_open
    commission(node, ctl)
    assert len(node.table) == 1


def test_command_after_expiry_sees_rolled_back_state_even_without_poll(node, clock):
    ctl = Controller(node)
    pase = ctl.pase()
    with acting(pase):
        invoke(node, "GeneralCommissioning", "ArmFailSafe", {"expiryLengthSeconds": 10, "breadcrumb": 0})
        invoke(node, "OperationalCredentials", "AddTrustedRootCertificate", {"rootCACertificate": ctl.root.to_tlv()})
        clock.ms += 10_000
        with pytest.raises(MatterError) as e:
            invoke(node, "OperationalCredentials", "CSRRequest", {"CSRNonce": bytes(32)})
        assert e.value.status == Status.FAILSAFE_REQUIRED
        assert node.failsafe.pending_root is None


def test_arm_failsafe_zero_disarms_and_rolls_back(node):
    ctl = Controller(node)
    pase = commission(node, ctl, complete=False)
    with acting(pase):
        r = invoke(node, "GeneralCommissioning", "ArmFailSafe", {"expiryLengthSeconds": 0, "breadcrumb": 9})
    assert r.errorCode == Err.kOk and not node.failsafe.armed and len(node.table) == 0
    assert read(node, "GeneralCommissioning", "Breadcrumb") == 0


def test_failsafe_cumulative_limit(node, clock):
    with acting(Controller(node).pase()):
        start = clock.ms  # armed at PASE establishment
        for _ in range(10):
            clock.ms += 50_000
            invoke(node, "GeneralCommissioning", "ArmFailSafe", {"expiryLengthSeconds": 600, "breadcrumb": 0})
    assert node.failsafe.expires_ms == start + 900_000  # not now + 600 s: the cumulative limit holds
    clock.ms = start + 900_000
    node.poll()
    assert not node.failsafe.armed


def test_failsafe_belongs_to_one_fabric(node, tmp_path):
    a, b = Controller(node, seed=1), Controller(node, seed=2, fabric_id=0xB, rcac_id=2)
    commission(node, a)
    with acting(a.case()):  # a opens a window for b (multi-admin)
        invoke(node, "AdministratorCommissioning", "OpenBasicCommissioningWindow", {"commissioningTimeout": 300})
        # The window is open and the fail-safe is not armed: a CASE admin may not arm it now.
        r = invoke(node, "GeneralCommissioning", "ArmFailSafe", {"expiryLengthSeconds": 60, "breadcrumb": 0})
        assert r.errorCode == Err.kBusyWithOtherAdmin
    commission(node, b, complete=False)
    with acting(a.case()):
        r = invoke(node, "GeneralCommissioning", "ArmFailSafe", {"expiryLengthSeconds": 60, "breadcrumb": 0})
        assert r.errorCode == Err.kBusyWithOtherAdmin
        r = invoke(node, "GeneralCommissioning", "CommissioningComplete")
        assert r.errorCode == Err.kInvalidAuthentication  # a is not the fail-safe's fabric
        with pytest.raises(MatterError) as e:
            invoke(node, "OperationalCredentials", "CSRRequest", {"CSRNonce": bytes(32)})
        assert e.value.status == Status.FAILSAFE_REQUIRED
    with acting(b.case()):
        assert invoke(node, "GeneralCommissioning", "CommissioningComplete").errorCode == Err.kOk
    assert sorted(node.table.fabrics) == [1, 2]
    with acting(a.case()):
        assert [f.fabricIndex for f in read(node, "OperationalCredentials", "Fabrics")] == [1]
        assert read(node, "OperationalCredentials", "CurrentFabricIndex") == 1
    assert [f.fabricIndex for f in read(node, "OperationalCredentials", "Fabrics")] == [1, 2]  # local view

    with acting(AccessContext("case", 1, ADMIN_NODE_ID, fabric_filtered=False)):
        assert [f.fabricIndex for f in read(node, "OperationalCredentials", "Fabrics")] == [1, 2]
        # Every fabric's entries (the IM leaves other fabrics' fabric-sensitive fields out).
        assert [n.fabricIndex for n in read(node, "OperationalCredentials", "NOCs")] == [1, 2]
        assert {e.fabricIndex for e in read(node, "AccessControl", "ACL")} == {1, 2}
    with acting(AccessContext("case", 1, ADMIN_NODE_ID)):   # fabric-filtered
        assert [n.fabricIndex for n in read(node, "OperationalCredentials", "NOCs")] == [1]
        assert {e.fabricIndex for e in read(node, "AccessControl", "ACL")} == {1}


def test_commissioning_complete_without_failsafe(node):
    ctl = Controller(node)
    commission(node, ctl)
    with acting(ctl.case()):
        assert invoke(node, "GeneralCommissioning", "CommissioningComplete").errorCode == Err.kNoFailSafe


# --- OperationalCredentials errors -------------------------------------------------------

def test_commands_need_the_failsafe(node):
    ctl = Controller(node)
    with acting(ctl.pase()):
        invoke(node, "GeneralCommissioning", "ArmFailSafe", {"expiryLengthSeconds": 0, "breadcrumb": 0})
        for command, fields in (("CSRRequest", {"CSRNonce": bytes(32)}),
                                ("AddTrustedRootCertificate", {"rootCACertificate": ctl.root.to_tlv()}),
                                ("AddNOC", {"NOCValue": b"x", "IPKValue": IPK, "caseAdminSubject": 1,
                                            "adminVendorId": 1})):
            with pytest.raises(MatterError) as e:
                invoke(node, "OperationalCredentials", command, fields)
            assert e.value.status == Status.FAILSAFE_REQUIRED, command


def test_bad_nonces_and_certificate_type(node):
    with acting(Controller(node).pase()):
        for command, fields in (("AttestationRequest", {"attestationNonce": bytes(31)}),
                                ("CSRRequest", {"CSRNonce": bytes(33)}),
                                ("CertificateChainRequest", OC.Commands.CertificateChainRequest(
                                    certificateType=OC.Enums.CertificateChainTypeEnum.kUnknownEnumValue))):
            with pytest.raises(MatterError) as e:
                invoke(node, "OperationalCredentials", command, fields)
            assert e.value.status == Status.INVALID_COMMAND, command


def test_attestation_needs_a_session(node):
    with pytest.raises(MatterError) as e:
        invoke(node, "OperationalCredentials", "AttestationRequest", {"attestationNonce": bytes(32)})
    assert e.value.status == Status.UNSUPPORTED_ACCESS and "session" in e.value.message


def _prepare(node, ctl):
    """PASE, fail-safe, CSR and root: everything AddNOC needs. Returns the CSR response."""
    invoke(node, "GeneralCommissioning", "ArmFailSafe", {"expiryLengthSeconds": 60, "breadcrumb": 0})
    csr = invoke(node, "OperationalCredentials", "CSRRequest", {"CSRNonce": bytes(32)})
    invoke(node, "OperationalCredentials", "AddTrustedRootCertificate", {"rootCACertificate": ctl.root.to_tlv()})
    return csr


def add_noc(node, noc, icac=None, subject=ADMIN_NODE_ID, ipk=IPK, vendor=0xFFF1):
    return invoke(node, "OperationalCredentials", "AddNOC",
                  {"NOCValue": noc, "ICACValue": icac, "IPKValue": ipk, "caseAdminSubject": subject,
                   "adminVendorId": vendor})


def test_add_noc_with_a_bad_chain_is_invalid_noc(node):
    ctl, stranger = Controller(node), Controller(node, seed=99)
    with acting(ctl.pase()):
        csr = _prepare(node, ctl)
        # A NOC for our key, but signed by another root.
        r = add_noc(node, stranger.noc_for(csr))
        assert r.statusCode == NocStatus.kInvalidNOC and "RCAC" in r.debugText
        # Garbage.
        assert add_noc(node, b"\x15\x18").statusCode == NocStatus.kInvalidNOC
        # A good chain for a key that is not ours.
        other_key_noc, _ = certs.mint_noc(ctl.root, ctl.root_key, NODE_ID, FABRIC_ID, rng=ctl.rng)
        assert add_noc(node, other_key_noc.to_tlv()).statusCode == NocStatus.kInvalidPublicKey
        # An ICAC from another root.
        ica, ica_key = certs.mint_icac(stranger.root, stranger.root_key, 3, FABRIC_ID, rng=ctl.rng)
        r = add_noc(node, ctl.noc_for(csr, issuer=ica, issuer_key=ica_key), ica.to_tlv())
        assert r.statusCode == NocStatus.kInvalidNOC
        assert add_noc(node, ctl.noc_for(csr), subject=0).statusCode == NocStatus.kInvalidAdminSubject
        with pytest.raises(MatterError) as e:
            add_noc(node, ctl.noc_for(csr), ipk=bytes(15))
        assert e.value.status == Status.INVALID_COMMAND
        assert len(node.table) == 0 and read(node, "AccessControl", "ACL") == []
        # Nothing was half-applied: the right NOC still goes in.
        assert add_noc(node, ctl.noc_for(csr)).statusCode == NocStatus.kOk
        # And a second AddNOC under the same fail-safe is a constraint error.
        with pytest.raises(MatterError) as e:
            add_noc(node, ctl.noc_for(csr))
        assert e.value.status == Status.CONSTRAINT_ERROR


def test_add_noc_needs_csr_and_root(node):
    ctl = Controller(node)
    with acting(ctl.pase()):
        invoke(node, "GeneralCommissioning", "ArmFailSafe", {"expiryLengthSeconds": 60, "breadcrumb": 0})
        assert add_noc(node, b"x").statusCode == NocStatus.kMissingCsr
        csr = invoke(node, "OperationalCredentials", "CSRRequest", {"CSRNonce": bytes(32)})
        assert add_noc(node, ctl.noc_for(csr)).statusCode == NocStatus.kInvalidNOC  # no root yet
        with pytest.raises(MatterError) as e:
            invoke(node, "OperationalCredentials", "AddTrustedRootCertificate", {"rootCACertificate": b"junk"})
        assert e.value.status == Status.INVALID_COMMAND
        noc_as_root = ctl.noc_for(csr)
        with pytest.raises(MatterError) as e:
            invoke(node, "OperationalCredentials", "AddTrustedRootCertificate", {"rootCACertificate": noc_as_root})
        assert e.value.status == Status.INVALID_COMMAND
        invoke(node, "OperationalCredentials", "AddTrustedRootCertificate", {"rootCACertificate": ctl.root.to_tlv()})
        # The same root again succeeds with no change; another one is a second root in one fail-safe.
        invoke(node, "OperationalCredentials", "AddTrustedRootCertificate", {"rootCACertificate": ctl.root.to_tlv()})
        assert read(node, "OperationalCredentials", "TrustedRootCertificates") == [ctl.root.to_tlv()]
        with pytest.raises(MatterError) as e:
            invoke(node, "OperationalCredentials", "AddTrustedRootCertificate",
                   {"rootCACertificate": Controller(node, seed=5, rcac_id=5).root.to_tlv()})
        assert e.value.status == Status.CONSTRAINT_ERROR
        with pytest.raises(MatterError) as e:
            invoke(node, "OperationalCredentials", "CSRRequest", {"CSRNonce": bytes(32), "isForUpdateNOC": True})
        assert e.value.status == Status.INVALID_COMMAND  # UpdateNOC CSR over PASE


def test_fabric_conflict_and_table_full(tmp_path, clock, credentials):
    node = make_node(tmp_path / "n", clock, credentials, max_fabrics=2)
    a = Controller(node, seed=1)
    commission(node, a)
    twin_of_a = Controller(node, seed=1)  # same root key and fabric id
    with acting(a.case()):
        invoke(node, "AdministratorCommissioning", "OpenBasicCommissioningWindow", {"commissioningTimeout": 180})
    with acting(twin_of_a.pase()):
        csr = _prepare(node, twin_of_a)
        assert add_noc(node, twin_of_a.noc_for(csr, node_id=5)).statusCode == NocStatus.kFabricConflict
        invoke(node, "GeneralCommissioning", "ArmFailSafe", {"expiryLengthSeconds": 0, "breadcrumb": 0})
    b = Controller(node, seed=2, fabric_id=0xB)
    commission(node, b)
    c = Controller(node, seed=3, fabric_id=0xC)
    node.window.open_basic(clock.ms, 180)
    with acting(c.pase()):
        csr = _prepare(node, c)
        assert add_noc(node, c.noc_for(csr)).statusCode == NocStatus.kTableFull
    assert read(node, "OperationalCredentials", "SupportedFabrics") == 2


def test_update_noc_then_rollback_and_commit(node, clock):
    ctl = Controller(node)
    commission(node, ctl)
    old_noc = node.table.get(1).noc
    with acting(ctl.case()):
        invoke(node, "GeneralCommissioning", "ArmFailSafe", {"expiryLengthSeconds": 30, "breadcrumb": 0})
        r = invoke(node, "OperationalCredentials", "UpdateNOC", {"NOCValue": old_noc})
        assert r.statusCode == NocStatus.kMissingCsr
        csr = invoke(node, "OperationalCredentials", "CSRRequest", {"CSRNonce": bytes(32), "isForUpdateNOC": True})
        with pytest.raises(MatterError) as e:  # that CSR is for UpdateNOC
            add_noc(node, ctl.noc_for(csr))
        assert e.value.status == Status.CONSTRAINT_ERROR
        r = invoke(node, "OperationalCredentials", "UpdateNOC", {"NOCValue": ctl.noc_for(csr, node_id=0x77)})
        assert r.statusCode == NocStatus.kOk and r.fabricIndex == 1
    assert node.table.get(1).node_id == 0x77
    assert json.loads((node.storage_dir / FABRICS_FILE).read_text())["fabrics"][0]["noc"] == old_noc.hex()
    clock.ms += 30_000
    node.poll()
    assert node.table.get(1).noc == old_noc and node.table.get(1).node_id == NODE_ID
    # Again, and this time commit.
    with acting(ctl.case()):
        invoke(node, "GeneralCommissioning", "ArmFailSafe", {"expiryLengthSeconds": 30, "breadcrumb": 0})
        csr = invoke(node, "OperationalCredentials", "CSRRequest", {"CSRNonce": bytes(32), "isForUpdateNOC": True})
        r = invoke(node, "OperationalCredentials", "UpdateNOC", {"NOCValue": ctl.noc_for(csr, node_id=0x78)})
        assert r.statusCode == NocStatus.kOk
    ctl.node_id = 0x78
    with acting(ctl.case()):
        assert invoke(node, "GeneralCommissioning", "CommissioningComplete").errorCode == Err.kOk
    assert FabricTable.load(node.storage_dir).get(1).node_id == 0x78


def test_update_fabric_label_uniqueness(node):
    a, b = Controller(node, seed=1), Controller(node, seed=2, fabric_id=0xB)
    commission(node, a)
    node.window.open_basic(node.now_ms(), 180)
    commission(node, b)
    with acting(a.case()):
        r = invoke(node, "OperationalCredentials", "UpdateFabricLabel", {"label": "Home"})
        assert r.statusCode == NocStatus.kOk and r.fabricIndex == 1
        response = invoke(node, "OperationalCredentials", "UpdateFabricLabel", {"label": "Home"})
        assert response.statusCode == NocStatus.kOk
        with pytest.raises(MatterError) as e:
            invoke(node, "OperationalCredentials", "UpdateFabricLabel", {"label": "x" * 33})
        assert e.value.status == Status.CONSTRAINT_ERROR
        with pytest.raises(MatterError) as e:   # 17 characters, 34 bytes: the spec counts bytes
            invoke(node, "OperationalCredentials", "UpdateFabricLabel", {"label": "\u00e9" * 17})
        assert e.value.status == Status.CONSTRAINT_ERROR
    with acting(b.case()):
        r = invoke(node, "OperationalCredentials", "UpdateFabricLabel", {"label": "Home"})
        assert r.statusCode == NocStatus.kLabelConflict and "fabric 1" in r.debugText
        assert invoke(node, "OperationalCredentials", "UpdateFabricLabel", {"label": ""}).statusCode == NocStatus.kOk
        response = invoke(node, "OperationalCredentials", "UpdateFabricLabel", {"label": "Office"})
        assert response.statusCode == NocStatus.kOk
    assert [f.label for f in read(node, "OperationalCredentials", "Fabrics")] == ["Home", "Office"]
    assert FabricTable.load(node.storage_dir).get(2).label == "Office"


def test_remove_fabric(node):
    events = []
    node.listeners.append(events.append)
    a, b = Controller(node, seed=1), Controller(node, seed=2, fabric_id=0xB)
    commission(node, a)
    node.window.open_basic(node.now_ms(), 180)
    commission(node, b)
    groups, scenes = node.device.endpoint(1).server("Groups"), node.device.endpoint(1).server("ScenesManagement")
    for ctl in (a, b):   # a group and a scene of each fabric
        with acting(ctl.case()):
            groups.invoke("AddGroup", {"groupID": 5, "groupName": "g"})
            assert scenes.invoke("StoreScene", {"groupID": 5, "sceneID": 1}).status == 0
    with acting(a.case()):
        assert invoke(node, "OperationalCredentials", "RemoveFabric",
                      {"fabricIndex": 7}).statusCode == NocStatus.kInvalidFabricIndex
        r = invoke(node, "OperationalCredentials", "RemoveFabric", {"fabricIndex": 2})
        assert r.statusCode == NocStatus.kOk and r.fabricIndex == 2
    assert sorted(node.table.fabrics) == [1] and events[-1].kind == "fabric_removed"
    assert [f.fabric_index for f in FabricTable.load(node.storage_dir)] == [1]
    assert all(e.fabricIndex == 1 for e in read(node, "AccessControl", "ACL"))
    # The removed fabric's groups and scenes went with it (its share of the scene table is free).
    assert groups.groups(2) == {} and groups.groups(1) == {5: "g"}
    assert [(i.fabricIndex, i.sceneCount) for i in scenes.read("FabricSceneInfo")] == [(1, 1)]
    # Removing the last fabric reopens the initial window so the node can be commissioned again.
    assert not node.window.is_open
    with acting(a.case()):
        invoke(node, "OperationalCredentials", "RemoveFabric", {"fabricIndex": 1})
    assert len(node.table) == 0 and node.window.is_open and node.pase_parameters() is not None
    # Fabric indexes are not reused at once.
    commission(node, Controller(node, seed=5))
    assert list(node.table.fabrics) == [3]


# --- persistence -------------------------------------------------------------------------

def test_persistence_round_trip_and_reset(tmp_path, clock, credentials):
    path = tmp_path / "light1"
    node = make_node(path, clock, credentials)
    a, b = Controller(node, seed=1), Controller(node, seed=2, fabric_id=0xB)
    commission(node, a)
    with acting(a.case()):
        invoke(node, "OperationalCredentials", "UpdateFabricLabel", {"label": "A"})
        invoke(node, "GroupKeyManagement", "KeySetWrite", {"groupKeySet": {
            "groupKeySetID": 5, "groupKeySecurityPolicy": 0, "epochKey0": bytes(16), "epochStartTime0": 10,
            "epochKey1": None, "epochStartTime1": None, "epochKey2": None, "epochStartTime2": None}})
    node.window.open_basic(clock.ms, 180)
    commission(node, b, icac=True)
    before = [f.to_json() for f in node.table]

    f = path / FABRICS_FILE
    assert stat.S_IMODE(os.stat(f).st_mode) == 0o600
    assert not [p for p in path.iterdir() if p.name.startswith(".")]  # no temp files left behind
    again = make_node(path, clock, credentials)  # a restart
    assert [f.to_json() for f in again.table] == before
    assert read(again, "GeneralDiagnostics", "RebootCount") == 1
    assert not again.window.is_open  # commissioned nodes do not open a window at boot
    # CASE works after the restart without re-pairing.
    a.node, b.node = again, again
    assert a.case().fabric_index == 1 and b.case().fabric_index == 2

    FabricTable.reset(path)
    fresh = make_node(path, clock, credentials)
    assert len(fresh.table) == 0 and fresh.window.is_open
    assert read(fresh, "GeneralDiagnostics", "RebootCount") == 2  # counters survive a fabric reset
    assert read(fresh, "OperationalCredentials", "Fabrics") == []


def test_corrupt_storage_is_one_clear_error(tmp_path, clock, credentials):
    path = tmp_path / "n"
    path.mkdir()
    (path / FABRICS_FILE).write_text('{"version": 1, "fabrics": [{"noc": "zz"}]}')
    with pytest.raises(FabricStorageError) as e:
        make_node(path, clock, credentials)
    assert str(path / FABRICS_FILE) in str(e.value) and "\n" not in str(e.value)
    FabricTable.reset(path)  # forgetting works even then
    assert len(make_node(path, clock, credentials).table) == 0


# --- AdministratorCommissioning ----------------------------------------------------------

def test_open_commissioning_window_with_a_verifier(node, clock):
    events = []
    node.listeners.append(events.append)
    a = Controller(node)
    commission(node, a)
    salt, iterations, new_passcode = bytes(range(16)), 1000, 34567890
    verifier = make_verifier(new_passcode, salt, iterations)
    ocw = {"commissioningTimeout": 180, "PAKEPasscodeVerifier": verifier, "discriminator": 1234,
           "iterations": iterations, "salt": salt}
    with acting(a.case()):
        for bad, cluster_status in (({"PAKEPasscodeVerifier": verifier[:-1]}, 3), ({"iterations": 999}, 3),
                                    ({"salt": bytes(15)}, 3)):
            with pytest.raises(MatterError) as e:
                invoke(node, "AdministratorCommissioning", "OpenCommissioningWindow", dict(ocw, **bad))
            assert (e.value.status, e.value.cluster_status) == (Status.FAILURE, cluster_status)
        for bad in ({"commissioningTimeout": 179}, {"commissioningTimeout": 901}):
            with pytest.raises(MatterError) as e:
                invoke(node, "AdministratorCommissioning", "OpenCommissioningWindow", dict(ocw, **bad))
            assert e.value.status == Status.INVALID_COMMAND
        invoke(node, "AdministratorCommissioning", "OpenCommissioningWindow", ocw)
        assert read(node, "AdministratorCommissioning", "WindowStatus") == \
            ADC.Enums.CommissioningWindowStatusEnum.kEnhancedWindowOpen
        assert read(node, "AdministratorCommissioning", "AdminFabricIndex") == 1
        assert read(node, "AdministratorCommissioning", "AdminVendorId") == 0xFFF1
        with pytest.raises(MatterError) as e:
            invoke(node, "AdministratorCommissioning", "OpenBasicCommissioningWindow", {"commissioningTimeout": 200})
        assert (e.value.status, e.value.cluster_status) == (Status.FAILURE, 2)  # Busy
    assert node.pase_parameters() == PakeParameters(verifier, salt, iterations)
    assert node.window.discriminator == 1234 and events[-1].kind == "window_changed"
    # The new passcode opens PASE; the old one no longer does.
    params = node.pase_parameters()
    ok = PaseResponder(params.verifier, params.salt, params.iterations, 1, rng=random.Random(1))
    run(PaseInitiator(new_passcode, 2, rng=random.Random(2)), ok)
    assert ok.result is not None
    bad = PaseResponder(params.verifier, params.salt, params.iterations, 1, rng=random.Random(1))
    run(PaseInitiator(PASSCODE, 2, rng=random.Random(2)), bad)
    assert bad.result is None
    # It times out.
    assert node.next_timer() == clock.ms + 180_000
    clock.ms += 180_000
    node.poll()
    assert not node.window.is_open and node.pase_parameters() is None
    assert read(node, "AdministratorCommissioning", "WindowStatus") == \
        ADC.Enums.CommissioningWindowStatusEnum.kWindowNotOpen


def test_revoke_commissioning_and_removed_admin(node):
    a, b = Controller(node, seed=1), Controller(node, seed=2, fabric_id=0xB)
    commission(node, a)
    with acting(a.case()):
        with pytest.raises(MatterError) as e:
            invoke(node, "AdministratorCommissioning", "RevokeCommissioning")
        assert (e.value.status, e.value.cluster_status) == (Status.FAILURE, 4)  # WindowNotOpen
        invoke(node, "AdministratorCommissioning", "OpenBasicCommissioningWindow", {"commissioningTimeout": 180})
    commission(node, b, complete=False)  # b is mid-way ...
    with acting(a.case()):
        invoke(node, "AdministratorCommissioning", "RevokeCommissioning")  # ... and a revokes
    assert not node.window.is_open and not node.failsafe.armed and sorted(node.table.fabrics) == [1]
    with acting(a.case()):
        invoke(node, "AdministratorCommissioning", "OpenBasicCommissioningWindow", {"commissioningTimeout": 180})
    assert read(node, "AdministratorCommissioning", "AdminFabricIndex") == 1
    node.remove_fabric(1)
    assert read(node, "AdministratorCommissioning", "AdminFabricIndex") is NullValue


def test_window_closes_after_twenty_pase_failures(node):
    for _ in range(19):
        node.on_pase_failed()
    assert node.window.is_open
    node.on_pase_failed()
    assert not node.window.is_open and node.pase_parameters() is None


def test_window_object_rules():
    w = CommissioningWindow(PakeParameters(b"v" * 97, b"s" * 16, 1000), 7)
    assert w.pase_verifier() is None and w.discriminator is None
    with pytest.raises(ValueError):
        w.open_basic(0, 100)
    w.open_initial(0)
    assert w.next_timer() is None and not w.expired(10**12) and w.discriminator == 7


# --- AccessControl, GroupKeyManagement, diagnostics, network -----------------------------

def test_acl_write_is_fabric_scoped_and_validated(node):
    a, b = Controller(node, seed=1), Controller(node, seed=2, fabric_id=0xB)
    commission(node, a)
    node.window.open_basic(node.now_ms(), 180)
    commission(node, b)
    admin = {"privilege": 5, "authMode": 2, "subjects": [ADMIN_NODE_ID], "targets": None}
    viewer = {"privilege": 1, "authMode": 3, "subjects": [0x10], "targets": [{"cluster": 6, "endpoint": 1,
                                                                              "deviceType": None}]}
    with acting(b.case()):
        node.device.write("AccessControl", "ACL", [admin, viewer], endpoint_id=0)
        assert [(e.privilege, e.fabricIndex) for e in read(node, "AccessControl", "ACL")] == [(5, 2), (1, 2)]
        for bad, status in ((dict(admin, authMode=1), Status.CONSTRAINT_ERROR),
                            (dict(viewer, privilege=5), Status.CONSTRAINT_ERROR),
                            (dict(admin, subjects=[0]), Status.CONSTRAINT_ERROR),
                            (dict(admin, subjects=[1, 2, 3, 4, 5]), Status.CONSTRAINT_ERROR),
                            (dict(viewer, targets=[{"cluster": None, "endpoint": None, "deviceType": None}]),
                             Status.CONSTRAINT_ERROR),
                            (dict(viewer, targets=[{"cluster": None, "endpoint": 1, "deviceType": 0x100}]),
                             Status.CONSTRAINT_ERROR),
                            (dict(admin, privilege=9), Status.CONSTRAINT_ERROR)):
            with pytest.raises(MatterError) as e:
                node.device.write("AccessControl", "ACL", [admin, bad], endpoint_id=0)
            assert e.value.status == status, bad
        with pytest.raises(MatterError) as e:
            node.device.write("AccessControl", "ACL", [admin] * 5, endpoint_id=0)
        assert e.value.status == Status.RESOURCE_EXHAUSTED
        assert len(read(node, "AccessControl", "ACL")) == 2  # nothing half-applied
    with acting(a.case()):
        (only,) = read(node, "AccessControl", "ACL")
        assert only.fabricIndex == 1
    assert len(FabricTable.load(node.storage_dir).get(2).acl) == 2
    with pytest.raises(MatterError) as e:  # no accessing fabric
        node.device.write("AccessControl", "ACL", [], endpoint_id=0)
    assert e.value.status == Status.UNSUPPORTED_ACCESS


def test_group_key_management(node):
    ctl = Controller(node)
    commission(node, ctl)
    ks = {"groupKeySetID": 7, "groupKeySecurityPolicy": 0, "epochKey0": bytes(16), "epochStartTime0": 5,
          "epochKey1": bytes([1] * 16), "epochStartTime1": 6, "epochKey2": None, "epochStartTime2": None}
    with acting(ctl.case()):
        assert invoke(node, "GroupKeyManagement", "KeySetReadAllIndices").groupKeySetIDs == [0]
        invoke(node, "GroupKeyManagement", "KeySetWrite", {"groupKeySet": ks})
        r = invoke(node, "GroupKeyManagement", "KeySetRead", {"groupKeySetID": 7}).groupKeySet
        assert r.epochKey0 is NullValue and r.epochKey1 is NullValue and r.epochStartTime1 == 6  # keys never read back
        assert invoke(node, "GroupKeyManagement", "KeySetReadAllIndices").groupKeySetIDs == [0, 7]
        for bad in (dict(ks, epochStartTime1=5), dict(ks, epochKey0=None), dict(ks, groupKeySecurityPolicy=1),
                    dict(ks, epochKey2=bytes(16), epochStartTime2=None), dict(ks, epochStartTime0=0)):
            with pytest.raises(MatterError) as e:
                invoke(node, "GroupKeyManagement", "KeySetWrite", {"groupKeySet": bad})
            assert e.value.status == Status.INVALID_COMMAND, bad
        invoke(node, "GroupKeyManagement", "KeySetWrite", {"groupKeySet": dict(ks, groupKeySetID=8)})
        with pytest.raises(MatterError) as e:
            invoke(node, "GroupKeyManagement", "KeySetWrite", {"groupKeySet": dict(ks, groupKeySetID=9)})
        assert e.value.status == Status.RESOURCE_EXHAUSTED
        with pytest.raises(MatterError) as e:
            invoke(node, "GroupKeyManagement", "KeySetRemove", {"groupKeySetID": 0})
        assert e.value.status == Status.INVALID_COMMAND
        invoke(node, "GroupKeyManagement", "KeySetRemove", {"groupKeySetID": 8})
        with pytest.raises(MatterError) as e:
            invoke(node, "GroupKeyManagement", "KeySetRead", {"groupKeySetID": 8})
        assert e.value.status == Status.NOT_FOUND
        with pytest.raises(MatterError) as e:
            node.device.write("GroupKeyManagement", "GroupKeyMap", [{"groupId": 1, "groupKeySetID": 7}],
                              endpoint_id=0)
        assert e.value.status == Status.RESOURCE_EXHAUSTED
        node.device.write("GroupKeyManagement", "GroupKeyMap", [], endpoint_id=0)
        # Rewriting the IPK (set 0) changes the key CASE uses; the controller must follow.
        new_ipk = bytes([9] * 16)
        invoke(node, "GroupKeyManagement", "KeySetWrite", {"groupKeySet": dict(
            ks, groupKeySetID=0, epochKey0=new_ipk, epochKey1=None, epochStartTime1=None)})
    with pytest.raises(AssertionError):
        ctl.case()
    ctl.me = FabricInfo.from_certificates(1, ctl.me.rcac, ctl.me.noc, None, ctl.me.operational_key, new_ipk)
    assert ctl.case().fabric_index == 1
    assert FabricTable.load(node.storage_dir).get(1).ipk_epoch_key == new_ipk


def test_general_diagnostics_and_network(node, clock):
    (iface,) = read(node, "GeneralDiagnostics", "NetworkInterfaces")
    assert iface.type == GD.Enums.InterfaceTypeEnum.kEthernet and len(iface.hardwareAddress) == 6
    node.diagnostics.set_addresses([bytes([127, 0, 0, 1])], [bytes(15) + b"\x01"])
    (iface,) = read(node, "GeneralDiagnostics", "NetworkInterfaces")
    assert iface.IPv6Addresses == [bytes(15) + b"\x01"]
    clock.ms += 5_500
    assert read(node, "GeneralDiagnostics", "UpTime") == 5
    assert invoke(node, "GeneralDiagnostics", "TimeSnapshot").systemTimeMs == 5_500
    with pytest.raises(MatterError) as e:
        invoke(node, "GeneralDiagnostics", "TestEventTrigger", {"enableKey": bytes(16), "eventTrigger": 1})
    assert e.value.status == Status.CONSTRAINT_ERROR
    assert read(node, "NetworkCommissioning", "FeatureMap") == int(NC.Bitmaps.Feature.kEthernetNetworkInterface)
    (net,) = read(node, "NetworkCommissioning", "Networks")
    assert net.connected and read(node, "NetworkCommissioning", "MaxNetworks") == 1


def test_set_regulatory_config_rules(node):
    with acting(Controller(node).pase()):
        with pytest.raises(MatterError) as e:
            invoke(node, "GeneralCommissioning", "SetRegulatoryConfig",
                   {"newRegulatoryConfig": 1, "countryCode": "USA", "breadcrumb": 0})
        assert e.value.status == Status.CONSTRAINT_ERROR
        assert read(node, "BasicInformation", "Location") == "XX"
    assert node.general.get("LocationCapability") == GC.Enums.RegulatoryLocationTypeEnum.kIndoorOutdoor


def test_servers_are_on_endpoint_zero_and_out_of_snapshots(node):
    ids = read(node, "Descriptor", "ServerList")
    for cluster in (GC, NC, OC, AC, GKM, GD, ADC):
        assert cluster.id in ids
    assert all(not s.in_snapshot for s in node.servers)
    # Listeners (subscriptions) hear derived changes.
    heard = []
    node.operational_credentials.listeners.append(lambda server, name: heard.append(name))
    commission(node, Controller(node))
    assert "Fabrics" in heard and "NOCs" in heard


def test_add_noc_puts_the_fabric_on_a_mutable_pase_session(node, clock):
    """The runtime's session objects take the fabric index, so the IM sees it as the accessing fabric."""
    class RuntimeSession:
        def __init__(self, keys):
            self.keys, self.fabric_index, self.peer_node_id = keys, None, None
    ctl = Controller(node)
    session = RuntimeSession(ctl.pase().session.keys)
    with acting(AccessContext("pase", None, None, session=session)):
        csr = _prepare(node, ctl)
        assert add_noc(node, ctl.noc_for(csr)).statusCode == NocStatus.kOk
    assert session.fabric_index == 1
    with acting(AccessContext("pase", session.fabric_index, None, session=session)):
        assert read(node, "OperationalCredentials", "CurrentFabricIndex") == 1
    clock.ms += 60_000
    node.poll()
    assert session.fabric_index is None and len(node.table) == 0

