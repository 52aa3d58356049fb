"""The standing adversarial suite: every finding of every hardening campaign (issues #12 and #32)
keeps a test, and these modules hold them. `tests/conftest.py` gives their tests the
`adversarial` marker, so `pytest -m adversarial` runs the suite (bounded: derandomized fuzzing,
fixed floods; the modules marked e2e run their wire checks in network namespaces they create),
and CI runs it with everything else. docs/security.md says which finding each one covers.
"""
from __future__ import annotations

#: Test module (relative to tests/) -> the findings it keeps fixed.
ADVERSARIAL: dict[str, str] = {
    "fuzz/test_fuzz.py": "#12: wire, TLV, handshake, IM, file and HTTP fuzzing (no escaped exception)",
    "node/test_node_handshake_hardening.py": "#12: poisoned and half-open handshakes, garbage PBKDF not counted",
    "node/test_node_handshake_flood_matter_server.py": "#12: a malformed handshake burst over the wire",
    "node/test_node_timers.py": "#12: timer starvation under a datagram flood",
    "node/test_node_im_lazy_chunks.py": "#12: huge reads encoded one chunk at a time",
    "node/test_node_huge_read_wire.py": "#12: a huge wildcard read over the wire",
    "node/test_node_access.py": "#12: ACL lockout and privilege checks",
    "node/test_device_state.py": "#13: state files after kill -9 (atomic writes)",
    "app/test_deep_input.py": "#12/#32: deep nesting and the YAML alias bomb in every loader",
    "node/test_node_handshake_squatting.py": "#32: PASE squatting, replayed Sigma1, unacked exchange, log rate",
    "node/test_node_pase_squatter_matter_server.py": "#32: a PASE squatter over the wire",
    "node/test_node_im_limits.py": "#32: TimedRequest range and privilege, open interactions capped",
    "protocol/test_message_layer.py": "#32: exchanges a peer that never acks can hold, capped",
    "app/test_http_edge.py": "#32: HTTP body limits, read timeouts, connection cap, no tracebacks",
    "app/test_mqtt_edge.py": "#32: nested and retained MQTT commands",
    "node/test_device_state_disk_full.py": "#32: a full disk: one warning, changes refused until saved",
}
