"""The binder shell: ack after outcomes are published, poison is dead-lettered, never a crash.

Binders are wired as in production (`binder_harness`): what other binders settled is read
back from EVENTS on a real nats-server, and members from the bus view once it reached the
decision's plan point.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import msgspec
import pytest

from services.binder import service
from services.binder.service import MAX_ATTEMPTS, Binder, MissingDecisionKey
from services.contracts import codec
from services.contracts.decisions import Assignment, Placement, PodRef, Rejection
from services.contracts.events import GroupBound, GroupRolledBack, MemberBound, Outcome
from services.contracts.signing import DecisionKey
from services.runtime import metrics
from tests.integration.binder_harness import NOW_MS, BinderBus
from tests.unit.binder.fakes import (
    DECISION_KEY,
    FakeDelivery,
    FakeKube,
    FakePublisher,
    make_node,
    make_pod,
)

pytestmark = pytest.mark.integration


def a_placement(plan_seq: int) -> Placement:
    """Pod a to n1, planned at `plan_seq` (its id `<plan_seq>-0`)."""
    return Placement(id=f"{plan_seq}-0", plan_seq=plan_seq, at_ms=NOW_MS, group="default/g",
                     attempt=1, deadline_ms=NOW_MS + 30_000,
                     members=(Assignment("uid-a", "default", "a", "n1"),))


ROOM = {"cpu": "4", "memory": "8Gi", "pods": "110"}
"""What node n1 offers (its status.allocatable)."""


def cluster() -> FakeKube:
    """Node n1 and pod a, pending."""
    kube = FakeKube()
    kube.add_node(make_node("n1", allocatable=ROOM))
    kube.add_pod(make_pod("a"))
    return kube


async def three_members(binder_bus: BinderBus, *, node: str | None) -> tuple[FakeKube, Placement]:
    """Pods a, b, c (on `node`, or pending) and node n1, observed; their placement to n1,
    planned there."""
    kube = FakeKube()
    kube.add_node(make_node("n1", allocatable=ROOM))
    for name in "abc":
        kube.add_pod(make_pod(name, node=node))
    plan_seq = await binder_bus.observe(kube)
    return kube, Placement(
        id=f"{plan_seq}-0", plan_seq=plan_seq, at_ms=NOW_MS, group="default/g", attempt=1,
        deadline_ms=NOW_MS + 60_000,
        members=tuple(Assignment(f"uid-{n}", "default", n, "n1") for n in "abc"))


def later(plan_seq: int, by: int = 10) -> str:
    """The id of a decision planned `by` sequences after `plan_seq`."""
    return f"{plan_seq + by}-0"


async def test_a_placement_is_acked_after_its_outcomes_are_published(
    binder_bus: BinderBus,
) -> None:
    kube, publisher = cluster(), FakePublisher()
    placement = a_placement(await binder_bus.observe(kube))
    delivery = FakeDelivery(codec.encode(placement))
    await binder_bus.binder(kube, publisher).process(delivery)
    assert [msg_id for _, _, msg_id in publisher.published] == [
        f"outcome/{placement.id}/GroupBound"]
    assert publisher.published[0][0] == f"{binder_bus.prefix}.events.outcome.default.g"
    assert delivery.settled == ["ack"]
    assert kube.node_of("a") == "n1"
    # the view had reached the plan point: member and node came from it, not the API
    assert ("get_pod", "a") not in kube.calls


async def test_a_bound_placement_writes_its_scheduled_events_after_the_ack(
    binder_bus: BinderBus,
) -> None:
    kube, placement = await three_members(binder_bus, node=None)
    binder = binder_bus.binder(kube, FakePublisher())
    delivery = FakeDelivery(codec.encode(placement))
    await binder.process(delivery)
    assert delivery.settled == ["ack"]
    for _ in range(50):  # written in the background (`Reporter.placed_in_background`)
        if len(kube.events) == 3:
            break
        await asyncio.sleep(0.01)
    assert sorted((e.about.name, e.reason) for e in kube.events) == [
        ("a", "Scheduled"), ("b", "Scheduled"), ("c", "Scheduled")]
    await binder.close()


async def test_a_poisoned_decision_is_dead_lettered_and_terminated(binder_bus: BinderBus) -> None:
    publisher = FakePublisher()
    delivery = FakeDelivery(b'{"type": "Placement", "id": 3}', seq=42)
    await binder_bus.binder(FakeKube(), publisher).process(delivery)
    assert delivery.settled == ["term"]
    subject, data, msg_id = publisher.published[0]
    assert (subject, data) == (f"{binder_bus.prefix}.deadletter", delivery.data)
    assert msg_id == "deadletter/binder/42"
    headers = publisher.headers[0] or {}
    assert headers["Gangsched-Consumer"] == "binder"
    assert headers["Gangsched-Reason"].startswith("PoisonedMessage")


async def test_a_failing_decision_is_retried_then_dead_lettered(binder_bus: BinderBus) -> None:
    kube, publisher = cluster(), FakePublisher()
    placement = a_placement(await binder_bus.observe(kube))
    kube.failures[("bind", "a")] = [RuntimeError("bug")] * 2
    first = FakeDelivery(codec.encode(placement))
    await binder_bus.binder(kube, publisher).process(first)
    assert first.settled == ["nak"]
    last = FakeDelivery(codec.encode(placement), num_delivered=MAX_ATTEMPTS)
    await binder_bus.binder(kube, publisher).process(last)
    assert last.settled == ["term"]
    assert publisher.published[-1][0] == f"{binder_bus.prefix}.deadletter"
    assert kube.node_of("a") is None


def final_outcome(kind: str, decision_id: str) -> Outcome:
    if kind == "bound":
        return GroupBound(at_ms=1, decision_id=decision_id, group="default/g")
    return GroupRolledBack(at_ms=1, decision_id=decision_id, group="default/g", reason="x",
                           failed_pod=None, deleted_pods=())


@pytest.mark.parametrize("kind", ["bound", "rolled back"])
async def test_a_redelivered_placement_already_settled_is_only_acked(
    kind: str, binder_bus: BinderBus,
) -> None:
    kube, publisher = cluster(), FakePublisher()
    placement = a_placement(await binder_bus.observe(kube))
    await binder_bus.publish_outcomes([final_outcome(kind, placement.id)])
    delivery = FakeDelivery(codec.encode(placement), num_delivered=2)
    await binder_bus.binder(kube, publisher).process(delivery)
    assert delivery.settled == ["ack"]
    assert publisher.published == []
    assert kube.calls == []


async def test_a_redelivered_placement_not_settled_is_carried_out(binder_bus: BinderBus) -> None:
    kube, publisher = cluster(), FakePublisher()
    placement = a_placement(await binder_bus.observe(kube))
    await binder_bus.publish_outcomes([GroupBound(at_ms=1, decision_id="1-0", group="default/g")])
    delivery = FakeDelivery(codec.encode(placement), num_delivered=2)
    await binder_bus.binder(kube, publisher).process(delivery)
    assert delivery.settled == ["ack"]
    assert kube.node_of("a") == "n1"


async def test_a_rejection_is_reported_and_acked(binder_bus: BinderBus) -> None:
    kube, publisher = cluster(), FakePublisher()
    plan_seq = await binder_bus.observe(kube)
    decision = Rejection(id=f"{plan_seq}-0", plan_seq=plan_seq, at_ms=0, group="default/g",
                         reason="no fit", pods=())
    delivery = FakeDelivery(msgspec.json.encode(decision))
    await binder_bus.binder(kube, publisher).process(delivery)
    assert delivery.settled == ["ack"]
    assert publisher.published == []


async def test_a_settled_placement_is_never_undone_when_a_later_decision_settled_last(
    binder_bus: BinderBus,
) -> None:
    # e5: the placement bound a, b, c and published GroupBound; a later decision's GroupBound
    # is now the group's last outcome; c finished and is gone; it is redelivered after its
    # deadline.
    publisher = FakePublisher()
    kube, placement = await three_members(binder_bus, node="n1")
    await binder_bus.publish_outcomes([
        *(MemberBound(at_ms=1, decision_id=placement.id, group="default/g",
                      pod_uid=f"uid-{n}", node="n1") for n in "abc"),
        GroupBound(at_ms=1, decision_id=placement.id, group="default/g"),
        GroupBound(at_ms=2, decision_id=later(placement.plan_seq), group="default/g"),
    ])
    del kube.pods[("default", "c")]
    late = binder_bus.binder(kube, publisher, clock=lambda: NOW_MS + 61_000)
    delivery = FakeDelivery(codec.encode(placement), num_delivered=2)
    await late.process(delivery)
    assert delivery.settled == ["ack"]
    assert kube.deleted == []
    assert publisher.published == []


async def test_a_settled_placement_is_remembered_by_the_process_that_settled_it(
    binder_bus: BinderBus,
) -> None:
    # what this binder published went to its own publisher, not EVENTS: only its memory knows
    publisher = FakePublisher()
    kube, placement = await three_members(binder_bus, node=None)
    clock = [NOW_MS]
    service = binder_bus.binder(kube, publisher, clock=lambda: clock[0])
    await service.process(FakeDelivery(codec.encode(placement)))
    del kube.pods[("default", "c")]
    clock[0] = NOW_MS + 61_000
    publisher.published.clear()
    again = FakeDelivery(codec.encode(placement), num_delivered=2)
    await service.process(again)
    assert again.settled == ["ack"]
    assert kube.deleted == []
    assert publisher.published == []


def a_rejection(seq: int, reason: str, plan_seq: int) -> FakeDelivery:
    """A Rejection of pod a at `plan_seq`, delivered as DECISIONS sequence `seq`."""
    decision = Rejection(id=f"{plan_seq}-{seq}", plan_seq=plan_seq, at_ms=0, group="default/g",
                         reason=reason, pods=(PodRef("uid-a", "default", "a"),))
    return FakeDelivery(msgspec.json.encode(decision), seq=seq,
                        subject="gangsched.decisions.Rejection.default.g")


async def test_a_burst_of_rejections_of_one_group_writes_the_newest_only(
    binder_bus: BinderBus,
) -> None:
    kube, publisher = cluster(), FakePublisher()
    plan_seq = await binder_bus.observe(kube)
    handler = binder_bus.binder(kube, publisher)
    burst = [a_rejection(seq, f"waiting: {seq} of 9 members", plan_seq) for seq in range(1, 6)]
    for delivery in burst:
        await handler.submit_report(delivery)
    await handler.reports_idle()
    assert [d.settled for d in burst] == [["ack"]] * 5  # every one settled, none lost
    assert [e.message for e in kube.events] == ["waiting: 5 of 9 members"]


async def test_a_poisoned_report_is_dead_lettered(binder_bus: BinderBus) -> None:
    publisher = FakePublisher()
    delivery = FakeDelivery(b'{"type": "Rejection"}', seq=4,
                            subject="gangsched.decisions.Rejection.default.g")
    await binder_bus.binder(FakeKube(), publisher).submit_report(delivery)
    assert delivery.settled == ["term"]
    assert publisher.published[0][0] == f"{binder_bus.prefix}.deadletter"


def forgeries(placement: Placement) -> dict[str, dict[str, str]]:
    data = codec.encode(placement)
    return {
        "unsigned": {},
        "signed with another key": {
            "Gangsched-Signature": DecisionKey(b"x" * 32).sign(
                "gangsched.decisions.Placement.default.g", data)},
        "a signature of another message": {
            "Gangsched-Signature": DECISION_KEY.sign("gangsched.decisions.Placement.default.g",
                                                     b"{}")},
        "a signature of the same message on another subject": {
            "Gangsched-Signature": DECISION_KEY.sign("gangsched.decisions.Placement.default.h",
                                                     data)},
    }


@pytest.mark.parametrize("forgery", sorted(forgeries(a_placement(1))))
async def test_a_decision_the_planner_did_not_sign_is_dead_lettered_and_binds_nothing(
    forgery: str, binder_bus: BinderBus,
) -> None:
    kube, publisher = cluster(), FakePublisher()
    placement = a_placement(await binder_bus.observe(kube))
    delivery = FakeDelivery(codec.encode(placement), seq=7,
                            headers=forgeries(placement)[forgery])
    await binder_bus.binder(kube, publisher).process(delivery)
    assert delivery.settled == ["term"]
    assert kube.calls == [] and kube.node_of("a") is None
    assert [subject for subject, _, _ in publisher.published] == [
        f"{binder_bus.prefix}.deadletter"]
    reason = publisher.headers[0]["Gangsched-Reason"] if publisher.headers[0] else ""
    assert reason.startswith("not the planner's decision: ")


async def test_a_forged_report_writes_nothing(binder_bus: BinderBus) -> None:
    kube, publisher = cluster(), FakePublisher()
    delivery = a_rejection(3, "forged", await binder_bus.observe(kube))
    delivery.headers = {}
    handler = binder_bus.binder(kube, publisher)
    await handler.submit_report(delivery)
    await handler.reports_idle()
    assert delivery.settled == ["term"] and kube.events == [] and kube.calls == []


async def test_a_binder_without_a_decision_key_refuses_to_start(binder_bus: BinderBus) -> None:
    with pytest.raises(MissingDecisionKey, match="--decision-key-file"):
        binder_bus.binder(FakeKube(), FakePublisher(), decision_key=None)


async def test_a_copy_of_a_settled_placement_published_again_is_not_carried_out(
    binder_bus: BinderBus,
) -> None:
    # a replay attack (or a stray republish) of a validly signed placement: another binder
    # settled it, one member was recreated since; carrying it out again would roll back and
    # delete the running member it bound
    kube, publisher = FakeKube(), FakePublisher()
    kube.add_node(make_node("n1", allocatable=ROOM))
    plan_seq = await binder_bus.observe(kube)
    kube.add_pod(make_pod("a", node="n1", bound_by=f"{plan_seq}-0"))
    placement = a_placement(plan_seq)
    await binder_bus.publish_outcomes([
        GroupBound(at_ms=1, decision_id=placement.id, group="default/g")])
    delivery = FakeDelivery(codec.encode(placement))  # a first delivery of the copy
    await binder_bus.binder(kube, publisher).process(delivery)
    assert delivery.settled == ["ack"]
    assert kube.deleted == [] and publisher.published == []
    assert [call for call in kube.calls if call[0] in ("bind", "delete_pod")] == []


async def test_a_placement_older_than_the_groups_newest_outcome_is_not_carried_out(
    binder_bus: BinderBus,
) -> None:
    kube, publisher = cluster(), FakePublisher()
    placement = a_placement(await binder_bus.observe(kube))
    await binder_bus.publish_outcomes([GroupRolledBack(
        at_ms=1, decision_id=later(placement.plan_seq), group="default/g", reason="x",
        failed_pod=None, deleted_pods=())])
    await binder_bus.binder(kube, publisher).process(
        FakeDelivery(codec.encode(placement)))
    assert kube.node_of("a") is None and publisher.published == []


async def test_a_placement_after_the_groups_earlier_outcomes_is_carried_out(
    binder_bus: BinderBus,
) -> None:
    kube, publisher = cluster(), FakePublisher()
    await binder_bus.publish_outcomes([GroupRolledBack(
        at_ms=1, decision_id="1-0", group="default/g", reason="x", failed_pod=None,
        deleted_pods=())])
    placement = a_placement(await binder_bus.observe(kube))
    await binder_bus.binder(kube, publisher).process(
        FakeDelivery(codec.encode(placement)))
    assert kube.node_of("a") == "n1"


async def test_a_placement_whose_view_lags_its_plan_point_reads_the_api(
    binder_bus: BinderBus,
) -> None:
    # the view waits a short while for the plan point, then the members are read instead
    kube, publisher = cluster(), FakePublisher()
    placement = a_placement(await binder_bus.observe(kube) + 1)
    await binder_bus.binder(kube, publisher).process(
        FakeDelivery(codec.encode(placement)))
    assert kube.node_of("a") == "n1"
    assert ("get_pod", "a") in kube.calls and ("get_node", "n1") in kube.calls



class HeldKube(FakeKube):
    """Binds of the pods named in `held` wait for `release`; `started` lists binds begun."""

    def __init__(self, held: set[str]) -> None:
        super().__init__()
        self.held, self.release, self.started = held, asyncio.Event(), list[str]()

    async def bind(self, namespace: str, name: str, uid: str, node: str, *,
                   annotations: dict[str, str]) -> None:
        self.started.append(name)
        if name in self.held:
            await self.release.wait()
        await super().bind(namespace, name, uid, node, annotations=annotations)


async def two_gangs(binder_bus: BinderBus, kube: FakeKube) -> tuple[Placement, Placement]:
    """Gangs g (pods a, b, c) and h (pods d, e, f), pending, observed; each placed on n1."""
    kube.add_node(make_node("n1", allocatable=ROOM))
    for name in "abcdef":
        kube.add_pod(make_pod(name))
    plan_seq = await binder_bus.observe(kube)
    return tuple(  # type: ignore[return-value]
        Placement(id=f"{plan_seq}-{i}", plan_seq=plan_seq, at_ms=NOW_MS, group=f"default/{g}",
                  attempt=1, deadline_ms=NOW_MS + 60_000,
                  members=tuple(Assignment(f"uid-{n}", "default", n, "n1") for n in names))
        for i, (g, names) in enumerate((("g", "abc"), ("h", "def"))))


async def _until(condition: Callable[[], bool]) -> None:
    for _ in range(200):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("condition never held")


async def gang_g_binding(binder_bus: BinderBus, monkeypatch: pytest.MonkeyPatch
                         ) -> tuple[HeldKube, Binder, asyncio.Task[None], Placement]:
    """A binder with room for 4 members, binding gang g (a, b, c; a's bind held until
    `kube.release`); gang h's placement (d, e, f), not delivered yet."""
    monkeypatch.setattr(service, "MAX_MEMBERS_BINDING", 4)
    kube = HeldKube(held={"a"})
    first, second = await two_gangs(binder_bus, kube)
    binder = binder_bus.binder(kube, FakePublisher())
    g = asyncio.create_task(binder.process(
        FakeDelivery(codec.encode(first))))
    await _until(lambda: "a" in kube.started)
    return kube, binder, g, second


async def test_a_placement_binds_only_once_its_members_fit_the_budget(
    binder_bus: BinderBus, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With room for 4 members, gang h (3) waits while gang g (3) binds: none of its pods is
    bound before g's binds end, and then all of them are."""
    kube, binder, g, second = await gang_g_binding(binder_bus, monkeypatch)
    h_delivery = FakeDelivery(codec.encode(second),
                              subject="gangsched.decisions.Placement.default.h")
    h = asyncio.create_task(binder.process(h_delivery))
    await asyncio.sleep(0.2)
    assert not set("def") & set(kube.started)
    assert metrics.REGISTRY.get_sample_value("gangsched_binder_members_binding") == 3
    assert metrics.REGISTRY.get_sample_value("gangsched_binder_placements_waiting") == 1
    kube.release.set()
    await asyncio.gather(g, h)
    assert h_delivery.settled == ["ack"]
    assert [kube.node_of(n) for n in "abcdef"] == ["n1"] * 6
    assert set(kube.started[-3:]) == set("def")
    await binder.close()


async def test_a_redelivery_does_not_queue_behind_the_budget(
    binder_bus: BinderBus, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A redelivered placement resumes (or undoes) an earlier delivery's binds at once: an undo
    must end within the rollback margin, not wait behind new binds."""
    kube, binder, g, second = await gang_g_binding(binder_bus, monkeypatch)
    again = FakeDelivery(codec.encode(second), num_delivered=2,
                         subject="gangsched.decisions.Placement.default.h")
    await asyncio.wait_for(binder.process(again), 5)
    assert again.settled == ["ack"]
    assert [kube.node_of(n) for n in "def"] == ["n1"] * 3
    kube.release.set()
    await g
    await binder.close()
