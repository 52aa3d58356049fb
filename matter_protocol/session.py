"""Sessions (Core spec ch. 4, "Session Management").

The unsecured session, secure unicast sessions and the session table.

A session turns (header, plaintext) into a datagram and back. Secure sessions use AES-CCM-128 with a
16-byte MIC; nonce = security flags (1) || message counter (4, LE) || source node id (8, LE), and the
AAD is the encoded message header (spec "Message Security"). The source node id is the sender's operational node id
for CASE and the Unspecified Node ID (0) for PASE. Privacy obfuscation is not implemented.
"""
from __future__ import annotations

import random
import struct
from collections.abc import Iterator
from typing import Any, ClassVar, Literal

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESCCM

from matter_protocol.message import UNSPECIFIED_NODE_ID, CounterMode, MessageCounter, MessageHeader, ReceptionState
from matter_protocol.session_types import EstablishedSession

MIC_LENGTH = 16
NONCE_LENGTH = 13
UNSECURED_SESSION_ID = 0


def make_nonce(security_flags: int, message_counter: int, source_node_id: int) -> bytes:
    return struct.pack("<BIQ", security_flags, message_counter, source_node_id)


class UnsecuredSession:
    """Carries PASE/CASE handshakes (session id 0). The initiator names itself with a random
    ephemeral node id in the source field; the responder echoes it as the destination."""

    is_secure: ClassVar[Literal[False]] = False
    local_session_id = UNSECURED_SESSION_ID
    peer_session_id = UNSECURED_SESSION_ID
    peer_node_id = None
    fabric_index = None

    def __init__(self, ephemeral_node_id: int, is_initiator: bool, peer_address: Any, now_ms: float):
        self.ephemeral_node_id = ephemeral_node_id
        self.is_initiator = is_initiator
        self.peer_address = peer_address
        self.reception = ReceptionState(CounterMode.UNENCRYPTED)
        self.peer_mrp: dict[str, int] = {}  # filled by the handshake when the peer sends its session parameters
        self.last_peer_activity_ms = now_ms
        self.last_activity_ms = now_ms
        self.closed = False
        # Set by the owner while a handshake runs on this session: the table then evicts it only
        # when every unsecured session is pinned, so a flood of new senders cannot push out a
        # handshake in progress.
        self.pinned = False

    def header(self, counter: int) -> MessageHeader:
        if self.is_initiator:
            return MessageHeader(session_id=0, message_counter=counter, source_node_id=self.ephemeral_node_id)
        return MessageHeader(session_id=0, message_counter=counter, dest_node_id=self.ephemeral_node_id)

    def seal(self, header: MessageHeader, plain: bytes) -> bytes:
        return header.encode() + plain

    def open(self, header: MessageHeader, datagram: bytes, header_len: int) -> bytes | None:
        return bytes(datagram[header_len:])

    def __repr__(self) -> str:
        role = "initiator" if self.is_initiator else "responder"
        return f"UnsecuredSession({role}, ephemeral 0x{self.ephemeral_node_id:016x}, {self.peer_address!r})"


class SecureSession:
    """A PASE or CASE session. Counter state is updated by the caller only after `open` succeeded."""

    is_secure: ClassVar[Literal[True]] = True

    def __init__(self, established: EstablishedSession, peer_address: Any, now_ms: float,
                 rng: random.Random, local_node_id: int = UNSPECIFIED_NODE_ID):
        self.established = established
        self.local_session_id = established.local_session_id
        self.peer_session_id = established.peer_session_id
        self.is_initiator = established.is_initiator
        self.peer_node_id = established.peer_node_id
        self.fabric_index = established.fabric_index
        self.local_node_id = local_node_id
        self.attestation_challenge = established.keys.attestation_challenge
        self.keys = established.keys   # the node's commissioning servers sign with keys.attestation_challenge
        #: The peer NOC's CASE Authenticated Tags (CASE only), for access control.
        self.peer_cats: tuple[int, ...] = ()
        keys = established.keys
        for name in ("i2r_key", "r2i_key"):
            if len(getattr(keys, name)) != 16:
                raise ValueError(f"{name} is {len(getattr(keys, name))} bytes; accepted: 16")
        send_key, receive_key = (keys.i2r_key, keys.r2i_key) if self.is_initiator else (keys.r2i_key, keys.i2r_key)
        self._encrypt = AESCCM(send_key, tag_length=MIC_LENGTH)
        self._decrypt = AESCCM(receive_key, tag_length=MIC_LENGTH)
        self.counter = MessageCounter(rng, rollover=False)
        self.reception = ReceptionState(CounterMode.ENCRYPTED_UNICAST)
        self.peer_address = peer_address
        self.peer_mrp: dict[str, int] = dict(established.peer_mrp or {})
        # The handshake just heard from the peer, so it counts as active.
        self.last_peer_activity_ms = now_ms
        self.last_activity_ms = now_ms
        self.closed = False

    @property
    def _peer_nonce_node_id(self) -> int:
        return self.peer_node_id if self.peer_node_id is not None else UNSPECIFIED_NODE_ID

    def header(self, counter: int) -> MessageHeader:
        return MessageHeader(session_id=self.peer_session_id, message_counter=counter)

    def seal(self, header: MessageHeader, plain: bytes) -> bytes:
        aad = header.encode()
        nonce = make_nonce(header.security_flags, header.message_counter, self.local_node_id)
        return aad + self._encrypt.encrypt(nonce, bytes(plain), aad)

    def open(self, header: MessageHeader, datagram: bytes, header_len: int) -> bytes | None:
        """The plaintext, or None when the MIC does not verify."""
        if len(datagram) - header_len < MIC_LENGTH:
            return None
        nonce = make_nonce(header.security_flags, header.message_counter, self._peer_nonce_node_id)
        try:
            return self._decrypt.decrypt(nonce, bytes(datagram[header_len:]), bytes(datagram[:header_len]))
        except InvalidTag:
            return None

    def __repr__(self) -> str:
        kind = "CASE" if self.peer_node_id is not None else "PASE"
        return (f"SecureSession({kind}, local {self.local_session_id}, peer {self.peer_session_id}, "
                f"node {self.peer_node_id}, {self.peer_address!r})")


Session = UnsecuredSession | SecureSession


class SessionTable:
    """Secure sessions by local session id, unsecured sessions by (ephemeral node id, role).

    Handshakes reserve their local session id up front with `allocate_id()`, then `add()` the
    established session (or `release_id()` on failure). When full, the least recently active
    session is evicted to make room (the spec lets a node pick; LRU is the simple fair rule).
    """

    def __init__(self, rng: random.Random, max_secure: int = 64, max_unsecured: int = 16):
        if max_secure < 1 or max_unsecured < 1:
            raise ValueError("session table sizes must be at least 1")
        self.rng = rng
        self.max_secure = max_secure
        self.max_unsecured = max_unsecured
        self._secure: dict[int, SecureSession] = {}
        self._reserved: set[int] = set()
        self._unsecured: dict[tuple[int, bool], UnsecuredSession] = {}
        self._next_id = rng.randint(1, 0xFFFF)
        # Spec: one unencrypted counter for the whole node, random start, rolls over.
        self.unsecured_counter = MessageCounter(rng, rollover=True)
        self.evicted: list[Session] = []  # drained by the message layer to report SessionClosed

    # -- secure sessions --------------------------------------------------------------------
    def allocate_id(self) -> int:
        """Reserve a free local session id (1..65535)."""
        if len(self._secure) + len(self._reserved) >= 0xFFFF:
            raise RuntimeError("all 65535 session ids are in use")
        while True:
            candidate = self._next_id
            self._next_id = self._next_id % 0xFFFF + 1
            if candidate not in self._secure and candidate not in self._reserved:
                self._reserved.add(candidate)
                return candidate

    def release_id(self, local_session_id: int) -> None:
        self._reserved.discard(local_session_id)

    def add(self, established: EstablishedSession, peer_address: Any, now_ms: float,
            local_node_id: int = UNSPECIFIED_NODE_ID) -> SecureSession:
        local_id = established.local_session_id
        if not 1 <= local_id <= 0xFFFF:
            raise ValueError(f"local session id {local_id}; accepted: 1 to 65535")
        if local_id in self._secure:
            raise ValueError(f"local session id {local_id} is already in use")
        session = SecureSession(established, peer_address, now_ms, self.rng, local_node_id)
        while len(self._secure) >= self.max_secure:
            self.remove(min(self._secure.values(), key=lambda s: s.last_activity_ms), evicted=True)
        self._reserved.discard(local_id)
        self._secure[local_id] = session
        return session

    def get(self, local_session_id: int) -> SecureSession | None:
        return self._secure.get(local_session_id)

    def secure_sessions(self) -> Iterator[SecureSession]:
        return iter(list(self._secure.values()))

    def find(self, peer_node_id: int | None = None, fabric_index: int | None = None) -> list[SecureSession]:
        return [s for s in self._secure.values()
                if (peer_node_id is None or s.peer_node_id == peer_node_id)
                and (fabric_index is None or s.fabric_index == fabric_index)]

    # -- unsecured sessions -------------------------------------------------------------------
    def get_unsecured(self, ephemeral_node_id: int, is_initiator: bool) -> UnsecuredSession | None:
        return self._unsecured.get((ephemeral_node_id, is_initiator))

    def new_unsecured(self, ephemeral_node_id: int, is_initiator: bool, peer_address: Any,
                      now_ms: float) -> UnsecuredSession:
        key = (ephemeral_node_id, is_initiator)
        if key in self._unsecured:
            self.remove(self._unsecured[key])
        while len(self._unsecured) >= self.max_unsecured:
            candidates = [s for s in self._unsecured.values() if not s.pinned] or list(self._unsecured.values())
            self.remove(min(candidates, key=lambda s: s.last_activity_ms), evicted=True)
        session = UnsecuredSession(ephemeral_node_id, is_initiator, peer_address, now_ms)
        self._unsecured[key] = session
        return session

    def unsecured_sessions(self) -> Iterator[UnsecuredSession]:
        return iter(list(self._unsecured.values()))

    # -- removal ----------------------------------------------------------------------------
    def remove(self, session: Session, evicted: bool = False) -> None:
        if session.is_secure:
            if self._secure.get(session.local_session_id) is not session:
                return
            del self._secure[session.local_session_id]
        else:
            key = (session.ephemeral_node_id, session.is_initiator)
            if self._unsecured.get(key) is not session:
                return
            del self._unsecured[key]
        session.closed = True
        if evicted:
            self.evicted.append(session)

    def __len__(self) -> int:
        return len(self._secure)
