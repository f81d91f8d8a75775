"""Required inter-pod affinity and anti-affinity, as InterPodAffinity filters.

Every pod bound or reserved on a node counts, whichever scheduler bound it, and so do the
members of the same gang placed before: a one-per-host anti-affinity gang takes one node each.
"""

from __future__ import annotations

from services.contracts.decisions import Decision, Placement
from services.contracts.events import PodAffinityTerm
from services.fit import pod_affinity, reasons
from tests.unit.planner.builders import (
    NodeBuilder,
    PodBuilder,
    make_node,
    make_pod,
    make_podgroup,
)
from tests.unit.planner.harness import Cluster

HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"


def node(name: str, zone: str = "a") -> NodeBuilder:
    return make_node(name).capacity(cpu_milli=8000).labels(**{HOST: name, ZONE: zone})


def nodes_of(decisions: list[Decision]) -> dict[str, str]:
    return {m.name: m.node for d in decisions if isinstance(d, Placement) for m in d.members}


def worker(i: int, group: str = "g") -> PodBuilder:
    return (make_pod(f"{group}-{i}").requests(cpu_milli=1000).in_group(group)
            .labelled(app=group).anti_affinity(HOST, app=group))


def test_a_one_per_host_anti_affinity_gang_takes_one_node_per_member() -> None:
    cluster = Cluster().observe(*(node(f"n{i}") for i in range(4)), make_podgroup("g", 3),
                                *(worker(i) for i in range(3)))
    placed = nodes_of(cluster.plan())
    assert len(placed) == 3 and len(set(placed.values())) == 3


def test_a_one_per_host_gang_larger_than_the_nodes_waits_with_the_anti_affinity_reason() -> None:
    cluster = Cluster().observe(node("n0"), node("n1"), make_podgroup("g", 3),
                                *(worker(i) for i in range(3)))
    assert nodes_of(cluster.plan()) == {}
    assert cluster.last_reason("default/g") == (
        "gang default/g: 2 of 3 members fit; 0/2 nodes are available: "
        f"2 {reasons.POD_ANTI_AFFINITY_MISMATCH}.")


def test_an_existing_pods_anti_affinity_keeps_out_a_pod_it_matches() -> None:
    other = (make_pod("guard").scheduler("default-scheduler").on_node("n0")
             .labelled(app="guard").anti_affinity(HOST, app="web"))
    cluster = Cluster().observe(node("n0"), node("n1"), other,
                                make_pod("web").labelled(app="web").requests(cpu_milli=100))
    assert nodes_of(cluster.plan()) == {"web": "n1"}


def test_symmetry_is_worded_as_kube_scheduler_words_it() -> None:
    other = (make_pod("guard").scheduler("default-scheduler").on_node("n0")
             .anti_affinity(ZONE, app="web"))
    cluster = Cluster().observe(node("n0"), other, make_pod("web").labelled(app="web"))
    assert nodes_of(cluster.plan()) == {}
    assert cluster.last_reason("default/pod:web") == (
        f"0/1 nodes are available: 1 {reasons.EXISTING_ANTI_AFFINITY_MISMATCH}.")


def test_pod_affinity_follows_a_matching_pod_into_its_zone() -> None:
    db = make_pod("db").scheduler("default-scheduler").on_node("n1").labelled(app="db")
    web = make_pod("web").requests(cpu_milli=100).pod_affinity(ZONE, app="db")
    cluster = Cluster().observe(node("n0", "a"), node("n1", "b"), node("n2", "b"), db, web)
    assert nodes_of(cluster.plan())["web"] in {"n1", "n2"}


def test_pod_affinity_with_no_matching_pod_waits_with_the_affinity_reason() -> None:
    web = make_pod("web").pod_affinity(ZONE, app="db")
    cluster = Cluster().observe(node("n0"), web)
    assert nodes_of(cluster.plan()) == {}
    assert cluster.last_reason("default/pod:web") == (
        f"0/1 nodes are available: 1 {reasons.POD_AFFINITY_MISMATCH}.")


def test_the_first_pod_of_a_self_affine_group_may_go_anywhere_and_the_rest_follow_it() -> None:
    def member(i: int) -> PodBuilder:
        return (make_pod(f"g-{i}").requests(cpu_milli=3000).in_group("g").labelled(app="g")
                .pod_affinity(ZONE, app="g"))
    cluster = Cluster().observe(node("n0", "a"), node("n1", "b"), node("n2", "b"),
                                make_podgroup("g", 3), *(member(i) for i in range(3)))
    placed = nodes_of(cluster.plan())
    assert len(placed) == 3 and set(placed.values()) <= {"n1", "n2"}


def test_affinity_terms_count_only_pods_of_their_namespaces() -> None:
    db = (make_pod("db", namespace="other").scheduler("default-scheduler").on_node("n1")
          .labelled(app="db"))
    here = make_pod("here").pod_affinity(ZONE, app="db")
    there = make_pod("there").pod_affinity(ZONE, namespaces=("other",), app="db")
    cluster = Cluster().observe(node("n0", "a"), node("n1", "b"), db, here, there)
    assert nodes_of(cluster.plan()) == {"there": "n1"}


def test_a_node_without_the_topology_key_passes_anti_affinity_but_never_affinity() -> None:
    bare = make_node("bare").capacity(cpu_milli=8000)
    counts = pod_affinity.Counts(make_pod("p").labelled(app="x").anti_affinity(ZONE, app="x")
                                 .pod_affinity(ZONE, app="x").build(), {})
    assert pod_affinity.inter_pod_affinity(counts, bare.build().labels) == (
        reasons.POD_AFFINITY_MISMATCH)
    counts = pod_affinity.Counts(make_pod("p").anti_affinity(ZONE, app="x").build(), {})
    counts.add(make_pod("x").labelled(app="x").build(), {ZONE: "a"})
    assert pod_affinity.inter_pod_affinity(counts, {}) is None
    assert pod_affinity.inter_pod_affinity(counts, {ZONE: "a"}) == (
        reasons.POD_ANTI_AFFINITY_MISMATCH)


def test_selectors_match_as_label_selectors_do() -> None:
    everything = PodAffinityTerm(topology_key=ZONE, label_selector=(), all_namespaces=True)
    nothing = PodAffinityTerm(topology_key=ZONE, label_selector=None, all_namespaces=True)
    pod = make_pod("p", namespace="x").build()
    assert pod_affinity.term_matches(everything, pod, {})
    assert not pod_affinity.term_matches(nothing, pod, {})
    assert not pod_affinity.matches_all((), pod, {})
