"""Constraint families: each module shapes the generated nodes and pods for one kind of rule.

A family is an object with a `name`, and three hooks the generator calls with a random
generator of its own (seeded by run seed, family name and item, so adding a family does not
change what the others generate):

- `objects(rng, plan)`: cluster objects to create before anything else (RuntimeClasses,
  StorageClasses, PersistentVolumes and claims, ...), knowing the nodes (`plan.objects` holds
  the objects of the families before it);
- `shape_node(rng, node)`: add labels, taints, allocatable to one Node manifest;
- `shape_pod(rng, pod, plan)`: add constraints to one Pod manifest, knowing the nodes.

To add one (PodTopologySpread, volumes, ...): write a module here with a class of these
hooks and add an instance to `all_families`. A family that creates pods the default scheduler
does not schedule (bound by `spec.nodeName`) sets `PREBOUND_LABEL` on them, and
`FINISHED_LABEL` too if the run is to mark them Succeeded once created.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Protocol

Manifest = dict[str, Any]

ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"
RACK = "diff.gangsched.io/rack"
PREBOUND_LABEL = "diff.gangsched.io/prebound"
FINISHED_LABEL = "diff.gangsched.io/finished"
APP_LABELS = ("web", "db", "cache", "batch", "ml")
TIERS = ("front", "back")
TRACK = "track"
TRACKS = ("stable", "canary")


@dataclass
class ClusterPlan:
    """What the pods' families may refer to: the Node manifests, namespaces (and their labels,
    by name), other objects."""

    nodes: list[Manifest]
    namespaces: tuple[str, ...]
    objects: list[Manifest] = field(default_factory=list)
    namespace_labels: dict[str, dict[str, str]] = field(default_factory=dict)

    def names(self) -> list[str]:
        return [node["metadata"]["name"] for node in self.nodes]

    def label_values(self, key: str) -> list[str]:
        """Every value of node label `key`, sorted, without repeats."""
        return sorted({node["metadata"]["labels"][key] for node in self.nodes
                       if key in node["metadata"]["labels"]})

    def taints(self) -> list[Manifest]:
        """Every taint of every node, in node order (repeats kept)."""
        return [taint for node in self.nodes for taint in node["spec"].get("taints", [])]


class Family(Protocol):
    """One constraint family (module docstring)."""

    name: str

    def objects(self, rng: random.Random, plan: ClusterPlan) -> list[Manifest]: ...

    def shape_node(self, rng: random.Random, node: Manifest) -> None: ...

    def shape_pod(self, rng: random.Random, pod: Manifest, plan: ClusterPlan) -> None: ...


class Base:
    """No-op hooks, to inherit from."""

    name = "base"

    def objects(self, rng: random.Random, plan: ClusterPlan) -> list[Manifest]:
        return []

    def shape_node(self, rng: random.Random, node: Manifest) -> None:
        return None

    def shape_pod(self, rng: random.Random, pod: Manifest, plan: ClusterPlan) -> None:
        return None


def affinity(pod: Manifest) -> Manifest:
    """The pod's `spec.affinity`, created if absent (families share it)."""
    result: Manifest = pod["spec"].setdefault("affinity", {})
    return result


def apps_and_tier(rng: random.Random) -> Manifest:
    """A label selector `app In (two apps), tier In|NotIn (one tier)`: some pods of two apps."""
    return {"matchExpressions": [
        {"key": "app", "operator": "In", "values": rng.sample(APP_LABELS, 2)},
        {"key": "tier", "operator": rng.choice(["In", "NotIn"]), "values": [rng.choice(TIERS)]}]}


def main_container(pod: Manifest) -> Manifest:
    """The pod's first container."""
    container: Manifest = pod["spec"]["containers"][0]
    return container


def calm_nodes(plan: ClusterPlan) -> list[str]:
    """Nodes without NoExecute taints: a pod bound there by name is never evicted."""
    return [node["metadata"]["name"] for node in plan.nodes
            if not any(taint["effect"] == "NoExecute" for taint in node["spec"].get("taints", []))]


def all_families() -> list[Family]:
    """Every family, in the order they shape a pod (those binding pods by name last: they see
    the final pod)."""
    from tests.e2e.differential.families import (
        declared_features,
        disks,
        finished,
        host_ports,
        node_name,
        node_selection,
        pod_affinity,
        preferred_node_affinity,
        preferred_pod_affinity,
        requests,
        tolerations,
        topology_spread,
        volume_limits,
        volumes,
    )
    return [requests.Requests(), node_selection.NodeSelection(), tolerations.Tolerations(),
            host_ports.HostPorts(), pod_affinity.PodAffinity(),
            preferred_pod_affinity.PreferredPodAffinity(),
            preferred_node_affinity.PreferredNodeAffinity(),
            topology_spread.TopologySpread(), volumes.Volumes(), disks.Disks(),
            volume_limits.VolumeLimits(), declared_features.DeclaredFeatures(),
            node_name.Prebound(),
            finished.Finished()]
