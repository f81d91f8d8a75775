"""A lease on a NATS KV key: compare-and-set writes of one holder's name, expiring by TTL.

Layer: bus. The planner's leader election (`services.runtime.election`) campaigns on it: the
key `planner` in the KV bucket `<PREFIX>_LEADER`, whose TTL is the lease duration. `create`
takes the key only if no live entry holds it; `update` with the last revision renews it; an
entry nobody renews expires after the TTL. nats-py errors come out as the bus's own
(`services.bus.errors`): a lost race is an answer (None), not an error.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

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


class KvLease:
    """A lease on one KV key, held by `holder` (`services.runtime.election.LeaseStore`).

    Raises (every method): LeaseUnavailable when NATS is down or busy, LeaseRefused when it
    refuses the request for another cause than a lost race (from the bus's BusUnavailable
    and BusRefused).
    """

    def __init__(self, kv: KeyValue, holder: str, key: str = KEY) -> None:
        self._kv = kv
        self._key = key
        self.holder = holder
        self._value = holder.encode()

    async def acquire(self) -> int | None:
        """`create` the key: its revision, or None when someone else holds it. If it exists
        but holds our name (a write whose ack we lost, or a term we gave up on while NATS was
        unreachable), take it back."""
        with _lease_errors(f"acquiring lease {self._key}"):
            try:
                return int(await self._kv.create(self._key, self._value))
            except nats.js.errors.KeyWrongLastSequenceError:
                pass
            except nats.js.errors.NotFoundError:
                return None  # it expired while `create` looked at it: try again next time
            revision = await self._our_revision()
            return None if revision is None else await self.renew(revision)

    async def renew(self, revision: int) -> int | None:
        """`update` with `last=revision`: the new revision; None when someone else wrote
        since."""
        with _lease_errors(f"renewing lease {self._key}"):
            try:
                return int(await self._kv.update(self._key, self._value, last=revision))
            except nats.js.errors.KeyWrongLastSequenceError:
                return None

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
    bucket = subjects.stream_name(prefix, "LEADER")
    with transience.bus_errors(f"opening lease bucket {bucket}"):
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
    return KvLease(kv, holder)


async def _match_ttl(js: JetStream, stream: str, lease_seconds: float) -> None:
    """Set the bucket stream's max age to `lease_seconds` when it differs (units: seconds)."""
    info = await js.stream_info(stream)
    if abs((info.config.max_age or 0.0) - lease_seconds) < 1e-3:
        return
    log.warning("leader lease bucket %s had a TTL of %gs; setting it to %gs", stream,
                info.config.max_age or 0.0, lease_seconds)
    info.config.max_age = lease_seconds
    await js.update_stream(config=info.config)
