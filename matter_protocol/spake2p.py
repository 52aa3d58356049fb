"""SPAKE2+ over P-256 with SHA-256, HKDF and HMAC, as Matter uses it (Core spec 3.10).

The node (verifier) never keeps the passcode: it stores w0 || L (97 bytes), made once by
`make_verifier`. The commissioner (prover) derives w0 and w1 from the passcode.

    prover:   X = x*P + w0*M               Z = x*(Y - w0*N)     V = w1*(Y - w0*N)
    verifier: Y = y*P + w0*N               Z = y*(X - w0*M)     V = y*L
    TT = each of Context, idProver, idVerifier, M, N, X, Y, Z, V, w0 prefixed by its
         length as 8 bytes little endian
    Ka || Ke = Hash(TT);  KcA || KcB = Crypto_KDF(Ka, [], "ConfirmationKeys", 256)
    cA = HMAC(KcA, Y) (prover -> verifier),  cB = HMAC(KcB, X) (verifier -> prover)

Point arithmetic uses `ecdsa` (pure Python); hashing and KDFs come from `crypto`.
"""
from __future__ import annotations

import random
import struct

import ecdsa
from ecdsa.ellipticcurve import INFINITY, PointJacobi

from matter_protocol.crypto import (
    CRYPTO_GROUP_SIZE_BYTES,
    CRYPTO_PUBLIC_KEY_SIZE_BYTES,
    Crypto_Hash,
    Crypto_HMAC,
    Crypto_KDF,
    Crypto_PBKDF,
    constant_time_equal,
    default_rng,
    random_scalar,
)

_CURVE = ecdsa.NIST256p
_G = _CURVE.generator
ORDER = _CURVE.order

# The spec's M and N, as compressed points.
M_BYTES = bytes.fromhex("02886e2f97ace46e55ba9dd7242579f2993b64e16ef3dcab95afd497333d8fa12f")
N_BYTES = bytes.fromhex("03d8bbd6c639c62937b04d997f38c3770719c629d7014d49a24b4f98baa1292b49")
_M = PointJacobi.from_bytes(_CURVE.curve, M_BYTES)
_N = PointJacobi.from_bytes(_CURVE.curve, N_BYTES)

CRYPTO_W_SIZE_BYTES = CRYPTO_GROUP_SIZE_BYTES + 8  # 40: w0s and w1s are reduced mod n
VERIFIER_SIZE_BYTES = CRYPTO_GROUP_SIZE_BYTES + CRYPTO_PUBLIC_KEY_SIZE_BYTES  # 97
PBKDF_MIN_ITERATIONS = 1000
PBKDF_MAX_ITERATIONS = 100000
PBKDF_MIN_SALT_LEN = 16
PBKDF_MAX_SALT_LEN = 32
# Passcodes the spec forbids (5.1.7.1): trivially guessable ones.
INVALID_PASSCODES = frozenset(
    {0, 11111111, 22222222, 33333333, 44444444, 55555555, 66666666, 77777777, 88888888, 99999999, 12345678, 87654321}
)


class Spake2pError(Exception):
    """Bad input to SPAKE2+: a point not on the curve, bad parameters, or failed key confirmation."""


def _encode(point: PointJacobi) -> bytes:
    encoded: bytes = point.to_bytes("uncompressed")  # ecdsa is untyped; to_bytes returns bytes
    return encoded


def decode_point(data: bytes) -> PointJacobi:
    """An uncompressed P-256 point that is on the curve and not the identity."""
    if len(data) != CRYPTO_PUBLIC_KEY_SIZE_BYTES or data[0] != 0x04:
        raise Spake2pError(f"expected a 65-byte uncompressed P-256 point, got {len(data)} bytes")
    try:
        point = PointJacobi.from_bytes(_CURVE.curve, bytes(data))
    except Exception as e:  # ecdsa raises several types for malformed encodings
        raise Spake2pError(f"malformed P-256 point: {e}") from None
    if point == INFINITY or not _CURVE.curve.contains_point(point.x(), point.y()):
        raise Spake2pError("point is not on the P-256 curve")
    return point


def check_pbkdf_parameters(salt: bytes, iterations: int) -> None:
    if not PBKDF_MIN_SALT_LEN <= len(salt) <= PBKDF_MAX_SALT_LEN:
        raise Spake2pError(f"PBKDF salt is {len(salt)} bytes; accepted: 16 to 32")
    if not PBKDF_MIN_ITERATIONS <= iterations <= PBKDF_MAX_ITERATIONS:
        raise Spake2pError(f"PBKDF iterations {iterations}; accepted: 1000 to 100000")


def compute_w0_w1(passcode: int, salt: bytes, iterations: int) -> tuple[int, int]:
    """w0s || w1s = Crypto_PBKDF(passcode as uint32 little endian, salt, iterations, 2*320 bits)."""
    if not 0 <= passcode < 2**27:
        raise Spake2pError(f"passcode {passcode} does not fit the 27-bit field; accepted: 1 to 99999998")
    check_pbkdf_parameters(salt, iterations)
    ws = Crypto_PBKDF(struct.pack("<I", passcode), salt, iterations, 2 * CRYPTO_W_SIZE_BYTES * 8)
    w0s, w1s = ws[:CRYPTO_W_SIZE_BYTES], ws[CRYPTO_W_SIZE_BYTES:]
    return int.from_bytes(w0s, "big") % ORDER, int.from_bytes(w1s, "big") % ORDER


def make_verifier(passcode: int, salt: bytes, iterations: int) -> bytes:
    """The 97-byte w0 || L a node stores in place of its passcode."""
    w0, w1 = compute_w0_w1(passcode, salt, iterations)
    return w0.to_bytes(CRYPTO_GROUP_SIZE_BYTES, "big") + _encode(_G * w1)


def parse_verifier(verifier: bytes) -> tuple[int, PointJacobi]:
    if len(verifier) != VERIFIER_SIZE_BYTES:
        raise Spake2pError(f"verifier is {len(verifier)} bytes; accepted: 97 (w0 || L)")
    w0 = int.from_bytes(verifier[:CRYPTO_GROUP_SIZE_BYTES], "big")
    if not 0 <= w0 < ORDER:
        raise Spake2pError("verifier w0 is not reduced modulo the group order")
    return w0, decode_point(verifier[CRYPTO_GROUP_SIZE_BYTES:])


def _len_prefixed(*items: bytes) -> bytes:
    return b"".join(struct.pack("<Q", len(item)) + item for item in items)


class _Transcript:
    """Derives Ka, Ke, KcA, KcB from the points both sides agree on."""

    def __init__(self, context: bytes, id_prover: bytes, id_verifier: bytes, X: bytes, Y: bytes,
                 Z: PointJacobi, V: PointJacobi, w0: int) -> None:
        tt = _len_prefixed(
            context, id_prover, id_verifier, _encode(_M), _encode(_N), X, Y, _encode(Z), _encode(V),
            w0.to_bytes(CRYPTO_GROUP_SIZE_BYTES, "big"),
        )
        k = Crypto_Hash(tt)
        self.Ka, self.Ke = k[:16], k[16:]
        kc = Crypto_KDF(self.Ka, b"", b"ConfirmationKeys", 256)
        self.KcA, self.KcB = kc[:16], kc[16:]
        self.cA = Crypto_HMAC(self.KcA, Y)  # sent by the prover
        self.cB = Crypto_HMAC(self.KcB, X)  # sent by the verifier


class Spake2pProver:
    """The commissioner's side. `X` is its share; `finish(Y)` derives keys and cA."""

    def __init__(self, context: bytes, w0: int, w1: int, *, id_prover: bytes = b"", id_verifier: bytes = b"",
                 x: int | None = None, rng: random.Random | None = None):
        self._context, self._idp, self._idv = context, id_prover, id_verifier
        self._w0, self._w1 = w0, w1
        self._x = x if x is not None else random_scalar(rng or default_rng())
        self.X = _encode(_G * self._x + _M * w0)
        self.keys: _Transcript | None = None

    def finish(self, Y: bytes) -> bytes:
        """Process the verifier's share; returns cA for the verifier."""
        base = decode_point(Y) + (-_N) * self._w0
        if base == INFINITY:
            raise Spake2pError("peer share Y - w0*N is the identity")
        Z, V = base * self._x, base * self._w1
        self.keys = _Transcript(self._context, self._idp, self._idv, self.X, bytes(Y), Z, V, self._w0)
        return self.keys.cA

    def confirm(self, cB: bytes) -> None:
        if self.keys is None or not constant_time_equal(cB, self.keys.cB):
            raise Spake2pError("key confirmation cB does not match: wrong passcode or tampered exchange")

    @property
    def Ke(self) -> bytes:
        assert self.keys is not None
        return self.keys.Ke


class Spake2pVerifier:
    """The node's side. `respond(X)` returns (Y, cB); `confirm(cA)` checks the prover."""

    def __init__(self, context: bytes, w0: int, L: PointJacobi, *, id_prover: bytes = b"", id_verifier: bytes = b"",
                 y: int | None = None, rng: random.Random | None = None):
        self._context, self._idp, self._idv = context, id_prover, id_verifier
        self._w0, self._L = w0, L
        self._y = y if y is not None else random_scalar(rng or default_rng())
        self.Y = _encode(_G * self._y + _N * w0)
        self.keys: _Transcript | None = None

    def respond(self, X: bytes) -> tuple[bytes, bytes]:
        base = decode_point(X) + (-_M) * self._w0
        if base == INFINITY:
            raise Spake2pError("peer share X - w0*M is the identity")
        Z, V = base * self._y, self._L * self._y
        self.keys = _Transcript(self._context, self._idp, self._idv, bytes(X), self.Y, Z, V, self._w0)
        return self.Y, self.keys.cB

    def confirm(self, cA: bytes) -> None:
        if self.keys is None or not constant_time_equal(cA, self.keys.cA):
            raise Spake2pError("key confirmation cA does not match: wrong passcode or tampered exchange")

    @property
    def Ke(self) -> bytes:
        assert self.keys is not None
        return self.keys.Ke
