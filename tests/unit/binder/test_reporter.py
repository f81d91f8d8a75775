"""Events, conditions and PodGroup status as users see them; rate limits; best effort."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, TypeVar

import pytest

from services.binder.placing import RolledBack, Settled
from services.binder.reporter import EVENT_BUDGET, Reporter
from services.binder.rollback import Undone
from services.contracts.decisions import Assignment, Placement, PodRef, Rejection, StatusUpdate
from services.contracts.events import PodGroupObserved
from services.kube import errors
from services.kube.events import ObjectRef
from services.watcher import slim
from tests.support.bus_view import AppliedView
from tests.unit.binder.fakes import FakeKube, FakeStatusLog, make_pod

NOW = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
LATER = datetime(2024, 5, 1, 12, 5, tzinfo=UTC)
KubeT = TypeVar("KubeT", bound=FakeKube)


class Clock:
    def __init__(self) -> None:
        self.seconds = 0.0

    def __call__(self) -> float:
        return self.seconds


def reporter(kube: FakeKube, *, clock: Clock | None = None, feed: AppliedView | None = None,
             status_log: FakeStatusLog | None = None, concurrency: int = 4,
             now: Callable[[], datetime] = lambda: NOW,
             event_budget: tuple[float, float] = EVENT_BUDGET) -> Reporter:
    """A reporter wired as the binder wires it, `kube` serving both reports and placing; the
    bus view `feed` (by default one that knows nothing yet) and `status_log` (by default one
    holding no StatusUpdate)."""
    return Reporter(kube, event_interval_seconds=30.0, concurrency=concurrency,
                    status_log=status_log or FakeStatusLog(), placing_kube=kube,
                    view=feed or AppliedView(), monotonic=clock or Clock(), now=now,
                    event_budget=event_budget)


def podgroup_observed(name: str, uid: str) -> PodGroupObserved:
    return PodGroupObserved(at_ms=0, uid=uid, namespace="default", name=name,
                            resource_version="1", created_at_ms=0, min_member=2)


def rejection(reason: str, *names: str, group: str = "default/g") -> Rejection:
    pods = tuple(PodRef(f"uid-{n}", "default", n) for n in names)
    return Rejection(id="3-0", plan_seq=3, at_ms=0, group=group, reason=reason, pods=pods)


def with_podgroup(kube: KubeT) -> KubeT:
    kube.podgroups[("default", "g")] = {"metadata": {"name": "g", "uid": "pg-uid"}, "status": {}}
    return kube


async def test_a_rejection_writes_failed_scheduling_and_the_unschedulable_condition() -> None:
    kube = with_podgroup(FakeKube())
    kube.add_pod(make_pod("a"))
    await reporter(kube).rejected(rejection("gang default/g: 1 of 2 members fit", "a"))
    assert [(e.about.kind, e.about.name, e.reason, e.message) for e in kube.events] == [
        ("Pod", "a", "FailedScheduling", "gang default/g: 1 of 2 members fit"),
        ("PodGroup", "g", "FailedScheduling", "gang default/g: 1 of 2 members fit"),
    ]
    assert kube.events[1].about.uid == "pg-uid"
    condition = kube.pods[("default", "a")]["status"]["conditions"][0]
    assert (condition["type"], condition["status"], condition["reason"]) == (
        "PodScheduled", "False", "Unschedulable",
    )


async def test_repeated_rejections_are_rate_limited_unless_the_reason_changes() -> None:
    kube = FakeKube()
    kube.add_pod(make_pod("a"))
    clock = Clock()
    report = reporter(kube, clock=clock)
    await report.rejected(rejection("no fit", "a"))
    clock.seconds = 10
    await report.rejected(rejection("no fit", "a"))
    assert len([e for e in kube.events if e.about.kind == "Pod"]) == 1
    await report.rejected(rejection("PodGroup default/g not found", "a"))
    clock.seconds = 45
    await report.rejected(rejection("PodGroup default/g not found", "a"))
    assert len([e for e in kube.events if e.about.kind == "Pod"]) == 3
    assert len(kube.status_patches) == 2  # the condition is written only when it changes


async def test_a_rejected_pod_already_bound_or_gone_gets_no_report() -> None:
    kube = FakeKube()
    kube.add_pod(make_pod("a", node="n1"))
    await reporter(kube).rejected(rejection("no fit", "a", "gone"))
    assert kube.events == []
    # the patch's answer showed `a` bound: its binding's PodScheduled=True is put back
    assert kube.pods[("default", "a")]["status"]["conditions"] == [{
        "type": "PodScheduled", "status": "True", "lastTransitionTime": "2024-05-01T12:00:00Z"}]
    assert ("get_pod", "a") not in kube.calls and ("get_pod", "gone") not in kube.calls


async def test_a_rejection_reads_nothing_and_a_replaced_pod_gets_no_report() -> None:
    kube = FakeKube()
    kube.add_podgroup("default", "g")
    kube.add_pod(make_pod("a"))
    kube.add_pod(make_pod("b", uid="uid-b-new"))  # recreated under b's name
    feed = AppliedView()
    feed.apply(podgroup_observed("g", "pg-uid"))
    await reporter(kube, feed=feed).rejected(rejection("no fit", "a", "b"))
    assert [(e.about.kind, e.about.name, e.about.uid) for e in kube.events] == [
        ("Pod", "a", "uid-a"), ("PodGroup", "g", "pg-uid")]
    assert [name for name, _ in kube.status_patches] == ["a"]
    assert kube.pods[("default", "b")]["status"].get("conditions") is None
    assert [op for op, _ in kube.calls if op.startswith("get")] == []


async def test_a_pod_the_view_shows_bound_gets_no_request() -> None:
    kube = FakeKube()
    kube.add_pod(make_pod("a"))
    feed = AppliedView()
    feed.apply(slim.pod_event(make_pod("a", node="n1"), 0))
    await reporter(kube, feed=feed).rejected(rejection("no fit", "a", group="default/pod:a"))
    assert kube.calls == []


async def test_a_new_reason_keeps_the_transition_time_this_process_wrote() -> None:
    kube = FakeKube()
    kube.add_pod(make_pod("a"))
    times = iter([NOW, LATER])
    report = reporter(kube, now=lambda: next(times, LATER))
    await report.rejected(rejection("no fit", "a", group="default/pod:a"))
    await report.rejected(rejection("still no fit", "a", group="default/pod:a"))
    condition = kube.pods[("default", "a")]["status"]["conditions"][0]
    assert (condition["message"], condition["lastTransitionTime"]) == (
        "still no fit", "2024-05-01T12:00:00Z")


async def test_api_errors_while_reporting_are_swallowed() -> None:
    kube = FakeKube()
    kube.add_pod(make_pod("a"))
    kube.failures[("create_event", "a")] = [errors.KubeForbidden("events forbidden", status=403)]
    await reporter(kube).rejected(rejection("no fit", "a"))
    assert kube.events == []


async def test_a_bound_gang_gets_scheduled_events() -> None:
    kube = FakeKube()
    members = (Assignment("uid-a", "default", "a", "n1"), Assignment("uid-b", "default", "b", "n2"))
    decision = Placement(id="4-0", plan_seq=4, at_ms=0, group="default/g", attempt=1,
                         deadline_ms=1, members=members)
    await reporter(kube).placed(decision, Settled(outcomes=(), bound=members))
    assert sorted((e.about.name, e.reason, e.message) for e in kube.events) == [
        ("a", "Scheduled", "Successfully assigned default/a to n1"),
        ("b", "Scheduled", "Successfully assigned default/b to n2"),
    ]


async def test_a_rollback_is_reported_on_the_pending_members_and_the_podgroup() -> None:
    kube = with_podgroup(FakeKube())
    members = (Assignment("uid-a", "default", "a", "n1"), Assignment("uid-b", "default", "b", "n1"))
    decision = Placement(id="4-0", plan_seq=4, at_ms=0, group="default/g", attempt=2,
                         deadline_ms=1, members=members)
    rolled = RolledBack("pod default/b was deleted", members[1], Undone(deleted=("uid-a",)))
    await reporter(kube).placed(decision, Settled(outcomes=(), bound=(), rolled_back=rolled))
    expected = ("gang default/g: placement attempt 2 rolled back: pod default/b was deleted; "
                "1 bound member deleted for its controller to recreate")
    assert [(e.about.kind, e.about.name, e.message) for e in kube.events] == [
        ("Pod", "b", expected), ("PodGroup", "g", expected),
    ]


async def test_rollback_events_go_through_the_placing_api_scheduled_and_rejections_not(
) -> None:
    """A rollback's events must not queue behind other reports (the next rejection of the
    same pods would overtake them); Scheduled events and rejections yield to binds."""
    reports, placing = with_podgroup(FakeKube()), with_podgroup(FakeKube())
    report = Reporter(reports, event_interval_seconds=30.0, concurrency=4,
                      status_log=FakeStatusLog(), placing_kube=placing, view=AppliedView(),
                      monotonic=Clock(), now=lambda: NOW)
    members = (Assignment("uid-a", "default", "a", "n1"),)
    bound = Placement(id="4-0", plan_seq=4, at_ms=0, group="default/g", attempt=1,
                      deadline_ms=1, members=members)
    await report.placed(bound, Settled(outcomes=(), bound=members))
    rolled = RolledBack("pod default/b was deleted", None, Undone())
    await report.placed(bound, Settled(outcomes=(), bound=(), rolled_back=rolled))
    reports.add_pod(make_pod("c"))
    await report.rejected(rejection("0/1 nodes are available: 1 Insufficient cpu.", "c"))
    assert [(e.about.kind, e.about.name, e.reason) for e in placing.events] == [
        ("Pod", "a", "FailedScheduling"), ("PodGroup", "g", "FailedScheduling")]
    assert [(e.about.kind, e.about.name, e.reason) for e in reports.events] == [
        ("Pod", "a", "Scheduled"), ("Pod", "c", "FailedScheduling"),
        ("PodGroup", "g", "FailedScheduling")]


async def test_status_updates_are_written_and_skipped_for_singletons() -> None:
    kube = with_podgroup(FakeKube())
    update = StatusUpdate(id="5-0", plan_seq=5, at_ms=0, group="default/g", phase="Running",
                          running=3, succeeded=0, failed=0)
    await reporter(kube).status(update)
    assert kube.podgroups[("default", "g")]["status"]["phase"] == "Running"
    singleton = StatusUpdate(id="5-1", plan_seq=5, at_ms=0, group="default/pod:a",
                             phase="Running", running=1, succeeded=0, failed=0)
    await reporter(kube).status(singleton)
    assert ("update_podgroup_status", "pod:a") not in kube.calls


def status_update(plan_seq: int, phase: str, running: int) -> StatusUpdate:
    return StatusUpdate(id=f"{plan_seq}-0", plan_seq=plan_seq, at_ms=0, group="default/g",
                        phase=phase, running=running, succeeded=0, failed=0)


async def test_an_older_status_handled_late_writes_the_newest_one_published() -> None:
    # Two binders: this one got the older update, another one the newer (already published).
    kube = with_podgroup(FakeKube())
    newer = status_update(9, "Running", 3)
    report = reporter(kube, status_log=FakeStatusLog([newer]))
    await report.status(status_update(5, "Scheduling", 0))
    status = kube.podgroups[("default", "g")]["status"]
    assert (status["phase"], status["running"]) == ("Running", 3)


async def test_a_status_newer_than_the_log_knows_is_written_as_is() -> None:
    kube = with_podgroup(FakeKube())
    report = reporter(kube, status_log=FakeStatusLog([status_update(5, "Scheduling", 0)]))
    await report.status(status_update(9, "Running", 3))
    assert kube.podgroups[("default", "g")]["status"]["phase"] == "Running"


async def test_pod_events_beyond_the_budget_are_owed_and_paid_at_its_rate() -> None:
    kube = with_podgroup(FakeKube())
    names = [f"p{n}" for n in range(5)]
    for name in names:
        kube.add_pod(make_pod(name))
    report = reporter(kube, concurrency=1, event_budget=(2.0, 0.2))
    await report.rejected(rejection("gang default/g: 0 of 5 members fit", *names))
    def pod_events() -> list[str]:
        return [e.about.name for e in kube.events if e.about.kind == "Pod"]
    assert pod_events() == ["p0", "p1"]  # the budget's burst; the others are owed
    assert sorted(name for name, _ in kube.status_patches) == names  # conditions at once
    for _ in range(50):
        if len(pod_events()) == 5:
            break
        await asyncio.sleep(0.05)
    assert pod_events() == names


async def test_a_pod_bound_meanwhile_is_owed_no_event() -> None:
    kube = with_podgroup(FakeKube())
    for name in ("a", "b"):
        kube.add_pod(make_pod(name))
    report = reporter(kube, concurrency=1, event_budget=(1.0, 0.3))
    await report.rejected(rejection("gang default/g: 0 of 2 members fit", "a", "b"))
    member = Assignment("uid-b", "default", "b", "n1")
    placement = Placement(id="4-0", plan_seq=4, at_ms=0, group="default/g", attempt=1,
                          deadline_ms=1, members=(member,))
    await report.placed(placement, Settled(outcomes=(), bound=(member,)))
    await asyncio.sleep(0.6)
    failed = [e.about.name for e in kube.events if e.reason == "FailedScheduling"
              and e.about.kind == "Pod"]
    assert failed == ["a"]


async def test_closing_stops_paying_owed_events() -> None:
    kube = with_podgroup(FakeKube())
    for name in ("a", "b", "c"):
        kube.add_pod(make_pod(name))
    report = reporter(kube, concurrency=1, event_budget=(1.0, 0.2))
    await report.rejected(rejection("gang default/g: 0 of 3 members fit", "a", "b", "c"))
    await report.close()
    await asyncio.sleep(0.5)
    assert [e.about.name for e in kube.events if e.about.kind == "Pod"] == ["a"]


def requests(kube: FakeKube) -> list[str]:
    return [op for op, _ in kube.calls]


async def test_podgroup_status_is_one_write_per_change_and_no_read_before_it() -> None:
    kube = FakeKube()
    kube.add_podgroup("default", "g")
    feed = AppliedView()
    feed.apply(podgroup_observed("g", "pg-uid"))
    report = reporter(kube, feed=feed)
    await report.status(status_update(1, "Scheduling", 0))
    await report.status(status_update(2, "Running", 3))
    await report.status(status_update(3, "Running", 3))  # current by the copy: read to be sure
    assert requests(kube) == ["first_podgroup_status", "patch_podgroup_status_at",
                              "update_podgroup_status", "get_podgroup"]
    status = kube.podgroups[("default", "g")]["status"]
    assert (status["phase"], status["running"]) == ("Running", 3)


async def test_a_podgroup_changed_by_another_writer_is_read_and_merged() -> None:
    kube = FakeKube()
    kube.add_podgroup("default", "g")
    report = reporter(kube)  # the view does not know the PodGroup (yet): the first write reads
    await report.status(status_update(1, "Scheduling", 0))
    stored = kube.podgroups[("default", "g")]
    stored["metadata"]["resourceVersion"] = "7"  # another writer
    stored["status"]["occupiedBy"] = "default/job"
    await report.status(status_update(2, "Running", 3))
    assert requests(kube) == ["update_podgroup_status", "get_podgroup",
                              "patch_podgroup_status_at", "update_podgroup_status",
                              "get_podgroup"]
    assert (stored["status"]["phase"], stored["status"]["occupiedBy"]) == ("Running",
                                                                          "default/job")


async def test_a_podgroup_with_a_status_already_is_read_before_the_first_write() -> None:
    kube = FakeKube()
    kube.add_podgroup("default", "g")["status"] = {"phase": "Pending", "occupiedBy": "x/y"}
    feed = AppliedView()
    feed.apply(podgroup_observed("g", "pg-uid"))
    await reporter(kube, feed=feed).status(status_update(1, "Scheduling", 0))
    assert requests(kube) == ["first_podgroup_status", "update_podgroup_status", "get_podgroup"]
    assert kube.podgroups[("default", "g")]["status"] == {
        "phase": "Scheduling", "occupiedBy": "x/y", "running": 0, "succeeded": 0, "failed": 0}


async def test_a_podgroup_recreated_under_the_name_gets_no_status_meant_for_the_old_one() -> None:
    kube = FakeKube()
    kube.add_podgroup("default", "g", uid="new-uid")
    feed = AppliedView()
    feed.apply(podgroup_observed("g", "old-uid"))  # the planner decided for the old one
    await reporter(kube, feed=feed).status(status_update(1, "Scheduling", 0))
    assert "status" not in kube.podgroups[("default", "g")]


class SlowEvents(FakeKube):
    """Holds event writes (of `reasons` only, when given) until `go` is set."""

    def __init__(self, reasons: tuple[str, ...] = ()) -> None:
        super().__init__()
        self.go = asyncio.Event()
        self.started = 0
        self._reasons = reasons

    async def create_event(self, about: ObjectRef, **kwargs: Any) -> None:
        if not self._reasons or kwargs.get("reason") in self._reasons:
            self.started += 1
            await self.go.wait()
        await super().create_event(about, **kwargs)


def bound_placement(name: str) -> tuple[Placement, Settled]:
    members = (Assignment(f"uid-{name}", "default", name, "n1"),)
    placement = Placement(id=f"4-{name}", plan_seq=4, at_ms=0, group=f"default/pod:{name}",
                          attempt=1, deadline_ms=1, members=members)
    return placement, Settled(outcomes=(), bound=members)


async def settle() -> None:
    """Let every task that can run, run."""
    for _ in range(20):
        await asyncio.sleep(0)


async def test_placed_in_background_returns_before_its_events_are_written() -> None:
    kube = SlowEvents()
    report = reporter(kube)
    await report.placed_in_background(*bound_placement("a"))
    await settle()
    assert kube.started == 1 and kube.events == []  # the caller went on; the write waits
    kube.go.set()
    await settle()
    assert [(e.about.name, e.reason) for e in kube.events] == [("a", "Scheduled")]
    await report.close()


async def test_placed_events_queue_behind_the_writers_and_the_caller_goes_on(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("services.binder.reporter.PLACED_REPORTS", 1)
    kube = SlowEvents()
    report = reporter(kube)
    await report.placed_in_background(*bound_placement("a"))
    await asyncio.wait_for(report.placed_in_background(*bound_placement("b")), 1)
    await settle()
    assert kube.started == 1  # b returned at once, its write waits for a's to end
    kube.go.set()
    await settle()
    assert [e.about.name for e in kube.events] == ["a", "b"]  # in turn
    await report.close()


async def test_placed_in_background_waits_while_the_backlog_is_full(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("services.binder.reporter.PLACED_REPORTS", 1)
    monkeypatch.setattr("services.binder.reporter.PLACED_BACKLOG", 2)
    kube = SlowEvents()
    report = reporter(kube)
    await report.placed_in_background(*bound_placement("a"))
    await report.placed_in_background(*bound_placement("b"))
    third = asyncio.create_task(report.placed_in_background(*bound_placement("c")))
    await settle()
    assert not third.done() and kube.started == 1  # a writes, b waits its turn, c waits room
    kube.go.set()
    await asyncio.wait_for(third, 1)
    await settle()
    assert [e.about.name for e in kube.events] == ["a", "b", "c"]
    await report.close()


async def test_close_drops_the_events_still_being_written() -> None:
    kube = SlowEvents()
    report = reporter(kube)
    await report.placed_in_background(*bound_placement("a"))
    await settle()
    await report.close()
    kube.go.set()
    await settle()
    assert kube.events == [] and kube.started == 1



async def test_a_pod_bound_while_events_wait_their_turn_gets_no_condition(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Its placement's events wait for others' to end, yet it counts as bound at once: a
    rejection meanwhile does not patch it Unschedulable (and back)."""
    monkeypatch.setattr("services.binder.reporter.PLACED_REPORTS", 1)
    kube = SlowEvents(reasons=("Scheduled",))
    kube.add_pod(make_pod("a", node="n1"))
    kube.add_pod(make_pod("b", node="n1"))
    report = reporter(kube)
    await report.placed_in_background(*bound_placement("a"))
    second = asyncio.create_task(report.placed_in_background(*bound_placement("b")))
    await settle()
    await report.rejected(rejection("no fit", "b"))
    patched = list(kube.status_patches)
    kube.go.set()
    await asyncio.wait_for(second, 1)
    await report.close()
    assert patched == []


async def test_a_pod_bound_while_events_wait_their_turn_is_owed_no_event(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("services.binder.reporter.PLACED_REPORTS", 1)
    kube = with_podgroup(SlowEvents(reasons=("Scheduled",)))
    for name in ("a", "b", "c"):
        kube.add_pod(make_pod(name))
    report = reporter(kube, concurrency=1, event_budget=(1.0, 0.3))
    await report.rejected(rejection("gang default/g: 0 of 2 members fit", "a", "b"))
    await report.placed_in_background(*bound_placement("c"))
    second = asyncio.create_task(report.placed_in_background(*bound_placement("b")))
    await asyncio.sleep(0.6)
    failed = [e.about.name for e in kube.events
              if e.reason == "FailedScheduling" and e.about.kind == "Pod"]
    kube.go.set()
    await asyncio.wait_for(second, 1)
    await report.close()
    assert failed == ["a"]


async def test_a_rollbacks_events_skip_the_queue_so_a_later_rejection_comes_after(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("services.binder.reporter.PLACED_REPORTS", 1)
    kube = with_podgroup(SlowEvents(reasons=("Scheduled",)))
    kube.add_pod(make_pod("b"))
    report = reporter(kube)
    await report.placed_in_background(*bound_placement("a"))  # a's Scheduled holds the writer
    members = (Assignment("uid-b", "default", "b", "n1"),)
    placement = Placement(id="5-0", plan_seq=5, at_ms=0, group="default/g", attempt=1,
                          deadline_ms=1, members=members)
    rolled = RolledBack("bind refused", members[0], Undone())
    await report.placed_in_background(placement, Settled(outcomes=(), bound=(),
                                                         rolled_back=rolled))
    await settle()
    await report.rejected(rejection("gang default/g: 0 of 2 members fit; later", "b"))
    kube.go.set()
    await settle()
    on_b = [e.message for e in kube.events if e.about.name == "b"]
    assert len(on_b) == 2 and "bind refused" in on_b[0]
    assert on_b[1].startswith("gang default/g: 0 of 2 members fit; later")
    await report.close()


async def test_close_cancels_every_queued_write_before_any_starts(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("services.binder.reporter.PLACED_REPORTS", 2)
    kube = SlowEvents()
    report = reporter(kube)
    for i in range(20):
        await report.placed_in_background(*bound_placement(f"p{i}"))
    await settle()
    assert kube.started == 2
    await report.close()
    kube.go.set()
    await settle()
    assert kube.started == 2 and kube.events == []  # none started while closing
