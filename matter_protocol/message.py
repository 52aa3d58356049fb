"""Matter message format, message counters and duplicate detection.

Core spec ch. 4, "Message Format" and "Message Counters".

Pure codecs and small state objects, no IO and no clock. A datagram is

    message header  | protocol (payload) header + application payload | MIC
    (plain, = AAD)  | (encrypted for secure sessions)                   | (16 bytes, secure only)

`MessageHeader.decode` / `PayloadHeader.decode` raise `MessageFormatError` on anything truncated or
malformed; the receive path turns that into a dropped datagram.
"""
from __future__ import annotations

import enum
import random
import struct
from dataclasses import dataclass

MESSAGE_VERSION = 0
MAX_UINT32 = 0xFFFFFFFF
UNSPECIFIED_NODE_ID = 0
# Spec "Message Reception State": how many counters below max_message_counter are remembered.
MSG_COUNTER_WINDOW_SIZE = 32
# Spec "Message Counters": fresh counters start at a random value in [1, 2^28].
COUNTER_INIT_MAX = 1 << 28

# Message flags (first byte).
_FLAG_S = 0x04  # source node id present
_DSIZ_MASK = 0x03
_DSIZ_NONE, _DSIZ_NODE, _DSIZ_GROUP = 0, 1, 2
# Security flags.
_SEC_P = 0x80  # privacy
_SEC_C = 0x40  # control message
_SEC_MX = 0x20  # message extensions present
_SEC_SESSION_TYPE = 0x03
# Exchange flags.
_EX_I = 0x01  # sent by the exchange initiator
_EX_A = 0x02  # carries an acknowledgement
_EX_R = 0x04  # needs an acknowledgement (MRP)
_EX_SX = 0x08  # secured extensions present
_EX_V = 0x10  # protocol vendor id present


class MessageFormatError(ValueError):
    """A header is truncated or malformed; the text says which field and what is accepted."""


class SessionType(enum.IntEnum):
    UNICAST = 0
    GROUP = 1


class ProtocolId(enum.IntEnum):
    """Protocol ids of the Matter standard vendor (0x0000), Core spec Appendix."""
    SECURE_CHANNEL = 0x0000
    INTERACTION_MODEL = 0x0001
    BDX = 0x0002
    USER_DIRECTED_COMMISSIONING = 0x0003
    FOR_TESTING = 0x0004


class SecureChannelOpcode(enum.IntEnum):
    """Secure Channel protocol message types (Core spec, Secure Channel protocol)."""
    MsgCounterSyncReq = 0x00
    MsgCounterSyncRsp = 0x01
    StandaloneAck = 0x10
    PBKDFParamRequest = 0x20
    PBKDFParamResponse = 0x21
    PASE_Pake1 = 0x22
    PASE_Pake2 = 0x23
    PASE_Pake3 = 0x24
    CASE_Sigma1 = 0x30
    CASE_Sigma2 = 0x31
    CASE_Sigma3 = 0x32
    CASE_Sigma2_Resume = 0x33
    StatusReport = 0x40
    ICD_CheckIn = 0x50


def _need(data: bytes, offset: int, size: int, what: str) -> None:
    if len(data) < offset + size:
        raise MessageFormatError(
            f"message truncated in {what}: needs {size} bytes at offset {offset}, datagram has {len(data)}")


def _check_uint(value: int, bits: int, what: str) -> None:
    if not isinstance(value, int) or not 0 <= value < (1 << bits):
        raise MessageFormatError(f"{what} is {value!r}; accepted: integer 0 to {(1 << bits) - 1}")


@dataclass(frozen=True)
class MessageHeader:
    """The plain message header; its encoded bytes are the AAD of a secure message."""
    session_id: int
    message_counter: int
    session_type: SessionType = SessionType.UNICAST
    source_node_id: int | None = None
    dest_node_id: int | None = None
    dest_group_id: int | None = None
    privacy: bool = False
    control: bool = False
    message_extensions: bytes | None = None  # None: MX flag clear

    @property
    def security_flags(self) -> int:
        flags = int(self.session_type) & _SEC_SESSION_TYPE
        if self.privacy:
            flags |= _SEC_P
        if self.control:
            flags |= _SEC_C
        if self.message_extensions is not None:
            flags |= _SEC_MX
        return flags

    def encode(self) -> bytes:
        _check_uint(self.session_id, 16, "session id")
        _check_uint(self.message_counter, 32, "message counter")
        if self.dest_node_id is not None and self.dest_group_id is not None:
            raise MessageFormatError("a message has a destination node id or a group id, not both")
        flags = MESSAGE_VERSION << 4
        tail = b""
        if self.source_node_id is not None:
            _check_uint(self.source_node_id, 64, "source node id")
            flags |= _FLAG_S
            tail += struct.pack("<Q", self.source_node_id)
        if self.dest_node_id is not None:
            _check_uint(self.dest_node_id, 64, "destination node id")
            flags |= _DSIZ_NODE
            tail += struct.pack("<Q", self.dest_node_id)
        elif self.dest_group_id is not None:
            _check_uint(self.dest_group_id, 16, "destination group id")
            flags |= _DSIZ_GROUP
            tail += struct.pack("<H", self.dest_group_id)
        if self.message_extensions is not None:
            _check_uint(len(self.message_extensions), 16, "message extensions length")
            tail += struct.pack("<H", len(self.message_extensions)) + bytes(self.message_extensions)
        return struct.pack("<BHBI", flags, self.session_id, self.security_flags, self.message_counter) + tail

    @classmethod
    def decode(cls, data: bytes) -> tuple[MessageHeader, int]:
        """The header and its length in bytes (the offset of the payload)."""
        _need(data, 0, 8, "message header")
        flags, session_id, sec, counter = struct.unpack_from("<BHBI", data, 0)
        version = flags >> 4
        if version != MESSAGE_VERSION:
            raise MessageFormatError(f"message version {version}; accepted: {MESSAGE_VERSION}")
        offset = 8
        source = dest_node = dest_group = extensions = None
        if flags & _FLAG_S:
            _need(data, offset, 8, "source node id")
            (source,) = struct.unpack_from("<Q", data, offset)
            offset += 8
        dsiz = flags & _DSIZ_MASK
        if dsiz == _DSIZ_NODE:
            _need(data, offset, 8, "destination node id")
            (dest_node,) = struct.unpack_from("<Q", data, offset)
            offset += 8
        elif dsiz == _DSIZ_GROUP:
            _need(data, offset, 2, "destination group id")
            (dest_group,) = struct.unpack_from("<H", data, offset)
            offset += 2
        elif dsiz != _DSIZ_NONE:
            raise MessageFormatError(f"DSIZ field is {dsiz}; accepted: 0 (none), 1 (node id), 2 (group id)")
        session_type = sec & _SEC_SESSION_TYPE
        if session_type not in (SessionType.UNICAST, SessionType.GROUP):
            raise MessageFormatError(f"session type {session_type}; accepted: 0 (unicast), 1 (group)")
        if sec & _SEC_MX:
            _need(data, offset, 2, "message extensions length")
            (length,) = struct.unpack_from("<H", data, offset)
            offset += 2
            _need(data, offset, length, "message extensions")
            extensions = bytes(data[offset:offset + length])
            offset += length
        header = cls(session_id=session_id, message_counter=counter, session_type=SessionType(session_type),
                     source_node_id=source, dest_node_id=dest_node, dest_group_id=dest_group,
                     privacy=bool(sec & _SEC_P), control=bool(sec & _SEC_C), message_extensions=extensions)
        return header, offset


@dataclass(frozen=True)
class PayloadHeader:
    """The protocol header at the start of the (decrypted) payload."""
    exchange_id: int
    protocol_id: int
    opcode: int
    initiator: bool = False  # I flag
    needs_ack: bool = False  # R flag
    ack_counter: int | None = None  # A flag + acknowledged message counter
    vendor_id: int | None = None  # V flag + protocol vendor id (None: the standard vendor 0)
    secured_extensions: bytes | None = None  # SX flag

    @property
    def exchange_flags(self) -> int:
        flags = 0
        if self.initiator:
            flags |= _EX_I
        if self.ack_counter is not None:
            flags |= _EX_A
        if self.needs_ack:
            flags |= _EX_R
        if self.secured_extensions is not None:
            flags |= _EX_SX
        if self.vendor_id is not None:
            flags |= _EX_V
        return flags

    @property
    def is_standalone_ack(self) -> bool:
        return (self.protocol_id == ProtocolId.SECURE_CHANNEL and not self.vendor_id
                and self.opcode == SecureChannelOpcode.StandaloneAck)

    def encode(self) -> bytes:
        _check_uint(self.exchange_id, 16, "exchange id")
        _check_uint(self.protocol_id, 16, "protocol id")
        _check_uint(self.opcode, 8, "protocol opcode")
        out = struct.pack("<BBH", self.exchange_flags, self.opcode, self.exchange_id)
        if self.vendor_id is not None:
            _check_uint(self.vendor_id, 16, "protocol vendor id")
            out += struct.pack("<H", self.vendor_id)
        out += struct.pack("<H", self.protocol_id)
        if self.ack_counter is not None:
            _check_uint(self.ack_counter, 32, "acknowledged message counter")
            out += struct.pack("<I", self.ack_counter)
        if self.secured_extensions is not None:
            _check_uint(len(self.secured_extensions), 16, "secured extensions length")
            out += struct.pack("<H", len(self.secured_extensions)) + bytes(self.secured_extensions)
        return out

    @classmethod
    def decode(cls, data: bytes) -> tuple[PayloadHeader, int]:
        """The protocol header and its length (the offset of the application payload)."""
        _need(data, 0, 4, "protocol header")
        flags, opcode, exchange_id = struct.unpack_from("<BBH", data, 0)
        offset = 4
        vendor = ack = extensions = None
        if flags & _EX_V:
            _need(data, offset, 2, "protocol vendor id")
            (vendor,) = struct.unpack_from("<H", data, offset)
            offset += 2
        _need(data, offset, 2, "protocol id")
        (protocol,) = struct.unpack_from("<H", data, offset)
        offset += 2
        if flags & _EX_A:
            _need(data, offset, 4, "acknowledged message counter")
            (ack,) = struct.unpack_from("<I", data, offset)
            offset += 4
        if flags & _EX_SX:
            # Secured extensions are skipped as the spec requires of nodes that define none.
            _need(data, offset, 2, "secured extensions length")
            (length,) = struct.unpack_from("<H", data, offset)
            offset += 2
            _need(data, offset, length, "secured extensions")
            extensions = bytes(data[offset:offset + length])
            offset += length
        header = cls(exchange_id=exchange_id, protocol_id=protocol, opcode=opcode, initiator=bool(flags & _EX_I),
                     needs_ack=bool(flags & _EX_R), ack_counter=ack, vendor_id=vendor, secured_extensions=extensions)
        return header, offset


# --- message counters ---------------------------------------------------------------------------


class CounterExhausted(Exception):
    """A secure session counter reached 2^32-1: the session must be closed, never reused."""


def initial_counter(rng: random.Random) -> int:
    return rng.randint(1, COUNTER_INIT_MAX)


class MessageCounter:
    """An outgoing message counter. `rollover=True` for the global unencrypted and group counters,
    False for a secure session counter, which must not wrap (the session ends instead)."""

    def __init__(self, rng: random.Random, rollover: bool, value: int | None = None):
        self.value = initial_counter(rng) if value is None else value
        self.rollover = rollover

    def next(self) -> int:
        """The counter for the next message to send, then advance."""
        current = self.value
        if current == MAX_UINT32:
            if not self.rollover:
                raise CounterExhausted("secure session message counter exhausted; accepted: open a new session")
            self.value = 0
        else:
            self.value = current + 1
        return current


# --- duplicate detection -----------------------------------------------------------------------


class CounterMode(enum.Enum):
    # Secure unicast: synced at session start, no rollover, anything behind the window is a duplicate.
    ENCRYPTED_UNICAST = "encrypted-unicast"
    # Group data messages: trust the first counter from a source, rollover, behind the window = duplicate.
    ENCRYPTED_GROUP = "encrypted-group"
    # Unsecured messages: trust first, rollover, behind the window = new (the peer rebooted).
    UNENCRYPTED = "unencrypted"


class ReceptionState:
    """max_message_counter plus a bitmap of the MSG_COUNTER_WINDOW_SIZE counters just below it.

    Bit k-1 of `window` set means counter max-k was seen. `is_duplicate` is pure; `commit` records
    a counter, and callers commit only after the message was authenticated.
    """

    def __init__(self, mode: CounterMode, max_counter: int | None = None):
        self.mode = mode
        if mode is CounterMode.ENCRYPTED_UNICAST and max_counter is None:
            max_counter = 0  # spec: unicast peer state starts synchronised at 0; counters start at >= 1
        self.max_counter = max_counter
        self.window = 0

    def _behind(self, counter: int, max_counter: int) -> int:
        """How far counter is behind max_counter (>0), 0 when equal, <0 when ahead."""
        if self.mode is CounterMode.ENCRYPTED_UNICAST:
            return max_counter - counter
        ahead = (counter - max_counter) & MAX_UINT32
        # With rollover, up to 2^31-1 ahead (mod 2^32) is "ahead"; the rest is behind.
        return -ahead if 0 < ahead < (1 << 31) else (max_counter - counter) & MAX_UINT32

    def is_duplicate(self, counter: int) -> bool:
        if self.max_counter is None:
            return False  # trust first
        behind = self._behind(counter, self.max_counter)
        if behind < 0:
            return False
        if behind == 0:
            return True
        if behind <= MSG_COUNTER_WINDOW_SIZE:
            return bool(self.window >> (behind - 1) & 1)
        return self.mode is not CounterMode.UNENCRYPTED

    def commit(self, counter: int) -> None:
        if self.max_counter is None:
            self.max_counter, self.window = counter, 0
            return
        behind = self._behind(counter, self.max_counter)
        if behind < 0:
            shift = -behind
            # the old max becomes bit shift-1; everything else slides up by shift
            window = (self.window << shift) | (1 << (shift - 1)) if shift <= MSG_COUNTER_WINDOW_SIZE else 0
            self.window = window & ((1 << MSG_COUNTER_WINDOW_SIZE) - 1)
            self.max_counter = counter
        elif 0 < behind <= MSG_COUNTER_WINDOW_SIZE:
            self.window |= 1 << (behind - 1)
        elif behind > MSG_COUNTER_WINDOW_SIZE and self.mode is CounterMode.UNENCRYPTED:
            self.max_counter, self.window = counter, 0  # the peer restarted its counter

    def check_and_commit(self, counter: int) -> bool:
        """True (and recorded) if new, False if a duplicate."""
        if self.is_duplicate(counter):
            return False
        self.commit(counter)
        return True
