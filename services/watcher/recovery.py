"""What the log already says exists: the seed that lets a restarted watcher miss no delete.

Layer: watcher shell. Reads the last event of every node, pod, PodGroup, claim, volume,
storage class, PodDisruptionBudget, Namespace, CSINode and VolumeAttachment subject from the
EVENTS stream
(`services.bus.latest.latest`: a short-lived last-per-subject reader named
`watcher-recovery-<random>`). An object whose last event is an observation is known to the
log; if the first list after a restart does not contain it, it vanished while no watcher ran,
and a synthetic delete is published. Never writes to the stream.
"""

from __future__ import annotations

import logging
import time

from services.bus import latest
from services.bus.connection import JetStream
from services.contracts import codec, subjects
from services.contracts.events import (
    AttachmentDeleted,
    AttachmentObserved,
    ClaimDeleted,
    ClaimObserved,
    CSINodeDeleted,
    CSINodeObserved,
    DisruptionBudgetDeleted,
    DisruptionBudgetObserved,
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
from services.kube.listwatch import Known

log = logging.getLogger(__name__)

FETCH_BATCH = 1000
FETCH_TIMEOUT_SECONDS = 5.0
INACTIVE_SECONDS = 60.0
OWNER = "watcher-recovery"


def fold(known: dict[str, Known], data: bytes, *, is_stale: bool = False,
         api_version: str | None = None) -> None:
    """Apply one event payload to `known` (uid → Known): observations set, deletes remove.

    Other kinds and undecodable payloads change nothing. `is_stale`: remember the object with
    an empty resourceVersion (it is listed as changed, so published again). So is a pod whose
    event names constraints the watcher that wrote it did not read (`unsupported`): this
    watcher may read them now (a non-empty `namespaceSelector` since core revision 40), and
    the pod, Pending for good under the old reading, must not wait for its next change or the
    resync to be read anew; a pod whose constraint is still unsupported is published again,
    the same, once per watcher start; a PodGroup alike (a native PodGroup's topology
    constraint: the field is immutable, so the PodGroup itself would never change). `api_version`:
    a PodGroupObserved of another PodGroup
    API changes nothing (both publish on `podgroup`).
    """
    try:
        event = codec.decode_event(data)
    except codec.PoisonedMessage:
        return
    if (isinstance(event, PodGroupObserved) and api_version is not None
            and event.api_version != api_version):
        return
    if isinstance(event, PodObserved | PodGroupObserved | ClaimObserved
                  | DisruptionBudgetObserved):
        version = ("" if is_stale or (isinstance(event, PodObserved | PodGroupObserved)
                                      and event.unsupported)
                   else event.resource_version)
        known[event.uid] = Known(event.name, event.namespace, version)
    elif isinstance(event, NodeObserved | VolumeObserved | StorageClassObserved
                    | NamespaceObserved | CSINodeObserved | AttachmentObserved):
        known[event.uid] = Known(event.name, "", "" if is_stale else event.resource_version)
    elif isinstance(event, NodeDeleted | PodDeleted | PodGroupDeleted | ClaimDeleted
                    | VolumeDeleted | StorageClassDeleted | DisruptionBudgetDeleted
                    | NamespaceDeleted | CSINodeDeleted | AttachmentDeleted):
        known.pop(event.uid, None)


async def last_known(js: JetStream, prefix: str, kind: str,
                     stale_after_seconds: float | None = None, *,
                     api_version: str | None = None) -> dict[str, Known]:
    """The objects of `kind` (node, pod, podgroup, pvc, pv, storageclass, pdb, namespace,
    csinode, attachment) whose last event in EVENTS observes them.

    Shapes: uid → Known (name, namespace, resourceVersion of the last observation). An object
    whose last event was stored more than `stale_after_seconds` ago gets an empty
    resourceVersion, so the first list publishes it again (the resync guarantee holds across
    watcher restarts: its event would otherwise expire with the stream's retention).
    Raises:
        NotFound, BusUnavailable, BusRefused (`services.bus.errors`): the stream cannot be
            read (the caller's supervisor retries).
    """
    stale_before = (time.time() - stale_after_seconds
                    if stale_after_seconds is not None else None)
    known: dict[str, Known] = {}
    async for message in latest.latest(
            js, subjects.stream_name(prefix, "EVENTS"), f"{prefix}.events.{kind}.>",
            owner=OWNER, inactive_threshold_seconds=INACTIVE_SECONDS, batch=FETCH_BATCH,
            timeout_seconds=FETCH_TIMEOUT_SECONDS):
        is_stale = (stale_before is not None and message.stored_at_ms > 0
                    and message.stored_at_ms / 1000 < stale_before)
        fold(known, message.data, is_stale=is_stale, api_version=api_version)
    log.info("log knows %d %s objects", len(known), kind)
    return known
