"""Per-group backoff after a failed attempt, timed only by events.

Layer: planner core (pure). A group fails when it is rolled back, when its placement expires
unconfirmed, or when it is found unschedulable; it is then skipped until its retry time: its
backoff (exponential, capped) after a rollback or expiry; after "found unschedulable", the
first change that may let it fit (`early_retry_at_ms`, paced 1 s doubling to 10 s), else
kube-scheduler's unschedulable-pool flush (`UNSCHEDULABLE_FLUSH_MS`, 5 minutes).
"""

from __future__ import annotations

import math

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
    wait still comes 1 s after its last attempt. Its flush (`retry_at_ms`) does not count: it
    is not an early retry. Units: milliseconds.
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


UNSCHEDULABLE_FLUSH_MS = 5 * 60 * 1000
"""How long after it was found unschedulable a gang is tried again with nothing in the cluster
changed that it may fit after (milliseconds): kube-scheduler's podMaxInUnschedulablePodsDuration
(5 minutes), after which a pod left in the unschedulable pool is flushed back to the queue
(`flushUnschedulablePodsLeftover`). Until then only the changes that may let it fit retry it
(`early_retry_at_ms`), as only the events a failing plugin registered (with their queueing
hints) move a kube-scheduler pod back; the flush is the safety net for any change neither
models (a lower-priority pod bound that preemption could now evict, a PodDisruptionBudget
relaxed)."""


def retry_at_ms(group: GroupState, config: PlannerConfig) -> int | None:
    """When the group may be tried again without any event, or None if it has not failed.

    A group rolled back or whose placement expired waits out its backoff (`backoff_ms`), as a
    kube-scheduler pod that failed with an error waits in the backoff queue. A group found
    unschedulable (`GroupState.may_retry_early`) waits at least `UNSCHEDULABLE_FLUSH_MS` after
    that attempt (`failed_at_ms`, which its failed early retries leave as it is, so the time
    told with its Rejection does not move), or its backoff when that is longer, but no later
    than when it starts starving (`starving_from_ms`); with the backoff off
    (`backoff_initial_seconds` 0) it is tried every round, as configured. Units: UTC epoch
    milliseconds of event time.
    """
    failed = group.failed_at_ms
    if failed is None or group.failures <= 0:
        return None
    wait = backoff_ms(group.failures, config)
    if not group.may_retry_early or wait <= 0:
        return failed + wait
    retry = failed + max(wait, UNSCHEDULABLE_FLUSH_MS)
    starving = starving_from_ms(group, config)
    if starving is not None and failed < starving:
        retry = min(retry, starving)  # from then on it may hold capacity: tried and told so
    return retry


def starving_from_ms(group: GroupState, config: PlannerConfig) -> int | None:
    """When the group starts starving (`starvation.is_starving`: `starvation_seconds` after
    it began waiting unplaced), or None while it is not waiting. A gang found unschedulable
    before then is tried again at that moment, as it was on its timed backoff before core
    revision 37: that attempt finds the capacity it may now hold and tells it. Units: UTC epoch
    milliseconds of event time."""
    since = group.pending_since_ms
    if since is None:
        return None
    return since + math.ceil(config.starvation_seconds * 1000)


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
