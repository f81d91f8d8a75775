"""Whether a Preemption's victim may be evicted now: the live pod checked against the decision.

Layer: binder, pure: the pod's API JSON (or None) and the decision in, a skip reason out.
The planner chose the victim from the events it had applied; the pod may have changed since
(finished, replaced under the same name, started terminating, raised in priority), and a
signed but stale decision must never evict what it did not mean: an equal or higher priority
pod, or another pod of the same name.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from services.contracts.decisions import Victim

FINISHED_PHASES = ("Succeeded", "Failed")


class Skip(StrEnum):
    """Why a victim is not evicted (the `reason` label of the skipped-victims metric)."""

    GONE = "gone"
    """No pod of that name any more: nothing to evict."""
    REPLACED = "replaced"
    """A pod of that name exists but with another uid (recreated by its controller)."""
    MOVED = "moved"
    """The pod is not bound to the victim's node (unbound, or on another node)."""
    FINISHED = "finished"
    """The pod's phase is Succeeded or Failed: it no longer holds its node's resources."""
    TERMINATING = "terminating"
    """The pod has a deletionTimestamp: graceful deletion already runs (kube-scheduler's
    preemption skips such a victim too); a redelivered decision meets its own victims so."""
    PRIORITY = "priority"
    """The pod's priority is not strictly below the preemptor's."""
    EXPIRED = "expired"
    """The decision arrived after its deadline: the planner no longer holds the nodes."""


def pod_priority(pod: dict[str, Any]) -> int:
    """`spec.priority` of a pod, 0 when unset (as corev1helpers.PodPriority reads it)."""
    priority = (pod.get("spec") or {}).get("priority")
    return priority if isinstance(priority, int) and not isinstance(priority, bool) else 0


def skip_reason(victim: Victim, pod: dict[str, Any] | None, priority: int) -> Skip | None:
    """None when `pod` (the live object named by `victim`, None if not found) may be evicted
    for a preemptor of `priority`; else the first rule it fails, checked in this order:
    GONE, REPLACED (`metadata.uid` != `victim.uid`), MOVED (`spec.nodeName` != `victim.node`),
    FINISHED, TERMINATING (`metadata.deletionTimestamp` set), PRIORITY (`spec.priority`,
    default 0, >= `priority`).

    Mirrors DefaultPreemption's victim rules (a victim has a lower priority than the
    preemptor; a victim already being deleted gets no API call), on the live pod.
    """
    if pod is None:
        return Skip.GONE
    metadata = pod.get("metadata") or {}
    if metadata.get("uid") != victim.uid:
        return Skip.REPLACED
    if (pod.get("spec") or {}).get("nodeName") != victim.node:
        return Skip.MOVED
    if (pod.get("status") or {}).get("phase") in FINISHED_PHASES:
        return Skip.FINISHED
    if metadata.get("deletionTimestamp"):
        return Skip.TERMINATING
    if pod_priority(pod) >= priority:
        return Skip.PRIORITY
    return None
