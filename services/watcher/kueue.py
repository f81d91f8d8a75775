"""Kueue's plain pod groups as gangs: a group label and a total count, no PodGroup object.

Layer: watcher (pure, like `slim`, whose contract it keeps: never raises; a malformed count
gets an `invalid_reason`). Kueue groups plain pods with the `kueue.x-k8s.io/pod-group-name`
label (or, from v0.18, the annotation of that key, which it reads first) and the
`kueue.x-k8s.io/pod-group-total-count` annotation and admits the group whole
by removing each member's `kueue.x-k8s.io/admission` scheduling gate (gated pods are not yet
members for the planner). Such a pod joins the group of that name, and each observation of
it also yields a PodGroupObserved of min_member = the total count, so Kueue's group needs
no PodGroup of ours.

Decisions recorded here: the Coscheduling label (and the native `spec.schedulingGroup`)
wins on a pod that has it, and then nothing is synthesized; Kueue's group names share the
`<ns>/<name>` key space with PodGroups, so a name must be used by one only. The synthetic
PodGroup is never deleted (nothing says when the last member went): with no pods it holds
nothing, and the next member observed replaces it. It has no minResources or timeout. Its
creation is that of the member it was seen through, stated only by live members
(`states_group`); when a later one is stated, the planner keeps the earliest creation of a live
member, no earlier than the one it held (`planner.core.apply._creation_kept`), so the gang
keeps its place in the queue, and a group run again under the name later takes its new time.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

import msgspec

from services.contracts.events import KUEUE_GROUP_API, PodGroupObserved, PodObserved
from services.watcher import native, slim

GROUP_LABEL = "kueue.x-k8s.io/pod-group-name"
GROUP_ANNOTATION = GROUP_LABEL
"""The annotation naming the group (the label's key), which Kueue writes instead of the label
from v0.18 (feature gate `WorkloadIdentifierAnnotations`, beta, on by default) and reads first
(`GetPodGroupName`)."""
TOTAL_COUNT_ANNOTATION = "kueue.x-k8s.io/pod-group-total-count"
FAST_ADMISSION_ANNOTATION = "kueue.x-k8s.io/pod-group-fast-admission"
"""`"true"`: Kueue admits the group once its first pod exists and ungates the others as they
come (its StatefulSet integration sets it): no gang to place at once. Kueue up to v0.18.0
took any value (the key present) for it; from v0.18.6 only `"true"`, as here: a hand-written
other value keeps the gang whole (Kueue's own integrations always write `"true"`)."""
API_VERSION = KUEUE_GROUP_API
"""The `api_version` of a synthetic PodGroupObserved: no API serves it (the binder finds no
PodGroup to write status to, and a restarted watcher's seed of PodGroups ignores it)."""


def group_name(obj: Mapping[str, Any]) -> str | None:
    """The pod's Kueue group name: its `GROUP_ANNOTATION`, else its `GROUP_LABEL`, as Kueue's
    `GetPodGroupName` reads them; None when neither is given (or empty)."""
    meta = slim._meta(obj)
    for given in (slim._dict(meta.get("annotations")), slim._dict(meta.get("labels"))):
        name = given.get(GROUP_ANNOTATION)
        if isinstance(name, str) and name:
            return name
    return None


def pod_event(event: PodObserved, group: PodGroupObserved | None) -> PodObserved:
    """`event` in the Kueue group `group` (`podgroup_event` of the same pod), if any."""
    if group is None or event.group_name is not None:
        return event
    return msgspec.structs.replace(event, group_name=group.name)


def podgroup_event(obj: Mapping[str, Any], at_ms: int) -> PodGroupObserved | None:
    """The synthetic PodGroupObserved of a Kueue group member `obj`, or None for another pod.

    Shapes: uid `kueue/<ns>/<name>`, resource_version the total count, created_at_ms the
    pod's creation. Source: Kueue's pod integration requires the count to be a positive
    integer in decimal text; anything else is `invalid_reason` (min_member 1). None for a
    group with fast admission (`FAST_ADMISSION_ANNOTATION`): Kueue admits it with its first
    pod and the controller may make the next only once that one runs (a StatefulSet's
    OrderedReady pods), so a gang of the total count would wait for good.
    """
    meta = slim._meta(obj)
    name = group_name(obj)
    if name is None or slim._dict(meta.get("labels")).get(slim.GROUP_LABEL):
        return None
    if slim._dict(meta.get("annotations")).get(FAST_ADMISSION_ANNOTATION) == "true":
        return None  # admitted pod by pod: each is placed as it comes
    spec = obj.get("spec")
    if isinstance(spec, Mapping) and native.scheduling_group(spec) is not None:
        return None  # in a native group (read or not): not Kueue's gang for us
    given = slim._dict(meta.get("annotations")).get(TOTAL_COUNT_ANNOTATION)
    count = int(given) if isinstance(given, str) and given.isdecimal() and len(given) < 10 else 0
    invalid = None if count >= 1 else (
        f"annotation {TOTAL_COUNT_ANNOTATION} must be an integer >= 1, got {slim._shown(given)}")
    namespace = slim._namespace(meta)
    return PodGroupObserved(
        at_ms=at_ms, uid=f"kueue/{namespace}/{name}", namespace=namespace, name=name,
        resource_version=str(count), created_at_ms=slim.time_ms(meta.get("creationTimestamp"),
                                                                at_ms),
        min_member=max(count, 1), invalid_reason=invalid, api_version=API_VERSION)


def states_group(obj: Mapping[str, Any]) -> bool:
    """Whether an observation of the group member `obj` publishes its group's PodGroupObserved:
    only a live member's (not Succeeded or Failed, not being deleted). A finished member of an
    earlier run under the same name, observed again (a resync, its finalizer removed), would
    state that run's creation for the group and move a re-run ahead of gangs that queued
    before it. Its pod event still carries the group name."""
    status = slim._dict(obj.get("status"))
    return (status.get("phase") not in ("Succeeded", "Failed")
            and slim._meta(obj).get("deletionTimestamp") is None)


CREATION_BUCKET_MS = 60_000
"""Group events of members created within one such minute share a message id."""
GROUPS_REMEMBERED = 65_536
"""Kueue groups whose count `CountChanges` remembers (the least recently published forgotten
first; a forgotten group's next event is stored once more, which is harmless)."""


class CountChanges:
    """Since when each Kueue group has had the total count last published: the watcher's time
    (UTC epoch milliseconds, the event's `at_ms`) of its first group event with that count
    since the count was another. Part of the group's message id, so a count that goes back to
    an earlier one (4, then 3, then 4 again, within JetStream's duplicate window) is stored,
    where the third message, the first's duplicate by id, was dropped and the group kept
    minMember 3. Kueue does not make members agree on the count (it reads the pod it
    reconciles), so members that disagree store a message each time the count flips, the last
    observed member's count last. At most `GROUPS_REMEMBERED` groups (about 200 bytes each).

    Not thread-safe (one watcher's event loop). Raises nothing.
    """

    def __init__(self, capacity: int = GROUPS_REMEMBERED) -> None:
        self._capacity = capacity
        self._last: OrderedDict[str, tuple[str, int]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._last)

    def since(self, group: PodGroupObserved) -> int:
        """When `group`'s count (its `resource_version`) was first published since the count
        changed: `group.at_ms` if it changes now, or one millisecond after the last count's
        time if that is no earlier (a flip back within one millisecond, as in a list, or a
        clock stepped back, still gets an id of its own); remembered as published."""
        last = self._last.pop(group.uid, None)
        if last is None:
            last = (group.resource_version, group.at_ms)
        elif last[0] != group.resource_version:
            last = (group.resource_version, max(group.at_ms, last[1] + 1))
        self._last[group.uid] = last
        if len(self._last) > self._capacity:
            self._last.popitem(last=False)
        return last[1]


def podgroup_message_id(group: PodGroupObserved, since_ms: int = 0) -> str:
    """Message id of a synthetic PodGroupObserved: one per group, count, minute of creation
    (`CREATION_BUCKET_MS`) and time the count began (`since_ms`, `CountChanges.since`). The
    members created in one minute and observed within JetStream's duplicate window store it
    once; a run under the same name created in a later minute is stored whatever its count,
    where it was dropped as the last run's duplicate; so is a count gone back to an earlier
    one. Each watcher (a restarted one, a second one) stores each group once more."""
    bucket = group.created_at_ms // CREATION_BUCKET_MS
    return f"podgroup/{group.uid}/{group.resource_version}/{bucket}/{since_ms}/observed"
