"""Preemptions through the binder: victims evicted as kube-scheduler does, only when still the
pod named; the preemptor nominated; failures retried, forgeries dead-lettered, redelivery a
no-op. Binders are wired as in production, on a real nats-server (`binder_harness`)."""

from __future__ import annotations

from typing import Any

import pytest

from services.contracts import codec
from services.contracts.decisions import Assignment, Preemption, Victim
from services.contracts.signing import SIGNATURE_HEADER, DecisionKey
from services.kube import errors
from services.runtime.metrics import REGISTRY
from tests.integration.binder_harness import NOW_MS, BinderBus
from tests.unit.binder.fakes import FakeDelivery, FakeKube, FakePublisher, make_pod

pytestmark = pytest.mark.integration

SUBJECT = "gangsched.decisions.Preemption.default.g"
PREEMPTING = "gangsched: preempting to accommodate a higher priority podgroup"


def victim(name: str, node: str = "n1", priority: int = 10) -> Victim:
    return Victim(uid=f"uid-{name}", namespace="default", name=name, node=node,
                  group=f"default/pod:{name}", priority=priority)


def a_preemption(*victims: Victim, deadline_ms: int = NOW_MS + 30_000) -> Preemption:
    return Preemption(id="12-0", plan_seq=12, at_ms=NOW_MS, group="default/g", priority=100,
                      deadline_ms=deadline_ms,
                      nominated=(Assignment("uid-h0", "default", "h0", "n1"),
                                 Assignment("uid-h1", "default", "h1", "n2")),
                      victims=victims, reason="2 of 2 members fit once 2 pods are preempted")


def cluster(*pods: dict[str, Any]) -> FakeKube:
    """Preemptors h0, h1 pending; the given victims; PodGroup g with uid pg-uid."""
    kube = FakeKube()
    kube.add_pod(make_pod("h0"))
    kube.add_pod(make_pod("h1"))
    kube.podgroups[("default", "g")] = {"metadata": {"name": "g", "uid": "pg-uid"}}
    for pod in pods:
        kube.add_pod(pod)
    return kube


def running(name: str, node: str = "n1", priority: int | None = 10) -> dict[str, Any]:
    pod = make_pod(name, node=node)
    if priority is not None:
        pod["spec"]["priority"] = priority
    pod["status"]["phase"] = "Running"
    return pod


def delivery(preemption: Preemption, **fields: Any) -> FakeDelivery:
    return FakeDelivery(codec.encode(preemption), subject=SUBJECT, **fields)


def counter(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


async def test_a_victim_gets_the_condition_then_is_deleted_then_gets_the_event(
    binder_bus: BinderBus,
) -> None:
    kube = cluster(running("low"))
    evicted = counter("gangsched_preemption_victims_total")
    carried_out = counter("gangsched_preemptions_total")
    done = delivery(a_preemption(victim("low")))
    await binder_bus.binder(kube).process(done)
    assert done.settled == ["ack"]
    assert [call for call in kube.calls if call[1] == "low"] == [
        ("get_pod", "low"), ("patch_pod_status", "low"), ("delete_pod", "low"),
        ("create_event", "low")]
    assert kube.status_patches[0] == ("low", {"conditions": [{
        "type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler",
        "message": PREEMPTING, "lastTransitionTime": "2023-11-14T22:13:20Z"}]})
    assert kube.deleted == ["low"]
    [event] = kube.events
    assert (event.about.name, event.about.uid, event.event_type, event.reason) == (
        "low", "uid-low", "Normal", "Preempted")
    assert event.message == ("Preempted by podgroup pg-uid on node n1 (gangsched gang "
                             "default/g): 2 of 2 members fit once 2 pods are preempted")
    assert counter("gangsched_preemption_victims_total") == evicted + 1
    assert counter("gangsched_preemptions_total") == carried_out + 1


async def test_the_preemptors_pods_are_nominated_to_their_nodes(binder_bus: BinderBus) -> None:
    kube = cluster(running("low"))
    await binder_bus.binder(kube).process(
        delivery(a_preemption(victim("low"))))
    assert kube.pods[("default", "h0")]["status"]["nominatedNodeName"] == "n1"
    assert kube.pods[("default", "h1")]["status"]["nominatedNodeName"] == "n2"


async def test_a_bound_gone_or_replaced_preemptor_pod_is_not_nominated(
    binder_bus: BinderBus,
) -> None:
    kube = cluster(running("low"))
    kube.pods[("default", "h0")]["spec"]["nodeName"] = "n3"   # bound meanwhile
    kube.pods[("default", "h1")]["metadata"]["uid"] = "uid-h1-recreated"
    await binder_bus.binder(kube).process(
        delivery(a_preemption(victim("low"))))
    assert [name for name, _ in kube.status_patches] == ["low"]
    assert "nominatedNodeName" not in kube.pods[("default", "h0")]["status"]


async def test_victims_no_longer_as_named_are_skipped_and_the_rest_evicted_in_order(
    binder_bus: BinderBus,
) -> None:
    terminating = running("going")
    terminating["metadata"]["deletionTimestamp"] = "2023-11-14T22:13:00Z"
    kube = cluster(running("equal", priority=100), running("moved", node="n9"),
                   running("replaced"), terminating, running("low"), running("low2"))
    kube.pods[("default", "replaced")]["metadata"]["uid"] = "uid-replaced-2"
    skipped = {reason: counter("gangsched_preemption_victims_skipped_total", reason=reason)
               for reason in ("priority", "moved", "replaced", "terminating", "gone")}
    done = delivery(a_preemption(victim("equal"), victim("moved"), victim("replaced"),
                                 victim("going"), victim("ghost"), victim("low"),
                                 victim("low2")))
    await binder_bus.binder(kube).process(done)
    assert done.settled == ["ack"]
    assert kube.deleted == ["low", "low2"]
    assert [event.about.name for event in kube.events] == ["low", "low2"]
    assert [name for name, _ in kube.status_patches][:2] == ["low", "low2"]
    for reason, before in skipped.items():
        assert counter("gangsched_preemption_victims_skipped_total", reason=reason) == before + 1


async def test_a_redelivery_evicts_nothing_more(binder_bus: BinderBus) -> None:
    kube = cluster(running("low"))
    preemption = a_preemption(victim("low"))
    await binder_bus.binder(kube).process(delivery(preemption))
    again = delivery(preemption, num_delivered=2)
    await binder_bus.binder(kube).process(again)
    assert again.settled == ["ack"]
    assert kube.deleted == ["low"]
    assert len(kube.events) == 1


async def test_a_victim_deleted_meanwhile_is_success_without_an_event(
    binder_bus: BinderBus,
) -> None:
    kube = cluster(running("low"))
    kube.failures[("delete_pod", "low")] = [errors.KubeNotFound("gone", status=404)]
    done = delivery(a_preemption(victim("low")))
    await binder_bus.binder(kube).process(done)
    assert done.settled == ["ack"]
    assert kube.events == []


async def test_an_api_error_is_retried_later_and_dead_lettered_at_the_end(
    binder_bus: BinderBus,
) -> None:
    kube = cluster(running("low"))
    kube.failures[("delete_pod", "low")] = [errors.KubeForbidden("no delete", status=403)] * 5
    first = delivery(a_preemption(victim("low")))
    await binder_bus.binder(kube).process(first)
    assert first.settled == ["nak"]
    publisher = FakePublisher()
    last = delivery(a_preemption(victim("low")), num_delivered=5)
    await binder_bus.binder(kube, publisher).process(last)
    assert last.settled == ["term"]
    assert (publisher.headers[0] or {})["Gangsched-Consumer"] == "binder"
    assert kube.deleted == []


async def test_a_forged_preemption_is_dead_lettered_and_evicts_nothing(
    binder_bus: BinderBus,
) -> None:
    kube = cluster(running("low"))
    publisher = FakePublisher()
    data = codec.encode(a_preemption(victim("low")))
    for headers in ({}, {SIGNATURE_HEADER: DecisionKey(b"f" * 32).sign(SUBJECT, data)}):
        forged = FakeDelivery(data, subject=SUBJECT, headers=headers)
        await binder_bus.binder(kube, publisher).process(forged)
        assert forged.settled == ["term"]
    dead_letters = [f"{binder_bus.prefix}.deadletter"] * 2
    assert [subject for subject, _, _ in publisher.published] == dead_letters
    assert kube.calls == [] and kube.deleted == [] and kube.events == []


async def test_a_preemption_received_after_its_deadline_evicts_nothing(
    binder_bus: BinderBus,
) -> None:
    kube = cluster(running("low"))
    expired = counter("gangsched_preemption_victims_skipped_total", reason="expired")
    carried_out = counter("gangsched_preemptions_total")
    done = delivery(a_preemption(victim("low"), deadline_ms=NOW_MS - 1))
    await binder_bus.binder(kube).process(done)
    assert done.settled == ["ack"]
    assert kube.calls == []
    assert counter("gangsched_preemption_victims_skipped_total", reason="expired") == expired + 1
    assert counter("gangsched_preemptions_total") == carried_out


async def test_a_singleton_preemptor_is_named_by_its_pods_uid(binder_bus: BinderBus) -> None:
    kube = cluster(running("low"))
    preemption = Preemption(id="12-1", plan_seq=12, at_ms=NOW_MS, group="default/pod:h0",
                            priority=100, deadline_ms=NOW_MS + 30_000,
                            nominated=(Assignment("uid-h0", "default", "h0", "n1"),),
                            victims=(victim("low"),))
    await binder_bus.binder(kube).process(FakeDelivery(
        codec.encode(preemption), subject="gangsched.decisions.Preemption.default.pod_h0"))
    assert kube.events[0].message == (
        "Preempted by pod uid-h0 on node n1 (gangsched pod default/h0)")
    assert kube.status_patches[0][1]["conditions"][0]["message"] == (
        "gangsched: preempting to accommodate a higher priority pod")


@pytest.mark.parametrize("step", ["get_pod", "patch_pod_status", "delete_pod"])
async def test_a_throttled_victim_of_a_gang_is_retried_in_place_so_the_gang_goes_whole(
    binder_bus: BinderBus, step: str,
) -> None:
    """Two victims of one gang, the API server answering 429 twice to a request on the
    second: both are evicted by the one delivery. (One attempt per delivery left the first
    deleted and the second running, and five such deliveries dead-lettered the decision.)"""
    kube = cluster(running("v1"), running("v2"))
    too_many = errors.KubeUnavailable("HTTP 429 TooManyRequests", status=429)
    kube.failures[(step, "v2")] = [too_many, too_many]
    done = delivery(a_preemption(victim("v1"), victim("v2")))
    await binder_bus.binder(kube).process(done)
    assert done.settled == ["ack"]
    assert kube.deleted == ["v1", "v2"]
    assert [call for call in kube.calls if call[0] == step].count((step, "v2")) == 3


async def test_victims_that_cannot_be_read_before_the_deadline_are_not_evicted(
    binder_bus: BinderBus,
) -> None:
    """The second victim unreadable (503) until the decision's deadline: no victim is
    evicted, as the planner no longer holds the nodes then, and none of the gang is left
    half evicted; the decision is done (acknowledged), its victims skipped as expired."""
    kube = cluster(running("v1"), running("v2"))
    kube.failures[("get_pod", "v2")] = [
        errors.KubeUnavailable("HTTP 503 ServiceUnavailable", status=503)] * 100
    expired = counter("gangsched_preemption_victims_skipped_total", reason="expired")
    done = delivery(a_preemption(victim("v1"), victim("v2"), deadline_ms=NOW_MS + 700))
    await binder_bus.binder(kube).process(done)
    assert done.settled == ["ack"]
    assert kube.deleted == [] and kube.status_patches == []
    assert counter("gangsched_preemption_victims_skipped_total", reason="expired") == expired + 2
