"""The label lookup behind InterPodAffinity's counts visits fewer pods, never other counts:
on random pods, labels and selectors (In, NotIn, Exists, DoesNotExist, empty, absent), the
counts from the lookup's candidates equal the counts over every pod, also after pods move,
change labels or leave."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from services.contracts.events import NodeSelectorRequirement, PodAffinityTerm, PodObserved
from services.fit.pod_affinity import Counts
from services.planner.core import affinity
from services.planner.core.capacity import NodeIndex
from tests.unit.planner.builders import make_node, make_pod

KEYS, VALUES = ("app", "team"), ("a", "b", "c")
TOPOLOGY = ("kubernetes.io/hostname", "zone")

requirements = st.builds(
    NodeSelectorRequirement, key=st.sampled_from(KEYS),
    operator=st.sampled_from(("In", "NotIn", "Exists", "DoesNotExist")),
    values=st.lists(st.sampled_from(VALUES), min_size=1, max_size=2, unique=True).map(tuple))
selectors = st.one_of(st.none(), st.lists(requirements, max_size=2).map(tuple))
terms = st.builds(PodAffinityTerm, topology_key=st.sampled_from(TOPOLOGY),
                  label_selector=selectors, namespaces=st.just(("default",)))
labels = st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES), max_size=2)


@st.composite
def pods(draw: st.DrawFn, name: str) -> PodObserved:
    pod = make_pod(name).build()
    return PodObserved(**{**{f: getattr(pod, f) for f in pod.__struct_fields__},
                          "labels": draw(labels),
                          "pod_affinity": tuple(draw(st.lists(terms, max_size=1))),
                          "pod_anti_affinity": tuple(draw(st.lists(terms, max_size=2)))})


def _every_pod(index: NodeIndex, pod: PodObserved) -> Counts:
    counts = Counts(pod, {})
    for row, other, _ in index.pod_users.values():
        if other.uid != pod.uid:
            counts.add(other, index.nodes[row].labels)
    return counts


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_counts_from_the_lookup_equal_counts_over_every_pod(data: st.DataObject) -> None:
    nodes = [make_node(f"n{i}").labels(**{"kubernetes.io/hostname": f"n{i}",
                                          "zone": f"z{i % 2}"}).build() for i in range(3)]
    index = NodeIndex(nodes, {})
    for _ in range(data.draw(st.integers(1, 12))):
        pod = data.draw(pods(f"p{data.draw(st.integers(0, 5))}"))
        node = data.draw(st.sampled_from([None, "n0", "n1", "n2"]))
        index.set_pod(pod.uid, node, pod if node else None)
    incoming = data.draw(pods("incoming"))
    got, want = affinity.counts(index, incoming), _every_pod(index, incoming)
    assert (got.affinity, got.anti, got.existing_anti) == (
        want.affinity, want.anti, want.existing_anti)


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_every_pod_a_selector_matches_is_a_candidate(data: st.DataObject) -> None:
    from services.fit.pod_affinity import selector_matches

    nodes = [make_node("n0").build()]
    index = NodeIndex(nodes, {})
    for n in range(data.draw(st.integers(0, 8))):
        pod = data.draw(pods(f"p{n}"))
        index.set_pod(pod.uid, "n0", pod)
    chosen = data.draw(st.lists(selectors, min_size=1, max_size=2))
    candidates = index.lookup.selected(chosen)
    matching = {uid for uid, (_, pod, _) in index.pod_users.items()
                if any(selector_matches(selector, pod.labels) for selector in chosen)}
    assert candidates is None or matching <= candidates
