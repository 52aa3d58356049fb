"""StatusReport message (Core spec Appendix D), sent as Secure Channel opcode 0x40.

Wire format, little-endian: GeneralCode u16 | ProtocolId u32 (vendor id << 16 | protocol id) |
ProtocolCode u16 | ProtocolData (the rest, optional).
"""
from __future__ import annotations

import enum
import struct
from dataclasses import dataclass

from matter_protocol.message import MessageFormatError, ProtocolId

_FIXED = struct.Struct("<HIH")


class GeneralCode(enum.IntEnum):
    """Common status codes (spec Appendix D)."""
    SUCCESS = 0
    FAILURE = 1
    BAD_PRECONDITION = 2
    OUT_OF_RANGE = 3
    BAD_REQUEST = 4
    UNSUPPORTED = 5
    UNEXPECTED = 6
    RESOURCE_EXHAUSTED = 7
    BUSY = 8
    TIMEOUT = 9
    CONTINUE = 10
    ABORTED = 11
    INVALID_ARGUMENT = 12
    NOT_FOUND = 13
    ALREADY_EXISTS = 14
    PERMISSION_DENIED = 15
    DATA_LOSS = 16
    MESSAGE_TOO_LARGE = 17


class SecureChannelStatus(enum.IntEnum):
    """Secure Channel protocol codes (spec, Secure Channel protocol)."""
    SESSION_ESTABLISHMENT_SUCCESS = 0x0000
    NO_SHARED_TRUST_ROOTS = 0x0001
    INVALID_PARAMETER = 0x0002
    CLOSE_SESSION = 0x0003
    BUSY = 0x0004


@dataclass(frozen=True)
class StatusReport:
    general_code: int
    protocol_id: int
    protocol_code: int
    protocol_data: bytes = b""
    vendor_id: int = 0

    def encode(self) -> bytes:
        for value, bits, what in ((self.general_code, 16, "general code"), (self.protocol_id, 16, "protocol id"),
                                  (self.vendor_id, 16, "vendor id"), (self.protocol_code, 16, "protocol code")):
            if not isinstance(value, int) or not 0 <= value < (1 << bits):
                raise MessageFormatError(f"StatusReport {what} is {value!r}; accepted: 0 to {(1 << bits) - 1}")
        return _FIXED.pack(self.general_code, self.vendor_id << 16 | self.protocol_id,
                           self.protocol_code) + bytes(self.protocol_data)

    @classmethod
    def decode(cls, data: bytes) -> StatusReport:
        if len(data) < _FIXED.size:
            raise MessageFormatError(f"StatusReport is {len(data)} bytes; accepted: at least {_FIXED.size}")
        general, protocol, code = _FIXED.unpack_from(data, 0)
        return cls(general_code=general, protocol_id=protocol & 0xFFFF, protocol_code=code,
                   protocol_data=bytes(data[_FIXED.size:]), vendor_id=protocol >> 16)

    @property
    def is_close_session(self) -> bool:
        return (self.protocol_id == ProtocolId.SECURE_CHANNEL and self.vendor_id == 0
                and self.general_code == GeneralCode.SUCCESS
                and self.protocol_code == SecureChannelStatus.CLOSE_SESSION)

    @classmethod
    def secure_channel(cls, general: GeneralCode, code: SecureChannelStatus) -> StatusReport:
        return cls(general_code=general, protocol_id=ProtocolId.SECURE_CHANNEL, protocol_code=code)

    def __str__(self) -> str:
        try:
            general = GeneralCode(self.general_code).name
        except ValueError:
            general = str(self.general_code)
        return (f"StatusReport({general}, protocol 0x{self.vendor_id:04x}:{self.protocol_id:04x}, "
                f"code 0x{self.protocol_code:04x})")
