"""Connect to NATS and stay connected: reconnect forever, log every disconnect and reconnect.

Layer: bus. Never creates streams or consumers (see `streams`, `consuming`).
"""

from __future__ import annotations

import asyncio
import logging

import nats
from nats.aio.client import Client

from services.bus.errors import BusUnavailable
from services.config.settings import BusSettings
from services.contracts import subjects

log = logging.getLogger(__name__)

FIRST_CONNECT_TIMEOUT_SECONDS = 30.0
RECONNECT_WAIT_SECONDS = 1
CONNECT_TIMEOUT_SECONDS = 2
DEFAULT_INBOX_PREFIX = "_INBOX"


async def connect(
    settings: BusSettings,
    *,
    name: str,
    first_connect_timeout_seconds: float = FIRST_CONNECT_TIMEOUT_SECONDS,
) -> Client:
    """Connect to `settings.url` as client `name`; once connected, reconnect forever.

    Units: `first_connect_timeout_seconds` bounds the wait for the first connection.
    Raises:
        BusUnavailable: no URL is set, or the first connection did not succeed in time.
    Source: nats-py `Client.connect` with `max_reconnect_attempts=-1`; published messages
        issued while reconnecting are buffered by the client (up to its pending size).
    """
    if not settings.url:
        raise BusUnavailable("no NATS url configured (start an embedded server or pass --nats)")
    client = Client()
    callbacks = _Callbacks(name, client)
    try:
        await asyncio.wait_for(
            client.connect(
                servers=[settings.url],
                name=name,
                allow_reconnect=True,
                max_reconnect_attempts=-1,
                reconnect_time_wait=RECONNECT_WAIT_SECONDS,
                connect_timeout=CONNECT_TIMEOUT_SECONDS,
                error_cb=callbacks.on_error,
                disconnected_cb=callbacks.on_disconnected,
                reconnected_cb=callbacks.on_reconnected,
                closed_cb=callbacks.on_closed,
                user=settings.user,
                password=settings.password,
                user_credentials=str(settings.creds_file) if settings.creds_file else None,
                inbox_prefix=inbox_prefix(settings),
            ),
            first_connect_timeout_seconds,
        )
    except (TimeoutError, OSError, nats.errors.Error) as error:
        await client.close()
        raise BusUnavailable(
            f"NATS at {settings.url} unreachable for {first_connect_timeout_seconds:g}s: {error!r}"
        ) from error
    url = client.connected_url  # shown without any credentials it carries
    shown = f"{url.scheme}://{url.hostname}:{url.port}" if url is not None else "NATS"
    log.info("connected to NATS %s as %s", shown, name)
    return client


def inbox_prefix(settings: BusSettings) -> str:
    """`_INBOX_<user>` for a named user, else nats-py's `_INBOX`.

    Each user's NATS permissions let it subscribe to its own inbox only, so one service (or a
    read-only subscriber on `_INBOX.>`) cannot read the replies and deliveries of another.
    """
    if not settings.user:
        return DEFAULT_INBOX_PREFIX
    return f"{DEFAULT_INBOX_PREFIX}_{subjects.token(settings.user)}"


class _Callbacks:
    """nats-py connection callbacks that log under the client's name."""

    def __init__(self, name: str, client: Client) -> None:
        self.name = name
        self.client = client

    async def on_error(self, error: Exception) -> None:
        log.warning("NATS client %s: %r", self.name, error)

    async def on_disconnected(self) -> None:
        if not self.client.is_closed:
            log.warning("NATS client %s disconnected; reconnecting", self.name)

    async def on_reconnected(self) -> None:
        log.info("NATS client %s reconnected", self.name)

    async def on_closed(self) -> None:
        log.info("NATS client %s closed", self.name)
