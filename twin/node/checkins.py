"""Check-In messages of an intermittently connected device (Core spec 4.20; clusters/icd.py), sans-IO.

Each time the device enters active mode (at boot, every IdleModeDuration, and for a device with
a user active mode trigger when its sensor is actuated) it owes a Check-In
to each registered client whose monitored subject holds no subscription on the node (a client
that is subscribed hears from the device anyway). `CheckIns.due` names those clients as
`CheckInTarget`s; the node's asyncio shell finds each client's address by operational discovery
of its node id on the fabric (DNS-SD), falling back on the address of the client's last session,
and `CheckIns.message` builds the datagram: an unsecured, unacknowledged Secure Channel message
whose payload only the client's key opens (matter_protocol/checkin.py).
"""
from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from chip.clusters import Objects as Clusters

from matter_protocol.checkin import seal_check_in
from matter_protocol.exchange import Action, MessageLayer
from matter_protocol.message import ProtocolId, SecureChannelOpcode
from twin.node.access import subject_matches

ICD_FEATURES = Clusters.IcdManagement.Bitmaps.Feature
#: What actuating a sensor changes (cluster id -> attribute): the hinted user active mode trigger.
_ACTUATED = {Clusters.BooleanState.id: "StateValue", Clusters.OccupancySensing.id: "Occupancy"}


@dataclass(frozen=True)
class CheckInTarget:
    """A registered client owed a Check-In: where to look it up and where it was last seen."""
    fabric_index: int
    compressed_fabric_id: bytes
    node_id: int                 # the client's checkInNodeID
    last_address: Any            # the peer address of its newest session on that fabric, or None


def icd_server(device: Any) -> Any:
    """The device's IcdManagement server with Check-In Protocol Support, or None."""
    root = device.endpoints.get(0) if device is not None else None
    icd = root.servers.get(Clusters.IcdManagement.id) if root is not None else None
    cip = int(Clusters.IcdManagement.Bitmaps.Feature.kCheckInProtocolSupport)
    return icd if icd is not None and icd.feature_map & cip and hasattr(icd, "check_in_clients") else None


class CheckIns:
    """When a node's Check-Ins are due and what they are; `next_ms` is None without CIP."""

    def __init__(self, device: Any):
        self.icd = icd_server(device)
        self.next_ms: float | None = 0.0 if self.icd is not None else None   # due at the first turn: boot
        self.sent = 0
        #: Gives the node a turn soon (any thread): set by the runtime.
        self.wake: Callable[[], None] | None = None
        if self.icd is not None and ICD_FEATURES.kUserActiveModeTrigger & self.icd.feature_map:
            # The user active mode trigger the device hints (actuating the sensor) wakes it.
            for endpoint in device.endpoints.values():
                for server in endpoint.servers.values():
                    if server.id in _ACTUATED:
                        server.listeners.append(self._actuated)

    def _actuated(self, server: Any, name: str) -> None:
        """The sensor was actuated: the device enters active mode now, so the Check-Ins are due."""
        if name == _ACTUATED[server.id] and self.next_ms is not None:
            self.next_ms = 0.0
            if self.wake is not None:
                self.wake()

    def booted(self, now_ms: float) -> None:
        """A reboot: the device starts in active mode, so the Check-Ins are due now."""
        if self.icd is not None:
            self.next_ms = now_ms

    def is_due(self, now_ms: float) -> bool:
        return self.next_ms is not None and now_ms >= self.next_ms

    def due(self, now_ms: float, subscriptions: list[Any], sessions: list[Any],
            fabrics: list[Any]) -> list[CheckInTarget]:
        """The clients owed a Check-In if the device enters active mode now (it does if `next_ms`
        has passed; the next one is an idle mode later)."""
        if not self.is_due(now_ms):
            return []
        self.next_ms = now_ms + self.icd.idle_mode_ms()
        cfids = {f.fabric_index: f.compressed_fabric_id for f in fabrics}
        targets = []
        for client, _key in self.icd.check_in_clients():
            fabric, subject = int(client.fabricIndex), int(client.monitoredSubject)
            if fabric not in cfids or any(
                    s.session.fabric_index == fabric and subject_matches(
                        subject, s.session.peer_node_id, tuple(getattr(s.session, "peer_cats", ()) or ()))
                    for s in subscriptions):
                continue
            seen = [s for s in sessions if s.fabric_index == fabric and s.peer_node_id == client.checkInNodeID]
            last = max(seen, key=lambda s: s.last_activity_ms).peer_address if seen else None
            targets.append(CheckInTarget(fabric, cfids[fabric], int(client.checkInNodeID), last))
        return targets

    def message(self, layer: MessageLayer, target: CheckInTarget, address: Any, now_ms: float) -> list[Action]:
        """The Check-In datagram to `target` at `address` (nothing if it unregistered meanwhile):
        a fresh ICDCounter value and the ActiveModeThreshold, sealed with the client's key."""
        key = self.icd.keys.get((target.fabric_index, target.node_id)) if self.icd is not None else None
        if key is None:
            return []
        counter = self.icd.next_check_in_counter()
        threshold = min(int(self.icd.get("ActiveModeThreshold")), 0xFFFF)
        payload = seal_check_in(key, counter, struct.pack("<H", threshold))
        session = layer.open_unsecured(address, now_ms)
        exchange = layer.new_exchange(session, ProtocolId.SECURE_CHANNEL)
        actions = exchange.send(SecureChannelOpcode.ICD_CheckIn, payload, now_ms, reliable=False)
        self.sent += 1
        return actions + layer.close_session(session, now_ms, notify=False)   # nothing answers a Check-In
