"""The commissioning window (Core spec 5.4.2, 11.19), its PASE parameters, and the events
the commissioning state tells the node runtime about."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TypeAlias

from clusters.base import Clusters

WindowStatus: TypeAlias = Clusters.AdministratorCommissioning.Enums.CommissioningWindowStatusEnum


# --- the commissioning window ------------------------------------------------------------

@dataclass(frozen=True)
class PakeParameters:
    """What PASE runs with: the SPAKE2+ verifier (w0 || L) and the PBKDF parameters."""
    verifier: bytes
    salt: bytes
    iterations: int


class CommissioningWindow:
    """Open/closed, basic/enhanced, timeout and failed PASE attempts (Core spec 5.4.2, 11.19).

    The *initial* window of a node without fabrics uses the node's own passcode and reports
    WindowStatus WindowNotOpen, as the spec says for a window no administrator opened.
    """

    MAX_FAILED_ATTEMPTS = 20
    MIN_TIMEOUT_S, MAX_TIMEOUT_S = 180, 900

    def __init__(self, basic: PakeParameters, discriminator: int):
        self.basic = basic
        self.basic_discriminator = discriminator
        self._reset()

    def _reset(self) -> None:
        self.is_open = False
        self.status = WindowStatus.kWindowNotOpen
        self.expires_ms: int | None = None
        self.failed_attempts = 0
        self.admin_fabric_index: int | None = None
        self.admin_vendor_id: int | None = None
        self._pake: PakeParameters | None = None
        self._discriminator: int | None = None

    def _open(self, now_ms: int, timeout_s: int | None, pake: PakeParameters, discriminator: int,
              status: WindowStatus, admin_fabric_index: int | None, admin_vendor_id: int | None) -> None:
        if timeout_s is not None and not (status == WindowStatus.kWindowNotOpen
                                          or self.MIN_TIMEOUT_S <= timeout_s <= self.MAX_TIMEOUT_S):
            raise ValueError(f"commissioning timeout {timeout_s} s outside {self.MIN_TIMEOUT_S}..{self.MAX_TIMEOUT_S}")
        self._reset()
        self.is_open, self.status = True, status
        self.expires_ms = now_ms + timeout_s * 1000 if timeout_s is not None else None
        self._pake, self._discriminator = pake, discriminator
        self.admin_fabric_index, self.admin_vendor_id = admin_fabric_index, admin_vendor_id

    def open_initial(self, now_ms: int, timeout_s: int | None = None) -> None:
        """The factory-new window with the node's passcode; no timeout unless given."""
        self._open(now_ms, timeout_s, self.basic, self.basic_discriminator, WindowStatus.kWindowNotOpen, None, None)

    def open_basic(self, now_ms: int, timeout_s: int, admin_fabric_index: int | None = None,
                   admin_vendor_id: int | None = None) -> None:
        self._open(now_ms, timeout_s, self.basic, self.basic_discriminator, WindowStatus.kBasicWindowOpen,
                   admin_fabric_index, admin_vendor_id)

    def open_enhanced(self, now_ms: int, timeout_s: int, pake: PakeParameters, discriminator: int,
                      admin_fabric_index: int | None = None, admin_vendor_id: int | None = None) -> None:
        self._open(now_ms, timeout_s, pake, discriminator, WindowStatus.kEnhancedWindowOpen,
                   admin_fabric_index, admin_vendor_id)

    def close(self) -> None:
        self._reset()

    def pase_verifier(self) -> PakeParameters | None:
        """The verifier PASE must use now, or None while the window is closed."""
        return self._pake if self.is_open else None

    @property
    def discriminator(self) -> int | None:
        """The discriminator to advertise while open (an enhanced window brings its own)."""
        return self._discriminator if self.is_open else None

    def record_failure(self) -> bool:
        """Count a failed PASE attempt; True when this closed the window."""
        if not self.is_open:
            return False
        self.failed_attempts += 1
        if self.failed_attempts >= self.MAX_FAILED_ATTEMPTS:
            self.close()
            return True
        return False

    def expired(self, now_ms: int) -> bool:
        return self.is_open and self.expires_ms is not None and now_ms >= self.expires_ms

    def next_timer(self) -> int | None:
        return self.expires_ms if self.is_open else None


# --- events for the runtime --------------------------------------------------------------

@dataclass(frozen=True)
class NodeEvent:
    """Something the runtime reacts to (advertise, withdraw, close sessions).

    kind: "fabric_added" (AddNOC, uncommitted), "fabric_updated" (UpdateNOC),
    "commissioning_complete" (close PASE sessions; advertise the operational instance),
    "fabric_removed" (close that fabric's sessions; withdraw its operational instance),
    "failsafe_expired" (close PASE sessions; `removed` lists the fabrics rolled back),
    "window_changed" (advertise or withdraw `_matterc._udp` with `window.discriminator`).
    """
    kind: str
    fabric_index: int | None = None
    removed: tuple[int, ...] = ()
