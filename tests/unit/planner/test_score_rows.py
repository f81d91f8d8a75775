"""Cached shape scores caught up row by row (few rows changed) equal a full NumPy pass, bit
for bit, for both scoring strategies: the one-by-one placement's choices do not depend on
which path recomputed them."""

from __future__ import annotations

import random

import numpy as np
import pytest

from services.planner.core import capacity, placement
from services.planner.core.config import SCORING_STRATEGIES, PlannerConfig
from tests.unit.planner.builders import GIB, make_node, make_pod

NODES = 40


def _index(rng: random.Random) -> capacity.NodeIndex:
    nodes = {}
    for i in range(NODES):
        node = make_node(f"n{i:02d}").capacity(cpu_milli=rng.choice([1000, 3000, 7000, 16000]),
                                               memory_bytes=rng.choice([2, 7, 64]) * GIB)
        if i % 7 == 0:
            node = node.taint("dedicated", "gpu")
        built = node.build()
        nodes[built.name] = built
    return capacity.build(nodes, {})


@pytest.mark.parametrize("scoring", SCORING_STRATEGIES)
@pytest.mark.parametrize("unrequested", [False, True])
def test_row_by_row_catch_up_equals_a_full_pass(scoring: str, unrequested: bool) -> None:
    """`unrequested`: the pod and the pods charged count missing container requests too
    (`PodObserved.nonzero_extra`), some nodes past their allocatable."""
    rng = random.Random(32)
    config = PlannerConfig(scoring=scoring)
    index = _index(rng)
    builder = make_pod("p").requests(cpu_milli=900, memory_bytes=GIB)
    if unrequested:
        builder = builder.unrequested(memory_bytes=0)
    pod = builder.build()
    key = (capacity.signature(pod), tuple(pod.requests.items()))
    placement._Shape(index, pod, config, None, key)  # cached from here on
    for _ in range(300):
        for _ in range(rng.randint(1, placement.ROW_BY_ROW_ROWS)):
            index.charge(f"n{rng.randrange(NODES):02d}",
                         {"cpu": rng.choice([-700, 100, 333, 900]),
                          "memory": rng.choice([-GIB, 0, GIB // 3])}, 1,
                         {"cpu": rng.choice([0, 100, 2000]),
                          "memory": rng.choice([0, GIB])} if unrequested else None)
        caught_up = placement._Shape(index, pod, config, None, key).scores.copy()
        index.forget_scores()
        fresh = placement._Shape(index, pod, config, None, key).scores
        assert np.array_equal(caught_up, fresh)
        assert caught_up.tobytes() == fresh.tobytes()  # -0.0 and 0.0 told apart too
