"""The kept `without` balance against every way `index.free` moves (found sound by a review).

`balanced_allocation.without` is caught up from `index.changes`; anything that moves
`index.free` must either log the row or drop the cache. Exercised: trial take/give (logged),
`shift` (holds, nominations, settle: drops), `update_node` with a new allocatable (logged),
and a whole-gang search run on `index.free` (unlogged, restored before it returns), each
followed by a read compared with a fresh computation.
"""

from __future__ import annotations

import random

import msgspec
import numpy as np

from services.planner.core import balanced_allocation, search
from tests.unit.planner.builders import GIB
from tests.unit.planner.test_balanced_allocation import index_of


def test_the_kept_balance_follows_every_path_that_moves_free() -> None:
    rng = random.Random(7)
    index = index_of(*[(rng.choice([0, 4000, 16000]), rng.choice([0, 8 * GIB, 64 * GIB]),
                        rng.choice([0, 1000]), rng.choice([0, GIB])) for _ in range(40)])
    columns = (index.col["cpu"], index.col["memory"])
    for step in range(300):
        action = rng.random()
        if action < 0.4:
            for _ in range(rng.choice([1, 2, 12])):
                index.take(rng.randrange(40), index.vector(
                    {"cpu": rng.choice([-500, 100, 2000]),
                     "memory": rng.choice([-GIB, 0, GIB])})[0])
        elif action < 0.55:
            amounts = np.zeros_like(index.alloc)
            amounts[:, rng.randrange(40)] = index.vector({"cpu": 300, "memory": GIB})[0]
            index.shift(amounts, rng.choice([1, -1]))
        elif action < 0.7:
            row = rng.randrange(40)
            node = index.nodes[row]
            index.update_node(msgspec.structs.replace(node, allocatable={
                **node.allocatable, "cpu": rng.choice([0, 2000, 16000])}))
        else:
            vec = index.vector({"cpu": 500, "memory": GIB})[0]
            members = [search.Member(vec, [columns[0], columns[1]],
                                     np.ones(40, dtype=np.bool_), (), 0) for _ in range(3)]
            search.solve(index.free, members, 3, 50,
                         lambda m, rows: -rows.astype(np.float64), lambda row: (), [])
        kept = balanced_allocation.without(index, columns).copy()
        fresh = balanced_allocation._balance(
            index.alloc[columns[0]] - index.free[columns[0]],
            index.alloc[columns[1]] - index.free[columns[1]],
            index.alloc[columns[0]], index.alloc[columns[1]])
        assert kept.tolist() == fresh.tolist(), step
