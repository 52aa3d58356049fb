"""Cross-check our certificate conversion against the CHIP SDK's own (home-assistant-chip-core).

The SDK's pure conversion functions are called from a child process so its native library
stays out of the test process. The CHIP stack is never initialised, so nothing touches the
network.
"""

import importlib.util
import json
import random
import subprocess
import sys

from matter_protocol.certs import mint_icac, mint_noc, mint_root

CHILD = r"""
import ctypes, json, sys
import chip.native as cn
dll = cn._GetLibraryHandle(cn.Library.CONTROLLER, False).dll
P = ctypes.POINTER(ctypes.c_uint8)
setter = cn.NativeLibraryHandleMethodArguments(dll)
for name in ("pychip_ConvertX509CertToChipCert", "pychip_ConvertChipCertToX509Cert"):
    setter.Set(name, cn.PyChipError, [P, ctypes.c_size_t, P, ctypes.POINTER(ctypes.c_size_t)])
def convert(name, data):
    out, size = (ctypes.c_uint8 * 1024)(), ctypes.c_size_t(1024)
    err = getattr(dll, name)(ctypes.cast(data, P), len(data), ctypes.cast(out, P), ctypes.byref(size))
    return bytes(out)[:size.value].hex() if err.is_success else None
result = []
for item in json.load(sys.stdin):
    result.append({"der": convert("pychip_ConvertChipCertToX509Cert", bytes.fromhex(item["tlv"])),
                   "tlv": convert("pychip_ConvertX509CertToChipCert", bytes.fromhex(item["der"]))})
print(json.dumps(result))
"""


def chip_sdk_convert(certs):
    # chip-core is in the test extra (and installed by scripts/install-test-deps.sh): missing, this fails.
    assert importlib.util.find_spec("chip.native") is not None, "home-assistant-chip-core is not installed"
    payload = json.dumps([{"tlv": c.to_tlv().hex(), "der": c.to_der().hex()} for c in certs])
    proc = subprocess.run([sys.executable, "-c", CHILD], input=payload, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_chip_sdk_converts_our_minted_certificates_to_the_same_bytes():
    rng = random.Random(3)
    root, root_key = mint_root(0xCAFE, 0x1234, rng=rng, path_len=1)
    icac, icac_key = mint_icac(root, root_key, 0xBEEF, rng=rng)
    noc, _ = mint_noc(icac, icac_key, 0x1122334455, 0x1234, cats=[0x00010001, 0xABCD0002], rng=rng,
                      not_after=0x7FFF0000)
    direct, _ = mint_noc(root, root_key, 0xFFFFFFEFFFFFFFFF, 0x1234, rng=rng)
    certs = [root, icac, noc, direct]
    for cert, chip in zip(certs, chip_sdk_convert(certs)):
        assert chip["der"] == cert.to_der().hex(), "CHIP SDK TLV->X.509 differs from ours"
        assert chip["tlv"] == cert.to_tlv().hex(), "CHIP SDK X.509->TLV differs from ours"
