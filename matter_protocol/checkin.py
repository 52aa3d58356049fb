"""Check-In message payload (Core spec 4.20, the Check-In Protocol of intermittently connected devices).

An ICD tells a registered client it is reachable with an unsecured, unacknowledged Secure Channel
message (opcode ICD_CheckIn) whose payload only that client can open: the 16-byte key it gave in
IcdManagement.RegisterClient both derives the nonce (HMAC-SHA256 of the counter, first 13 bytes)
and encrypts (AES-128-CCM, 16-byte MIC, no associated data) the ICD counter (u32 little endian)
followed by the application data (the ActiveModeThreshold in ms, u16 little endian):

    payload = nonce (13) || ciphertext (4 + len(app data)) || MIC (16)
"""
from __future__ import annotations

import struct

from matter_protocol.crypto import (
    CRYPTO_AEAD_MIC_LENGTH_BYTES,
    Crypto_AEAD_DecryptVerify,
    Crypto_AEAD_GenerateEncrypt,
    Crypto_HMAC,
    CryptoError,
)

NONCE_LENGTH = 13
KEY_LENGTH = 16
MIN_PAYLOAD = NONCE_LENGTH + 4 + CRYPTO_AEAD_MIC_LENGTH_BYTES
MAX_APP_DATA = 1024 - MIN_PAYLOAD   # the spec caps the whole payload well below a datagram


def _check_key(key: bytes) -> None:
    if len(key) != KEY_LENGTH:
        raise ValueError(f"Check-In key is {len(key)} bytes; accepted: {KEY_LENGTH}")


def seal_check_in(key: bytes, counter: int, app_data: bytes = b"") -> bytes:
    """The payload of a Check-In message carrying `counter` and `app_data`, sealed with `key`."""
    _check_key(key)
    if not 0 <= counter <= 0xFFFFFFFF:
        raise ValueError(f"Check-In counter {counter} is out of range 0..0xFFFFFFFF")
    if len(app_data) > MAX_APP_DATA:
        raise ValueError(f"Check-In application data is {len(app_data)} bytes; accepted: at most {MAX_APP_DATA}")
    counter_bytes = struct.pack("<I", counter)
    nonce = Crypto_HMAC(key, counter_bytes)[:NONCE_LENGTH]
    return nonce + Crypto_AEAD_GenerateEncrypt(key, counter_bytes + app_data, b"", nonce)


def open_check_in(key: bytes, payload: bytes) -> tuple[int, bytes]:
    """(counter, application data) of a Check-In payload; CryptoError if `key` did not seal it."""
    _check_key(key)
    if len(payload) < MIN_PAYLOAD:
        raise CryptoError(f"Check-In payload is {len(payload)} bytes; accepted: at least {MIN_PAYLOAD}")
    nonce = payload[:NONCE_LENGTH]
    plain = Crypto_AEAD_DecryptVerify(key, payload[NONCE_LENGTH:], b"", nonce)
    counter = struct.unpack_from("<I", plain)[0]
    if Crypto_HMAC(key, plain[:4])[:NONCE_LENGTH] != nonce:
        raise CryptoError("Check-In nonce does not derive from its counter")
    return counter, plain[4:]
