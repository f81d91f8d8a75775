"""Core revision 31: a pod newly counted on a node, or relabelled, wakes the backed-off gangs
whose required pod affinity or DoNotSchedule topology spread it may let pass (`wakes`), as
InterPodAffinity's and PodTopologySpread's queueing hints requeue a pod in kube-scheduler;
the early retry keeps its backoff (1 s doubling to 10 s). Gangs it cannot matter to, and
gangs without such constraints, are not woken. Each scenario is also replayed through
snapshots restored after every event and every round."""
from __future__ import annotations

import msgspec

from services.contracts.decisions import Placement
from services.planner.core import backoff
from tests.unit.planner.builders import make_node, make_pod, make_podgroup, pod_uid
from tests.unit.planner.harness import Cluster, recorded
from tests.unit.planner.test_properties import replay_through_snapshots

HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
T = 31_000
"""When `backed_off` leaves a gang: its sixth failed attempt (at 0, 1, 3, 7, 15 and 31 s), its
next timed retry 32 s later (63 s): only an early retry places it sooner."""


def node(name, zone="a", cpu_milli=4000):
    return make_node(name).capacity(cpu_milli=cpu_milli).labels(**{HOST: name, ZONE: zone})


def near_db(count=2, group="g"):
    """A gang whose members must share a host with a pod labelled app=db."""
    return [make_podgroup(group, count)] + [
        make_pod(f"{group}-{i}").requests(cpu_milli=500).in_group(group)
        .pod_affinity(HOST, app="db") for i in range(count)]


def db(name="db", node_name="n1", **labels):
    return (make_pod(name).scheduler("default-scheduler").requests(cpu_milli=100)
            .labelled(**(labels or {"app": "db"})).on_node(node_name))


def placements(decisions):
    return [d for d in decisions if isinstance(d, Placement)]


def check_replay(cluster):
    """Decisions equal a replay restoring the state from its snapshot after every event and
    every round (changes recorded between a round and the next survive a snapshot)."""
    restores = set(range(len(cluster.log)))
    assert replay_through_snapshots(cluster.log, cluster.config, restores) == recorded(cluster)
    assert replay_through_snapshots(cluster.log, cluster.config) == recorded(cluster)


def backed_off(*items, nodes=None):
    """A cluster of `nodes` (default: n0 and n1 in zone a, 4 cpu each) and `items`, planned at
    every timed retry of gang g until `T`, when it last failed."""
    cluster = Cluster().observe(*(nodes or (node("n0"), node("n1"))), *items)
    assert placements(cluster.plan()) == []
    for wait in (1, 2, 4, 8, 16):
        cluster.advance(wait)
        assert placements(cluster.plan()) == []
    group = cluster.state.groups["default/g"]
    assert (group.may_retry_early, group.last_attempt_ms, group.failures) == (True, T, 6)
    assert backoff.retry_at_ms(group, cluster.config) == T + 32_000
    return cluster


def test_a_matching_pod_bound_later_places_the_gang_in_that_round():
    cluster = backed_off(*near_db())
    cluster.advance(5)
    cluster.observe(db())
    placed = placements(cluster.plan())
    assert [(p.at_ms, {m.name: m.node for m in p.members}) for p in placed] == [
        (T + 5_000, {"g-0": "n1", "g-1": "n1"})]
    assert cluster.state.groups["default/g"].woken_ms == T + 5_000
    check_replay(cluster)


def test_a_pod_arriving_within_the_early_retry_wait_places_the_gang_when_it_ends():
    cluster = backed_off(*near_db())
    cluster.advance(0.4)
    cluster.observe(db())
    assert placements(cluster.plan()) == []  # 0.4 s after the attempt: its early retry is at 1 s
    assert cluster.state.groups["default/g"].woken_ms == T + 400
    assert backoff.next_wakeup_ms(cluster.state, cluster.config) == T + 1_000
    cluster.advance(0.6)
    assert [p.at_ms for p in placements(cluster.plan())] == [T + 1_000]
    check_replay(cluster)


def test_a_pod_matching_no_term_does_not_wake_the_gang():
    cluster = backed_off(*near_db())
    group = cluster.state.groups["default/g"]
    before = msgspec.json.encode(group)
    cluster.advance(5)
    cluster.observe(db(app="web"), db("cache", node_name="n0", app="cache"))
    assert cluster.plan() == []
    assert msgspec.json.encode(group) == before  # not woken, not attempted again
    assert backoff.next_wakeup_ms(cluster.state, cluster.config) == T + 32_000
    assert cluster.state.counted_changes == []
    check_replay(cluster)


def test_a_pod_in_another_namespace_does_not_wake_the_gang():
    cluster = backed_off(*near_db())
    cluster.advance(5)
    cluster.observe(make_pod("db", namespace="other").scheduler("default-scheduler")
                    .labelled(app="db").on_node("n1"))
    assert cluster.plan() == []
    assert (cluster.state.groups["default/g"].woken_ms,
            cluster.state.groups["default/g"].last_attempt_ms) == (0, T)


def test_a_pod_in_a_namespace_the_term_names_wakes_the_gang():
    gang = [make_podgroup("g", 1), make_pod("g-0").requests(cpu_milli=500).in_group("g")
            .pod_affinity(HOST, namespaces=("data",), app="db")]
    cluster = backed_off(*gang)
    cluster.advance(6)
    cluster.observe(make_pod("db", namespace="data").scheduler("default-scheduler")
                    .labelled(app="db").on_node("n0"))
    assert [(p.at_ms, p.members[0].node) for p in placements(cluster.plan())] == [
        (T + 6_000, "n0")]
    check_replay(cluster)


def test_a_gang_without_pod_constraints_is_not_woken_by_pod_arrivals():
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


def test_a_counted_pod_relabelled_to_match_wakes_the_gang():
    cluster = backed_off(db(app="cache"), *near_db())
    cluster.advance(3)
    cluster.observe(db(app="db"))  # the same pod, its label changed
    assert [p.at_ms for p in placements(cluster.plan())] == [T + 3_000]
    check_replay(cluster)


def test_a_pod_placed_by_gangsched_wakes_the_gang_the_next_round():
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


def spread_gang():
    """Gang g of one web pod, zone maxSkew 2: zone a (n0) has two web pods and room, zone b
    (n1) has none and no room; skew in a would be 3 - 0."""
    web = [make_pod(f"web{i}").scheduler("default-scheduler").labelled(app="web")
           .on_node("n0") for i in range(2)]
    member = (make_pod("g-0").requests(cpu_milli=500).in_group("g").labelled(app="web")
              .spread(ZONE, max_skew=2))
    return [*web, make_podgroup("g", 1), member]


SPREAD_NODES = (node("n0"), node("n1", zone="b", cpu_milli=100))


def test_a_pod_counted_by_a_spread_constraint_wakes_the_gang():
    cluster = backed_off(*spread_gang(), nodes=SPREAD_NODES)
    cluster.advance(7)
    cluster.observe(make_pod("web2").scheduler("default-scheduler").labelled(app="web")
                    .on_node("n1"))
    assert [(p.at_ms, p.members[0].node) for p in placements(cluster.plan())] == [
        (T + 7_000, "n0")]
    check_replay(cluster)


def test_a_pod_outside_the_spread_selector_does_not_wake_the_gang():
    cluster = backed_off(*spread_gang(), nodes=SPREAD_NODES)
    cluster.advance(7)
    cluster.observe(make_pod("api").scheduler("default-scheduler").labelled(app="api")
                    .on_node("n1"))
    assert cluster.plan() == []
    assert (cluster.state.groups["default/g"].woken_ms,
            cluster.state.groups["default/g"].last_attempt_ms) == (0, T)


def test_failed_woken_retries_back_off_one_second_doubling():
    """A matching pod arrives every 0.5 s but never lets the gang in (its host is full): the
    gang is tried 1, 3, 7 and 15 s after its attempt at T, as freed capacity would pace it."""
    cluster = backed_off(*near_db(), nodes=(node("n0"), node("n1", cpu_milli=100)))
    group = cluster.state.groups["default/g"]
    attempts = []
    for step in range(1, 41):
        cluster.advance(0.5)
        cluster.observe(db(f"db{step}"))
        last = group.last_attempt_ms
        cluster.plan()
        if group.last_attempt_ms != last:
            attempts.append(group.last_attempt_ms - T)
    assert attempts == [1_000, 3_000, 7_000, 15_000]
    check_replay(cluster)


GUARDED = [make_podgroup("g", 1), make_pod("g-0").requests(cpu_milli=500).in_group("g")
           .anti_affinity(HOST, app="db")]


def test_anti_affinity_still_wakes_on_the_pods_deletion():
    cluster = backed_off(db(node_name="n0"), *GUARDED, nodes=(node("n0"),))
    cluster.advance(4)
    cluster.delete_pod("db")
    assert [(p.at_ms, p.members[0].node) for p in placements(cluster.plan())] == [
        (T + 4_000, "n0")]
    check_replay(cluster)


def test_a_pod_relabelled_out_of_an_anti_affinity_term_wakes_the_gang():
    cluster = backed_off(db(node_name="n0"), *GUARDED, nodes=(node("n0"),))
    cluster.advance(2)
    cluster.observe(db(node_name="n0", app="retired"))
    assert [p.at_ms for p in placements(cluster.plan())] == [T + 2_000]
    check_replay(cluster)
