"""Slimming Namespaces into the events the planner reads: their names and labels.

Layer: watcher (pure). kube-scheduler's InterPodAffinity matches a term's `namespaceSelector`
against the labels of a pod's Namespace (its namespace lister); the planner does the same from
these events (`services.fit.pod_affinity.in_namespaces`). Nothing else of a Namespace is read.
Never raises, whatever the object (module contract of `slim`).
"""

from __future__ import annotations

from services.contracts.events import NamespaceDeleted, NamespaceObserved
from services.watcher.slim import Obj, cluster_deleted, meta_of, str_map, text_of


def namespace_event(obj: Obj, at_ms: int) -> NamespaceObserved:
    """A Namespace as `NamespaceObserved` (its labels; those not text left out)."""
    meta = meta_of(obj)
    return NamespaceObserved(at_ms=at_ms, uid=text_of(meta, "uid"), name=text_of(meta, "name"),
                             resource_version=text_of(meta, "resourceVersion"),
                             labels=str_map(meta.get("labels")))


def namespace_deleted(obj: Obj, at_ms: int) -> NamespaceDeleted:
    """A deleted Namespace."""
    return cluster_deleted(NamespaceDeleted, obj, at_ms)
