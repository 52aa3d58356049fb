"""SPAKE2+ and the crypto primitives against published vectors.

Vectors: the SPAKE2+ draft-01 P-256 vectors (as carried by the CHIP SDK's
SPAKE2P_RFC_test_vectors.h) and the CHIP SDK's PASE test verifier for passcode 20202021.
"""
import pytest

from matter_protocol import crypto, spake2p
from matter_protocol.spake2p import Spake2pError, Spake2pProver, Spake2pVerifier, make_verifier

h = bytes.fromhex
CONTEXT = b"SPAKE2+-P256-SHA256-HKDF draft-01"
W0 = int("e6887cf9bdfb7579c69bf47928a84514b5e355ac034863f7ffaf4390e67d798c", 16)
W1 = int("24b5ae4abda868ec9336ffc3b78ee31c5755bef1759227ef5372ca139b94e512", 16)
L = h("0495645cfb74df6e58f9748bb83a86620bab7c82e107f57d6870da8cbcb2ff9f70"
      "63a14b6402c62f99afcb9706a4d1a143273259fe76f1c605a3639745a92154b9")

VECTORS = [
    dict(idp=b"client", idv=b"server",
         x="8b0f3f383905cf3a3bb955ef8fb62e24849dd349a05ca79aafb18041d30cbdb6",
         X="04af09987a593d3bac8694b123839422c3cc87e37d6b41c1d630f000dd64980e53"
           "7ae704bcede04ea3bec9b7475b32fa2ca3b684be14d11645e38ea6609eb39e7e",
         y="2e0895b0e763d6d5a9564433e64ac3cac74ff897f6c3445247ba1bab40082a91",
         Y="04417592620aebf9fd203616bbb9f121b730c258b286f890c5f19fea833a9c900c"
           "be9057bc549a3e19975be9927f0e7614f08d1f0a108eede5fd7eb5624584a4f4",
         Ka="f9cab9adcc0ed8e5a4db11a8505914b2", Ke="801db297654816eb4f02868129b9dc89",
         KcA="0d248d7d19234f1486b2efba5179c52d", KcB="556291df26d705a2caedd6474dd0079b",
         cA="d4376f2da9c72226dd151b77c2919071155fc22a2068d90b5faa6c78c11e77dd",
         cB="0660a680663e8c5695956fb22dff298b1d07a526cf3cc591adfecd1f6ef6e02e"),
    dict(idp=b"client", idv=b"",
         x="ec82d9258337f61239c9cd68e8e532a3a6b83d12d2b1ca5d543f44def17dfb8d",
         X="04230779960824076d3666a7418e4d433e2fa15b06176eabdd572f43a32ecc79a1"
           "92b243d2624310a7356273b86e5fd9bd627d3ade762baeff1a320d4ad7a4e47f",
         y="eac3f7de4b198d5fe25c443c0cd4963807add767815dd02a6f0133b4bc2c9eb0",
         Y="044558642e71b616b248c9583bd6d7aa1b3952c6df6a9f7492a06035ca5d92522d"
           "84443de7aa20a59380fa4de6b7438d925dbfb7f1cfe60d79acf961ee33988c7d",
         Ka="e2cbee3ae19a4dbe9f146be6bee9bfa1", Ke="6989d8f9177ef7df67da437987f07255",
         KcA="2f9e0bb669d2c22645bce34da04ac16a", KcB="eb7a35168759dd8e9ce44e4dc51277ce",
         cA="e1b9258807ba4750dae1d7f3c3c294f13dc4fa60cde346d5de7d200e2f8fd3fc",
         cB="b9c39dfa49c47757de778d9bedeaca2448b905be19a43b94ee24b770208135e3"),
    dict(idp=b"", idv=b"",
         x="5b478619804f4938d361fbba3a20648725222f0a54cc4c876139efe7d9a21786",
         X="04a6db23d001723fb01fcfc9d08746c3c2a0a3feff8635d29cad2853e7358623425c"
           "f39712e928054561ba71e2dc11f300f1760e71eb177021a8f85e78689071cd",
         y="766770dad8c8eecba936823c0aed044b8c3c4f7655e8beec44a15dcbcaf78e5e",
         Y="04390d29bf185c3abf99f150ae7c13388c82b6be0c07b1b8d90d26853e84374bbd"
           "c82becdb978ca3792f472424106a2578012752c11938fcf60a41df75ff7cf947",
         Ka="5929a3ce9822c81401bf0f764f69af08", Ke="ea3276d68334576097e04b19ee5a3a8b",
         KcA="7f84b939d600117256b0c8a6d40cf181", KcB="f7d7547ced93f681e8df4c258c4516fd",
         cA="71d9412779b6c45a2c615c9df3f1fd93dc0aaf63104da8ece4aa1b5a3a415fea",
         cB="095dc0400355cc233fde7437811815b3c1524aae80fd4e6810cf531cf11d20e3"),
]


@pytest.mark.parametrize("tv", VECTORS, ids=["client-server", "client-empty", "empty-empty"])
def test_spake2p_rfc_vectors(tv):
    prover = Spake2pProver(CONTEXT, W0, W1, id_prover=tv["idp"], id_verifier=tv["idv"], x=int(tv["x"], 16))
    verifier = Spake2pVerifier(CONTEXT, W0, spake2p.decode_point(L), id_prover=tv["idp"], id_verifier=tv["idv"],
                               y=int(tv["y"], 16))
    assert prover.X.hex() == tv["X"]
    Y, cB = verifier.respond(prover.X)
    assert Y.hex() == tv["Y"]
    assert cB.hex() == tv["cB"]
    cA = prover.finish(Y)
    assert cA.hex() == tv["cA"]
    for side in (prover.keys, verifier.keys):
        got = (side.Ka.hex(), side.Ke.hex(), side.KcA.hex(), side.KcB.hex())
        assert got == (tv["Ka"], tv["Ke"], tv["KcA"], tv["KcB"])
    prover.confirm(cB)
    verifier.confirm(cA)
    with pytest.raises(Spake2pError):
        verifier.confirm(bytes(32))
    with pytest.raises(Spake2pError):
        prover.confirm(cA)  # the other side's confirmation is not ours


def test_verifier_matches_chip_sdk_pase_test_set():
    expected = h(
        "B96170AAE803346884724FE9A3B287C30330C2A660375D17BB205A8CF1AECB35"
        "0457F8AB79EE253AB6A8E46BB09E543AE422736DE501E3DB37D441FE344920D0"
        "9548E4C18240630C4FF4913C53513839B7C07FCC0627A1B8573A149FCD1FA466CF")
    assert make_verifier(20202021, b"SPAKE2P Key Salt", 1000) == expected
    assert make_verifier(20202022, b"SPAKE2P Key Salt", 1000) != expected


def test_verifier_rejects_bad_parameters():
    with pytest.raises(Spake2pError, match="salt"):
        make_verifier(20202021, b"short", 1000)
    with pytest.raises(Spake2pError, match="iterations"):
        make_verifier(20202021, b"SPAKE2P Key Salt", 999)
    with pytest.raises(Spake2pError, match="97"):
        spake2p.parse_verifier(b"\x00" * 96)


def test_points_off_curve_and_identity_are_rejected():
    verifier = Spake2pVerifier(CONTEXT, W0, spake2p.decode_point(L), y=5)
    with pytest.raises(Spake2pError, match="curve"):
        verifier.respond(b"\x04" + b"\x01" * 64)
    with pytest.raises(Spake2pError):
        verifier.respond(b"\x04" + b"\x01" * 10)
    # X = w0*M makes X - w0*M the identity: a prover sending it must not get keys.
    w0_m = (spake2p._M * W0).to_bytes("uncompressed")
    with pytest.raises(Spake2pError, match="identity"):
        verifier.respond(w0_m)


def test_crypto_kdf_rfc5869_case1():
    okm = crypto.Crypto_KDF(h("0b" * 22), h("000102030405060708090a0b0c"), h("f0f1f2f3f4f5f6f7f8f9"), 42 * 8)
    assert okm.hex() == ("3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf"
                         "34007208d5b887185865")


def test_sign_verify_raw_signature_and_ecdh():
    import random
    rng = random.Random(7)
    a, b = crypto.Crypto_GenerateKeypair(rng), crypto.Crypto_GenerateKeypair(rng)
    sig = crypto.Crypto_Sign(a, b"message")
    assert len(sig) == 64
    assert crypto.Crypto_Verify(crypto.public_key_bytes(a), b"message", sig)
    assert not crypto.Crypto_Verify(crypto.public_key_bytes(a), b"messagf", sig)
    assert not crypto.Crypto_Verify(crypto.public_key_bytes(b), b"message", sig)
    assert crypto.Crypto_ECDH(a, crypto.public_key_bytes(b)) == crypto.Crypto_ECDH(b, crypto.public_key_bytes(a))
    # Seeded rng gives the same key: handshakes replay byte for byte in tests.
    assert crypto.public_key_bytes(crypto.Crypto_GenerateKeypair(random.Random(1))) == \
        crypto.public_key_bytes(crypto.Crypto_GenerateKeypair(random.Random(1)))


def test_aead_roundtrip_and_tamper():
    key, nonce = bytes(range(16)), b"NCASE_Sigma2N"
    ct = crypto.Crypto_AEAD_GenerateEncrypt(key, b"hello", b"aad", nonce)
    assert len(ct) == 5 + 16
    assert crypto.Crypto_AEAD_DecryptVerify(key, ct, b"aad", nonce) == b"hello"
    with pytest.raises(crypto.CryptoError):
        crypto.Crypto_AEAD_DecryptVerify(key, ct[:-1] + bytes([ct[-1] ^ 1]), b"aad", nonce)
    with pytest.raises(crypto.CryptoError):
        crypto.Crypto_AEAD_DecryptVerify(key, ct, b"aae", nonce)
