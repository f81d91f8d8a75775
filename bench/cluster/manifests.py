"""API objects for a workload, in the gang API each scheduler understands.

Layer: bench, pure. Three gang APIs:
- `crd`: PodGroup `scheduling.x-k8s.io/v1alpha1` (minMember) + pod label
  `scheduling.x-k8s.io/pod-group` — gangsched and scheduler-plugins Coscheduling;
- `native`: PodGroup `scheduling.k8s.io/v1alpha2` (schedulingPolicy.gang.minCount) + pod
  `spec.schedulingGroup.podGroupName` — kube-scheduler's own gang scheduling (v1.36, alpha);
- `none`: no group objects (kube-scheduler's default profile, the trivial binder).
Pods request 1 CPU (limits = requests), mount no ServiceAccount token, and carry the group label
in every API so the objects differ between schedulers only where the APIs differ.
"""

from __future__ import annotations

from typing import Any

from bench.cluster.workload import POD_CPU_MILLI, Gang, Pod

NAMESPACE = "bench"
GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
PAUSE_IMAGE = "registry.k8s.io/pause:3.10"
GROUP_APIS = ("crd", "native", "none")


def namespace() -> tuple[str, dict[str, Any]]:
    return "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                  "metadata": {"name": NAMESPACE}}


def pod_group(gang: Gang, group_api: str, schedule_timeout_seconds: int | None = None
              ) -> tuple[str, dict[str, Any]] | None:
    """`(collection path, body)` of the gang's group object, or None for `none`.

    `schedule_timeout_seconds` sets a `crd` PodGroup's `spec.scheduleTimeoutSeconds` (unset:
    the CRD default); the native API has no such field.
    """
    meta = {"name": gang.name, "namespace": NAMESPACE}
    if group_api == "crd":
        spec: dict[str, Any] = {"minMember": gang.size}
        if schedule_timeout_seconds is not None:
            spec["scheduleTimeoutSeconds"] = schedule_timeout_seconds
        return (f"/apis/scheduling.x-k8s.io/v1alpha1/namespaces/{NAMESPACE}/podgroups",
                {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
                 "metadata": meta, "spec": spec})
    if group_api == "native":
        return (f"/apis/scheduling.k8s.io/v1alpha2/namespaces/{NAMESPACE}/podgroups",
                {"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup",
                 "metadata": meta,
                 "spec": {"schedulingPolicy": {"gang": {"minCount": gang.size}}}})
    return None


def pod(member: Pod, scheduler_name: str, group_api: str) -> tuple[str, dict[str, Any]]:
    """`(collection path, body)` of one pod."""
    resources = {"cpu": f"{POD_CPU_MILLI}m", "memory": f"{member.memory_mi}Mi"}
    spec: dict[str, Any] = {
        "schedulerName": scheduler_name,
        "automountServiceAccountToken": False,
        "terminationGracePeriodSeconds": 0,
        "containers": [{"name": "c", "image": PAUSE_IMAGE,
                        "resources": {"requests": resources, "limits": resources}}],
    }
    labels = {"app": "bench"}
    if member.gang is not None:
        labels[GROUP_LABEL] = member.gang
        if group_api == "native":
            spec["schedulingGroup"] = {"podGroupName": member.gang}
    return (f"/api/v1/namespaces/{NAMESPACE}/pods",
            {"apiVersion": "v1", "kind": "Pod",
             "metadata": {"name": member.name, "namespace": NAMESPACE, "labels": labels},
             "spec": spec})


def binding(pod_name: str, node_name: str) -> tuple[str, dict[str, Any]]:
    """`(path, body)` of a pods/binding subresource POST."""
    return (f"/api/v1/namespaces/{NAMESPACE}/pods/{pod_name}/binding",
            {"apiVersion": "v1", "kind": "Binding",
             "metadata": {"name": pod_name, "namespace": NAMESPACE},
             "target": {"apiVersion": "v1", "kind": "Node", "name": node_name}})
