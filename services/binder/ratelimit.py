"""Per-object rate limit of FailedScheduling reports, so a waiting pod causes no event storm.

Layer: binder, pure: the caller passes the time; no I/O, no clock. State lives in memory only
(a restarted binder may repeat one report per pod, which is harmless).
"""

from __future__ import annotations

from dataclasses import dataclass

PRUNE_EVERY = 1024
"""Expired records are dropped every this many records (memory bounded by the active set)."""


@dataclass(frozen=True)
class _Report:
    message: str
    at_seconds: float


class ReportLimiter:
    """Allows a report for a key at most once per `interval_seconds`, unless its message changed.

    Units: `interval_seconds` and every `now_seconds` in seconds of one monotonic clock.
    """

    def __init__(self, interval_seconds: float) -> None:
        self._interval_seconds = interval_seconds
        self._last: dict[str, _Report] = {}
        self._records = 0

    def __len__(self) -> int:
        return len(self._last)

    def is_allowed(self, key: str, message: str, now_seconds: float) -> bool:
        """Whether a report of `message` about `key` may be made now."""
        last = self._last.get(key)
        if last is None or last.message != message:
            return True
        return now_seconds - last.at_seconds >= self._interval_seconds

    def record(self, key: str, message: str, now_seconds: float) -> None:
        """Remember that `message` was reported about `key` at `now_seconds`."""
        self._last[key] = _Report(message, now_seconds)
        self._records += 1
        if self._records % PRUNE_EVERY == 0:
            self.prune(now_seconds)

    def forget(self, key: str) -> None:
        """Drop the record of `key` (its pod was bound or deleted)."""
        self._last.pop(key, None)

    def prune(self, now_seconds: float) -> None:
        """Drop every record older than the interval (such keys are allowed anyway)."""
        self._last = {
            key: report
            for key, report in self._last.items()
            if now_seconds - report.at_seconds < self._interval_seconds
        }
