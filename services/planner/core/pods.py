"""What a pod is to the planner: its group, whether it waits for us, whether it uses capacity.

Layer: planner core (pure). Reads only `PodObserved` values; never mutates them.
"""

from __future__ import annotations

from typing import Literal

from services.contracts import ids
from services.contracts.events import PodObserved
from services.contracts.usage import TERMINAL_PHASES, is_terminal, uses_capacity

__all__ = ["TERMINAL_PHASES", "PodClass", "classify", "group_of", "is_ours", "is_terminal",
           "sort_key", "uses_capacity"]

PodClass = Literal["other", "bound", "succeeded", "terminal", "deleting", "reserved", "gated",
                   "pending"]
"""How a pod of ours counts for its group (pods of other schedulers are `other`): `succeeded`
is phase Succeeded, `terminal` phase Failed."""


def is_ours(pod: PodObserved, scheduler_name: str) -> bool:
    """Whether gangsched schedules this pod (`spec.schedulerName` names it)."""
    return pod.scheduler_name == scheduler_name


def group_of(pod: PodObserved, scheduler_name: str) -> ids.GroupKey | None:
    """The group a pod belongs to, or None for an unlabelled pod of another scheduler.

    Shapes: the PodGroup named by the label (same namespace), else for a pod of ours its
    singleton group (`ids.singleton_key`).
    """
    if pod.group_name:
        return ids.group_key(pod.namespace, pod.group_name)
    if is_ours(pod, scheduler_name):
        return ids.singleton_key(pod.namespace, pod.name)
    return None


def classify(pod: PodObserved, scheduler_name: str, is_reserved: bool) -> PodClass:
    """How the pod counts for its group's quorum and placement.

    Shapes: `pending` pods are the only ones the planner places: ours, unbound, phase Pending,
    not deleting, not scheduling-gated, and not already reserved by an in-flight placement.
    """
    if not is_ours(pod, scheduler_name):
        return "other"
    if is_terminal(pod):
        return "succeeded" if pod.phase == "Succeeded" else "terminal"
    if pod.is_deleting:
        return "deleting"
    if pod.node_name is not None:
        return "bound"
    if is_reserved:
        return "reserved"
    if pod.is_scheduling_gated or pod.phase != "Pending":
        return "gated"
    return "pending"


def sort_key(pod: PodObserved) -> tuple[str, str, str]:
    """Order of members within a group: namespace, name, uid (deterministic)."""
    return (pod.namespace, pod.name, pod.uid)
