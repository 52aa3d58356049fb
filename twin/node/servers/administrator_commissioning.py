"""AdministratorCommissioning: open and revoke commissioning windows (Core spec 11.19)."""
from __future__ import annotations

from typing import Any

from chip.clusters.Types import NullValue

from clusters.base import MatterError, Status
from matter_protocol.spake2p import (
    PBKDF_MAX_ITERATIONS,
    PBKDF_MAX_SALT_LEN,
    PBKDF_MIN_ITERATIONS,
    PBKDF_MIN_SALT_LEN,
    Spake2pError,
    parse_verifier,
)
from twin.node.servers.base import (
    ADC,
    AdminStatus,
    NodeServer,
    WindowStatus,
)
from twin.node.window import CommissioningWindow, PakeParameters


class AdministratorCommissioningServer(NodeServer):
    cluster = ADC
    revision = 1
    attributes = ("WindowStatus", "AdminFabricIndex", "AdminVendorId")
    commands = ("OpenCommissioningWindow", "OpenBasicCommissioningWindow", "RevokeCommissioning")
    notes = ("OpenCommissioningWindow takes a SPAKE2+ verifier (w0 || L, 97 bytes), PBKDF salt (16..32 bytes) "
             "and iterations (1000..100000); timeouts 180..900 s.",)

    def __init__(self, node: Any):
        super().__init__(node, feature_map=int(ADC.Bitmaps.Feature.kBasic))

    def defaults(self) -> dict[str, Any]:
        return {"WindowStatus": WindowStatus.kWindowNotOpen, "AdminFabricIndex": NullValue, "AdminVendorId": NullValue}

    def get(self, name: str) -> Any:
        window = self.node.window
        if name == "WindowStatus":
            return window.status
        if name == "AdminFabricIndex":  # null once that fabric is gone
            index = window.admin_fabric_index
            return index if index is not None and self.node.table.get(index) is not None else NullValue
        if name == "AdminVendorId":
            return window.admin_vendor_id if window.admin_vendor_id is not None else NullValue
        return super().get(name)

    def _check_can_open(self) -> None:
        if self.node.window.is_open:
            raise MatterError(Status.FAILURE, "a commissioning window is already open", int(AdminStatus.kBusy))
        if self.node.failsafe.armed:
            raise MatterError(Status.FAILURE, "the fail-safe is armed: commissioning is in progress",
                              int(AdminStatus.kBusy))

    def _check_timeout(self, timeout: int) -> None:
        lo, hi = CommissioningWindow.MIN_TIMEOUT_S, CommissioningWindow.MAX_TIMEOUT_S
        if not lo <= timeout <= hi:
            raise MatterError(Status.INVALID_COMMAND, f"commissioningTimeout {timeout} s outside {lo}..{hi}")

    def _admin(self) -> tuple[int | None, int | None]:
        fabric = self.node.table.get(self.node.accessing_fabric())
        return (fabric.fabric_index, fabric.vendor_id) if fabric is not None else (None, None)

    def OpenCommissioningWindow(self, request: Any) -> Any:
        self._check_can_open()
        pake_error = int(AdminStatus.kPAKEParameterError)
        try:
            parse_verifier(request.PAKEPasscodeVerifier)
        except Spake2pError as e:
            raise MatterError(Status.FAILURE, f"PAKEPasscodeVerifier: {e}", pake_error) from None
        if not PBKDF_MIN_ITERATIONS <= request.iterations <= PBKDF_MAX_ITERATIONS:
            raise MatterError(Status.FAILURE, f"iterations {request.iterations} outside "
                              f"{PBKDF_MIN_ITERATIONS}..{PBKDF_MAX_ITERATIONS}", pake_error)
        if not PBKDF_MIN_SALT_LEN <= len(request.salt) <= PBKDF_MAX_SALT_LEN:
            raise MatterError(Status.FAILURE, f"salt is {len(request.salt)} bytes; accepted: "
                              f"{PBKDF_MIN_SALT_LEN}..{PBKDF_MAX_SALT_LEN}", pake_error)
        self._check_timeout(request.commissioningTimeout)
        if request.discriminator > 0xFFF:
            raise MatterError(Status.CONSTRAINT_ERROR, f"discriminator {request.discriminator} outside 0..4095")
        pake = PakeParameters(bytes(request.PAKEPasscodeVerifier), bytes(request.salt), request.iterations)
        self.node.window.open_enhanced(self.node.now_ms(), request.commissioningTimeout, pake,
                                       request.discriminator, *self._admin())
        self.node.window_changed()

    def OpenBasicCommissioningWindow(self, request: Any) -> Any:
        self._check_can_open()
        self._check_timeout(request.commissioningTimeout)
        self.node.window.open_basic(self.node.now_ms(), request.commissioningTimeout, *self._admin())
        self.node.window_changed()

    def RevokeCommissioning(self, request: Any) -> Any:
        if self.node.failsafe.armed:
            self.node.expire_failsafe()
        if not self.node.window.is_open:
            raise MatterError(Status.FAILURE, "no commissioning window is open", int(AdminStatus.kWindowNotOpen))
        self.node.window.close()
        self.node.window_changed()
