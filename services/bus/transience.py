"""Which nats-py errors are transient (retry later) and how long to wait between retries.

Layer: bus. Pure classification; never does I/O.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Iterator
from typing import TypeVar

import nats

from services.bus.errors import BusRefused, BusUnavailable, NotFound

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
    """Whether `error` may go away by itself (NATS down or busy), as opposed to a caller bug."""
    return isinstance(error, TRANSIENT_ERRORS)


@contextlib.contextmanager
def bus_errors(what: str) -> Iterator[None]:
    """Translate nats-py errors raised inside the block into the bus's own (`errors`).

    `what` names the request in the message (e.g. `stream info of GANGSCHED_EVENTS`).
    Raises:
        NotFound: a JetStream "not found" answer (stream, consumer, bucket, key, message).
        BusUnavailable: a transient error (`TRANSIENT_ERRORS`, which includes timeouts and
            `OSError`) or a closed connection.
        BusRefused: any other nats-py error (NATS answered and refused).
    Each is raised `from` the nats-py cause; other exceptions pass through unchanged.
    """
    try:
        yield
    except nats.js.errors.NotFoundError as error:
        raise NotFound(f"{what}: not found ({error})") from error
    except LOST_ACK_ERRORS as error:  # transient, or the connection closed
        raise BusUnavailable(f"{what}: {error!r}") from error
    except nats.errors.Error as error:
        raise BusRefused(f"{what}: {error!r}") from error


async def unless_missing(request: Awaitable[T], what: str) -> T | None:
    """Await a JetStream request under `bus_errors`; None when NATS answers "not found".

    Raises:
        BusUnavailable, BusRefused: as `bus_errors`.
    """
    try:
        with bus_errors(what):
            return await request
    except NotFound:
        return None
