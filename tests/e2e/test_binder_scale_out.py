"""Binder scale-out on the real control plane (several binders share the decision work queues).

Two binder processes share the durable work-queue consumer of DECISIONS: each decision is
handled by exactly one of them, so every pod is bound exactly once, whoever binds it.
"""

from __future__ import annotations

import re
from collections import Counter

import pytest

from tests.cluster.fixture import ControlPlane
from tests.e2e import kube, manifests, split
from tests.support.waiting import consistently, eventually

pytestmark = pytest.mark.e2e

GANGS = 8
MEMBERS = 3
PLACED = re.compile(r"placement (\S+) of (\S+) \(attempt")



def test_two_binders_on_one_work_queue_bind_every_pod_exactly_once(
        control_plane: ControlPlane, namespace: str, services: split.Services) -> None:
    services.start("watcher", "planner")
    binders = services.binders(2)
    # One apply per gang: the planner places them in several rounds, so both binders get work.
    for index in range(GANGS):
        manifests.apply(control_plane, namespace, manifests.podgroup(f"g{index}", MEMBERS),
                        manifests.replicaset(f"w{index}", f"g{index}", MEMBERS))

    def every_gang_running() -> bool:
        pods = kube.pods(control_plane, namespace)
        assert len(kube.bound(pods)) == GANGS * MEMBERS, f"{len(kube.bound(pods))} bound"
        groups = kube.get_json(control_plane, "podgroups", "-n", namespace)["items"]
        phases = {g["metadata"]["name"]: (g.get("status") or {}).get("phase") for g in groups}
        assert set(phases.values()) == {"Running"}, phases
        return True

    eventually(every_gang_running, timeout=60, what="every gang bound and Running")
    pods = kube.pods(control_plane, namespace)

    def scheduled_once() -> bool:
        counts = Counter(event["involvedObject"]["uid"]
                         for event in kube.events(control_plane, namespace, "Scheduled"))
        assert set(counts) == {pod["metadata"]["uid"] for pod in pods}, counts
        assert set(counts.values()) == {1}, counts
        return True

    eventually(scheduled_once, timeout=15, what="one Scheduled event per pod")
    consistently(scheduled_once, duration=2, what="one Scheduled event per pod")

    handled = [PLACED.findall(binder.log_text()) for binder in binders]
    decisions = Counter(decision for found in handled for decision, _ in found)
    assert set(decisions.values()) == {1}, f"a placement handled twice: {decisions}"
    assert len({group for found in handled for _, group in found}) == GANGS
    assert all(handled), f"one binder did all the work: {[len(h) for h in handled]}"
    for binder in binders:
        # Status writes of two binders may conflict on a PodGroup (retried, logged at DEBUG);
        # a bind never may: that would mean a pod was bound twice, or a gang rolled back.
        trouble = re.findall(r".* (?:WARNING|ERROR) .*|.*Traceback.*|.*bind conflict.*",
                             binder.log_text())
        assert trouble == [], trouble

    outcomes = split.messages(services.nats.url, "EVENTS", split.outcome_subject(namespace, None))
    kinds = Counter(outcome["type"] for outcome in outcomes)
    assert kinds == {"GroupBound": GANGS}, kinds  # one outcome per bound gang
