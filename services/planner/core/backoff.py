"""Per-group backoff after a failed attempt: exponential, capped, timed only by events.

Layer: planner core (pure). A group fails when it is rolled back, when its placement expires
unconfirmed, or when it is found unschedulable; it is then skipped until its retry time.
"""

from __future__ import annotations

from services.planner.core.config import PlannerConfig
from services.planner.core.state import GroupState, PlannerState


def backoff_ms(failures: int, config: PlannerConfig) -> int:
    """Backoff after `failures` consecutive failures: initial * 2^(failures-1), capped.

    Units: milliseconds (config in seconds).
    """
    if failures <= 0:
        return 0
    seconds = config.backoff_initial_seconds * (1 << min(failures - 1, 62))
    return round(min(seconds, config.backoff_max_seconds) * 1000)


def retry_at_ms(group: GroupState, config: PlannerConfig) -> int | None:
    """When the group may be tried again, or None if it has not failed."""
    if group.failed_at_ms is None or group.failures <= 0:
        return None
    return group.failed_at_ms + backoff_ms(group.failures, config)


def is_backed_off(group: GroupState, now_ms: int, config: PlannerConfig) -> bool:
    """Whether the group must still wait at `now_ms` (event time)."""
    retry = retry_at_ms(group, config)
    return retry is not None and now_ms < retry


def next_wakeup_ms(state: PlannerState, config: PlannerConfig) -> int | None:
    """The earliest future time at which planning could decide something new without events.

    Shapes: min over backed-off groups' retry times, in-flight placements' release times
    (deadline + grace) and the times gangs short of quorum may be told so
    (`GroupState.quorum_told_from_ms`); None when nothing is waiting on time. Lets a simulator
    or a quiet cluster skip straight to it.
    """
    now = state.now_ms
    times = [retry for group in state.groups.values()
             if (retry := retry_at_ms(group, config)) is not None and retry > now]
    grace_ms = round(config.release_grace_seconds * 1000)
    times.extend(in_flight.deadline_ms + grace_ms for in_flight in state.placements.values())
    times.extend(told for group in state.groups.values()
                 if (told := group.quorum_told_from_ms) is not None and told > now)
    return min(times) if times else None
