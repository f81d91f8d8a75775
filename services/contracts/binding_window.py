"""The binding window planner and binder agree on: how long past a placement's deadline each
may still act on it.

Layer: contracts (constants shared by the planner core and the binder, so the rule below holds
by construction rather than by two numbers kept equal by hand).

Rule: the binder starts no bind later than `BIND_GRACE_MS` after a placement's deadline (time
queued before binding started is not charged, see `binder.placing`); the planner releases the
reservations of a placement neither confirmed nor rolled back only `RELEASE_GRACE_MS` after
the deadline. `RELEASE_GRACE_MS - BIND_GRACE_MS` (`ROLLBACK_MARGIN_MS`) leaves the binder time
to write and report the rollback of binds it started last, so the planner never gives away
capacity that a placement still binding holds. Likewise the binder declares a placement bound
no later than `CONFIRM_GRACE_MS` after its deadline: a GroupBound must reach the planner while
it still holds the placement (a later one would find its capacity given to another group), so
past that the binder rolls the attempt back instead.
"""

from __future__ import annotations

BIND_GRACE_MS = 60_000
"""No bind starts later than this after a placement's deadline. Units: milliseconds."""
ROLLBACK_MARGIN_MS = 30_000
"""Time left, after the last bind may start, to roll back and report. Units: milliseconds."""
RELEASE_GRACE_MS = BIND_GRACE_MS + ROLLBACK_MARGIN_MS
"""The planner releases an unconfirmed placement this long after its deadline (90 s)."""
CONFIRM_GRACE_MS = RELEASE_GRACE_MS - 10_000
"""The binder declares a placement bound no later than this after its deadline (80 s), leaving
10 s for the GroupBound to reach the planner before it releases the placement. Units: ms."""
