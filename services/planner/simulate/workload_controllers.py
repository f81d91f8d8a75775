"""Which pods a workload's controller creates, and when, for `gangsched simulate`.

Layer: planner simulate (pure). `manifests` expands a ReplicaSet, Deployment, Job or
StatefulSet into the pods its controller would create; this says whether it creates any at
all, and whether it creates them one at a time. Sources, Kubernetes 1.36:
- Job: `spec.suspend: true` (`jobSuspended`, `pkg/controller/job/job_controller.go`): its
  `manageJob` creates no pod (and deletes the active ones).
- Deployment: `spec.paused: true`: `syncDeployment` (`pkg/controller/deployment`) then only
  runs `sync`, whose `getAllReplicaSetsAndSyncRevision(..., createIfNotExisted=false)` creates
  no ReplicaSet, so a new paused Deployment has no pods (one that had pods keeps them; a
  simulated one is new).
- ReplicaSet: no such notion.
- StatefulSet: `spec.podManagementPolicy` (an empty one defaulted to `OrderedReady` by
  `SetDefaults_StatefulSet`, `pkg/apis/apps/v1/defaults.go`; validated by
  `ValidateStatefulSetSpec`, `pkg/apis/apps/validation/validation.go`). Under `OrderedReady`
  the controller is `monotonic` (`updateStatefulSet`,
  `pkg/controller/statefulset/stateful_set_control.go`: `!allowsBurst`): `runForAll` walks the
  ordinals in order and `processReplica` stops at the first pod it had to create, or that is
  not yet Running and Ready (`isRunningAndReady`) and Available for `spec.minReadySeconds`
  (`isRunningAndAvailable`), so pod N+1 is created only once pods 0..N are. Under `Parallel`
  every pod is created at once.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from services.planner.simulate.object_names import invalid

ORDERED_READY, PARALLEL = "OrderedReady", "Parallel"
"""The StatefulSet pod management policies (`apps.OrderedReadyPodManagement`, ...)."""
HOLD_FIELDS = {"Job": "suspend", "Deployment": "paused"}
"""The field of each kind whose `true` keeps its controller from creating pods."""


def creates_no_pods(kind: str, spec: Mapping[str, Any]) -> bool:
    """Whether the controller of a workload of `kind` with `spec` (field types checked by
    `shapes`) creates no pod: a suspended Job, a paused Deployment (module docstring)."""
    field = HOLD_FIELDS.get(kind)
    return field is not None and spec.get(field) is True


def is_one_at_a_time(spec: Mapping[str, Any]) -> bool:
    """Whether a StatefulSet with `spec` (checked: `stateful_set_problem`) has its pods created
    one at a time, each once the ones before it are Running and Ready: `podManagementPolicy`
    OrderedReady, which an absent or empty one is defaulted to."""
    return (spec.get("podManagementPolicy") or ORDERED_READY) == ORDERED_READY


def min_ready_seconds(spec: Mapping[str, Any]) -> int:
    """A StatefulSet's `spec.minReadySeconds` (checked; absent: 0), in seconds: how long a pod
    must have been Ready before, under OrderedReady, the next one is created."""
    return int(spec.get("minReadySeconds") or 0)


def stateful_set_problem(spec: Mapping[str, Any]) -> tuple[str, str] | None:
    """The first field of a StatefulSet's `spec` (field types checked by `shapes`) of those read
    here that `ValidateStatefulSetSpec` refuses, and why: `podManagementPolicy` neither
    OrderedReady nor Parallel (once defaulted: empty is OrderedReady), `minReadySeconds`
    below 0 (`ValidateNonnegativeField`). Field paths are relative to `spec`:
    `("podManagementPolicy", "Invalid value: \"Serial\": must be 'OrderedReady' or
    'Parallel'")`; None when both are valid."""
    policy = spec.get("podManagementPolicy") or ORDERED_READY
    if policy not in (ORDERED_READY, PARALLEL):
        return ("podManagementPolicy",
                invalid(policy, f"must be '{ORDERED_READY}' or '{PARALLEL}'"))
    if min_ready_seconds(spec) < 0:
        return ("minReadySeconds", f"Invalid value: {spec['minReadySeconds']}: must be "
                "greater than or equal to 0")
    return None
