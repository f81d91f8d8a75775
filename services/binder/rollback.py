"""Undo a half-bound placement: delete the members it bound, so no partial gang stays bound.

Layer: binder shell. Kubernetes has no unbind: a bound member with a controller
owner is deleted (uid precondition) and its controller recreates it unbound; a bare pod is
never deleted unless the operator opted in. Transient errors are retried without limit, because
a partial gang left bound is worse than a late report. Never publishes.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TypeVar

from services.binder import retries, validation
from services.binder.binding import Stamp
from services.binder.ports import Kube
from services.contracts.decisions import Assignment
from services.kube import errors

log = logging.getLogger(__name__)

RETRY_FIRST_WAIT_SECONDS = 0.2
RETRY_MAX_WAIT_SECONDS = 10.0
_PERSIST = retries.Retry(first_wait_seconds=RETRY_FIRST_WAIT_SECONDS,
                         max_wait_seconds=RETRY_MAX_WAIT_SECONDS)
"""An undo: KubeUnavailable retried without limit (a gang must not stay half bound)."""

T = TypeVar("T")


@dataclass(frozen=True)
class Undone:
    """What a rollback did, as pod uids in member order.

    `deleted`: bound members deleted (or found already gone). `kept`: bound members left
    bound (bare pods, or a delete refused permanently; logged).
    """

    deleted: tuple[str, ...] = ()
    kept: tuple[str, ...] = ()


async def undo(
    kube: Kube,
    candidates: Sequence[Assignment],
    stamp: Stamp,
    *,
    rollback_bare_pods: bool,
    concurrency: int,
    gone_nodes: frozenset[str] = frozenset(),
) -> Undone:
    """Delete each candidate that the placement `stamp` names bound, and that may be deleted.

    Shapes: `candidates` are members this placement bound or may have bound (an unanswered
    bind); each is read again first, and one that this placement's bind did not put on its
    planned node (`validation.is_bound_by`: uid, schedulerName, node and the binding's
    placement annotation) is left alone, whoever bound it. A bare member bound to a node in
    `gone_nodes` (deleted meanwhile) is deleted too: it can never run, and PodGC would delete
    it anyway, only later.
    """
    gate = asyncio.Semaphore(concurrency)

    async def one(member: Assignment) -> str:
        async with gate:
            return await _undo_member(kube, member, stamp,
                                      rollback_bare_pods or member.node in gone_nodes)

    verdicts = await asyncio.gather(*(one(member) for member in candidates))
    pairs = list(zip(candidates, verdicts, strict=True))
    return Undone(
        deleted=tuple(member.pod_uid for member, verdict in pairs if verdict == "deleted"),
        kept=tuple(member.pod_uid for member, verdict in pairs if verdict == "kept"),
    )


async def _undo_member(
    kube: Kube, member: Assignment, stamp: Stamp, rollback_bare_pods: bool
) -> str:
    """`deleted`, `kept` or `unbound` (nothing to undo) for one member."""
    name = f"{member.namespace}/{member.name}"
    try:
        pod = await _persist(partial(kube.get_pod, member.namespace, member.name), f"get {name}")
    except errors.KubeError as error:
        log.error("rollback: cannot read pod %s, leaving it: %s", name, error)
        return "kept"
    if not validation.is_bound_by(member, pod, stamp.placement_id, stamp.scheduler_name):
        return "unbound"
    if not validation.has_controller(pod) and not rollback_bare_pods:
        log.info("rollback: keeping bare pod %s bound to %s", name, member.node)
        return "kept"
    try:
        await _persist(
            partial(kube.delete_pod, member.namespace, member.name, member.pod_uid),
            f"delete pod {name}",
        )
    except (errors.KubeNotFound, errors.KubeConflict):
        pass  # gone, or replaced under the same name: the bound member no longer exists
    except errors.KubeError as error:
        log.error("rollback: cannot delete pod %s, leaving it bound: %s", name, error)
        return "kept"
    log.info("rollback: deleted pod %s (uid %s) bound to %s", name, member.pod_uid, member.node)
    return "deleted"


async def _persist(call: Callable[[], Awaitable[T]], what: str) -> T:
    """Run `call`, retrying KubeUnavailable without limit (capped backoff, logged)."""
    return await _PERSIST.call(call, before_sleep=lambda state: log.warning(
        "rollback: %s failed %d times, retrying: %s", what, state.attempt_number,
        state.outcome.exception() if state.outcome else None,
    ))
