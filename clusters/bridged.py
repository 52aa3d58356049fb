"""BridgedDeviceBasicInformation cluster server (Matter 1.3, revision 3).

On a bridge, each bridged device's top endpoint carries this cluster in place of the root
BasicInformation the device would have as a node of its own. Every value is read from the
bridged device's own BasicInformation server at read time, so the identity exists once:
renaming the device anywhere shows on the bridge, and a NodeLabel written through the bridge
is a write to the device's BasicInformation (with its constraints).

Attributes are the 1.3 set that BasicInformation can fill (ProductID, ProductAppearance and
the KeepActive command are Matter 1.4 additions and left out). A listener on the source turns
its changes into changes of this server (DataVersion bump, listeners), so subscriptions and
DataVersion filters see them; a Reachable change also emits the mandatory ReachableChanged.
"""
from __future__ import annotations

from typing import Any

from clusters.base import Clusters, ClusterServer

BDBI = Clusters.BridgedDeviceBasicInformation


class BridgedDeviceBasicInformationServer(ClusterServer):
    cluster = BDBI
    revision = 3
    attributes = ("VendorName", "VendorID", "ProductName", "NodeLabel", "HardwareVersion",
                  "HardwareVersionString", "SoftwareVersion", "SoftwareVersionString",
                  "SerialNumber", "Reachable", "UniqueID")
    writable = frozenset({"NodeLabel"})
    in_snapshot = False   # a view: the bridged device's BasicInformation holds the values
    notes = ("Mirrors the bridged device's BasicInformation; NodeLabel (up to 32 bytes of UTF-8) "
             "writes through to it.",)

    def __init__(self, source: ClusterServer):
        if source.id != Clusters.BasicInformation.id:
            raise TypeError(f"{type(self).__name__} mirrors a BasicInformation server, not {source.name}")
        self.source = source
        super().__init__()
        self._values.clear()   # nothing stored: get() reads the source
        source.listeners.append(self._mirror)

    def defaults(self) -> dict[str, Any]:
        return dict.fromkeys(self.attributes)   # never read, see __init__

    def get(self, name: str) -> Any:
        return self.source.get(name)

    def write(self, attribute: str | int, data: Any) -> None:
        name = self.resolve_attribute(attribute)
        if name in self.writable:
            self.source.write(name, data)   # validated there; _mirror reports the change here
        else:
            super().write(name, data)       # answers UNSUPPORTED_WRITE

    def _mirror(self, source: ClusterServer, name: str) -> None:
        if name not in self.attributes:
            return
        self.data_version = (self.data_version + 1) & 0xFFFFFFFF
        for listener in self.listeners:
            listener(self, name)
        if name == "Reachable":
            self.emit_event(BDBI.Events.ReachableChanged(reachableNewValue=bool(source.get(name))))

    def detach(self) -> None:
        """Stop mirroring (the bridged device left the bridge)."""
        if self._mirror in self.source.listeners:
            self.source.listeners.remove(self._mirror)

    def state(self) -> dict[str, Any]:
        return {"attributes": {}, "data_version": self.data_version}

    def load_state(self, state: dict[str, Any]) -> None:
        self.data_version = state["data_version"]
