"""The local control plane: nodes, CRD, KWOK, controller-manager, SA tokens, clean stop."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

from tests.cluster.fixture import ControlPlane, KubectlError
from tests.support.waiting import eventually

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(3900)]  # a cold build of the binaries takes long

POD = """
apiVersion: v1
kind: Pod
metadata:
  name: on-node-0
spec:
  nodeName: kwok-node-0
  containers:
  - name: main
    image: fake
"""

REPLICASET = """
apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: unscheduled
spec:
  replicas: 2
  selector:
    matchLabels: {app: unscheduled}
  template:
    metadata:
      labels: {app: unscheduled}
    spec:
      schedulerName: no-such-scheduler
      containers:
      - name: main
        image: fake
"""

PODGROUP = """
apiVersion: scheduling.x-k8s.io/v1alpha1
kind: PodGroup
metadata:
  name: gang
spec:
  minMember: 2
  minResources:
    cpu: "2"
    memory: 1Gi
  scheduleTimeoutSeconds: 30
"""


def get(cp: ControlPlane, *args: str) -> Any:
    return json.loads(cp.kubectl("get", *args, "-o", "json"))


def is_ready(node: dict[str, Any]) -> bool:
    return any(
        c["type"] == "Ready" and c["status"] == "True" for c in node["status"].get("conditions", [])
    )


def test_control_plane_up_and_down() -> None:
    cp = ControlPlane(nodes=2)
    with cp:
        # two Ready KWOK nodes with the requested resources
        nodes = get(cp, "nodes")["items"]
        assert sorted(n["metadata"]["name"] for n in nodes) == ["kwok-node-0", "kwok-node-1"]
        for n in nodes:
            assert is_ready(n)
            assert n["metadata"]["labels"]["type"] == "kwok"
            assert n["metadata"]["annotations"]["kwok.x-k8s.io/node"] == "fake"
            assert n["status"]["allocatable"]["cpu"] == "10"
            assert n["status"]["allocatable"]["memory"] == "8Gi"
            assert n["status"]["allocatable"]["pods"] == "110"

        # the PodGroup CRD is installed, with its short name and validation
        cp.kubectl("get", "pg", "-A")
        cp.apply(PODGROUP, namespace="default")
        assert get(cp, "podgroups.scheduling.x-k8s.io", "gang")["spec"]["minMember"] == 2
        with pytest.raises(KubectlError, match="minMember"):
            cp.apply(
                PODGROUP.replace("minMember: 2", "minMember: 0").replace("name: gang", "name: bad")
            )

        # KWOK runs a pod bound to one of its nodes
        cp.apply(POD, namespace="default")
        eventually(
            lambda: get(cp, "pod", "on-node-0")["status"].get("phase") == "Running",
            timeout=60,
            interval=0.3,
            what="pod on kwok-node-0 Running",
        )

        # the controller-manager makes the ReplicaSet's pods; nobody schedules them
        cp.apply(REPLICASET, namespace="default")

        def pending_pods() -> list[dict[str, Any]] | None:
            pods = get(cp, "pods", "-l", "app=unscheduled")["items"]
            ok = len(pods) == 2 and all(
                p["status"].get("phase") == "Pending" and not p["spec"].get("nodeName")
                for p in pods
            )
            return pods if ok else None

        eventually(pending_pods, timeout=60, interval=0.3, what="2 Pending pods of the ReplicaSet")

        # ServiceAccount tokens from the TokenRequest API authenticate (and RBAC applies)
        cp.kubectl("create", "serviceaccount", "tester", "-n", "default")
        token = cp.kubectl("create", "token", "tester", "-n", "default").strip()
        empty = cp.dir / "empty-kubeconfig"
        empty.write_text("apiVersion: v1\nkind: Config\n")
        as_sa = [
            "--kubeconfig",
            str(empty),
            "--server",
            cp.server,
            "--certificate-authority",
            str(cp.ca_file),
            "--token",
            token,
        ]
        who = json.loads(cp.kubectl(*as_sa, "auth", "whoami", "-o", "json"))
        assert who["status"]["userInfo"]["username"] == "system:serviceaccount:default:tester"
        with pytest.raises(KubectlError, match="forbidden"):
            cp.kubectl(*as_sa, "get", "pods", "-n", "default")

        pids = cp.pids
        assert set(pids) == {"etcd", "kube-apiserver", "kube-controller-manager", "kwok"}
        cp.stop()
        assert cp.returncode == 0
        for pid in pids.values():
            with pytest.raises(ProcessLookupError):
                os.kill(pid, 0)
        assert cp.leftover_processes() == []
        assert not (cp.dir / "ready").exists()
