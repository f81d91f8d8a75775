"""The binder shell: ack after outcomes are published, poison is dead-lettered, never a crash."""

from __future__ import annotations

import msgspec
import pytest

from services.binder.service import MAX_ATTEMPTS, Binder, MissingDecisionKey
from services.config.settings import Settings
from services.contracts import codec
from services.contracts.decisions import Assignment, Placement, PodRef, Rejection
from services.contracts.events import GroupBound, GroupRolledBack, MemberBound, Outcome
from services.contracts.signing import DecisionKey
from tests.unit.binder.fakes import (
    DECISION_KEY,
    FakeDelivery,
    FakeKube,
    FakePublisher,
    make_node,
    make_pod,
)

NOW_MS = 1_700_000_000_000
SETTINGS = Settings(decision_key=DECISION_KEY)


class FakeOutcomeLog:
    """Every outcome published, of any decision; answers per decision like EVENTS would."""

    def __init__(self, *published: Outcome) -> None:
        self.published = list(published)

    async def of_decision(self, group: str, decision_id: str) -> list[Outcome]:
        return [o for o in self.published if o.group == group and o.decision_id == decision_id]

    async def newest(self, group: str) -> Outcome | None:
        of_group = [o for o in self.published if o.group == group]
        return of_group[-1] if of_group else None


def binder(kube: FakeKube, publisher: FakePublisher, log: FakeOutcomeLog | None = None) -> Binder:
    return Binder(kube, publisher, SETTINGS, outcome_log=log, clock=lambda: NOW_MS)


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


def three_member_placement(deadline_in_ms: int = 60_000) -> Placement:
    return Placement(id="9-0", plan_seq=9, at_ms=NOW_MS, group="default/g", attempt=1,
                     deadline_ms=NOW_MS + deadline_in_ms,
                     members=tuple(Assignment(f"uid-{n}", "default", n, "n1") for n in "abc"))


async def test_a_settled_placement_is_never_undone_when_a_later_decision_settled_last() -> None:
    # e5: 9-0 bound a, b, c and published GroupBound; a later decision's GroupBound is now the
    # group's last outcome; c finished and is gone; 9-0 is redelivered after its deadline.
    kube, publisher = FakeKube(), FakePublisher()
    kube.add_node(make_node("n1"))
    for name in "abc":
        kube.add_pod(make_pod(name, node="n1"))
    log = FakeOutcomeLog(
        *(MemberBound(at_ms=1, decision_id="9-0", group="default/g", pod_uid=f"uid-{n}",
                      node="n1") for n in "abc"),
        GroupBound(at_ms=1, decision_id="9-0", group="default/g"),
        GroupBound(at_ms=2, decision_id="20-0", group="default/g"),
    )
    del kube.pods[("default", "c")]
    late = Binder(kube, publisher, SETTINGS, outcome_log=log, clock=lambda: NOW_MS + 61_000)
    delivery = FakeDelivery(codec.encode(three_member_placement()), num_delivered=2)
    await late.process(delivery)
    assert delivery.settled == ["ack"]
    assert kube.deleted == []
    assert publisher.published == []


async def test_a_settled_placement_is_remembered_by_the_process_that_settled_it() -> None:
    kube, publisher = FakeKube(), FakePublisher()
    kube.add_node(make_node("n1"))
    for name in "abc":
        kube.add_pod(make_pod(name))
    clock = [NOW_MS]
    service = Binder(kube, publisher, SETTINGS, outcome_log=FakeOutcomeLog(),
                     clock=lambda: clock[0])
    await service.process(FakeDelivery(codec.encode(three_member_placement())))
    del kube.pods[("default", "c")]
    clock[0] = NOW_MS + 61_000
    publisher.published.clear()
    again = FakeDelivery(codec.encode(three_member_placement()), num_delivered=2)
    await service.process(again)
    assert again.settled == ["ack"]
    assert kube.deleted == []
    assert publisher.published == []


async def test_a_settled_rollback_is_not_carried_out_again() -> None:
    kube, publisher = cluster(), FakePublisher()
    log = FakeOutcomeLog(GroupRolledBack(at_ms=1, decision_id="9-0", group="default/g",
                                         reason="x", failed_pod=None, deleted_pods=()))
    delivery = FakeDelivery(codec.encode(a_placement()), num_delivered=2)
    await binder(kube, publisher, log).process(delivery)
    assert delivery.settled == ["ack"]
    assert kube.calls == []


def a_rejection(seq: int, reason: str) -> FakeDelivery:
    decision = Rejection(id=f"{seq}-0", plan_seq=seq, at_ms=0, group="default/g", reason=reason,
                         pods=(PodRef("uid-a", "default", "a"),))
    return FakeDelivery(msgspec.json.encode(decision), seq=seq,
                        subject="gangsched.decisions.Rejection.default.g")


async def test_a_burst_of_rejections_of_one_group_writes_the_newest_only() -> None:
    kube, publisher = cluster(), FakePublisher()
    handler = binder(kube, publisher)
    burst = [a_rejection(seq, f"waiting: {seq} of 9 members") for seq in range(1, 6)]
    for delivery in burst:
        await handler.submit_report(delivery)
    await handler.reports_idle()
    assert [d.settled for d in burst] == [["ack"]] * 5  # every one settled, none lost
    assert [e.message for e in kube.events] == ["waiting: 5 of 9 members"]


async def test_a_poisoned_report_is_dead_lettered() -> None:
    publisher = FakePublisher()
    delivery = FakeDelivery(b'{"type": "Rejection"}', seq=4,
                            subject="gangsched.decisions.Rejection.default.g")
    await binder(FakeKube(), publisher).submit_report(delivery)
    assert delivery.settled == ["term"]
    assert publisher.published[0][0] == "gangsched.deadletter"


FORGERIES = {
    "unsigned": {},
    "signed with another key": {
        "Gangsched-Signature": DecisionKey(b"x" * 32).sign(
            "gangsched.decisions.Placement.default.g", codec.encode(a_placement()))},
    "a signature of another message": {
        "Gangsched-Signature": DECISION_KEY.sign("gangsched.decisions.Placement.default.g",
                                                 b"{}")},
    "a signature of the same message on another subject": {
        "Gangsched-Signature": DECISION_KEY.sign("gangsched.decisions.Placement.default.h",
                                                 codec.encode(a_placement()))},
}


@pytest.mark.parametrize("forgery", sorted(FORGERIES))
async def test_a_decision_the_planner_did_not_sign_is_dead_lettered_and_binds_nothing(
    forgery: str,
) -> None:
    kube, publisher = cluster(), FakePublisher()
    delivery = FakeDelivery(codec.encode(a_placement()), seq=7, headers=FORGERIES[forgery])
    await binder(kube, publisher).process(delivery)
    assert delivery.settled == ["term"]
    assert kube.calls == [] and kube.node_of("a") is None
    assert [subject for subject, _, _ in publisher.published] == ["gangsched.deadletter"]
    reason = publisher.headers[0]["Gangsched-Reason"] if publisher.headers[0] else ""
    assert reason.startswith("not the planner's decision: ")


async def test_a_forged_report_writes_nothing() -> None:
    kube, publisher = cluster(), FakePublisher()
    delivery = a_rejection(3, "forged")
    delivery.headers = {}
    handler = binder(kube, publisher)
    await handler.submit_report(delivery)
    await handler.reports_idle()
    assert delivery.settled == ["term"] and kube.events == [] and kube.calls == []


def test_a_binder_without_a_decision_key_refuses_to_start() -> None:
    with pytest.raises(MissingDecisionKey, match="--decision-key-file"):
        Binder(FakeKube(), FakePublisher(), Settings())


async def test_a_copy_of_a_settled_placement_published_again_is_not_carried_out() -> None:
    # a replay attack (or a stray republish) of a validly signed placement: another binder
    # settled it, one member was recreated since; carrying it out again would roll back and
    # delete the running member it bound
    kube, publisher = FakeKube(), FakePublisher()
    kube.add_node(make_node("n1"))
    kube.add_pod(make_pod("a", node="n1", bound_by="9-0"))
    log = FakeOutcomeLog(GroupBound(at_ms=1, decision_id="9-0", group="default/g"))
    delivery = FakeDelivery(codec.encode(a_placement()))  # a first delivery of the copy
    await binder(kube, publisher, log).process(delivery)
    assert delivery.settled == ["ack"]
    assert kube.deleted == [] and publisher.published == []
    assert [call for call in kube.calls if call[0] in ("bind", "delete_pod")] == []


async def test_a_placement_older_than_the_groups_newest_outcome_is_not_carried_out() -> None:
    kube, publisher = cluster(), FakePublisher()
    log = FakeOutcomeLog(GroupRolledBack(at_ms=1, decision_id="12-0", group="default/g",
                                         reason="x", failed_pod=None, deleted_pods=()))
    await binder(kube, publisher, log).process(FakeDelivery(codec.encode(a_placement())))
    assert kube.node_of("a") is None and publisher.published == []


async def test_a_placement_after_the_groups_earlier_outcomes_is_carried_out() -> None:
    kube, publisher = cluster(), FakePublisher()
    log = FakeOutcomeLog(GroupRolledBack(at_ms=1, decision_id="3-0", group="default/g",
                                         reason="x", failed_pod=None, deleted_pods=()))
    await binder(kube, publisher, log).process(FakeDelivery(codec.encode(a_placement())))
    assert kube.node_of("a") == "n1"
