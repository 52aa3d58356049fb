"""Mode Select cluster server (Matter 1.4, revision 2): a device's own list of modes (a coffee
machine's drinks, a lamp's programmes), not a Mode Base cluster.

ChangeToMode makes a supported mode current (an unsupported one is CONSTRAINT_ERROR, nothing
changes); StartUpMode (writable, null keeps the mode) applies at power-up.
"""
from __future__ import annotations

from typing import Any

from chip.clusters.Types import NullValue

from clusters.base import Clusters, ClusterServer, MatterError, Status

MS = Clusters.ModeSelect


class ModeSelectServer(ClusterServer):
    cluster = MS
    revision = 2
    attributes = ("Description", "StandardNamespace", "SupportedModes", "CurrentMode", "StartUpMode")
    writable = frozenset({"StartUpMode"})
    commands = ("ChangeToMode",)
    notes = ("ChangeToMode needs a mode in SupportedModes (else CONSTRAINT_ERROR).",)

    def __init__(self, description: str = "Mode", labels: tuple[str, ...] | list[str] = ("Normal", "Eco"),
                 **initial: Any):
        if not 2 <= len(labels) <= 255 or len(set(labels)) != len(labels) \
                or not all(isinstance(x, str) and 0 < len(x) <= 64 for x in labels):
            raise MatterError(Status.CONSTRAINT_ERROR,
                              "ModeSelect: give 2..255 distinct mode labels of 1..64 characters")
        self._labels, self._description = tuple(labels), description[:64]
        super().__init__(**initial)

    def defaults(self) -> dict[str, Any]:
        return {"Description": self._description, "StandardNamespace": NullValue,
                "SupportedModes": [MS.Structs.ModeOptionStruct(label=label, mode=i, semanticTags=[])
                                   for i, label in enumerate(self._labels)],
                "CurrentMode": 0, "StartUpMode": NullValue}

    def _check(self, what: str, mode: Any) -> None:
        # SupportedModes as served (a product's own, when a clone of one uses this server)
        modes = self.get("SupportedModes")
        if mode not in {m.mode for m in modes}:
            raise MatterError(Status.CONSTRAINT_ERROR, f"{what}={mode} is not a supported mode; supported: "
                              + ", ".join(f"{m.mode} ({m.label})" for m in modes))

    def validate_write(self, name: str, value: Any) -> None:
        if name == "StartUpMode" and value is not NullValue and value is not None:
            self._check("StartUpMode", value)

    def ChangeToMode(self, request: Any) -> None:
        self._check("newMode", request.newMode)
        self.set("CurrentMode", int(request.newMode))

    def start_up(self) -> None:
        start = self._values.get("StartUpMode", NullValue)
        if start is not NullValue and start is not None:
            self._values["CurrentMode"] = start
