"""Slimming PodDisruptionBudgets (`policy/v1`) into the planner's events.

Layer: watcher (pure; the simulator may use it too). Keeps only what DefaultPreemption's
`filterPodsWithPDBViolation` reads: the selector, `status.disruptionsAllowed` and the names in
`status.disruptedPods`. Contract as `slim`: `budget_event` and `budget_deleted` never raise,
whatever the object; a field of the wrong type reads as absent.

Decisions recorded here:
- A malformed budget is still published (never dropped: the planner would then count one
  budget fewer than the cluster holds), read as kube-scheduler reads it: a selector that is
  not a valid label selector is None (`metav1.LabelSelectorAsSelector` fails, so it matches
  no pod), a `disruptionsAllowed` that is not a non-negative 32-bit integer is 0 (no
  disruption allowed: preempting a pod it selects counts as a violation), a `disruptedPods`
  that is not a map is empty. `budget_problem` names what was malformed, for the watcher's
  log line. The API server validates all three, so this is for hand-made or future objects.
- An absent selector is None and `{}` is `()`: both select no pod, as kube-scheduler's
  preemption reads them (although the eviction API reads `{}` as every pod of the namespace).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeGuard

from services.contracts.events import DisruptionBudgetDeleted, DisruptionBudgetObserved
from services.watcher.slim import (
    Obj,
    as_dict,
    is_small_int,
    label_selector,
    meta_of,
    namespaced_deleted,
    str_map,
    text_of,
)


def _is_count(value: Any) -> TypeGuard[int]:
    """A non-negative int (not a bool) of at most 32 bits, as `disruptionsAllowed` is."""
    return is_small_int(value) and value >= 0


def budget_event(obj: Obj, at_ms: int) -> DisruptionBudgetObserved:
    """A PodDisruptionBudget as `DisruptionBudgetObserved` (module docstring).

    Shapes: `selector` None (absent or invalid) or the requirements, matchLabels first as In
    with one value (sorted by key), then matchExpressions in spec order; `disrupted_pods`
    sorted pod names. Units: `at_ms` UTC epoch milliseconds (observation time).
    """
    meta, spec, status = meta_of(obj), as_dict(obj.get("spec")), as_dict(obj.get("status"))
    selector, is_valid = label_selector(spec.get("selector"))
    allowed = status.get("disruptionsAllowed")
    return DisruptionBudgetObserved(
        at_ms=at_ms, uid=text_of(meta, "uid"), namespace=text_of(meta, "namespace", "default"),
        name=text_of(meta, "name"), resource_version=text_of(meta, "resourceVersion"),
        selector=selector if is_valid else None,
        disruptions_allowed=allowed if _is_count(allowed) else 0,
        disrupted_pods=tuple(sorted(str_map(status.get("disruptedPods")))))


def budget_problem(obj: Obj) -> str | None:
    """What `budget_event` had to read as absent in `obj` (first problem, field named), or
    None for a well-formed budget. Never raises."""
    spec, status = as_dict(obj.get("spec")), as_dict(obj.get("status"))
    if not label_selector(spec.get("selector"))[1]:
        return "spec.selector is not a valid label selector (read as selecting no pod)"
    allowed = status.get("disruptionsAllowed")
    if allowed is not None and not _is_count(allowed):
        return "status.disruptionsAllowed is not an integer >= 0 (read as 0)"
    disrupted = status.get("disruptedPods")
    if disrupted is not None and not isinstance(disrupted, Mapping):
        return "status.disruptedPods is not a map (read as empty)"
    return None


def budget_deleted(obj: Obj, at_ms: int) -> DisruptionBudgetDeleted:
    """A deleted PodDisruptionBudget."""
    return namespaced_deleted(DisruptionBudgetDeleted, obj, at_ms)
