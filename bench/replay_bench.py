"""Replay speed benchmark (not a test): events per second replayed and verified from the database.

Builds a synthetic but realistic audit log with the production planner core, as the live
planner would have recorded it: 100 nodes of 16 cpu; 1-4 gangs of 2-8 pods (1-4 cpu) arriving
every simulated second (about 65% of the cpu in use, with queueing at peaks); an ideal binder
(MemberBound, GroupBound, the pod observed Running); pods finishing after 5-60 s (Succeeded,
then deleted, then the PodGroup deleted); a ClockTicked each second; one planning round per
second's batch (at most 512 events, as the shell fetches). The rows go into a fresh SQLite
database (migrated by alembic) in bulk.

Then it measures, on that database:
- read: the audit snapshot read and decoded into rounds (the floor of any replay);
- replay --verify: the same plus re-planning at every recorded plan point and comparing every
  decision byte for byte (the code path of `gangsched replay --verify`, in process);
- cli: `gangsched replay --verify --db ...` as a subprocess (wall clock, start-up included).
Both are run `--repeat` times (default 3). The target, >= 50,000 events/s for replay --verify
from the database, is judged on the median of the cli runs: the time a user waits. CPU time
is printed too; it exceeds wall time because SQLite builds the next page in the driver's
thread while the planner core works on this one.

    python -m bench.replay_bench                     # 200,000 events
    python -m bench.replay_bench --events 1000000    # the issue's 1M-event log
    python -m bench.replay_bench --keep DIR          # keep the database in DIR
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import msgspec

from services.audit import heap
from services.audit.db_log import DatabaseLog
from services.contracts import codec, subjects
from services.contracts.decisions import Decision, Placement, decision_subject
from services.contracts.events import (
    ClockTicked,
    Event,
    GroupBound,
    MemberBound,
    NodeObserved,
    PodDeleted,
    PodGroupDeleted,
    PodGroupObserved,
    PodObserved,
)
from services.planner.core import plan, revision
from services.planner.core.config import PlannerConfig
from services.planner.core.state import empty_state
from services.planner.rederive.replay import Replay
from services.planner.rederive.verify import Verifier
from services.store import audit, schema
from tests.support.postgres import running_postgres

PREFIX = "gangsched"
T0 = 1_700_000_000_000
GIB = 2**30
BATCH_EVENTS = 512
FLUSH_ROWS = 50_000


@dataclass
class Gang:
    """A gang alive in the simulation: its PodGroup and pods (by uid)."""

    podgroup: PodGroupObserved
    pods: dict[str, PodObserved]
    finish_ms: dict[str, int] = field(default_factory=dict)


class Simulation:
    """The cluster around the planner core; `second()` yields one simulated second's events."""

    def __init__(self, nodes: int, seed: int) -> None:
        self.rng = random.Random(seed)
        self.now = T0
        self.gangs: dict[str, Gang] = {}
        self.to_bind: list[Placement] = []
        self.count = 0
        self.nodes = [NodeObserved(at_ms=T0, name=f"node-{i:03d}", uid=f"n{i}",
                                   resource_version="1",
                                   allocatable={"cpu": 16000, "memory": 64 * GIB, "pods": 110})
                      for i in range(nodes)]

    def second(self) -> list[Event]:
        """Outcomes of the last placements, completions, arrivals, then a clock tick."""
        self.now += 1000
        events: list[Event] = [*self._bind(), *self._finish()]
        for _ in range(self.rng.randint(1, 4)):
            events.extend(self._arrive())
        events.append(ClockTicked(at_ms=self.now))
        return events

    def decided(self, decisions: list[Decision]) -> None:
        self.to_bind.extend(d for d in decisions if isinstance(d, Placement))

    def _arrive(self) -> list[Event]:
        self.count += 1
        name, size = f"gang-{self.count:07d}", self.rng.randint(2, 8)
        cpu = self.rng.choice((1000, 2000, 3000, 4000))
        podgroup = PodGroupObserved(at_ms=self.now, uid=f"g{self.count}", namespace="bench",
                                    name=name, resource_version="1", created_at_ms=self.now,
                                    min_member=size)
        pods = {f"p{self.count}-{i}": PodObserved(
            at_ms=self.now, uid=f"p{self.count}-{i}", namespace="bench", name=f"{name}-{i}",
            resource_version="1", scheduler_name="gangsched", phase="Pending",
            created_at_ms=self.now, requests={"cpu": cpu, "memory": GIB, "pods": 1},
            group_name=name) for i in range(size)}
        self.gangs[f"bench/{name}"] = Gang(podgroup, pods)
        return [podgroup, *pods.values()]

    def _bind(self) -> Iterator[Event]:
        placed, self.to_bind = self.to_bind, []
        for placement in placed:
            gang = self.gangs[placement.group]
            for member in placement.members:
                yield MemberBound(at_ms=self.now, decision_id=placement.id,
                                  group=placement.group, pod_uid=member.pod_uid, node=member.node)
            yield GroupBound(at_ms=self.now, decision_id=placement.id, group=placement.group)
            for member in placement.members:
                pod = msgspec.structs.replace(gang.pods[member.pod_uid], at_ms=self.now,
                                              node_name=member.node, phase="Running",
                                              resource_version="2")
                gang.pods[pod.uid] = pod
                gang.finish_ms[pod.uid] = self.now + self.rng.randint(5, 60) * 1000
                yield pod

    def _finish(self) -> Iterator[Event]:
        for key in sorted(self.gangs):
            gang = self.gangs[key]
            for uid in sorted(uid for uid, at in gang.finish_ms.items() if at <= self.now):
                del gang.finish_ms[uid]
                pod = gang.pods.pop(uid)
                yield msgspec.structs.replace(pod, at_ms=self.now, phase="Succeeded",
                                              resource_version="3")
                yield PodDeleted(at_ms=self.now, uid=uid, namespace=pod.namespace, name=pod.name)
            if not gang.pods:
                del self.gangs[key]
                podgroup = gang.podgroup
                yield PodGroupDeleted(at_ms=self.now, uid=podgroup.uid,
                                      namespace=podgroup.namespace, name=podgroup.name)


def subject_of(event: Event) -> str:
    """The subject the watcher or the binder would publish `event` on."""
    kind, namespace, name = "clock", "", "clock"
    if isinstance(event, NodeObserved):
        kind, name = "node", event.name
    elif isinstance(event, PodObserved | PodDeleted):
        kind, namespace, name = "pod", event.namespace, event.name
    elif isinstance(event, PodGroupObserved | PodGroupDeleted):
        kind, namespace, name = "podgroup", event.namespace, event.name
    elif isinstance(event, MemberBound | GroupBound):
        kind, (namespace, _, name) = "outcome", event.group.partition("/")
    return subjects.events_subject(PREFIX, kind, namespace, name)


class Writer:
    """Bulk inserts of audit, outbox and rounds rows into the SQLite file."""

    def __init__(self, path: Path) -> None:
        self.connection = sqlite3.connect(path)
        self.events: list[tuple[object, ...]] = []
        self.outbox: list[tuple[object, ...]] = []
        self.rounds: list[tuple[object, ...]] = []

    def round(self, first_seq: int, events: list[Event], decisions: list[Decision]) -> None:
        for offset, event in enumerate(events):
            self.events.append((first_seq + offset, subject_of(event), type(event).__name__,
                                event.at_ms, codec.encode(event)))
        plan_seq = first_seq + len(events) - 1
        for position, decision in enumerate(decisions):
            self.outbox.append((decision.id, plan_seq, position,
                                decision_subject(PREFIX, decision),
                                codec.encode(decision), T0))
        self.rounds.append((plan_seq, len(events), len(decisions), revision.PLANNER))
        if len(self.events) >= FLUSH_ROWS:
            self.flush()

    def flush(self) -> None:
        with self.connection:
            self.connection.executemany("INSERT INTO audit_events VALUES (?,?,?,?,?)",
                                        self.events)
            self.connection.executemany("INSERT INTO outbox (id, plan_seq, position, subject, "
                                        "data, published_at_ms) VALUES (?,?,?,?,?,?)",
                                        self.outbox)
            self.connection.executemany("INSERT INTO rounds VALUES (?,?,?,?)", self.rounds)
        self.events, self.outbox, self.rounds = [], [], []

    def close(self) -> None:
        self.flush()
        self.connection.close()


def build(path: Path, total_events: int, config: PlannerConfig) -> tuple[int, int, int]:
    """Write a log of at least `total_events` events; return (events, decisions, rounds)."""
    asyncio.run(schema.migrate(f"sqlite+aiosqlite:///{path}"))
    simulation, writer = Simulation(nodes=100, seed=7), Writer(path)
    state, seq, decisions_count, rounds_count = empty_state(), 0, 0, 0
    pending: list[Event] = list(simulation.nodes)
    while seq < total_events:
        pending.extend(simulation.second())
        while pending:
            batch, pending = pending[:BATCH_EVENTS], pending[BATCH_EVENTS:]
            state, decisions = plan.step(state, batch, config, seq + len(batch))
            writer.round(seq + 1, batch, decisions)
            simulation.decided(decisions)
            seq, decisions_count, rounds_count = (seq + len(batch),
                                                  decisions_count + len(decisions),
                                                  rounds_count + 1)
    writer.close()
    return seq, decisions_count, rounds_count


@dataclass(frozen=True)
class Measured:
    """Events replayed; wall-clock and CPU seconds (this process and its threads), and the
    CPU seconds of those spent in the planner core and the comparison (`Replay.play`,
    `Verifier.check`); the rest is reading the database and decoding."""

    events: int
    wall_seconds: float
    cpu_seconds: float
    core_cpu_seconds: float
    summary: str

    def line(self, label: str) -> str:
        text = (f"{label:<17} {self.events:,} events in {self.wall_seconds:.2f} s wall = "
                f"{self.events / self.wall_seconds:,.0f} events/s; {self.cpu_seconds:.2f} s CPU = "
                f"{self.events / self.cpu_seconds:,.0f} events/s")
        if self.core_cpu_seconds:
            reading = self.cpu_seconds - self.core_cpu_seconds
            text += (f"\n{'':<17} of which planner core + compare {self.core_cpu_seconds:.2f} s "
                     f"CPU ({self.events / self.core_cpu_seconds:,.0f} events/s), reading and "
                     f"decoding {reading:.2f} s CPU ({self.events / reading:,.0f} events/s)")
        return text


async def measure(url: str, config: PlannerConfig, *, verify: bool) -> Measured:
    """Replay (or only read, without `verify`) the database, timed."""
    engine = audit.open_read_only(url)
    started, cpu_started = time.perf_counter(), time.process_time()
    replay, verifier, events, core = Replay(config), Verifier(PREFIX), 0, 0.0
    try:
        async with audit.snapshot(engine) as snapshot:
            with heap.LongLived() as held:
                async for rnd in DatabaseLog(snapshot).rounds():
                    events += len(rnd.events)
                    if not verify:
                        continue
                    before = time.process_time()
                    divergence = verifier.check(replay.play(rnd))
                    held.advance(len(rnd.events))
                    core += time.process_time() - before
                    if divergence is not None:
                        raise SystemExit(f"unexpected divergence: {divergence}")
    finally:
        await engine.dispose()
    return Measured(events, time.perf_counter() - started, time.process_time() - cpu_started,
                    core, verifier.summary())


async def copy_to_postgres(sqlite_path: Path, url: str) -> None:
    """Migrate the PostgreSQL database at `url` and copy the log's tables into it (COPY)."""
    import asyncpg

    await schema.migrate(url)
    connection = await asyncpg.connect(url.replace("postgresql+asyncpg", "postgresql"))
    source = sqlite3.connect(sqlite_path)
    try:
        for table in ("audit_events", "rounds", "outbox"):
            cursor = source.execute(f"SELECT * FROM {table}")
            columns = [column[0] for column in cursor.description]
            while rows := cursor.fetchmany(FLUSH_ROWS):
                await connection.copy_records_to_table(table, records=rows, columns=columns)
        await connection.execute("ANALYZE")
    finally:
        source.close()
        await connection.close()


def cli_runs(label: str, url: str, events: int, repeat: int) -> float:
    """`repeat` timed `gangsched replay --verify` runs on `url`; print each; the median rate."""
    rates: list[float] = []
    for run in range(1, repeat + 1):
        wall = cli_seconds(url)
        rates.append(events / wall)
        print(f"{f'{label} {run}:':<17} {events:,} events in {wall:.2f} s wall = "
              f"{rates[-1]:,.0f} events/s (start-up included)")
    rates.sort()
    median = statistics.median(rates)
    print(f"{label} over {len(rates)} runs: median {median:,.0f} events/s "
          f"(min {rates[0]:,.0f}, max {rates[-1]:,.0f})")
    return median


def cli_seconds(url: str) -> float:
    """Wall-clock seconds of `gangsched replay --verify --db URL` in a subprocess."""
    started = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "services.cli.main", "replay", "--verify",
                             "--db", url], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise SystemExit(f"gangsched replay failed: {result.stdout}{result.stderr}")
    print(f"  cli output: {result.stdout.strip()}")
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=200_000,
                        help="Events in the synthetic log (the issue's target log: 1000000).")
    parser.add_argument("--keep", type=Path, default=None, help="Keep the database here.")
    parser.add_argument("--postgres", action="store_true",
                        help="Also copy the log into an embedded PostgreSQL server and time "
                             "`gangsched replay --verify` there.")
    parser.add_argument("--repeat", type=int, default=3,
                        help="Replay runs to take the median of (this machine's speed varies "
                             "by 10-20%% from run to run).")
    arguments = parser.parse_args()
    config = PlannerConfig()
    with tempfile.TemporaryDirectory() as scratch:
        directory = arguments.keep or Path(scratch)
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / "replay-bench.db"
        path.unlink(missing_ok=True)
        started = time.perf_counter()
        events, decisions, rounds = build(path, arguments.events, config)
        built = time.perf_counter() - started
        size_mib = path.stat().st_size / 2**20
        print(f"log: {events:,} events, {decisions:,} decisions, {rounds:,} rounds; "
              f"{size_mib:.0f} MiB; built (planned live) in {built:.1f} s "
              f"({events / built:,.0f} events/s)")
        url = f"sqlite+aiosqlite:///{path}"
        read = asyncio.run(measure(url, config, verify=False))
        print(read.line("read:"))
        for run in range(1, arguments.repeat + 1):
            replayed = asyncio.run(measure(url, config, verify=True))
            print(replayed.line(f"replay --verify {run}:") + f" ({replayed.summary})")
        median = cli_runs("cli", url, events, arguments.repeat)
        print(f"target >= 50,000 events/s from the database (`gangsched replay --verify`, wall "
              f"clock, median): {'met' if median >= 50_000 else 'MISSED'} at {median:,.0f}")
        if arguments.postgres:
            with running_postgres() as server:
                started = time.perf_counter()
                asyncio.run(copy_to_postgres(path, server.url("postgres")))
                print(f"copied to PostgreSQL in {time.perf_counter() - started:.1f} s")
                cli_runs("postgres cli", server.url("postgres"), events, arguments.repeat)

if __name__ == "__main__":
    main()
