"""Pod topology spread (DoNotSchedule) on the real control plane.

Four KWOK nodes of 4 CPU: three in zone-a, one in zone-b. A gang of 4 with a zone spread of
maxSkew 1 must go 2 + 2, so zone-b's single node takes two members (least-allocated scoring
alone would put one member on each node: 3 + 1). The constraint also names `matchLabelKeys`,
which the API server merges into the stored `labelSelector`: the watcher reads that object.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from tests.cluster.fixture import ControlPlane
from tests.e2e import kube, manifests
from tests.support.gangsched_process import GangschedRun, serving
from tests.support.waiting import eventually

pytestmark = pytest.mark.e2e

ZONE = "topology.kubernetes.io/zone"
ZONES = {"kwok-node-0": "zone-a", "kwok-node-1": "zone-a", "kwok-node-2": "zone-a",
         "kwok-node-3": "zone-b"}


@pytest.fixture(scope="module")
def spread_plane() -> Iterator[ControlPlane]:
    """Four KWOK nodes of 4 CPU, labelled with their zone."""
    with ControlPlane(nodes=4, cpu="4", memory="8Gi", pods=110) as cp:
        for node, zone in ZONES.items():
            cp.kubectl("label", "node", node, f"{ZONE}={zone}", "--overwrite")
        yield cp


@pytest.fixture(scope="module")
def spread_gangsched(spread_plane: ControlPlane,
                     tmp_path_factory: pytest.TempPathFactory) -> Iterator[GangschedRun]:
    with serving(spread_plane.kubeconfig, tmp_path_factory.mktemp("gangsched")) as run:
        yield run


@pytest.fixture
def spread_namespace(spread_plane: ControlPlane) -> Iterator[str]:
    with kube.fresh_namespace(spread_plane, "spread") as name:
        yield name


def zone_spread_member(name: str, group: str) -> dict[str, Any]:
    """A 1-CPU member of `group` spread over zones with maxSkew 1 among the group's pods of
    its own run (`matchLabelKeys: [run]`)."""
    pod = manifests.pod(name, group, cpu="1", topologySpreadConstraints=[{
        "maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {manifests.GROUP_LABEL: group}},
        "matchLabelKeys": ["run"]}])
    pod["metadata"]["labels"]["run"] = "1"
    return pod


def test_a_zone_spread_gang_of_4_ends_bound_two_per_zone(
        spread_plane: ControlPlane, spread_gangsched: GangschedRun,
        spread_namespace: str) -> None:
    manifests.apply(spread_plane, spread_namespace, manifests.podgroup("train", 4),
                    *(zone_spread_member(f"train-{i}", "train") for i in range(4)))

    def members() -> list[dict[str, Any]]:
        return [pod for pod in kube.bound(kube.pods(spread_plane, spread_namespace))
                if pod["metadata"]["name"].startswith("train-")]

    eventually(lambda: len(members()) == 4, timeout=60, what="4 members bound")
    per_zone = Counter(ZONES[pod["spec"]["nodeName"]] for pod in members())
    assert per_zone == {"zone-a": 2, "zone-b": 2}
    stored = members()[0]["spec"]["topologySpreadConstraints"][0]["labelSelector"]
    assert {"key": "run", "operator": "In", "values": ["1"]} in stored["matchExpressions"]
