"""What a Matter node advertises over DNS-SD (Core spec 4.3), as plain data.

Instance name, TXT keys and subtypes are pure functions of a `Commissionable` or `Operational`
record, testable without a network; the node glue's `Advertiser` publishes them.
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Mrp", "Commissionable", "Operational", "Service", "COMMISSIONABLE_TYPE", "OPERATIONAL_TYPE",
           "operational_instance"]

COMMISSIONABLE_TYPE = "_matterc._udp.local."
OPERATIONAL_TYPE = "_matter._tcp.local."


@dataclass(frozen=True)
class Mrp:
    """MRP parameters advertised as SII / SAI / SAT (milliseconds), and an ICD's `ICD` key (None: not
    a LIT-capable ICD; 0 operating as SIT; 1 as LIT, which advertises no SII: it is not reachable at
    a polling interval, a client waits for its Check-In)."""
    idle_interval_ms: int = 500
    active_interval_ms: int = 300
    active_threshold_ms: int = 4000
    icd: int | None = None

    def txt(self) -> dict[str, str]:
        txt = {"SII": str(self.idle_interval_ms), "SAI": str(self.active_interval_ms),
               "SAT": str(self.active_threshold_ms)}
        if self.icd is not None:
            txt["ICD"] = str(self.icd)
            if self.icd == 1:
                del txt["SII"]
        return txt


@dataclass(frozen=True)
class Commissionable:
    """`_matterc._udp`: a node with an open (CM=1/2) or closed (CM=0) commissioning window."""
    port: int
    discriminator: int                       # 12-bit long discriminator
    vendor_id: int
    product_id: int
    device_type: int
    commissioning_mode: int = 1              # 0 closed, 1 basic (passcode), 2 enhanced
    device_name: str | None = None
    pairing_hint: int = 33                   # bit 0 power cycle, bit 5 see device manual
    pairing_instruction: str | None = None
    mrp: Mrp = Mrp()

    def __post_init__(self) -> None:
        _check_range("port", self.port, 1, 0xFFFF)
        _check_range("discriminator", self.discriminator, 0, 0xFFF)
        _check_range("vendor_id", self.vendor_id, 0, 0xFFFF)
        _check_range("product_id", self.product_id, 0, 0xFFFF)
        _check_range("device_type", self.device_type, 0, 0xFFFFFFFF)
        _check_range("commissioning_mode", self.commissioning_mode, 0, 2)
        if self.device_name is not None and len(self.device_name.encode()) > 32:
            raise ValueError(f"device_name {self.device_name!r} is longer than 32 bytes")

    service_type = COMMISSIONABLE_TYPE

    def key(self) -> tuple[object, ...]:
        return ("commissionable",)           # one per node; the instance name is random

    def txt(self) -> dict[str, str]:
        txt = {"D": str(self.discriminator), "CM": str(self.commissioning_mode),
               "VP": f"{self.vendor_id}+{self.product_id}", "DT": str(self.device_type)}
        if self.device_name is not None:
            txt["DN"] = self.device_name
        txt.update(self.mrp.txt())
        txt["PH"] = str(self.pairing_hint)
        if self.pairing_instruction is not None:
            txt["PI"] = self.pairing_instruction
        return txt

    def subtypes(self) -> list[str]:
        subs = [f"_L{self.discriminator}", f"_S{self.discriminator >> 8}", f"_V{self.vendor_id}"]
        if self.commissioning_mode:
            subs.append("_CM")
        return [f"{s}._sub.{COMMISSIONABLE_TYPE}" for s in subs]


@dataclass(frozen=True)
class Operational:
    """`_matter._tcp`: a node commissioned into a fabric, `<CFID>-<NODEID>` in upper hex."""
    port: int
    compressed_fabric_id: bytes              # 8 bytes
    node_id: int
    mrp: Mrp = Mrp()

    def __post_init__(self) -> None:
        _check_range("port", self.port, 1, 0xFFFF)
        if len(self.compressed_fabric_id) != 8:
            raise ValueError(f"compressed_fabric_id must be 8 bytes, got "
                             f"{len(self.compressed_fabric_id)}")
        _check_range("node_id", self.node_id, 1, 0xFFFFFFEFFFFFFFFF)  # operational node ids

    service_type = OPERATIONAL_TYPE

    def key(self) -> tuple[object, ...]:
        return ("operational", self.compressed_fabric_id, self.node_id)

    def instance(self) -> str:
        return operational_instance(self.compressed_fabric_id, self.node_id)

    def txt(self) -> dict[str, str]:
        return self.mrp.txt()

    def subtypes(self) -> list[str]:
        return [f"_I{self.compressed_fabric_id.hex().upper()}._sub.{OPERATIONAL_TYPE}"]


Service = Commissionable | Operational


def operational_instance(compressed_fabric_id: bytes, node_id: int) -> str:
    """The `_matter._tcp` instance name of a node on a fabric (what operational discovery looks up)."""
    return f"{compressed_fabric_id.hex().upper()}-{node_id:016X}"


def _check_range(name: str, value: int, low: int, high: int) -> None:
    if not isinstance(value, int) or not low <= value <= high:
        raise ValueError(f"{name} {value!r} is out of range {low}..{high}")
