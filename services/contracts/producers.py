"""Which service produces each event type, and on which subject kind (`subjects`).

Layer: contracts. Pure; never does I/O.

NATS permissions bind a user to subjects, never to payload types: the chart lets the watcher
publish only on `<prefix>.events.<kind>.>` for its kinds (node, pod, podgroup, clock, pvc, pv,
storageclass, pdb, namespace, csinode, attachment) and the binder only on
`<prefix>.events.outcome.>`, but either could put any JSON type there.
A consumer that trusts an event only on its producer's subject kind (`producers.is_expected_on`)
is bound to the permissions: a forged `NodeObserved` on an outcome subject came from a binder
user, not from the watcher.
"""

from __future__ import annotations

from collections.abc import Mapping

from services.contracts.events import (
    AttachmentDeleted,
    AttachmentObserved,
    ClaimDeleted,
    ClaimObserved,
    ClockTicked,
    CSINodeDeleted,
    CSINodeObserved,
    DisruptionBudgetDeleted,
    DisruptionBudgetObserved,
    Event,
    EventKind,
    GroupBound,
    GroupRolledBack,
    MemberBindFailed,
    MemberBound,
    NamespaceDeleted,
    NamespaceObserved,
    NodeDeleted,
    NodeObserved,
    PodDeleted,
    PodGroupDeleted,
    PodGroupObserved,
    PodObserved,
    StorageClassDeleted,
    StorageClassObserved,
    VolumeDeleted,
    VolumeObserved,
)

WATCHER = "watcher"
BINDER = "binder"

KIND_OF_TYPE: Mapping[type[Event], EventKind] = {
    NodeObserved: "node",
    NodeDeleted: "node",
    PodObserved: "pod",
    PodDeleted: "pod",
    PodGroupObserved: "podgroup",
    PodGroupDeleted: "podgroup",
    ClockTicked: "clock",
    MemberBound: "outcome",
    MemberBindFailed: "outcome",
    GroupBound: "outcome",
    GroupRolledBack: "outcome",
    ClaimObserved: "pvc",
    ClaimDeleted: "pvc",
    VolumeObserved: "pv",
    VolumeDeleted: "pv",
    StorageClassObserved: "storageclass",
    StorageClassDeleted: "storageclass",
    DisruptionBudgetObserved: "pdb",
    DisruptionBudgetDeleted: "pdb",
    NamespaceObserved: "namespace",
    NamespaceDeleted: "namespace",
    CSINodeObserved: "csinode",
    CSINodeDeleted: "csinode",
    AttachmentObserved: "attachment",
    AttachmentDeleted: "attachment",
}
"""The one subject kind each event type is published on (`services.watcher.messages`,
`services.binder.outcomes`)."""

PRODUCER_OF_KIND: Mapping[EventKind, str] = {
    "node": WATCHER,
    "pod": WATCHER,
    "podgroup": WATCHER,
    "clock": WATCHER,
    "outcome": BINDER,
    "pvc": WATCHER,
    "pv": WATCHER,
    "storageclass": WATCHER,
    "pdb": WATCHER,
    "namespace": WATCHER,
    "csinode": WATCHER,
    "attachment": WATCHER,
}
"""The service that publishes on each subject kind (the chart's NATS users)."""


def kind_of(event: Event) -> EventKind:
    """The subject kind `event` is published on."""
    return KIND_OF_TYPE[type(event)]


def producer_of(event: Event) -> str:
    """The service that publishes `event`: `watcher` or `binder`."""
    return PRODUCER_OF_KIND[kind_of(event)]


def is_expected_on(event: Event, subject_kind: str | None) -> bool:
    """Whether `event` arrived on the subject kind its producer publishes it on."""
    return subject_kind == kind_of(event)
