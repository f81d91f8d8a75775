"""The simulation's disruption controller: `status.disruptionsAllowed` of PodDisruptionBudgets.

Layer: planner simulate (pure; contracts and fit only). As the disruption controller computes
it (`getExpectedPodCount`, `countHealthyPods`, `updatePdbStatus`), simplified:

- expected: the pods the selector picks in the PDB's namespace (the controller counts them for
  an integer minAvailable and reads the owning controllers' scale otherwise; in a simulation
  every replica of a workload is a pod from the start, so the two agree);
- healthy: of those, the pods Running on a node and not being deleted (the simulation has no
  readiness: Running means Ready);
- desired: minAvailable, or a percentage of expected rounded up; for maxUnavailable, expected
  minus maxUnavailable (a percentage rounded up), at least 0; neither set: 0;
- disruptionsAllowed = healthy - desired, 0 when negative or when nothing is expected.

`disruptedPods` stays empty: only the Eviction API fills it, and preemption deletes pods.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import msgspec

from services.contracts.events import DisruptionBudgetObserved, PodObserved
from services.fit.pod_affinity import selector_matches


class BudgetSpec(msgspec.Struct, frozen=True):
    """`spec.minAvailable` / `spec.maxUnavailable` of a PDB: an int, `"<n>%"`, or None."""

    min_available: int | str | None = None
    max_unavailable: int | str | None = None


def scaled(value: int | str, total: int) -> int:
    """An int-or-percent scaled to `total`, rounded up (`intstr.GetScaledValueFromIntOrPercent`
    with roundUp). Shapes: a string is `"<n>%"` (checked by the manifest reader)."""
    if isinstance(value, int):
        return value
    return math.ceil(int(value.removesuffix("%")) * total / 100)


def disruptions_allowed(budget: DisruptionBudgetObserved, spec: BudgetSpec,
                        pods: Iterable[PodObserved]) -> int:
    """`status.disruptionsAllowed` of `budget` over the live `pods` (module docstring)."""
    selected = [pod for pod in pods if pod.namespace == budget.namespace
                and selector_matches(budget.selector, pod.labels)]
    expected = len(selected)
    healthy = sum(1 for pod in selected
                  if pod.phase == "Running" and pod.node_name and not pod.is_deleting)
    if spec.max_unavailable is not None:
        desired = max(0, expected - scaled(spec.max_unavailable, expected))
    elif spec.min_available is not None:
        desired = scaled(spec.min_available, expected)
    else:
        desired = 0
    return max(0, healthy - desired) if expected > 0 else 0
