"""Onboarding payloads (Matter Core spec 5.1): the `MT:` QR code and the manual pairing code.

Both directions: generate from a `SetupPayload` and parse back. Pure functions, no IO; the only
randomness (`passcode_and_discriminator`) comes from an injected `random.Random`.
"""
from __future__ import annotations

import enum
import random
from dataclasses import dataclass

__all__ = [
    "CommissioningFlow", "DiscoveryCapabilities", "PairingCodeError", "SetupPayload",
    "is_valid_passcode", "passcode_and_discriminator", "parse_qr_code", "parse_manual_code",
    "parse_pairing_code",
]

QR_PREFIX = "MT:"
MAX_PASSCODE = 99999998                  # spec: 0x0000001..0x5F5E0FE
MAX_DISCRIMINATOR = 0xFFF                # 12 bits
# Trivial passcodes the spec forbids: all-same digits and the two ascending/descending runs.
INVALID_PASSCODES = frozenset([int(str(d) * 8) for d in range(10)] + [12345678, 87654321])

# QR payload fields, least significant bits first (spec Table "Packed Binary Data Structure").
_QR_FIELDS = (("version", 3), ("vendor_id", 16), ("product_id", 16), ("flow", 2),
              ("discovery", 8), ("discriminator", 12), ("passcode", 27), ("padding", 4))
_QR_BYTES = sum(bits for _, bits in _QR_FIELDS) // 8    # 88 bits -> 11 bytes

_BASE38 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ-."
_BASE38_CHARS_FOR_BYTES = {1: 2, 2: 4, 3: 5}            # chunk of n bytes -> this many chars


class PairingCodeError(ValueError):
    """A QR code, manual code or payload field that the spec does not allow."""


class CommissioningFlow(enum.IntEnum):
    STANDARD = 0
    USER_INTENT = 1
    CUSTOM = 2


class DiscoveryCapabilities(enum.IntFlag):
    SOFT_AP = 0x01
    BLE = 0x02
    ON_NETWORK = 0x04
    WIFI_PAF = 0x08


def is_valid_passcode(passcode: int) -> bool:
    return 1 <= passcode <= MAX_PASSCODE and passcode not in INVALID_PASSCODES


def passcode_and_discriminator(rng: random.Random) -> tuple[int, int]:
    """Draw a spec-valid setup passcode and a 12-bit discriminator from `rng`."""
    while True:
        passcode = rng.randint(1, MAX_PASSCODE)
        if is_valid_passcode(passcode):
            return passcode, rng.randint(0, MAX_DISCRIMINATOR)


@dataclass(frozen=True)
class SetupPayload:
    passcode: int
    discriminator: int               # 12-bit long discriminator (short one: its upper 4 bits)
    vendor_id: int = 0
    product_id: int = 0
    flow: CommissioningFlow = CommissioningFlow.STANDARD
    discovery: DiscoveryCapabilities = DiscoveryCapabilities.ON_NETWORK
    # A manual code carries only the 4-bit short discriminator; then `discriminator` holds it
    # shifted into place (short << 8) and this is True.
    short_discriminator_only: bool = False
    optional_tlv: bytes = b""        # QR only: the TLV extension data after the 88 bits, kept raw

    def __post_init__(self) -> None:
        if not is_valid_passcode(self.passcode):
            raise PairingCodeError(
                f"passcode {self.passcode} is not allowed: it must be 1..{MAX_PASSCODE} and not "
                "one of 00000000, 11111111, ..., 99999999, 12345678, 87654321")
        if not 0 <= self.discriminator <= MAX_DISCRIMINATOR:
            raise PairingCodeError(f"discriminator {self.discriminator} is out of range 0..4095")
        for name in ("vendor_id", "product_id"):
            if not 0 <= getattr(self, name) <= 0xFFFF:
                raise PairingCodeError(f"{name} {getattr(self, name)} is out of range 0..65535")
        object.__setattr__(self, "flow", CommissioningFlow(self.flow))
        if not 0 <= int(self.discovery) <= 0xFF:
            raise PairingCodeError(f"discovery capabilities {self.discovery} must fit 8 bits")
        object.__setattr__(self, "discovery", DiscoveryCapabilities(int(self.discovery)))

    @property
    def short_discriminator(self) -> int:
        return self.discriminator >> 8

    def qr_code(self) -> str:
        if self.short_discriminator_only:
            raise PairingCodeError("a QR code needs the full 12-bit discriminator; this payload "
                                   "came from a manual code that carries only the upper 4 bits")
        values = {"version": 0, "padding": 0, "vendor_id": self.vendor_id,
                  "product_id": self.product_id, "flow": int(self.flow),
                  "discovery": int(self.discovery), "discriminator": self.discriminator,
                  "passcode": self.passcode}
        packed, shift = 0, 0
        for name, bits in _QR_FIELDS:
            packed |= values[name] << shift
            shift += bits
        return QR_PREFIX + _base38_encode(packed.to_bytes(_QR_BYTES, "little") + self.optional_tlv)

    def manual_code(self) -> str:
        """The 11-digit code, or the 21-digit one (with VID and PID) for non-standard flows."""
        long_code = self.flow != CommissioningFlow.STANDARD
        short = self.short_discriminator
        digits = (f"{(int(long_code) << 2) | (short >> 2):01d}"
                  f"{((short & 0x3) << 14) | (self.passcode & 0x3FFF):05d}"
                  f"{self.passcode >> 14:04d}")
        if long_code:
            digits += f"{self.vendor_id:05d}{self.product_id:05d}"
        return digits + str(_verhoeff_check_digit(digits))


# --- QR ----------------------------------------------------------------------------------------

def parse_qr_code(text: str) -> SetupPayload:
    text = text.strip()
    if not text.upper().startswith(QR_PREFIX):
        raise PairingCodeError(f"QR payload {text!r} must start with {QR_PREFIX!r}")
    body = text[len(QR_PREFIX):]
    if "*" in body:
        raise PairingCodeError("QR payloads joined with '*' (several devices) are not supported; "
                               "pass one payload at a time")
    data = _base38_decode(body)
    if len(data) < _QR_BYTES:
        raise PairingCodeError(f"QR payload {text!r} holds {len(data)} bytes; at least "
                               f"{_QR_BYTES} are needed")
    packed = int.from_bytes(data[:_QR_BYTES], "little")
    fields: dict[str, int] = {}
    for name, bits in _QR_FIELDS:
        fields[name] = packed & ((1 << bits) - 1)
        packed >>= bits
    if fields.pop("version") != 0:
        raise PairingCodeError("QR payload version is not 0; only version 0 is defined")
    if fields.pop("padding") != 0:
        raise PairingCodeError("QR payload padding bits are not 0")
    if fields["flow"] == 3:
        raise PairingCodeError("QR payload commissioning flow 3 is reserved; 0, 1 or 2 accepted")
    return SetupPayload(
        passcode=fields["passcode"], discriminator=fields["discriminator"], vendor_id=fields["vendor_id"],
        product_id=fields["product_id"], flow=CommissioningFlow(fields["flow"]),
        discovery=DiscoveryCapabilities(fields["discovery"]), optional_tlv=data[_QR_BYTES:])


def _base38_encode(data: bytes) -> str:
    out = []
    for i in range(0, len(data), 3):
        chunk = data[i:i + 3]
        value = int.from_bytes(chunk, "little")
        for _ in range(_BASE38_CHARS_FOR_BYTES[len(chunk)]):
            value, digit = divmod(value, 38)
            out.append(_BASE38[digit])
    return "".join(out)


def _base38_decode(text: str) -> bytes:
    out = bytearray()
    chars_to_bytes = {v: k for k, v in _BASE38_CHARS_FOR_BYTES.items()}
    for i in range(0, len(text), 5):
        chunk = text[i:i + 5]
        if len(chunk) not in chars_to_bytes:
            raise PairingCodeError(f"QR payload length {len(text)} is not a valid base38 length")
        value = 0
        for ch in reversed(chunk):
            index = _BASE38.find(ch)
            if index < 0:
                raise PairingCodeError(f"QR payload has {ch!r}; base38 accepts 0-9, A-Z, '-', '.'")
            value = value * 38 + index
        nbytes = chars_to_bytes[len(chunk)]
        if value >= 1 << (8 * nbytes):
            raise PairingCodeError(f"QR payload chunk {chunk!r} overflows {nbytes} bytes")
        out += value.to_bytes(nbytes, "little")
    return bytes(out)


# --- manual code -------------------------------------------------------------------------------

def parse_manual_code(text: str) -> SetupPayload:
    digits = text.strip().replace("-", "").replace(" ", "")
    if not digits.isdigit() or len(digits) not in (11, 21):
        raise PairingCodeError(f"manual code {text!r} must be 11 or 21 digits (dashes and "
                               "spaces allowed)")
    if not _verhoeff_valid(digits):
        raise PairingCodeError(f"manual code {text!r} fails its check digit (Verhoeff)")
    first = int(digits[0])
    if first > 7:
        raise PairingCodeError(f"manual code {text!r} starts with {first}; 8 and 9 are reserved")
    long_code = bool(first & 0x4)
    if long_code != (len(digits) == 21):
        raise PairingCodeError(f"manual code {text!r}: its first digit says "
                               f"{'21' if long_code else '11'} digits but it has {len(digits)}")
    chunk2, chunk3 = int(digits[1:6]), int(digits[6:10])
    if chunk2 > 0xFFFF:
        raise PairingCodeError(f"manual code {text!r}: digits 2-6 exceed 65535")
    short = ((first & 0x3) << 2) | (chunk2 >> 14)
    passcode = (chunk3 << 14) | (chunk2 & 0x3FFF)
    vendor_id = int(digits[10:15]) if long_code else 0
    product_id = int(digits[15:20]) if long_code else 0
    return SetupPayload(
        passcode=passcode, discriminator=short << 8, vendor_id=vendor_id, product_id=product_id,
        # The manual code only says "not standard"; custom is the conservative reading.
        flow=CommissioningFlow.CUSTOM if long_code else CommissioningFlow.STANDARD,
        short_discriminator_only=True)


def parse_pairing_code(text: str) -> SetupPayload:
    """Either form: `MT:...` is a QR payload, anything else a manual code."""
    if text.strip().upper().startswith(QR_PREFIX):
        return parse_qr_code(text)
    return parse_manual_code(text)


# Verhoeff check digit, built from its definition instead of retyped tables: multiplication in
# the dihedral group D5 (0-4 rotations, 5-9 reflections), and the permutation (1 5 7 6 2 8 3 0 9 4)
# applied once per position.
def _d5(j: int, k: int) -> int:
    if j < 5:
        return (j + k) % 5 + (5 if k >= 5 else 0)
    return (j - k) % 5 + (0 if k >= 5 else 5)


_D = [[_d5(j, k) for k in range(10)] for j in range(10)]
_P = [list(range(10)), [1, 5, 7, 6, 2, 8, 3, 0, 9, 4]]
for _ in range(6):
    _P.append([_P[1][x] for x in _P[-1]])
_INV = [next(k for k in range(10) if _D[j][k] == 0) for j in range(10)]


def _verhoeff_check_digit(digits: str) -> int:
    c = 0
    for i, ch in enumerate(reversed(digits)):
        c = _D[c][_P[(i + 1) % 8][int(ch)]]
    return _INV[c]


def _verhoeff_valid(digits: str) -> bool:
    c = 0
    for i, ch in enumerate(reversed(digits)):
        c = _D[c][_P[i % 8][int(ch)]]
    return c == 0
