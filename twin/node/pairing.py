"""Pairing codes of the served nodes, and which commissioning windows may be open together."""
from __future__ import annotations

import random
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from chip.clusters import Objects as Clusters

from matter_protocol.pairing import DiscoveryCapabilities, SetupPayload, passcode_and_discriminator
from twin.node.home_view import NodeHome
from twin.room_sensors import room_sensor_devices

# A manual code carries 4 bits of the discriminator: at most this many open windows can each
# be found by their own manual code.
SHORT_DISCRIMINATORS = 16


@dataclass(frozen=True)
class Pairing:
    """What a node's commissioner needs, and what the node keeps to check it."""
    device_id: str
    passcode: int
    discriminator: int
    vendor_id: int
    product_id: int

    @property
    def setup_payload(self) -> SetupPayload:
        return SetupPayload(passcode=self.passcode, discriminator=self.discriminator,
                            vendor_id=self.vendor_id, product_id=self.product_id,
                            discovery=DiscoveryCapabilities.ON_NETWORK)

    @property
    def manual_code(self) -> str:
        return self.setup_payload.manual_code()

    @property
    def qr_code(self) -> str:
        return self.setup_payload.qr_code()

    def to_json(self) -> dict[str, Any]:
        return {"device": self.device_id, "manual_code": self.manual_code, "qr_code": self.qr_code,
                "discriminator": self.discriminator, "passcode": self.passcode,
                "vendor_id": self.vendor_id, "product_id": self.product_id}


def _basic_information(device: Any, attribute: str) -> Any:
    return device.endpoint(0).server(Clusters.BasicInformation).read(attribute)


def home_pairings(home: NodeHome, seed: int | None = None,
                  devices: Mapping[str, Any] | None = None) -> dict[str, Pairing]:
    """Each device's passcode and discriminator, from the home seed and device id.

    `devices` (id -> Device) are the nodes to pair, default the home's devices; see
    `served_devices` for what the runtime serves.

    A device's codes depend only on (seed, device id) and the ids before it in `pairing_order`,
    so adding a device moves no earlier device's codes. Two rules move a drawn discriminator:
    - the first 16 nodes in that order get 16 different short discriminators (its upper 4 bits,
      all a manual code carries), so a home of up to 16 nodes can open every window at once and
      each manual code still finds exactly its own node (the lower 8 bits are kept);
    - no two nodes share a 12-bit discriminator (a QR code must find exactly one node): a clash
      moves the later id to the next free value.
    """
    seed = home.seed if seed is None else int(seed)
    if devices is None:
        devices = home.devices
    taken: set[int] = set()
    shorts: set[int] = set()
    found: dict[str, Pairing] = {}
    for device_id in pairing_order(home, devices):
        device = devices[device_id]
        # A str seed is hashed with SHA-512 by `random`: stable across runs and processes.
        rng = random.Random(f"matter-twin pairing|{seed}|{device_id}")
        passcode, discriminator = passcode_and_discriminator(rng)
        if len(shorts) < SHORT_DISCRIMINATORS:
            short = discriminator >> 8
            while short in shorts:
                short = (short + 1) % SHORT_DISCRIMINATORS
            discriminator = (short << 8) | (discriminator & 0xFF)
        while discriminator in taken:
            discriminator = (discriminator + 1) & 0xFFF
        taken.add(discriminator)
        shorts.add(discriminator >> 8)
        found[device_id] = Pairing(device_id, passcode, discriminator,
                                   int(_basic_information(device, "VendorID")),
                                   int(_basic_information(device, "ProductID")))
    return {device_id: found[device_id] for device_id in devices}  # the given order


def pairing_order(home: NodeHome, devices: Iterable[str]) -> list[str]:
    """The order codes are assigned in, and windows opened at start: the home's devices by id,
    then the extra nodes (room sensors) by id, so those never move a device's codes."""
    return sorted(devices, key=lambda i: (i not in home.devices, i))


def served_devices(home: NodeHome, room_sensors: bool = True) -> dict[str, Any]:
    """The devices served as nodes: the home's, then one sensor node per room (ids
    `sensors@<room>`, twin/room_sensors.py), so a controller reads rooms as real sensors."""
    devices = dict(home.devices)
    if room_sensors:
        devices.update((d.id, d) for d in room_sensor_devices(home).values())
    return devices


def device_name(home: NodeHome, device: Any) -> str:
    """A node's display name: the home's name for its devices, NodeLabel for the others."""
    if device.id in home.devices:
        return str(home.device_info(device.id).get("name") or device.type.label)
    return str(_basic_information(device, "NodeLabel") or device.type.label)




@dataclass(frozen=True)
class WindowPlan:
    """Which of the asked-for windows open (`opened`, in order) and which stay closed because an
    earlier one holds their short discriminator (`held`: node -> the node holding it)."""
    opened: tuple[str, ...]
    held: dict[str, str]
    asked: int

    def notice(self) -> str:
        """One line for the user when some stay closed ("" when all opened)."""
        if not self.held:
            return ""
        more = (f"{self.asked} windows asked for, but a manual code carries only 4 bits of the discriminator, "
                f"so at most {SHORT_DISCRIMINATORS} can be open with every manual code reaching its own node. "
                if self.asked > SHORT_DISCRIMINATORS else "")
        return (f"{more}{len(self.held)} commissioning window(s) stay closed, each sharing its manual code's "
                f"short discriminator with an open one: {', '.join(sorted(self.held))}. "
                "Open one with `twin pair DEVICE`, or use its QR code then.")


def plan_windows(pairings: dict[str, Pairing], wanted: list[str],
                 already_open: dict[str, int] | None = None) -> WindowPlan:
    """Open the windows of `wanted` in order, skipping a node whose short discriminator an open
    window (one of `already_open`, node -> discriminator, or an earlier one of `wanted`) has:
    its manual code would find both nodes, and a controller may run PASE with the wrong one."""
    holders = {d >> 8: node for node, d in (already_open or {}).items()}
    opened: list[str] = []
    held: dict[str, str] = {}
    for node in wanted:
        short = pairings[node].discriminator >> 8
        if short in holders and holders[short] != node:
            held[node] = holders[short]
            continue
        holders[short] = node
        opened.append(node)
    return WindowPlan(tuple(opened), held, len(wanted))
