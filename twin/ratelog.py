"""Rate-limited logging for whatever a peer, a client or a file can make happen again and again.

A line per rejected datagram or refused request lets anyone on the LAN write the log full (issue
#32: 11 MB for 74,000 rejected handshake messages). `RateLimitedLog` logs the first occurrence of
each kind at once, then at most one line per kind and interval, saying how many were suppressed.
Kinds are a few fixed strings (never peer data), so the table stays small.

The caller passes the time (ms, any monotonic source): sans-IO code gives its `now_ms`, so the
simulation still never reads the wall clock.
"""
from __future__ import annotations

import logging
from typing import Any

__all__ = ["RateLimitedLog", "LOG_INTERVAL_MS"]

#: At most one line per kind this often.
LOG_INTERVAL_MS = 10_000.0


class RateLimitedLog:
    def __init__(self, logger: logging.Logger, interval_ms: float = LOG_INTERVAL_MS):
        self.logger = logger
        self.interval_ms = interval_ms
        self._kinds: dict[str, list[float]] = {}   # kind -> [last logged at, suppressed since]

    def log(self, level: int, kind: str, now_ms: float, message: str, *args: Any) -> bool:
        """Log `message % args` unless a line of `kind` went out within the interval (then count
        it); True if it was logged."""
        if not self.logger.isEnabledFor(level):
            return False
        entry = self._kinds.get(kind)
        if entry is not None and now_ms - entry[0] < self.interval_ms:
            entry[1] += 1
            return False
        suppressed = int(entry[1]) if entry is not None else 0
        self._kinds[kind] = [now_ms, 0]
        if suppressed:
            message += f" ({suppressed} more like it since the last such line, not logged)"
        self.logger.log(level, message, *args)
        return True

    def info(self, kind: str, now_ms: float, message: str, *args: Any) -> bool:
        return self.log(logging.INFO, kind, now_ms, message, *args)

    def warning(self, kind: str, now_ms: float, message: str, *args: Any) -> bool:
        return self.log(logging.WARNING, kind, now_ms, message, *args)
