"""What ImageLocality costs when nothing about it changed for the pod (found by a review).

`image_locality.is_active` runs at every `_one_by_one`; it called `holders(index)` first, which,
whenever `index.image_holders` was dropped, walked every name of every image of every node in
Python, and `update_node` dropped it whenever any one node's `status.images` changed (a pull, a
garbage collection: many times a minute in a busy cluster, where each kubelet reports up to 50
images). Measured: about 0.35 s per rebuild at 5,000 nodes x 50 images x 2 names, paid by the next
round, and paid too when the members had no image any node holds or no image at all. Now a
member without images looks at no node, and a node's change updates only its own names.
"""

from __future__ import annotations

import msgspec

from services.contracts.events import NodeImage
from services.planner.core import capacity, image_locality
from tests.unit.planner.builders import GIB, MIB, make_node, make_pod


class CountingList(list):  # type: ignore[type-arg]
    """`index.nodes`, counting the walks over every node."""

    walks = 0

    def __iter__(self):  # type: ignore[no-untyped-def]
        CountingList.walks += 1
        return super().__iter__()


def imaged_index(count: int = 200) -> capacity.NodeIndex:
    nodes = {}
    for i in range(count):
        node = make_node(f"n{i:04d}").capacity(cpu_milli=4000, memory_bytes=8 * GIB).build()
        images = tuple(NodeImage(names=(f"reg/img{(i + j) % 120}:v1",
                                        f"reg/img{(i + j) % 120}@sha256:{j}"), size_bytes=300 * MIB)
                       for j in range(50))
        nodes[node.name] = msgspec.structs.replace(node, images=images)
    index = capacity.build(nodes, {})
    index.nodes = CountingList(index.nodes)
    return index


def test_members_without_images_walk_no_node() -> None:
    index = imaged_index()
    CountingList.walks = 0
    assert not image_locality.is_active(index, [make_pod("p").build()])
    assert CountingList.walks == 0, "every node's images walked for a pod with none"


def test_one_nodes_new_image_does_not_walk_every_nodes_images_again() -> None:
    index = imaged_index()
    pod = make_pod("p").images("reg/img3:v1").build()
    assert image_locality.is_active(index, [pod])
    node = index.nodes[7]
    index.update_node(msgspec.structs.replace(
        node, images=(*node.images, NodeImage(names=("reg/new:v1",), size_bytes=MIB))))
    CountingList.walks = 0
    assert image_locality.is_active(index, [pod])
    assert CountingList.walks == 0, "one node's change: every node's images walked again"
