"""The node's storage: crash-safe file writes, and the blob stores state machines write through."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Protocol


def write_atomic(path: Path, data: bytes) -> None:
    """Replace `path` with `data` so that readers and crashes never see half a file.

    Temp file in the same directory (mkstemp creates it mode 0600: keys live here), fsync,
    os.replace, then fsync the directory so the rename itself is durable.
    """
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


class Storage(Protocol):
    """Where a state machine keeps one blob (the fabric table): it never touches files itself."""

    name: str   # names the place in error messages

    def load(self) -> bytes | None:
        """The stored bytes, or None when nothing was stored yet."""

    def save(self, data: bytes) -> None:
        """Replace the stored bytes (all or nothing)."""


class FileStorage:
    """A blob in one file, written atomically (`write_atomic`)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.name = str(path)

    def load(self) -> bytes | None:
        return self.path.read_bytes() if self.path.exists() else None

    def save(self, data: bytes) -> None:
        write_atomic(self.path, data)


class MemoryStorage:
    """A blob in memory: for tests and for nodes that should forget everything on exit."""

    def __init__(self, data: bytes | None = None, name: str = "memory") -> None:
        self.data = data
        self.name = name

    def load(self) -> bytes | None:
        return self.data

    def save(self, data: bytes) -> None:
        self.data = bytes(data)
