"""The binder carries out Preemptions on the real control plane, as kube-scheduler's
DefaultPreemption does, and only for the pods they name.

Only the binder runs (no planner), so every decision is the test's own, signed with the
planner's key or forged. A victim holds a finalizer, so it stays visible while it terminates:
the test sees the `DisruptionTarget` condition the binder wrote before deleting it, then
removes the finalizer to let it go.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from services.contracts.decisions import Assignment, Preemption, Victim
from services.contracts.signing import DecisionKey
from tests.cluster.fixture import ControlPlane
from tests.e2e import kube, manifests, split
from tests.support.waiting import consistently, eventually

pytestmark = pytest.mark.e2e

NODE = "kwok-node-0"
HOLD = "gangsched.test/hold"
LOW, HIGH = 10, 1000


@pytest.fixture
def priorities(control_plane: ControlPlane, namespace: str) -> Iterator[dict[int, str]]:
    """PriorityClasses of value LOW and HIGH (the API server sets spec.priority from them)."""
    names = {value: f"{namespace}-p{value}" for value in (LOW, HIGH)}
    manifests.apply(control_plane, None, *(
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
         "metadata": {"name": name}, "value": value} for value, name in names.items()))
    yield names
    control_plane.kubectl("delete", "priorityclass", *names.values(), "--wait=false")


@contextlib.contextmanager
def held(cp: ControlPlane, namespace: str, *names: str) -> Iterator[None]:
    """Remove the HOLD finalizer from the pods afterwards (so the namespace can empty)."""
    try:
        yield
    finally:
        for name in names:
            with contextlib.suppress(Exception):
                cp.kubectl("patch", "pod", name, "-n", namespace, "--type=merge",
                           "-p", '{"metadata":{"finalizers":null}}')


def running_victim(cp: ControlPlane, namespace: str, name: str, priority_class: str
                   ) -> dict[str, Any]:
    """A bare pod created bound to NODE (another scheduler's, in effect), Running, with the
    HOLD finalizer and a 30 s grace period."""
    document = manifests.pod(name, None, priorityClassName=priority_class, nodeName=NODE,
                             terminationGracePeriodSeconds=30)
    document["metadata"]["finalizers"] = [HOLD]
    manifests.apply(cp, namespace, document)

    def is_running() -> dict[str, Any]:
        pod = pod_json(cp, namespace, name)
        assert pod["status"].get("phase") == "Running", pod["status"]
        return pod

    result: dict[str, Any] = eventually(is_running, timeout=30, what=f"pod {name} Running")
    return result


def pending_preemptor(cp: ControlPlane, namespace: str, priority_class: str) -> dict[str, Any]:
    """Member `high` of PodGroup g, pending (no planner runs to place it)."""
    manifests.apply(cp, namespace, manifests.podgroup("g", 1),
                    manifests.pod("high", "g", priorityClassName=priority_class))
    result: dict[str, Any] = eventually(lambda: pod_json(cp, namespace, "high"), timeout=30,
                                        what="the preemptor exists")
    return result


def pod_json(cp: ControlPlane, namespace: str, name: str) -> dict[str, Any]:
    return kube.get_json(cp, "pod", name, "-n", namespace)


def exists(cp: ControlPlane, namespace: str, name: str) -> bool:
    found = kube.get_json(cp, "pods", "-n", namespace, "--field-selector",
                          f"metadata.name={name}")["items"]
    return bool(found)


def victim_of(pod: dict[str, Any]) -> Victim:
    meta = pod["metadata"]
    return Victim(uid=meta["uid"], namespace=meta["namespace"], name=meta["name"],
                  node=NODE, group=f"{meta['namespace']}/pod:{meta['name']}",
                  priority=int(pod["spec"].get("priority") or 0))


def preemption(namespace: str, preemptor: dict[str, Any], *victims: Victim) -> Preemption:
    now_ms = time.time_ns() // 1_000_000
    return Preemption(
        id=f"999999-{uuid.uuid4().hex[:6]}", plan_seq=1, at_ms=now_ms, group=f"{namespace}/g",
        priority=HIGH, deadline_ms=now_ms + 120_000,
        nominated=(Assignment(preemptor["metadata"]["uid"], namespace, "high", NODE),),
        victims=victims, reason="1 of 1 members fit once 1 pod is preempted")


def send(services: split.Services, decision: Preemption, key: DecisionKey | None) -> None:
    split.publish_decision(services.nats.url, decision, key)


def planner_key(services: split.Services) -> DecisionKey:
    return DecisionKey.from_text(services.key_file.read_text())


def disruption_target(pod: dict[str, Any]) -> dict[str, Any] | None:
    return next((c for c in pod["status"].get("conditions") or []
                 if c["type"] == "DisruptionTarget"), None)


def test_a_signed_preemption_evicts_the_lower_priority_pod_and_nominates_the_preemptor(
        control_plane: ControlPlane, namespace: str, services: split.Services,
        priorities: dict[int, str]) -> None:
    services.start()  # NATS only: no planner makes decisions of its own
    services.binder()
    low = running_victim(control_plane, namespace, "low", priorities[LOW])
    high = pending_preemptor(control_plane, namespace, priorities[HIGH])
    podgroup_uid = kube.get_json(control_plane, "podgroup", "g", "-n", namespace)[
        "metadata"]["uid"]
    kinds_before = {c["type"] for c in low["status"]["conditions"]}
    with held(control_plane, namespace, "low"):
        send(services, preemption(namespace, high, victim_of(low)), planner_key(services))

        def terminating() -> dict[str, Any]:
            pod = pod_json(control_plane, namespace, "low")
            assert pod["metadata"].get("deletionTimestamp"), pod["metadata"]
            return pod

        going = eventually(terminating, timeout=30, what="the victim terminating")
        assert going["metadata"]["uid"] == low["metadata"]["uid"]
        condition = disruption_target(going)
        assert condition is not None
        assert (condition["status"], condition["reason"], condition["message"]) == (
            "True", "PreemptionByScheduler",
            "gangsched: preempting to accommodate a higher priority podgroup")
        assert kinds_before <= {c["type"] for c in going["status"]["conditions"]}

        def preempted_event() -> dict[str, Any]:
            found = [e for e in kube.events(control_plane, namespace, "Preempted")
                     if e["involvedObject"]["name"] == "low"]
            assert found
            return found[0]

        event = eventually(preempted_event, timeout=20, what="the Preempted event")
        assert event["type"] == "Normal"
        assert event["involvedObject"]["uid"] == low["metadata"]["uid"]
        assert event["message"] == (
            f"Preempted by podgroup {podgroup_uid} on node {NODE} (gangsched gang "
            f"{namespace}/g): 1 of 1 members fit once 1 pod is preempted")

        nominated = eventually(
            lambda: pod_json(control_plane, namespace, "high")["status"].get(
                "nominatedNodeName"), timeout=20, what="the preemptor nominated")
        assert nominated == NODE
        # once bound, the API server clears the nomination (ClearingNominatedNodeNameAfter-
        # Binding, on by default since 1.35): kube-scheduler leaves it to it, and so do we
        manifests.create(control_plane, namespace, manifests.binding(
            namespace, "high", high["metadata"]["uid"], NODE))
        bound = pod_json(control_plane, namespace, "high")
        assert bound["spec"]["nodeName"] == NODE
        assert not bound["status"].get("nominatedNodeName"), bound["status"]
    eventually(lambda: not exists(control_plane, namespace, "low"), timeout=30,
               what="the victim gone once released")


def test_no_preemption_evicts_an_equal_priority_a_recreated_or_a_forged_victim(
        control_plane: ControlPlane, namespace: str, services: split.Services,
        priorities: dict[int, str]) -> None:
    services.start()
    binder = services.binder()
    equal = running_victim(control_plane, namespace, "equal", priorities[HIGH])
    with held(control_plane, namespace, "recreated"):
        old = running_victim(control_plane, namespace, "recreated", priorities[LOW])
    control_plane.kubectl("delete", "pod", "recreated", "-n", namespace, "--wait=true")
    recreated = running_victim(control_plane, namespace, "recreated", priorities[LOW])
    assert recreated["metadata"]["uid"] != old["metadata"]["uid"]
    low = running_victim(control_plane, namespace, "low", priorities[LOW])
    high = pending_preemptor(control_plane, namespace, priorities[HIGH])
    with held(control_plane, namespace, "equal", "recreated", "low"):
        signed = preemption(namespace, high, victim_of(equal), victim_of(old))
        send(services, signed, planner_key(services))
        send(services, preemption(namespace, high, victim_of(low)), None)
        send(services, preemption(namespace, high, victim_of(low)), DecisionKey(b"f" * 32))

        def judged() -> bool:
            text = binder.log_text()
            assert (f"not evicting pod {namespace}/equal (uid {equal['metadata']['uid']}): "
                    "priority") in text
            assert (f"not evicting pod {namespace}/recreated (uid {old['metadata']['uid']}): "
                    "replaced") in text
            reasons = [h.get("Gangsched-Reason", "") for h, _ in
                       split.dead_letters(services.nats.url)]
            assert sum(r.startswith("not the planner's decision") for r in reasons) == 2, \
                reasons
            return True

        eventually(judged, timeout=30, what="the signed preemption judged, forgeries refused")

        def untouched() -> bool:
            for pod in (equal, recreated, low):
                live = pod_json(control_plane, namespace, pod["metadata"]["name"])
                assert live["metadata"]["uid"] == pod["metadata"]["uid"]
                assert not live["metadata"].get("deletionTimestamp"), live["metadata"]
                assert disruption_target(live) is None, live["status"]
            return True

        consistently(untouched, duration=3, what="no victim evicted or marked")
        assert [e for e in kube.events(control_plane, namespace, "Preempted")] == []
