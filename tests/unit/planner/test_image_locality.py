"""ImageLocality's score, as kube-scheduler 1.36 computes it (`image_locality.go`).

Per node, each of the pod's images the node reports scaled by the share of all nodes holding
it, summed, clamped to [23 MiB, 1000 MiB per container] and mapped onto 0..100 in int64; weight
1, no normalization. The end-to-end `test_image_locality.py` compares the node choices with the
real kube-scheduler.
"""

from __future__ import annotations

import random

from services.contracts.decisions import Placement
from services.contracts.events import NodeObserved
from services.planner.core import capacity, image_locality
from tests.unit.planner.builders import GIB, MIB, NodeBuilder, make_node, make_pod
from tests.unit.planner.harness import Cluster

TRAINER = "registry.example/ml/trainer:v1"


def plain(name: str) -> NodeBuilder:
    return make_node(name).capacity(cpu_milli=4000, memory_bytes=8 * GIB)


def test_the_score_is_kube_schedulers_arithmetic() -> None:
    """Four nodes, the 800 MiB image on n1 and n2: scaled 800 MiB * 2 / 4 = 400 MiB; one
    container: 100 * (400 - 23) MiB // (1000 - 23) MiB = 38. A second container's 30 MiB image
    on n2 alone adds 30 * 1 / 4 = 7.5 -> 7 MiB (bytes truncated) with two containers: n2
    100 * (400 MiB + 7.5 MiB - 23 MiB) // (2000 - 23) MiB = 19, n1 (400 - 23) * 100 // 1977 =
    19, n0 and n3 0."""
    nodes = {f"n{i}": plain(f"n{i}").build() for i in range(4)}
    nodes["n1"] = plain("n1").holds(((TRAINER, "sha@1"), 800 * MIB)).build()
    nodes["n2"] = plain("n2").holds(((TRAINER,), 800 * MIB), (("side:v2",), 30 * MIB)).build()
    index = capacity.build(nodes, {})
    one = make_pod("p").images(TRAINER).build()
    assert image_locality.scores(index, one).tolist() == [0, 38, 38, 0]
    two = make_pod("q").images(TRAINER, "side:v2").build()
    expected = 100 * (400 * MIB + 30 * MIB // 4 - 23 * MIB) // (2000 * MIB - 23 * MIB)
    assert image_locality.scores(index, two).tolist() == [
        0, 100 * (377 * MIB) // (1977 * MIB), expected, 0]


def test_a_sum_below_the_threshold_scores_zero_and_above_the_cap_full() -> None:
    nodes = {"n0": plain("n0").holds((("small:v1",), 20 * MIB), (("huge:v1",), 5 * GIB)).build()}
    index = capacity.build(nodes, {})
    assert image_locality.scores(index, make_pod("a").images("small:v1").build()).tolist() == [0]
    assert image_locality.scores(index, make_pod("b").images("huge:v1").build()).tolist() == [100]


def test_the_node_holding_the_image_is_chosen_among_equals() -> None:
    cluster = Cluster().observe(plain("n0"), plain("n1").holds(((TRAINER,), 900 * MIB)),
                                plain("n2"),
                                make_pod("p").requests(cpu_milli=500, memory_bytes=GIB)
                                .images(TRAINER))
    placed = [m.node for d in cluster.plan() if isinstance(d, Placement) for m in d.members]
    assert placed == ["n1"]


def test_a_node_reporting_new_images_is_scored_anew() -> None:
    """`a` takes n0 (no node holds its image); then n2 reports it, so `b` takes n2, where
    resources alone would take n1 (free as n2, first by name)."""
    cluster = Cluster().observe(plain("n0"), plain("n1"), plain("n2"))
    cluster.observe(make_pod("a").requests(cpu_milli=500, memory_bytes=GIB).images(TRAINER))
    first = [m.node for d in cluster.plan() if isinstance(d, Placement) for m in d.members]
    assert first == ["n0"]
    cluster.observe(plain("n2").holds(((TRAINER,), 900 * MIB)))
    cluster.observe(make_pod("b").requests(cpu_milli=500, memory_bytes=GIB).images(TRAINER))
    second = [m.node for d in cluster.plan() if isinstance(d, Placement) for m in d.members]
    assert second == ["n2"]


def test_holders_kept_row_by_row_equal_a_fresh_walk() -> None:
    """As nodes' images come and go (`update_node`), the kept holders and the scores equal
    those of an index walked afresh."""
    rng = random.Random(45)
    names = [f"reg/img{i}:v1" for i in range(8)]

    def imaged(name: str) -> NodeObserved:
        chosen = rng.sample(names, rng.randint(0, 4))
        return plain(name).holds(*[((image, image + "@d"), rng.choice([10, 300, 900]) * MIB)
                                   for image in chosen]).build()

    nodes = {f"n{i}": imaged(f"n{i}") for i in range(12)}
    index = capacity.build(nodes, {})
    image_locality.holders(index)
    pod = make_pod("p").images(*names[:3]).build()
    for _ in range(60):
        node = imaged(f"n{rng.randrange(12)}")
        nodes[node.name] = node
        index.update_node(node)
        fresh = capacity.build(nodes, {})
        kept = {name: sorted(zip(rows.tolist(), sizes.tolist(), strict=True))
                for name, (rows, sizes) in image_locality.holders(index).items()}
        assert kept == {name: sorted(zip(rows.tolist(), sizes.tolist(), strict=True))
                        for name, (rows, sizes) in image_locality.holders(fresh).items()}
        assert (image_locality.scores(index, pod).tolist()
                == image_locality.scores(fresh, pod).tolist())


def test_the_scores_kept_on_the_index_stay_bounded_and_right() -> None:
    """Past `KEPT` distinct sets of pod images the kept scores start again: memory stays
    bounded (one array per node each), and a set scored again scores the same."""
    index = capacity.build({"n0": plain("n0").holds(((TRAINER,), 900 * MIB)).build(),
                            "n1": plain("n1").build()}, {})
    first = image_locality.scores(index, make_pod("p").images(TRAINER).build()).tolist()
    for i in range(image_locality.KEPT + 10):
        image_locality.scores(index, make_pod(f"q{i}").images(f"other-{i}:v1").build())
        assert len(index.image_scores) <= image_locality.KEPT
    assert image_locality.scores(index, make_pod("p").images(TRAINER).build()).tolist() == first
    assert first == [100 * (450 * MIB - 23 * MIB) // (977 * MIB), 0]
