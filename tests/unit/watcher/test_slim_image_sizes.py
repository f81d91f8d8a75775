"""Odd `status.images[].sizeBytes` as ImageLocality reads them (found by a review).

The API server does not validate `sizeBytes` (no check in `pkg/apis/core/validation`), so a
negative one is stored and served (a KWOK or hand-made Node). kube-scheduler's cache keeps it
(`ImageStateSummary.Size = image.SizeBytes`) and `scaledImageScore` sums
`int64(float64(size) * spread)`, negative too. `slim.node_images` clamped it to 0, so the
node scored higher than kube-scheduler scores it; it keeps it now. Low severity: no kubelet
reports a negative size.
"""

from __future__ import annotations

from services.planner.core import capacity, image_locality
from services.watcher import slim
from tests.unit.planner.builders import make_pod

MIB = 1024 * 1024


def node(name: str, images: list[dict[str, object]]) -> dict[str, object]:
    return {"metadata": {"name": name, "uid": name, "resourceVersion": "1"},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
                       "images": images}}


def go_priority(total: int, containers: int) -> int:
    """`calculatePriority`."""
    high = 1000 * MIB * containers
    clamped = min(max(total, 23 * MIB), high)
    return 100 * (clamped - 23 * MIB) // (high - 23 * MIB)


def test_a_negative_size_counts_as_kube_scheduler_counts_it() -> None:
    n0 = slim.node_event(node("n0", [{"names": ["a:v1"], "sizeBytes": 800 * MIB},
                                     {"names": ["b:v1"], "sizeBytes": -400 * MIB}]), 1)
    n1 = slim.node_event(node("n1", []), 1)
    index = capacity.build({"n0": n0, "n1": n1}, {})
    pod = make_pod("p").images("a:v1", "b:v1").build()
    # two nodes, each image on one: spread 1/2; n0's sum 400 MiB - 200 MiB
    expected = go_priority(int(800 * MIB * 0.5) + int(-400 * MIB * 0.5), 2)
    assert expected == 8
    assert image_locality.scores(index, pod).tolist() == [expected, 0]
