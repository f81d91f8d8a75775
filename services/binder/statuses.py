"""What the binder writes into object status: the pod's PodScheduled condition and PodGroup status.

Layer: binder, pure: what the object says (API JSON, or for a pod's condition what this process
wrote on it) and a time in, the patch to send out (None when the object already says it).
Skipping unchanged writes keeps the binder from feeding the watcher a change for every decision.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from services.contracts.decisions import StatusUpdate

POD_SCHEDULED = "PodScheduled"
UNSCHEDULABLE = "Unschedulable"
DISRUPTION_TARGET = "DisruptionTarget"
PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"
"""The pod condition kube-scheduler's preemption sets on a victim before deleting it
(v1.DisruptionTarget, reason v1.PodReasonPreemptionByScheduler)."""
SCHEDULED_CONDITION = "Scheduled"
"""The PodGroup condition type explaining the latest scheduling result."""

NATIVE_SCHEDULED_CONDITION = "PodGroupScheduled"
"""The condition type of a native (`scheduling.k8s.io`) PodGroup, as kube-scheduler writes it:
True with reason `Scheduled`, else False with reason `Unschedulable`."""
NATIVE_API_GROUP = "scheduling.k8s.io/"
SCHEDULED_PHASES = ("Running", "Finished")
SCHEDULED_REASONS = ("Scheduled", "GroupBound", "Bound")
MESSAGE_MAX_CHARS = 32768
_REASON = re.compile(r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$")


def rfc3339(at: datetime) -> str:
    """`2024-05-01T12:00:00Z`: seconds precision, UTC, as metav1.Time serialises."""
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def from_ms(at_ms: int) -> datetime:
    """A UTC datetime from epoch milliseconds."""
    return datetime.fromtimestamp(at_ms / 1000, tz=UTC)


@dataclass(frozen=True)
class Unschedulable:
    """A pod's `PodScheduled=False, reason Unschedulable` condition as the binder wrote it:
    its message and `lastTransitionTime` (RFC 3339)."""

    message: str
    since: str


def unschedulable(written: Unschedulable | None, message: str, now: datetime
                  ) -> Unschedulable | None:
    """The condition to write to say `message`, or None when `written` (what this process last
    wrote on the pod) already says it.

    `lastTransitionTime` moves only when the status changes, as `podutil.UpdatePodCondition`
    does: kept from `written` (the status stays False), else `now` (the pod had no False
    condition this process knows of). Source: kube-scheduler patches from its informer copy
    without reading the pod (`util.PatchPodStatus`); the binder's copy is what it wrote.
    """
    if written is not None and written.message == message:
        return None
    return Unschedulable(message, written.since if written is not None else rfc3339(now))


def unschedulable_patch(condition: Unschedulable) -> dict[str, Any]:
    """The pod status strategic merge patch writing `condition` (conditions merge by type)."""
    return {"conditions": [{
        "type": POD_SCHEDULED,
        "status": "False",
        "reason": UNSCHEDULABLE,
        "message": condition.message,
        "lastTransitionTime": condition.since,
    }]}


def scheduled_patch(now: datetime) -> dict[str, Any]:
    """The pod status strategic merge patch putting back `PodScheduled=True` (no reason, no
    message), as the API server's binding sets it (`BindingREST.setPodNodeAndMetadata`): for
    a pod an Unschedulable condition reached just after it was bound."""
    return {"conditions": [{
        "type": POD_SCHEDULED,
        "status": "True",
        "reason": None,
        "message": None,
        "lastTransitionTime": rfc3339(now),
    }]}


def disruption_target_status(
    pod: dict[str, Any], message: str, now: datetime
) -> dict[str, Any] | None:
    """The pod status patch setting `DisruptionTarget=True, reason PreemptionByScheduler,
    message`, as kube-scheduler's preemption writes it on a victim before deleting it.

    Shapes: `{"conditions": [condition]}` for a strategic merge patch (merged by type, so the
    pod's other conditions stay), or None when the pod already has exactly that condition
    (`podutil.UpdatePodCondition` reports no change). `observedGeneration` is the pod's
    `metadata.generation` when it has one (PodObservedGenerationTracking, GA in 1.35);
    `lastTransitionTime` is kept when the condition was already True, else `now`.
    """
    patch = _condition_patch(pod, {"type": DISRUPTION_TARGET, "status": "True",
                                   "reason": PREEMPTION_BY_SCHEDULER, "message": message}, now)
    generation = (pod.get("metadata") or {}).get("generation")
    if patch is not None and isinstance(generation, int) and not isinstance(generation, bool):
        patch["conditions"][0]["observedGeneration"] = generation
    return patch


def _condition_patch(
    pod: dict[str, Any], condition: dict[str, str], now: datetime
) -> dict[str, Any] | None:
    """`{"conditions": [condition with lastTransitionTime]}`, or None when the pod has that
    condition type with the same status, reason and message (`podutil.UpdatePodCondition`:
    the transition time is kept while the status stays, else `now`)."""
    current = _find(_conditions(pod.get("status")), condition["type"])
    if current is not None and all(current.get(key) == condition[key]
                                   for key in ("status", "reason", "message")):
        return None
    transition = rfc3339(now)
    if current is not None and current.get("status") == condition["status"]:
        transition = str(current.get("lastTransitionTime") or transition)
    return {"conditions": [{**condition, "lastTransitionTime": transition}]}


def nominated_status(pod: dict[str, Any], node: str) -> dict[str, Any] | None:
    """The pod status patch setting `nominatedNodeName` to `node`, as kube-scheduler writes
    it on a preemptor (`updatePod` after a PostFilter that nominated a node); None when the
    pod already names that node."""
    if (pod.get("status") or {}).get("nominatedNodeName") == node:
        return None
    return {"nominatedNodeName": node}


def podgroup_status(
    update: StatusUpdate, podgroup: dict[str, Any], now: datetime
) -> dict[str, Any] | None:
    """The PodGroup `status` merge patch for `update`, or None when the status already says it.

    Shapes: only the fields that differ; `conditions` (when the update has a condition reason)
    is the whole list with the `Scheduled` entry replaced, since a merge patch replaces lists.
    Empty `occupied_by` and absent `schedule_start_ms` leave those fields as they are.
    """
    raw_status = podgroup.get("status")
    status: dict[str, Any] = raw_status if isinstance(raw_status, dict) else {}
    if str(podgroup.get("apiVersion") or "").startswith(NATIVE_API_GROUP):
        return native_podgroup_status(update, podgroup, status, now)
    wanted: dict[str, Any] = {
        "phase": update.phase,
        "running": update.running,
        "succeeded": update.succeeded,
        "failed": update.failed,
    }
    if update.occupied_by:
        wanted["occupiedBy"] = update.occupied_by
    if update.schedule_start_ms is not None:
        wanted["scheduleStartTime"] = rfc3339(from_ms(update.schedule_start_ms))
    if update.condition_reason:
        generation = (podgroup.get("metadata") or {}).get("generation")
        wanted["conditions"] = merged_conditions(
            _conditions(status), scheduled_condition(update, generation), now
        )
    patch = {key: value for key, value in wanted.items() if status.get(key) != value}
    return patch or None


def native_podgroup_status(
    update: StatusUpdate, podgroup: dict[str, Any], status: dict[str, Any], now: datetime
) -> dict[str, Any] | None:
    """The status merge patch of a native PodGroup: only its `PodGroupScheduled` condition.

    Shapes: `{"conditions": [...]}` (the whole list), or None when current or when the update
    has neither a condition reason nor a scheduled phase (the native status has no phase or
    counts). Source: kube-scheduler's schedule_one_podgroup (reasons `Scheduled`,
    `Unschedulable`).
    """
    if not update.condition_reason and update.phase not in SCHEDULED_PHASES:
        return None
    generation = (podgroup.get("metadata") or {}).get("generation")
    condition = scheduled_condition(update, generation)
    is_scheduled = condition["status"] == "True"
    condition.update(type=NATIVE_SCHEDULED_CONDITION,
                     reason="Scheduled" if is_scheduled else UNSCHEDULABLE)
    current = _conditions(status)
    old = _find(current, NATIVE_SCHEDULED_CONDITION)
    if old is not None and all(old.get(k) == v for k, v in condition.items()):
        return None
    return {"conditions": merged_conditions(current, condition, now)}


def scheduled_condition(update: StatusUpdate, generation: int | None) -> dict[str, Any]:
    """The `Scheduled` metav1.Condition for `update`, without `lastTransitionTime`.

    `status` is True when the planner's reason says the gang was placed (Scheduled,
    GroupBound, Bound), False for any other reason (Unschedulable, Binding, Preempted, ...).
    Only an update without a reason falls back to the phase: True once the gang runs (Running
    or Finished). The phase alone would read True beside an Unschedulable reason: a gang whose
    pods still run (terminating, or another scheduler's) while its members of ours wait.
    """
    is_scheduled = (update.condition_reason in SCHEDULED_REASONS
                    or (not update.condition_reason and update.phase in SCHEDULED_PHASES))
    condition: dict[str, Any] = {
        "type": SCHEDULED_CONDITION,
        "status": "True" if is_scheduled else "False",
        "reason": condition_reason(update.condition_reason),
        "message": update.condition_message[:MESSAGE_MAX_CHARS],
    }
    if isinstance(generation, int):
        condition["observedGeneration"] = generation
    return condition


def merged_conditions(
    current: list[dict[str, Any]], condition: dict[str, Any], now: datetime
) -> list[dict[str, Any]]:
    """`current` with the entry of `condition["type"]` replaced (or appended).

    `lastTransitionTime` is kept from the old entry when the status did not change, else `now`.
    """
    old = _find(current, condition["type"])
    same_status = old is not None and old.get("status") == condition["status"]
    transition = old.get("lastTransitionTime") if old is not None and same_status else None
    new = {**condition, "lastTransitionTime": transition or rfc3339(now)}
    others = [c for c in current if c.get("type") != condition["type"]]
    return [*others, new]


def condition_reason(text: str) -> str:
    """`text` as a valid metav1.Condition reason (CamelCase; `Unknown` when nothing is left)."""
    if _REASON.match(text):
        return text
    words = re.findall(r"[A-Za-z0-9]+", text)
    reason = "".join(word[:1].upper() + word[1:] for word in words).lstrip("0123456789")
    return reason[:1024] or "Unknown"


def _conditions(status: Any) -> list[dict[str, Any]]:
    """The `conditions` list of a status (entries that are objects only)."""
    if not isinstance(status, dict):
        return []
    return [c for c in status.get("conditions") or [] if isinstance(c, dict)]


def _find(conditions: list[dict[str, Any]], condition_type: str) -> dict[str, Any] | None:
    """The condition of `condition_type`, if present."""
    return next((c for c in conditions if c.get("type") == condition_type), None)
