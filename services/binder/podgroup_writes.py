"""PodGroup status writes and event subjects with the fewest API requests, never on the wrong uid.

Layer: binder shell. kube-scheduler writes PodGroup status from its informer copy, one PATCH and
no read (`util.PatchPodGroupStatus`); the binder's copies are the PodGroup as its own last write
(or read) returned it, and the uid and API the bus view (`view.ClusterView`) shows. A status is
written, in order of preference:

1. held copy: one merge patch with the copy's `resourceVersion` as precondition (the API server
   refuses it with a conflict if anyone changed or recreated the PodGroup since); when the copy
   says the status is current, that is confirmed by a read (another binder may have written
   since), as nothing then refuses a wrong guess;
2. uid known from the view, no copy: one JSON patch testing the uid, the generation and that
   the PodGroup has no status yet (a new PodGroup), setting the whole status;
3. else, or when 1 or 2 was refused: read the PodGroup, merge, patch with the read version
   (`podgroups.update_status`), refusing a PodGroup whose uid is not the view's.

The view is trusted only once it has applied the decision's plan point (so its uid is the one
the planner derived the decision from). A metadata.uid in a merge patch would be no guard: a
custom resource's status strategy copies the stored metadata over the patch.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from services.binder.ports import Kube
from services.binder.view import ClusterView
from services.contracts.ids import GroupKey, split_key
from services.kube import errors
from services.kube.resources import PODGROUP_API_VERSION, metadata

REMEMBERED_GROUPS = 10_000
"""PodGroup copies held at most (the least recently written forgotten first)."""
VIEW_WAIT_SECONDS = 1.0
"""How long a write waits for the bus view to reach its decision's plan point."""
NEW_GENERATION = 1
"""A PodGroup's `metadata.generation` until its spec is first changed."""

StatusFor = Callable[[dict[str, Any]], Awaitable[dict[str, Any] | None]]
"""A PodGroup (API JSON) → the status merge patch that makes it current, or None."""
Send = Callable[[dict[str, Any], dict[str, Any]], Awaitable[dict[str, Any]]]
"""(PodGroup as assumed, status) → the PodGroup as stored: one precondition write."""


class ViewAt(Protocol):
    """The bus view once it has applied a plan point (`view_feed.ViewFeed`)."""

    view: ClusterView

    async def caught_up(self, seq: int, timeout_seconds: float) -> bool: ...


class PodGroupWrites:
    """Writes PodGroup status (module docstring) and names PodGroups for events.

    `kube` makes the status requests (`about` reads through the API it is given); `feed` is
    the bus view. Errors are `KubeError`s from those APIs (none is raised for a refused
    precondition: that falls back to a read).
    """

    def __init__(self, kube: Kube, feed: ViewAt, remembered: int = REMEMBERED_GROUPS) -> None:
        self._kube = kube
        self._feed = feed
        self._held: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self._remembered = remembered

    async def write(self, group: str, plan_seq: int, status_for: StatusFor) -> bool:
        """Make the PodGroup `group` (a `namespace/name` key) current by `status_for`; False
        when it already was. `plan_seq`: the decision's plan point.

        Raises:
            KubeNotFound: no such PodGroup. KubeConflict: another uid holds the name, or
            writers kept conflicting. Other KubeError subclasses.
        """
        namespace, name = split_key(GroupKey(group))
        seen = await self._seen(namespace, name, plan_seq)
        held = self._held.get(group)
        done: bool | None = None
        if held is not None and (seen is None or metadata(held).get("uid") == seen[0]):
            # changed since this process wrote it: refused, read it below
            done = await self._attempt(group, held, status_for,
                                       self._kube.patch_podgroup_status_at, errors.KubeConflict,
                                       is_sure=False)
        elif seen is not None:
            assumed = {"apiVersion": seen[1], "metadata": {
                "namespace": namespace, "name": name, "uid": seen[0], "generation": NEW_GENERATION}}
            # not new (it has a status, or a newer spec) or another uid: refused, read it below
            done = await self._attempt(group, assumed, status_for,
                                       self._kube.first_podgroup_status, errors.KubeInvalid,
                                       is_sure=True)
        if done is not None:
            return done
        written = await self._kube.update_podgroup_status(
            namespace, name, status_for, seen[0] if seen is not None else None)
        self._hold(group, written.podgroup)
        return written.changed

    async def _attempt(self, group: str, podgroup: dict[str, Any], status_for: StatusFor,
                       send: Send, refused: type[errors.KubeError], *, is_sure: bool
                       ) -> bool | None:
        """Write `status_for(podgroup)` by `send` without reading: True when written, False
        when nothing was to write, None when the API server refused it with `refused` or
        `podgroup` looks current but may not be (not `is_sure`): then read and decide."""
        status = await status_for(podgroup)
        if status is None:
            return False if is_sure else None
        try:
            self._hold(group, await send(podgroup, status))
        except refused:
            return None
        return True

    async def about(self, group: str, plan_seq: int, kube: Kube) -> tuple[str, str] | None:
        """The (uid, apiVersion) of the PodGroup `group`, for an event about it: from the view,
        else the held copy, else read through `kube` (the API the event goes to; None: no such
        PodGroup).

        Raises:
            KubeError subclasses other than KubeNotFound (from the read).
        """
        namespace, name = split_key(GroupKey(group))
        seen = await self._seen(namespace, name, plan_seq)
        if seen is not None:
            return seen
        held = self._held.get(group)
        found = held if held is not None else await kube.get_podgroup(namespace, name)
        if found is None:
            return None
        return (str(metadata(found).get("uid") or ""),
                str(found.get("apiVersion") or PODGROUP_API_VERSION))

    async def _seen(self, namespace: str, name: str, plan_seq: int) -> tuple[str, str] | None:
        """The view's (uid, apiVersion) of the PodGroup, if the view reached `plan_seq`."""
        if not await self._feed.caught_up(plan_seq, VIEW_WAIT_SECONDS):
            return None
        return self._feed.view.podgroup(namespace, name)

    def _hold(self, group: str, podgroup: dict[str, Any]) -> None:
        """Keep the parts of `podgroup` a later write needs: API, identity, version, status."""
        meta = metadata(podgroup)
        self._held[group] = {
            "apiVersion": podgroup.get("apiVersion") or PODGROUP_API_VERSION,
            "metadata": {key: meta[key] for key in
                         ("namespace", "name", "uid", "resourceVersion", "generation")
                         if key in meta},
            "status": podgroup.get("status") or {},
        }
        self._held.move_to_end(group)
        while len(self._held) > self._remembered:
            self._held.popitem(last=False)
