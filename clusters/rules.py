"""Cross-attribute dependencies between clusters of one device, in one place.

SimuHome devices have rules that span clusters (the AC must be on before its fan speed
changes; a running dishwasher rejects a mode change). Each rule names the device types it
applies to, the operation it guards, the condition and the Matter status it answers
with. `get_cluster_doc` lists them, so agents can read the same table the twin enforces.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from .status import MatterError, Status


@dataclass(frozen=True)
class Rule:
    device_types: tuple[str, ...]     # device type keys; () means every device type
    cluster: str                      # spec cluster name the guarded operation targets
    operations: tuple[str, ...]       # command or attribute names guarded
    allowed: Callable[[Any, Any], bool]  # (device, value/fields) -> may it proceed?
    status: Status
    explanation: str                  # shown to the agent, and in docs


RULES: list[Rule] = []


def _applies(rule: Rule, device: Any, server: Any, name: str) -> bool:
    return ((not rule.device_types or device.type.key in rule.device_types)
            and rule.cluster == server.name and name in rule.operations)


def check_write(device: Any, server: Any, name: str, value: Any) -> None:
    for rule in RULES:
        if _applies(rule, device, server, name) and not rule.allowed(device, value):
            raise MatterError(rule.status, rule.explanation)


def check_invoke(device: Any, server: Any, name: str, fields: Any) -> None:
    for rule in RULES:
        if _applies(rule, device, server, name) and not rule.allowed(device, fields):
            raise MatterError(rule.status, rule.explanation)
