"""Which nats-py errors are transient (retry later) and how long to wait between retries.

Layer: bus. Pure classification; never does I/O.
"""

from __future__ import annotations

import nats

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

LOST_ACK_ERRORS: tuple[type[BaseException], ...] = (
    *TRANSIENT_ERRORS,
    nats.errors.ConnectionClosedError,
)
"""Errors after which an ack may not have reached the server (the message is redelivered)."""

FETCH_ERRORS: tuple[type[BaseException], ...] = (*TRANSIENT_ERRORS, nats.js.errors.APIError)
"""Errors of a pull request while NATS restarts or after the consumer was deleted."""

RETRY_FIRST_WAIT_SECONDS = 0.05
RETRY_MAX_WAIT_SECONDS = 2.0


def is_transient(error: BaseException) -> bool:
    """Whether `error` may go away by itself (NATS down or busy), as opposed to a caller bug."""
    return isinstance(error, TRANSIENT_ERRORS)
