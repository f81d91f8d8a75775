"""The newest message of every subject, then (when followed) each new one: a state, not a history.

Layer: bus. An ephemeral ordered reader (`reading.OrderedReader`, deliver policy
last-per-subject, named `<owner>-<random>`) on one filter of one stream: it first delivers the
last stored message of every matching subject (for an object's subject, its newest state),
then whatever is stored later. Two readers use it: the binder's view of pods and nodes
(`services.binder.view_feed`, which follows it) and the watcher's recovery of what the log knows
(`services.watcher.recovery`, which drains it once). Nothing is acknowledged, so no one else is
disturbed; nats-py errors come out as the bus's own (`services.bus.errors`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from services.bus import reading, transience
from services.bus.connection import JetStream
from services.bus.errors import BusUnavailable
from services.bus.reading import StoredMessage


class LatestReader:
    """An open last-per-subject reader; `fetch` returns messages in stream order."""

    def __init__(self, reader: reading.OrderedReader) -> None:
        self._reader = reader

    @classmethod
    async def open(cls, js: JetStream, stream: str, filter_subject: str, *, owner: str,
                   inactive_threshold_seconds: float) -> LatestReader:
        """Create the consumer (the server deletes it `inactive_threshold_seconds` after the
        reader stops pulling). It is eager (`pulling.Puller`): a follower sees each message
        as it comes, not a timeout later.

        Raises:
            NotFound: no such stream. BusUnavailable, BusRefused: NATS failed or refused.
        """
        with transience.bus_errors(f"a reader of {filter_subject} in {stream}", js):
            reader = await reading.OrderedReader.open(
                js, stream, filter_subject, owner=owner,
                inactive_threshold_seconds=inactive_threshold_seconds, eager=True)
        return cls(reader)

    async def fetch(self, batch: int, timeout_seconds: float) -> list[StoredMessage]:
        """Up to `batch` messages, `[]` on timeout (`reading.OrderedReader.fetch`).

        Raises:
            BusUnavailable: a fetch failed as NATS restarts, or the consumer vanished
                (`transience.FETCH_ERRORS`); a later fetch tries again. BusRefused: any
                other refusal.
        """
        with transience.bus_errors("a reader's fetch"):
            try:
                return await self._reader.fetch(batch, timeout_seconds)
            except transience.FETCH_ERRORS as error:
                raise BusUnavailable(f"a reader's fetch: {error!r}") from error

    @property
    def streams_read(self) -> int:
        """How many streams of its name it has read (`reading.OrderedReader.streams_read`):
        a follower takes each new one afresh."""
        return self._reader.streams_read

    async def pending(self) -> int:
        """How many messages of the filter are still to be delivered.

        Raises:
            BusUnavailable, BusRefused: NATS failed or refused.
        """
        with transience.bus_errors("a reader's pending count"):
            return await self._reader.num_pending()

    async def close(self) -> None:
        """Delete the consumer now (it would expire anyway); never raises a NATS error."""
        await self._reader.close()


async def latest(js: JetStream, stream: str, filter_subject: str, *, owner: str,
                 inactive_threshold_seconds: float, batch: int,
                 timeout_seconds: float) -> AsyncIterator[StoredMessage]:
    """The newest message of every subject matching `filter_subject`, then stop: what was
    pending when the reader opened, fetched `batch` at a time (waiting up to
    `timeout_seconds` per fetch). The reader is closed when the iteration ends.

    Raises:
        NotFound: no such stream. BusUnavailable, BusRefused: NATS failed or refused;
            BusUnavailable also when the stream was made anew while it was read (what was
            yielded mixes two streams' states: read it again).
    """
    reader = await LatestReader.open(js, stream, filter_subject, owner=owner,
                                     inactive_threshold_seconds=inactive_threshold_seconds)
    try:
        pending = await reader.pending()
        while pending > 0:
            messages = await reader.fetch(batch, timeout_seconds)
            if reader.streams_read > 1:
                raise BusUnavailable(f"{stream} was made anew while its newest messages were "
                                     "read; read them again")
            if not messages:
                pending = await reader.pending()
            for message in messages:
                yield message
                pending = message.pending
    finally:
        await reader.close()
