"""VolumeBinding's PreBind for the members of a placement: bind their claims, then wait.

Layer: binder shell. Before any member is bound, each member's `volumes` choices are written
(a static PersistentVolume's claimRef set to the claim, or the claim annotated
`volume.kubernetes.io/selected-node` for dynamic provisioning), then every claim is polled
until it is fully bound (the PV controller of kube-controller-manager completes the binding)
or the deadline passes. A member whose claim cannot be written or does not bind in time has
failed: the placement rolls back as for any failed member. Writes are not undone: the claim
may still bind to the volume chosen, which the next attempt then finds bound (kube-scheduler
does not undo its PreBind writes either).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any

from services.binder import messages
from services.binder.binding import Deadline
from services.binder.ports import Kube
from services.contracts.decisions import Assignment, VolumeChoice
from services.kube import errors
from services.kube.volumes import SELECTED_NODE, is_fully_bound

log = logging.getLogger(__name__)

POLL_SECONDS = 0.5
"""How often a claim waited for is read again."""


class Refused(Exception):
    """A choice that cannot be written (the claim or volume is gone or taken); the message
    says why."""


async def prebind(kube: Kube, members: Sequence[Assignment], deadline: Deadline) -> dict[str, str]:
    """Write every member's volume choices, then wait for their claims to be fully bound.

    Shapes: returns pod uid → rollback reason, for the members whose claims failed (empty:
    every claim is bound). Transient API errors while waiting are retried until the deadline.
    """
    todo = [(member, choice) for member in members for choice in member.volumes]
    failures: dict[str, str] = {}
    for member, choice in todo:
        try:
            await _write(kube, member, choice)
        except (Refused, errors.KubeError) as error:
            failures[member.pod_uid] = messages.volume_refused(
                member, choice.claim, messages.bind_error(error))
    waiting = [(member, choice) for member, choice in todo if member.pod_uid not in failures]
    while waiting:
        waiting = [item for item in waiting if not await _is_bound(kube, *item, failures)]
        if not waiting:
            break
        if deadline.has_passed():
            for member, choice in waiting:
                failures.setdefault(member.pod_uid, messages.claim_not_bound(member, choice.claim))
            break
        await asyncio.sleep(max(0.0, min(POLL_SECONDS, deadline.remaining_seconds())))
    return failures


async def _is_bound(kube: Kube, member: Assignment, choice: VolumeChoice,
                    failures: dict[str, str]) -> bool:
    """Whether the claim is fully bound (a claim gone fails the member: also True)."""
    try:
        claim = await kube.get_claim(member.namespace, choice.claim)
    except errors.KubeError as error:
        log.debug("cannot read claim %s/%s, still waiting: %s", member.namespace, choice.claim,
                  error)
        return False
    if claim is None:
        failures.setdefault(member.pod_uid, messages.volume_refused(member, choice.claim,
                                                                    "it was deleted"))
        return True
    return is_fully_bound(claim)


async def _write(kube: Kube, member: Assignment, choice: VolumeChoice) -> None:
    """Write one choice unless it is already in place (a redelivery).

    Raises:
        Refused: the claim is gone, or the volume is gone or bound to another claim.
        KubeError: the write failed.
    """
    claim = await kube.get_claim(member.namespace, choice.claim)
    if claim is None:
        raise Refused("it does not exist")
    if is_fully_bound(claim):
        return
    if not choice.volume:
        annotations = _meta(claim).get("annotations") or {}
        if annotations.get(SELECTED_NODE) != member.node:
            await kube.select_node(member.namespace, choice.claim, str(_meta(claim).get("uid")),
                                   member.node)
        return
    volume = await kube.get_volume(choice.volume)
    if volume is None:
        raise Refused(f'persistentvolume "{choice.volume}" does not exist')
    ref = (volume.get("spec") or {}).get("claimRef")
    if isinstance(ref, dict):
        if (ref.get("namespace"), ref.get("name")) != (member.namespace, choice.claim):
            raise Refused(f'persistentvolume "{choice.volume}" is bound to another claim')
        return
    await kube.pre_bind_volume(choice.volume, str(_meta(volume).get("resourceVersion", "")),
                               claim)


def _meta(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}
