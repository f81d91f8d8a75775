"""Preferred inter-pod (anti-)affinity in scoring, as InterPodAffinity scores it: values worked
by hand from the plugin's PreScore (processExistingPod), Score and NormalizeScore, shown before
the plugin's weight of 2 unless said."""

from __future__ import annotations

import numpy as np

from services.contracts.decisions import Placement
from services.contracts.events import NodeObserved
from services.planner.core import affinity_score, capacity
from services.planner.core.capacity import NodeIndex
from tests.unit.planner.builders import PodBuilder, make_node, make_pod, make_podgroup
from tests.unit.planner.harness import Cluster

HOST = "kubernetes.io/hostname"


def zoned_nodes() -> list[NodeObserved]:
    """n1, n2 in zone z1; n3 in z2; n4 in no zone; n5 without any label."""
    nodes = [make_node(name).labels(zone=zone, **{HOST: name}).build()
             for name, zone in (("n1", "z1"), ("n2", "z1"), ("n3", "z2"))]
    return [*nodes, make_node("n4").labels(**{HOST: "n4"}).build(), make_node("n5").build()]


def cluster_index(*placed: tuple[str, PodBuilder]) -> NodeIndex:
    """The index of `zoned_nodes` with each (node, pod builder) bound by another scheduler."""
    index = capacity.build({node.name: node for node in zoned_nodes()}, {})
    for node, builder in placed:
        pod = builder.on_node(node).build()
        index.set_pod(pod.uid, node, pod, is_ours=False)
    return index


def normalized(index: NodeIndex, pod: PodBuilder,
               failed: tuple[str, ...] = ()) -> dict[str, int]:
    """Per feasible node (name order), the normalized score before the weight."""
    feasible = np.array([name not in failed for name in index.names], dtype=np.bool_)
    counted = affinity_score.topology(index, pod.build())
    scores = affinity_score.scores(index, counted, feasible) / affinity_score.WEIGHT
    return {name: int(scores[index.row[name]]) for name in index.names if name not in failed}


def test_the_pods_own_preferred_terms_add_and_take_their_weights() -> None:
    index = cluster_index(("n1", make_pod("db1").labelled(app="db")),
                          ("n2", make_pod("web1").labelled(app="web")),
                          ("n3", make_pod("db2").labelled(app="db")))
    pod = (make_pod("p").prefer_affinity(6, "zone", app="db")
           .prefer_anti_affinity(4, HOST, app="web"))
    # raw: n1 (zone z1) 6, n2 6 - 4 = 2, n3 (z2) 6, n4 0, n5 0: (s - 0) / 6
    assert normalized(index, pod) == {"n1": 100, "n2": 33, "n3": 100, "n4": 0, "n5": 0}


def test_normalization_truncates_and_spans_negative_scores() -> None:
    index = cluster_index(("n1", make_pod("a").labelled(app="db").prefer_affinity(
                               7, "zone", app="web")),
                          ("n3", make_pod("b").labelled(app="db").prefer_anti_affinity(
                               4, HOST, app="web")))
    pod = make_pod("p").labelled(app="web")
    # symmetry: raw n1 7, n2 7, n3 -4, n4 0, n5 0; min -4, max 7: 100 * 4 / 11 = 36.36 -> 36
    assert normalized(index, pod) == {"n1": 100, "n2": 100, "n3": 0, "n4": 36, "n5": 36}


def test_existing_pods_required_affinity_counts_with_the_hard_weight() -> None:
    index = cluster_index(("n3", make_pod("a").pod_affinity("zone", app="web")),
                          ("n1", make_pod("b").pod_affinity("zone", app="other")))
    counted = affinity_score.topology(index, make_pod("p").labelled(app="web").build())
    assert counted == {("zone", "z2"): affinity_score.HARD_POD_AFFINITY_WEIGHT}
    assert normalized(index, make_pod("p").labelled(app="web")) == {
        "n1": 0, "n2": 0, "n3": 100, "n4": 0, "n5": 0}


def test_weights_of_one_pair_add_up_across_pods_and_terms() -> None:
    index = cluster_index(("n1", make_pod("a").labelled(app="db")),
                          ("n2", make_pod("b").labelled(app="db")),
                          ("n2", make_pod("c").pod_affinity("zone", app="web")
                           .prefer_affinity(2, "zone", app="web")))
    pod = make_pod("p").labelled(app="web").prefer_anti_affinity(5, "zone", app="db")
    assert affinity_score.topology(index, pod.build()) == {("zone", "z1"): -5 - 5 + 1 + 2}


def test_only_feasible_nodes_set_min_and_max() -> None:
    index = cluster_index(("n1", make_pod("db1").labelled(app="db")),
                          ("n3", make_pod("db2").labelled(app="db")),
                          ("n3", make_pod("db3").labelled(app="db")))
    pod = make_pod("p").prefer_affinity(3, "zone", app="db").prefer_affinity(1, HOST, app="db")
    # raw n1 3 + 1, n2 3, n3 6 + 2, n4 0, n5 0; without n4 and n5, min 3 and max 8
    assert normalized(index, pod, failed=("n4", "n5")) == {"n1": 20, "n2": 0, "n3": 100}


def test_equal_scores_everywhere_give_zero() -> None:
    index = cluster_index(("n1", make_pod("db1").labelled(app="db")))
    pod = make_pod("p").prefer_affinity(3, "zone", app="db")
    assert normalized(index, pod, failed=("n3", "n4", "n5")) == {"n1": 0, "n2": 0}


def test_terms_read_namespaces_and_a_node_without_labels_adds_nothing() -> None:
    index = cluster_index(("n1", make_pod("db1", namespace="other").labelled(app="db")),
                          ("n5", make_pod("db2").labelled(app="db")))
    pod = make_pod("p").prefer_affinity(3, "zone", app="db")
    assert affinity_score.topology(index, pod.build()) == {}
    assert affinity_score.topology(index, make_pod("p").prefer_affinity(
        3, "zone", namespaces=("other",), app="db").build()) == {("zone", "z1"): 3}


def test_skipped_when_no_pod_has_terms() -> None:
    index = cluster_index(("n1", make_pod("db1").labelled(app="db").anti_affinity(
        HOST, app="x")))
    plain = make_pod("p").labelled(app="web").build()
    assert not affinity_score.is_active(index, [plain])
    assert affinity_score.is_active(index, [plain, make_pod("q").prefer_affinity(
        1, HOST, app="db").build()])
    assert affinity_score.is_active(index, [make_pod("q").pod_affinity(HOST, app="q").build()])
    # active, but nothing matches: PreScore skips, every node scores 0
    pod = make_pod("p").prefer_affinity(3, "zone", app="nothing")
    assert normalized(index, pod) == dict.fromkeys(("n1", "n2", "n3", "n4", "n5"), 0)


def placed_nodes(cluster: Cluster) -> list[str]:
    return [m.node for d in cluster.plan() if isinstance(d, Placement) for m in d.members]


def test_preferred_anti_affinity_avoids_the_node_resources_would_pick() -> None:
    nodes = [make_node("big").capacity(cpu_milli=64000).labels(**{HOST: "big"}),
             make_node("small").capacity(cpu_milli=8000).labels(**{HOST: "small"})]
    db = make_pod("db").labelled(app="db").scheduler("default-scheduler").on_node("big")
    plain = make_pod("p").requests(cpu_milli=1000).in_group("g")
    assert placed_nodes(Cluster().observe(*nodes, db, make_podgroup("g", 1), plain)) == ["big"]
    avoiding = plain.prefer_anti_affinity(10, HOST, app="db")
    assert placed_nodes(Cluster().observe(*nodes, db, make_podgroup("g", 1), avoiding)) == [
        "small"]


def test_gang_members_placed_before_count_for_the_next() -> None:
    nodes = [make_node("big").capacity(cpu_milli=64000).labels(**{HOST: "big"}),
             make_node("small").capacity(cpu_milli=8000).labels(**{HOST: "small"})]
    gang = [make_pod(f"g-{i}").requests(cpu_milli=1000).in_group("g").labelled(app="g")
            .prefer_anti_affinity(10, HOST, app="g") for i in range(2)]
    assert placed_nodes(Cluster().observe(*nodes, make_podgroup("g", 2), *gang)) == [
        "big", "small"]


def test_the_index_keeps_pods_with_scored_terms_apart() -> None:
    index = cluster_index(("n1", make_pod("plain").labelled(app="db")),
                          ("n2", make_pod("anti").anti_affinity(HOST, app="x")),
                          ("n3", make_pod("affine").pod_affinity(HOST, app="x")),
                          ("n4", make_pod("soft").prefer_anti_affinity(1, HOST, app="x")))
    affine, soft = make_pod("affine").build().uid, make_pod("soft").build().uid
    assert sorted(index.score_users) == sorted([affine, soft])
    index.set_pod(soft, None, None)
    assert list(index.score_users) == [affine]
