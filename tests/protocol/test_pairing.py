"""Onboarding payloads: published CHIP SDK vectors, round trips, spec rejections, and a
cross-check of many generated codes against chip-core's own parser (the CHIP SDK, C++)."""
from __future__ import annotations

import importlib.util
import os
import random

import pytest

from matter_protocol.pairing import (
    CommissioningFlow,
    DiscoveryCapabilities,
    PairingCodeError,
    SetupPayload,
    is_valid_passcode,
    parse_manual_code,
    parse_pairing_code,
    parse_qr_code,
    passcode_and_discriminator,
)

# The CHIP SDK's development defaults: passcode 20202021, discriminator 3840, VID 0xFFF1.
# "MT:-24J0AFN00KA0648G00" is the on-network payload its lighting app (PID 0x8001) prints and
# its Python tests commission with; "MT:Y.K9042C00KA0648G00" the BLE one of all-clusters (0x8000).
VECTORS = [
    (dict(vendor_id=0xFFF1, product_id=0x8001, discovery=DiscoveryCapabilities.ON_NETWORK),
     "MT:-24J0AFN00KA0648G00"),
    (dict(vendor_id=0xFFF1, product_id=0x8000, discovery=DiscoveryCapabilities.BLE),
     "MT:Y.K9042C00KA0648G00"),
]


@pytest.mark.parametrize("fields, qr", VECTORS)
def test_qr_matches_chip_sdk_vectors(fields, qr):
    payload = SetupPayload(passcode=20202021, discriminator=3840, **fields)
    assert payload.qr_code() == qr
    assert parse_qr_code(qr) == payload


def test_manual_code_matches_chip_sdk_vector():
    payload = SetupPayload(passcode=20202021, discriminator=3840, vendor_id=0xFFF1,
                           product_id=0x8000)
    assert payload.manual_code() == "34970112332"
    parsed = parse_manual_code("3497-011-2332")
    assert (parsed.passcode, parsed.short_discriminator, parsed.discriminator) == \
        (20202021, 15, 15 << 8)
    assert parsed.short_discriminator_only and parsed.flow == CommissioningFlow.STANDARD
    assert parse_pairing_code(" 34970112332 ") == parsed
    assert parse_pairing_code("MT:-24J0AFN00KA0648G00").product_id == 0x8001


def test_long_manual_code_carries_vendor_and_product():
    payload = SetupPayload(passcode=20202021, discriminator=3840, vendor_id=0xFFF1,
                           product_id=0x8000, flow=CommissioningFlow.CUSTOM)
    code = payload.manual_code()
    assert len(code) == 21 and code.startswith("7")        # bit 2 of digit 1: VID/PID present
    assert code[10:20] == "6552132768"
    parsed = parse_manual_code(code)
    assert (parsed.passcode, parsed.short_discriminator, parsed.vendor_id, parsed.product_id,
            parsed.flow) == (20202021, 15, 0xFFF1, 0x8000, CommissioningFlow.CUSTOM)


def test_round_trips_over_random_payloads():
    rng = random.Random(5)
    for _ in range(300):
        passcode, discriminator = passcode_and_discriminator(rng)
        payload = SetupPayload(passcode=passcode, discriminator=discriminator,
                               vendor_id=rng.randrange(0x10000), product_id=rng.randrange(0x10000),
                               flow=rng.choice(list(CommissioningFlow)),
                               discovery=DiscoveryCapabilities(rng.randrange(16)),
                               optional_tlv=rng.randbytes(rng.randrange(4)))
        assert parse_qr_code(payload.qr_code()) == payload
        parsed = parse_manual_code(payload.manual_code())
        assert parsed.passcode == passcode
        assert parsed.short_discriminator == discriminator >> 8
        if payload.flow != CommissioningFlow.STANDARD:
            assert (parsed.vendor_id, parsed.product_id) == (payload.vendor_id,
                                                             payload.product_id)


@pytest.mark.parametrize("passcode", [0, 11111111, 22222222, 33333333, 44444444, 55555555,
                                      66666666, 77777777, 88888888, 99999999, 12345678,
                                      87654321, 99999999 + 1, 2 ** 27 - 1, -5])
def test_spec_invalid_passcodes_are_rejected(passcode):
    assert not is_valid_passcode(passcode)
    with pytest.raises(PairingCodeError, match="not allowed"):
        SetupPayload(passcode=passcode, discriminator=1)


def test_invalid_passcode_in_a_code_is_rejected():
    # Codes carrying the forbidden passcode 11111111, built by bypassing the constructor check.
    bad = SetupPayload(passcode=20202021, discriminator=3840, vendor_id=1, product_id=1)
    object.__setattr__(bad, "passcode", 11111111)
    with pytest.raises(PairingCodeError, match="passcode 11111111"):
        parse_qr_code(bad.qr_code())
    with pytest.raises(PairingCodeError, match="passcode 11111111"):
        parse_manual_code(bad.manual_code())


def test_passcode_and_discriminator_come_from_the_rng():
    assert passcode_and_discriminator(random.Random(9)) == \
        passcode_and_discriminator(random.Random(9))

    class Rigged(random.Random):
        draws = [11111111, 12345678, 20202021]

        def randint(self, a, b):
            return self.draws.pop(0) if self.draws else 3840

    assert passcode_and_discriminator(Rigged()) == (20202021, 3840)


@pytest.mark.parametrize("text, message", [
    ("34970112331", "check digit"),                   # last digit changed
    ("3497011233", "11 or 21 digits"),
    ("3497O112332", "11 or 21 digits"),
    ("MT:-24J0AFN00KA0648G0", "base38 length"),
    ("MT:-24J0AFN00KA0648G0a", "base38 accepts"),
    ("XX:-24J0AFN00KA0648G00", "must be 11 or 21 digits"),
    ("MT:FJM30M77703G10", "at least 11"),          # 8 bytes
    ("MT:.....", "overflows"),
])
def test_malformed_codes_are_rejected(text, message):
    with pytest.raises(PairingCodeError, match=message):
        parse_pairing_code(text)


def test_manual_code_first_digit_must_agree_with_length():
    eleven = SetupPayload(passcode=20202021, discriminator=3840).manual_code()
    digits = "7" + eleven[1:10]                                 # claims VID/PID, has none
    from matter_protocol.pairing import _verhoeff_check_digit
    with pytest.raises(PairingCodeError, match="says 21 digits but it has 11"):
        parse_manual_code(digits + str(_verhoeff_check_digit(digits)))
    digits = "8" + eleven[1:10]
    with pytest.raises(PairingCodeError, match="8 and 9 are reserved"):
        parse_manual_code(digits + str(_verhoeff_check_digit(digits)))


def test_qr_needs_the_long_discriminator():
    with pytest.raises(PairingCodeError, match="12-bit discriminator"):
        parse_manual_code("34970112332").qr_code()


@pytest.mark.parametrize("fields, message", [
    (dict(discriminator=4096), "discriminator 4096"),
    (dict(vendor_id=0x10000), "vendor_id 65536"),
    (dict(flow=3), "3 is not a valid CommissioningFlow"),
    (dict(discovery=256), "8 bits"),
])
def test_payload_fields_are_range_checked(fields, message):
    with pytest.raises((PairingCodeError, ValueError), match=message):
        SetupPayload(**{"passcode": 20202021, "discriminator": 1, **fields})


# --- against the CHIP SDK's parser, in a namespace (chip-core's stack init touches the network
# layer, so it stays off the machine's own) ---------------------------------------------------

def chip_parse(qr_codes: list[str], manual_codes: list[str]) -> dict:
    if not os.path.isdir("/data"):
        raise RuntimeError("chip-core keeps its ini files in /data: run "
                           "scripts/install-test-deps.sh")
    if importlib.util.find_spec("chip.native") is None:
        raise RuntimeError("chip-core (home-assistant-chip-core) is not installed: run "
                           "scripts/install-test-deps.sh")
    import chip.native
    chip.native.Init(999)                  # 999: no Bluetooth adapter
    from chip.setup_payload import SetupPayload as ChipPayload

    def parse(method, code):
        try:
            return getattr(ChipPayload(), method)(code).attributes
        except Exception as exc:  # noqa: BLE001 - the error text goes back to the test
            return {"error": str(exc)}
    return {"qr": [parse("ParseQrCode", c) for c in qr_codes],
            "manual": [parse("ParseManualPairingCode", c) for c in manual_codes]}


@pytest.mark.e2e
def test_chip_sdk_parses_our_codes_identically(netns):
    rng = random.Random(77)
    payloads = []
    for i in range(40):
        passcode, discriminator = passcode_and_discriminator(rng)
        payloads.append(SetupPayload(
            passcode=passcode, discriminator=discriminator, vendor_id=rng.randrange(1, 0xFFF5),
            product_id=rng.randrange(1, 0x10000), flow=CommissioningFlow(i % 3),
            discovery=DiscoveryCapabilities.ON_NETWORK | DiscoveryCapabilities(i % 4)))
    qr = [p.qr_code() for p in payloads]
    manual = [p.manual_code() for p in payloads]
    corrupt = manual[0][:-1] + str((int(manual[0][-1]) + 1) % 10)
    result = netns.call(chip_parse, qr, manual + [corrupt], timeout=60)
    for payload, attrs in zip(payloads, result["qr"]):
        assert attrs == {"Version": "0", "VendorID": str(payload.vendor_id),
                         "ProductID": str(payload.product_id),
                         "CommissioningFlow": str(int(payload.flow)),
                         "RendezvousInformation": str(int(payload.discovery)),
                         "Long discriminator": str(payload.discriminator),
                         "SetUpPINCode": str(payload.passcode)}
    for payload, attrs in zip(payloads, result["manual"]):
        assert attrs["SetUpPINCode"] == str(payload.passcode)
        assert attrs["Short discriminator"] == str(payload.short_discriminator)
        if payload.flow != CommissioningFlow.STANDARD:
            assert (attrs["VendorID"], attrs["ProductID"]) == (str(payload.vendor_id),
                                                               str(payload.product_id))
    # Both sides reject a wrong check digit.
    assert "Integrity check failed" in result["manual"][-1]["error"]
    with pytest.raises(PairingCodeError):
        parse_manual_code(corrupt)
