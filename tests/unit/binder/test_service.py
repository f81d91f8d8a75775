"""The binder shell: ack after outcomes are published, poison is dead-lettered, never a crash."""

from __future__ import annotations

import msgspec

from services.binder.service import MAX_ATTEMPTS, Binder
from services.config.settings import Settings
from services.contracts import codec
from services.contracts.decisions import Assignment, Placement, Rejection
from services.contracts.events import GroupBound, Outcome
from tests.unit.binder.fakes import FakeDelivery, FakeKube, FakePublisher, make_node, make_pod

NOW_MS = 1_700_000_000_000


class FakeOutcomeLog:
    def __init__(self, last: Outcome | None = None) -> None:
        self.last_outcome = last

    async def last(self, group: str) -> Outcome | None:
        return self.last_outcome


def binder(kube: FakeKube, publisher: FakePublisher, log: FakeOutcomeLog | None = None) -> Binder:
    return Binder(kube, publisher, Settings(), outcome_log=log, clock=lambda: NOW_MS)


def a_placement() -> Placement:
    return Placement(id="9-0", plan_seq=9, at_ms=NOW_MS, group="default/g", attempt=1,
                     deadline_ms=NOW_MS + 30_000,
                     members=(Assignment("uid-a", "default", "a", "n1"),))


def cluster() -> FakeKube:
    kube = FakeKube()
    kube.add_node(make_node("n1"))
    kube.add_pod(make_pod("a"))
    return kube


async def test_a_placement_is_acked_after_its_outcomes_are_published() -> None:
    kube, publisher = cluster(), FakePublisher()
    delivery = FakeDelivery(codec.encode(a_placement()))
    await binder(kube, publisher).process(delivery)
    assert [msg_id for _, _, msg_id in publisher.published] == [
        "outcome/9-0/MemberBound/uid-a", "outcome/9-0/GroupBound",
    ]
    assert publisher.published[0][0] == "gangsched.events.outcome.default.g"
    assert delivery.settled == ["ack"]
    assert kube.node_of("a") == "n1"


async def test_a_poisoned_decision_is_dead_lettered_and_terminated() -> None:
    publisher = FakePublisher()
    delivery = FakeDelivery(b'{"type": "Placement", "id": 3}', seq=42)
    await binder(FakeKube(), publisher).process(delivery)
    assert delivery.settled == ["term"]
    subject, data, msg_id = publisher.published[0]
    assert (subject, data) == ("gangsched.deadletter", delivery.data)
    assert msg_id == "deadletter/binder/42"
    headers = publisher.headers[0] or {}
    assert headers["Gangsched-Consumer"] == "binder"
    assert headers["Gangsched-Reason"].startswith("PoisonedMessage")


async def test_a_failing_decision_is_retried_then_dead_lettered() -> None:
    kube, publisher = cluster(), FakePublisher()

    async def broken(namespace: str, name: str) -> None:
        raise RuntimeError("bug")

    kube.get_node = broken  # type: ignore[method-assign,assignment]
    first = FakeDelivery(codec.encode(a_placement()))
    await binder(kube, publisher).process(first)
    assert first.settled == ["nak"]
    last = FakeDelivery(codec.encode(a_placement()), num_delivered=MAX_ATTEMPTS)
    await binder(kube, publisher).process(last)
    assert last.settled == ["term"]
    assert publisher.published[-1][0] == "gangsched.deadletter"


async def test_a_redelivered_placement_already_settled_is_only_acked() -> None:
    kube, publisher = cluster(), FakePublisher()
    settled = FakeOutcomeLog(GroupBound(at_ms=1, decision_id="9-0", group="default/g"))
    delivery = FakeDelivery(codec.encode(a_placement()), num_delivered=2)
    await binder(kube, publisher, settled).process(delivery)
    assert delivery.settled == ["ack"]
    assert publisher.published == []
    assert kube.calls == []


async def test_a_redelivered_placement_not_settled_is_carried_out() -> None:
    kube, publisher = cluster(), FakePublisher()
    other = FakeOutcomeLog(GroupBound(at_ms=1, decision_id="1-0", group="default/g"))
    delivery = FakeDelivery(codec.encode(a_placement()), num_delivered=2)
    await binder(kube, publisher, other).process(delivery)
    assert delivery.settled == ["ack"]
    assert kube.node_of("a") == "n1"


async def test_a_rejection_is_reported_and_acked() -> None:
    kube, publisher = cluster(), FakePublisher()
    decision = Rejection(id="2-0", plan_seq=2, at_ms=0, group="default/g", reason="no fit",
                         pods=())
    delivery = FakeDelivery(msgspec.json.encode(decision))
    await binder(kube, publisher).process(delivery)
    assert delivery.settled == ["ack"]
    assert publisher.published == []
