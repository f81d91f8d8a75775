"""PodGroup status derived from its members: phase, counts, occupiedBy, condition.

Layer: planner core (pure). Phase rules as the scheduler-plugins PodGroup controller, later rule
winning: fewer pods than minMember → Pending; running+succeeded < min → Scheduling; ≥ min →
Running; failed > 0 and running+succeeded < min ≤ failed+running+succeeded → Failed; succeeded ≥
min → Finished. gangsched differs in one place: a failed member makes the group Failed only when
running + succeeded drops below minMember (reference scenario B.6; upstream reports Failed).
"""

from __future__ import annotations

from services.contracts.events import PodGroupObserved
from services.planner.core.derived import Derived
from services.planner.core.state import GroupState, PlannerState, StatusMemo

PENDING, SCHEDULING, RUNNING, FINISHED, FAILED = (
    "Pending", "Scheduling", "Running", "Finished", "Failed")
UNSCHEDULABLE = "Unschedulable"


def phase(pods: int, running: int, succeeded: int, failed: int, min_member: int) -> str:
    """The PodGroup phase for these counts (module docstring)."""
    if pods < min_member:
        return PENDING
    result = SCHEDULING if running + succeeded < min_member else RUNNING
    if failed and running + succeeded < min_member <= failed + running + succeeded:
        result = FAILED
    if succeeded >= min_member:
        result = FINISHED
    return result


def derive(state: PlannerState, derived: Derived, podgroup: PodGroupObserved,
           group: GroupState) -> StatusMemo:
    """The status the PodGroup should show now.

    Shapes: counts over every pod carrying the group label (whichever scheduler), deleted pods
    excluded; `occupied_by` is `<ns>/<owner>` when the members with a controller share one;
    the condition carries the last rejection told for the group, if any.
    """
    running = succeeded = failed = total = 0
    owners: set[str] = set()
    for uid in derived.members.get(f"{podgroup.namespace}/{podgroup.name}", ()):
        pod = state.pods[uid]
        total += 1
        running += pod.phase == "Running"
        succeeded += pod.phase == "Succeeded"
        failed += pod.phase == "Failed"
        if pod.owner is not None:
            owners.add(f"{pod.namespace}/{pod.owner.name}")
    rejection = group.last_rejection
    return StatusMemo(
        phase=phase(total, running, succeeded, failed, podgroup.min_member),
        running=running, succeeded=succeeded, failed=failed,
        occupied_by=next(iter(owners)) if len(owners) == 1 else "",
        schedule_start_ms=group.schedule_start_ms,
        condition_reason=UNSCHEDULABLE if rejection is not None else "",
        condition_message=rejection.reason if rejection is not None else "",
    )
