"""The gang's timeout guards members that cannot be bound, not a busy API server.

Windows are shrunk to tens of milliseconds (`placing.MIN_TIMEOUT_MS`) so the slow API server
of these tests is slow for a few tenths of a second at most.
"""

from __future__ import annotations

import asyncio

import msgspec
import pytest

from services.binder import placing
from services.binder.placing import Settled
from services.contracts import binding_window
from services.contracts.decisions import Placement
from services.contracts.events import GroupRolledBack, MemberBindFailed
from services.kube import errors
from tests.unit.binder.fakes import FakeKube, make_node, make_pod
from tests.unit.binder.test_placing import (
    NOW_MS,
    POLICY,
    answering_late,
    cluster,
    kinds,
    placement,
    run,
)


@pytest.fixture(autouse=True)
def _short_windows(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(placing, "MIN_TIMEOUT_MS", 1)


class SlowKube(FakeKube):
    """Every bind takes `bind_seconds` (a busy API server)."""

    def __init__(self, bind_seconds: float) -> None:
        super().__init__()
        self.bind_seconds = bind_seconds

    async def bind(self, namespace: str, name: str, uid: str, node: str, *,
                   annotations: dict[str, str]) -> None:
        await asyncio.sleep(self.bind_seconds)
        await super().bind(namespace, name, uid, node, annotations=annotations)


class NodeDeletedWhileBinding(FakeKube):
    """The node `doomed` is deleted as soon as the first member is bound to it."""

    def __init__(self, doomed: str) -> None:
        super().__init__()
        self.doomed = doomed

    async def bind(self, namespace: str, name: str, uid: str, node: str, *,
                   annotations: dict[str, str]) -> None:
        await super().bind(namespace, name, uid, node, annotations=annotations)
        if node == self.doomed:
            self.nodes.pop(node, None)


def slow_cluster(bind_seconds: float, *names: str) -> SlowKube:
    kube = SlowKube(bind_seconds)
    kube.add_node(make_node("n1"))
    for name in names:
        kube.add_pod(make_pod(name))
    return kube


async def test_a_placement_queued_past_its_deadline_is_still_bound_when_binding_starts() -> None:
    # the deadline passed while the placement waited for a free slot: nothing was tried yet
    kube = cluster(make_pod("a"), make_pod("b"))
    settled = await run(kube, placement("a", "b", deadline_in_ms=-5_000))
    assert kinds(settled) == ["GroupBound"]


async def test_a_placement_received_after_the_binding_stop_binds_nothing() -> None:
    kube = cluster(make_pod("a"))
    settled = await run(kube, placement("a", deadline_in_ms=-binding_window.BIND_GRACE_MS - 1))
    assert kinds(settled) == ["GroupRolledBack"]
    assert kube.node_of("a") is None


@pytest.mark.looptime
async def test_a_gang_whose_binds_progress_slower_than_its_timeout_is_finished() -> None:
    # four binds of 100 ms one at a time take 400 ms against a 250 ms timeout: each round binds
    # two members, so binding goes on. The loop's time is looptime's (it advances only by the
    # fake binds' sleeps), so a loaded machine cannot make a round look empty.
    kube = slow_cluster(0.1, "a", "b", "c", "d")
    policy = placing.Policy(scheduler_name="gangsched", concurrency=1, rollback_bare_pods=True)
    settled = await placing.carry_out(placement("a", "b", "c", "d", deadline_in_ms=250), kube,
                                      policy, lambda: NOW_MS, is_redelivery=False)
    assert kinds(settled)[-1] == "GroupBound"
    assert [kube.node_of(n) for n in "abcd"] == ["n1"] * 4 and kube.deleted == []


@pytest.mark.looptime
async def test_a_gang_with_a_member_that_never_binds_is_rolled_back_after_one_timeout() -> None:
    kube = cluster(make_pod("a"), make_pod("b"))
    kube.failures[("bind", "b")] = [errors.KubeUnavailable("503")] * 1000
    policy = POLICY
    started = asyncio.get_running_loop().time()
    settled = await placing.carry_out(placement("a", "b", deadline_in_ms=200), kube, policy,
                                      lambda: NOW_MS, is_redelivery=False)
    assert kinds(settled)[-1] == "GroupRolledBack"
    assert kube.deleted == ["a"]  # bound by this placement, then undone
    # a round that bound a (the first) earns one more; the next binds nothing and ends it: two
    # timeouts of loop time (looptime's: retries' backoff sleeps only), never the 60 s stop
    assert asyncio.get_running_loop().time() - started == pytest.approx(0.4)


async def test_a_redelivered_placement_resumes_where_the_crashed_binder_stopped() -> None:
    # the first binder bound a and was killed; its deadline has passed, its window has not
    kube = cluster(make_pod("a", node="n1", bound_by="9-0"), make_pod("b"))
    settled = await run(kube, placement("a", "b", deadline_in_ms=-1), is_redelivery=True)
    assert kinds(settled) == ["GroupBound"]
    assert kube.node_of("b") == "n1" and kube.deleted == []
    assert [call for call in kube.calls if call[0] == "bind"] == [("bind", "b")]


async def test_a_member_bound_to_a_node_deleted_meanwhile_fails_and_the_gang_rolls_back() -> None:
    kube = NodeDeletedWhileBinding("n2")
    kube.add_node(make_node("n1"))
    kube.add_node(make_node("n2"))
    kube.add_pod(make_pod("a"))
    kube.add_pod(make_pod("b", owned=False))  # bare: deleted all the same, it can never run
    decision = _with_nodes(placement("a", "b"), {"b": "n2"})
    settled: Settled = await run(kube, decision)
    assert kinds(settled) == ["MemberBound", "MemberBindFailed", "GroupRolledBack"]
    failed = settled.outcomes[1]
    assert isinstance(failed, MemberBindFailed) and failed.is_permanent
    assert "n2, which was deleted meanwhile" in failed.reason
    rolled = settled.outcomes[-1]
    assert isinstance(rolled, GroupRolledBack) and sorted(kube.deleted) == ["a", "b"]
    assert settled.bound == ()


def _with_nodes(decision: Placement, nodes: dict[str, str]) -> Placement:
    members = tuple(msgspec.structs.replace(m, node=nodes.get(m.name, m.node))
                    for m in decision.members)
    return msgspec.structs.replace(decision, members=members)


async def test_a_gang_found_wholly_bound_after_the_confirm_window_is_rolled_back() -> None:
    # the planner may release a placement 90 s after its deadline: a GroupBound it could miss
    # would leave the gang bound on capacity given to others, so past 80 s it is undone instead
    kube = cluster(make_pod("a", node="n1", bound_by="9-0"))
    late = placement("a", deadline_in_ms=-binding_window.CONFIRM_GRACE_MS - 1)
    settled = await run(kube, late, is_redelivery=True)
    assert kinds(settled) == ["MemberBound", "GroupRolledBack"]
    rolled = settled.outcomes[-1]
    assert isinstance(rolled, GroupRolledBack)
    assert rolled.reason == ("all 1 members bound, but more than 80s after the deadline: "
                             "too late to confirm")
    assert rolled.deleted_pods == ("uid-a",) and kube.deleted == ["a"]


@pytest.mark.looptime
async def test_rereading_an_unanswered_bind_stops_at_the_confirm_window() -> None:
    # a's bind is stored but never answered, then the API server cannot be read for minutes:
    # the re-read gives up when the gang could no longer be confirmed (80 s after the deadline)
    # and the rollback, which waits as long as it takes, undoes the stored bind
    kube = cluster(make_pod("a"))
    answering_late(kube, "a")
    stored_bind = kube.bind

    async def bind_then_go_dark(namespace: str, name: str, uid: str, node: str, *,
                                annotations: dict[str, str]) -> None:
        kube.failures[("get_pod", name)] = [errors.KubeUnavailable("503")] * 40
        await stored_bind(namespace, name, uid, node, annotations=annotations)

    kube.bind = bind_then_go_dark  # type: ignore[method-assign]
    started = asyncio.get_running_loop().time()
    settled = await run(kube, placement("a", deadline_in_ms=300))
    assert kinds(settled) == ["MemberBindFailed", "GroupRolledBack"]
    rolled = settled.outcomes[-1]
    assert isinstance(rolled, GroupRolledBack)
    assert rolled.reason == "deadline passed with 0 of 1 members bound"
    assert kube.deleted == ["a"]
    reads = [call for call in kube.calls if call == ("get_pod", "a")]
    assert len(reads) == 42  # the survey's, then every failure waited out, the last by the rollback
    assert asyncio.get_running_loop().time() - started > 80.3
