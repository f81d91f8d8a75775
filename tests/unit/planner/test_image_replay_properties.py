"""Live planner vs replay through snapshots, with every scoring cache of revision 45 busy.

Nodes report images and change them, nodes come and go (the index rebuilt: ImageLocality's
totalNumNodes), pods carry images, mixed cpu/memory shapes (the kept `without` balance),
missing requests (the non-zero extra, counted by the search and settle), priorities (preemption
dry runs, nominations, settle) and starving gangs (holds shift `index.free`). Every round must
decide exactly as a planner rebuilt from a snapshot (no cache) does.
"""

from __future__ import annotations

import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from services.contracts import codec
from services.contracts.decisions import Placement
from services.contracts.events import NodeDeleted
from services.planner.core.config import PlannerConfig
from tests.unit.planner.builders import GIB, MIB, make_node, make_pod, make_podgroup
from tests.unit.planner.harness import Cluster, replay
from tests.unit.planner.test_properties import replay_through_snapshots

IMAGES = [f"reg/img{i}:v1" for i in range(6)]


def node_of(rng: random.Random, name: str):  # type: ignore[no-untyped-def]
    node = make_node(name).capacity(cpu_milli=rng.choice([2000, 4000, 4900, 8000]),
                                    memory_bytes=rng.choice([4, 8, 16]) * GIB)
    held = rng.sample(IMAGES, rng.randint(0, 3))
    if held:
        node = node.holds(*[((image, f"{image}@sha256:{i}"), rng.choice([30, 300, 900]) * MIB)
                            for i, image in enumerate(held)])
    return node


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.randoms(use_true_random=False))
def test_live_decides_as_a_replay_through_snapshots(rng: random.Random) -> None:
    config = PlannerConfig(starvation_seconds=20, scoring=rng.choice(["least-allocated",
                                                                      "most-allocated"]))
    names = [f"n{i:02d}" for i in range(36)]
    cluster = Cluster(config).observe(*[node_of(rng, name) for name in names])
    for round_number in range(10):
        for g in range(rng.randint(2, 6)):
            name, size = f"r{round_number}g{g}", rng.randint(1, 8)
            cpu = rng.choice([0, 500, 1000, 2500, 3500])
            memory = rng.choice([0, GIB // 2, 2 * GIB, 5 * GIB])
            priority = rng.choice([0, 0, 100, 200])
            images = tuple(rng.sample(IMAGES, rng.randint(0, 2)))
            cluster.observe(make_podgroup(name, size), *[
                make_pod(f"{name}-{i}").requests(cpu_milli=cpu, memory_bytes=memory)
                .priority(priority).in_group(name).images(*images)
                .unrequested(cpu_milli=100 if cpu == 0 else 0,
                             memory_bytes=200 * MIB if memory == 0 else 0)
                for i in range(size + rng.randint(0, 1))])
        decisions = cluster.plan()
        placements = [d for d in decisions if isinstance(d, Placement)]
        if placements and rng.random() < 0.3:
            cluster.roll_back(placements.pop(0))
        cluster.bind(list(placements))
        running = sorted(p.name for p in cluster.state.pods.values() if p.phase == "Running")
        for name in rng.sample(running, min(len(running), rng.randint(0, 6))):
            cluster.set_phase(name, "Succeeded")
        change = rng.random()
        if change < 0.4:  # a node's images change (and maybe its allocatable)
            cluster.observe(node_of(rng, rng.choice(names)))
        elif change < 0.55:  # a node comes
            names.append(f"m{round_number:02d}")
            cluster.observe(node_of(rng, names[-1]))
        elif change < 0.65 and len(names) > 20:  # a node goes
            gone = names.pop(rng.randrange(len(names)))
            cluster.apply(NodeDeleted(at_ms=cluster.now_ms, name=gone, uid=f"uid-node-{gone}"))
        cluster.advance(rng.choice([1, 5, 30]))
    recorded = b"".join(codec.encode(d) + b"\n" for d in cluster.decisions)
    assert replay(cluster.log, config) == recorded
    assert replay_through_snapshots(cluster.log, config) == recorded
