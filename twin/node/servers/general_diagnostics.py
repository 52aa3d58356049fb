"""GeneralDiagnostics: network interfaces, reboot count, uptime (Core spec 11.12)."""
from __future__ import annotations

from typing import Any

from chip.clusters.Types import NullValue

from clusters.base import MatterError, Status
from twin.node.servers.base import (
    GD,
    INTERFACE_NAME,
    NodeServer,
)


class GeneralDiagnosticsServer(NodeServer):
    """Interfaces, reboot count (persisted), uptime on the runtime's clock, TimeSnapshot.

    TestEventTrigger as the CHIP SDK's server answers it: a key that is not 16 bytes, all zeros,
    or not the node's enable key is CONSTRAINT_ERROR; a trigger the delegate does not handle,
    INVALID_COMMAND. The delegate (`test_events`, twin/node/faults.py `FaultTriggers`) starts
    faults; TestEventTriggersEnabled is true while it has a key (the home's faults file gives one).
    """
    cluster = GD
    revision = 2
    attributes = ("NetworkInterfaces", "RebootCount", "UpTime", "BootReason", "TestEventTriggersEnabled")
    commands = ("TestEventTrigger", "TimeSnapshot")
    changes_omitted = frozenset({"UpTime"})   # spec quality C: read it, never reported on change

    def __init__(self, node: Any, hardware_address: bytes):
        super().__init__(node)
        self.hardware_address = hardware_address
        self.ipv4_addresses: list[bytes] = []
        self.ipv6_addresses: list[bytes] = []
        #: The TestEventTrigger delegate (`key`, `trigger(code) -> bool`); None: triggers disabled.
        self.test_events: Any = None

    def defaults(self) -> dict[str, Any]:
        return {"NetworkInterfaces": [], "RebootCount": 0, "UpTime": 0,
                "BootReason": GD.Enums.BootReasonEnum.kPowerOnReboot, "TestEventTriggersEnabled": False}

    def set_addresses(self, ipv4: list[bytes], ipv6: list[bytes]) -> None:
        """The runtime reports the addresses it serves on (4- and 16-byte forms)."""
        self.ipv4_addresses, self.ipv6_addresses = [bytes(a) for a in ipv4], [bytes(a) for a in ipv6]
        self.touch("NetworkInterfaces")

    def get(self, name: str) -> Any:
        if name == "NetworkInterfaces":
            return [GD.Structs.NetworkInterface(
                name=INTERFACE_NAME, isOperational=True, offPremiseServicesReachableIPv4=NullValue,
                offPremiseServicesReachableIPv6=NullValue, hardwareAddress=self.hardware_address,
                IPv4Addresses=list(self.ipv4_addresses), IPv6Addresses=list(self.ipv6_addresses),
                type=GD.Enums.InterfaceTypeEnum.kEthernet)]
        if name == "RebootCount":
            return self.node.table.counters.get("reboot_count", 0)
        if name == "UpTime":
            return self.node.uptime_ms() // 1000
        if name == "TestEventTriggersEnabled":
            return self.test_events is not None and bool(self.test_events.key)
        return super().get(name)

    def TestEventTrigger(self, request: Any) -> Any:
        key = bytes(request.enableKey)
        if len(key) != 16 or not any(key):
            raise MatterError(Status.CONSTRAINT_ERROR, "enableKey must be 16 bytes, not all zero")
        if self.test_events is None or not self.test_events.key:
            raise MatterError(Status.CONSTRAINT_ERROR,
                              "test event triggers are disabled on this node (TestEventTriggersEnabled is false)")
        if key != self.test_events.key:
            raise MatterError(Status.CONSTRAINT_ERROR, "enableKey does not match this node's")
        if not self.test_events.trigger(int(request.eventTrigger)):
            raise MatterError(Status.INVALID_COMMAND, f"eventTrigger 0x{int(request.eventTrigger):016x} is not handled")

    def TimeSnapshot(self, request: Any) -> Any:
        return GD.Commands.TimeSnapshotResponse(systemTimeMs=self.node.uptime_ms(), posixTimeMs=NullValue)
