"""PASE: passcode-authenticated session establishment (Matter Core spec 4.14.1), sans-IO.

    initiator (commissioner)                    responder (node)
    PBKDFParamRequest  {1 random, 2 session id, 3 passcode id, 4 hasPBKDFParameters, 5 params?}
                       -> PBKDFParamResponse {1 initiator random, 2 random, 3 session id,
                                              4 {1 iterations, 2 salt}?, 5 params?}
    Pake1 {1 pA}       -> Pake2 {1 pB, 2 cB}
    Pake3 {1 cA}       -> StatusReport(SUCCESS, SESSION_ESTABLISHMENT_SUCCESS)

SPAKE2+ context = Hash("CHIP PAKE V1 Commissioning" || PBKDFParamRequest || PBKDFParamResponse)
over the raw payloads; session keys = Crypto_KDF(Ke, [], "SessionKeys", 384) split into
I2RKey, R2IKey, AttestationChallenge.

A handshake object only sees (opcode, payload) pairs of the Secure Channel protocol. It
knows nothing of message headers, counters, MRP or sockets: the exchange layer feeds it and
sends what `handle` returns. On failure `handle` returns the StatusReport to send (general
code FAILURE, protocol code in `.error`) and the object ignores everything afterwards.

This module also holds the pieces PASE and CASE share: the state-machine driver,
session-parameter TLV and strict TLV field access. Opcodes and StatusReport come from the
message layer (`message.SecureChannelOpcode`, `status_report`).
"""
from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any, Literal, overload

from chip.tlv import uint

from matter_protocol.crypto import Crypto_Hash, Crypto_KDF, default_rng
from matter_protocol.message import MessageFormatError, ProtocolId, SecureChannelOpcode
from matter_protocol.session_types import EstablishedSession, SessionKeys
from matter_protocol.spake2p import (
    Spake2pError,
    Spake2pProver,
    Spake2pVerifier,
    check_pbkdf_parameters,
    compute_w0_w1,
    parse_verifier,
)
from matter_protocol.status_report import GeneralCode, SecureChannelStatus, StatusReport
from matter_protocol.tlv import CodecError, Struct, Tag, decode_tlv, encode_tlv

SPAKE2P_CONTEXT_PREFIX = b"CHIP PAKE V1 Commissioning"
SESSION_KEYS_INFO = b"SessionKeys"
RANDOM_SIZE = 32
DEFAULT_PASSCODE_ID = 0

# Session parameter struct tags (spec "session-parameter-struct"), by spec name.
SESSION_PARAMETER_TAGS = {
    "SESSION_IDLE_INTERVAL": 1,
    "SESSION_ACTIVE_INTERVAL": 2,
    "SESSION_ACTIVE_THRESHOLD": 3,
    "DATA_MODEL_REVISION": 4,
    "INTERACTION_MODEL_REVISION": 5,
    "SPECIFICATION_VERSION": 6,
    "MAX_PATHS_PER_INVOKE": 7,
}
_SESSION_PARAMETER_NAMES = {tag: name for name, tag in SESSION_PARAMETER_TAGS.items()}


class HandshakeError(Exception):
    """A handshake step failed; `code` is the StatusReport protocol code to answer with."""

    def __init__(self, code: SecureChannelStatus, message: str):
        super().__init__(f"{code.name}: {message}")
        self.code = code
        self.message = message


# --- TLV ----------------------------------------------------------------------------------

def encode_struct(fields: dict[int, Any]) -> bytes:
    """An anonymous TLV structure, fields in tag order; None values are left out (optional fields)."""
    return encode_tlv(_in_tag_order({tag: value for tag, value in fields.items() if value is not None}))


def _in_tag_order(value: Any) -> Any:
    """Plain dicts (nested too) as structures sorted by tag, the canonical order peers expect."""
    if type(value) is dict:
        return Struct((tag, _in_tag_order(value[tag])) for tag in sorted(value))
    return value


def decode_struct(payload: bytes, what: str) -> Struct:
    """Exactly one terminated anonymous TLV structure, as {context tag: value}."""
    try:
        value = decode_tlv(bytes(payload))
    except CodecError as e:
        raise HandshakeError(SecureChannelStatus.INVALID_PARAMETER, f"{what} is not valid TLV: {e}") from None
    if not isinstance(value, Struct):
        raise HandshakeError(SecureChannelStatus.INVALID_PARAMETER, f"{what} must be one anonymous TLV structure")
    return value


@overload
def field_bytes(s: Mapping[Tag, Any], tag: int, what: str, length: int | None = None,
                optional: Literal[False] = False) -> bytes: ...
@overload
def field_bytes(s: Mapping[Tag, Any], tag: int, what: str, length: int | None = None, *,
                optional: bool) -> bytes | None: ...
def field_bytes(s: Mapping[Tag, Any], tag: int, what: str, length: int | None = None,
                optional: bool = False) -> bytes | None:
    """The octet string at `tag`; None only when `optional` and the field is absent (or null)."""
    value = s.get(tag)
    if value is None and optional:
        return None
    if not isinstance(value, bytes):
        raise HandshakeError(SecureChannelStatus.INVALID_PARAMETER, f"{what} (tag {tag}) must be an octet string")
    if length is not None and len(value) != length:
        raise HandshakeError(SecureChannelStatus.INVALID_PARAMETER,
                             f"{what} (tag {tag}) is {len(value)} bytes; accepted: {length}")
    return value


def field_uint(s: Mapping[Tag, Any], tag: int, what: str, max_value: int) -> int:
    value = s.get(tag)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= max_value:
        raise HandshakeError(SecureChannelStatus.INVALID_PARAMETER,
                             f"{what} (tag {tag}) must be an unsigned integer up to {max_value}")
    return int(value)


def encode_session_parameters(params: Mapping[str, int] | None) -> dict[int, int] | None:
    if not params:
        return None
    unknown = set(params) - set(SESSION_PARAMETER_TAGS)
    if unknown:
        raise ValueError(f"unknown session parameters {sorted(unknown)}; accepted: {sorted(SESSION_PARAMETER_TAGS)}")
    return {SESSION_PARAMETER_TAGS[name]: uint(value) for name, value in params.items()}


def decode_session_parameters(value: object) -> dict[str, int] | None:
    """Known session parameters by spec name; unknown tags are ignored (forward compatible)."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise HandshakeError(SecureChannelStatus.INVALID_PARAMETER, "session parameters must be a TLV structure")
    out: dict[str, int] = {}
    for tag in value:
        name = _SESSION_PARAMETER_NAMES.get(tag)
        if name is not None:
            out[name] = field_uint(value, tag, name, 0xFFFFFFFF)
    return out


def initiator_random(payload: bytes) -> bytes | None:
    """The initiatorRandom (tag 1 in both PBKDFParamRequest and Sigma1) of a handshake's first
    message, or None if it has none readable: a cheap look before any work, to spot a replay."""
    try:
        return field_bytes(decode_struct(bytes(payload), "first message"), 1, "initiatorRandom", RANDOM_SIZE)
    except Exception:  # noqa: BLE001 - any unreadable message: the handshake itself reports why
        return None


def derive_session_keys(secret: bytes, salt: bytes) -> SessionKeys:
    k = Crypto_KDF(secret, salt, SESSION_KEYS_INFO, 3 * 128)
    return SessionKeys(i2r_key=k[:16], r2i_key=k[16:32], attestation_challenge=k[32:48])


def check_session_id(session_id: int) -> None:
    if not 1 <= session_id <= 0xFFFF:
        raise ValueError(f"local session id {session_id}; accepted: 1 to 65535 (0 is the unsecured session)")


# --- common state machine -------------------------------------------------------------------

class Handshake:
    """Shared driver: dispatch by expected opcode, turn failures into StatusReports."""

    is_initiator: bool

    def __init__(self, local_session_id: int, rng: random.Random | None,
                 session_params: Mapping[str, int] | None) -> None:
        check_session_id(local_session_id)
        self.local_session_id = local_session_id
        self.rng = rng or default_rng()
        self._local_params = encode_session_parameters(session_params)
        self.result: EstablishedSession | None = None
        self.error: int | None = None
        self.error_message: str | None = None
        self._expect: SecureChannelOpcode | None = None  # next opcode accepted; None once finished

    @property
    def finished(self) -> bool:
        return self.result is not None or self.error is not None

    @property
    def expecting(self) -> SecureChannelOpcode | None:
        """The next message this handshake accepts (None once finished)."""
        return self._expect

    def handle(self, opcode: int, payload: bytes) -> list[tuple[int, bytes]]:
        """Feed one received Secure Channel message; returns the (opcode, payload)s to send."""
        if self.finished:
            return []
        if opcode == SecureChannelOpcode.StatusReport:
            self._on_status_report(payload)
            return []
        if opcode != self._expect:
            return self._fail(HandshakeError(
                SecureChannelStatus.INVALID_PARAMETER,
                f"unexpected message 0x{opcode:02x}; waiting for {self._expect.name if self._expect else 'nothing'}"))
        try:
            return self._dispatch(SecureChannelOpcode(opcode), bytes(payload))
        except HandshakeError as e:
            return self._fail(e)
        except Exception as e:  # the one place where any failure to read a message ends the handshake
            # Peer input must never leave a handshake half-alive: whatever a decoder or check
            # raised (the old struct decoder raised IndexError on b"\x15"), the handshake ends
            # here with the answer the CHIP SDK gives every processing error.
            return self.abort(f"{type(e).__name__} while handling message 0x{opcode:02x}: {e}")

    def abort(self, message: str) -> list[tuple[int, bytes]]:
        """End the handshake now as failed: StatusReport(FAILURE, INVALID_PARAMETER) to send."""
        if self.finished:
            return []
        return self._fail(HandshakeError(SecureChannelStatus.INVALID_PARAMETER, message))

    def _dispatch(self, opcode: SecureChannelOpcode, payload: bytes) -> list[tuple[int, bytes]]:
        raise NotImplementedError  # each handshake maps its opcodes to steps

    def _on_status_report(self, payload: bytes) -> None:
        try:
            report = StatusReport.decode(payload)
        except MessageFormatError as e:
            self._set_error(SecureChannelStatus.INVALID_PARAMETER, str(e))
            return
        general, code = report.general_code, report.protocol_code
        success = (general == GeneralCode.SUCCESS and report.protocol_id == ProtocolId.SECURE_CHANNEL
                   and report.vendor_id == 0 and code == SecureChannelStatus.SESSION_ESTABLISHMENT_SUCCESS)
        if success and self._expect == SecureChannelOpcode.StatusReport:
            self.result = self._established()
            self._expect = None
        elif success:
            self._set_error(SecureChannelStatus.INVALID_PARAMETER,
                            "peer reported success before the handshake was complete")
        else:
            self._set_error(code, f"peer ended the handshake: general code {general}, protocol code {code}")

    def _established(self) -> EstablishedSession:
        raise NotImplementedError  # each handshake builds its own EstablishedSession

    def _set_error(self, code: int, message: str) -> None:
        self.error, self.error_message, self._expect = int(code), message, None

    def _fail(self, e: HandshakeError) -> list[tuple[int, bytes]]:
        self._set_error(e.code, e.message)
        report = StatusReport.secure_channel(GeneralCode.FAILURE, e.code)
        return [(SecureChannelOpcode.StatusReport, report.encode())]

    def _succeed(self) -> list[tuple[int, bytes]]:
        self.result = self._established()
        self._expect = None
        report = StatusReport.secure_channel(GeneralCode.SUCCESS, SecureChannelStatus.SESSION_ESTABLISHMENT_SUCCESS)
        return [(SecureChannelOpcode.StatusReport, report.encode())]


def _spake_error(e: Spake2pError) -> HandshakeError:
    return HandshakeError(SecureChannelStatus.INVALID_PARAMETER, str(e))


# --- PASE ------------------------------------------------------------------------------------

class _Pase(Handshake):
    def __init__(self, local_session_id: int, rng: random.Random | None,
                 session_params: Mapping[str, int] | None) -> None:
        super().__init__(local_session_id, rng, session_params)
        self.peer_session_id: int | None = None
        self.peer_params: dict[str, int] | None = None
        self._ke: bytes | None = None

    def _established(self) -> EstablishedSession:
        # Only reached once the last step ran: the peer's session id and Ke are both set by then.
        assert self.peer_session_id is not None and self._ke is not None, "PASE established before its last step"
        return EstablishedSession(
            local_session_id=self.local_session_id, peer_session_id=self.peer_session_id,
            keys=derive_session_keys(self._ke, b""), is_initiator=self.is_initiator,
            peer_node_id=None, fabric_index=None, peer_mrp=self.peer_params)


class PaseResponder(_Pase):
    """The node's side. `verifier` is w0 || L (97 bytes) from `spake2p.make_verifier`."""

    is_initiator = False

    def __init__(self, verifier: bytes, salt: bytes, iterations: int, local_session_id: int,
                 rng: random.Random | None = None, session_params: Mapping[str, int] | None = None) -> None:
        super().__init__(local_session_id, rng, session_params)
        check_pbkdf_parameters(salt, iterations)  # raises Spake2pError: a setup bug, not peer input
        self._w0, self._L = parse_verifier(verifier)
        self._salt, self._iterations = bytes(salt), iterations
        self._spake: Spake2pVerifier | None = None
        self._context: bytes | None = None
        # True once Pake1 was answered with Pake2: from cB the peer can now check the passcode it
        # committed to in pA, so this exchange spent one passcode guess (see `_finish` in the runtime).
        self.passcode_tried = False
        self._expect = SecureChannelOpcode.PBKDFParamRequest

    def _dispatch(self, opcode: SecureChannelOpcode, payload: bytes) -> list[tuple[int, bytes]]:
        if opcode == SecureChannelOpcode.PBKDFParamRequest:
            return self._on_pbkdf_request(payload)
        if opcode == SecureChannelOpcode.PASE_Pake1:
            return self._on_pake1(payload)
        return self._on_pake3(payload)

    def _on_pbkdf_request(self, payload: bytes) -> list[tuple[int, bytes]]:
        s = decode_struct(payload, "PBKDFParamRequest")
        initiator_random = field_bytes(s, 1, "initiatorRandom", RANDOM_SIZE)
        self.peer_session_id = field_uint(s, 2, "initiatorSessionId", 0xFFFF)
        passcode_id = field_uint(s, 3, "passcodeId", 0xFFFF)
        if passcode_id != DEFAULT_PASSCODE_ID:
            raise HandshakeError(SecureChannelStatus.INVALID_PARAMETER, f"passcodeId {passcode_id}; accepted: 0")
        has_params = s.get(4)
        if not isinstance(has_params, bool):
            raise HandshakeError(SecureChannelStatus.INVALID_PARAMETER, "hasPBKDFParameters (tag 4) must be a boolean")
        self.peer_params = decode_session_parameters(s.get(5))
        response = encode_struct({
            1: initiator_random,
            2: self.rng.randbytes(RANDOM_SIZE),
            3: uint(self.local_session_id),
            4: None if has_params else {1: uint(self._iterations), 2: self._salt},
            5: self._local_params,
        })
        # The SPAKE2+ share (an EC multiplication, ~3 ms in pure Python) is made when Pake1 comes:
        # a PBKDFParamRequest anyone can send then costs no curve arithmetic (issue #32).
        self._context = Crypto_Hash(SPAKE2P_CONTEXT_PREFIX + payload + response)
        self._expect = SecureChannelOpcode.PASE_Pake1
        return [(SecureChannelOpcode.PBKDFParamResponse, response)]

    def _spake_verifier(self) -> Spake2pVerifier:
        # Pake1 and Pake3 are only expected after the PBKDFParamRequest step made the context.
        if self._spake is None:
            assert self._context is not None, "SPAKE2+ verifier used before PBKDFParamRequest"
            self._spake = Spake2pVerifier(self._context, self._w0, self._L, rng=self.rng)
        return self._spake

    def _on_pake1(self, payload: bytes) -> list[tuple[int, bytes]]:
        s = decode_struct(payload, "Pake1")
        pA = field_bytes(s, 1, "pA", 65)
        try:
            pB, cB = self._spake_verifier().respond(pA)
        except Spake2pError as e:
            raise _spake_error(e) from None
        self._expect = SecureChannelOpcode.PASE_Pake3
        self.passcode_tried = True
        return [(SecureChannelOpcode.PASE_Pake2, encode_struct({1: pB, 2: cB}))]

    def _on_pake3(self, payload: bytes) -> list[tuple[int, bytes]]:
        s = decode_struct(payload, "Pake3")
        cA = field_bytes(s, 1, "cA", 32)
        spake = self._spake_verifier()
        try:
            spake.confirm(cA)
        except Spake2pError as e:
            raise _spake_error(e) from None
        self._ke = spake.Ke
        return self._succeed()


class PaseInitiator(_Pase):
    """The commissioner's side: `start()` gives the PBKDFParamRequest to send."""

    is_initiator = True

    def __init__(self, passcode: int, local_session_id: int, rng: random.Random | None = None,
                 session_params: Mapping[str, int] | None = None,
                 pbkdf_parameters: tuple[int, bytes] | None = None) -> None:
        super().__init__(local_session_id, rng, session_params)
        self._passcode = passcode
        # (iterations, salt) if already known (e.g. from an earlier attempt): the node then omits them.
        self._known_params = pbkdf_parameters
        self._request: bytes | None = None
        self._random: bytes | None = None
        self._spake: Spake2pProver | None = None

    def start(self) -> list[tuple[int, bytes]]:
        if self._request is not None:
            raise RuntimeError("PaseInitiator.start() called twice")
        self._random = self.rng.randbytes(RANDOM_SIZE)
        self._request = encode_struct({
            1: self._random,
            2: uint(self.local_session_id),
            3: uint(DEFAULT_PASSCODE_ID),
            4: self._known_params is not None,
            5: self._local_params,
        })
        self._expect = SecureChannelOpcode.PBKDFParamResponse
        return [(SecureChannelOpcode.PBKDFParamRequest, self._request)]

    def _dispatch(self, opcode: SecureChannelOpcode, payload: bytes) -> list[tuple[int, bytes]]:
        if opcode == SecureChannelOpcode.PBKDFParamResponse:
            return self._on_pbkdf_response(payload)
        return self._on_pake2(payload)

    def _on_pbkdf_response(self, payload: bytes) -> list[tuple[int, bytes]]:
        s = decode_struct(payload, "PBKDFParamResponse")
        if field_bytes(s, 1, "initiatorRandom", RANDOM_SIZE) != self._random:
            raise HandshakeError(SecureChannelStatus.INVALID_PARAMETER,
                                 "PBKDFParamResponse echoes a different initiatorRandom")
        field_bytes(s, 2, "responderRandom", RANDOM_SIZE)
        self.peer_session_id = field_uint(s, 3, "responderSessionId", 0xFFFF)
        if self._known_params is not None:
            iterations, salt = self._known_params
        else:
            p = s.get(4)
            if not isinstance(p, dict):
                raise HandshakeError(SecureChannelStatus.INVALID_PARAMETER, "pbkdf_parameters (tag 4) missing")
            iterations = field_uint(p, 1, "iterations", 0xFFFFFFFF)
            salt = field_bytes(p, 2, "salt")
        self.peer_params = decode_session_parameters(s.get(5))
        try:
            w0, w1 = compute_w0_w1(self._passcode, salt, iterations)
        except Spake2pError as e:
            raise _spake_error(e) from None
        # PBKDFParamResponse is only expected after start() stored the request.
        assert self._request is not None, "PBKDFParamResponse handled before start()"
        context = Crypto_Hash(SPAKE2P_CONTEXT_PREFIX + self._request + payload)
        self._spake = Spake2pProver(context, w0, w1, rng=self.rng)
        self._expect = SecureChannelOpcode.PASE_Pake2
        return [(SecureChannelOpcode.PASE_Pake1, encode_struct({1: self._spake.X}))]

    def _on_pake2(self, payload: bytes) -> list[tuple[int, bytes]]:
        s = decode_struct(payload, "Pake2")
        pB = field_bytes(s, 1, "pB", 65)
        cB = field_bytes(s, 2, "cB", 32)
        spake = self._spake
        # Pake2 is only expected after the PBKDFParamResponse step made the prover.
        assert spake is not None, "SPAKE2+ prover used before PBKDFParamResponse"
        try:
            cA = spake.finish(pB)
            spake.confirm(cB)
        except Spake2pError as e:
            raise _spake_error(e) from None
        self._ke = spake.Ke
        self._expect = SecureChannelOpcode.StatusReport
        return [(SecureChannelOpcode.PASE_Pake3, encode_struct({1: cA}))]
