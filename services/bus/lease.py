"""A lease on a NATS KV key: compare-and-set writes of one holder's name, expiring by TTL.

Layer: bus. The planner's leader election (`services.runtime.election`) campaigns on it: the
key `planner` in the KV bucket `<PREFIX>_LEADER`, whose TTL is the lease duration. `create`
takes the key only if no live entry holds it; `update` with the last revision renews it; an
entry nobody renews expires after the TTL. nats-py errors come out as the bus's own
(`services.bus.errors`): a lost race is an answer (None), not an error. A bucket gone
(deleted, or lost with NATS's store) is made anew by the next request that finds it gone,
as `services.bus.streams.ensure_streams` makes the streams anew.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable, Iterator

import nats
from nats.js.api import KeyValueConfig, StorageType
from nats.js.kv import KeyValue

from services.bus import transience
from services.bus.connection import JetStream
from services.bus.errors import BusRefused, BusUnavailable
from services.contracts import subjects
from services.runtime.election import LeaseRefused, LeaseUnavailable

log = logging.getLogger(__name__)

KEY = "planner"


BUCKET_GONE_ERRORS: tuple[type[BaseException], ...] = (
    *transience.NO_STREAM_ERRORS, nats.js.errors.BucketNotFoundError)
"""A KV request's answers when its bucket's stream is gone (deleted, or the NATS store
lost), or JetStream does not answer for it yet."""

Reopen = Callable[[], Awaitable[KeyValue]]
"""Opens the lease's bucket, making it anew if it is gone (`open_bucket`)."""


class KvLease:
    """A lease on one KV key, held by `holder` (`services.runtime.election.LeaseStore`).

    With `reopen`, a bucket found gone (`BUCKET_GONE_ERRORS`) by `acquire` or `renew` is
    opened again, made anew when it is really gone (logged at WARNING), and the request made
    once more: a planner whose bucket was deleted, or whose NATS lost its store, can lead
    again instead of failing every attempt for good.
    Raises (every method): LeaseUnavailable when NATS is down or busy, LeaseRefused when it
    refuses the request for another cause than a lost race (from the bus's BusUnavailable
    and BusRefused), making the bucket anew included.
    """

    def __init__(self, kv: KeyValue, holder: str, key: str = KEY, *,
                 reopen: Reopen | None = None) -> None:
        self._kv = kv
        self._key = key
        self.holder = holder
        self._value = holder.encode()
        self._reopen = reopen

    async def acquire(self) -> int | None:
        """`create` the key: its revision, or None when someone else holds it. If it exists
        but holds our name (a write whose ack we lost, or a term we gave up on while NATS was
        unreachable), take it back."""
        with _lease_errors(f"acquiring lease {self._key}"):
            return await self._in_bucket(self._acquire)

    async def _acquire(self) -> int | None:
        """`acquire`'s requests, nats-py's errors as they are."""
        try:
            return int(await self._kv.create(self._key, self._value))
        except nats.js.errors.KeyWrongLastSequenceError:
            pass
        except nats.js.errors.NotFoundError:
            return None  # it expired while `create` looked at it: try again next time
        revision = await self._our_revision()
        return None if revision is None else await self._renew(revision)

    async def renew(self, revision: int) -> int | None:
        """`update` with `last=revision`: the new revision; None when someone else wrote
        since (a bucket made anew holds no entry: None too)."""
        with _lease_errors(f"renewing lease {self._key}"):
            return await self._in_bucket(lambda: self._renew(revision))

    async def _renew(self, revision: int) -> int | None:
        """`renew`'s request, nats-py's errors as they are."""
        try:
            return int(await self._kv.update(self._key, self._value, last=revision))
        except nats.js.errors.KeyWrongLastSequenceError:
            return None

    async def _in_bucket(self, request: Callable[[], Awaitable[int | None]]) -> int | None:
        """`request()`; when it finds the bucket gone, reopen it (`reopen`) and try once
        more. Raises what `request` and `reopen` raise (nats-py's errors)."""
        try:
            return await request()
        except BUCKET_GONE_ERRORS as error:
            if self._reopen is None:
                raise
            log.warning("leader lease bucket not found (%s): opening it again", error)
            self._kv = await self._reopen()
        return await request()

    async def release(self, revision: int) -> None:
        """Delete the entry if it is still ours (a no-op otherwise).

        The entry's current revision may be past `revision` (a renewal cancelled after the
        server applied it), so ownership is checked on the value and the delete is a
        compare-and-set on the revision just read.
        """
        with _lease_errors(f"releasing lease {self._key}"):
            current = await self._our_revision()
            if current is None:
                return
            with contextlib.suppress(nats.js.errors.BadRequestError):  # someone wrote since
                await self._kv.delete(self._key, last=current)

    async def _our_revision(self) -> int | None:
        """The revision of the entry if it holds our name; None if absent or not ours."""
        try:
            entry = await self._kv.get(self._key)
        except nats.js.errors.NotFoundError:
            return None
        if entry.value != self._value or entry.revision is None:
            return None
        return int(entry.revision)


@contextlib.contextmanager
def _lease_errors(what: str) -> Iterator[None]:
    """nats-py's errors inside as `election`'s: LeaseUnavailable, LeaseRefused."""
    try:
        with transience.bus_errors(what):
            yield
    except BusUnavailable as error:
        raise LeaseUnavailable(str(error)) from error
    except BusRefused as error:
        raise LeaseRefused(str(error)) from error


async def open_lease(js: JetStream, *, prefix: str, lease_seconds: float, holder: str,
                     replicas: int = 1) -> KvLease:
    """The lease in bucket `<PREFIX>_LEADER`, held as `holder`, creating the bucket (TTL =
    `lease_seconds`, `replicas` copies) if needed.

    A bucket made with another TTL is updated to `lease_seconds` (logged). Units: seconds.
    Raises:
        BusUnavailable, BusRefused: NATS cannot be reached or refuses (the caller's
            supervisor retries).
    """
    def reopen() -> Awaitable[KeyValue]:
        return open_bucket(js, prefix=prefix, lease_seconds=lease_seconds, replicas=replicas)

    with transience.bus_errors(
            f"opening lease bucket {subjects.stream_name(prefix, 'LEADER')}", js):
        kv = await reopen()
    return KvLease(kv, holder, reopen=reopen)


async def open_bucket(js: JetStream, *, prefix: str, lease_seconds: float,
                      replicas: int = 1) -> KeyValue:
    """Bucket `<PREFIX>_LEADER`, created (TTL = `lease_seconds`, `replicas` copies; logged)
    if it does not exist, its TTL set to `lease_seconds` if it differs (logged).

    Units: seconds. Raises: nats-py's errors, as they are.
    """
    bucket = subjects.stream_name(prefix, "LEADER")
    try:
        kv = await js.key_value(bucket)
    except nats.js.errors.BucketNotFoundError:
        kv = await js.create_key_value(KeyValueConfig(
            bucket=bucket, history=1, ttl=lease_seconds, replicas=replicas,
            storage=StorageType.FILE, description="gangsched planner leader lease",
        ))
        log.info("created leader lease bucket %s (lease %gs)", bucket, lease_seconds)
    else:
        await _match_ttl(js, f"KV_{bucket}", lease_seconds)
    return kv


async def _match_ttl(js: JetStream, stream: str, lease_seconds: float) -> None:
    """Set the bucket stream's max age to `lease_seconds` when it differs (units: seconds)."""
    info = await js.stream_info(stream)
    if abs((info.config.max_age or 0.0) - lease_seconds) < 1e-3:
        return
    log.warning("leader lease bucket %s had a TTL of %gs; setting it to %gs", stream,
                info.config.max_age or 0.0, lease_seconds)
    info.config.max_age = lease_seconds
    await js.update_stream(config=info.config)
