"""NodeDeclaredFeatures (kube-scheduler 1.36, beta, on by default): a pod whose spec requires
node features (`PodObserved.required_features`, e.g. a RestartAllContainers restart rule) goes
only to nodes declaring them all (`NodeObserved.declared_features`); the reason `node(s)
didn't match Pod's required features` is the last filter's, UnschedulableAndUnresolvable, so
preemption never evicts for it; a node that comes to declare the feature wakes the pod."""

from __future__ import annotations

import msgspec

from services.contracts.decisions import Placement, Preemption
from services.fit import filters
from services.planner.core.state import decode_state, encode_state
from tests.unit.planner.builders import make_node, make_pod, make_podgroup
from tests.unit.planner.harness import Cluster, assert_index_is_a_rebuild, recorded, replay
from tests.unit.planner.unschedulable import placed, plan_until_placed

RESTART_ALL = "RestartAllContainersOnContainerExits"
USERNS = "UserNamespacesHostNetworkSupport"
LACKING = "node(s) didn't match Pod's required features"


def test_a_pod_requiring_a_feature_goes_only_to_a_node_declaring_it() -> None:
    """Least-allocated scoring prefers the emptier `big`, which declares nothing."""
    cluster = Cluster().observe(
        make_node("big").capacity(cpu_milli=16000),
        make_node("small").capacity(cpu_milli=2000).declares(RESTART_ALL, "SomethingElse"),
        make_pod("p").requests(cpu_milli=1000).requires(RESTART_ALL))
    cluster.plan()
    assert cluster.node_of("p") == "small"


def test_a_pod_requiring_nothing_goes_anywhere_and_skips_the_filter() -> None:
    cluster = Cluster().observe(make_node("n0"), make_pod("p").requests(cpu_milli=1000))
    cluster.plan()
    assert cluster.node_of("p") == "n0"
    index = cluster.state.derived.index if cluster.state.derived is not None else None
    assert index is not None and index.static_fit(cluster.pod("p")).lacking is None


def test_every_required_feature_must_be_declared() -> None:
    cluster = Cluster().observe(
        make_node("n0").declares(RESTART_ALL), make_node("n1").declares(USERNS),
        make_node("n2").declares(RESTART_ALL, USERNS),
        make_pod("p").requires(RESTART_ALL, USERNS))
    cluster.plan()
    assert cluster.node_of("p") == "n2"


def test_no_node_declaring_it_gives_kubes_reason_for_each_node() -> None:
    cluster = Cluster().observe(make_node("n0"), make_node("n1").declares(USERNS),
                                make_pod("p").requires(RESTART_ALL))
    cluster.plan()
    assert cluster.last_reason("default/pod:p") == f"0/2 nodes are available: 2 {LACKING}."


def test_the_reason_is_the_last_filters_so_any_other_refusal_comes_first() -> None:
    """kube-scheduler runs NodeDeclaredFeatures after every other filter and stops at the
    first that fails: a node also tainted, short of cpu, holding the port or refused by
    anti-affinity gives that reason; only `plain` gives the features'."""
    cluster = Cluster().observe(
        make_node("tainted").taint("dedicated", "gpu"),
        make_node("short").capacity(cpu_milli=500),
        make_node("ported").labels(zone="a"), make_node("anti").labels(zone="b"),
        make_node("plain"),
        make_pod("web").on_node("ported").host_port(8080),
        make_pod("db").on_node("anti").labelled(app="db"),
        make_pod("p").requests(cpu_milli=1000).host_port(8080).requires(RESTART_ALL)
        .anti_affinity("zone", app="db"))
    cluster.plan()
    assert cluster.last_reason("default/pod:p") == (
        "0/5 nodes are available: 1 Insufficient cpu, 1 node(s) didn't have free ports for the "
        f"requested pod ports, 1 {LACKING}, 1 node(s) didn't match pod anti-affinity rules, "
        "1 node(s) had untolerated taint(s).")


def test_a_node_declaring_it_later_wakes_the_waiting_pod_at_once() -> None:
    """kube-scheduler requeues it on the Node update (`isSchedulableAfterNodeChange`); here the
    update counts as freed capacity, and the index drops what it filtered by the old list."""
    cluster = Cluster().observe(make_node("n0"), make_pod("p").requires(RESTART_ALL))
    cluster.plan()
    cluster.advance(30)
    assert cluster.plan() == []
    cluster.observe(make_node("n0").declares(RESTART_ALL))
    assert plan_until_placed(cluster, 0) == 0  # before: only at the 5-minute flush
    assert_index_is_a_rebuild(cluster)
    assert replay(cluster.log, cluster.config) == recorded(cluster)


def test_a_node_dropping_a_feature_wakes_no_one_and_refuses_from_then_on() -> None:
    cluster = Cluster().observe(make_node("n0").declares(RESTART_ALL, USERNS),
                                make_pod("p").requests(cpu_milli=9000).requires(RESTART_ALL))
    cluster.plan()
    freed = cluster.state.capacity_freed_at
    cluster.advance(5)
    cluster.observe(make_node("n0").declares(USERNS))
    assert cluster.state.capacity_freed_at == freed
    assert_index_is_a_rebuild(cluster)
    index = cluster.state.derived.index if cluster.state.derived is not None else None
    assert index is not None and not index.static_fit(cluster.pod("p")).mask.any()


def test_preemption_never_evicts_for_a_node_lacking_the_feature() -> None:
    """The only node is full of a lower-priority pod of ours: evicting it would make room, but
    the node would still lack the feature (UnschedulableAndUnresolvable). kube-scheduler says
    `Insufficient cpu` (NodeResourcesFit refuses first) and finds no victims."""
    cluster = Cluster().observe(
        make_node("n0").capacity(cpu_milli=2000),
        make_pod("low").requests(cpu_milli=2000).on_node("n0").priority(1),
        make_pod("high").requests(cpu_milli=1000).priority(100).requires(RESTART_ALL))
    decisions = cluster.plan()
    assert not any(isinstance(d, Preemption) for d in decisions)
    assert cluster.last_reason("default/pod:high").startswith(
        "0/1 nodes are available: 1 Insufficient cpu.")


def test_a_gang_puts_its_requiring_member_on_the_node_declaring_it() -> None:
    """g-0 requires nothing and prefers `wide` (emptier), which alone declares the feature g-1
    requires; each node holds one member: the whole-gang search swaps them."""
    cluster = Cluster().observe(
        make_node("wide").capacity(cpu_milli=2500).declares(RESTART_ALL),
        make_node("narrow").capacity(cpu_milli=2000), make_podgroup("g", 2),
        make_pod("g-0").requests(cpu_milli=1500).in_group("g"),
        make_pod("g-1").requests(cpu_milli=1500).in_group("g").requires(RESTART_ALL))
    assert placed(cluster.plan()) == [("default/g", ["g-0", "g-1"])]
    assert (cluster.node_of("g-0"), cluster.node_of("g-1")) == ("narrow", "wide")


def test_members_alike_but_for_their_features_are_not_one_shape() -> None:
    """Two consecutive members equal in all else: the second must not reuse the first's
    filters (one by one reuses a shape for a member like the one before)."""
    cluster = Cluster().observe(
        make_node("n0").capacity(cpu_milli=8000), make_podgroup("g", 2),
        make_pod("g-0").requests(cpu_milli=1000).in_group("g"),
        make_pod("g-1").requests(cpu_milli=1000).in_group("g").requires(RESTART_ALL))
    decisions = cluster.plan()
    assert not any(isinstance(d, Placement) for d in decisions)
    assert cluster.last_reason("default/g") == (
        f"gang default/g: 1 of 2 members fit; 0/1 nodes are available: 1 {LACKING}.")


def test_the_filter_reads_the_names_as_a_set() -> None:
    pod = make_pod("p").requires(RESTART_ALL).build()
    assert filters.node_declared_features(pod, make_node("n").build()) == LACKING
    declared = msgspec.structs.replace(make_node("n").build(),
                                       declared_features=("Zeta", RESTART_ALL, RESTART_ALL))
    assert filters.node_declared_features(pod, declared) is None
    assert filters.node_declared_features(make_pod("q").build(), make_node("n").build()) is None


def test_a_snapshot_keeps_what_the_filter_reads() -> None:
    cluster = Cluster().observe(make_node("n0"), make_node("n1").declares(RESTART_ALL),
                                make_pod("p").requires(RESTART_ALL))
    cluster.state = decode_state(encode_state(cluster.state))
    cluster.plan()
    assert cluster.node_of("p") == "n1"
