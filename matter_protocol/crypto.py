"""Matter crypto primitives under the names the Core spec gives them (section 3).

Thin wrappers over `cryptography`: SHA-256, HMAC, HKDF (Crypto_KDF), PBKDF2 (Crypto_PBKDF),
ECDSA P-256 with raw r||s signatures, ECDH, AES-CCM with a 16-byte MIC. Lengths that the
spec gives in bits are taken in bits (`length_bits`) so call sites read like the spec.

Randomness: every function that needs it takes `rng`, an object with `randbytes(n)`.
A real node passes nothing and gets `random.SystemRandom()` (os.urandom); tests pass a
seeded `random.Random` to get byte-identical handshakes.
"""
from __future__ import annotations

import hashlib
import hmac
import random

from cryptography.exceptions import InvalidSignature, InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature, encode_dss_signature
from cryptography.hazmat.primitives.ciphers.aead import AESCCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from cryptography.hazmat.primitives.kdf.pbkdf2 import PBKDF2HMAC
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

CRYPTO_HASH_LEN_BYTES = 32
CRYPTO_SYMMETRIC_KEY_LENGTH_BYTES = 16
CRYPTO_AEAD_MIC_LENGTH_BYTES = 16
CRYPTO_AEAD_NONCE_LENGTH_BYTES = 13
CRYPTO_PUBLIC_KEY_SIZE_BYTES = 65  # uncompressed SEC1 point
CRYPTO_SIGNATURE_SIZE_BYTES = 64  # r || s
CRYPTO_GROUP_SIZE_BYTES = 32
# Order n of the P-256 group.
P256_ORDER = 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551


class CryptoError(Exception):
    """A crypto check failed: bad MIC, bad signature, or a key that is not a P-256 point."""


def default_rng() -> random.Random:
    return random.SystemRandom()


def Crypto_Hash(message: bytes) -> bytes:
    return hashlib.sha256(message).digest()


def Crypto_HMAC(key: bytes, message: bytes) -> bytes:
    return hmac.new(key, message, hashlib.sha256).digest()


def Crypto_KDF(input_key: bytes, salt: bytes, info: bytes, length_bits: int) -> bytes:
    """HKDF-SHA256. An empty salt is the spec's "[]" (HMAC pads it to zeros)."""
    return HKDF(algorithm=hashes.SHA256(), length=length_bits // 8, salt=bytes(salt), info=bytes(info)).derive(
        bytes(input_key)
    )


def Crypto_PBKDF(input_key: bytes, salt: bytes, iterations: int, length_bits: int) -> bytes:
    """PBKDF2-HMAC-SHA256."""
    return PBKDF2HMAC(
        algorithm=hashes.SHA256(), length=length_bits // 8, salt=bytes(salt), iterations=iterations
    ).derive(bytes(input_key))


def constant_time_equal(a: bytes, b: bytes) -> bool:
    return hmac.compare_digest(bytes(a), bytes(b))


# --- P-256 keys -------------------------------------------------------------------------

def random_scalar(rng: random.Random) -> int:
    """A uniform scalar in [1, n-1]: 64 random bits more than n, reduced (negligible bias)."""
    return int.from_bytes(rng.randbytes(CRYPTO_GROUP_SIZE_BYTES + 8), "big") % (P256_ORDER - 1) + 1


def Crypto_GenerateKeypair(rng: random.Random | None = None) -> ec.EllipticCurvePrivateKey:
    return ec.derive_private_key(random_scalar(rng or default_rng()), ec.SECP256R1())


def public_key_bytes(key: ec.EllipticCurvePrivateKey | ec.EllipticCurvePublicKey) -> bytes:
    """The 65-byte uncompressed point, the form Matter puts on the wire."""
    if isinstance(key, ec.EllipticCurvePrivateKey):
        key = key.public_key()
    return key.public_bytes(Encoding.X962, PublicFormat.UncompressedPoint)


def load_public_key(data: bytes) -> ec.EllipticCurvePublicKey:
    """Parse an uncompressed P-256 point; CryptoError if it is not one (checks on-curve)."""
    if len(data) != CRYPTO_PUBLIC_KEY_SIZE_BYTES or data[0] != 0x04:
        raise CryptoError(f"public key must be a 65-byte uncompressed P-256 point, got {len(data)} bytes")
    try:
        return ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), bytes(data))
    except ValueError as e:
        raise CryptoError(f"public key is not a point on P-256: {e}") from None


def Crypto_Sign(private_key: ec.EllipticCurvePrivateKey, message: bytes) -> bytes:
    """ECDSA-SHA256, returned as the raw 64-byte r||s Matter uses (not DER).

    The nonce is derived per RFC 6979 (deterministic): as safe as a random nonce, and it
    keeps handshakes driven by a seeded rng byte-identical from run to run.
    """
    der = private_key.sign(bytes(message), ec.ECDSA(hashes.SHA256(), deterministic_signing=True))
    r, s = decode_dss_signature(der)
    return r.to_bytes(32, "big") + s.to_bytes(32, "big")


def Crypto_Verify(public_key: bytes | ec.EllipticCurvePublicKey, message: bytes, signature: bytes) -> bool:
    if isinstance(public_key, (bytes, bytearray)):
        try:
            public_key = load_public_key(public_key)
        except CryptoError:
            return False
    if len(signature) != CRYPTO_SIGNATURE_SIZE_BYTES:
        return False
    der = encode_dss_signature(int.from_bytes(signature[:32], "big"), int.from_bytes(signature[32:], "big"))
    try:
        public_key.verify(der, bytes(message), ec.ECDSA(hashes.SHA256()))
    except InvalidSignature:
        return False
    return True


def Crypto_ECDH(private_key: ec.EllipticCurvePrivateKey, peer_public_key: bytes) -> bytes:
    """The 32-byte x coordinate of the shared point."""
    return private_key.exchange(ec.ECDH(), load_public_key(peer_public_key))


# --- AES-CCM ------------------------------------------------------------------------------

def Crypto_AEAD_GenerateEncrypt(key: bytes, plaintext: bytes, aad: bytes, nonce: bytes) -> bytes:
    """AES-128-CCM with a 16-byte MIC; returns ciphertext || MIC."""
    return AESCCM(bytes(key), tag_length=CRYPTO_AEAD_MIC_LENGTH_BYTES).encrypt(
        bytes(nonce), bytes(plaintext), bytes(aad)
    )


def Crypto_AEAD_DecryptVerify(key: bytes, ciphertext_and_mic: bytes, aad: bytes, nonce: bytes) -> bytes:
    """Inverse of Crypto_AEAD_GenerateEncrypt; CryptoError when the MIC does not verify."""
    if len(ciphertext_and_mic) < CRYPTO_AEAD_MIC_LENGTH_BYTES:
        raise CryptoError(f"AEAD data is {len(ciphertext_and_mic)} bytes, shorter than the 16-byte MIC")
    try:
        return AESCCM(bytes(key), tag_length=CRYPTO_AEAD_MIC_LENGTH_BYTES).decrypt(
            bytes(nonce), bytes(ciphertext_and_mic), bytes(aad)
        )
    except InvalidTag:
        raise CryptoError("AEAD MIC check failed") from None
