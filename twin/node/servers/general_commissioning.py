"""GeneralCommissioning: the fail-safe, regulatory config and CommissioningComplete (Core spec 11.10)."""
from __future__ import annotations

from typing import Any

from clusters.base import Clusters, MatterError, Status, current_access
from twin.node.fabrics import (
    DEFAULT_FAILSAFE_EXPIRY_S,
    MAX_CUMULATIVE_FAILSAFE_S,
)
from twin.node.servers.base import (
    GC,
    CommissioningError,
    NodeServer,
    RegulatoryLocation,
    debug_text,
)


class GeneralCommissioningServer(NodeServer):
    cluster = GC
    revision = 1
    attributes = ("Breadcrumb", "BasicCommissioningInfo", "RegulatoryConfig", "LocationCapability",
                  "SupportsConcurrentConnection")
    writable = frozenset({"Breadcrumb"})
    commands = ("ArmFailSafe", "SetRegulatoryConfig", "CommissioningComplete")
    notes = ("ArmFailSafe(0) disarms and rolls back; CommissioningComplete must come over CASE on the "
             "fabric that AddNOC created.",)

    def defaults(self) -> dict[str, Any]:
        return {"Breadcrumb": 0,
                "BasicCommissioningInfo": GC.Structs.BasicCommissioningInfo(
                    failSafeExpiryLengthSeconds=DEFAULT_FAILSAFE_EXPIRY_S,
                    maxCumulativeFailsafeSeconds=MAX_CUMULATIVE_FAILSAFE_S),
                "RegulatoryConfig": RegulatoryLocation.kIndoorOutdoor,
                "LocationCapability": RegulatoryLocation.kIndoorOutdoor,
                "SupportsConcurrentConnection": True}

    def get(self, name: str) -> Any:
        if name == "RegulatoryConfig":  # persisted with the node, like the fabrics
            stored = self.node.table.settings.get("regulatory_config")
            return RegulatoryLocation(stored) if stored is not None else self.get("LocationCapability")
        return super().get(name)

    def _response(self, cls: Any, error: CommissioningError, text: str = "") -> Any:
        return cls(errorCode=error, debugText=debug_text(text))

    def ArmFailSafe(self, request: Any) -> Any:
        node, fs = self.node, self.node.failsafe
        access, fabric = current_access.get(), node.accessing_fabric()
        resp = GC.Commands.ArmFailSafeResponse
        if not fs.armed and node.window.is_open and access is not None and access.auth_mode == "case":
            return self._response(resp, CommissioningError.kBusyWithOtherAdmin,
                                  "commissioning window is open: only its PASE commissioner may arm the fail-safe")
        if fs.armed and not fs.matches(fabric):
            return self._response(resp, CommissioningError.kBusyWithOtherAdmin,
                                  f"fail-safe is armed by fabric {fs.fabric_index}")
        if request.expiryLengthSeconds == 0:
            if fs.armed:
                node.expire_failsafe()
            return self._response(resp, CommissioningError.kOk)
        fs.arm(node.now_ms(), request.expiryLengthSeconds, fabric)
        self.set("Breadcrumb", request.breadcrumb)
        return self._response(resp, CommissioningError.kOk)

    def SetRegulatoryConfig(self, request: Any) -> Any:
        resp = GC.Commands.SetRegulatoryConfigResponse
        capability = self.get("LocationCapability")
        new = request.newRegulatoryConfig
        if new == RegulatoryLocation.kUnknownEnumValue or (
                capability != RegulatoryLocation.kIndoorOutdoor and new != capability):
            return self._response(resp, CommissioningError.kValueOutsideRange,
                                  f"regulatory config {int(new)} not allowed; LocationCapability is {int(capability)}")
        code = request.countryCode
        basic = self.sibling(Clusters.BasicInformation)
        if len(code) != 2:
            raise MatterError(Status.CONSTRAINT_ERROR,
                              f"countryCode {code!r} must be two characters (ISO 3166-1 alpha-2, or XX)")
        if basic is not None:
            basic.validate_write("Location", code)  # same rule as a Location write
        self.node.table.settings["regulatory_config"] = int(new)
        self.node.table.save()
        if basic is not None:
            basic.set("Location", code)  # BasicInformation.Location is the node's country code
        self.touch("RegulatoryConfig")
        self.set("Breadcrumb", request.breadcrumb)
        return self._response(resp, CommissioningError.kOk)

    def CommissioningComplete(self, request: Any) -> Any:
        node, fs = self.node, self.node.failsafe
        resp = GC.Commands.CommissioningCompleteResponse
        access = current_access.get()
        if access is None or access.auth_mode != "case":
            return self._response(resp, CommissioningError.kInvalidAuthentication,
                                  "CommissioningComplete must arrive over a CASE session")
        if not fs.armed:
            return self._response(resp, CommissioningError.kNoFailSafe, "fail-safe is not armed")
        fabric = node.accessing_fabric()
        if fabric != fs.fabric_index:
            return self._response(resp, CommissioningError.kInvalidAuthentication,
                                  f"session fabric {fabric} is not the fail-safe's fabric {fs.fabric_index}")
        node.complete_commissioning(fabric)
        self.set("Breadcrumb", 0)
        return self._response(resp, CommissioningError.kOk)
