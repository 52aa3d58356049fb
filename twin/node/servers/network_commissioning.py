"""NetworkCommissioning: one Ethernet interface, nothing to configure (Core spec 11.9)."""
from __future__ import annotations

from typing import Any

from chip.clusters.Types import NullValue

from twin.node.servers.base import (
    INTERFACE_NAME,
    NC,
    NodeServer,
)


class NetworkCommissioningServer(NodeServer):
    """Ethernet feature: one always-connected interface, no network commands.

    InterfaceEnabled is writable as the spec requires; the twin keeps its UDP port either way.
    """
    cluster = NC
    revision = 1
    attributes = ("MaxNetworks", "Networks", "InterfaceEnabled", "LastNetworkingStatus", "LastNetworkID",
                  "LastConnectErrorValue")
    writable = frozenset({"InterfaceEnabled"})

    def __init__(self, node: Any):
        super().__init__(node, feature_map=int(NC.Bitmaps.Feature.kEthernetNetworkInterface))

    def defaults(self) -> dict[str, Any]:
        return {"MaxNetworks": 1,
                "Networks": [NC.Structs.NetworkInfoStruct(networkID=INTERFACE_NAME.encode(), connected=True)],
                "InterfaceEnabled": True, "LastNetworkingStatus": NullValue, "LastNetworkID": NullValue,
                "LastConnectErrorValue": NullValue}
