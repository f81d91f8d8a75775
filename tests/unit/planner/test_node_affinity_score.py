"""Preferred node affinity in scoring, as NodeAffinity scores it: per node the sum of the
weights of the preferred terms it matches (Score), normalized over the feasible nodes by
`DefaultNormalizeScore` (100 * score // max), weighted 2 against NodeResourcesFit's 0..100.
Values are worked by hand in the comments."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from services.contracts.decisions import Placement, Rejection
from services.contracts.events import NodeSelectorRequirement, NodeSelectorTerm
from services.fit import filters
from services.planner.core import capacity, node_affinity_score
from services.planner.core.config import PlannerConfig
from tests.unit.planner.builders import (
    GIB,
    NodeBuilder,
    PodBuilder,
    PodGroupBuilder,
    make_node,
    make_pod,
    make_podgroup,
)
from tests.unit.planner.harness import Cluster

NAME = "metadata.name"

Built = NodeBuilder | PodBuilder | PodGroupBuilder


def labelled_index() -> capacity.NodeIndex:
    """n1 disk=ssd zone=a; n2 disk=hdd zone=a; n3 zone=b; n4 without labels."""
    nodes = [make_node("n1").labels(disk="ssd", zone="a"),
             make_node("n2").labels(disk="hdd", zone="a"),
             make_node("n3").labels(zone="b"), make_node("n4")]
    return capacity.build({node.build().name: node.build() for node in nodes}, {})


def weighted(pod: PodBuilder, failed: tuple[str, ...] = ()) -> dict[str, float]:
    """Per feasible node (name order), the weighted score (`node_affinity_score.scores`)."""
    index = labelled_index()
    feasible = np.array([name not in failed for name in index.names], dtype=np.bool_)
    counted = node_affinity_score.raw(index, pod.build().preferred_affinity)
    scores = node_affinity_score.scores(counted, feasible)
    return {name: float(scores[index.row[name]]) for name in index.names if name not in failed}


def placed(*objects: Built, config: PlannerConfig | None = None) -> list[str]:
    return [m.node for d in Cluster(config).observe(*objects).plan() if isinstance(d, Placement)
            for m in d.members]


def test_weights_of_the_matching_terms_add_up_per_node() -> None:
    pod = (make_pod("p").prefer_node(50, ("disk", "In", ("ssd",)))
           .prefer_node(30, ("zone", "In", ("a",)))
           .prefer_node(20, fields=((NAME, "In", ("n3",)),)))
    index = labelled_index()
    assert node_affinity_score.raw(index, pod.build().preferred_affinity).tolist() == [
        80, 30, 20, 0]
    # max 80: n1 100 * 80 // 80 = 100, n2 3000 // 80 = 37, n3 2000 // 80 = 25, n4 0; times 2
    assert weighted(pod) == {"n1": 200.0, "n2": 74.0, "n3": 50.0, "n4": 0.0}


def test_only_feasible_nodes_set_the_max() -> None:
    pod = (make_pod("p").prefer_node(50, ("disk", "In", ("ssd",)))
           .prefer_node(30, ("zone", "In", ("a",)))
           .prefer_node(20, fields=((NAME, "In", ("n3",)),)))
    # without n1, max 30: n2 100, n3 2000 // 30 = 66, n4 0; times 2
    assert weighted(pod, failed=("n1",)) == {"n2": 200.0, "n3": 132.0, "n4": 0.0}


def test_expressions_and_fields_of_one_term_are_anded() -> None:
    pod = make_pod("p").prefer_node(10, ("zone", "In", ("a",)),
                                    fields=((NAME, "NotIn", ("n1",)),))
    assert weighted(pod) == {"n1": 0.0, "n2": 200.0, "n3": 0.0, "n4": 0.0}


def test_no_node_matching_and_an_empty_preference_score_zero_everywhere() -> None:
    pod = make_pod("p").prefer_node(40, ("disk", "Exists", ())).prefer_node(60)
    assert weighted(pod, failed=("n1", "n2")) == {"n3": 0.0, "n4": 0.0}
    assert not node_affinity_score.is_active([make_pod("q").build()])
    assert node_affinity_score.is_active([make_pod("q").build(), pod.build()])


def test_a_preferred_term_weight_50_picks_its_node_among_equals() -> None:
    nodes = [make_node("n1"), make_node("n2").labels(disk="ssd")]
    pod = make_pod("p").requests(cpu_milli=1000)
    assert placed(*nodes, pod) == ["n1"]  # equal resource scores: the lower name
    assert placed(*nodes, pod.prefer_node(50, ("disk", "In", ("ssd",)))) == ["n2"]


def test_match_fields_prefer_a_node_by_name() -> None:
    nodes = [make_node("n1"), make_node("n2"), make_node("n3")]
    pod = make_pod("p").requests(cpu_milli=1000).prefer_node(1, fields=((NAME, "In", ("n3",)),))
    assert placed(*nodes, pod) == ["n3"]


def test_the_weighted_sum_of_resources_and_preferences_decides() -> None:
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


def test_gang_members_each_add_the_score_one_by_one() -> None:
    """n1, n2: cpu 8000m each; members request 1000m and prefer n2 (weight 1). The second
    member: n2 (8000 - 2000) / 8000 -> 75, memory 100: 87 + 200 against n1's 93: n2 again."""
    nodes = [make_node("n1"), make_node("n2")]
    gang = [make_pod(f"g-{i}").requests(cpu_milli=1000).in_group("g")
            .prefer_node(1, fields=((NAME, "In", ("n2",)),)) for i in range(2)]
    assert placed(*nodes, make_podgroup("g", 2), *gang) == ["n2", "n2"]


def test_prefer_no_schedule_is_normalized_over_the_feasible_nodes_against_the_preference() -> None:
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


VALUES = st.sampled_from(["", "1", "5", "12", "-3", "ssd", "n1", "n2", "x"])
REQUIREMENTS = st.builds(NodeSelectorRequirement, st.sampled_from(["a", "b"]),
                         st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt",
                                          "Bad"]),
                         st.lists(VALUES, max_size=3).map(tuple))
FIELDS = st.builds(NodeSelectorRequirement, st.sampled_from([NAME, "spec.x"]),
                   st.sampled_from(["In", "NotIn", "Exists"]),
                   st.lists(VALUES, max_size=2).map(tuple))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.dictionaries(st.sampled_from(["a", "b"]), VALUES), min_size=1, max_size=5),
       st.lists(REQUIREMENTS, max_size=3), st.lists(FIELDS, max_size=2))
def test_term_mask_agrees_with_term_matches_on_every_node(
        labels: list[dict[str, str]], expressions: list[NodeSelectorRequirement],
        fields: list[NodeSelectorRequirement]) -> None:
    """The vectorised match (one judgement per distinct label value, per named node) is
    `filters.term_matches` node by node, whatever the operators, values and absent labels."""
    nodes = {f"n{i + 1}": make_node(f"n{i + 1}").labels(**found).build()
             for i, found in enumerate(labels)}
    index = capacity.build(nodes, {})
    term = NodeSelectorTerm(tuple(expressions), tuple(fields))
    assert node_affinity_score.term_mask(index, term).tolist() == [
        filters.term_matches(term, node.labels, node.name) for node in index.nodes]


def test_domain_trials_compute_the_preferred_sums_once_per_plan(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The raw sums depend only on node labels and names: with prefer_topology every domain
    trial (10 zones, 11 trials here) used to recompute them; they are kept on the index."""
    calls: list[int] = []
    original = node_affinity_score.raw

    def counting(index: capacity.NodeIndex,
                 terms: node_affinity_score.Terms) -> capacity.IntArray:
        calls.append(len(terms))
        return original(index, terms)

    monkeypatch.setattr(node_affinity_score, "raw", counting)
    nodes = [make_node(f"n{i:02d}").labels(**{"topology.kubernetes.io/zone": f"z{i % 10}",
                                              "disk": "ssd"}) for i in range(20)]
    gang = [make_pod(f"g-{i}").requests(cpu_milli=5000).in_group("g")
            .prefer_node(10, ("disk", "In", ("ssd",))) for i in range(3)]
    got = placed(*nodes, make_podgroup("g", 3), *gang, config=PlannerConfig(prefer_topology=True))
    assert len(got) == 3
    assert calls == [1]


def test_distinct_terms_per_member_judge_each_requirement_once_not_per_node(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """64 members each preferring its own node by name (matchFields) and a label no node has,
    over 5,000 nodes: each field requirement is judged once for the node it names and once for
    every other node (128), each label requirement once for its only value, absent (64), where
    a pass over every node judged 64 x 5,000 of each."""
    judged = {"fields": 0, "labels": 0}
    field_matches, requirement_matches = filters.field_matches, filters.requirement_matches

    def counting_fields(requirement: NodeSelectorRequirement, node_name: str) -> bool:
        judged["fields"] += 1
        return field_matches(requirement, node_name)

    def counting_labels(requirement: NodeSelectorRequirement, labels: Mapping[str, str]) -> bool:
        judged["labels"] += 1
        return requirement_matches(requirement, labels)

    monkeypatch.setattr(filters, "field_matches", counting_fields)
    monkeypatch.setattr(filters, "requirement_matches", counting_labels)
    nodes = [make_node(f"n{i:05d}") for i in range(5000)]
    gang = [make_pod(f"g-{i}").requests(cpu_milli=100).in_group("g")
            .prefer_node(10, fields=((NAME, "In", (f"n{i * 7:05d}",)),))
            .prefer_node(5, ("a", "Exists", ())) for i in range(64)]
    got = placed(*nodes, make_podgroup("g", 64), *gang)
    assert sorted(got) == [f"n{i * 7:05d}" for i in range(64)]  # each on its own node
    assert judged == {"fields": 128, "labels": 64}


FIVE = ("gen", "Gt", ("five",))
PRESCORE = ('running PreScore plugin "NodeAffinity": [0].matchExpressions[0].values[0]: '
            "Invalid value: \"five\": for 'Gt', 'Lt' operators, the value must be an integer")


def reasons_of(*objects: Built) -> dict[str, str]:
    return {d.group: d.reason for d in Cluster().observe(*objects).plan()
            if isinstance(d, Rejection)}


def test_one_feasible_node_binds_a_pod_whose_preferred_term_kube_cannot_parse() -> None:
    """kube-scheduler's schedulePod takes the only feasible node without running PreScore, so
    the Gt "five" term is never parsed and the pod binds (tests/e2e/test_node_affinity_score.py,
    one-feasible); the second node here fails the nodeSelector."""
    pod = make_pod("p").requests(cpu_milli=1000).selector(pool="a").prefer_node(10, FIVE)
    assert pod.build().preferred_unparseable is not None
    nodes = [make_node("n1").labels(pool="a"), make_node("n2")]
    assert placed(*nodes, pod) == ["n1"]
    assert placed(make_node("n1"), make_pod("q").requests(cpu_milli=1000).prefer_node(10, FIVE)
                  ) == ["n1"]


def test_two_feasible_nodes_fail_prescore_with_kube_schedulers_error() -> None:
    pod = make_pod("p").requests(cpu_milli=1000).prefer_node(10, FIVE)
    nodes = [make_node("n1"), make_node("n2")]
    assert placed(*nodes, pod) == []
    assert reasons_of(*nodes, pod) == {"default/pod:p": PRESCORE}


def test_no_feasible_node_reads_as_the_filters_say() -> None:
    """No node passes: kube-scheduler's FitError, PreScore never reached."""
    pod = make_pod("p").requests(cpu_milli=1000).selector(pool="b").prefer_node(10, FIVE)
    nodes = [make_node("n1"), make_node("n2")]
    assert reasons_of(*nodes, pod) == {"default/pod:p": (
        "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector.")}


def test_a_gang_member_that_cannot_be_scored_keeps_the_gang_short_with_the_error() -> None:
    """One by one: g-0 on n1 (lower name among equals), g-1 fails PreScore (two feasible
    nodes). Members differ, so the search runs: it never places g-1 (two nodes allowed), and
    one by one afterwards fails it again: the gang is told kube-scheduler's error."""
    nodes = [make_node("n1"), make_node("n2")]
    gang = [make_pod("g-0").requests(cpu_milli=2000).in_group("g"),
            make_pod("g-1").requests(cpu_milli=1000).in_group("g").prefer_node(10, FIVE)]
    assert placed(*nodes, make_podgroup("g", 2), *gang) == []
    assert reasons_of(*nodes, make_podgroup("g", 2), *gang) == {
        "default/g": f"gang default/g: 1 of 2 members fit; {PRESCORE}"}


def test_the_search_places_a_member_that_cannot_be_scored_only_on_its_only_node() -> None:
    """n1 4000m, n2 8000m; g-0 3000m, g-1 6000m, g-2 1000m with an unparseable preference.
    One by one: g-0 on n2 (LeastAllocated 5000/8000 beats 1000/4000), g-1 fits nowhere. The
    search (largest first) puts g-1 on n2, g-0 on n1; g-2 may take a row only where its
    filters leave a single one: pinned to n1 it joins there; unpinned (n1 and n2 allowed)
    the search never places it, and the gang stays short."""
    nodes = [make_node(name).capacity(cpu_milli=cpu).label("kubernetes.io/hostname", name)
             for name, cpu in (("n1", 4000), ("n2", 8000))]
    gang = [make_pod("g-0").requests(cpu_milli=3000).in_group("g"),
            make_pod("g-1").requests(cpu_milli=6000).in_group("g")]
    small = make_pod("g-2").requests(cpu_milli=1000).in_group("g").prefer_node(10, FIVE)
    pinned = small.affinity([("kubernetes.io/hostname", "In", ("n1",))])
    assert sorted(placed(*nodes, make_podgroup("g", 3), *gang, pinned)) == ["n1", "n1", "n2"]
    assert placed(*nodes, make_podgroup("g", 3), *gang, small) == []
