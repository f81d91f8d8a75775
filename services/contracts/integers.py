"""Integer ranges every event and decision field is checked against when it is decoded.

Layer: contracts (pure). JSON integers have no size: a message carrying 2**63 decoded, and the
planner then failed to store it (SQLite and PostgreSQL columns are 64-bit), restarting for ever
on the same message. Every integer field is therefore a 64-bit integer (`Int64`) and every event
or decision time a UTC epoch millisecond between 1970 and the end of year 9999 (`EpochMs`), the
range of a Kubernetes timestamp after 1970; a message outside them is a poisoned message
(`codec.PoisonedMessage`), dead-lettered like any other that does not decode.
"""

from __future__ import annotations

from typing import Annotated

import msgspec

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
MAX_EPOCH_MS = 253_402_300_799_999
"""9999-12-31T23:59:59.999Z in UTC epoch milliseconds, the last instant RFC 3339 (and so a
Kubernetes timestamp) can write."""

Int64 = Annotated[int, msgspec.Meta(ge=INT64_MIN, le=INT64_MAX)]
"""An integer a 64-bit column (and NumPy's int64) holds."""

EpochMs = Annotated[int, msgspec.Meta(ge=0, le=MAX_EPOCH_MS)]
"""A time in UTC epoch milliseconds, from 1970 to the end of year 9999."""
