"""Native PodGroups (`scheduling.k8s.io/v1alpha2`, feature gate GenericWorkload) on the real
control plane.

The API server of this module serves the native API; gangsched reads both group APIs
(`--group-apis`). Pods join with `spec.schedulingGroup.podGroupName`; `gang.minCount` is the
gang's minMember, and the binder writes the native `PodGroupScheduled` condition.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cluster.fixture import ControlPlane
from tests.e2e import kube, manifests
from tests.support.gangsched_process import BOTH_GROUP_APIS, GangschedRun, serving
from tests.support.waiting import consistently, eventually

pytestmark = pytest.mark.e2e

NATIVE = "scheduling.k8s.io/v1alpha2"
NATIVE_ARGS = ("--feature-gates=GenericWorkload=true",
               "--runtime-config=scheduling.k8s.io/v1alpha2=true")


@pytest.fixture(scope="module")
def native_plane() -> Iterator[ControlPlane]:
    """One 3-CPU KWOK node; the API server serves the native PodGroup API."""
    with ControlPlane(nodes=1, cpu="3", memory="8Gi", pods=110,
                      extra_args=list(NATIVE_ARGS)) as cp:
        yield cp


@pytest.fixture(scope="module")
def native_gangsched(native_plane: ControlPlane,
                     tmp_path_factory: pytest.TempPathFactory) -> Iterator[GangschedRun]:
    """`gangsched run` reading both PodGroup APIs."""
    with serving(native_plane.kubeconfig, tmp_path_factory.mktemp("gangsched"),
                 *BOTH_GROUP_APIS) as run:
        yield run


@pytest.fixture
def native_namespace(native_plane: ControlPlane) -> Iterator[str]:
    """A fresh namespace on the native plane."""
    with kube.fresh_namespace(native_plane, "native") as name:
        yield name


def native_podgroup(name: str, min_count: int) -> dict[str, Any]:
    """A native gang PodGroup."""
    return {"apiVersion": NATIVE, "kind": "PodGroup", "metadata": {"name": name},
            "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}}}


def native_member(name: str, group: str) -> dict[str, Any]:
    """A pod of 1 CPU joining `group` through `spec.schedulingGroup`, no label."""
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": manifests.pod_spec("1", schedulingGroup={"podGroupName": group})}


def test_the_testbed_serves_the_native_podgroup_api(native_plane: ControlPlane) -> None:
    resources = native_plane.kubectl("api-resources", "--api-group=scheduling.k8s.io")
    assert "podgroups" in resources and "v1alpha2" in resources


def test_a_plane_on_a_reused_port_is_not_read_through_another_planes_discovery(
        native_plane: ControlPlane, control_plane: ControlPlane, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    # kubectl caches discovery under ~/.kube/cache per host_port for hours; a CI run once
    # started the shared plane on the port an earlier native plane had, and `get podgroups`
    # went to scheduling.k8s.io/v1alpha2, which the shared plane does not serve. Plant exactly
    # that: the native plane's discovery, cached under the shared plane's address in $HOME.
    native_plane.kubectl("api-resources")
    (native,) = (native_plane.kubectl_cache / "discovery").iterdir()
    host, port = control_plane.info["server"].removeprefix("https://").split(":")
    stale = tmp_path / ".kube" / "cache" / "discovery" / f"{host}_{port}"
    shutil.copytree(native, stale)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("KUBECACHEDIR", raising=False)
    listed = kube.get_json(control_plane, "podgroups", "-A")
    assert listed["apiVersion"] == "v1" and isinstance(listed["items"], list)
    groups = {item["apiVersion"] for item in listed["items"]}
    assert groups <= {"scheduling.x-k8s.io/v1alpha1"}, groups


def test_a_native_gang_of_min_count_3_with_6_pods_on_a_node_for_3_binds_exactly_3(
        native_plane: ControlPlane, native_gangsched: GangschedRun,
        native_namespace: str) -> None:
    members = [native_member(f"w-{i}", "train") for i in range(6)]
    manifests.apply(native_plane, native_namespace, native_podgroup("train", 3), *members)
    eventually(lambda: len(kube.bound(kube.pods(native_plane, native_namespace))) == 3,
               timeout=30, what="3 members bound")
    consistently(lambda: len(kube.bound(kube.pods(native_plane, native_namespace))) == 3,
                 duration=5, what="exactly 3 stay bound")

    def scheduled() -> dict[str, Any] | None:
        group = kube.get_json(native_plane, "podgroups.scheduling.k8s.io", "train",
                              "-n", native_namespace)
        conditions = (group.get("status") or {}).get("conditions") or []
        return next((c for c in conditions if c.get("type") == "PodGroupScheduled"
                     and c.get("status") == "True"), None)

    condition = eventually(scheduled, timeout=20, what="PodGroupScheduled=True")
    assert condition is not None  # `eventually` returns only a truthy value
    assert condition["reason"] == "Scheduled"
