"""PodGroup status derived from its members: phase, counts, occupiedBy, condition.

Layer: planner core (pure). Phase rules as the scheduler-plugins PodGroup controller, later rule
winning: fewer pods than minMember → Pending; running+succeeded < min → Scheduling; ≥ min →
Running; failed > 0 and running+succeeded < min ≤ failed+running+succeeded → Failed; succeeded ≥
min → Finished. gangsched differs in two places: a failed member makes the group Failed only when
running + succeeded drops below minMember (upstream reports Failed at the first failure), and
not while its members that did not fail are enough for minMember, i.e. its failed members were
replaced (a Job recreates a failed index): the group is Scheduling while the replacements are
placed, Running once they run (upstream reports Failed, and Failed is final there; see
docs/design-notes.md, "Members replaced after the gang ran"). Upstream's controller never
leaves Failed or Finished; gangsched derives the phase from the members each time a member
of ours waits to run (unbound and not terminating: a replacement, or a new run of the group),
and otherwise keeps a Failed or Finished status as it was told: finished pods deleted (a Job's
TTL, pod garbage collection) do not turn an ended run back into a Pending one, nor do members
of that run still running or terminating. A PodGroup made anew (another uid) starts with no
status told (`apply`).

The `Scheduled` condition explains the latest scheduling result, first match wins: the gang's
members were evicted by a Preemption and it was not placed since (Preempted, naming the
preemptor); enough members bound for minMember, as quorum counts them (ours, not terminating;
Succeeded once the gang ran) (Scheduled; a rejection of the members beyond
minMember, which says minMember was reached, is its message: Coscheduling does not reject a
group whose minMember are assigned); a placement being bound (Binding: it holds what minMember
needs, so members told to wait meanwhile are beyond minMember); the last rejection told
(Preempting while capacity is nominated for the gang, else Unschedulable: no fit, no quorum,
backed off after a rollback, ...); enough members bound, counted or not (Scheduled); else
nothing to do
or tell for now (Waiting: too few members bound, and its members still arriving, not told yet,
or none left, e.g. all deleted).

A native PodGroup all of whose pods are another scheduler's is not told (`plan.is_others`).
"""

from __future__ import annotations

from services.contracts.events import PodGroupObserved
from services.planner.core import reasons
from services.planner.core.indexes import Derived
from services.planner.core.state import GroupState, PlannerState, StatusMemo

PENDING, SCHEDULING, RUNNING, FINISHED, FAILED = (
    "Pending", "Scheduling", "Running", "Finished", "Failed")
UNSCHEDULABLE, SCHEDULED, BINDING, WAITING = "Unschedulable", "Scheduled", "Binding", "Waiting"
PREEMPTING, PREEMPTED = "Preempting", "Preempted"
ENDED_PHASES = frozenset({FINISHED, FAILED})
WAITING_CLASSES = frozenset({"pending", "reserved", "gated"})
"""Pod classes (`pods.classify`) of members waiting to run: a replacement, or a new run's."""


def phase(pods: int, running: int, succeeded: int, failed: int, min_member: int) -> str:
    """The PodGroup phase for these counts (module docstring)."""
    if pods < min_member:
        return PENDING
    result = SCHEDULING if running + succeeded < min_member else RUNNING
    if (failed and running + succeeded < min_member <= failed + running + succeeded
            and pods - failed < min_member):
        result = FAILED
    if succeeded >= min_member:
        result = FINISHED
    return result


def derive(state: PlannerState, derived: Derived, podgroup: PodGroupObserved,
           group: GroupState) -> StatusMemo:
    """The status the PodGroup should show now.

    Shapes: counts over every pod carrying the group label (whichever scheduler), deleted pods
    excluded; the condition's bound members exclude Failed ones (a failed member no longer holds
    its place, so its replacement's placement reads Binding) and include those the binder
    reported bound (`is_reported_bound`) before their pods are observed bound (else the
    condition went from Binding back to Waiting, "0 of N members bound", for as long as the
    watch trails the binder's outcome); `occupied_by` is `<ns>/<owner>`
    when the members with a controller share one;
    the condition as in the module docstring.
    """
    key = f"{podgroup.namespace}/{podgroup.name}"
    running = succeeded = failed = total = bound = held = live = 0
    owners: set[str] = set()
    for uid in derived.members.get(key, ()):
        pod = state.pods[uid]
        pod_class = derived.pod_class.get(uid)
        total += 1
        live += pod_class in WAITING_CLASSES
        held += (pod_class == "bound" or (pod_class == "succeeded" and group.has_run)
                 or (pod_class == "reserved" and is_reported_bound(state, uid)))
        bound += ((pod.node_name is not None or is_reported_bound(state, uid))
                  and pod.phase != "Failed")  # a failed one left
        running += pod.phase == "Running"
        succeeded += pod.phase == "Succeeded"
        failed += pod.phase == "Failed"
        if pod.owner is not None:
            owners.add(f"{pod.namespace}/{pod.owner.name}")
    now_phase = phase(total, running, succeeded, failed, podgroup.min_member)
    ended = group.last_status
    if ended is not None and ended.phase in ENDED_PHASES and not live \
            and now_phase not in ENDED_PHASES:
        return ended  # its finished pods were deleted: the run's end stands (module docstring)
    reason, message = _condition(key, group, podgroup.min_member, total, bound, held,
                                 key in state.nominations)
    return StatusMemo(
        phase=now_phase,
        running=running, succeeded=succeeded, failed=failed,
        occupied_by=next(iter(owners)) if len(owners) == 1 else "",
        schedule_start_ms=group.schedule_start_ms,
        condition_reason=reason, condition_message=message,
    )


def is_reported_bound(state: PlannerState, uid: str) -> bool:
    """Whether pod `uid` is reserved by a placement the binder reported bound (GroupBound)
    and not yet observed bound: its reservation outlives its placement until the watch shows
    the binding, and every other end of a placement (rollback, expiry) releases it."""
    reservation = state.reservations.get(uid)
    return reservation is not None and reservation.decision_id not in state.placements


def _condition(key: str, group: GroupState, min_member: int, pods: int,
               bound: int, held: int, is_nominated: bool) -> tuple[str, str]:
    """The `Scheduled` condition's reason and message (module docstring). `bound`: members
    bound or reported bound, Failed ones left out, whatever quorum makes of them; `held`: those
    quorum counts (`quorum.Counts.held` without members still being bound)."""
    if group.preempted_by:
        waiting = group.last_rejection
        return PREEMPTED, group.preempted_by + (f"; {waiting.reason}" if waiting else "")
    if held >= min_member:  # a rejection now can only be of members beyond minMember
        waiting = group.last_rejection  # it says minMember was reached, and why more wait
        return SCHEDULED, (waiting.reason if waiting is not None
                           else reasons.group_scheduled(key, bound, min_member))
    if group.in_flight:  # a placement holds what minMember needs: what waits is beyond it
        return BINDING, reasons.group_binding(key, group.attempts)
    if group.last_rejection is not None:
        return (PREEMPTING if is_nominated else UNSCHEDULABLE), group.last_rejection.reason
    if bound >= min_member:  # bound, if not all for quorum (terminating, other schedulers')
        return SCHEDULED, reasons.group_scheduled(key, bound, min_member)
    return WAITING, reasons.group_waiting(key, bound, min_member, pods)
