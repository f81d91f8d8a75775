"""Readable builders of events for planner tests: `make_pod("p1").requests(cpu_milli=3000)`.

Every builder is immutable-by-copy (each call returns a new builder), so a base can be reused.
uids are derived from namespace and name, so tests can refer to pods by name.
"""

from __future__ import annotations

import copy
from typing import Any, Literal

from services.contracts.events import (
    AttachableVolume,
    ClaimObserved,
    ClaimRef,
    Disk,
    HostPort,
    NodeImage,
    NodeObserved,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    OwnerRef,
    PodAffinityTerm,
    PodClaim,
    PodGroupObserved,
    PodObserved,
    PreferredSchedulingTerm,
    StorageClassObserved,
    Taint,
    Toleration,
    TopologySpreadConstraint,
    VolumeObserved,
    WeightedPodAffinityTerm,
)
from services.watcher import slim

GIB = 2**30
MIB = 2**20


def pod_uid(name: str, namespace: str = "default") -> str:
    """The uid `make_pod(name)` gives its pod."""
    return f"uid-{namespace}-{name}"


class PodBuilder:
    def __init__(self, name: str, namespace: str = "default") -> None:
        self.fields: dict[str, Any] = {
            "uid": pod_uid(name, namespace), "namespace": namespace, "name": name,
            "resource_version": "1", "scheduler_name": "gangsched", "phase": "Pending",
            "created_at_ms": 0, "requests": {"pods": 1},
        }

    def _with(self, **changes: Any) -> PodBuilder:
        other = copy.deepcopy(self)
        other.fields.update(changes)
        return other

    def requests(self, cpu_milli: int | None = None, memory_bytes: int | None = None,
                 **extended: int) -> PodBuilder:
        requests = dict(self.fields["requests"])
        if cpu_milli is not None:
            requests["cpu"] = cpu_milli
        if memory_bytes is not None:
            requests["memory"] = memory_bytes
        requests.update({name.replace("__", "/").replace("_", "-"): value
                         for name, value in extended.items()})
        return self._with(requests=requests)

    def resource(self, name: str, amount: int) -> PodBuilder:
        return self._with(requests={**self.fields["requests"], name: amount})

    def in_group(self, group: str) -> PodBuilder:
        return self._with(group_name=group)

    def scheduler(self, name: str) -> PodBuilder:
        return self._with(scheduler_name=name)

    def priority(self, value: int) -> PodBuilder:
        return self._with(priority=value)

    def created(self, at_ms: int) -> PodBuilder:
        return self._with(created_at_ms=at_ms)

    def never_preempts(self) -> PodBuilder:
        return self._with(preemption_policy="Never")

    def requires(self, *features: str) -> PodBuilder:
        """The node features its scheduling requires (`PodObserved.required_features`)."""
        return self._with(required_features=tuple(sorted(features)))

    def images(self, *names: str, volumes: tuple[str, ...] = ()) -> PodBuilder:
        """Its containers' images, one per container, named as ImageLocality matches them
        (`PodObserved.images`), and its image volumes'."""
        return self._with(images=names, image_volumes=volumes)

    def unrequested(self, cpu_milli: int = 100, memory_bytes: int = 200 * MIB) -> PodBuilder:
        """What NodeResourcesFit's score counts for its missing container requests
        (`PodObserved.nonzero_extra`; defaults: one container requesting nothing)."""
        extra = {name: amount for name, amount in (("cpu", cpu_milli), ("memory", memory_bytes))
                 if amount > 0}
        return self._with(nonzero_extra=extra)

    def on_node(self, node: str, phase: str = "Running") -> PodBuilder:
        return self._with(node_name=node, phase=phase)

    def phase(self, phase: str) -> PodBuilder:
        return self._with(phase=phase)

    def selector(self, **labels: str) -> PodBuilder:
        return self._with(node_selector=labels)

    def affinity(self, *terms: list[tuple[str, str, tuple[str, ...]]]) -> PodBuilder:
        built = tuple(NodeSelectorTerm(tuple(NodeSelectorRequirement(key, op, values)
                                             for key, op, values in term)) for term in terms)
        return self._with(required_affinity=built)

    def match_fields(self, *terms: list[tuple[str, str, tuple[str, ...]]]) -> PodBuilder:
        """Required node-affinity terms of `matchFields` only (`metadata.name`)."""
        built = tuple(NodeSelectorTerm(match_fields=tuple(
            NodeSelectorRequirement(key, op, values) for key, op, values in term))
            for term in terms)
        return self._with(required_affinity=built)

    def prefer_node(self, weight: int, *expressions: tuple[str, str, tuple[str, ...]],
                    fields: tuple[tuple[str, str, tuple[str, ...]], ...] = ()) -> PodBuilder:
        """A preferred node-affinity term of `weight`: `expressions` on labels and `fields` on
        `metadata.name`, ANDed (key, operator, values each); what kube-scheduler cannot parse
        of the terms is named as the watcher names it (`preferred_unparseable`)."""
        term = PreferredSchedulingTerm(weight, NodeSelectorTerm(
            tuple(NodeSelectorRequirement(*e) for e in expressions),
            tuple(NodeSelectorRequirement(*f) for f in fields)))
        terms = (*self.fields.get("preferred_affinity", ()), term)
        return self._with(preferred_affinity=terms,
                          preferred_unparseable=slim.preferred_unparseable(terms))

    def labelled(self, **labels: str) -> PodBuilder:
        return self._with(labels={**self.fields.get("labels", {}), **labels})

    def pod_affinity(self, topology_key: str, namespaces: tuple[str, ...] | None = None,
                     **match_labels: str) -> PodBuilder:
        """A required pod-affinity term on `match_labels` (namespaces: the pod's own)."""
        term = _pod_term(topology_key, namespaces or (self.fields["namespace"],), match_labels)
        return self._with(pod_affinity=(*self.fields.get("pod_affinity", ()), term))

    def anti_affinity(self, topology_key: str, namespaces: tuple[str, ...] | None = None,
                      **match_labels: str) -> PodBuilder:
        """A required pod anti-affinity term on `match_labels` (namespaces: the pod's own)."""
        term = _pod_term(topology_key, namespaces or (self.fields["namespace"],), match_labels)
        return self._with(pod_anti_affinity=(*self.fields.get("pod_anti_affinity", ()), term))

    def prefer_affinity(self, weight: int, topology_key: str,
                        namespaces: tuple[str, ...] | None = None,
                        **match_labels: str) -> PodBuilder:
        """A preferred pod-affinity term of `weight` on `match_labels` (namespaces: own)."""
        term = WeightedPodAffinityTerm(weight, _pod_term(
            topology_key, namespaces or (self.fields["namespace"],), match_labels))
        return self._with(preferred_pod_affinity=(
            *self.fields.get("preferred_pod_affinity", ()), term))

    def prefer_anti_affinity(self, weight: int, topology_key: str,
                             namespaces: tuple[str, ...] | None = None,
                             **match_labels: str) -> PodBuilder:
        """A preferred pod anti-affinity term of `weight` on `match_labels` (namespaces: own)."""
        term = WeightedPodAffinityTerm(weight, _pod_term(
            topology_key, namespaces or (self.fields["namespace"],), match_labels))
        return self._with(preferred_pod_anti_affinity=(
            *self.fields.get("preferred_pod_anti_affinity", ()), term))

    def spread(self, topology_key: str, max_skew: int = 1, when: str = "DoNotSchedule",
               selector: tuple[NodeSelectorRequirement, ...] | Literal[True] | None = True,
               **fields: Any) -> PodBuilder:
        """A topology spread constraint; `selector` True: `matchLabels` of the pod's own labels
        so far, else the requirements given (None: no selector); other fields as
        `TopologySpreadConstraint`'s (min_domains, node_taints_policy, match_label_keys...)."""
        if selector is True:
            selector = tuple(NodeSelectorRequirement(key, "In", (value,))
                             for key, value in sorted(self.fields.get("labels", {}).items()))
        constraint = TopologySpreadConstraint(
            max_skew=max_skew, topology_key=topology_key, when_unsatisfiable=when,
            label_selector=selector, **fields)
        return self._with(topology_spread=(*self.fields.get("topology_spread", ()), constraint))

    def host_port(self, port: int, protocol: str = "TCP", host_ip: str = "0.0.0.0") -> PodBuilder:
        ports = (*self.fields.get("host_ports", ()), HostPort(port, protocol, host_ip))
        return self._with(host_ports=ports)

    def tolerate(self, key: str = "", value: str = "", effect: str = "",
                 operator: str = "Equal") -> PodBuilder:
        toleration = Toleration(key=key, operator=operator, value=value, effect=effect)
        return self._with(tolerations=(*self.fields.get("tolerations", ()), toleration))

    def gated(self) -> PodBuilder:
        return self._with(is_scheduling_gated=True)

    def deleting(self) -> PodBuilder:
        return self._with(is_deleting=True)

    def unsupported(self, field: str) -> PodBuilder:
        return self._with(unsupported=(field,))

    def invalid(self, reason: str) -> PodBuilder:
        return self._with(invalid_reason=reason)

    def owned_by(self, name: str, kind: str = "ReplicaSet") -> PodBuilder:
        return self._with(owner=OwnerRef(kind=kind, name=name, uid=f"uid-{kind}-{name}"))

    def claims(self, *names: str, ephemeral: tuple[str, ...] = ()) -> PodBuilder:
        """Volumes using the claims `names`, then generic ephemeral volumes `ephemeral`."""
        refs = tuple(PodClaim(name) for name in names) + tuple(
            PodClaim(f"{self.fields['name']}-{volume}", is_ephemeral=True) for volume in ephemeral)
        return self._with(volume_claims=refs)

    def migrated(self, *volumes: AttachableVolume) -> PodBuilder:
        """Inline in-tree volumes as kube translates them to CSI (`migrated_volumes`)."""
        return self._with(migrated_volumes=volumes)

    def disks(self, *disks: Disk) -> PodBuilder:
        """Inline disk volumes (`PodObserved.disks`), in spec order."""
        return self._with(disks=disks)

    def build(self, at_ms: int = 0) -> PodObserved:
        return PodObserved(at_ms=at_ms, **self.fields)


def _pod_term(topology_key: str, namespaces: tuple[str, ...],
              match_labels: dict[str, str]) -> PodAffinityTerm:
    selector = tuple(NodeSelectorRequirement(key, "In", (value,))
                     for key, value in sorted(match_labels.items()))
    return PodAffinityTerm(topology_key=topology_key, label_selector=selector,
                           namespaces=namespaces)


class NodeBuilder:
    def __init__(self, name: str) -> None:
        self.fields: dict[str, Any] = {
            "name": name, "uid": f"uid-node-{name}", "resource_version": "1",
            "allocatable": {"cpu": 8000, "memory": 32 * GIB, "pods": 110},
        }

    def _with(self, **changes: Any) -> NodeBuilder:
        other = copy.deepcopy(self)
        other.fields.update(changes)
        return other

    def capacity(self, cpu_milli: int | None = None, memory_bytes: int | None = None,
                 pods: int | None = None, **extended: int) -> NodeBuilder:
        allocatable = dict(self.fields["allocatable"])
        for name, value in (("cpu", cpu_milli), ("memory", memory_bytes), ("pods", pods)):
            if value is not None:
                allocatable[name] = value
        allocatable.update({name.replace("__", "/").replace("_", "-"): value
                            for name, value in extended.items()})
        return self._with(allocatable=allocatable)

    def resource(self, name: str, amount: int) -> NodeBuilder:
        return self._with(allocatable={**self.fields["allocatable"], name: amount})

    def labels(self, **labels: str) -> NodeBuilder:
        return self._with(labels={**self.fields.get("labels", {}), **labels})

    def label(self, key: str, value: str) -> NodeBuilder:
        return self._with(labels={**self.fields.get("labels", {}), key: value})

    def taint(self, key: str, value: str = "", effect: str = "NoSchedule") -> NodeBuilder:
        taint = Taint(key=key, value=value, effect=effect)
        return self._with(taints=(*self.fields.get("taints", ()), taint))

    def unschedulable(self) -> NodeBuilder:
        return self._with(is_unschedulable=True)

    def not_ready(self) -> NodeBuilder:
        return self._with(is_ready=False)

    def holds(self, *images: tuple[tuple[str, ...], int]) -> NodeBuilder:
        """The images its kubelet reports: (names, size in bytes) each."""
        return self._with(images=tuple(NodeImage(names=names, size_bytes=size)
                                       for names, size in images))

    def declares(self, *features: str) -> NodeBuilder:
        """`status.declaredFeatures` (sorted, as the API server keeps them)."""
        return self._with(declared_features=tuple(sorted(features)))

    def build(self, at_ms: int = 0) -> NodeObserved:
        return NodeObserved(at_ms=at_ms, **self.fields)


class PodGroupBuilder:
    def __init__(self, name: str, min_member: int, namespace: str = "default") -> None:
        self.fields: dict[str, Any] = {
            "uid": f"uid-pg-{namespace}-{name}", "namespace": namespace, "name": name,
            "resource_version": "1", "created_at_ms": 0, "min_member": min_member,
        }

    def _with(self, **changes: Any) -> PodGroupBuilder:
        other = copy.deepcopy(self)
        other.fields.update(changes)
        return other

    def min_resources(self, **amounts: int) -> PodGroupBuilder:
        return self._with(min_resources={name.replace("_", "-"): value
                                         for name, value in amounts.items()})

    def timeout(self, seconds: int) -> PodGroupBuilder:
        return self._with(schedule_timeout_seconds=seconds)

    def uid(self, uid: str) -> PodGroupBuilder:
        """Another uid: a PodGroup deleted and created again under the same name."""
        return self._with(uid=uid)

    def version(self, resource_version: str) -> PodGroupBuilder:
        return self._with(resource_version=resource_version)

    def created(self, at_ms: int) -> PodGroupBuilder:
        return self._with(created_at_ms=at_ms)

    def invalid(self, reason: str) -> PodGroupBuilder:
        return self._with(invalid_reason=reason)

    def api_version(self, api_version: str) -> PodGroupBuilder:
        """The PodGroup's API (`scheduling.x-k8s.io/v1alpha1`, `scheduling.k8s.io/v1alpha2`)."""
        return self._with(api_version=api_version)

    def topology(self, key: str) -> PodGroupBuilder:
        """A native PodGroup whose members must share one value of node label `key`
        (`spec.schedulingConstraints.topology[0].key`)."""
        return self._with(api_version="scheduling.k8s.io/v1alpha2", topology_key=key,
                          scheduling_constraints=True)

    def scheduling_constraints(self) -> PodGroupBuilder:
        """A native PodGroup whose `spec.schedulingConstraints` is set with no topology."""
        return self._with(api_version="scheduling.k8s.io/v1alpha2", scheduling_constraints=True)

    def build(self, at_ms: int = 0) -> PodGroupObserved:
        return PodGroupObserved(at_ms=at_ms, **self.fields)


def make_pod(name: str, namespace: str = "default") -> PodBuilder:
    return PodBuilder(name, namespace)


def make_node(name: str) -> NodeBuilder:
    return NodeBuilder(name)


def make_podgroup(name: str, min_member: int, namespace: str = "default") -> PodGroupBuilder:
    return PodGroupBuilder(name, min_member, namespace)


def make_claim(name: str, namespace: str = "default", *, volume: str = "", bound: bool = True,
               storage_class: str = "", modes: tuple[str, ...] = ("ReadWriteOnce",),
               gib: int = 1, **fields: Any) -> ClaimObserved:
    """A PersistentVolumeClaim (bound to `volume` when given and `bound`)."""
    fields.setdefault("phase", "Bound" if volume and bound else "Pending")
    return ClaimObserved(at_ms=0, uid=f"uid-claim-{namespace}-{name}", namespace=namespace,
                         name=name, resource_version="1", storage_class=storage_class,
                         volume_name=volume, is_bind_completed=bool(volume) and bound,
                         access_modes=modes, request_bytes=gib * GIB, **fields)


def make_volume(name: str, *, hosts: tuple[str, ...] = (), storage_class: str = "",
                gib: int = 1, claim: tuple[str, str] | None = None,
                modes: tuple[str, ...] = ("ReadWriteOnce",), **fields: Any) -> VolumeObserved:
    """A PersistentVolume; `hosts`: node affinity to those hostnames; `claim`: (ns, name)."""
    affinity = None
    if hosts:
        affinity = (NodeSelectorTerm((NodeSelectorRequirement(
            "kubernetes.io/hostname", "In", hosts),)),)
    fields.setdefault("phase", "Bound" if claim else "Available")
    return VolumeObserved(at_ms=0, uid=f"uid-pv-{name}", name=name, resource_version="1",
                          storage_class=storage_class, access_modes=modes,
                          capacity_bytes=gib * GIB, node_affinity=affinity,
                          claim=ClaimRef(*claim) if claim else None, **fields)


def make_storage_class(name: str, mode: str = "WaitForFirstConsumer",
                       provisioner: str = "kubernetes.io/no-provisioner",
                       zones: tuple[str, ...] = ()) -> StorageClassObserved:
    """A StorageClass; `zones`: allowedTopologies on topology.kubernetes.io/zone."""
    topologies = (NodeSelectorTerm((NodeSelectorRequirement(
        "topology.kubernetes.io/zone", "In", zones),)),) if zones else ()
    return StorageClassObserved(at_ms=0, uid=f"uid-sc-{name}", name=name, resource_version="1",
                                provisioner=provisioner, binding_mode=mode,
                                allowed_topologies=topologies)
