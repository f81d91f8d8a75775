"""The preemption oracle: the real kube-scheduler (DefaultPreemption) offered one preemptor.

`offer` creates the pod and waits for what kube-scheduler did: bound it at once, found it
unschedulable without nominating a node (no preemption: the pod is deleted again), or
preempted: it set `status.nominatedNodeName` with the Unschedulable condition (one status
patch) and deleted the victims, each marked `DisruptionTarget` (reason
`PreemptionByScheduler`) first; the pod is then bound once they are gone. The victims are the
pods bound before the offer that are gone or terminating once the pod is bound (nothing else
deletes pods during a run; each must have been marked DisruptionTarget, `Marked`). Budgets
settle (`budgets_settled`) before every offer, so both schedulers read the disruption
controller's current `disruptionsAllowed`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from services.fit.pod_affinity import selector_matches
from services.kube.client import KubeClient
from services.kube.resources import pod_path
from services.watcher.budgets import budget_event
from tests.e2e.differential.oracle import Mirror, create, outcome_of

Obj = dict[str, Any]
SETTLE_SECONDS = 60.0
PREEMPTED_SECONDS = 90.0
"""How long a preemptor may take to be bound once nominated: its victims' deletion by KWOK
and kube-scheduler's backoff, on a loaded machine (every wait ends on the watch event)."""


@dataclass(frozen=True)
class KubeOutcome:
    """What kube-scheduler did: `node` bound to (None: not bound), `nominated` (None: no
    preemption), `victims` the API objects it deleted, `message` its FailedScheduling message
    (None when bound at once), `unmarked` the victims' names it deleted without marking them
    `DisruptionTarget` (reason `PreemptionByScheduler`) first."""

    node: str | None
    nominated: str | None
    victims: list[Obj]
    message: str | None
    unmarked: list[str] = field(default_factory=list)


class Marked:
    """The uids of pods the watch ever showed with condition DisruptionTarget=True, reason
    PreemptionByScheduler (kube-scheduler marks each victim so before deleting it)."""

    def __init__(self, pods: Mirror) -> None:
        self.uids: set[str] = set()
        pods.listeners.append(self._see)

    def _see(self, pod: Obj) -> None:
        if any(c.get("type") == "DisruptionTarget" and c.get("status") == "True"
               and c.get("reason") == "PreemptionByScheduler"
               for c in pod.get("status", {}).get("conditions", [])):
            self.uids.add(pod["metadata"]["uid"])


def _key(obj: Obj) -> tuple[str, str]:
    return obj["metadata"]["namespace"], obj["metadata"]["name"]


def is_terminating(obj: Obj) -> bool:
    return bool(obj["metadata"].get("deletionTimestamp"))


def _first(pods: Mirror, namespace: str, name: str) -> tuple[str, Obj] | None:
    """("bound", pod) or ("nominated", pod) or ("refused", pod) once kube-scheduler decided."""
    pod = pods.by_name(namespace, name)
    outcome = outcome_of(pod)
    if pod is None or outcome is None:
        return None
    if outcome.node is not None:
        return "bound", pod
    return ("nominated" if pod["status"].get("nominatedNodeName") else "refused"), pod


async def offer(client: KubeClient, pods: Mirror, marked: Marked, pod: Obj) -> KubeOutcome:
    """Create `pod` and wait for kube-scheduler's outcome (module docstring); an unschedulable
    pod that nominated no node is deleted again (and waited for).

    Raises:
        TimeoutError: no outcome, or a preemptor not bound, within the mirror's timeout.
    """
    namespace, name = _key(pod)
    before = {uid: obj for uid, obj in pods.objects.items()
              if obj["spec"].get("nodeName") and not is_terminating(obj)}
    await create(client, pod)
    kind, seen = await pods.wait_for(lambda: _first(pods, namespace, name),
                                     f"scheduling outcome for {namespace}/{name}")
    nominated = seen["status"].get("nominatedNodeName") or None
    message = None if kind == "bound" else outcome_of(seen).message  # type: ignore[union-attr]
    if kind == "refused":
        await delete(client, pods, pod)
        return KubeOutcome(None, None, [], message)
    try:
        bound: Obj = await pods.wait_for(
            lambda: (found := pods.by_name(namespace, name)) is not None
            and found["spec"].get("nodeName") and found, f"{namespace}/{name} bound",
            PREEMPTED_SECONDS)
        await pods.wait_for(lambda: not any(map(is_terminating, pods.objects.values())),
                            "victims gone", PREEMPTED_SECONDS)
    except TimeoutError as error:
        raise TimeoutError(f"{error}; {_stuck(pods, namespace, name)}") from None
    victims = [obj for uid, obj in sorted(before.items())
               if uid not in pods.objects or is_terminating(pods.objects[uid])]
    if victims and nominated is None:
        nominated = bound["spec"]["nodeName"]  # bound before the mirror saw the nomination
    unmarked = ["/".join(_key(obj)) for obj in victims if obj["metadata"]["uid"] not in marked.uids]
    return KubeOutcome(bound["spec"]["nodeName"], nominated, victims, message, unmarked)


def _stuck(pods: Mirror, namespace: str, name: str) -> str:
    """What a preemptor that was not bound in time waits for: its status, terminating pods."""
    pod = pods.by_name(namespace, name)
    status = {} if pod is None else pod.get("status", {})
    conditions = [(c.get("type"), c.get("reason"), c.get("message"))
                  for c in status.get("conditions", [])]
    terminating = sorted("/".join(_key(obj)) for obj in pods.objects.values()
                         if is_terminating(obj))
    return (f"nominated {status.get('nominatedNodeName')!r}, conditions {conditions}, "
            f"terminating {terminating}")


async def delete(client: KubeClient, pods: Mirror, pod: Obj) -> None:
    """Delete `pod` at once and wait until the mirror no longer lists it."""
    namespace, name = _key(pod)
    await client.request("DELETE", pod_path(namespace, name), body={"gracePeriodSeconds": 0})
    await pods.wait_for(lambda: pods.by_name(namespace, name) is None,
                        f"{namespace}/{name} deleted")


def _matching(budget: Obj, pods: Mirror) -> list[Obj]:
    event = budget_event(budget, 0)
    if not event.selector:
        return []
    return [pod for pod in pods.objects.values()
            if pod["metadata"]["namespace"] == event.namespace and not is_terminating(pod)
            and selector_matches(event.selector, pod["metadata"].get("labels", {}))]


def _is_running(pod: Obj) -> bool:
    return pod.get("status", {}).get("phase") == "Running" and any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in pod["status"].get("conditions", []))


def budgets_settled(budgets: Mirror, pods: Mirror) -> bool:
    """Whether every budget's status counts its pods as they are now: observed its generation,
    expects every matching pod and counts each Running, Ready one as healthy."""
    for budget in budgets.objects.values():
        status = budget.get("status", {})
        matching = _matching(budget, pods)
        if (status.get("observedGeneration") != budget["metadata"].get("generation")
                or status.get("expectedPods", 0) != len(matching)
                or status.get("currentHealthy", 0) != sum(map(_is_running, matching))
                or not all(map(_is_running, matching))):
            return False
    return True


async def wait_budgets(budgets: Mirror, pods: Mirror) -> None:
    """Wait until `budgets_settled` (re-checked as budgets change; pods settle first).

    Raises:
        TimeoutError: after SETTLE_SECONDS.
    """
    await pods.wait_for(lambda: all(_is_running(pod) for pod in pods.objects.values()
                                    if pod["spec"].get("nodeName")), "pods Running",
                        SETTLE_SECONDS)
    await budgets.wait_for(lambda: budgets_settled(budgets, pods), "settled budgets",
                           SETTLE_SECONDS)
