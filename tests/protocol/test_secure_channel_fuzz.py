"""Garbage into every handshake state: `handle` never raises, it answers or fails with a code."""
import random

from hypothesis import given, settings
from hypothesis import strategies as st
from test_secure_channel_case import make_fabric

from matter_protocol.case import CaseInitiator, CaseResponder
from matter_protocol.message import SecureChannelOpcode as Opcode
from matter_protocol.pase import PaseInitiator, PaseResponder, encode_struct
from matter_protocol.spake2p import make_verifier
from matter_protocol.status_report import SecureChannelStatus

SALT = b"SPAKE2P Key Salt"
VERIFIER = make_verifier(20202021, SALT, 1000)
NODE, CONTROLLER = make_fabric()
OPCODES = [int(op) for op in Opcode]


def advanced(kind: str, steps: int):
    """A handshake pair driven `steps` messages in, and the object whose turn it is."""
    rng = random.Random(steps)
    if kind == "pase":
        i, r = PaseInitiator(20202021, 1, rng=rng), PaseResponder(VERIFIER, SALT, 1000, 2, rng=rng)
    else:
        i, r = CaseInitiator(CONTROLLER, NODE.node_id, 1, rng=rng), CaseResponder([NODE], 2, rng=rng)
    msgs, to = i.start(), r
    for _ in range(steps):
        msgs = [m for op, p in msgs for m in to.handle(op, p)]
        to = i if to is r else r
    return to


tlv_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**63, 2**64 - 1) | st.binary(max_size=80) | st.text(max_size=8),
    lambda inner: st.dictionaries(st.integers(1, 8), inner, max_size=5), max_leaves=10)


def _tlv(d):
    try:
        from chip.tlv import uint
        return encode_struct({k: (uint(v) if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else v)
                              for k, v in d.items()})
    except (ValueError, TypeError):
        return b"\x15\x18"


payloads = st.binary(max_size=300) | st.dictionaries(st.integers(1, 8), tlv_values, max_size=8).map(_tlv)


@settings(max_examples=300, deadline=None)
@given(kind=st.sampled_from(["pase", "case"]), steps=st.integers(0, 2), opcode=st.sampled_from(OPCODES),
       payload=payloads)
def test_handle_never_raises_on_garbage(kind, steps, opcode, payload):
    side = advanced(kind, steps)
    out = side.handle(opcode, payload)
    assert isinstance(out, list)
    assert side.result is None  # garbage never establishes a session
    if side.error is not None:
        assert side.error in set(SecureChannelStatus) or opcode == Opcode.StatusReport
        assert side.handle(opcode, payload) == []  # finished: quiet from now on
