"""ImageLocality's score: prefer the nodes that already hold the pod's images.

Layer: planner core (pure; NumPy). Source: kube-scheduler 1.36's ImageLocality plugin (weight 1
in the default profile, no normalization). Per node, for each of the pod's images (init and app
containers, one per container, and image volumes: `PodObserved.images`, `image_volumes`) that
the node reports under that name (`NodeObserved.images`, every name of every image), the
image's size scaled by how many of all nodes hold it, `int64(float64(size) * (float64(nodes
with it) / float64(all nodes)))`; the sum, clamped to [23 MiB, 1000 MiB per container], maps
linearly onto 0..100 in int64 (`calculatePriority`). Nodes count whatever their state (every
node of the scheduler's snapshot does). One difference: kube-scheduler keeps the size the first
node to report a name gave, for every node; gangsched each node's own (they differ only when
two nodes report different sizes under one name).

The scores depend only on the nodes' images, not on what is placed: kept on the node index per
set of images until a node's images change (`NodeIndex.image_scores`).
"""

from __future__ import annotations

import numpy as np

from services.contracts.events import PodObserved
from services.planner.core.capacity import FloatArray, IntArray, NodeIndex, node_image_sizes

MIB = 1024 * 1024
MIN_THRESHOLD = 23 * MIB
"""Below this sum (bytes) a node scores 0."""
MAX_CONTAINER_THRESHOLD = 1000 * MIB
"""Per container, the sum (bytes) at which a node scores 100."""
MAX_NODE_SCORE = 100
KEPT = 256
"""At most this many sets of images keep their scores on the index; past it they start again
(one float array per node each: at 5,000 nodes at most 10 MB; recomputing a set is a few NumPy
operations per image)."""

Holders = dict[str, tuple[IntArray, IntArray]]
"""Per image name: the rows of the nodes reporting it, and the size each gives (bytes)."""


def holders(index: NodeIndex) -> Holders:
    """Every image name reported by a node, with the rows reporting it and their sizes (a
    node reporting a name twice counts its first), kept on the index (`image_holders`, kept
    current row by row as nodes' images change, `NodeIndex.update_node`)."""
    if index.image_holders is None:
        found: dict[str, tuple[list[int], list[int]]] = {}
        for row, node in enumerate(index.nodes):
            for name, size in node_image_sizes(node).items():
                rows, sizes = found.setdefault(name, ([], []))
                rows.append(row)
                sizes.append(size)
        index.image_holders = {name: (np.array(rows, dtype=np.int64),
                                      np.array(sizes, dtype=np.int64))
                               for name, (rows, sizes) in found.items()}
    return index.image_holders


def is_active(index: NodeIndex, members: list[PodObserved]) -> bool:
    """Whether some node reports one of some member's images (else every node scores 0).
    Members without images look at no node."""
    wanted = {name for pod in members for name in (*pod.images, *pod.image_volumes)}
    if not wanted:
        return False
    known = holders(index)
    return any(name in known for name in wanted)


def scores(index: NodeIndex, pod: PodObserved) -> FloatArray:
    """Per row, `pod`'s ImageLocality score (whole numbers 0..100; module docstring)."""
    key = (pod.images, pod.image_volumes)
    kept = index.image_scores
    found = kept.get(key)
    if found is None:
        if len(kept) >= KEPT:
            kept.clear()
        found = kept[key] = _scores(index, pod)
    return found


def _scores(index: NodeIndex, pod: PodObserved) -> FloatArray:
    total = len(index)
    result: FloatArray = np.zeros(total, dtype=np.float64)
    containers = len(pod.images)
    if containers == 0 or total == 0:
        return result
    known = holders(index)
    sums: IntArray = np.zeros(total, dtype=np.int64)
    for name in (*pod.images, *pod.image_volumes):
        entry = known.get(name)
        if entry is not None:
            rows, sizes = entry
            spread = float(len(rows)) / float(total)
            sums[rows] += (sizes.astype(np.float64) * spread).astype(np.int64)
    high = MAX_CONTAINER_THRESHOLD * containers
    clamped = np.clip(sums, MIN_THRESHOLD, high)
    result[:] = MAX_NODE_SCORE * (clamped - MIN_THRESHOLD) // (high - MIN_THRESHOLD)
    return result
