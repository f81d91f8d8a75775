"""From observed changes to NATS messages: subject, JSON payload and de-duplication id.

Layer: watcher, pure (time is passed in; pod specs are read through `_SPECS`, a memo that
changes no result: `spec_memory`; the watcher's memory of what it published, which leaves out
repeats, is passed in: `repeats`). Message ids are `<kind>/<uid>/<resourceVersion>/<type>`
(type `observed` or `deleted`), so the same change seen by two watchers, or again after a
restart, is stored once by JetStream; clock ticks are `clock/<whole second>`. A Kueue group's
synthetic PodGroup is stored once per count by each watcher (`kueue.podgroup_message_id`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from services.contracts import codec, subjects
from services.contracts.events import ClockTicked, Event, PodObserved
from services.kube.listwatch import Change
from services.watcher import (
    attachments,
    budgets,
    kueue,
    namespaces,
    native,
    slim,
    spec_memory,
    volumes,
)
from services.watcher.repeats import Repeats

PublishItem = tuple[str, bytes, str]
"""`(subject, data, msg_id)`, as `Publisher.publish_many` takes them."""

CLOCK_KIND = "clock"
CLUSTER_KINDS = ("node", "pv", "storageclass", "namespace", "csinode", "attachment")
"""Kinds of cluster-scoped objects: their subjects carry `_` as namespace."""
CLOCK_NAME = "tick"

Slimmer = Callable[[Mapping[str, Any], int], Event]

_SPECS = spec_memory.SpecMemory()
"""The readings of the pod specs watched (objects decoded from JSON: `SpecMemory`)."""


def _pod_event(obj: Mapping[str, Any], at_ms: int) -> Event:
    return slim.pod_event(obj, at_ms, _SPECS)


def _native_pod_event(obj: Mapping[str, Any], at_ms: int) -> Event:
    return native.pod_event(obj, at_ms, _SPECS)


_SLIMMERS: dict[tuple[str, str], Slimmer] = {
    ("node", "observed"): slim.node_event,
    ("node", "deleted"): slim.node_deleted,
    ("pod", "observed"): _pod_event,
    ("pod", "deleted"): slim.pod_deleted,
    ("podgroup", "observed"): slim.podgroup_event,
    ("podgroup", "deleted"): slim.podgroup_deleted,
    ("pvc", "observed"): volumes.claim_event,
    ("pvc", "deleted"): volumes.claim_deleted,
    ("pv", "observed"): volumes.volume_event,
    ("pv", "deleted"): volumes.volume_deleted,
    ("storageclass", "observed"): volumes.storage_class_event,
    ("storageclass", "deleted"): volumes.storage_class_deleted,
    ("pdb", "observed"): budgets.budget_event,
    ("pdb", "deleted"): budgets.budget_deleted,
    ("namespace", "observed"): namespaces.namespace_event,
    ("namespace", "deleted"): namespaces.namespace_deleted,
    ("csinode", "observed"): attachments.csinode_event,
    ("csinode", "deleted"): attachments.csinode_deleted,
    ("attachment", "observed"): attachments.attachment_event,
    ("attachment", "deleted"): attachments.attachment_deleted,
}

_PROBLEMS: dict[str, Callable[[Mapping[str, Any]], str | None]] = {
    "pdb": budgets.budget_problem,
}
"""Kinds whose malformed objects are published read as kube-scheduler reads them, with
nothing in the event to say so: what was malformed, for a log line."""

_NATIVE_SLIMMERS: dict[tuple[str, str], Slimmer] = {
    ("pod", "observed"): _native_pod_event,
    ("podgroup", "observed"): native.podgroup_event,
}
"""Where the native PodGroup API differs: its PodGroups, and pods read with their
`spec.schedulingGroup` (deletes carry only identity, the same for both APIs)."""


def change_message(
    prefix: str, kind: str, change: Change, at_ms: int, *, is_native: bool = False
) -> PublishItem:
    """The message for one change of a `kind` object (node, pod, podgroup, pvc, pv,
    storageclass, pdb, namespace, csinode, attachment) observed at `at_ms`.

    `is_native`: slim as the native PodGroup API (`services.watcher.native`) where it differs.
    Units: `at_ms` UTC epoch milliseconds.
    Raises:
        KeyError: unknown kind (a bug).
    """
    return _message(prefix, kind, change, _slim(kind, change, at_ms, is_native))


def change_messages(
    prefix: str, kind: str, change: Change, at_ms: int, *, is_native: bool = False,
    repeats: Repeats | None = None, counts: kueue.CountChanges | None = None,
) -> list[PublishItem]:
    """`change_message`, preceded, for an observed live member of a Kueue pod group, by that
    group's synthetic PodGroupObserved, the pod put in the group (`services.watcher.kueue`).

    `repeats` (the watcher's memory of what it published) leaves out the change's own event
    when it repeats the object's last one (`Repeats.is_repeat`), and forgets a deleted object.
    `counts` (the watcher's memory of Kueue group counts) dates the group's message id
    (`kueue.podgroup_message_id`); without it, every count's id has the same date.
    Raises:
        KeyError: unknown kind (a bug).
    """
    event = _slim(kind, change, at_ms, is_native)
    group = (kueue.podgroup_event(change.obj, at_ms)
             if kind == "pod" and change.type == "observed" else None)
    items: list[PublishItem] = []
    if group is not None and isinstance(event, PodObserved):
        if kueue.states_group(change.obj):
            subject = subjects.events_subject(prefix, "podgroup", group.namespace, group.name)
            since_ms = 0 if counts is None else counts.since(group)
            items.append((subject, codec.encode(group),
                          kueue.podgroup_message_id(group, since_ms)))
        event = kueue.pod_event(event, group)
    if repeats is not None and change.type == "deleted":
        repeats.forget(kind, str(_metadata(change).get("uid", "")))
    if repeats is None or not repeats.is_repeat(kind, event, is_watched=change.is_watched):
        items.append(_message(prefix, kind, change, event))
    return items


def problem(kind: str, change: Change) -> str | None:
    """What was malformed in an observed `kind` object and read as absent in its event (the
    field named), or None: well-formed, deleted, or a kind whose event says it itself
    (`invalid_reason`)."""
    check = _PROBLEMS.get(kind)
    return check(change.obj) if check is not None and change.type == "observed" else None


def _slim(kind: str, change: Change, at_ms: int, is_native: bool) -> Event:
    slimmer = (_NATIVE_SLIMMERS.get((kind, change.type)) if is_native else None
               ) or _SLIMMERS[(kind, change.type)]
    return slimmer(change.obj, at_ms)


def _metadata(change: Change) -> Mapping[str, Any]:
    meta = change.obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _message(prefix: str, kind: str, change: Change, event: Event) -> PublishItem:
    meta = _metadata(change)
    namespace = str(meta.get("namespace") or "") if kind not in CLUSTER_KINDS else ""
    subject = subjects.events_subject(prefix, kind, namespace, str(meta.get("name") or ""))
    msg_id = f"{kind}/{meta.get('uid', '')}/{meta.get('resourceVersion', '')}/{change.type}"
    return subject, codec.encode(event), msg_id


def tick_message(prefix: str, at_ms: int) -> PublishItem:
    """The ClockTicked message for `at_ms` (one per second at most, across watchers)."""
    subject = subjects.events_subject(prefix, CLOCK_KIND, "", CLOCK_NAME)
    return subject, codec.encode(ClockTicked(at_ms=at_ms)), f"clock/{at_ms // 1000}"
