"""The per-node reasons of the fit filters, worded as kube-scheduler's plugins word them.

Layer: fit (pure). `services.planner.core.reasons` builds every group-level message from
these (`0/3 nodes are available: 1 Insufficient cpu, ...`); the binder uses them in its
refusals. Never builds text anywhere else.
"""

from __future__ import annotations

INSUFFICIENT = "Insufficient {resource}"
TOO_MANY_PODS = "Too many pods"
NODE_UNSCHEDULABLE = "node(s) were unschedulable"
NODE_NOT_READY = "node(s) were not ready"
NODE_NAME_MISMATCH = "node(s) didn't match the requested node name"
UNTOLERATED_TAINT = "node(s) had untolerated taint(s)"
"""TaintToleration's Filter reason (v1.36) for a node with any NoSchedule/NoExecute taint the
pod does not tolerate, whichever taint: the taint is not named (gangsched named it as older
releases did, `{key: value}`, until the differential test against kube-scheduler showed the
counts split by taint)."""
NODE_AFFINITY_MISMATCH = "node(s) didn't match Pod's node affinity/selector"
NODE_AFFINITY_PREFILTER = "node(s) didn't satisfy plugin(s) [NodeAffinity]"
"""A node outside the names the pod's required node affinity pins it to (`matchFields`
`metadata.name` In, in every term): kube-scheduler's NodeAffinity PreFilter leaves it out and
the framework gives it this status, before any filter runs (`findNodesThatFitPod`)."""
NODE_AFFINITY_CONFLICT = "pod affinity terms conflict"
"""NodeAffinity's PreFilter rejection when every term pins the pod to node names and the names
within each term (ANDed) leave none: a PreFilter message, worded without a node count."""
PREFILTER_REASONS = frozenset({NODE_AFFINITY_CONFLICT})
"""Per-node reasons that are a PreFilter's rejection of the pod on every node: the group
message then gives that reason alone and without a count, as `framework.FitError`."""
NODE_PORTS = "node(s) didn't have free ports for the requested pod ports"
POD_AFFINITY_MISMATCH = "node(s) didn't match pod affinity rules"
POD_ANTI_AFFINITY_MISMATCH = "node(s) didn't match pod anti-affinity rules"
EXISTING_ANTI_AFFINITY_MISMATCH = "node(s) didn't satisfy existing pods anti-affinity rules"
SPREAD_CONSTRAINTS_MISMATCH = "node(s) didn't match pod topology spread constraints"
SPREAD_MISSING_LABEL = SPREAD_CONSTRAINTS_MISMATCH + " (missing required label)"
NODE_DECLARED_FEATURES = "node(s) didn't match Pod's required features"
"""NodeDeclaredFeatures' Filter reason (v1.36, `errReasonUnsatisfiedRequirements` in
`nodedeclaredfeatures.go`) for a node that does not declare every feature the pod requires;
UnschedulableAndUnresolvable, and the last filter kube-scheduler runs, so a node another
filter refuses gives that filter's reason instead."""


def insufficient(resource: str) -> str:
    """The per-node reason for one resource that does not fit (`Too many pods` for pods)."""
    return TOO_MANY_PODS if resource == "pods" else INSUFFICIENT.format(resource=resource)


# Volumes (VolumeRestrictions, VolumeBinding, VolumeZone): per-node reasons.
DISK_CONFLICT = "node(s) had no available disk"
"""VolumeRestrictions' Filter reason for a node where a pod mounts one of the pod's inline
disks so that they conflict (`services.fit.disks`)."""
MAX_VOLUME_COUNT = "node(s) exceed max volume count"
"""NodeVolumeLimits' Filter reason for a node where the pod's volumes would exceed a CSI
driver's attach limit (`services.fit.volume_limits`)."""
READ_WRITE_ONCE_POD_CONFLICT = ("node(s) unavailable due to PersistentVolumeClaim with "
                                "ReadWriteOncePod access mode already in-use by another pod")
VOLUME_NODE_AFFINITY_CONFLICT = "node(s) didn't match PersistentVolume's node affinity"
VOLUME_BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
BOUND_VOLUME_MISSING = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
VOLUME_ZONE_CONFLICT = "node(s) had no available volume zone"
# Volumes: pod-level (PreFilter) messages.
UNBOUND_IMMEDIATE_CLAIMS = "pod has unbound immediate PersistentVolumeClaims"
CLAIM_WITHOUT_VOLUME_OR_CLASS = "PersistentVolumeClaim had no pv name and storageClass name"


def claim_not_found(name: str) -> str:
    """A claim the pod names does not exist (the API's NotFound wording)."""
    return f'persistentvolumeclaim "{name}" not found'


def volume_not_found(name: str) -> str:
    """The volume a claim is bound to does not exist (VolumeZone's PreFilter)."""
    return f'persistentvolume "{name}" not found'


def storage_class_not_found(name: str) -> str:
    """An unbound claim's class does not exist (VolumeZone's PreFilter)."""
    return f'storageclass.storage.k8s.io "{name}" not found'


def ephemeral_claim_missing(name: str) -> str:
    """A generic ephemeral volume whose claim the ephemeral volume controller has not created."""
    return f'waiting for ephemeral volume controller to create the persistentvolumeclaim "{name}"'


def claim_lost(name: str, volume: str) -> str:
    """A claim whose volume is gone (phase Lost)."""
    return f'persistentvolumeclaim "{name}" bound to non-existent persistentvolume "{volume}"'


def claim_deleting(name: str) -> str:
    """A claim being deleted."""
    return f'persistentvolumeclaim "{name}" is being deleted'


def ephemeral_not_owned(namespace: str, claim: str, pod: str) -> str:
    """An ephemeral volume's claim that another pod controls (`ephemeral.VolumeIsForPod`)."""
    return f"PVC {namespace}/{claim} was not created for pod {namespace}/{pod} (pod is not owner)"


def claim_invalid(name: str, reason: str) -> str:
    """A claim gangsched could not read (not a kube-scheduler message: it reads typed objects)."""
    return f'persistentvolumeclaim "{name}" is invalid: {reason}'
