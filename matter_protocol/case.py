"""CASE: certificate-authenticated session establishment (Matter Core spec 4.14.2), sans-IO.

    initiator                                          responder (node)
    Sigma1 {1 initiatorRandom, 2 session id, 3 destinationId, 4 initiatorEphPubKey,
            5 params?, 6 resumptionID?, 7 initiatorResumeMIC?}
        -> Sigma2 {1 responderRandom, 2 session id, 3 responderEphPubKey, 4 encrypted2, 5 params?}
    Sigma3 {1 encrypted3}
        -> StatusReport(SUCCESS, SESSION_ESTABLISHMENT_SUCCESS)

    destinationId = HMAC(IPK, initiatorRandom || rootPublicKey || fabricId LE64 || nodeId LE64)
    S2K = Crypto_KDF(shared, IPK || responderRandom || responderEphPubKey || Hash(Sigma1), "Sigma2")
    encrypted2 = AES-CCM(S2K, nonce "NCASE_Sigma2N", TBEData2 {1 NOC, 2 ICAC?, 3 signature, 4 resumptionID})
        signature over TBSData2 {1 NOC, 2 ICAC?, 3 responderEphPubKey, 4 initiatorEphPubKey}
    S3K = Crypto_KDF(shared, IPK || Hash(Sigma1 || Sigma2), "Sigma3")
    encrypted3 = AES-CCM(S3K, nonce "NCASE_Sigma3N", TBEData3 {1 NOC, 2 ICAC?, 3 signature})
        signature over TBSData3 {1 NOC, 2 ICAC?, 3 initiatorEphPubKey, 4 responderEphPubKey}
    session keys = Crypto_KDF(shared, IPK || Hash(Sigma1 || Sigma2 || Sigma3), "SessionKeys", 384)

Session resumption: a Sigma1 carrying resumptionID and initiatorResumeMIC is answered with a
full Sigma2, never Sigma2_Resume. The spec lets a responder do that (it may have forgotten
the resumption state), and initiators (CHIP SDK, matter.js) then continue with Sigma3. The
resumption ID in our Sigma2 is fresh random but nothing is kept to resume from it later.

Failures answer with a StatusReport: NO_SHARED_TRUST_ROOTS when no fabric matches the
destination id, INVALID_PARAMETER for everything else (bad TLV, MIC, chain, signature).
"""
from __future__ import annotations

import random
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from chip.tlv import uint
from cryptography.hazmat.primitives.asymmetric import ec

from matter_protocol.certs import CertificateError, MatterCertificate, compressed_fabric_id, verify_chain
from matter_protocol.crypto import (
    Crypto_AEAD_DecryptVerify,
    Crypto_AEAD_GenerateEncrypt,
    Crypto_ECDH,
    Crypto_GenerateKeypair,
    Crypto_Hash,
    Crypto_HMAC,
    Crypto_KDF,
    Crypto_Sign,
    Crypto_Verify,
    CryptoError,
    constant_time_equal,
    public_key_bytes,
)
from matter_protocol.message import SecureChannelOpcode
from matter_protocol.pase import (
    RANDOM_SIZE,
    Handshake,
    HandshakeError,
    decode_session_parameters,
    decode_struct,
    derive_session_keys,
    encode_struct,
    field_bytes,
    field_uint,
)
from matter_protocol.session_types import EstablishedSession
from matter_protocol.status_report import SecureChannelStatus
from matter_protocol.tlv import Tag

IPK_SIZE = 16
RESUMPTION_ID_SIZE = 16
MIC_SIZE = 16
GROUP_KEY_INFO = b"GroupKey v1.0"
SIGMA2_INFO = b"Sigma2"
SIGMA3_INFO = b"Sigma3"
TBE_DATA2_NONCE = b"NCASE_Sigma2N"
TBE_DATA3_NONCE = b"NCASE_Sigma3N"


@dataclass(frozen=True)
class FabricInfo:
    """What CASE needs to know about one fabric this node (or controller) belongs to.

    `ipk_epoch_key` is the IPK epoch key as written by AddNOC / the group key set; the
    operational IPK used on the wire is derived from it with the compressed fabric id.
    """
    fabric_index: int
    fabric_id: int
    node_id: int
    root_public_key: bytes  # 65-byte uncompressed point from the RCAC
    ipk_epoch_key: bytes  # 16 bytes
    rcac: bytes  # Matter TLV certificates
    noc: bytes
    icac: bytes | None
    operational_key: ec.EllipticCurvePrivateKey

    @classmethod
    def from_certificates(cls, fabric_index: int, rcac: bytes, noc: bytes, icac: bytes | None,
                          operational_key: ec.EllipticCurvePrivateKey, ipk_epoch_key: bytes) -> FabricInfo:
        """Fill ids and root key from the chain; CertificateError if the chain or key do not fit."""
        node_id, fabric_id, noc_key = verify_chain(noc, icac, rcac)
        if public_key_bytes(operational_key) != noc_key:
            raise CertificateError("operational private key does not match the NOC public key")
        if len(ipk_epoch_key) != IPK_SIZE:
            raise ValueError(f"IPK epoch key is {len(ipk_epoch_key)} bytes; accepted: 16")
        root = MatterCertificate.from_tlv(rcac)
        return cls(fabric_index=fabric_index, fabric_id=fabric_id, node_id=node_id,
                   root_public_key=root.public_key, ipk_epoch_key=bytes(ipk_epoch_key), rcac=bytes(rcac),
                   noc=bytes(noc), icac=bytes(icac) if icac is not None else None, operational_key=operational_key)

    @cached_property
    def compressed_fabric_id(self) -> bytes:
        return compressed_fabric_id(self.root_public_key, self.fabric_id)

    @cached_property
    def ipk(self) -> bytes:
        """The operational group key for the IPK (spec 4.16.2.6): KDF(epoch key, compressed fabric id)."""
        return Crypto_KDF(self.ipk_epoch_key, self.compressed_fabric_id, GROUP_KEY_INFO, 128)

    def destination_id(self, initiator_random: bytes, node_id: int) -> bytes:
        return destination_id(self.ipk, initiator_random, self.root_public_key, self.fabric_id, node_id)


def destination_id(ipk: bytes, initiator_random: bytes, root_public_key: bytes, fabric_id: int, node_id: int) -> bytes:
    message = (bytes(initiator_random) + bytes(root_public_key)
               + fabric_id.to_bytes(8, "little") + node_id.to_bytes(8, "little"))
    return Crypto_HMAC(ipk, message)


def _tbs(noc: bytes, icac: bytes | None, sender_key: bytes, receiver_key: bytes) -> bytes:
    return encode_struct({1: noc, 2: icac, 3: sender_key, 4: receiver_key})


def _invalid(message: str) -> HandshakeError:
    return HandshakeError(SecureChannelStatus.INVALID_PARAMETER, message)


class _Case(Handshake):
    def __init__(self, local_session_id: int, rng: random.Random | None,
                 session_params: Mapping[str, int] | None, at: int | None) -> None:
        super().__init__(local_session_id, rng, session_params)
        self._at = at  # Matter epoch seconds for certificate validity, from the caller's clock
        self.fabric: FabricInfo | None = None
        self.peer_session_id: int | None = None
        self.peer_node_id: int | None = None
        self.peer_params: dict[str, int] | None = None
        # CASE Authenticated Tags from the peer's NOC, for access control (EstablishedSession has no slot).
        self.peer_cats: tuple[int, ...] = ()
        self._eph = Crypto_GenerateKeypair(self.rng)
        self._eph_pub = public_key_bytes(self._eph)
        self._peer_eph_pub: bytes | None = None
        self._shared: bytes | None = None
        self._messages: list[bytes] = []  # raw Sigma1, Sigma2, Sigma3 for the transcript hash

    def _ecdh(self, peer_eph_pub: bytes) -> bytes:
        """Derive and keep the shared secret with the peer's ephemeral key; returns it."""
        try:
            shared = Crypto_ECDH(self._eph, peer_eph_pub)
        except CryptoError as e:
            raise _invalid(f"peer ephemeral key: {e}") from None
        self._shared, self._peer_eph_pub = shared, peer_eph_pub
        return shared

    # The step order guarantees these are set before use: the initiator gets its fabric in the
    # constructor, the responder picks it from Sigma1; both run ECDH on the first Sigma they read.
    def _our_fabric(self) -> FabricInfo:
        assert self.fabric is not None, "CASE fabric used before Sigma1 chose it"
        return self.fabric

    def _shared_secret(self) -> bytes:
        assert self._shared is not None, "CASE shared secret used before ECDH"
        return self._shared

    def _peer_eph(self) -> bytes:
        assert self._peer_eph_pub is not None, "peer ephemeral key used before ECDH"
        return self._peer_eph_pub

    def _transcript_hash(self) -> bytes:
        return Crypto_Hash(b"".join(self._messages))

    def _s3k(self) -> bytes:
        return Crypto_KDF(self._shared_secret(), self._our_fabric().ipk + self._transcript_hash(), SIGMA3_INFO, 128)

    def _verify_peer(self, tbe: Mapping[Tag, Any], receiver_eph_pub: bytes, what: str) -> int:
        """Check the peer's chain and signature from a decrypted TBEData; returns its node id."""
        fabric = self._our_fabric()
        noc = field_bytes(tbe, 1, f"{what} NOC")
        icac = field_bytes(tbe, 2, f"{what} ICAC", optional=True)
        signature = field_bytes(tbe, 3, f"{what} signature", 64)
        try:
            node_id, fabric_id, noc_key = verify_chain(noc, icac, fabric.rcac, self._at)
        except CertificateError as e:
            raise _invalid(f"{what} certificate chain: {e}") from None
        if fabric_id != fabric.fabric_id:
            raise _invalid(f"{what} NOC fabric id {fabric_id:#x}; expected {fabric.fabric_id:#x}")
        if not Crypto_Verify(noc_key, _tbs(noc, icac, self._peer_eph(), receiver_eph_pub), signature):
            raise _invalid(f"{what} signature does not verify with the NOC public key")
        self.peer_cats = MatterCertificate.from_tlv(noc).case_authenticated_tags
        return node_id

    def _sign_tbe(self, extra: dict[int, Any]) -> bytes:
        f = self._our_fabric()
        signature = Crypto_Sign(f.operational_key, _tbs(f.noc, f.icac, self._eph_pub, self._peer_eph()))
        return encode_struct({1: f.noc, 2: f.icac, 3: signature, **extra})

    def _established(self) -> EstablishedSession:
        fabric = self._our_fabric()
        keys = derive_session_keys(self._shared_secret(), fabric.ipk + self._transcript_hash())
        # Only reached after the Sigma that carries the peer's session id was accepted.
        assert self.peer_session_id is not None, "CASE established before the peer's session id was known"
        return EstablishedSession(
            local_session_id=self.local_session_id, peer_session_id=self.peer_session_id, keys=keys,
            is_initiator=self.is_initiator, peer_node_id=self.peer_node_id,
            fabric_index=fabric.fabric_index, peer_mrp=self.peer_params)


class CaseResponder(_Case):
    """The node's side. `fabrics` is any iterable of FabricInfo, looked at when Sigma1 arrives."""

    is_initiator = False

    def __init__(self, fabrics: Iterable[FabricInfo], local_session_id: int, rng: random.Random | None = None,
                 session_params: Mapping[str, int] | None = None, at: int | None = None) -> None:
        super().__init__(local_session_id, rng, session_params, at)
        self._fabrics = fabrics
        self.resumption_requested = False
        self._expect = SecureChannelOpcode.CASE_Sigma1

    def _dispatch(self, opcode: SecureChannelOpcode, payload: bytes) -> list[tuple[int, bytes]]:
        if opcode == SecureChannelOpcode.CASE_Sigma1:
            return self._on_sigma1(payload)
        return self._on_sigma3(payload)

    def _on_sigma1(self, payload: bytes) -> list[tuple[int, bytes]]:
        s = decode_struct(payload, "Sigma1")
        initiator_random = field_bytes(s, 1, "initiatorRandom", RANDOM_SIZE)
        peer_session_id = field_uint(s, 2, "initiatorSessionId", 0xFFFF)
        dest = field_bytes(s, 3, "destinationId", 32)
        peer_eph_pub = field_bytes(s, 4, "initiatorEphPubKey", 65)
        peer_params = decode_session_parameters(s.get(5))
        resumption_id = field_bytes(s, 6, "resumptionID", RESUMPTION_ID_SIZE, optional=True)
        resume_mic = field_bytes(s, 7, "initiatorResumeMIC", MIC_SIZE, optional=True)
        if (resumption_id is None) != (resume_mic is None):
            raise _invalid("Sigma1 must carry both resumptionID and initiatorResumeMIC or neither")
        self.resumption_requested = resumption_id is not None  # answered with a full Sigma2

        fabric = next((f for f in self._fabrics
                       if constant_time_equal(f.destination_id(initiator_random, f.node_id), dest)), None)
        if fabric is None:
            raise HandshakeError(SecureChannelStatus.NO_SHARED_TRUST_ROOTS,
                                 "destinationId matches no fabric of this node (wrong IPK, root, fabric or node id)")
        self.fabric, self.peer_session_id, self.peer_params = fabric, peer_session_id, peer_params
        shared = self._ecdh(peer_eph_pub)
        self._messages.append(payload)

        responder_random = self.rng.randbytes(RANDOM_SIZE)
        s2k = Crypto_KDF(shared, fabric.ipk + responder_random + self._eph_pub + self._transcript_hash(),
                         SIGMA2_INFO, 128)
        tbe2 = self._sign_tbe({4: self.rng.randbytes(RESUMPTION_ID_SIZE)})
        sigma2 = encode_struct({
            1: responder_random,
            2: uint(self.local_session_id),
            3: self._eph_pub,
            4: Crypto_AEAD_GenerateEncrypt(s2k, tbe2, b"", TBE_DATA2_NONCE),
            5: self._local_params,
        })
        self._messages.append(sigma2)
        self._expect = SecureChannelOpcode.CASE_Sigma3
        return [(SecureChannelOpcode.CASE_Sigma2, sigma2)]

    def _on_sigma3(self, payload: bytes) -> list[tuple[int, bytes]]:
        s = decode_struct(payload, "Sigma3")
        encrypted3 = field_bytes(s, 1, "encrypted3")
        try:
            tbe3 = Crypto_AEAD_DecryptVerify(self._s3k(), encrypted3, b"", TBE_DATA3_NONCE)
        except CryptoError as e:
            raise _invalid(f"Sigma3 encrypted data: {e}") from None
        self.peer_node_id = self._verify_peer(decode_struct(tbe3, "TBEData3"), self._eph_pub, "initiator")
        self._messages.append(payload)
        return self._succeed()


class CaseInitiator(_Case):
    """The controller's side (tests, in-process controller): `start()` gives Sigma1."""

    is_initiator = True

    def __init__(self, fabric: FabricInfo, peer_node_id: int, local_session_id: int,
                 rng: random.Random | None = None, session_params: Mapping[str, int] | None = None,
                 at: int | None = None) -> None:
        super().__init__(local_session_id, rng, session_params, at)
        self.fabric = fabric
        self.target_node_id = peer_node_id

    def start(self) -> list[tuple[int, bytes]]:
        if self._messages:
            raise RuntimeError("CaseInitiator.start() called twice")
        initiator_random = self.rng.randbytes(RANDOM_SIZE)
        sigma1 = encode_struct({
            1: initiator_random,
            2: uint(self.local_session_id),
            3: self._our_fabric().destination_id(initiator_random, self.target_node_id),
            4: self._eph_pub,
            5: self._local_params,
        })
        self._messages.append(sigma1)
        self._expect = SecureChannelOpcode.CASE_Sigma2
        return [(SecureChannelOpcode.CASE_Sigma1, sigma1)]

    def _dispatch(self, opcode: SecureChannelOpcode, payload: bytes) -> list[tuple[int, bytes]]:
        return self._on_sigma2(payload)

    def _on_sigma2(self, payload: bytes) -> list[tuple[int, bytes]]:
        s = decode_struct(payload, "Sigma2")
        responder_random = field_bytes(s, 1, "responderRandom", RANDOM_SIZE)
        peer_session_id = field_uint(s, 2, "responderSessionId", 0xFFFF)
        peer_eph_pub = field_bytes(s, 3, "responderEphPubKey", 65)
        encrypted2 = field_bytes(s, 4, "encrypted2")
        peer_params = decode_session_parameters(s.get(5))
        shared = self._ecdh(peer_eph_pub)
        s2k = Crypto_KDF(shared, self._our_fabric().ipk + responder_random + peer_eph_pub + self._transcript_hash(),
                         SIGMA2_INFO, 128)
        try:
            tbe2 = Crypto_AEAD_DecryptVerify(s2k, encrypted2, b"", TBE_DATA2_NONCE)
        except CryptoError as e:
            raise _invalid(f"Sigma2 encrypted data: {e}") from None
        tbe = decode_struct(tbe2, "TBEData2")
        node_id = self._verify_peer(tbe, self._eph_pub, "responder")
        if node_id != self.target_node_id:
            raise _invalid(f"responder NOC is node {node_id:#x}; expected {self.target_node_id:#x}")
        field_bytes(tbe, 4, "resumptionID", RESUMPTION_ID_SIZE)
        self.peer_node_id, self.peer_session_id, self.peer_params = node_id, peer_session_id, peer_params
        self._messages.append(payload)

        tbe3 = self._sign_tbe({})
        sigma3 = encode_struct({1: Crypto_AEAD_GenerateEncrypt(self._s3k(), tbe3, b"", TBE_DATA3_NONCE)})
        self._messages.append(sigma3)
        self._expect = SecureChannelOpcode.StatusReport
        return [(SecureChannelOpcode.CASE_Sigma3, sigma3)]
