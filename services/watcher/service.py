"""The watcher service: list/watch the resources the planner reads, publish slim events, ticks.

Layer: watcher shell, the only reader of the Kubernetes API (see docs/architecture.md). Each
resource is observed by `services.kube.listwatch.observe`; changes become events (`slim`)
stamped with the wall-clock time of observation and go through one bounded queue to a single
publisher loop that publishes in order, pipelined (`publish_many`), waiting out NATS outages.
The queue's bound is the back-pressure: a watch is never read further than QUEUE_SIZE changes
ahead of what JetStream stored. A watch event that slims to its object's last published event
(a status heartbeat, a condition: `repeats`) is not published. A restarted watcher seeds its
inventory from the log (`recovery`), so nothing that changed while it was down is lost,
deletes included. It is ready once the first lists are published and for as long as no
list/watch fails to reach the API server for longer than `listwatch.UNREADY_AFTER_SECONDS` (it
keeps retrying meanwhile), its NATS connection is up and its EVENTS stream takes its
publishes. A failing list/watch holds its readiness down with the reason (`list_health`), from
the start: /readyz says why it was never ready, not only why it stopped being ready.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from services.bus import connection, streams
from services.bus.connection import Connection
from services.bus.publishing import Publisher as BusPublisher
from services.config.settings import Settings
from services.kube import client as kube_client
from services.kube import listwatch
from services.kube.listwatch import Change, Known, Requester, Synced
from services.kube.resources import (
    NATIVE_PODGROUP_GROUP,
    NATIVE_PODGROUPS,
    PODGROUP_API_VERSION,
    PODGROUPS,
    Resource,
    metadata,
    watched,
)
from services.runtime.cancellation import cancel_and_wait
from services.watcher import kueue, messages, native, recovery
from services.watcher.list_health import ReasonedHealth
from services.watcher.messages import PublishItem
from services.watcher.repeats import Repeats

log = logging.getLogger(__name__)

QUEUE_SIZE = 4096
BATCH_SIZE = 512
"""Messages published per pipelined `publish_many` call, at most."""


class ReadyFlag(Protocol):
    """Readiness of this service (`services.runtime.health.ReadyFlag`)."""

    def set(self, is_ready: bool = True) -> None: ...


class HeldReadyFlag(ReadyFlag, Protocol):
    """A `ReadyFlag` that conditions can hold down (`services.runtime.health.ReadyFlag`)."""

    def hold(self, reason: str) -> None: ...

    def release(self, reason: str) -> None: ...


class Publisher(Protocol):
    """JetStream publishing with message ids (`services.bus.publishing.Publisher`)."""

    async def publish_many(self, items: Sequence[PublishItem]) -> None: ...


@dataclass(frozen=True)
class _ListSynced:
    """Queue marker: every change of the latest full list of the resource at `list_path` is
    ahead of it in the queue."""

    list_path: str


_Entry = PublishItem | _ListSynced


MIN_RESYNC_SECONDS = 3600.0


def resync_seconds(retention_seconds: float) -> float | None:
    """How often every object is published again: within half the EVENTS retention, so the
    stream always holds one event of every object (a planner rebuilt from it misses none); at
    most hourly; never when retention is unlimited (0). Units: seconds."""
    if retention_seconds <= 0:
        return None
    return max(retention_seconds / 2, MIN_RESYNC_SECONDS)


async def run_watcher(settings: Settings, nc: Connection, ready: HeldReadyFlag) -> None:
    """Run the watcher until cancelled; `ready` is set once the first lists are published,
    and held down while the NATS connection is lost (it can publish nothing then:
    `connection.hold_while_disconnected`) and while the EVENTS stream takes none of its
    publishes (`publishing: stream <name> gone or leaderless`, from a publish that found no
    stream until one is stored: `services.bus.publishing.Publisher`).

    Raises:
        KubeError: no Kubernetes credentials. BusMisconfigured: the streams cannot be set up.
        BusUnavailable, BusRefused, NotFound (`services.bus.errors`): the log could not be
            read at start (a supervisor restarts the watcher).
    """
    ready.set(False)
    stop_following = connection.hold_while_disconnected(nc, ready)
    try:
        await _run(settings, nc, ready)
    finally:
        stop_following()


async def _run(settings: Settings, nc: Connection, ready: HeldReadyFlag) -> None:
    """`run_watcher` once its readiness follows the connection."""
    js = nc.jetstream()
    await streams.ensure_streams(js, settings.bus)
    retention = settings.bus.max_age_seconds
    stale_after = resync_seconds(retention)
    seeds = {r.list_path: await recovery.last_known(js, settings.bus.prefix, r.kind, stale_after,
                                                    api_version=_api_version(r))
             for r in watched(settings.watcher.group_apis)}
    client = await kube_client.connect(settings.kube)
    publisher = BusPublisher(js, ready=ready, stream_of=streams.stream_of(settings.bus))
    try:
        await Watcher(client, publisher, settings, seeds=seeds).run(ready)
    finally:
        await publisher.close()
        await client.close()


class Watcher:
    """Observes the resources and publishes their changes and the clock ticks."""

    def __init__(
        self,
        client: Requester,
        publisher: Publisher,
        settings: Settings,
        *,
        seeds: Mapping[str, Mapping[str, Known]] | None = None,
        resources: Sequence[Resource] | None = None,
        clock_ms: Callable[[], int] | None = None,
    ) -> None:
        self._client = client
        self._publisher = publisher
        self._prefix = settings.bus.prefix
        self._tick_seconds = settings.watcher.tick_seconds
        self._watch_timeout_seconds = settings.kube.watch_timeout_seconds
        self._resync_seconds = resync_seconds(settings.bus.max_age_seconds)
        self._seeds = seeds or {}
        self._resources = tuple(resources or watched(settings.watcher.group_apis))
        self._reads_native = NATIVE_PODGROUP_GROUP in settings.watcher.group_apis
        self._clock_ms = clock_ms or _wall_clock_ms
        self._health = ReasonedHealth()
        self._repeats = Repeats()
        self._counts = kueue.CountChanges()

    async def run(self, ready: HeldReadyFlag) -> None:
        """Observe, publish and tick until cancelled (or until a task fails: then raise).

        `ready` is set once the first lists are published, then follows the list/watches'
        health, held down with why they fail (`_follow_health`)."""
        queue: asyncio.Queue[_Entry] = asyncio.Queue(maxsize=QUEUE_SIZE)
        synced = asyncio.Event()
        async with asyncio.TaskGroup() as tasks:
            for resource in self._resources:
                tasks.create_task(self._observe(resource, queue), name=f"watch {resource.kind}")
            tasks.create_task(self._publish(queue, synced), name="publish events")
            tasks.create_task(self._tick(queue, synced), name="clock ticks")
            tasks.create_task(self._follow_health(ready, synced), name="readiness")

    async def _observe(self, resource: Resource, queue: asyncio.Queue[_Entry]) -> None:
        """Feed the queue with `resource`'s changes, and a marker after each full list."""
        seed = self._seeds.get(resource.list_path)
        async for observation in listwatch.observe(
            self._client, resource, known=seed, watch_timeout_seconds=self._watch_timeout_seconds,
            resync_seconds=self._resync_seconds, health=self._health,
        ):
            if isinstance(observation, Synced):
                await queue.put(_ListSynced(resource.list_path))
                continue
            for item in self._messages(resource, observation):
                await queue.put(item)

    def _messages(self, resource: Resource, change: Change) -> list[PublishItem]:
        """The messages for a change (a Kueue group member's: its group's too,
        `messages.change_messages`); none for a watch event that repeats what was published
        of its object (`repeats`), nor (logged) if slimming fails, which is a bug. A
        malformed object published as read (`messages.problem`) gets one warning line.

        Pods are read natively (their `spec.schedulingGroup` too) when the native API is on."""
        is_native = (resource == NATIVE_PODGROUPS if resource.kind == "podgroup"
                     else self._reads_native)
        try:
            items = messages.change_messages(self._prefix, resource.kind, change,
                                             self._clock_ms(), is_native=is_native,
                                             repeats=self._repeats, counts=self._counts)
            problem = messages.problem(resource.kind, change)
        except Exception:
            log.exception("cannot slim %s %s; skipped", resource.kind,
                          change.obj.get("metadata"))
            return []
        if problem is not None:
            meta = metadata(change.obj)
            log.warning("%s %s/%s (resourceVersion %s) is malformed: %s", resource.api_kind,
                        meta.get("namespace", ""), meta.get("name", ""),
                        meta.get("resourceVersion", ""), problem)
        return items

    async def _publish(self, queue: asyncio.Queue[_Entry], synced: asyncio.Event) -> None:
        """Publish the queue in order, in pipelined batches; set `synced` once the first lists
        of every resource are published."""
        listed: set[str] = set()
        while True:
            batch = [await queue.get()]
            while len(batch) < BATCH_SIZE and not queue.empty():
                batch.append(queue.get_nowait())
            items: list[PublishItem] = []
            for entry in batch:
                if isinstance(entry, _ListSynced):
                    await self._publisher.publish_many(items)
                    items = []
                    listed.add(entry.list_path)
                    if not synced.is_set() and len(listed) == len(self._resources):
                        log.info("initial lists published")
                        synced.set()
                else:
                    items.append(entry)
            await self._publisher.publish_many(items)

    async def _follow_health(self, ready: HeldReadyFlag, synced: asyncio.Event) -> None:
        """Hold `ready` down with why the list/watches fail (`ReasonedHealth.reasons`): before
        `synced` (not ready anyway) as soon as one fails, so /readyz says why the watcher
        never got ready (`watcher (cannot reach the API server at <url>: connection
        refused)`); once `synced`, only for those failing `listwatch.UNREADY_AFTER_SECONDS` or
        longer (`Health.failing`), keeping `ready` set exactly while none is, logging each
        change. Woken by the health's changes, by `synced`, and by a failure passing that
        grace."""
        held: set[str] = set()
        was_ready: bool | None = None
        while True:
            self._health.changed.clear()
            is_synced = synced.is_set()
            failing, recheck_seconds = self._health.failing(
                listwatch.UNREADY_AFTER_SECONDS if is_synced else 0.0)
            held = _hold_only(ready, held, self._health.reasons(failing))
            if is_synced:
                was_ready = _follow(ready, failing, was_ready)
            await _first_of((self._health.changed, synced) if not is_synced
                            else (self._health.changed,), recheck_seconds)

    async def _tick(self, queue: asyncio.Queue[_Entry], synced: asyncio.Event) -> None:
        """Enqueue a ClockTicked at every multiple of the tick period once the lists are in.

        A tick that finds the queue full (NATS down) is dropped: the next one supersedes it.
        """
        await synced.wait()
        period_ms = max(1, round(self._tick_seconds * 1000))
        while True:
            now_ms = self._clock_ms()
            await asyncio.sleep((period_ms - now_ms % period_ms) / 1000)
            try:
                queue.put_nowait(messages.tick_message(self._prefix, self._clock_ms()))
            except asyncio.QueueFull:
                log.debug("clock tick dropped: publishing is behind")


def _hold_only(ready: HeldReadyFlag, held: set[str], reasons: set[str]) -> set[str]:
    """Hold `ready` down for exactly `reasons`, releasing those of `held` no longer among them;
    return `reasons` (what is held now)."""
    for reason in held - reasons:
        ready.release(reason)
    for reason in reasons - held:
        ready.hold(reason)
    return reasons


def _follow(ready: ReadyFlag, failing: list[str], was_ready: bool | None) -> bool:
    """Set `ready` when no list/watch is `failing` (for longer than the grace), unset it when
    one is, logging each change from `was_ready` (None: not set yet); return whether ready."""
    is_ready = not failing
    if is_ready != was_ready:
        ready.set(is_ready)
        if is_ready:
            log.info("watcher ready" if was_ready is None else
                     "watcher ready again: every list/watch reaches the API server")
        else:
            log.warning("watcher not ready: list/watch of %s failing for %gs or longer",
                        ", ".join(failing), listwatch.UNREADY_AFTER_SECONDS)
    return is_ready


async def _first_of(events: Sequence[asyncio.Event], timeout_seconds: float | None) -> None:
    """Wait until one of `events` is set, or `timeout_seconds` passed (None: no limit)."""
    waiting = [asyncio.ensure_future(event.wait()) for event in events]
    try:
        await asyncio.wait(waiting, timeout=timeout_seconds,
                           return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiter in waiting:
            await cancel_and_wait(waiter)


def _api_version(resource: Resource) -> str | None:
    """The PodGroup API version of `resource`'s events, if it is a PodGroup resource: both
    publish on the `podgroup` subjects, so a seed keeps only its own API's PodGroups."""
    if resource == NATIVE_PODGROUPS:
        return native.API_VERSION
    return PODGROUP_API_VERSION if resource == PODGROUPS else None


def _wall_clock_ms() -> int:
    """UTC wall-clock time in epoch milliseconds."""
    return time.time_ns() // 1_000_000
