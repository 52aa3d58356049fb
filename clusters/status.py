"""Interaction Model status codes (Matter Core spec, "Status Codes").

`chip.clusters.Objects` carries the data model but not the IM status table, so the
codes live here, once, under their spec names.
"""
from __future__ import annotations

import enum


class Status(enum.IntEnum):
    SUCCESS = 0x00
    FAILURE = 0x01
    INVALID_SUBSCRIPTION = 0x7D
    UNSUPPORTED_ACCESS = 0x7E
    UNSUPPORTED_ENDPOINT = 0x7F
    INVALID_ACTION = 0x80
    UNSUPPORTED_COMMAND = 0x81
    INVALID_COMMAND = 0x85
    UNSUPPORTED_ATTRIBUTE = 0x86
    CONSTRAINT_ERROR = 0x87
    UNSUPPORTED_WRITE = 0x88
    RESOURCE_EXHAUSTED = 0x89
    NOT_FOUND = 0x8B
    UNREPORTABLE_ATTRIBUTE = 0x8C
    INVALID_DATA_TYPE = 0x8D
    UNSUPPORTED_READ = 0x8F
    DATA_VERSION_MISMATCH = 0x92
    TIMEOUT = 0x94
    BUSY = 0x9C
    ACCESS_RESTRICTED = 0x9D
    UNSUPPORTED_CLUSTER = 0xC3
    NO_UPSTREAM_SUBSCRIPTION = 0xC5
    NEEDS_TIMED_INTERACTION = 0xC6
    UNSUPPORTED_EVENT = 0xC7
    PATHS_EXHAUSTED = 0xC8
    TIMED_REQUEST_MISMATCH = 0xC9
    FAILSAFE_REQUIRED = 0xCA
    INVALID_IN_STATE = 0xCB
    NO_COMMAND_RESPONSE = 0xCC


class MatterError(Exception):
    """A failed read, write or invoke: a Matter status plus a sentence for humans.

    `cluster_status` carries a cluster-specific status code where the spec defines one
    (for example ModeBase's ChangeToModeResponse or OperationalState's ErrorStateID).
    """

    def __init__(self, status: Status, message: str, cluster_status: int | None = None):
        super().__init__(f"{status.name}: {message}")
        self.status = status
        self.message = message
        self.cluster_status = cluster_status
