"""Preferred node affinity in scoring, as NodeAffinity scores it: per node the sum of the
weights of the preferred terms it matches (Score), normalized over the feasible nodes by
`DefaultNormalizeScore` (100 * score // max), weighted 2 against NodeResourcesFit's 0..100.
Values are worked by hand in the comments."""

from __future__ import annotations

import numpy as np

from services.contracts.decisions import Placement
from services.planner.core import capacity, node_affinity_score
from tests.unit.planner.builders import GIB, make_node, make_pod, make_podgroup
from tests.unit.planner.harness import Cluster

NAME = "metadata.name"


def labelled_index():
    """n1 disk=ssd zone=a; n2 disk=hdd zone=a; n3 zone=b; n4 without labels."""
    nodes = [make_node("n1").labels(disk="ssd", zone="a"),
             make_node("n2").labels(disk="hdd", zone="a"),
             make_node("n3").labels(zone="b"), make_node("n4")]
    return capacity.build({node.build().name: node.build() for node in nodes}, {})


def weighted(pod, failed=()):
    """Per feasible node (name order), the weighted score (`node_affinity_score.scores`)."""
    index = labelled_index()
    feasible = np.array([name not in failed for name in index.names], dtype=np.bool_)
    counted = node_affinity_score.raw(index, pod.build().preferred_affinity)
    scores = node_affinity_score.scores(counted, feasible)
    return {name: float(scores[index.row[name]]) for name in index.names if name not in failed}


def placed(*objects):
    return [m.node for d in Cluster().observe(*objects).plan() if isinstance(d, Placement)
            for m in d.members]


def test_weights_of_the_matching_terms_add_up_per_node():
    pod = (make_pod("p").prefer_node(50, ("disk", "In", ("ssd",)))
           .prefer_node(30, ("zone", "In", ("a",)))
           .prefer_node(20, fields=((NAME, "In", ("n3",)),)))
    index = labelled_index()
    assert node_affinity_score.raw(index, pod.build().preferred_affinity).tolist() == [
        80, 30, 20, 0]
    # max 80: n1 100 * 80 // 80 = 100, n2 3000 // 80 = 37, n3 2000 // 80 = 25, n4 0; times 2
    assert weighted(pod) == {"n1": 200.0, "n2": 74.0, "n3": 50.0, "n4": 0.0}


def test_only_feasible_nodes_set_the_max():
    pod = (make_pod("p").prefer_node(50, ("disk", "In", ("ssd",)))
           .prefer_node(30, ("zone", "In", ("a",)))
           .prefer_node(20, fields=((NAME, "In", ("n3",)),)))
    # without n1, max 30: n2 100, n3 2000 // 30 = 66, n4 0; times 2
    assert weighted(pod, failed=("n1",)) == {"n2": 200.0, "n3": 132.0, "n4": 0.0}


def test_expressions_and_fields_of_one_term_are_anded():
    pod = make_pod("p").prefer_node(10, ("zone", "In", ("a",)),
                                    fields=((NAME, "NotIn", ("n1",)),))
    assert weighted(pod) == {"n1": 0.0, "n2": 200.0, "n3": 0.0, "n4": 0.0}


def test_no_node_matching_and_an_empty_preference_score_zero_everywhere():
    pod = make_pod("p").prefer_node(40, ("disk", "Exists", ())).prefer_node(60)
    assert weighted(pod, failed=("n1", "n2")) == {"n3": 0.0, "n4": 0.0}
    assert not node_affinity_score.is_active([make_pod("q").build()])
    assert node_affinity_score.is_active([make_pod("q").build(), pod.build()])


def test_a_preferred_term_weight_50_picks_its_node_among_equals():
    nodes = [make_node("n1"), make_node("n2").labels(disk="ssd")]
    pod = make_pod("p").requests(cpu_milli=1000)
    assert placed(*nodes, pod) == ["n1"]  # equal resource scores: the lower name
    assert placed(*nodes, pod.prefer_node(50, ("disk", "In", ("ssd",)))) == ["n2"]


def test_match_fields_prefer_a_node_by_name():
    nodes = [make_node("n1"), make_node("n2"), make_node("n3")]
    pod = make_pod("p").requests(cpu_milli=1000).prefer_node(1, fields=((NAME, "In", ("n3",)),))
    assert placed(*nodes, pod) == ["n3"]


def test_the_weighted_sum_of_resources_and_preferences_decides():
    """big: cpu 16384m, 64 GiB; small: cpu 8192m, 32 GiB; the pod requests 4096m and 16 GiB.
    LeastAllocated: big (75 + 75) / 2 = 75, small (50 + 50) / 2 = 50.
    Both nodes are in zone a (weight 88); small alone has disk=ssd (weight 12 or 13).
    12: raw big 88, small 100: big 100 * 88 // 100 = 88 -> 75 + 2 * 88 = 251 against
        small 50 + 2 * 100 = 250: big.
    13: raw big 88, small 101: big 8800 // 101 = 87 -> 75 + 174 = 249 against 250: small."""
    nodes = [make_node("big").capacity(cpu_milli=16384, memory_bytes=64 * GIB).labels(zone="a"),
             make_node("small").capacity(cpu_milli=8192, memory_bytes=32 * GIB)
             .labels(zone="a", disk="ssd")]
    pod = (make_pod("p").requests(cpu_milli=4096, memory_bytes=16 * GIB)
           .prefer_node(88, ("zone", "In", ("a",))))
    assert placed(*nodes, pod) == ["big"]
    assert placed(*nodes, pod.prefer_node(12, ("disk", "In", ("ssd",)))) == ["big"]
    assert placed(*nodes, pod.prefer_node(13, ("disk", "In", ("ssd",)))) == ["small"]


def test_gang_members_each_add_the_score_one_by_one():
    """n1, n2: cpu 8000m each; members request 1000m and prefer n2 (weight 1). The second
    member: n2 (8000 - 2000) / 8000 -> 75, memory 100: 87 + 200 against n1's 93: n2 again."""
    nodes = [make_node("n1"), make_node("n2")]
    gang = [make_pod(f"g-{i}").requests(cpu_milli=1000).in_group("g")
            .prefer_node(1, fields=((NAME, "In", ("n2",)),)) for i in range(2)]
    assert placed(*nodes, make_podgroup("g", 2), *gang) == ["n2", "n2"]


def test_prefer_no_schedule_is_normalized_over_the_feasible_nodes_against_the_preference():
    """Equal nodes; a has two untolerated PreferNoSchedule taints, b one (and disk=ssd), c none.
    TaintToleration counts 2, 1, 0 -> DefaultNormalizeScore(reverse): a 100 - 100 * 2 // 2 = 0,
    b 100 - 50 = 50, c 100; weight 3: a 0, b 150, c 300. NodeAffinity (weight 1 term on
    disk=ssd): b 100 * 2 = 200. Totals (resources equal): a 0, b 350, c 300 -> b, as
    kube-scheduler binds it (tests/e2e/test_node_affinity_score.py); a flat 300 per taint
    (a -600, b -300 + 200, c 0) chose c."""
    nodes = [make_node("a").taint("t1", effect="PreferNoSchedule")
             .taint("t2", effect="PreferNoSchedule"),
             make_node("b").taint("t1", effect="PreferNoSchedule").labels(disk="ssd"),
             make_node("c")]
    pod = make_pod("p").requests(cpu_milli=1000).prefer_node(1, ("disk", "In", ("ssd",)))
    assert placed(*nodes, pod) == ["b"]
