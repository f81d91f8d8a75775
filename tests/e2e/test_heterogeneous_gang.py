"""A heterogeneous gang that fits only one way, on the real control plane.

Two KWOK nodes of 64 CPU; filler pods (bound by name, no scheduler) leave 53 and 31 CPU free.
The gang's members ask 30 and 50 CPU, in that name order. Placed member by member in name
order on the best-scored node (what kube-scheduler + Coscheduling do), the 30 goes to the
emptier node and the 50 then fits nowhere; the whole-gang search places the 50 on the 53 and
the 30 on the 31. The issue's report: "1 of 2 members fit; 0/2 nodes are available: 2
Insufficient cpu", never placed.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.cluster.fixture import ControlPlane
from tests.e2e import kube, manifests
from tests.support.gangsched_process import GangschedRun, serving
from tests.support.waiting import eventually

pytestmark = pytest.mark.e2e

FREE = {"kwok-node-0": 53, "kwok-node-1": 31}
"""CPU left free on each node by its filler pod (of 64)."""


@pytest.fixture(scope="module")
def wide_plane() -> Iterator[ControlPlane]:
    """Two KWOK nodes of 64 CPU."""
    with ControlPlane(nodes=2, cpu="64", memory="256Gi", pods=110) as cp:
        yield cp


@pytest.fixture(scope="module")
def wide_gangsched(wide_plane: ControlPlane,
                   tmp_path_factory: pytest.TempPathFactory) -> Iterator[GangschedRun]:
    with serving(wide_plane.kubeconfig, tmp_path_factory.mktemp("gangsched")) as run:
        yield run


@pytest.fixture
def wide_namespace(wide_plane: ControlPlane) -> Iterator[str]:
    with kube.fresh_namespace(wide_plane, "mixed") as name:
        yield name


def test_members_of_30_and_50_cpu_go_where_only_the_whole_gang_fits(
        wide_plane: ControlPlane, wide_gangsched: GangschedRun, wide_namespace: str) -> None:
    fillers = [manifests.pod(f"filler-{node[-1]}", None, cpu=str(64 - free), nodeName=node)
               for node, free in FREE.items()]
    manifests.apply(wide_plane, wide_namespace, *fillers)
    eventually(lambda: len(kube.running(kube.pods(wide_plane, wide_namespace))) == 2,
               timeout=60, what="both fillers Running")
    manifests.apply(wide_plane, wide_namespace, manifests.podgroup("train", 2),
                    manifests.pod("train-0", "train", cpu="30"),
                    manifests.pod("train-1", "train", cpu="50"))

    def members() -> dict[str, str]:
        pods: list[dict[str, Any]] = kube.bound(kube.pods(wide_plane, wide_namespace))
        return {pod["metadata"]["name"]: pod["spec"]["nodeName"] for pod in pods
                if pod["metadata"]["name"].startswith("train-")}

    placed = eventually(lambda: members() if len(members()) == 2 else None, timeout=60,
                        what="both members bound")
    assert placed == {"train-0": "kwok-node-1", "train-1": "kwok-node-0"}
    assert not [event for event in kube.events(wide_plane, wide_namespace, "FailedScheduling")
                if "members fit" in event.get("message", "")]  # never refused for lack of fit
