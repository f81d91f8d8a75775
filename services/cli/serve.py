"""Process composition: run some or all of watcher, planner and binder in one process.

Layer: cli (top). Starts the embedded nats-server and SQLite when no URLs are given, checks the
database schema before anything runs, serves /healthz /readyz /metrics, waits for NATS (one
warning at once when it cannot be reached; alive, not ready meanwhile), supervises each service
as a named task, writes `<data_dir>/run.json` once every service is ready (unless another
live gangsched keeps it: `run_info.kept_by_another`), and stops everything on SIGTERM/SIGINT.
The embedded nats-server admits only credentials generated at each start, which only this
process and the owner of the data directory can read (their file, `nats-credentials.json`, is
mode 0600 and removed at exit, as this process's own run.json is: never another's).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine

from services.binder.wiring import run_binder
from services.bus import connection, embedded, lease, streams, transience
from services.bus.connection import Connection
from services.bus.errors import BusMisconfigured, JetStreamUnavailable
from services.cli import data_dir_lock, databases, run_info
from services.config.settings import Settings
from services.kube import client as kube_client
from services.kube import leases
from services.planner.core.config import PlannerConfig
from services.planner.service import run_planner
from services.runtime import election
from services.runtime.cancellation import cancel_and_wait
from services.runtime.health import HealthServer, MetricsBody, Readiness, ReadyFlag
from services.runtime.supervision import Supervisor
from services.store import engines, schema
from services.store import urls as database_urls
from services.store.errors import SchemaMismatch, StoreUnavailable, failing
from services.watcher.service import run_watcher

log = logging.getLogger(__name__)

SERVICES = ("watcher", "planner", "binder")
READY_POLL_SECONDS = 0.2
NATS_FLAG = "nats"
"""The readiness flag set once NATS is connected (/readyz names it until then)."""

Announce = Callable[[Settings, Readiness, "HealthServer | None", tuple[str, ...]],
                    Awaitable[None]]
"""Tells the world the services run (settings, readiness, health server, services); it may
run until cancelled. The default writes run.json once every service is ready."""


async def serve(settings: Settings, services: tuple[str, ...], planner: PlannerConfig,
                announce: Announce | None = None, *, is_child: bool = False) -> None:
    """Run `services` (a subset of SERVICES) until cancelled; `announce` (default: run.json
    once ready) runs beside them. `is_child`: a `gangsched run` child, whose health
    endpoints only its parent reads (`health_server`).

    Raises:
        services.store.errors.SchemaMismatch: the database is behind or ahead of this version
            (its message names `gangsched migrate`); nothing is started.
        services.bus.errors.BusUnavailable: NATS refused the credentials (at once). NATS
            that cannot be reached is waited for, said at once in one warning and retried
            (`connection.connect`), /healthz answering and /readyz naming `nats` meanwhile.
        services.store.errors.StoreUnavailable: the database cannot be reached or read.
        services.bus.errors.BusMisconfigured: NATS refuses the streams (a stream of another
            prefix under the same name, replicas a single server cannot keep, a retention it
            refuses): checked once before any service starts, so none restarts forever.
        services.kube.errors.KubeError: no Kubernetes credentials (watcher, binder); nothing is
            started. An API server that is merely unreachable is waited for instead.
    """
    if "watcher" in services or "binder" in services:
        await check_kube_credentials(settings)
    async with contextlib.AsyncExitStack() as stack:
        settings = await stack.enter_async_context(bus_url(settings))
        engine = await stack.enter_async_context(checked_store(settings)) if "planner" in services \
            else None
        readiness = waiting_readiness(services)
        health = await health_server(settings, readiness, is_private=is_child)
        if health is not None:
            stack.push_async_callback(health.stop)
        announcing = asyncio.ensure_future(
            (announce or announce_when_ready)(settings, readiness, health, services))
        stack.push_async_callback(cancel_and_wait, announcing)
        nc = await connection.connect(settings.bus, name=f"gangsched-{'+'.join(services)}",
                                      first_connect_timeout_seconds=None)
        stack.push_async_callback(connection.close, nc)
        # each service held down while NATS is lost for its whole supervised life: through
        # its restarts' backoffs and set-ups too, not only while its work follows NATS itself
        stack.enter_context(following(nc, [readiness.flag(name) for name in services]))
        await ensure_streams_once(settings, nc)
        readiness.flag(NATS_FLAG).set()
        supervisor = Supervisor()
        stack.push_async_callback(supervisor.stop)
        for name in services:
            supervisor.start(name, _factory(name, settings, nc, engine, readiness, planner))
        await announcing
        await supervisor.wait()


def waiting_readiness(services: tuple[str, ...]) -> Readiness:
    """The readiness of a process about to connect to NATS: every flag (`NATS_FLAG` and one
    per service of `services`) before anything can look, none set, each service's held down
    with `connection.NATS_DISCONNECTED` until `following` takes over, so /readyz says why
    from the start: `not ready: nats, planner (NATS disconnected)` (a `gangsched run`
    child's parent shows the service with that reason)."""
    readiness = Readiness()
    readiness.flag(NATS_FLAG)
    for name in services:
        readiness.flag(name).hold(connection.NATS_DISCONNECTED)
    return readiness


@contextlib.contextmanager
def following(nc: Connection, flags: Iterable[ReadyFlag]) -> Iterator[None]:
    """Hold each of `flags` down (`connection.NATS_DISCONNECTED`) while `nc` is disconnected,
    for as long as the block runs (`connection.hold_while_disconnected`), taking over the
    hold `waiting_readiness` put (released now if `nc` is connected).

    Run around a service's whole supervised life: the services' own follows (a planner
    leading, a binder holding its Lease) are then no-ops, so neither a work stopped while NATS
    is lost nor a restart's backoff and set-up (`lease.open_lease`, `streams.installation`)
    leaves a service ready during an outage.
    """
    stops = []
    for flag in flags:
        flag.release(connection.NATS_DISCONNECTED)
        stops.append(connection.hold_while_disconnected(nc, flag))
    try:
        yield
    finally:
        for stop in stops:
            stop()


STREAMS_RETRY_MAX_SECONDS = 5.0
STREAMS_GIVE_UP_SECONDS = 60.0
"""How long the stream set-up may keep failing transiently (NATS restarting, a stream leader
being elected) before the start ends: a request that never gets an answer is also how NATS
denies one (JetStream off, or the user may not use its API)."""


async def ensure_streams_once(settings: Settings, nc: Connection) -> None:
    """Set the streams up once before any service starts (`streams.ensure_streams`), so
    streams NATS refuses end the start in one line instead of restarting the services forever.
    NATS busy or reconnecting is waited out (said once, retried with a backoff up to
    `STREAMS_RETRY_MAX_SECONDS`), for `STREAMS_GIVE_UP_SECONDS` at most; a NATS whose
    JetStream does not answer (`JetStreamUnavailable`: none on the server, or no quorum) for
    as long as it takes, `ensure_streams` saying so and holding the services' readiness.

    Raises:
        services.bus.errors.BusMisconfigured: NATS refuses a stream (as `ensure_streams`), or
            the set-up kept failing transiently for `STREAMS_GIVE_UP_SECONDS`.
    """
    loop = asyncio.get_running_loop()
    delay, give_up_at = 0.1, loop.time() + STREAMS_GIVE_UP_SECONDS
    while True:
        try:
            await streams.ensure_streams(nc.jetstream(), settings.bus)
            return
        except Exception as error:
            if not transience.is_transient(error):
                raise
            if isinstance(error, JetStreamUnavailable):
                pass  # named, said every tenth time and held in /readyz by `ensure_streams`:
                # waited for as NATS itself is, until the server runs JetStream
            elif loop.time() >= give_up_at:
                raise BusMisconfigured(
                    f"the streams could not be set up for {STREAMS_GIVE_UP_SECONDS:g}s "
                    f"({error!r}): is JetStream enabled on the NATS server, and may this user "
                    "use its API?") from error
            else:
                (log.debug if delay > 0.1 else log.warning)(
                    "cannot set up the streams yet (%r); retrying", error)
        await asyncio.sleep(delay)
        delay = min(delay * 2, STREAMS_RETRY_MAX_SECONDS)


async def check_kube_credentials(settings: Settings) -> None:
    """Fail at once, with the reason, when there are no Kubernetes credentials to load: no
    retry would ever find them (the services would restart forever)."""
    client = await kube_client.connect(settings.kube)
    await client.close()


def _factory(name: str, settings: Settings, nc: Connection, engine: AsyncEngine | None,
             readiness: Readiness, planner: PlannerConfig) -> Any:
    flag = readiness.flag(name)
    if name == "watcher":
        return lambda: run_watcher(settings, nc, flag)
    if name == "binder":
        if not settings.binder.scheduler_lease:
            return lambda: run_binder(settings, nc, flag)
        return lambda: _hold_scheduler_name(
            settings, nc, lambda: run_binder(settings, nc, flag), flag)
    assert engine is not None

    def plan() -> Any:
        return run_planner(settings, nc.jetstream(), engine, flag, config=planner)

    if not settings.planner.leader_election:
        return plan
    return lambda: _lead(settings, nc, plan, flag)


async def _lead(settings: Settings, nc: Connection, plan: Any, flag: ReadyFlag) -> None:
    """Run the planner only while this process holds the leader lease (standbys wait warm)."""
    timing = election.Timing(
        lease_seconds=settings.planner.leader_lease_seconds,
        retry_seconds=settings.planner.leader_retry_seconds,
    )
    held = await lease.open_lease(
        nc.jetstream(), prefix=settings.bus.prefix, lease_seconds=timing.lease_seconds,
        holder=election.identity(), replicas=settings.bus.replicas,
    )
    log.info("planner %s campaigns for the leader lease (%gs)", held.holder,
             timing.lease_seconds)
    await _lead_following(nc, flag, lambda: election.lead(held, timing, plan, ready=flag))


async def _lead_following(nc: Connection, flag: ReadyFlag, leading: election.Work) -> None:
    """Run `leading()` (an `election.lead`) with `flag` held down while `nc` is disconnected
    (`connection.hold_while_disconnected`), standing by as while leading: a standby that
    cannot reach NATS could not take over. (Its lease's own unavailability names no server
    for NATS: the connection says it.) Under `serve` this follow is a no-op: `following`
    already holds `flag` for the service's whole supervised life."""
    stop_following = connection.hold_while_disconnected(nc, flag)
    try:
        await leading()
    finally:
        stop_following()


SCHEDULER_LEASE = election.Timing(lease_seconds=15.0, retry_seconds=2.0)
"""The binder's hold on its scheduler name: kube-scheduler's leader election defaults (lease
15 s, renew deadline 10 s, retry 2 s). A standby installation takes over at its next attempt
after the holder releases the Lease (a clean stop), or 15 s after its last renewal."""


async def _hold_scheduler_name(settings: Settings, nc: Connection, bind: election.Work,
                               flag: ReadyFlag) -> None:
    """Run the binder (`bind`) only while this installation holds the Lease named after the
    scheduler name (`services.kube.leases`); stand by, ready, while another one does.

    Raises:
        services.bus.errors.BusUnavailable, BusRefused, BusMisconfigured: the installation's
            identity (its EVENTS stream) cannot be read (the supervisor retries).
        services.kube.errors.KubeError: no Kubernetes credentials.
        What `bind` raises (`run_binder`), after the Lease is released.
    """
    installation = await streams.installation(nc.jetstream(), settings.bus.prefix)
    client = await kube_client.connect(settings.kube)
    try:
        held = leases.KubeLease(client, namespace=settings.binder.scheduler_lease_namespace,
                                name=settings.scheduler_name, installation=installation,
                                process=election.identity(),
                                lease_seconds=SCHEDULER_LEASE.lease_seconds)
        log.info("binder %s campaigns for Lease %s", held.holder, held.where)
        await _lead_following(nc, flag, lambda: election.lead(
            held, SCHEDULER_LEASE, bind, service="binder", ready=flag))
    finally:
        await client.close()


@contextlib.asynccontextmanager
async def bus_url(settings: Settings) -> AsyncIterator[Settings]:
    """Yield settings with a NATS URL: the given one, or an embedded server's (stopped after),
    with the credentials generated for it (recorded for the data directory's owner).

    Raises:
        services.cli.data_dir_lock.DataDirUnusable: the embedded server's files or its
            credentials cannot be written in the data directory (a full disk); the server
            started is stopped, and no partial file is left.
    """
    if settings.bus.url:
        yield settings
        return
    credentials = embedded.generate_credentials()
    server = embedded.EmbeddedNats(settings.data_dir / "nats", credentials=credentials,
                                   die_with_parent=True)
    with _writing(settings.data_dir):
        url = await server.start()
    log.info("embedded nats-server at %s (store %s)", url, settings.data_dir / "nats")
    try:
        with _writing(settings.data_dir):
            run_info.write_credentials(settings.data_dir, credentials.user,
                                       credentials.password)
        yield dataclasses.replace(settings, bus=dataclasses.replace(
            settings.bus, url=url, user=credentials.user, password=credentials.password,
            creds_file=None))
    finally:
        try:
            await server.stop()
        finally:  # this server's credentials only: a file another process wrote since stays
            run_info.remove_credentials(settings.data_dir, credentials.user,
                                        credentials.password)


@contextlib.contextmanager
def _writing(data_dir: Path) -> Iterator[None]:
    """Tell a file in `data_dir` that cannot be made or written (a full disk, no permission)
    as the data directory being unusable, in one line (`data_dir_lock.unusable`); an error
    naming a file elsewhere (the nats-server binary that cannot be run) passes unchanged.

    Raises:
        services.cli.data_dir_lock.DataDirUnusable: for such an error.
    """
    try:
        yield
    except OSError as error:
        if not _in(data_dir, error):
            raise
        raise data_dir_lock.unusable(data_dir, error) from None


def _in(data_dir: Path, error: OSError) -> bool:
    """Whether `error` is about a file in `data_dir`, or names none (a write to an open file)."""
    if error.filename is None:
        return True
    named = Path(os.path.abspath(os.fsdecode(error.filename)))
    return named.is_relative_to(os.path.abspath(data_dir))


@contextlib.asynccontextmanager
async def checked_store(settings: Settings) -> AsyncIterator[AsyncEngine]:
    """Yield the planner's engine after checking its schema; the embedded SQLite default is
    migrated automatically (it is private to this process), any other database never is: a
    given SQLite file that does not exist yet (or is empty) is refused before anything opens
    it, so the refusal leaves no file behind (`_never_migrated`)."""
    url = settings.store_url()
    if settings.store.url:
        _never_migrated(url)
    engine = engines.create_engine(url, make_directory=not settings.store.url)
    try:
        with _unreachable_database(url):
            if not settings.store.url:
                await schema.migrate(url)
            await schema.check_schema(engine)
        yield engine
    finally:
        await engine.dispose()


def _never_migrated(url: str) -> None:
    """Refuse a SQLite file given as the database that does not exist, or is empty, without
    opening it: opening makes it a 4096-byte database (SQLite's header, WAL) that the schema
    check then refuses as at revision none, leaving it behind. Anything else (another
    database, a file holding something, a path whose directory is missing or that is no
    file) is for opening to check, and tell.

    Raises:
        SchemaMismatch: the file is missing or empty (at schema revision none), naming the
            `gangsched migrate` that makes it.
    """
    database = engines.sqlite_file(engines.async_url(url))
    if database is None:
        return
    try:
        database = Path(os.path.realpath(database))  # a link's target is what SQLite makes
        if not database.parent.is_dir():
            return
        missing = not database.exists()
        if not missing and (not database.is_file() or database.stat().st_size > 0):
            return
    except OSError:
        return
    where = database_urls.shown(url)
    state = "does not exist" if missing else "is an empty file"
    raise SchemaMismatch(
        f"database {where} {state} (schema revision none, behind this gangsched's "
        f"{schema.head_revision()}): run `gangsched migrate --db {where}` first")


@contextlib.contextmanager
def _unreachable_database(url: str) -> Iterator[None]:
    """Translate a database that cannot be reached, read or written into `StoreUnavailable`,
    naming it (a SQLite file by its path, a URL without its password) and, for a SQLite file,
    what is wrong with it (`databases.unusable`), in words that fit the reason (`cannot write
    to` a full disk, `cannot read` a file that is no database: `errors.failing`); any other
    error (a bug) passes unchanged."""
    try:
        yield
    except Exception as error:
        named = databases.unusable(url, error, writing=True)
        if named is None:
            raise
        why = named.removeprefix(f"{databases.shown(url)}: ")
        raise StoreUnavailable(f"{failing(why)} the database {named}", why=why) from error


async def health_server(settings: Settings, readiness: Readiness,
                        metrics_body: MetricsBody | None = None, *,
                        is_private: bool = False) -> HealthServer | None:
    """/healthz /readyz /metrics on `settings.http_host:http_port`, started; None when the
    port is -1 (disabled). Its address is logged (INFO), unless `is_private`: a `gangsched
    run` child's, which only its parent reads (the parent's own endpoints merge it), is logged
    at DEBUG, so that the log names one address to scrape.

    Raises:
        services.runtime.health.PortUnavailable: the address cannot be bound.
    """
    if settings.http_port < 0:
        return None
    server = HealthServer(readiness, host=settings.http_host, port=settings.http_port,
                          metrics_body=metrics_body)
    await server.start()
    if is_private:
        log.debug("private health endpoints (read by the parent) on http://%s:%d",
                  server.host, server.port)
    else:
        log.info("health endpoints on http://%s:%d", server.host, server.port)
    return server


async def announce_when_ready(settings: Settings, readiness: Readiness,
                               health: HealthServer | None, services: tuple[str, ...]) -> None:
    """Once every service is ready, log it and write `<data_dir>/run.json` (URLs for tools),
    unless another live gangsched keeps it there (`run_info.kept_by_another`: a `gangsched run`
    beside this service run apart, whose run.json it neither replaces nor removes)."""
    while readiness.not_ready():
        await asyncio.sleep(READY_POLL_SECONDS)
    keeper = run_info.kept_by_another(settings.data_dir)
    if keeper is None:
        _write_run_file(settings, health, services)
    else:
        log.info("no run.json written: %s keeps that of the gangsched (pid %s) serving there",
                 settings.data_dir, keeper)
    log.info("gangsched ready: %s", ", ".join(services))


def _write_run_file(settings: Settings, health: HealthServer | None,
                    services: tuple[str, ...]) -> None:
    """Write run.json for the ready `services`; one that cannot be written (a full disk) is
    warned about, and the services keep running: it only tells the tools where they are."""
    try:
        run_info.write(settings.data_dir, {
            "services": list(services),
            "nats": settings.bus.url,
            "prefix": settings.bus.prefix,
            "db": settings.store_url() if "planner" in services else None,
            "http": f"http://{settings.http_host}:{health.port}" if health else None,
        })
    except OSError as error:
        log.warning("cannot write %s: %s; the services run on, but the commands that read "
                    "it (`gangsched decisions --data-dir`) cannot find them",
                    settings.data_dir / run_info.RUN_FILE, error.strerror or error)


def remove_run_file(data_dir: Path) -> None:
    """Remove `<data_dir>/run.json` if this process wrote it (no longer serving); another live
    gangsched's stays (`run_info.remove_own`). The embedded NATS's credentials go as that
    server stops (`bus_url`)."""
    run_info.remove_own(data_dir)
