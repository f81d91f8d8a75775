"""One placement end to end on an in-memory API server: all bound, or rolled back."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import msgspec
import pytest

from services.binder import placing
from services.binder.placing import Policy, Settled
from services.binder.view import ClusterView
from services.contracts import binding_window
from services.contracts.decisions import Assignment, Placement
from services.contracts.events import GroupBound, GroupRolledBack, MemberBindFailed, MemberBound
from services.kube import errors
from services.runtime.unreachable import Repeats
from services.watcher import slim
from tests.unit.binder.fakes import FakeKube, make_node, make_pod

NOW_MS = 1_700_000_000_000
PAST_STOP = -binding_window.BIND_GRACE_MS - 1
"""A deadline so long gone that no bind may start any more (`placing.Window`)."""
POLICY = Policy(scheduler_name="gangsched", concurrency=4, rollback_bare_pods=False)


def clock() -> int:
    return NOW_MS


def placement(*names: str, deadline_in_ms: int = 30_000, node: str = "n1") -> Placement:
    members = tuple(Assignment(f"uid-{n}", "default", n, node) for n in names)
    return Placement(id="9-0", plan_seq=9, at_ms=NOW_MS, group="default/g", attempt=1,
                     deadline_ms=NOW_MS + deadline_in_ms, members=members)


def cluster(*pods: dict[str, Any]) -> FakeKube:
    kube = FakeKube()
    kube.add_node(make_node("n1"))
    for pod in pods:
        kube.add_pod(pod)
    return kube


async def run(kube: FakeKube, decision: Placement, *, is_redelivery: bool = False,
              policy: Policy = POLICY) -> Settled:
    return await placing.carry_out(decision, kube, policy, clock, is_redelivery=is_redelivery)


def kinds(settled: Settled) -> list[str]:
    return [type(outcome).__name__ for outcome in settled.outcomes]


async def test_every_member_bound_gives_member_bound_each_then_group_bound() -> None:
    kube = cluster(make_pod("a"), make_pod("b"))
    settled = await run(kube, placement("a", "b"))
    assert kinds(settled) == ["GroupBound"]
    assert (kube.node_of("a"), kube.node_of("b")) == ("n1", "n1")
    assert settled.rolled_back is None
    assert [m.name for m in settled.bound] == ["a", "b"]


async def test_a_member_gone_before_binding_rolls_back_without_binding_anything() -> None:
    kube = cluster(make_pod("a"))
    settled = await run(kube, placement("a", "b"))
    assert [call for call in kube.calls if call[0] == "bind"] == []
    assert kinds(settled) == ["MemberBindFailed", "GroupRolledBack"]
    rolled = settled.outcomes[-1]
    assert isinstance(rolled, GroupRolledBack)
    assert rolled.failed_pod == "uid-b"
    assert rolled.reason == "pod default/b was deleted"
    assert rolled.deleted_pods == ()


async def test_a_refused_bind_deletes_the_owned_members_already_bound() -> None:
    kube = cluster(make_pod("a"), make_pod("b"))
    kube.failures[("bind", "b")] = [errors.KubeForbidden("pods/binding is forbidden", status=403)]
    settled = await run(kube, placement("a", "b"), policy=Policy("gangsched", 1, False))
    assert kinds(settled) == ["MemberBound", "MemberBindFailed", "GroupRolledBack"]
    assert settled.outcomes[0] == MemberBound(at_ms=NOW_MS, decision_id="9-0",
                                              group="default/g", pod_uid="uid-a", node="n1")
    failed = settled.outcomes[1]
    assert isinstance(failed, MemberBindFailed) and failed.is_permanent
    assert failed.reason == "pod default/b: bind refused: pods/binding is forbidden"
    rolled = settled.outcomes[-1]
    assert isinstance(rolled, GroupRolledBack) and rolled.deleted_pods == ("uid-a",)
    assert rolled.reason == failed.reason and rolled.failed_pod == "uid-b"
    assert kube.deleted == ["a"]
    assert settled.bound == ()


async def test_bare_pods_stay_bound_unless_the_operator_opted_in() -> None:
    def setup() -> FakeKube:
        kube = cluster(make_pod("a", owned=False), make_pod("b"))
        kube.failures[("bind", "b")] = [errors.KubeInvalid("invalid", status=422)]
        return kube

    kept = setup()
    settled = await run(kept, placement("a", "b"), policy=Policy("gangsched", 1, False))
    assert kept.deleted == [] and kept.node_of("a") == "n1"
    assert settled.rolled_back is not None and settled.rolled_back.undone.kept == ("uid-a",)
    opted_in = setup()
    await run(opted_in, placement("a", "b"), policy=Policy("gangsched", 1, True))
    assert opted_in.deleted == ["a"]


async def test_a_redelivered_placement_already_bound_succeeds_without_binding_again() -> None:
    kube = cluster(make_pod("a", node="n1", bound_by="9-0"),
                   make_pod("b", node="n1", bound_by="9-0"))
    settled = await run(kube, placement("a", "b"), is_redelivery=True)
    assert kinds(settled) == ["GroupBound"]
    assert [call for call in kube.calls if call[0] == "bind"] == []


async def test_a_pod_found_on_its_planned_node_not_bound_by_this_placement_is_never_touched(
) -> None:
    # a forged placement naming a running pod of another scheduler on its node, plus a bogus
    # member: the running pod is not "bound" by it, and the rollback deletes nothing
    kube = cluster(make_pod("dns", node="n1", scheduler="default-scheduler"), make_pod("b"))
    for redelivery in (False, True):
        settled = await run(kube, placement("b", "dns", "ghost"), is_redelivery=redelivery)
        assert kube.deleted == [] and kube.node_of("dns") == "n1"
        assert [call for call in kube.calls if call[0] in ("bind", "delete_pod")] == []
        assert kinds(settled) == ["MemberBindFailed", "MemberBindFailed", "GroupRolledBack"]
        refused = settled.outcomes[0]
        assert isinstance(refused, MemberBindFailed) and refused.pod_uid == "uid-dns"
        assert refused.reason == ("pod default/dns is already bound to node n1, not by this "
                                  "placement")


async def test_a_pod_another_placement_bound_counts_for_nothing_and_stays() -> None:
    kube = cluster(make_pod("a", node="n1", bound_by="3-0"), make_pod("b"))
    settled = await run(kube, placement("a", "b", deadline_in_ms=PAST_STOP), is_redelivery=True)
    assert kube.deleted == [] and kube.node_of("a") == "n1"
    assert kinds(settled) == ["GroupRolledBack"]
    ours = cluster(make_pod("a", node="n1", bound_by="9-0", scheduler="other"), make_pod("b"))
    await run(ours, placement("a", "b", deadline_in_ms=PAST_STOP), is_redelivery=True)
    assert ours.deleted == []  # stamped, but no longer ours by schedulerName


async def test_every_binding_stamps_its_pod_with_the_placement() -> None:
    kube = cluster(make_pod("a"))
    await run(kube, placement("a"))
    assert kube.pods[("default", "a")]["metadata"]["annotations"] == {
        "gangsched.io/placement": "9-0"}


async def test_a_first_delivery_past_its_deadline_is_rolled_back_without_any_api_call() -> None:
    kube = cluster(make_pod("a"))
    settled = await run(kube, placement("a", deadline_in_ms=PAST_STOP))
    assert kinds(settled) == ["GroupRolledBack"]
    assert kube.calls == []
    rolled = settled.outcomes[0]
    assert isinstance(rolled, GroupRolledBack)
    assert rolled.reason == "deadline passed with 0 of 1 members bound"


async def test_a_late_first_delivery_says_how_old_it_is_by_this_clock(
        caplog: pytest.LogCaptureFixture) -> None:
    """Made 40 s ago by this clock: the warning says so, and that a clock running ahead of
    the watcher's makes every placement look late."""
    decision = msgspec.structs.replace(placement("a", deadline_in_ms=PAST_STOP),
                                       at_ms=NOW_MS - 40_000)
    with caplog.at_level(logging.WARNING, logger=placing.__name__):
        await run(cluster(make_pod("a")), decision)
    assert caplog.messages == [
        "placement 9-0 of default/g received after its deadline: deadline passed with 0 of 1 "
        "members bound (it was made 40.0s ago by this binder's clock: if nothing held it up, "
        "this clock runs ahead of the watcher's; sync the clocks, e.g. with NTP)"]


async def test_a_placement_made_in_this_binders_future_says_its_clock_is_behind(
        caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    """A decision cannot arrive before it is made: one made 7 s after now by this clock
    means this clock is behind the watcher's (it is still bound: its deadline is ahead)."""
    monkeypatch.setattr(placing, "_CLOCK_BEHIND", Repeats())
    decision = msgspec.structs.replace(placement("a"), at_ms=NOW_MS + 7_000)
    with caplog.at_level(logging.WARNING, logger=placing.__name__):
        settled = await run(cluster(make_pod("a")), decision)
    assert kinds(settled) == ["GroupBound"]
    assert caplog.messages[0].startswith(
        "placement 9-0 was made 7.0s ahead of this binder's clock: its clock is behind the "
        "watcher's")
    with caplog.at_level(logging.WARNING, logger=placing.__name__):
        caplog.clear()
        await run(cluster(make_pod("a")), msgspec.structs.replace(
            placement("a"), at_ms=NOW_MS + 1_000))  # within the slack: said nothing
    assert caplog.messages == []


async def test_a_redelivery_past_its_deadline_undoes_what_an_earlier_attempt_bound() -> None:
    kube = cluster(make_pod("a", node="n1", bound_by="9-0"), make_pod("b"))
    settled = await run(kube, placement("a", "b", deadline_in_ms=PAST_STOP), is_redelivery=True)
    assert [call for call in kube.calls if call[0] == "bind"] == []
    assert kube.deleted == ["a"]
    assert kinds(settled) == ["MemberBound", "GroupRolledBack"]


async def test_a_redelivery_past_its_deadline_with_everything_bound_is_a_success() -> None:
    kube = cluster(make_pod("a", node="n1", bound_by="9-0"))
    settled = await run(kube, placement("a", deadline_in_ms=PAST_STOP), is_redelivery=True)
    assert kinds(settled) == ["GroupBound"]


async def test_transient_errors_are_retried() -> None:
    kube = cluster(make_pod("a"))
    kube.failures[("bind", "a")] = [errors.KubeUnavailable("503"), errors.KubeUnavailable("429")]
    kube.failures[("get_pod", "a")] = [errors.KubeUnavailable("timeout")]
    settled = await run(kube, placement("a"))
    assert kinds(settled) == ["GroupBound"]


async def test_a_lost_bind_answer_is_recognised_as_bound_after_the_conflict() -> None:
    kube = cluster(make_pod("a"))
    kube.lose_bind_answers.add("a")
    settled = await run(kube, placement("a"))
    assert kinds(settled) == ["GroupBound"]
    assert [call for call in kube.calls if call[0] == "bind"] == [("bind", "a"), ("bind", "a")]


async def test_a_pod_bound_elsewhere_meanwhile_is_a_conflict_and_not_deleted() -> None:
    kube = cluster(make_pod("a"))
    kube.failures[("bind", "a")] = [errors.KubeConflict("already assigned", status=409)]
    original_bind = kube.bind

    async def bind_elsewhere(namespace: str, name: str, uid: str, node: str, *,
                             annotations: dict[str, str]) -> None:
        kube.pods[(namespace, name)]["spec"]["nodeName"] = "n2"  # another scheduler won
        await original_bind(namespace, name, uid, node, annotations=annotations)

    kube.bind = bind_elsewhere  # type: ignore[method-assign]
    settled = await run(kube, placement("a"))
    failed = settled.outcomes[0]
    assert isinstance(failed, MemberBindFailed)
    assert failed.reason == "pod default/a is already bound to node n2, not by this placement"
    assert kube.deleted == []


@pytest.mark.timeout(10)
async def test_binds_failing_until_the_deadline_roll_back_with_the_last_error() -> None:
    kube = cluster(make_pod("a"), make_pod("b"))
    kube.failures[("bind", "b")] = [errors.KubeUnavailable("HTTP 503")] * 100
    settled = await run(kube, placement("a", "b", deadline_in_ms=300))
    assert kinds(settled) == ["MemberBound", "MemberBindFailed", "GroupRolledBack"]
    failed = settled.outcomes[1]
    assert isinstance(failed, MemberBindFailed) and not failed.is_permanent
    rolled = settled.outcomes[-1]
    assert isinstance(rolled, GroupRolledBack)
    assert rolled.reason == "deadline passed with 1 of 2 members bound (last error: HTTP 503)"
    assert kube.deleted == ["a"]


def answering_late(kube: FakeKube, *names: str) -> None:
    """Binds of `names` are stored at once but answered only long after any deadline (an API
    server that stalls after writing, or whose answers are lost)."""
    original_bind = kube.bind

    async def bind(namespace: str, name: str, uid: str, node: str, *,
                   annotations: dict[str, str]) -> None:
        await original_bind(namespace, name, uid, node, annotations=annotations)
        if name in names:
            await asyncio.sleep(60)

    kube.bind = bind  # type: ignore[method-assign]


@pytest.mark.timeout(10)
async def test_a_bind_stored_but_unanswered_by_the_deadline_is_read_back_and_counts_as_bound(
) -> None:
    kube = cluster(make_pod("a"), make_pod("b"))
    answering_late(kube, "b")
    settled = await run(kube, placement("a", "b", deadline_in_ms=300))
    assert kinds(settled) == ["GroupBound"]
    assert kube.deleted == []
    assert [m.name for m in settled.bound] == ["a", "b"]


@pytest.mark.timeout(10)
async def test_a_rollback_reason_counts_the_unanswered_binds_the_api_server_stored() -> None:
    kube = cluster(make_pod("a"), make_pod("b"), make_pod("c"))
    answering_late(kube, "b")
    kube.failures[("bind", "c")] = [errors.KubeUnavailable("HTTP 503")] * 100
    settled = await run(kube, placement("a", "b", "c", deadline_in_ms=300))
    assert kinds(settled) == ["MemberBound", "MemberBound", "MemberBindFailed", "GroupRolledBack"]
    rolled = settled.outcomes[-1]
    assert isinstance(rolled, GroupRolledBack)
    assert rolled.reason == "deadline passed with 2 of 3 members bound (last error: HTTP 503)"
    assert sorted(kube.deleted) == ["a", "b"]


async def test_a_bound_gang_is_told_by_one_outcome_naming_the_decision_and_group() -> None:
    kube = cluster(make_pod("a"), make_pod("b"))
    settled = await run(kube, placement("a", "b"))
    assert settled.outcomes == (GroupBound(at_ms=NOW_MS, decision_id="9-0", group="default/g"),)
    assert [(m.pod_uid, m.node) for m in settled.bound] == [("uid-a", "n1"), ("uid-b", "n1")]


def sized_node(name: str, cpu: str = "4") -> dict[str, Any]:
    node = make_node(name)
    node["status"]["allocatable"] = {"cpu": cpu, "memory": "8Gi", "pods": "110"}
    return node


def requesting(pod: dict[str, Any], cpu: str) -> dict[str, Any]:
    pod["spec"]["containers"][0]["resources"] = {"requests": {"cpu": cpu}}
    return pod


async def test_the_survey_takes_known_objects_from_the_view_and_reads_only_the_rest() -> None:
    kube = cluster(make_pod("a"), make_pod("b"))
    view = ClusterView()
    view.apply(1, slim.pod_event(make_pod("a"), 0))
    view.apply(2, slim.node_event(sized_node("n1"), 0))
    settled = await placing.carry_out(placement("a", "b"), kube, POLICY, clock,
                                      is_redelivery=False, known=view)
    assert kinds(settled) == ["GroupBound"]
    first_bind = next(i for i, call in enumerate(kube.calls) if call[0] == "bind")
    assert sorted(call for call in kube.calls[:first_bind] if call[0].startswith("get")) == [
        ("get_pod", "b")]
    # after binding, the API (never the view) is asked whether the planned node is still there,
    # in one LIST by hostname label, not by reading the node
    assert [call for call in kube.calls[first_bind:]
            if call[0].startswith(("get", "node"))] == [("nodes_listed", "n1")]


async def test_a_node_the_hostname_list_misses_is_read_alone_after_binding() -> None:
    kube = cluster(make_pod("a"), make_pod("b"))
    kube.add_node(make_node("n1", hostname="host-1"))  # kubelet's --hostname-override
    settled = await run(kube, placement("a", "b"))
    assert kinds(settled) == ["GroupBound"]
    first_bind = next(i for i, call in enumerate(kube.calls) if call[0] == "bind")
    assert [call for call in kube.calls[first_bind:] if call[0].startswith("node")] == [
        ("nodes_listed", "n1"), ("node_exists", "n1")]


async def test_a_failed_hostname_list_falls_back_to_reading_each_node() -> None:
    kube = cluster(make_pod("a"), make_pod("b"))
    kube.failures[("nodes_listed", "n1")] = [errors.KubeUnavailable("connection reset")]
    settled = await run(kube, placement("a", "b"))
    assert kinds(settled) == ["GroupBound"]
    assert ("node_exists", "n1") in kube.calls


async def test_a_member_the_view_shows_bound_is_read_from_the_api_and_binds_nothing() -> None:
    kube = cluster(make_pod("a"), make_pod("b", node="n2"))
    view = ClusterView()
    view.apply(1, slim.pod_event(make_pod("b", node="n2"), 0))  # seen bound by someone else
    settled = await placing.carry_out(placement("a", "b"), kube, POLICY, clock,
                                      is_redelivery=False, known=view)
    assert ("get_pod", "b") in kube.calls  # who bound it is proven only by the API object
    assert [call for call in kube.calls if call[0] == "bind"] == []
    assert kinds(settled) == ["MemberBindFailed", "GroupRolledBack"]


async def place_beside(other_cpu: str) -> tuple[FakeKube, Settled]:
    """Place a and b (1 cpu each) on n1 (4 cpu), which the view shows another scheduler's pod
    of `other_cpu` bound to since the plan."""
    kube = cluster(requesting(make_pod("a"), "1"), requesting(make_pod("b"), "1"))
    view = ClusterView()
    view.apply(1, slim.node_event(sized_node("n1", cpu="4"), 0))
    for seq, name in enumerate("ab", start=2):
        view.apply(seq, slim.pod_event(requesting(make_pod(name), "1"), 0))
    other = requesting(make_pod("web", scheduler="default-scheduler", node="n1"), other_cpu)
    view.apply(9, slim.pod_event(other, 0))
    settled = await placing.carry_out(placement("a", "b"), kube, POLICY, clock,
                                      is_redelivery=False, known=view)
    return kube, settled


async def test_members_that_would_over_commit_a_node_filled_meanwhile_bind_nothing() -> None:
    kube, settled = await place_beside("3")
    assert [call for call in kube.calls if call[0] == "bind"] == []
    rolled = settled.outcomes[-1]
    assert isinstance(rolled, GroupRolledBack)
    assert rolled.reason == ("pod default/a cannot go to node n1: it has 1 cpu free (other pods "
                             "were bound there meanwhile) and the members planned there request "
                             "2 cpu")


async def test_members_that_still_fit_beside_pods_bound_meanwhile_are_bound() -> None:
    _, settled = await place_beside("2")
    assert kinds(settled) == ["GroupBound"]


async def test_two_placements_at_once_never_together_over_commit_a_node_filled_meanwhile(
) -> None:
    """Gangs a and b (2 x 1 cpu each) planned together on n1 (4 cpu), which another
    scheduler half filled since the plan: whichever binds first takes the room; the other
    binds nothing (each passed the re-check alone, and both bound: 6 cpu on 4). Once over,
    a placement holds no room for members it did not leave bound."""
    names = ("a1", "a2", "b1", "b2")
    kube = cluster(*(requesting(make_pod(name), "1") for name in names))
    view = ClusterView()
    view.apply(1, slim.node_event(sized_node("n1", cpu="4"), 0))
    for seq, name in enumerate(names, start=2):
        view.apply(seq, slim.pod_event(requesting(make_pod(name), "1"), 0))
    view.apply(9, slim.pod_event(requesting(
        make_pod("web", scheduler="default-scheduler", node="n1"), "2"), 0))
    gangs = [Placement(id=f"9-{i}", plan_seq=9, at_ms=NOW_MS, group=f"default/{gang}",
                       attempt=1, deadline_ms=NOW_MS + 30_000,
                       members=tuple(Assignment(f"uid-{gang}{n}", "default", f"{gang}{n}", "n1")
                                     for n in (1, 2)))
             for i, gang in enumerate("ab")]
    settled = await asyncio.gather(*(
        placing.carry_out(gang, kube, POLICY, clock, is_redelivery=False, known=view)
        for gang in gangs))
    assert sorted(kinds(one)[-1] for one in settled) == ["GroupBound", "GroupRolledBack"]
    assert sorted(name for name in names if kube.node_of(name) == "n1") in (
        ["a1", "a2"], ["b1", "b2"])
    assert view._taken.keys() == {("default", m.name) for m in settled[0].bound
                                  + settled[1].bound}


async def test_a_placement_onto_a_node_the_pod_does_not_fit_binds_nothing() -> None:
    # a forged (or stale) placement of a pod whose nodeSelector the planned node fails
    selective = make_pod("a")
    selective["spec"]["nodeSelector"] = {"pool": "gpu"}
    kube = cluster(selective, make_pod("b"))
    view = ClusterView()
    view.apply(1, slim.node_event(make_node("n1"), 0))
    view.apply(2, slim.pod_event(selective, 0))
    view.apply(3, slim.pod_event(make_pod("b"), 0))
    settled = await placing.carry_out(placement("a", "b"), kube, POLICY, clock,
                                      is_redelivery=False, known=view)
    assert [call for call in kube.calls if call[0] == "bind"] == []
    refused = settled.outcomes[0]
    assert isinstance(refused, MemberBindFailed) and refused.pod_uid == "uid-a"
    assert refused.reason == ("pod default/a cannot go to node n1: node(s) didn't match Pod's "
                              "node affinity/selector")


async def declared(features: list[str]) -> Settled:
    """Place a, whose container restarts all containers on a failed exit (it requires the
    node feature RestartAllContainersOnContainerExits), on n1 declaring `features`."""
    restarting = make_pod("a")
    restarting["spec"]["containers"][0].update(restartPolicy="Never", restartPolicyRules=[
        {"action": "RestartAllContainers", "exitCodes": {"operator": "In", "values": [1]}}])
    node = make_node("n1", allocatable={"cpu": "4", "pods": "110"})
    node["status"]["declaredFeatures"] = features
    kube = cluster(restarting)
    view = ClusterView()
    view.apply(1, slim.node_event(node, 0))
    view.apply(2, slim.pod_event(restarting, 0))
    return await placing.carry_out(placement("a"), kube, POLICY, clock, is_redelivery=False,
                                   known=view)


async def test_a_placement_onto_a_node_lacking_a_required_feature_binds_nothing() -> None:
    # NodeDeclaredFeatures, re-checked on the view as node affinity is
    refused = (await declared(["ExtendWebSocketsToKubelet"])).outcomes[0]
    assert isinstance(refused, MemberBindFailed) and refused.pod_uid == "uid-a"
    assert refused.reason == ("pod default/a cannot go to node n1: node(s) didn't match Pod's "
                              "required features")


async def test_a_placement_onto_a_node_declaring_the_feature_binds() -> None:
    settled = await declared(["ExtendWebSocketsToKubelet", "RestartAllContainersOnContainerExits"])
    assert kinds(settled) == ["GroupBound"]


class NodeDeletedWhileBinding(FakeKube):
    """An API server on which the node is deleted once the first member is bound to it."""

    async def bind(self, namespace: str, name: str, uid: str, node: str, *,
                   annotations: dict[str, str]) -> None:
        await super().bind(namespace, name, uid, node, annotations=annotations)
        self.nodes.pop(node, None)


async def test_a_node_deleted_while_binding_is_missed_by_the_list_and_rolls_the_gang_back(
) -> None:
    kube = NodeDeletedWhileBinding()
    kube.add_node(make_node("n1"))
    for pod in (make_pod("a"), make_pod("b")):
        kube.add_pod(pod)
    settled = await run(kube, placement("a", "b"))
    assert settled.rolled_back is not None
    assert "n1" in settled.rolled_back.reason
    assert [call for call in kube.calls if call[0].startswith("node")] == [
        ("nodes_listed", "n1"), ("node_exists", "n1")]
    assert sorted(settled.rolled_back.undone.deleted) == ["uid-a", "uid-b"]
