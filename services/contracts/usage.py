"""When a pod uses capacity on its node: the one rule the planner and the binder share.

Layer: contracts. Pure; reads only `PodObserved` values.
"""

from __future__ import annotations

from services.contracts.events import PodObserved

TERMINAL_PHASES = ("Succeeded", "Failed")


def is_terminal(pod: PodObserved) -> bool:
    """Whether the pod has finished (phase Succeeded or Failed)."""
    return pod.phase in TERMINAL_PHASES


def uses_capacity(pod: PodObserved) -> bool:
    """Whether the pod uses capacity on its node, whichever scheduler bound it.

    Source: as kube-scheduler's NodeInfo, a bound pod counts until it is terminal or deleted;
    a terminating pod (deletionTimestamp set) still counts until it is gone.
    """
    return pod.node_name is not None and not is_terminal(pod)
