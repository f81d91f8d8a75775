"""Small manifest builders for end-to-end tests: PodGroups, gang members, ReplicaSets, nodes."""

from __future__ import annotations

from typing import Any, Protocol

import yaml

from services.binder.validation import PLACEMENT_ANNOTATION

GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
IMAGE = "registry.k8s.io/pause:3.10"


class Kubectl(Protocol):
    def kubectl(self, *args: str, input: str | None = None) -> str: ...


def podgroup(name: str, min_member: int, *,
             timeout_seconds: int | None = None) -> dict[str, Any]:
    """A PodGroup (optionally with scheduleTimeoutSeconds)."""
    spec: dict[str, Any] = {"minMember": min_member}
    if timeout_seconds is not None:
        spec["scheduleTimeoutSeconds"] = timeout_seconds
    return {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
            "metadata": {"name": name}, "spec": spec}


def pod_spec(cpu: str = "100m", **extra: Any) -> dict[str, Any]:
    """A pod spec of gangsched's requesting `cpu`; `extra` adds fields (nodeName, ...)."""
    return {"schedulerName": "gangsched", "terminationGracePeriodSeconds": 0,
            "containers": [{"name": "main", "image": IMAGE,
                            "resources": {"requests": {"cpu": cpu}}}], **extra}


def pod(name: str, group: str | None, cpu: str = "100m", **extra: Any) -> dict[str, Any]:
    """A bare pod (no controller), a member of `group` when given."""
    labels = {GROUP_LABEL: group} if group else {"app": name}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels},
            "spec": pod_spec(cpu, **extra)}


def replicaset(name: str, group: str, replicas: int, cpu: str = "100m",
               **extra: Any) -> dict[str, Any]:
    """A ReplicaSet whose pods are members of `group`."""
    labels = {"app": name, GROUP_LABEL: group}
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": labels},
                                  "spec": pod_spec(cpu, **extra)}}}


def kwok_node(name: str, cpu: str = "4", memory: str = "8Gi",
              labels: dict[str, str] | None = None) -> dict[str, Any]:
    """A Node that KWOK manages (Ready at once, runs the pods bound to it)."""
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"type": "kwok", **(labels or {})},
                         "annotations": {"kwok.x-k8s.io/node": "fake"}},
            "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": "110"},
                       "capacity": {"cpu": cpu, "memory": memory, "pods": "110"}}}


def binding(namespace: str, pod_name: str, uid: str, node: str,
            placement_id: str | None = None) -> dict[str, Any]:
    """A v1 Binding of a pod (uid precondition) to `node`, as a scheduler posts it; with
    `placement_id`, stamped as gangsched's binder stamps the bindings of that placement (the
    API server copies a Binding's annotations onto the pod)."""
    metadata: dict[str, Any] = {"name": pod_name, "namespace": namespace, "uid": uid}
    if placement_id is not None:
        metadata["annotations"] = {PLACEMENT_ANNOTATION: placement_id}
    return {"apiVersion": "v1", "kind": "Binding", "metadata": metadata,
            "target": {"apiVersion": "v1", "kind": "Node", "name": node}}


def apply(cp: Kubectl, namespace: str | None, *documents: dict[str, Any]) -> None:
    """`kubectl apply` the documents (into `namespace` when given)."""
    where = ["-n", namespace] if namespace else []
    cp.kubectl("apply", *where, "-f", "-", input=yaml.safe_dump_all(documents))


def create(cp: Kubectl, namespace: str, *documents: dict[str, Any]) -> None:
    """`kubectl create` the documents into `namespace`."""
    cp.kubectl("create", "-n", namespace, "-f", "-", input=yaml.safe_dump_all(documents))


def set_phase(cp: Kubectl, namespace: str, name: str, phase: str) -> None:
    """Patch a pod's status phase (as a kubelet would report it)."""
    cp.kubectl("patch", "pod", name, "-n", namespace, "--subresource=status", "--type=merge",
               "-p", f'{{"status":{{"phase":"{phase}"}}}}')
