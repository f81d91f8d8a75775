"""Resources (NodeResourcesFit): allocatable cpu, memory, pods, ephemeral-storage,
`nvidia.com/gpu` and `hugepages-2Mi` per node; requests of app, init and sidecar containers,
limits standing in for requests, pod-level resources, and a RuntimeClass's pod overhead."""

from __future__ import annotations

import random

from tests.e2e.differential.families import Base, ClusterPlan, Manifest, main_container

GPU = "nvidia.com/gpu"
HUGEPAGES = "hugepages-2Mi"
OVERHEAD_CLASS = "diff-overhead"
IMAGE = "registry.k8s.io/pause:3.10"


class Requests(Base):
    name = "requests"

    def objects(self, rng: random.Random, plan: ClusterPlan) -> list[Manifest]:
        return [{"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
                 "metadata": {"name": OVERHEAD_CLASS}, "handler": "runc",
                 "overhead": {"podFixed": {"cpu": "250m", "memory": "128Mi"}}}]

    def shape_node(self, rng: random.Random, node: Manifest) -> None:
        amounts = {"cpu": rng.choice(["4", "8", "8", "16", "7500m"]),
                   "memory": rng.choice(["8Gi", "16Gi", "32Gi"]),
                   "pods": str(rng.choice([6, 12, 110, 110]))}
        if rng.random() < 0.5:
            amounts["ephemeral-storage"] = rng.choice(["20Gi", "100Gi"])
        if rng.random() < 0.3:
            amounts[GPU] = rng.choice(["2", "4", "8"])
        if rng.random() < 0.2:
            amounts[HUGEPAGES] = rng.choice(["512Mi", "1Gi"])
        node["status"] = {"allocatable": amounts, "capacity": dict(amounts)}

    def shape_pod(self, rng: random.Random, pod: Manifest, plan: ClusterPlan) -> None:
        spec, main = pod["spec"], main_container(pod)
        if rng.random() < 0.05:
            return  # BestEffort: no requests at all
        requests = {"cpu": rng.choice(["100m", "250m", "500m", "1", "2", "3500m"]),
                    "memory": rng.choice(["64Mi", "256Mi", "1Gi", "4Gi"])}
        if rng.random() < 0.1:
            requests["ephemeral-storage"] = rng.choice(["1Gi", "30Gi"])
        gpus = rng.choice(["1", "2", "4"]) if rng.random() < 0.15 else None
        if rng.random() < 0.1:
            main["resources"] = {"limits": requests}  # the API copies limits to requests
        else:
            main["resources"] = {"requests": requests}
        if gpus is not None:  # extended resources: requests must equal limits
            _exactly(main, GPU, gpus)
        if rng.random() < 0.06:  # hugepages too (with a memory request, as the API wants)
            _exactly(main, HUGEPAGES, rng.choice(["256Mi", "768Mi"]))
        if rng.random() < 0.1:
            spec["containers"].append(_container("second", rng.choice(["200m", "1"]), "128Mi"))
        if rng.random() < 0.15:
            spec["initContainers"] = [_container("init", rng.choice(["1", "3", "6"]), "512Mi")]
        if rng.random() < 0.08:  # before or after the plain init container: both sum apart
            sidecar = _container("sidecar", rng.choice(["100m", "500m"]), "64Mi")
            sidecar["restartPolicy"] = "Always"
            inits = spec.setdefault("initContainers", [])
            inits.insert(rng.choice([0, len(inits)]), sidecar)
        if rng.random() < 0.1:
            spec["runtimeClassName"] = OVERHEAD_CLASS
        if (rng.random() < 0.08 and len(spec["containers"]) == 1 and "initContainers" not in spec
                and HUGEPAGES not in main["resources"]["limits" if "limits" in main["resources"]
                                                       else "requests"]):
            _pod_level(rng, pod)


def _pod_level(rng: random.Random, pod: Manifest) -> None:
    """Pod-level resources: cpu and memory asked by the pod (`spec.resources`), not by its
    container (whose amounts the API would require to fit under the pod's)."""
    amounts = {"cpu": rng.choice(["500m", "2"]), "memory": rng.choice(["512Mi", "2Gi"])}
    pod["spec"]["resources"] = {"requests": amounts, "limits": dict(amounts)}
    for part in main_container(pod)["resources"].values():
        part.pop("cpu", None)
        part.pop("memory", None)


def _exactly(container: Manifest, name: str, amount: str) -> None:
    """Request and limit `amount` of `name` (extended resources and hugepages need both)."""
    container["resources"].setdefault("limits", {})[name] = amount
    container["resources"].setdefault("requests", {})[name] = amount


def _container(name: str, cpu: str, memory: str) -> Manifest:
    return {"name": name, "image": IMAGE,
            "resources": {"requests": {"cpu": cpu, "memory": memory}}}
