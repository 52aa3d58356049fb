"""Subscriptions across restarts (issue #13 item 2), as the CHIP SDK's devices keep them
(CHIP_CONFIG_PERSIST_SUBSCRIPTIONS): each active subscription of a CASE peer is stored in the
node's storage; after a restart the node opens CASE to the subscriber itself and sends a fresh
priming report under the same subscription id, so the controller sees the restarted node's real
state at once instead of when its liveness timer fires.

A record: subscription id, the subscriber (fabric index, node id, and the address its messages
last came from: its operational UDP port), the attribute and event paths, fabric filtering,
and the granted intervals. This module is the stored form only; NodeCore (core.py) runs the
CASE initiator and hands the session to `InteractionModelServer.resume`.
"""
from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Iterable
from typing import Any

from matter_protocol.interaction import AttributePath, EventPath
from twin.node.files import Storage
from twin.node.im import Subscription

log = logging.getLogger(__name__)

STORE_FORMAT = 1
#: At most this many stored subscriptions are resumed per node (the SDK keeps a fixed pool too).
MAX_RESUMED = 8


def _path_json(path: Any) -> dict[str, Any]:
    # `is`, not `in (None, False)`: endpoint 0 or attribute 0 equals False and must stay.
    return {k: v for k, v in dataclasses.asdict(path).items() if v is not None and v is not False}


def record_of(sub: Subscription) -> dict[str, Any] | None:
    """The stored form of an active CASE subscription (None for PASE or inactive ones)."""
    session = sub.session
    node_id = getattr(session, "peer_node_id", None)
    fabric_index = getattr(session, "fabric_index", None)
    address = getattr(session, "peer_address", None)
    if not sub.active or node_id is None or fabric_index is None or address is None:
        return None
    return {"id": sub.id, "fabric_index": fabric_index, "node_id": node_id, "address": list(address),
            "paths": [_path_json(p) for p in sub.paths], "event_paths": [_path_json(p) for p in sub.event_paths],
            "fabric_filtered": sub.fabric_filtered, "min_interval_ms": sub.min_interval_ms,
            "max_interval_ms": sub.max_interval_ms}


def subscription_of(record: dict[str, Any], session: Any, layer: Any, handler: Any) -> Subscription:
    """A stored subscription back on `session` (the node's new CASE session to the subscriber)."""
    return Subscription(int(record["id"]), session, layer, handler,
                        [AttributePath(**p) for p in record["paths"]], bool(record["fabric_filtered"]),
                        int(record["min_interval_ms"]), int(record["max_interval_ms"]),
                        event_paths=[EventPath(**p) for p in record["event_paths"]])


class SubscriptionStore:
    """The node's subscriptions in one blob (`Storage`: a file, written atomically)."""

    def __init__(self, storage: Storage) -> None:
        self.storage = storage

    def load(self) -> list[dict[str, Any]]:
        try:
            data = self.storage.load()
            records = json.loads(data) if data else {}
        except (OSError, ValueError) as err:
            log.warning("stored subscriptions %s not usable: %s", self.storage.name, err)
            return []
        if not isinstance(records, dict) or records.get("format") != STORE_FORMAT:
            return []
        return list(records.get("subscriptions", []))[:MAX_RESUMED]

    def save(self, records: Iterable[dict[str, Any]]) -> None:
        data = json.dumps({"format": STORE_FORMAT, "subscriptions": list(records)}, sort_keys=True).encode()
        if data != self.storage.load():
            self.storage.save(data)
