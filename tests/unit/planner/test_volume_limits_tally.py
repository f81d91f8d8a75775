"""The per-round tally of NodeVolumeLimits (`volume_limits.Limits`) against the rule applied
node by node (`services.fit.volume_limits.exceeds` over every pod on the node), on random
clusters, through pods coming and going mid-round (trials, preemption) and members placed by a
search that the index does not hold."""

from __future__ import annotations

import random

import numpy as np
import pytest

from services.contracts.events import (
    AttachableVolume,
    AttachmentObserved,
    CSINodeObserved,
    PodObserved,
)
from services.fit import volume_limits as rules
from services.fit.volumes import Book
from services.planner.core import derived, volumes
from services.planner.core.capacity import BoolArray, NodeIndex
from services.planner.core.state import PlannerState
from tests.unit.planner.builders import make_claim, make_node, make_pod, make_volume
from tests.unit.planner.harness import Cluster

DRIVERS = ("a.csi", "b.csi")


def _cluster(rng: random.Random) -> tuple[Cluster, list[PodObserved]]:
    nodes = [f"n{i}" for i in range(6)]
    c = Cluster().observe(*(make_node(node).capacity(cpu_milli=64000) for node in nodes))
    for node in nodes[:5]:
        limits = {driver: rng.randint(0, 3) for driver in DRIVERS if rng.random() < 0.8}
        c.observe(CSINodeObserved(at_ms=0, uid=f"uid-csinode-{node}", name=node,
                                  resource_version="1", limits=limits))
    for number in range(8):
        driver = rng.choice(DRIVERS)
        c.observe(make_claim(f"c{number}", volume=f"pv{number}"),
                  make_volume(f"pv{number}", claim=("default", f"c{number}"),
                              csi=AttachableVolume(driver, f"h{number}")))
    for number in range(rng.randint(0, 4)):
        volume = rng.randrange(10)  # pv8, pv9 are not observed
        c.observe(AttachmentObserved(at_ms=0, uid=f"uid-va{number}", name=f"va{number}",
                                     resource_version="1", node=rng.choice(nodes),
                                     attacher=rng.choice(DRIVERS), volume=f"pv{volume}"))
    pods = []
    for number in range(12):
        claims = sorted({f"c{rng.randrange(8)}" for _ in range(rng.randint(1, 3))})
        builder = make_pod(f"p{number}").scheduler(rng.choice(["gangsched", "other"])).claims(
            *claims)
        if rng.random() < 0.3:
            builder = builder.migrated(AttachableVolume("a.csi", f"inline{rng.randrange(3)}"))
        pods.append(builder.build())
    return c, pods


def _naive(index: NodeIndex, state: PlannerState, pod: PodObserved,
           placed: list[tuple[int, PodObserved]], only_pinned: bool) -> BoolArray:
    book = Book(state.claims, state.volumes, state.storage_classes)
    rows = np.zeros(len(index), dtype=np.bool_)
    for name, csinode in state.csinodes.items():
        row = index.row[name]
        if not csinode.limits:
            continue
        others = [other for _, (r, other, is_ours) in index.volume_users.items()
                  if r == row and other.uid != pod.uid and not (only_pinned and is_ours)]
        others += [other for r, other in placed if r == row and other.uid != pod.uid]
        attached: rules.Volumes = {}
        for other in others:
            attached.update(rules.pod_volumes(other, book, True))
        held = rules.attachment_volumes(
            [a for a in state.attachments.values() if a.node == name], state.volumes)
        rows[row] = rules.exceeds(rules.pod_volumes(pod, book, True), attached, held,
                                  csinode.limits)
    return rows


@pytest.mark.parametrize("seed", range(60))
def test_the_tally_agrees_with_the_rule_node_by_node(seed: int) -> None:
    rng = random.Random(seed)
    c, pods = _cluster(rng)
    state = c.state
    index = derived.ensure(state, c.config.scheduler_name).index
    assert index is not None
    storage = volumes.Volumes(state, index)
    index.volumes = storage
    on: dict[str, int] = {}
    for step in range(40):
        pod = rng.choice(pods)
        roll = rng.random()
        if roll < 0.45:  # a trial takes it, or preemption gives one back
            row = rng.randrange(len(index))
            index.set_pod(pod.uid, index.names[row], pod, pod.scheduler_name == "gangsched")
            on[pod.uid] = row
        elif roll < 0.6 and on:
            uid = rng.choice(sorted(on))
            index.set_pod(uid, None, None)
            del on[uid]
        else:
            placed = [(rng.randrange(len(index)), other) for other in rng.sample(pods, 2)]
            only_pinned = rng.random() < 0.3
            got = storage.limits.exceeded(pod, placed, only_pinned)
            expected = _naive(index, state, pod, placed, only_pinned)
            assert got.tolist() == expected.tolist(), (seed, step)
