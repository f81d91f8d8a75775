"""Members replaced after the gang ran: placed on their own, PodGroup not Failed.

A gang that reached quorum once (bound + Succeeded members >= minMember) keeps its Succeeded
members' places: a replacement of a deleted or failed member is placed without waiting for
minMember new pods, in a Placement of its own (so a rollback of it touches no running member),
and the PodGroup is Scheduling while it waits, Running once it runs, never Failed. A gang that
never ran, or whose members were all deleted and recreated, still waits for quorum.
"""

from __future__ import annotations

from services.contracts.decisions import Decision, Placement
from services.planner.core import backoff, quorum, status
from services.planner.core.quorum import Counts
from services.planner.core.state import GroupState, decode_state, encode_state
from tests.unit.planner.builders import PodBuilder, make_node, make_pod, make_podgroup, pod_uid
from tests.unit.planner.harness import Cluster, replay


def member(name: str, cpu_milli: int = 1000) -> PodBuilder:
    return make_pod(name).requests(cpu_milli=cpu_milli).in_group("g").owned_by("train", "Job")


def ran(min_member: int, *names: str, nodes: int = 2) -> Cluster:
    """Gang g of `names` (1 CPU each) placed whole and running on nodes n0.. of 1 CPU each."""
    cluster = Cluster().observe(
        *[make_node(f"n{i}").capacity(cpu_milli=1000) for i in range(nodes)],
        make_podgroup("g", min_member), *[member(name) for name in names])
    cluster.run()
    assert cluster.bound() == sorted(names)
    return cluster


def index_0_done_index_1_replaced() -> Cluster:
    """The Indexed Job of the issue: gang g of 2 ran, g-0 Succeeded, g-1 deleted, and its
    replacement g-1b pending (the only pod that will ever come for it)."""
    cluster = ran(2, "g-0", "g-1")
    cluster.set_phase("g-0", "Succeeded")
    cluster.plan()
    cluster.delete_pod("g-1")
    cluster.observe(member("g-1b"))
    return cluster


def placed_members(decisions: list[Decision]) -> list[list[str]]:
    return [[m.name for m in d.members] for d in decisions if isinstance(d, Placement)]


def latest(cluster: Cluster) -> tuple[str, tuple[int, int, int]]:
    update = cluster.statuses("default/g")[-1]
    return update.phase, (update.running, update.succeeded, update.failed)


def test_has_run_is_reached_by_bound_and_succeeded_members_and_forgotten_with_the_last() -> None:
    assert quorum.has_run(False, 1, 1, 2)
    assert not quorum.has_run(False, 0, 1, 2)  # a Succeeded pod alone: never ran as a gang
    assert quorum.has_run(True, 0, 1, 2)  # ran, one member done, the other replaced
    assert not quorum.has_run(True, 0, 0, 2)  # every member gone: a new gang


def test_succeeded_members_hold_their_places_only_once_the_gang_has_run() -> None:
    counts = Counts(bound=0, reserved=0, pending=1, gated=0, succeeded=1)
    assert (quorum.has_quorum(counts, 2), quorum.still_needed(counts, 2)) == (True, 1)
    beyond = Counts(bound=1, reserved=0, pending=1, gated=0, succeeded=1)
    assert (quorum.still_needed(beyond, 2), quorum.is_stranded(beyond, 2)) == (0, False)
    assert quorum.is_stranded(Counts(bound=1, reserved=0, pending=1, gated=0, succeeded=1), 3)


def test_a_replacement_after_running_is_placed_alone() -> None:
    cluster = ran(2, "g-0", "g-1")
    cluster.delete_pod("g-1")
    cluster.observe(member("g-1b"))
    decisions = cluster.run()
    assert placed_members(decisions) == [["g-1b"]]
    assert cluster.bound() == ["g-0", "g-1b"]
    assert cluster.node_of("g-0") == "n0"


def test_a_replacement_after_succeeded_and_deleted_is_placed_without_waiting_for_quorum() -> None:
    cluster = index_0_done_index_1_replaced()  # it was "1 of 2 members exist" forever
    decisions = cluster.run()
    assert placed_members(decisions) == [["g-1b"]]
    assert cluster.bound() == ["g-1b"]
    assert not cluster.rejections("default/g")


def test_a_replacement_beside_succeeded_and_running_members_is_beyond_quorum() -> None:
    cluster = ran(2, "g-0", "g-1", nodes=3)
    cluster.set_phase("g-0", "Succeeded")
    cluster.observe(member("g-2"))
    decisions = cluster.run()
    assert placed_members(decisions) == [["g-2"]]
    assert cluster.bound() == ["g-1", "g-2"]


def test_podgroup_phase_through_a_failed_member_replaced() -> None:
    cluster = ran(2, "g-0", "g-1")
    assert latest(cluster) == ("Running", (2, 0, 0))
    cluster.set_phase("g-0", "Succeeded")
    cluster.plan()
    assert latest(cluster) == ("Running", (1, 1, 0))
    cluster.set_phase("g-1", "Failed")  # the Job keeps the failed pod and makes a new one
    cluster.plan()
    assert latest(cluster) == ("Failed", (0, 1, 1))  # not replaced (yet): below quorum
    cluster.observe(member("g-1b"))
    decisions = cluster.plan()
    assert placed_members(decisions) == [["g-1b"]]
    assert latest(cluster) == ("Scheduling", (0, 1, 1))  # being replaced: not Failed
    assert cluster.statuses("default/g")[-1].condition_reason == "Binding"
    cluster.bind(decisions)
    cluster.plan()
    assert latest(cluster) == ("Running", (1, 1, 1))
    cluster.set_phase("g-1b", "Succeeded")
    cluster.plan()
    assert latest(cluster) == ("Finished", (0, 2, 1))
    phases = [u.phase for u in cluster.statuses("default/g")]
    assert [p for i, p in enumerate(phases) if i == 0 or phases[i - 1] != p] == [
        "Scheduling", "Running", "Failed", "Scheduling", "Running", "Finished"]


def test_phase_counts_a_failed_member_replaced_only_when_the_rest_make_min_member() -> None:
    assert status.phase(pods=3, running=0, succeeded=1, failed=1, min_member=2) == "Scheduling"
    assert status.phase(pods=2, running=0, succeeded=1, failed=1, min_member=2) == "Failed"
    assert status.phase(pods=3, running=2, succeeded=0, failed=1, min_member=3) == "Failed"
    assert status.phase(pods=4, running=2, succeeded=0, failed=1, min_member=3) == "Scheduling"
    assert status.phase(pods=3, running=1, succeeded=1, failed=1, min_member=2) == "Running"


def test_a_gang_that_never_ran_still_waits_for_quorum() -> None:
    done = member("g-0").on_node("n0", "Succeeded")  # bound by someone else, never a gang
    cluster = Cluster().observe(make_node("n0").capacity(cpu_milli=4000),
                                make_podgroup("g", 2), done, member("g-1"))
    cluster.advance(1).run()
    assert cluster.bound() == []
    assert cluster.last_reason("default/g") == (
        "gang default/g: 1 of 2 members exist; waiting for quorum (minMember 2)")
    assert not cluster.state.groups["default/g"].has_run


def test_all_members_deleted_and_recreated_is_a_new_gang_placed_whole() -> None:
    cluster = ran(2, "g-0", "g-1")
    cluster.delete_pod("g-0")
    cluster.delete_pod("g-1")
    cluster.observe(member("g-0b"))
    assert placed_members(cluster.run()) == []
    assert placed_members(cluster.advance(1).run()) == []
    assert cluster.last_reason("default/g") == (
        "gang default/g: 1 of 2 members exist; waiting for quorum (minMember 2)")
    cluster.observe(member("g-1b"))
    assert placed_members(cluster.run()) == [["g-0b", "g-1b"]]


def test_a_replacement_that_does_not_fit_waits_and_leaves_the_running_members_alone() -> None:
    cluster = ran(3, "g-0", "g-1", "g-2", nodes=3)
    cluster.set_phase("g-0", "Succeeded")
    cluster.plan()
    # another scheduler's pods take the room g-0 and g-2 leave
    cluster.observe(make_pod("dns").requests(cpu_milli=1000).scheduler("default-scheduler")
                    .on_node("n0"))
    cluster.delete_pod("g-2")
    cluster.observe(make_pod("web").requests(cpu_milli=1000).scheduler("default-scheduler")
                    .on_node("n2"), member("g-2b"))
    decisions = cluster.run()
    assert placed_members(decisions) == []
    assert cluster.last_reason("default/g") == (
        "gang default/g: 2 of 3 members fit (1 Succeeded after the gang ran); 0/3 nodes are "
        "available: 3 Insufficient cpu.; 1 member(s) already bound: reserving capacity on 1 "
        "node(s) so this gang completes before any other is placed")
    rejection = cluster.rejections("default/g")[-1]
    assert [pod.name for pod in rejection.pods] == ["g-2b"]
    # found unschedulable: retried when something changes (the room frees), or at the flush
    assert rejection.retry_at_ms == cluster.now_ms + backoff.UNSCHEDULABLE_FLUSH_MS
    assert (cluster.node_of("g-1"), cluster.pod("g-1").phase) == ("n1", "Running")
    assert latest(cluster) == ("Scheduling", (1, 1, 0))

    cluster.advance(2)
    cluster.delete_pod("web")
    decisions = cluster.run()
    assert placed_members(decisions) == [["g-2b"]]
    assert cluster.bound() == ["g-1", "g-2b"]
    assert latest(cluster) == ("Running", (2, 1, 0))


def test_a_replacement_rolled_back_releases_only_itself() -> None:
    cluster = index_0_done_index_1_replaced()
    placement = next(d for d in cluster.plan() if isinstance(d, Placement))
    assert [m.name for m in placement.members] == ["g-1b"]
    cluster.roll_back(placement, "bind refused: forbidden")
    assert pod_uid("g-1b") not in cluster.state.reservations
    cluster.plan()
    assert cluster.last_reason("default/g") == (
        f"gang default/g: placement {placement.id} rolled back: bind refused: forbidden")
    assert cluster.state.groups["default/g"].has_run  # g-0 Succeeded: still the same gang
    cluster.advance(2)
    assert placed_members(cluster.run()) == [["g-1b"]]
    assert replay(cluster.log, cluster.config) == replay(cluster.log, cluster.config)


def test_group_state_remembers_the_run_across_a_snapshot() -> None:
    cluster = ran(2, "g-0", "g-1")
    assert decode_state(encode_state(cluster.state)).groups["default/g"].has_run
    assert not GroupState().has_run
