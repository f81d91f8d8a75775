"""VolumeBinding's PreBind for the members of a placement: bind their claims, then wait.

Layer: binder shell. Before any member is bound, each member's `volumes` choices are written
(a static PersistentVolume's claimRef set to the claim, or the claim annotated
`volume.kubernetes.io/selected-node` for dynamic provisioning), then every claim is polled
until it is fully bound (the PV controller of kube-controller-manager completes the binding)
or the deadline passes. A read answered with a wait asked for (a 429 or 5xx with
`Retry-After: N`, `KubeError.retry_after_seconds`) is not made again for that claim sooner
than N seconds after the answer (at most 300), as client-go waits. A member whose claim cannot
be written or does not bind in time has failed: the placement rolls back as for any failed
member. Writes are not undone: the claim may still bind to the volume chosen, which the next
attempt then finds bound (kube-scheduler does not undo its PreBind writes either).
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
"""How often a claim waited for is read again (unless an answer asked to wait longer)."""

Claim = tuple[str, str]
"""A claim's namespace and name: what one read of the polling asks for."""
Asked = dict[Claim, float]
"""Per claim, the loop time (seconds of `asyncio.get_running_loop().time()`, the clock of
`Deadline`) before which it is not read again: when the Retry-After of its last read ends."""


class Refused(Exception):
    """A choice that cannot be written (the claim or volume is gone or taken); the message
    says why."""


async def prebind(kube: Kube, members: Sequence[Assignment], deadline: Deadline) -> dict[str, str]:
    """Write every member's volume choices, then wait for their claims to be fully bound.

    Shapes: returns pod uid → rollback reason, for the members whose claims failed (empty:
    every claim is bound). Transient API errors while waiting are retried until the deadline,
    every `POLL_SECONDS`, or after the seconds the answer asked to wait when longer
    (`Retry-After`, `KubeError.retry_after_seconds`): the claim is not read again sooner. A
    claim still held back when the deadline passes fails its member as one not bound in time:
    the deadline is never stretched for a wait asked for.
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
    asked: Asked = {}
    while waiting:
        waiting = [item for item in waiting if not await _is_bound(kube, *item, failures, asked)]
        if not waiting:
            break
        if deadline.has_passed():
            for member, choice in waiting:
                failures.setdefault(member.pod_uid, messages.claim_not_bound(member, choice.claim))
            break
        await asyncio.sleep(max(0.0, min(_until_next_read(waiting, asked),
                                         deadline.remaining_seconds())))
    return failures


def _until_next_read(waiting: Sequence[tuple[Assignment, VolumeChoice]], asked: Asked) -> float:
    """Seconds until the first of the `waiting` claims is due to be read again: `POLL_SECONDS`,
    or longer for a claim whose last answer asked to wait longer (`asked`)."""
    now = asyncio.get_running_loop().time()
    return min(max(POLL_SECONDS, asked.get((member.namespace, choice.claim), now) - now)
               for member, choice in waiting)


async def _is_bound(kube: Kube, member: Assignment, choice: VolumeChoice,
                    failures: dict[str, str], asked: Asked) -> bool:
    """Whether the claim is fully bound (a claim gone fails the member: also True). Not read,
    False, while a wait its last read was asked for lasts (`asked`, updated by an answer
    asking one)."""
    loop = asyncio.get_running_loop()
    key = (member.namespace, choice.claim)
    if loop.time() < asked.get(key, 0.0):
        return False
    try:
        claim = await kube.get_claim(member.namespace, choice.claim)
    except errors.KubeError as error:
        if isinstance(error, errors.KubeUnavailable) and error.retry_after_seconds is not None:
            asked[key] = loop.time() + error.retry_after_seconds
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
