"""Core revision 31: a pod newly counted on a node, or relabelled, wakes the backed-off gangs
whose required pod affinity or DoNotSchedule topology spread it may let pass (`wakes`), as
InterPodAffinity's and PodTopologySpread's queueing hints requeue a pod in kube-scheduler;
the early retry keeps its backoff (1 s doubling to 10 s). Gangs it cannot matter to, and
gangs without such constraints, are not woken. Each scenario is also replayed through
snapshots restored after every event and every round. Core revision 33: one wake (or freeing)
gives at most one early retry, judged in event order whatever the plan points between; a
change is judged on the labels it left; the hints are kube-scheduler's (all affinity terms, a
relabel only when the match changes); the changes are looked up by label."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec
import pytest

from services.contracts.decisions import Decision, Placement
from services.planner.core import backoff, wakes
from services.planner.core.state import decode_state, encode_state
from tests.unit.planner.builders import (
    NodeBuilder,
    PodBuilder,
    PodGroupBuilder,
    make_node,
    make_pod,
    make_podgroup,
    pod_uid,
)
from tests.unit.planner.harness import Cluster, recorded
from tests.unit.planner.test_properties import replay_through_snapshots

HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
T = 31_000
"""When `backed_off` leaves a gang: found unschedulable at 31 s and never tried again on a timer
before kube-scheduler's unschedulable flush, 5 minutes later (core revision 37): only an early
retry places it sooner."""
FLUSH = T + backoff.UNSCHEDULABLE_FLUSH_MS


def node(name: str, zone: str = "a", cpu_milli: int = 4000) -> NodeBuilder:
    return make_node(name).capacity(cpu_milli=cpu_milli).labels(**{HOST: name, ZONE: zone})


def near_db(count: int = 2, group: str = "g") -> list[PodGroupBuilder | PodBuilder]:
    """A gang whose members must share a host with a pod labelled app=db."""
    return [make_podgroup(group, count)] + [
        make_pod(f"{group}-{i}").requests(cpu_milli=500).in_group(group)
        .pod_affinity(HOST, app="db") for i in range(count)]


def db(name: str = "db", node_name: str = "n1", **labels: str) -> PodBuilder:
    return (make_pod(name).scheduler("default-scheduler").requests(cpu_milli=100)
            .labelled(**(labels or {"app": "db"})).on_node(node_name))


def placements(decisions: list[Decision]) -> list[Placement]:
    return [d for d in decisions if isinstance(d, Placement)]


def check_replay(cluster: Cluster) -> None:
    """Decisions equal a replay restoring the state from its snapshot after every event and
    every round (changes recorded between a round and the next survive a snapshot)."""
    restores = set(range(len(cluster.log)))
    assert replay_through_snapshots(cluster.log, cluster.config, restores) == recorded(cluster)
    assert replay_through_snapshots(cluster.log, cluster.config) == recorded(cluster)


def backed_off(*items: PodGroupBuilder | PodBuilder,
               nodes: tuple[NodeBuilder, ...] | None = None) -> Cluster:
    """A cluster of `nodes` (default: n0 and n1 in zone a, 4 cpu each) and `items`, which
    arrive at `T`: gang g is found unschedulable then, its retry the flush."""
    cluster = Cluster().observe(*(nodes or (node("n0"), node("n1"))))
    cluster.advance(T / 1000)
    cluster.observe(*items)
    assert placements(cluster.plan()) == []
    group = cluster.state.groups["default/g"]
    assert (group.may_retry_early, group.last_attempt_ms, group.failures) == (True, T, 1)
    assert backoff.retry_at_ms(group, cluster.config) == FLUSH
    return cluster


def test_a_matching_pod_bound_later_places_the_gang_in_that_round() -> None:
    cluster = backed_off(*near_db())
    cluster.advance(5)
    cluster.observe(db())
    placed = placements(cluster.plan())
    assert [(p.at_ms, {m.name: m.node for m in p.members}) for p in placed] == [
        (T + 5_000, {"g-0": "n1", "g-1": "n1"})]
    group = cluster.state.groups["default/g"]
    assert 0 < group.woken_at < group.last_attempt_at  # woken, the wake used by the attempt
    check_replay(cluster)


def test_a_pod_arriving_within_the_early_retry_wait_places_the_gang_when_it_ends() -> None:
    cluster = backed_off(*near_db())
    cluster.advance(0.4)
    cluster.observe(db())
    assert placements(cluster.plan()) == []  # 0.4 s after the attempt: its early retry is at 1 s
    group = cluster.state.groups["default/g"]
    assert (group.woken_at > group.last_attempt_at, group.last_attempt_ms) == (True, T)
    assert backoff.next_wakeup_ms(cluster.state, cluster.config) == T + 1_000
    cluster.advance(0.6)
    assert [p.at_ms for p in placements(cluster.plan())] == [T + 1_000]
    check_replay(cluster)


def test_a_pod_matching_no_term_does_not_wake_the_gang() -> None:
    cluster = backed_off(*near_db())
    group = cluster.state.groups["default/g"]
    before = msgspec.json.encode(group)
    cluster.advance(5)
    cluster.observe(db(app="web"), db("cache", node_name="n0", app="cache"))
    assert cluster.plan() == []
    assert msgspec.json.encode(group) == before  # not woken, not attempted again
    assert backoff.next_wakeup_ms(cluster.state, cluster.config) == FLUSH
    assert cluster.state.counted_changes == []
    check_replay(cluster)


def test_a_pod_in_another_namespace_does_not_wake_the_gang() -> None:
    cluster = backed_off(*near_db())
    cluster.advance(5)
    cluster.observe(make_pod("db", namespace="other").scheduler("default-scheduler")
                    .labelled(app="db").on_node("n1"))
    assert cluster.plan() == []
    assert (cluster.state.groups["default/g"].woken_at,
            cluster.state.groups["default/g"].last_attempt_ms) == (0, T)


def test_a_pod_in_a_namespace_the_term_names_wakes_the_gang() -> None:
    gang: list[PodGroupBuilder | PodBuilder] = [
        make_podgroup("g", 1), make_pod("g-0").requests(cpu_milli=500).in_group("g")
        .pod_affinity(HOST, namespaces=("data",), app="db")]
    cluster = backed_off(*gang)
    cluster.advance(6)
    cluster.observe(make_pod("db", namespace="data").scheduler("default-scheduler")
                    .labelled(app="db").on_node("n0"))
    assert [(p.at_ms, p.members[0].node) for p in placements(cluster.plan())] == [
        (T + 6_000, "n0")]
    check_replay(cluster)


def test_a_gang_without_pod_constraints_is_not_woken_by_pod_arrivals() -> None:
    big = [make_podgroup("g", 2)] + [
        make_pod(f"g-{i}").requests(cpu_milli=5000).in_group("g") for i in range(2)]
    cluster = backed_off(*big)
    group = cluster.state.groups["default/g"]
    before = msgspec.json.encode(group)
    for second in range(1, 30):
        cluster.advance(1)
        cluster.observe(db(f"db{second}", node_name=f"n{second % 2}"))
        assert cluster.plan() == []
    assert msgspec.json.encode(group) == before  # never re-attempted
    check_replay(cluster)


def test_a_counted_pod_relabelled_to_match_wakes_the_gang() -> None:
    cluster = backed_off(db(app="cache"), *near_db())
    cluster.advance(3)
    cluster.observe(db(app="db"))  # the same pod, its label changed
    assert [p.at_ms for p in placements(cluster.plan())] == [T + 3_000]
    check_replay(cluster)


def test_a_pod_placed_by_gangsched_wakes_the_gang_the_next_round() -> None:
    cluster = backed_off(*near_db())
    cluster.advance(5)
    cluster.observe(make_pod("db").requests(cpu_milli=100).labelled(app="db"))
    decided = placements(cluster.plan())
    assert [(p.group, p.at_ms) for p in decided] == [("default/pod:db", T + 5_000)]
    assert [c.uid for c in cluster.state.counted_changes] == [pod_uid("db")]
    cluster.advance(0.5)
    placed = placements(cluster.plan())
    node_of_db = decided[0].members[0].node
    assert [(p.group, p.at_ms, {m.node for m in p.members}) for p in placed] == [
        ("default/g", T + 5_500, {node_of_db})]
    check_replay(cluster)


def spread_gang() -> list[PodGroupBuilder | PodBuilder]:
    """Gang g of one web pod, zone maxSkew 2: zone a (n0) has two web pods and room, zone b
    (n1) has none and no room; skew in a would be 3 - 0."""
    web = [make_pod(f"web{i}").scheduler("default-scheduler").labelled(app="web")
           .on_node("n0") for i in range(2)]
    member = (make_pod("g-0").requests(cpu_milli=500).in_group("g").labelled(app="web")
              .spread(ZONE, max_skew=2))
    return [*web, make_podgroup("g", 1), member]


SPREAD_NODES = (node("n0"), node("n1", zone="b", cpu_milli=100))


def test_a_pod_counted_by_a_spread_constraint_wakes_the_gang() -> None:
    cluster = backed_off(*spread_gang(), nodes=SPREAD_NODES)
    cluster.advance(7)
    cluster.observe(make_pod("web2").scheduler("default-scheduler").labelled(app="web")
                    .on_node("n1"))
    assert [(p.at_ms, p.members[0].node) for p in placements(cluster.plan())] == [
        (T + 7_000, "n0")]
    check_replay(cluster)


def test_a_pod_outside_the_spread_selector_does_not_wake_the_gang() -> None:
    cluster = backed_off(*spread_gang(), nodes=SPREAD_NODES)
    cluster.advance(7)
    cluster.observe(make_pod("api").scheduler("default-scheduler").labelled(app="api")
                    .on_node("n1"))
    assert cluster.plan() == []
    assert (cluster.state.groups["default/g"].woken_at,
            cluster.state.groups["default/g"].last_attempt_ms) == (0, T)


def test_failed_woken_retries_back_off_one_second_doubling() -> None:
    """A matching pod arrives every 0.5 s but never lets the gang in (its host is full): the
    gang is tried 1, 3, 7 and 15 s after its attempt at T, as freed capacity would pace it."""
    cluster = backed_off(*near_db(), nodes=(node("n0"), node("n1", cpu_milli=100)))
    group = cluster.state.groups["default/g"]
    attempts: list[int] = []
    for step in range(1, 41):
        cluster.advance(0.5)
        cluster.observe(db(f"db{step}"))
        last = group.last_attempt_ms
        cluster.plan()
        if group.last_attempt_ms != last:
            assert group.last_attempt_ms is not None
            attempts.append(group.last_attempt_ms - T)
    assert attempts == [1_000, 3_000, 7_000, 15_000]
    check_replay(cluster)


GUARDED: list[PodGroupBuilder | PodBuilder] = [
    make_podgroup("g", 1),
    make_pod("g-0").requests(cpu_milli=500).in_group("g").anti_affinity(HOST, app="db")]


def test_anti_affinity_still_wakes_on_the_pods_deletion() -> None:
    cluster = backed_off(db(node_name="n0"), *GUARDED, nodes=(node("n0"),))
    cluster.advance(4)
    cluster.delete_pod("db")
    assert [(p.at_ms, p.members[0].node) for p in placements(cluster.plan())] == [
        (T + 4_000, "n0")]
    check_replay(cluster)


def test_a_pod_relabelled_out_of_an_anti_affinity_term_wakes_the_gang() -> None:
    cluster = backed_off(db(node_name="n0"), *GUARDED, nodes=(node("n0"),))
    cluster.advance(2)
    cluster.observe(db(node_name="n0", app="retired"))
    assert [p.at_ms for p in placements(cluster.plan())] == [T + 2_000]
    check_replay(cluster)


FULL_N1 = (node("n0"), node("n1", cpu_milli=100))
"""n1 (where `db` lands) has no room for a member: a wake by `db` retries the gang in vain."""


def test_one_wake_gives_one_early_retry() -> None:
    """kube-scheduler moves a pod once per event; a failed attempt sends it back to wait for the
    next event. The retry in the round of the wake uses it up: no second retry follows."""
    cluster = backed_off(*near_db(), nodes=FULL_N1)
    group = cluster.state.groups["default/g"]
    cluster.advance(5)
    cluster.observe(db())  # matches the term, but its host is full: the retry fails
    cluster.plan()
    assert (group.last_attempt_ms, group.early_retries) == (T + 5_000, 1)
    assert backoff.next_wakeup_ms(cluster.state, cluster.config) == FLUSH
    cluster.advance(2)
    assert cluster.plan() == []
    assert (group.last_attempt_ms, group.early_retries) == (T + 5_000, 1)
    check_replay(cluster)


def test_capacity_freed_after_an_attempt_in_its_millisecond_still_counts() -> None:
    """Event order, not event time: a pod deleted in the millisecond of the gang's last attempt
    (at T), but after it, frees capacity that attempt did not see: it earns an early retry."""
    web = make_pod("web").scheduler("default-scheduler").labelled(app="web").on_node("n0")
    cluster = backed_off(web, *near_db(), nodes=FULL_N1)
    group = cluster.state.groups["default/g"]
    cluster.delete_pod("web")  # at T, after the attempt
    assert backoff.next_wakeup_ms(cluster.state, cluster.config) == T + 1_000
    cluster.advance(1)
    assert cluster.plan() == []
    assert (group.last_attempt_ms, group.early_retries) == (T + 1_000, 1)
    assert backoff.next_wakeup_ms(cluster.state, cluster.config) == FLUSH
    check_replay(cluster)


def _placed_after_a_vain_wake(plan_when_db_arrives: bool) -> list[int]:
    """db (matching, on the full n1) arrives 0.5 s after the last attempt; with or without a
    round at that moment, the same events follow: ticks at 1 s and 3 s, and at 4 s db2
    (matching) on n0, where the gang fits. The times of the placements (after T, ms)."""
    cluster = backed_off(*near_db(), nodes=FULL_N1)
    cluster.advance(0.5)
    cluster.observe(db())
    if plan_when_db_arrives:
        cluster.plan()
    cluster.advance(0.5)
    cluster.plan()  # T + 1 s: the early retry db earned, in vain
    cluster.advance(2)
    cluster.plan()
    cluster.advance(1)
    cluster.observe(db("db2", node_name="n0"))
    placed = [p.at_ms - T for p in placements(cluster.plan())]
    for _ in range(6):
        cluster.advance(1)
        placed += [p.at_ms - T for p in placements(cluster.plan())]
    check_replay(cluster)
    return placed


def test_the_placement_time_does_not_depend_on_a_plan_point_between_the_same_events() -> None:
    # as kube-scheduler: retried at 1 s in vain, db2 at 4 s, the next retry due 1 s + 2 s
    assert _placed_after_a_vain_wake(plan_when_db_arrives=True) == [4_000]
    assert _placed_after_a_vain_wake(plan_when_db_arrives=False) == [4_000]


def _placed_after_a_relabel(plan_between: bool) -> list[int]:
    """db (matching) is counted on the full n1 at 0.5 s and relabelled away at 0.8 s; with or
    without a round between the two, then a tick at 1 s and db2 (matching) on n0 at 1.5 s."""
    cluster = backed_off(*near_db(), nodes=FULL_N1)
    cluster.advance(0.5)
    cluster.observe(db())
    if plan_between:
        cluster.plan()
    cluster.advance(0.3)
    cluster.observe(db(app="web"))
    cluster.plan()
    cluster.advance(0.2)
    cluster.plan()
    cluster.advance(0.5)
    cluster.observe(db("db2", node_name="n0"))
    placed = [p.at_ms - T for p in placements(cluster.plan())]
    for _ in range(6):
        cluster.advance(0.5)
        placed += [p.at_ms - T for p in placements(cluster.plan())]
    check_replay(cluster)
    return placed


def test_a_pod_counted_matching_wakes_even_if_relabelled_before_the_round() -> None:
    # as kube-scheduler: the add at 0.5 s queues (retried at 1 s in vain; the relabel at 0.8 s
    # is skipped), db2 at 1.5 s queues, the next retry due 1 s + 2 s: placed at 3 s
    assert _placed_after_a_relabel(plan_between=True) == [3_000]
    assert _placed_after_a_relabel(plan_between=False) == [3_000]


def _woken_and_last(cluster: Cluster) -> tuple[int, int | None]:
    group = cluster.state.groups["default/g"]
    return group.woken_at, group.last_attempt_ms


def test_a_pod_matching_one_of_two_affinity_terms_does_not_wake() -> None:
    """InterPodAffinity's hint queues only for a pod matching all the required terms
    (`podMatchesAllAffinityTerms`): the filter counts no other."""
    gang: list[PodGroupBuilder | PodBuilder] = [
        make_podgroup("g", 1), make_pod("g-0").requests(cpu_milli=500).in_group("g")
        .pod_affinity(HOST, app="db").pod_affinity(HOST, tier="cache")]
    cluster = backed_off(*gang)
    cluster.advance(5)
    cluster.observe(db())  # app=db only
    assert cluster.plan() == []
    assert _woken_and_last(cluster) == (0, T)
    cluster.advance(1)
    cluster.observe(db("both", node_name="n0", app="db", tier="cache"))
    assert [(p.at_ms, p.members[0].node) for p in placements(cluster.plan())] == [
        (T + 6_000, "n0")]
    check_replay(cluster)


def test_relabelling_a_pod_that_already_matched_the_affinity_terms_does_not_wake() -> None:
    cluster = backed_off(db(), *near_db(), nodes=FULL_N1)
    cluster.advance(5)
    cluster.observe(db(app="db", version="2"))  # still app=db: the filter's counts unchanged
    assert cluster.plan() == []
    assert _woken_and_last(cluster) == (0, T)
    check_replay(cluster)


def test_relabelling_a_pod_that_stays_in_the_spread_selector_does_not_wake() -> None:
    """PodTopologySpread's hint queues on a relabel only when a selector's match changes."""
    cluster = backed_off(*spread_gang(), nodes=SPREAD_NODES)
    cluster.advance(7)
    cluster.observe(make_pod("web0").scheduler("default-scheduler")
                    .labelled(app="web", version="2").on_node("n0"))  # still app=web
    assert cluster.plan() == []
    assert _woken_and_last(cluster) == (0, T)
    cluster.advance(1)
    cluster.observe(make_pod("web0").scheduler("default-scheduler")
                    .labelled(app="api").on_node("n0"))  # leaves the selector: skew 2 - 0
    assert [(p.at_ms, p.members[0].node) for p in placements(cluster.plan())] == [
        (T + 8_000, "n0")]
    check_replay(cluster)


def test_waking_looks_at_the_changes_a_gang_may_match_only(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """20 backed-off spread gangs (selector job=g<i>), 200 pods bound in their namespace, two
    of them labelled job=g3: only g3 is woken, and `may_matter` judges one change (the
    latest of g3's), not gangs x changes: changes are looked up by the selectors' labels."""
    nodes = [make_node(f"n{i}").capacity(cpu_milli=1000)
             .labels(**{HOST: f"n{i}", ZONE: f"z{i % 3}"}) for i in range(10)]
    items: list[PodGroupBuilder | PodBuilder] = []
    for g in range(20):
        items.append(make_podgroup(f"g{g}", 2))
        items += [make_pod(f"g{g}-{m}").requests(cpu_milli=5000).in_group(f"g{g}")
                  .labelled(job=f"g{g}").spread(ZONE) for m in range(2)]
    cluster = Cluster().observe(*nodes, *items)
    cluster.plan()
    cluster.advance(0.5)
    cluster.observe(*[make_pod(f"b{i}").scheduler("default-scheduler")
                      .labelled(**({"job": "g3"} if i in (7, 8) else {"app": "batch"}))
                      .on_node(f"n{i % 10}") for i in range(200)])
    calls: list[Mapping[str, str]] = []
    judge = wakes.may_matter

    def counting(*args: Any) -> bool:
        calls.append(args[2])
        return judge(*args)

    monkeypatch.setattr(wakes, "may_matter", counting)
    cluster.plan()
    assert [g for g in range(20) if cluster.state.groups[f"default/g{g}"].woken_at] == [3]
    assert calls == [{"job": "g3"}]


def test_a_change_a_revision_32_snapshot_holds_still_wakes_the_gang() -> None:
    """A snapshot of core 32 holds changes as `{uid, was}` only: restored, the change is read
    with the pod as it is then, and wakes the gang as it did."""
    cluster = backed_off(*near_db())
    cluster.advance(5)
    cluster.observe(db())
    snapshot = msgspec.json.decode(encode_state(cluster.state))
    snapshot["counted_changes"] = [{"uid": pod_uid("db"), "was": None}]
    cluster.state = decode_state(msgspec.json.encode(snapshot))
    assert [(p.at_ms, {m.node for m in p.members}) for p in placements(cluster.plan())] == [
        (T + 5_000, {"n1"})]
