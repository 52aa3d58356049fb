"""IcdManagement cluster server (Matter 1.4, revision 3): an intermittently connected device.

A battery sensor or lock as a Thread sleepy end device: a Short Idle Time (SIT) ICD that polls
its parent every `slow_poll_ms` while idle and every `fast_poll_ms` for ActiveModeThreshold after
any exchange. The node advertises these as SII / SAI / SAT (mDNS TXT and session parameters)
and holds each message addressed to the node until its next poll (twin/node/faults.py
`IcdLink`), so a controller's request, and so its read or subscription report, waits up to one
slow-poll interval, as with a real sleepy device.

With the Check-In Protocol Support feature (CIP) clients register (RegisterClient, Manage
privilege in the spec: Administer for another subject than the caller's, not modelled)
in a fabric-scoped RegisteredClients list and get the ICDCounter. Each time the device enters
active mode (at boot, then every IdleModeDuration) the node sends a Check-In message to each
registered client whose monitored subject holds no subscription (twin/node/checkins.py), sealed
with the key the client registered and a fresh ICDCounter value. The keys are kept here, in
memory only: the spec never lets anyone read them back, and the twin does not persist them (after
a restart of the twin a client registers again).

With `lit_slow_poll_ms` the device is a Long Idle Time ICD (features LITS, with CIP and UAT as the
spec requires): it operates as LIT, polling every `lit_slow_poll_ms` (beyond a SIT's 15 s, up to
IdleModeDuration), while at least one client is registered, and as SIT otherwise (Matter 1.4: a LIT
ICD without registrations operates as SIT). OperatingMode says which; UserActiveModeTriggerHint
says actuating the sensor wakes it (its Check-Ins are then due at once, twin/node/checkins.py);
StayActiveRequest keeps it awake for a client (30 s at most).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from clusters.base import Clusters, ClusterServer, MatterError, Status, current_access

ICD = Clusters.IcdManagement
SIT_MAX_SLOW_POLL_MS = 15000   # a SIT ICD must stay reachable: its slow poll is at most 15 s


class IcdManagementServer(ClusterServer):
    cluster = ICD
    revision = 3
    attributes = ("IdleModeDuration", "ActiveModeDuration", "ActiveModeThreshold", "RegisteredClients",
                  "ICDCounter", "ClientsSupportedPerFabric", "MaximumCheckInBackOff")
    commands = ("RegisterClient", "UnregisterClient")
    notes = ("A sleepy device: messages to it wait for its next poll (slow poll while idle, fast poll "
             "for ActiveModeThreshold ms after an exchange).",)
    changes_omitted = frozenset({"ICDCounter"})

    def __init__(self, slow_poll_ms: int = 3000, fast_poll_ms: int = 300, lit_slow_poll_ms: int | None = None,
                 **initial: Any):
        if not 0 < fast_poll_ms <= slow_poll_ms <= SIT_MAX_SLOW_POLL_MS:
            raise ValueError(f"ICD polling: need 0 < fast_poll_ms <= slow_poll_ms <= 15000 (a SIT device), "
                             f"got {fast_poll_ms}, {slow_poll_ms}")
        self.slow_poll_ms, self.fast_poll_ms = int(slow_poll_ms), int(fast_poll_ms)
        self.lit_slow_poll_ms = None if lit_slow_poll_ms is None else int(lit_slow_poll_ms)
        #: (fabric index, checkInNodeID) -> the client's 16-byte key (never an attribute: write-only).
        self.keys: dict[tuple[int, int], bytes] = {}
        #: Called with the ms a StayActiveRequest promised (the node's link keeps the device awake).
        self.on_stay_active: Callable[[int], None] | None = None
        feature = ICD.Bitmaps.Feature
        features = int(feature.kCheckInProtocolSupport)
        if self.lit_slow_poll_ms is not None:
            # A LIT ICD needs the Check-In Protocol and a User Active Mode Trigger (LITS: [CIP & UAT]).
            features |= int(feature.kUserActiveModeTrigger) | int(feature.kLongIdleTimeSupport)
            self.attributes = (*type(self).attributes, "UserActiveModeTriggerHint", "OperatingMode")
            self.commands = (*type(self).commands, "StayActiveRequest")
        super().__init__(feature_map=features, **initial)
        idle_ms = int(self._values["IdleModeDuration"]) * 1000
        if not 1000 <= idle_ms <= 64800 * 1000:
            raise ValueError(f"ICD IdleModeDuration {self._values['IdleModeDuration']} s; accepted: 1..64800 s")
        if self.lit_slow_poll_ms is not None and not self.slow_poll_ms <= self.lit_slow_poll_ms <= idle_ms:
            raise ValueError(f"LIT polling: need slow_poll_ms <= lit_slow_poll_ms <= IdleModeDuration "
                             f"({idle_ms} ms), got {self.slow_poll_ms}, {self.lit_slow_poll_ms}")

    def defaults(self) -> dict[str, Any]:
        # A LIT device: the user wakes it by actuating the sensor (opening the door, the water).
        return {"IdleModeDuration": 60, "ActiveModeDuration": 300, "ActiveModeThreshold": 300,
                "RegisteredClients": [], "ICDCounter": 0, "ClientsSupportedPerFabric": 2,
                "MaximumCheckInBackOff": 60, "OperatingMode": ICD.Enums.OperatingModeEnum.kSit,
                "UserActiveModeTriggerHint": int(ICD.Bitmaps.UserActiveModeTriggerBitmap.kActuateSensor)}

    def _operating_mode(self) -> None:
        """A LIT ICD operates as a SIT one while no client is registered on any fabric (Matter
        1.4, ICD Management: nobody would hear its Check-Ins), as a LIT one otherwise."""
        if self.lit_slow_poll_ms is not None:
            mode = ICD.Enums.OperatingModeEnum
            self.set("OperatingMode", mode.kLit if self._values["RegisteredClients"] else mode.kSit)

    def operating_lit(self) -> bool:
        return self.lit_slow_poll_ms is not None and self._values["OperatingMode"] == ICD.Enums.OperatingModeEnum.kLit

    def StayActiveRequest(self, request: Any) -> Any:
        """Stay awake (fast polling) for the asked ms, at least ActiveModeThreshold and at most
        30 s (the spec's floor for the promise), e.g. for a client that heard a Check-In."""
        promised = max(min(int(request.stayActiveDuration), 30000), int(self._values["ActiveModeThreshold"]))
        if self.on_stay_active is not None:
            self.on_stay_active(promised)
        return ICD.Commands.StayActiveResponse(promisedActiveDuration=promised)

    def _fabric(self) -> int:
        access = current_access.get()
        if access is None or not access.fabric_index:
            raise MatterError(Status.UNSUPPORTED_ACCESS, "IcdManagement: registration needs a fabric (CASE)")
        return int(access.fabric_index)

    def RegisterClient(self, request: Any) -> Any:
        fabric = self._fabric()
        if len(request.key) != 16:
            raise MatterError(Status.CONSTRAINT_ERROR, "IcdManagement.RegisterClient: key must be 16 bytes")
        clients = [c for c in self._values["RegisteredClients"]
                   if not (c.fabricIndex == fabric and c.checkInNodeID == request.checkInNodeID)]
        if sum(c.fabricIndex == fabric for c in clients) >= self._values["ClientsSupportedPerFabric"]:
            raise MatterError(Status.RESOURCE_EXHAUSTED, "IcdManagement: this fabric's client slots are full")
        clients.append(ICD.Structs.MonitoringRegistrationStruct(
            checkInNodeID=request.checkInNodeID, monitoredSubject=request.monitoredSubject,
            clientType=request.clientType, fabricIndex=fabric))
        self.set("RegisteredClients", clients)
        self.keys[(fabric, int(request.checkInNodeID))] = bytes(request.key)
        self.set("ICDCounter", (self._values["ICDCounter"] + 1) & 0xFFFFFFFF)
        self._operating_mode()
        return ICD.Commands.RegisterClientResponse(ICDCounter=self._values["ICDCounter"])

    def UnregisterClient(self, request: Any) -> None:
        fabric = self._fabric()
        clients = self._values["RegisteredClients"]
        kept = [c for c in clients if not (c.fabricIndex == fabric and c.checkInNodeID == request.checkInNodeID)]
        if len(kept) == len(clients):
            raise MatterError(Status.NOT_FOUND, f"IcdManagement: no client {request.checkInNodeID:#x} on this fabric")
        self.set("RegisteredClients", kept)
        self.keys.pop((fabric, int(request.checkInNodeID)), None)
        self._operating_mode()

    def forget_fabric(self, fabric_index: int) -> None:
        super().forget_fabric(fabric_index)
        self.keys = {k: v for k, v in self.keys.items() if k[0] != fabric_index}
        self._operating_mode()

    def check_in_clients(self) -> list[tuple[Any, bytes]]:
        """The registered clients a Check-In can go to: (MonitoringRegistrationStruct, key)."""
        return [(c, key) for c in self._values["RegisteredClients"]
                if (key := self.keys.get((int(c.fabricIndex), int(c.checkInNodeID)))) is not None]

    def next_check_in_counter(self) -> int:
        """Advance the ICD counter for one Check-In message and return it (Core spec 4.20: each
        message carries a value the client has not seen, above the one RegisterClient answered)."""
        value = (self._values["ICDCounter"] + 1) & 0xFFFFFFFF
        self.set("ICDCounter", value)
        return int(value)

    def mrp(self) -> tuple[int, int, int]:
        """(idle, active, threshold) ms: the node's SII / SAI / SAT; the idle one is its slow poll,
        the long one while it operates as a LIT ICD."""
        slow = (self.lit_slow_poll_ms or self.slow_poll_ms) if self.operating_lit() else self.slow_poll_ms
        return slow, self.fast_poll_ms, int(self._values["ActiveModeThreshold"])

    def icd_txt(self) -> int | None:
        """The mDNS `ICD` key (Core spec 4.3): 1 operating as LIT, 0 as SIT; None without LITS."""
        return None if self.lit_slow_poll_ms is None else int(self.operating_lit())

    def idle_mode_ms(self) -> int:
        """How long the device idles between two active modes (each sends the due Check-Ins)."""
        return int(self._values["IdleModeDuration"]) * 1000
