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


EARLY_RETRY_MAX_MS = 10_000
"""The longest wait between two early retries of a gang found unschedulable (milliseconds):
kube-scheduler's podMaxBackoffSeconds (10 s), the most a pod moved by a cluster event waits in
its backoff queue."""


def early_retry_ms(early_retries: int, config: PlannerConfig) -> int:
    """How long after its last attempt a gang found unschedulable may be tried again because
    capacity freed, once `early_retries` such retries failed since it was last placed: the
    backoff of `early_retries + 1` failures (1 s doubling), at most `EARLY_RETRY_MAX_MS`.

    Mirrors kube-scheduler, where a cluster event moves an unschedulable pod to the backoff
    queue while its backoff (initial * 2^(attempts-1), capped at 10 s) since its last attempt
    runs: a gang that never fits is tried at most every 10 s however often capacity frees
    (reference C.2: never retried in a tight loop), while the first retry after a long quiet
    wait still comes 1 s after its last attempt. Its timed retries (its backoff proper, up to
    `backoff_max_seconds`) do not count: kube-scheduler makes none. Units: milliseconds.
    """
    return min(backoff_ms(early_retries + 1, config), EARLY_RETRY_MAX_MS)


def early_retry_at_ms(group: GroupState, freed_at: int, config: PlannerConfig) -> int | None:
    """When the group may be retried early (`early_retry_ms` after its last attempt), or None
    unless it was found unschedulable and, after that attempt in event order (moments,
    `state.next_moment`), capacity freed (at moment `freed_at`,
    `PlannerState.capacity_freed_at`) or a counted pod changed that may let a pending member's
    pod affinity or topology spread pass (at moment `group.woken_at`, `wakes`).

    One such change gives at most one early retry: the retry is an attempt after it, as a
    kube-scheduler pod moved by an event is tried once and, failing, waits for the next event
    in the unschedulable pool. Units: UTC epoch milliseconds of event time."""
    last = group.last_attempt_ms
    if (not group.may_retry_early or last is None
            or max(freed_at, group.woken_at) <= group.last_attempt_at):
        return None
    return last + early_retry_ms(group.early_retries, config)


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

    Shapes: min over backed-off groups' retry times and early retry times
    (`early_retry_at_ms`, before their backoff ends), in-flight placements' release times
    (deadline + grace) and the times gangs short of quorum may be told so
    (`GroupState.quorum_told_from_ms`); None when nothing is waiting on time. Lets a simulator
    or a quiet cluster skip straight to it.
    """
    now = state.now_ms
    times = [retry for group in state.groups.values()
             if (retry := retry_at_ms(group, config)) is not None and retry > now]
    times.extend(early for group in state.groups.values()
                 if (early := early_retry_at_ms(group, state.capacity_freed_at, config))
                 is not None and early > now and (retry_at_ms(group, config) or 0) > early)
    grace_ms = round(config.release_grace_seconds * 1000)
    times.extend(in_flight.deadline_ms + grace_ms for in_flight in state.placements.values())
    times.extend(told for group in state.groups.values()
                 if (told := group.quorum_told_from_ms) is not None and told > now)
    return min(times) if times else None
