"""Data shapes handed from the secure channel handshakes (PASE/CASE) to the session layer."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SessionKeys:
    i2r_key: bytes  # 16 bytes, initiator-to-responder encryption key
    r2i_key: bytes  # 16 bytes, responder-to-initiator encryption key
    attestation_challenge: bytes  # 16 bytes


@dataclass(frozen=True)
class EstablishedSession:
    local_session_id: int
    peer_session_id: int
    keys: SessionKeys
    is_initiator: bool
    peer_node_id: int | None  # CASE: operational node id of peer; PASE: None
    fabric_index: int | None  # CASE only
    peer_mrp: dict[str, int] | None  # SESSION_IDLE_INTERVAL / SESSION_ACTIVE_INTERVAL etc. if the peer sent them
