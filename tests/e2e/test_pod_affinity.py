"""Required inter-pod anti-affinity on the real control plane.

Four KWOK nodes; one is filled by a pod bound by name. A gang of 3 whose members keep one per
host (`kubernetes.io/hostname` anti-affinity on their own label) is placed one per free node.
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

HOST = "kubernetes.io/hostname"


@pytest.fixture(scope="module")
def affinity_plane() -> Iterator[ControlPlane]:
    """Four KWOK nodes of 4 CPU."""
    with ControlPlane(nodes=4, cpu="4", memory="8Gi", pods=110) as cp:
        yield cp


@pytest.fixture(scope="module")
def affinity_gangsched(affinity_plane: ControlPlane,
                       tmp_path_factory: pytest.TempPathFactory) -> Iterator[GangschedRun]:
    with serving(affinity_plane.kubeconfig, tmp_path_factory.mktemp("gangsched")) as run:
        yield run


@pytest.fixture
def affinity_namespace(affinity_plane: ControlPlane) -> Iterator[str]:
    with kube.fresh_namespace(affinity_plane, "affinity") as name:
        yield name


def one_per_host(name: str, group: str) -> dict[str, Any]:
    """A 1-CPU member of `group` that shares no host with another member."""
    pod = manifests.pod(name, group, cpu="1", affinity={"podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [{
            "topologyKey": HOST,
            "labelSelector": {"matchLabels": {manifests.GROUP_LABEL: group}}}]}})
    return pod


def test_a_one_per_host_gang_of_3_is_placed_one_per_free_node(
        affinity_plane: ControlPlane, affinity_gangsched: GangschedRun,
        affinity_namespace: str) -> None:
    filler = manifests.pod("filler", None, cpu="4", nodeName="kwok-node-0",
                           schedulerName="default-scheduler")
    manifests.apply(affinity_plane, affinity_namespace, filler)
    manifests.apply(affinity_plane, affinity_namespace, manifests.podgroup("web", 3),
                    *(one_per_host(f"web-{i}", "web") for i in range(3)))

    def members() -> list[dict[str, Any]]:
        return [pod for pod in kube.bound(kube.pods(affinity_plane, affinity_namespace))
                if pod["metadata"]["name"].startswith("web-")]

    eventually(lambda: len(members()) == 3, timeout=60, what="3 members bound")
    hosts = sorted(pod["spec"]["nodeName"] for pod in members())
    assert hosts == ["kwok-node-1", "kwok-node-2", "kwok-node-3"]
