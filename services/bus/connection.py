"""Connect to NATS and stay connected: reconnect forever, log every disconnect and reconnect.

Layer: bus. Never creates streams or consumers (see `streams`, `consuming`). Never shows the
credentials a URL carries (`nats://user:password@host`) in a message or a log line.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import weakref
from collections.abc import Callable
from typing import Any, Protocol, TypeAlias

import nats
from nats.aio.client import Client
from nats.js import JetStreamContext
from nats.protocol.parser import AUTHORIZATION_VIOLATION

from services.bus import urls
from services.bus.errors import BusUnavailable
from services.config.settings import BusSettings
from services.contracts import subjects
from services.runtime import cancellation
from services.runtime.unreachable import REPEATS_BETWEEN_LOGS, Repeats, reason

log = logging.getLogger(__name__)

FIRST_CONNECT_TIMEOUT_SECONDS = 30.0
RECONNECT_WAIT_SECONDS = 1
CONNECT_TIMEOUT_SECONDS = 2
DEFAULT_INBOX_PREFIX = "_INBOX"
CLOSE_AFTER_CANCEL_SECONDS = 2.0
"""How long `close`, cancelled, still waits for the drain it started before closing at once."""

Connection: TypeAlias = Client
"""A live NATS connection, as `connect` returns it. Services hold it and hand it (or its
`jetstream()`) to bus functions; only modules of `services.bus` call NATS through it."""
JetStream: TypeAlias = JetStreamContext
"""A connection's JetStream context (`Connection.jetstream()`), handed to bus functions."""

NATS_DISCONNECTED = "NATS disconnected"
"""The hold `hold_while_disconnected` puts on a service's readiness (shown by /readyz)."""


class ReadyHold(Protocol):
    """A readiness that conditions can hold down (`services.runtime.health.ReadyFlag`)."""

    def hold(self, reason: str) -> None: ...

    def release(self, reason: str) -> None: ...


_FOLLOWERS: weakref.WeakKeyDictionary[Client, list[ReadyHold]] = weakref.WeakKeyDictionary()
"""The followers (`hold_while_disconnected`) of each client `connect` made: its callbacks'
list, held without the callbacks, which refer to the client (it could never be freed)."""


def hold_while_disconnected(client: Connection, ready: ReadyHold) -> Callable[[], None]:
    """Hold `ready` down (`NATS_DISCONNECTED`) while `client` is disconnected: from the
    moment nats-py reports the connection lost until it reconnected (or for good once it is
    closed), and at once if it is not connected now. A service is not ready while it cannot
    reach NATS, at its start and mid-run alike.

    Shapes: returns a function that stops following the client and releases the hold. A
    client `connect` did not make is looked at now only. A `ready` already following
    `client` (a planner's readiness, followed by its leader election and again by the
    planner while it leads) is left to its first follower: the function returned then does
    nothing, so a leader stepping down does not release a hold its standby still needs.
    """
    if not client.is_connected:
        ready.hold(NATS_DISCONNECTED)
    followers = _FOLLOWERS.get(client)
    if followers is not None and any(follower is ready for follower in followers):
        return lambda: None
    if followers is not None:
        followers.append(ready)

    def stop() -> None:
        if followers is not None and ready in followers:
            followers.remove(ready)
        ready.release(NATS_DISCONNECTED)

    return stop


def followers(client: Connection) -> list[ReadyHold]:
    """The readiness following `client` now (`hold_while_disconnected`); none for a client
    `connect` did not make."""
    return list(_FOLLOWERS.get(client, ()))


def client_of(js: JetStream) -> Connection:
    """The connection a JetStream context works through (nats-py keeps it there; no accessor)."""
    client: Connection = js._nc
    return client


NO_JETSTREAM_HINT = "start nats-server with -js, or a jetstream {} block in its configuration"


def jetstream_problem(client: Connection | None, answer: str | None = None) -> str:
    """Why JetStream did not answer a request of `client` (nats-py's ServiceUnavailableError:
    no responder on its API, or a 503 from it with NATS's `answer`), in one line naming the
    server: `NATS at <url> has no JetStream (start nats-server with -js, ...)` when the server
    said at connect that it runs none (its INFO's `jetstream` flag), else that JetStream there
    does not answer now (a cluster without a quorum, an account without JetStream): the same
    error means both. Unknown client: `JetStream not available at the NATS server: is it
    enabled?`."""
    if client is None:
        return "JetStream not available at the NATS server: is it enabled?"
    where = connected_server(client)
    info = getattr(client, "_server_info", None)  # nats-py's INFO of the server; no accessor
    if isinstance(info, dict) and not info.get("jetstream"):
        return f"NATS at {where} has no JetStream ({NO_JETSTREAM_HINT})"
    if answer:
        return f"JetStream at {where} is not available: {answer}"
    return (f"JetStream at {where} does not answer (a cluster without a quorum, or no "
            "JetStream for this user's account?)")


def connected_server(client: Connection) -> str:
    """`scheme://host:port` of the server `client` is connected to, without any credentials
    its URL carries; `NATS` when not connected."""
    url = client.connected_url
    return f"{url.scheme}://{url.hostname}:{url.port}" if url is not None else "NATS"


async def connect(
    settings: BusSettings,
    *,
    name: str,
    first_connect_timeout_seconds: float | None = FIRST_CONNECT_TIMEOUT_SECONDS,
) -> Connection:
    """Connect to `settings.url` as client `name`; once connected, reconnect forever.

    Shapes: `settings.url` is one URL or several, comma-separated (a cluster's servers).
    Units: `first_connect_timeout_seconds` bounds the wait for the first connection; None
        waits for as long as it takes (a service: NATS may start after it), retrying every
        `RECONNECT_WAIT_SECONDS` and saying so at once in one warning
        (`cannot reach NATS at <url>: <reason>; retrying every 1s`), repeated every
        `REPEATS_BETWEEN_LOGS`-th failure of the same kind with its count.
    Raises:
        BusUnavailable: no URL is set, the first connection did not succeed in time, or the
            server refused the credentials (at once: retrying would not change them).
    Source: nats-py `Client.connect` with `max_reconnect_attempts=-1`; published messages
        issued while reconnecting are buffered by the client (up to its pending size).
    """
    if not settings.url:
        raise BusUnavailable("no NATS url configured (start an embedded server or pass --nats)")
    client = Client()
    callbacks = _Callbacks(name, client, waiting_for=(
        urls.shown(settings.url) if first_connect_timeout_seconds is None else None))
    _FOLLOWERS[client] = callbacks.followers
    try:
        await _connect_unless_refused(
            client, callbacks, first_connect_timeout_seconds,
            servers=urls.server_urls(settings.url),
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
        )
    except asyncio.CancelledError:
        await close(client)  # nats-py may have connected as the cancellation arrived
        raise
    except _Refused as refused:
        await client.close()
        raise BusUnavailable(
            f"NATS at {urls.shown(settings.url)} refused the credentials of {name}: "
            f"{refused.error}") from refused.error
    except (TimeoutError, OSError, nats.errors.Error) as error:
        await client.close()
        cause = callbacks.last if isinstance(error, TimeoutError) and callbacks.last else error
        waited = "" if first_connect_timeout_seconds is None \
            else f" for {first_connect_timeout_seconds:g}s"
        raise BusUnavailable(
            f"NATS at {urls.shown(settings.url)} unreachable{waited}: {reason(cause)}"
        ) from error
    callbacks.connected = True
    callbacks.forget_errors()
    log.info("connected to NATS %s as %s", connected_server(client), name)
    return client


async def close(client: Connection) -> None:
    """Drain `client` (its subscriptions, then what it published) and close it; a client
    already closed, lost or never connected is closed as it is, without an error.

    Units: cancelled, it waits `CLOSE_AFTER_CANCEL_SECONDS` more for the drain to end
    (milliseconds on a healthy connection), then cuts it short and closes the client as it
    is; nats-py still finishes the flush its drain began (at most its flush timeout, 10 s).
    Raises:
        asyncio.CancelledError: when cancelled during it, always. nats-py's `drain` and
            `flush` swallow a cancellation (`except CancelledError: pass`), and one arriving
            before its drain got going leaves its subscription tasks behind; so a task that
            drained a connection as a SIGTERM arrived carried on as if nothing happened
            (`gangsched run` signalled while it checked NATS started its services anyway and
            never stopped). The drain runs as a task of its own, never cut short inside.
    """
    draining = asyncio.ensure_future(_drain(client))
    try:
        await asyncio.shield(draining)
    except asyncio.CancelledError:
        await asyncio.wait({draining}, timeout=CLOSE_AFTER_CANCEL_SECONDS)
        if not draining.done():
            draining.cancel()
            await asyncio.gather(draining, return_exceptions=True)
            with contextlib.suppress(Exception):
                await client.close()
        raise


async def _drain(client: Connection) -> None:
    try:
        await client.drain()
    except Exception:  # closed, reconnecting, never connected: close what is left
        await close_at_once(client)


async def close_at_once(client: Connection) -> None:
    """Close `client` without draining it first: for a reader, which has nothing of its own
    to flush and whose user waits (a Ctrl-C), where a drain waits out each subscription's
    flush timeout on a server that stopped answering (25 s against 5 s measured). A client
    already closed, or lost (nats-py's `close` then raises), is closed as it is, without an
    error. Raises asyncio.CancelledError when cancelled."""
    try:
        await client.close()
    except Exception:
        _end_what_close_left(client)


def _end_what_close_left(client: Connection) -> None:
    """End what nats-py's `close` left running when it raised: with data pending for a server
    that is gone (a client reconnecting in vain), its `_close` waits on the lost transport's
    `drain`, which raises `ConnectionResetError` before the subscriptions' message tasks are
    cancelled and the transport closed (nats-py 2.16). Private attributes, read defensively:
    a nats-py without them has nothing of this kind to end."""
    subscriptions = getattr(client, "_subs", {})
    for subscription in list(subscriptions.values()):  # as `_close` ends them
        task = getattr(subscription, "_wait_for_msgs_task", None)
        if isinstance(task, asyncio.Task) and not task.done():
            task.cancel()
        iterator = getattr(subscription, "_message_iterator", None)
        if iterator is not None and hasattr(iterator, "_cancel"):
            iterator._cancel()
        waiting = getattr(subscription, "_pending_next_msgs_calls", None)
        if isinstance(waiting, dict):
            for future in waiting.values():
                future.cancel()
            waiting.clear()
    if isinstance(subscriptions, dict):
        subscriptions.clear()
    transport = getattr(client, "_transport", None)
    if transport is not None:
        with contextlib.suppress(Exception):
            transport.close()


class _Refused(Exception):
    """The server refused the credentials before the first connection (never retried)."""

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


async def _connect_unless_refused(client: Client, callbacks: _Callbacks,
                                  timeout_seconds: float | None, **options: Any) -> None:
    """`client.connect(**options)`, given up at the first refusal of the credentials (and
    after `timeout_seconds`, unless None).

    Raises:
        _Refused: the server answered "Authorization Violation".
        TimeoutError, OSError, nats.errors.Error: not connected within `timeout_seconds`.
    """
    connecting = asyncio.ensure_future(client.connect(**options))
    refused = asyncio.ensure_future(callbacks.refused.wait())
    try:
        await asyncio.wait({connecting, refused}, timeout=timeout_seconds,
                           return_when=asyncio.FIRST_COMPLETED)
    finally:
        # again and again: a cancellation nats-py loses (the connect attempt's error returned
        # instead, Python 3.11's wait_for) leaves it retrying forever
        await cancellation.cancel_until_done((connecting, refused))
    if callbacks.refusal is not None and not client.is_connected:
        raise _Refused(callbacks.refusal)
    if connecting.cancelled():
        raise TimeoutError()
    connecting.result()


def authenticated_user(settings: BusSettings) -> str | None:
    """The user name the client authenticates as, picked as nats-py picks it: the given user
    with a password, else the user of a URL carrying `user:password@`, else the given user
    (with a credentials file)."""
    if settings.user and settings.password:
        return settings.user
    return urls.user(settings.url or "") or settings.user


def inbox_prefix(settings: BusSettings) -> str:
    """`_INBOX_<user>` for a named user (given, or in the URL), else nats-py's `_INBOX`.

    Each user's NATS permissions let it subscribe to its own inbox only, so one service (or a
    read-only subscriber on `_INBOX.>`) cannot read the replies and deliveries of another.
    A user named only in the URL (`nats://watcher:...@nats:4222`) gets its inbox too, or the
    chart's permissions would refuse every reply.
    """
    user = authenticated_user(settings)
    if not user:
        return DEFAULT_INBOX_PREFIX
    return f"{DEFAULT_INBOX_PREFIX}_{subjects.token(user)}"


def in_words(error: BaseException) -> str:
    """A connection error as its warning says it: `unreachable.reason` (`connection refused`,
    `timed out`, ...) without nats-py's `nats: ` prefix, and a connection its server closed
    (nats-py's `unexpected EOF`) said to be one; not the exception's repr."""
    said = " ".join(reason(error).split()).removeprefix("nats: ")
    return f"the server closed the connection ({said})" if said == "unexpected EOF" else said


class _Callbacks:
    """nats-py connection callbacks that log under the client's name.

    With `waiting_for` (the URL shown, without credentials) the first connection is waited for
    as long as it takes, and its failures are logged as they happen (`_log_waiting`).
    """

    def __init__(self, name: str, client: Client, waiting_for: str | None = None) -> None:
        self.name = name
        self.client = client
        self.waiting_for = waiting_for
        self.refusal: Exception | None = None
        self.refused = asyncio.Event()
        self.connected = False
        """Whether the first connection succeeded: until then errors are only kept in `last`
        (the caller's one error line names it), not logged."""
        self.last: Exception | None = None
        self._last_error = ""
        self._repeats = 0
        self._waiting_failures = Repeats()
        """Failures of each kind (`_kind`) while waiting for the first connection."""
        self.followers: list[ReadyHold] = []
        """Readiness held down while the connection is lost (`hold_while_disconnected`)."""

    async def on_error(self, error: Exception) -> None:
        """Log the error; errors of one kind again and again (servers down, retried every
        second, each address in turn) are logged once, then every `REPEATS_BETWEEN_LOGS`-th
        time with their count. Kind: the exception's class and errno (`_kind`). Before the
        first connection they are kept for the caller's error instead (debug log only), or,
        when waiting for it (`waiting_for`), logged as `_log_waiting` says; a refusal of the
        credentials is never logged as unreachable: `connect` raises it at once."""
        self.last = error
        if AUTHORIZATION_VIOLATION in str(error).lower() or isinstance(
                error, nats.errors.AuthorizationError):
            self.refusal = self.refusal or error
            self.refused.set()
        if not self.connected:
            if self.waiting_for is not None and self.refusal is None:
                self._log_waiting(error)
            else:
                log.debug("NATS client %s: %r", self.name, error)
            return
        repeats = self._count(error)
        if repeats == 0:
            log.warning("NATS client %s: %s", self.name, in_words(error))
        elif repeats % REPEATS_BETWEEN_LOGS == 0:
            log.warning("NATS client %s: %s (%d such errors in a row)", self.name,
                        in_words(error), repeats + 1)

    def _log_waiting(self, error: Exception) -> None:
        """Before the first connection, when waiting for it: one warning at the first failure
        of each kind, naming the URL and the reason, then every `REPEATS_BETWEEN_LOGS`-th of
        that kind. Counted per kind, not in a row: a cluster's servers failing each in its own
        way (one refusing, one's name not resolving yet) alternate kinds on every retry."""
        total = self._waiting_failures.count(_kind(error))
        if total is None:
            return
        count = f" ({total} such failures)" if total > 1 else ""
        log.warning("cannot reach NATS at %s: %s; retrying every %gs%s", self.waiting_for,
                    reason(error), RECONNECT_WAIT_SECONDS, count)

    def _count(self, error: Exception) -> int:
        """How many errors of the kind of `error` (`_kind`) came right before it."""
        kind = _kind(error)
        if kind == self._last_error:
            self._repeats += 1
        else:
            self._last_error, self._repeats = kind, 0
        return self._repeats

    async def on_disconnected(self) -> None:
        """Hold the followers' readiness down; say so unless the client is being closed."""
        for ready in list(self.followers):
            ready.hold(NATS_DISCONNECTED)
        if not self.client.is_closed:
            log.warning("NATS client %s disconnected; reconnecting", self.name)

    def forget_errors(self) -> None:
        """Connected: the next error is logged as the first of its kind."""
        self._last_error, self._repeats = "", 0

    async def on_reconnected(self) -> None:
        """Release the followers' readiness; say so at the level the disconnect was said (a
        command showing warnings only, `decisions --follow`, showed the one, never the other,
        and seemed disconnected for good)."""
        self.forget_errors()
        for ready in list(self.followers):
            ready.release(NATS_DISCONNECTED)
        log.warning("NATS client %s reconnected", self.name)

    async def on_closed(self) -> None:
        """Closed for good: the followers stay held down."""
        for ready in list(self.followers):
            ready.hold(NATS_DISCONNECTED)
        log.info("NATS client %s closed", self.name)


def _kind(error: Exception) -> str:
    """What makes two connection errors the same for logging: class and errno, not the
    address in the message (a cluster's servers fail in turn with different ones)."""
    return f"{type(error).__name__}:{getattr(error, 'errno', None)}"
