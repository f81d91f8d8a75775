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


def insufficient(resource: str) -> str:
    """The per-node reason for one resource that does not fit (`Too many pods` for pods)."""
    return TOO_MANY_PODS if resource == "pods" else INSUFFICIENT.format(resource=resource)

