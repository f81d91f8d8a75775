"""Informer-style list-then-watch of one resource, yielding raw API JSON objects.

Layer: kube. Lists in pages, then watches from the list's resourceVersion with bookmarks and a
server-side timeout, resumes from the last resourceVersion seen, and on 410 Gone lists again,
yielding synthetic deletes for the objects that vanished meanwhile. Reconnects forever with
capped backoff, telling a shared `Health` how each list/watch fares (for readiness, and for one
log line per kind of connection failure instead of one per resource and retry). Never
deserialises into models and never drops a change: the next request is made only after the
consumer took every change of the previous one.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from services.kube import errors
from services.kube.client import Query
from services.kube.resources import Resource, list_items, metadata
from services.runtime.unreachable import Repeats

log = logging.getLogger(__name__)

PAGE_SIZE = 500
READ_TIMEOUT_MARGIN_SECONDS = 30.0
SILENCE_LIMIT_SECONDS = 90.0
"""The longest a watch may bring nothing before it is taken for broken, closed and opened
again from its last version (`KubeSilent`). The API server's watch cache sends every watch
that asks for bookmarks (they all do) one at least every minute (`defaultBookmarkFrequency`)
once it has seen a change of the resource, and one 2 s before its timeout, so silence this
long means a frozen API server or a connection dropped without a close (or a resource that
never changed since the API server started: reopened every 90 s, harmlessly). client-go
finds those by HTTP/2 pings (30 s idle, 15 s to answer); over HTTP/1.1 the bookmark is the
heartbeat. An API server without a watch cache
sends no periodic bookmark: its quiet watches are reopened every 90 s, from their version,
never with a new list."""
BACKOFF_FIRST_SECONDS = 0.5
BACKOFF_MAX_SECONDS = 30.0
MIN_WATCH_SECONDS = 1.0
"""A watch ending sooner than this without an error and without progress (no change, and no
bookmark past the version it started from) is retried after a backoff (client-go's Reflector:
"very short watch: ... watch lasted less than a second and no items received"; a bookmark at the
same version is no progress here, so a server answering every watch with one cannot make the
watcher spin). One that brought changes is resumed at once: the API server ends the
watches of clients it finds slow to read (`apiserver_terminated_watchers_total`), and during a
burst of pod creations in the cluster benchmark it ended this one 20-40 times, each of which
the backoff, doubling, turned into seconds of not watching at all."""
UNREADY_AFTER_SECONDS = BACKOFF_FIRST_SECONDS * 2**3
"""How long a list/watch may fail to (re)connect before it counts as failing (`Health.failing`),
4 s: longer than its first three retries wait (0.5 + 1 + 2 s of backoff), so one dropped
connection or an API server restarting, mended by those retries, never shows; an API server
that is down does within 4 s of the first failure. A watch ending at its timeout or with 410
Gone is no failure at all."""

ChangeType = Literal["observed", "deleted"]


class Requester(Protocol):
    """What list/watch needs of `services.kube.client.KubeClient` (fakes in unit tests)."""

    async def request(self, method: str, path: str, *, query: Query = ()) -> dict[str, Any]: ...

    def stream(
        self, path: str, query: Query, *, read_timeout_seconds: float,
        opened: Callable[[], None] | None = None,
    ) -> AsyncIterator[dict[str, Any]]: ...


@dataclass(frozen=True)
class Change:
    """An object was listed, added or modified (`observed`) or deleted.

    Shapes: `obj` is the API JSON; for a synthetic delete (`is_synthetic`: the object vanished
    while the watch was down) it holds only `metadata` name, namespace, uid, resourceVersion
    (the last one seen). `is_watched`: an observed change from a watch event, not a list (a
    resync list restates each object on purpose; a watch event may change only what a reader
    ignores, such as a status heartbeat).
    """

    type: ChangeType
    obj: dict[str, Any]
    is_synthetic: bool = False
    is_watched: bool = False


@dataclass(frozen=True)
class Synced:
    """A full list was completed; every change before this one reflects it."""

    resource_version: str


Observation = Change | Synced


@dataclass(frozen=True)
class Known:
    """What is remembered of an object to detect its disappearance. Units: none."""

    name: str
    namespace: str
    resource_version: str

    def stub(self, uid: str) -> dict[str, Any]:
        """A metadata-only object, for a synthetic delete."""
        meta = {"name": self.name, "uid": uid, "resourceVersion": self.resource_version}
        if self.namespace:
            meta["namespace"] = self.namespace
        return {"metadata": meta}


class Inventory:
    """The objects last seen, by uid; turns lists and watch events into changes.

    Pure bookkeeping: no I/O. Seeded with the objects a previous run published, it makes the
    first list skip unchanged objects and delete the ones that are gone.
    """

    def __init__(self, known: Mapping[str, Known] | None = None) -> None:
        self._known: dict[str, Known] = dict(known or {})
        self._by_name = {(k.namespace, k.name): uid for uid, k in self._known.items()}
        self._listed: set[str] = set()
        self._republish: set[str] = set()

    def __len__(self) -> int:
        return len(self._known)

    def begin_list(self, *, resync: bool = False) -> None:
        """Start a full list: forget which objects were listed so far. With `resync`, every
        listed object counts as changed (published again), as an informer's resync."""
        self._listed = set()
        self._republish = set(self._known) if resync else set()

    def listed(self, obj: dict[str, Any]) -> list[Change]:
        """Record one listed object: an observed change unless known at this version.

        Shapes: a known object of the same namespace/name but another uid was replaced, so its
        synthetic delete comes first (a name holds one object at a time).
        """
        uid, known = _identity(obj)
        self._listed.add(uid)
        changes = self._replaced(uid, known)
        if self._known.get(uid) != known or uid in self._republish:
            self._republish.discard(uid)
            self._remember(uid, known)
            changes.append(Change("observed", obj))
        return changes

    def end_list(self) -> list[Change]:
        """Finish a full list: synthetic deletes of every known object it did not contain.

        Shapes: ordered by namespace, name, uid.
        """
        gone = sorted(
            (uid for uid in self._known if uid not in self._listed),
            key=lambda uid: (self._known[uid].namespace, self._known[uid].name, uid),
        )
        self._listed = set()
        self._republish = set()
        return [self._forget(uid) for uid in gone]

    def watched(self, change_type: ChangeType, obj: dict[str, Any]) -> list[Change]:
        """Record one watch event (observed or deleted)."""
        uid, known = _identity(obj)
        if change_type == "deleted":
            self._known.pop(uid, None)
            if self._by_name.get((known.namespace, known.name)) == uid:
                del self._by_name[(known.namespace, known.name)]
            return [Change("deleted", obj)]
        changes = self._replaced(uid, known)
        self._remember(uid, known)
        return [*changes, Change("observed", obj, is_watched=True)]

    def _replaced(self, uid: str, known: Known) -> list[Change]:
        """The synthetic delete of another object that held this name, if any."""
        previous = self._by_name.get((known.namespace, known.name))
        if previous is None or previous == uid or previous not in self._known:
            return []
        return [self._forget(previous)]

    def _remember(self, uid: str, known: Known) -> None:
        self._known[uid] = known
        self._by_name[(known.namespace, known.name)] = uid

    def _forget(self, uid: str) -> Change:
        """Drop `uid`; its synthetic delete."""
        known = self._known.pop(uid)
        if self._by_name.get((known.namespace, known.name)) == uid:
            del self._by_name[(known.namespace, known.name)]
        return Change("deleted", known.stub(uid), is_synthetic=True)


class Health:
    """How the list/watches of one API server fare; one instance shared by all of them.

    Readiness: since when each list/watch has failed without an answer since (`failing`);
    `changed` is set whenever one starts or stops failing. Logging: a connection failure
    (KubeUnreachable) is about the server, not a resource, so it is logged once per kind
    (`cannot reach the API server at <url>: connection refused; retrying in 0.5s`), then every
    `REPEATS_BETWEEN_LOGS`-th time with its count, whichever resource met it, and the first
    answer after it is logged once; an error the server answered (403, 404, ...) is logged
    for its resource at every retry, with what to do about it.
    Units: `clock` gives seconds (monotonic).
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._failing_since: dict[str, tuple[str, float]] = {}
        """By list path: the resource's plural name and when its failures began."""
        self._repeats = Repeats()
        self._server = ""
        self.changed = asyncio.Event()

    def reached(self, resource: Resource) -> None:
        """A request of `resource`'s list/watch was answered with success (or 410 Gone)."""
        self._answered()
        if self._failing_since.pop(resource.list_path, None) is not None:
            self.changed.set()

    def silent(self, resource: Resource) -> None:
        """`resource`'s watch brought nothing for `SILENCE_LIMIT_SECONDS` and is opened
        again: it counts as failing (unlogged) until the server answers, so a frozen server
        makes the watcher unready `UNREADY_AFTER_SECONDS` later, and a server that merely sends
        no bookmarks, answering the new watch at once, shows nothing."""
        self._begin_failing(resource)

    def failed(self, resource: Resource, error: errors.KubeError, delay_seconds: float) -> None:
        """A request of `resource`'s list/watch failed with `error`; it is retried in
        `delay_seconds`. Logs as the class says."""
        self._begin_failing(resource)
        if isinstance(error, errors.KubeUnreachable):
            count = self._repeats.count(error.why)
            if count is not None:
                self._server = error.server
                repeats = f" ({count} such failures)" if count > 1 else ""
                log.warning("cannot reach the API server at %s: %s; retrying in %gs%s",
                            error.server, error.why, delay_seconds, repeats)
            return
        if error.status:
            self._answered()
        log.warning("%s list/watch failed, retrying in %gs: %s%s", resource.kind,
                    delay_seconds, error, _hint(resource, error))

    def failing(
        self, grace_seconds: float = UNREADY_AFTER_SECONDS
    ) -> tuple[list[str], float | None]:
        """The plural names of the resources whose list/watch has failed for `grace_seconds`
        or longer (sorted), and the seconds until another one would (None: none is failing
        for less)."""
        now = self._clock()
        long_failing: list[str] = []
        soonest: float | None = None
        for plural, since in self._failing_since.values():
            left = since + grace_seconds - now
            if left <= 0:
                long_failing.append(plural)
            elif soonest is None or left < soonest:
                soonest = left
        return sorted(long_failing), soonest

    def _begin_failing(self, resource: Resource) -> None:
        """Count `resource`'s list/watch as failing from now, unless it already is."""
        if resource.list_path not in self._failing_since:
            self._failing_since[resource.list_path] = (resource.plural, self._clock())
            self.changed.set()

    def _answered(self) -> None:
        """The server answered: say so once if it was logged unreachable; count afresh."""
        if self._repeats.clear():
            log.info("the API server at %s answers again", self._server)


async def observe(
    client: Requester,
    resource: Resource,
    *,
    known: Mapping[str, Known] | None = None,
    watch_timeout_seconds: int = 300,
    page_size: int = PAGE_SIZE,
    resync_seconds: float | None = None,
    health: Health | None = None,
) -> AsyncGenerator[Observation, None]:
    """Yield every change of `resource`, forever: a full list, `Synced`, then watch events.

    Shapes: after each full list (the first, after 410 Gone, and every `resync_seconds`)
    comes one `Synced`. A resync list yields every object again, changed or not, so a log
    with limited retention always holds a recent event of every object. `health` (shared by
    the list/watches of one server; default: one of its own) is told of every answer and
    failure.
    Units: `watch_timeout_seconds` is the server-side length of one watch request;
    `resync_seconds` is checked between watch requests (None: never), and counts from the
    start of the first list or the last resync that completed: a relist after 410 Gone,
    which yields only the objects changed since, does not put the resync off, and a resync
    list that fails is retried as a resync.
    Raises:
        nothing from the API: every KubeError is logged (`Health.failed`) and retried with
        capped backoff (KubeGone by listing again: at once after a watch that lasted, after
        the backoff when the list or watch met it within `MIN_WATCH_SECONDS`).
    Source: client-go's Reflector (ListAndWatch, bookmarks, relist on "too old
        resource version").
    """
    health = health or Health()
    reached = functools.partial(health.reached, resource)
    inventory = Inventory(known)
    resource_version: str | None = None
    backoff = _Backoff()
    loop = asyncio.get_running_loop()
    step = "list"  # what a KubeGone met: "list" (its continue token) or "watch" (its version)
    listed_at: float | None = None  # the start of the first list or last resync completed
    resync = False
    while True:
        attempt_started = loop.time()
        try:
            if listed_at is not None and not resync:  # a relist after 410 Gone may be due
                resync = (resync_seconds is not None
                          and loop.time() - listed_at >= resync_seconds)
                if resync:
                    log.info("%s resync: listing again and republishing every object",
                             resource.kind)
                    resource_version = None
            if resource_version is None:
                step = "list"
                started_list = loop.time()
                async for observation in _list(client, resource, inventory, page_size, reached,
                                               resync=resync):
                    yield observation
                    if isinstance(observation, Synced):
                        resource_version = observation.resource_version
                        if resync or listed_at is None:
                            # these restate every object; a relist after 410 Gone does not
                            listed_at, resync = started_list, False
                log.info("listed %s: %d objects", resource.plural, len(inventory))
            assert resource_version is not None
            step = "watch"
            started = loop.time()
            progressed = False
            async for observation in _watch(client, resource, inventory, resource_version,
                                            watch_timeout_seconds, reached):
                if isinstance(observation, Synced):
                    progressed |= observation.resource_version != resource_version
                    resource_version = observation.resource_version
                    continue
                progressed = True
                if not observation.is_synthetic:
                    resource_version = _resource_version(observation.obj) or resource_version
                yield observation
            if not progressed and loop.time() - started < MIN_WATCH_SECONDS:
                await asyncio.sleep(backoff.next_seconds())  # a server ending watches at once
            else:
                backoff.reset()
        except errors.KubeGone as error:
            reached()
            resource_version = None
            if loop.time() - attempt_started < MIN_WATCH_SECONDS:
                # Gone at once (a list's continue token or the version it listed at already
                # expired): list again after a backoff, not in a loop against the server
                delay = backoff.next_seconds()
                log.info("%s %s expired at once (%s); listing again in %gs",
                         resource.kind, step, error, delay)
                await asyncio.sleep(delay)
            else:
                log.info("%s %s expired (%s); listing again", resource.kind, step, error)
        except errors.KubeSilent as error:
            # not ready until the watch opens again (a frozen server never lets it)
            log.debug("%s: %s; opening it again", resource.kind, error)
            health.silent(resource)
        except errors.KubeError as error:
            delay = backoff.next_seconds()
            if error.retry_after_seconds is not None:  # as client-go waits a 429's Retry-After
                delay = max(delay, float(error.retry_after_seconds))
            health.failed(resource, error, delay)
            await asyncio.sleep(delay)


def _hint(resource: Resource, error: errors.KubeError) -> str:
    """What to do when RBAC forbids the list or watch (HTTP 403), or when the API server does
    not serve the resource at all (HTTP 404 on its collection): a CRD not installed, or an API
    group not enabled."""
    if error.status == 403:
        parts = resource.list_path.split("/")
        name = f"{resource.plural}.{parts[2]}" if parts[1] == "apis" else resource.plural
        return (f" (RBAC: let this identity list and watch {name}, as the watcher ClusterRole "
                "of deploy/chart/templates/rbac.yaml does; not ready until it may)")
    if error.status != 404 or not resource.list_path.startswith("/apis/"):
        return ""
    group_version = resource.list_path.split("/")[2:4]
    return (f" (does this cluster serve {'/'.join(group_version)}? install its CRD, e.g. "
            "`kubectl apply --server-side -f deploy/crds/` for scheduling.x-k8s.io, or enable "
            "the API group and feature gates for scheduling.k8s.io; see docs/integrations.md)")


async def _list(
    client: Requester, resource: Resource, inventory: Inventory, page_size: int,
    reached: Callable[[], None], *, resync: bool = False,
) -> AsyncIterator[Observation]:
    """One full, paginated list: changes for new or modified objects (every object, with
    `resync`), deletes, then Synced. `reached` is called after each page received."""
    inventory.begin_list(resync=resync)
    token = ""
    while True:
        query = [("limit", str(page_size))] + ([("continue", token)] if token else [])
        page = await client.request("GET", resource.list_path, query=query)
        reached()
        items = page.get("items", False)
        if items is not None and not isinstance(items, list):
            # not a list (a proxy's answer?): read as one of nothing, every known object
            # would be told deleted
            raise errors.KubeUnavailable(f"{resource.kind} list: the answer is no list "
                                         f"(kind {page.get('kind')!r})")
        for obj in list_items(page):
            for change in inventory.listed(obj):
                yield change
        page_meta = metadata(page)
        token = str(page_meta.get("continue") or "")
        if not token:
            break
    for change in inventory.end_list():
        yield change
    yield Synced(str(page_meta.get("resourceVersion") or ""))


async def _watch(
    client: Requester,
    resource: Resource,
    inventory: Inventory,
    resource_version: str,
    timeout_seconds: int,
    opened: Callable[[], None],
) -> AsyncIterator[Observation]:
    """One watch request from `resource_version` until the server ends it; `opened` is
    called once the server accepted it.

    Shapes: yields Changes, and `Synced(rv)` for a bookmark (only the version advances).
    Raises:
        KubeGone: the version is too old; other KubeErrors from an ERROR event.
    """
    query = [
        ("watch", "true"),
        ("resourceVersion", resource_version),
        ("allowWatchBookmarks", "true"),
        ("timeoutSeconds", str(timeout_seconds)),
    ]
    read_timeout = min(timeout_seconds + READ_TIMEOUT_MARGIN_SECONDS, SILENCE_LIMIT_SECONDS)
    async for event in client.stream(resource.list_path, query, read_timeout_seconds=read_timeout,
                                     opened=opened):
        event_type = event.get("type")
        obj = event.get("object")
        if not isinstance(obj, dict):
            raise errors.KubeUnavailable(f"{resource.kind} watch: event without object")
        if event_type in ("ADDED", "MODIFIED", "DELETED"):
            change_type: ChangeType = "deleted" if event_type == "DELETED" else "observed"
            for change in inventory.watched(change_type, obj):
                yield change
        elif event_type == "BOOKMARK":
            yield Synced(_resource_version(obj) or resource_version)
        elif event_type == "ERROR":
            code = obj.get("code")
            raise errors.from_status(code if isinstance(code, int) else 0, obj,
                                     f"{resource.kind} watch")
        else:
            log.warning("%s watch: unknown event type %r ignored", resource.kind, event_type)


def known_from(stubs: Iterable[tuple[str, str, str, str]]) -> dict[str, Known]:
    """Seed for `observe` from `(uid, namespace, name, resource_version)` tuples."""
    return {uid: Known(name, namespace, rv) for uid, namespace, name, rv in stubs}


def _identity(obj: dict[str, Any]) -> tuple[str, Known]:
    """`(uid, Known)` of an API object."""
    meta = metadata(obj)
    known = Known(
        name=str(meta.get("name") or ""),
        namespace=str(meta.get("namespace") or ""),
        resource_version=str(meta.get("resourceVersion") or ""),
    )
    return str(meta.get("uid") or ""), known


def _resource_version(obj: dict[str, Any]) -> str:
    """`metadata.resourceVersion` of `obj`, or empty."""
    return str(metadata(obj).get("resourceVersion") or "")


class _Backoff:
    """Exponential delays between reconnects: 0.5 s, 1 s, 2 s, ... capped at 30 s."""

    def __init__(self) -> None:
        self._failures = 0

    def next_seconds(self) -> float:
        delay = BACKOFF_FIRST_SECONDS * float(2 ** min(self._failures, 16))
        self._failures += 1
        return min(delay, BACKOFF_MAX_SECONDS)

    def reset(self) -> None:
        self._failures = 0
