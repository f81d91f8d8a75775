"""Which nats-py errors are transient (retry later) and how long to wait between retries.

Layer: bus. Pure classification; never does I/O.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Iterator
from typing import TypeVar

import nats

from services.bus import connection
from services.bus.connection import JetStream
from services.bus.errors import BusRefused, BusUnavailable, JetStreamUnavailable, NotFound

TRANSIENT_ERRORS: tuple[type[BaseException], ...] = (
    TimeoutError,
    nats.errors.TimeoutError,
    nats.errors.NoRespondersError,
    nats.errors.StaleConnectionError,
    nats.errors.OutboundBufferLimitError,
    nats.errors.ConnectionReconnectingError,
    nats.errors.FlushTimeoutError,
    nats.js.errors.NoStreamResponseError,
    nats.js.errors.ServiceUnavailableError,
    nats.js.errors.ServerError,
    OSError,
)
"""Errors seen while NATS restarts, reconnects or elects a stream leader: worth retrying."""

NO_STREAM_ERRORS: tuple[type[BaseException], ...] = (
    nats.js.errors.NoStreamResponseError,
    nats.errors.NoRespondersError,
)
"""A publish's answers when no stream takes its subject: the stream is gone (deleted, or the
NATS store lost), or JetStream does not answer for it yet."""

LOST_ACK_ERRORS: tuple[type[BaseException], ...] = (
    *TRANSIENT_ERRORS,
    nats.errors.ConnectionClosedError,
)
"""Errors after which an ack may not have reached the server (the message is redelivered)."""

FETCH_ERRORS: tuple[type[BaseException], ...] = (*TRANSIENT_ERRORS, nats.js.errors.APIError)
"""Errors of a pull request while NATS restarts or after the consumer was deleted."""

T = TypeVar("T")

RETRY_FIRST_WAIT_SECONDS = 0.05
RETRY_MAX_WAIT_SECONDS = 2.0


def is_transient(error: BaseException) -> bool:
    """Whether `error` may go away by itself (NATS down or busy, JetStream not answering: a
    server restarted with it, a cluster regaining its quorum), as opposed to a caller bug."""
    return isinstance(error, (*TRANSIENT_ERRORS, JetStreamUnavailable))


@contextlib.contextmanager
def jetstream_answers(js: JetStream | None, what: str = "") -> Iterator[None]:
    """Name why JetStream did not answer a request made inside the block: nats-py's
    `ServiceUnavailableError` (no responder on the JetStream API, or a 503 from it) becomes
    `JetStreamUnavailable` saying whether the server of `js` runs no JetStream at all or it
    is unavailable there now (`connection.jetstream_problem`), after `what` (the request).

    Raises:
        JetStreamUnavailable: from the nats-py cause; other exceptions pass unchanged.
    """
    try:
        yield
    except nats.js.errors.ServiceUnavailableError as error:
        client = connection.client_of(js) if js is not None else None
        problem = connection.jetstream_problem(client, error.description)
        raise JetStreamUnavailable(problem, what) from error


@contextlib.contextmanager
def bus_errors(what: str, js: JetStream | None = None) -> Iterator[None]:
    """Translate nats-py errors raised inside the block into the bus's own (`errors`).

    `what` names the request in the message (e.g. `stream info of GANGSCHED_EVENTS`); `js`,
    the context it was made through, names the server when JetStream does not answer.
    Raises:
        NotFound: a JetStream "not found" answer (stream, consumer, bucket, key, message).
        JetStreamUnavailable: JetStream did not answer (`jetstream_answers`).
        BusUnavailable: a transient error (`TRANSIENT_ERRORS`, which includes timeouts and
            `OSError`) or a closed connection.
        BusRefused: any other nats-py error (NATS answered and refused).
    Each is raised `from` the nats-py cause; other exceptions pass through unchanged.
    """
    try:
        with jetstream_answers(js, what):
            yield
    except JetStreamUnavailable:
        raise
    except nats.js.errors.NotFoundError as error:
        raise NotFound(f"{what}: not found ({error})") from error
    except LOST_ACK_ERRORS as error:  # transient, or the connection closed
        raise BusUnavailable(f"{what}: {error!r}") from error
    except nats.errors.Error as error:
        raise BusRefused(f"{what}: {error!r}") from error


async def unless_missing(request: Awaitable[T], what: str,
                         js: JetStream | None = None) -> T | None:
    """Await a JetStream request under `bus_errors` (`js` as there); None when NATS answers
    "not found".

    Raises:
        BusUnavailable, BusRefused: as `bus_errors`.
    """
    try:
        with bus_errors(what, js):
            return await request
    except NotFound:
        return None
