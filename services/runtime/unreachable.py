"""Saying why a server cannot be reached, in words, and how often to say it again.

Layer: runtime. Pure; never does I/O. Shared by the connections to NATS (`services.bus`) and to
the API server (`services.kube`), so both read alike: `cannot reach NATS at <url>: connection
refused; ...` and `cannot reach the API server at <url>: connection refused; ...`.
"""

from __future__ import annotations

import os

REPEATS_BETWEEN_LOGS = 10
"""A failure of one kind is logged at its first time, then every this-many-th time."""


def reason(error: BaseException) -> str:
    """Why a connection attempt failed, in words: `connection refused` (the system's text
    for an errno, not asyncio's `Connect call failed (...)`), `timed out`, a resolver's text
    (`name or service not known`), else the error's own message (several addresses failing)."""
    if isinstance(error, TimeoutError):
        return "timed out"
    if isinstance(error, OSError) and error.errno is not None and error.errno > 0:
        return os.strerror(error.errno).lower()
    if isinstance(error, OSError) and error.strerror:  # a resolver's error (negative errno)
        return error.strerror.lower()
    return str(error) or type(error).__name__


class Repeats:
    """Counts failures per kind, to log the first of each kind and then every `every`-th.

    Counted per kind, not in a row: servers or requests failing each in their own way
    alternate kinds on every retry, and would otherwise be logged every time.
    """

    def __init__(self, every: int = REPEATS_BETWEEN_LOGS) -> None:
        self._every = every
        self._counts: dict[str, int] = {}

    def count(self, failure_kind: str) -> int | None:
        """Count one failure of `failure_kind`: how many there were so far (1 for the first)
        when this one is to be logged, else None."""
        total = self._counts.get(failure_kind, 0) + 1
        self._counts[failure_kind] = total
        return total if (total - 1) % self._every == 0 else None

    def clear(self) -> bool:
        """Forget every count (the server was reached); whether any failure was counted."""
        counted = bool(self._counts)
        self._counts.clear()
        return counted
