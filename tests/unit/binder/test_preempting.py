"""Preemptions through the binder: victims evicted as kube-scheduler does, only when still the
pod named; the preemptor nominated; failures retried, forgeries dead-lettered, redelivery a
no-op."""

from __future__ import annotations

from typing import Any, get_args

from services.binder.service import MAIN_TYPES, REPORT_TYPES, Binder, lane
from services.config.settings import Settings
from services.contracts import codec
from services.contracts.decisions import Assignment, Decision, Placement, Preemption, Victim
from services.contracts.signing import SIGNATURE_HEADER, DecisionKey
from services.kube import errors
from services.runtime.metrics import REGISTRY
from tests.unit.binder.fakes import DECISION_KEY, FakeDelivery, FakeKube, FakePublisher, make_pod

NOW_MS = 1_700_000_000_000
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


def binder(kube: FakeKube, publisher: FakePublisher | None = None) -> Binder:
    return Binder(kube, publisher or FakePublisher(), Settings(decision_key=DECISION_KEY),
                  clock=lambda: NOW_MS)


def delivery(preemption: Preemption, **fields: Any) -> FakeDelivery:
    return FakeDelivery(codec.encode(preemption), subject=SUBJECT, **fields)


def counter(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def test_every_decision_type_has_exactly_one_binder_consumer() -> None:
    assert set(MAIN_TYPES) | set(REPORT_TYPES) == set(get_args(Decision))
    assert not set(MAIN_TYPES) & set(REPORT_TYPES)
    assert Preemption in MAIN_TYPES


def test_a_preemption_runs_in_its_groups_placement_lane() -> None:
    placement = Placement(id="13-0", plan_seq=13, at_ms=NOW_MS, group="default/g", attempt=1,
                          deadline_ms=NOW_MS, members=())
    assert lane(a_preemption()) == lane(placement) == "Placement:default/g"


async def test_a_victim_gets_the_condition_then_is_deleted_then_gets_the_event() -> None:
    kube = cluster(running("low"))
    evicted = counter("gangsched_preemption_victims_total")
    carried_out = counter("gangsched_preemptions_total")
    done = delivery(a_preemption(victim("low")))
    await binder(kube).process(done)
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


async def test_the_preemptors_pods_are_nominated_to_their_nodes() -> None:
    kube = cluster(running("low"))
    await binder(kube).process(delivery(a_preemption(victim("low"))))
    assert kube.pods[("default", "h0")]["status"]["nominatedNodeName"] == "n1"
    assert kube.pods[("default", "h1")]["status"]["nominatedNodeName"] == "n2"


async def test_a_bound_gone_or_replaced_preemptor_pod_is_not_nominated() -> None:
    kube = cluster(running("low"))
    kube.pods[("default", "h0")]["spec"]["nodeName"] = "n3"   # bound meanwhile
    kube.pods[("default", "h1")]["metadata"]["uid"] = "uid-h1-recreated"
    await binder(kube).process(delivery(a_preemption(victim("low"))))
    assert [name for name, _ in kube.status_patches] == ["low"]
    assert "nominatedNodeName" not in kube.pods[("default", "h0")]["status"]


async def test_victims_no_longer_as_named_are_skipped_and_the_rest_evicted_in_order() -> None:
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
    await binder(kube).process(done)
    assert done.settled == ["ack"]
    assert kube.deleted == ["low", "low2"]
    assert [event.about.name for event in kube.events] == ["low", "low2"]
    assert [name for name, _ in kube.status_patches][:2] == ["low", "low2"]
    for reason, before in skipped.items():
        assert counter("gangsched_preemption_victims_skipped_total", reason=reason) == before + 1


async def test_a_redelivery_evicts_nothing_more() -> None:
    kube = cluster(running("low"))
    preemption = a_preemption(victim("low"))
    await binder(kube).process(delivery(preemption))
    again = delivery(preemption, num_delivered=2)
    await binder(kube).process(again)
    assert again.settled == ["ack"]
    assert kube.deleted == ["low"]
    assert len(kube.events) == 1


async def test_a_victim_deleted_meanwhile_is_success_without_an_event() -> None:
    kube = cluster(running("low"))
    kube.failures[("delete_pod", "low")] = [errors.KubeNotFound("gone", status=404)]
    done = delivery(a_preemption(victim("low")))
    await binder(kube).process(done)
    assert done.settled == ["ack"]
    assert kube.events == []


async def test_an_api_error_is_retried_later_and_dead_lettered_at_the_end() -> None:
    kube = cluster(running("low"))
    kube.failures[("delete_pod", "low")] = [errors.KubeForbidden("no delete", status=403)] * 5
    first = delivery(a_preemption(victim("low")))
    await binder(kube).process(first)
    assert first.settled == ["nak"]
    publisher = FakePublisher()
    last = delivery(a_preemption(victim("low")), num_delivered=5)
    await binder(kube, publisher).process(last)
    assert last.settled == ["term"]
    assert (publisher.headers[0] or {})["Gangsched-Consumer"] == "binder"
    assert kube.deleted == []


async def test_a_forged_preemption_is_dead_lettered_and_evicts_nothing() -> None:
    kube = cluster(running("low"))
    publisher = FakePublisher()
    data = codec.encode(a_preemption(victim("low")))
    for headers in ({}, {SIGNATURE_HEADER: DecisionKey(b"f" * 32).sign(SUBJECT, data)}):
        forged = FakeDelivery(data, subject=SUBJECT, headers=headers)
        await binder(kube, publisher).process(forged)
        assert forged.settled == ["term"]
    assert [subject for subject, _, _ in publisher.published] == ["gangsched.deadletter"] * 2
    assert kube.calls == [] and kube.deleted == [] and kube.events == []


async def test_a_preemption_received_after_its_deadline_evicts_nothing() -> None:
    kube = cluster(running("low"))
    expired = counter("gangsched_preemption_victims_skipped_total", reason="expired")
    carried_out = counter("gangsched_preemptions_total")
    done = delivery(a_preemption(victim("low"), deadline_ms=NOW_MS - 1))
    await binder(kube).process(done)
    assert done.settled == ["ack"]
    assert kube.calls == []
    assert counter("gangsched_preemption_victims_skipped_total", reason="expired") == expired + 1
    assert counter("gangsched_preemptions_total") == carried_out


async def test_a_singleton_preemptor_is_named_by_its_pods_uid() -> None:
    kube = cluster(running("low"))
    preemption = Preemption(id="12-1", plan_seq=12, at_ms=NOW_MS, group="default/pod:h0",
                            priority=100, deadline_ms=NOW_MS + 30_000,
                            nominated=(Assignment("uid-h0", "default", "h0", "n1"),),
                            victims=(victim("low"),))
    await binder(kube).process(FakeDelivery(
        codec.encode(preemption), subject="gangsched.decisions.Preemption.default.pod_h0"))
    assert kube.events[0].message == (
        "Preempted by pod uid-h0 on node n1 (gangsched pod default/h0)")
    assert kube.status_patches[0][1]["conditions"][0]["message"] == (
        "gangsched: preempting to accommodate a higher priority pod")
