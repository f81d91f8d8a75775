"""The highly available set-up under faults: a 3-server NATS cluster on
loopback with R3 streams, two planners with `--leader-election` on one PostgreSQL database.

The NATS server leading the leader lease's KV stream (the worst one to lose: its renewals
fail until the stream elects a new leader, and the leading planner steps down meanwhile) is
SIGKILLed while gangs are placed, and started again (its store kept); then the leading planner
is SIGKILLed and the standby takes over within a lease length or so. Every gang is bound
whole, and the at-rest checks hold with the standby's view of the shared database.
"""

from __future__ import annotations

import asyncio
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import nats
import pytest

from services.bus.embedded import find_binary
from services.contracts import subjects
from tests.cluster.fixture import ControlPlane
from tests.e2e import manifests, split
from tests.e2e.faults import rest
from tests.support.postgres import running_postgres
from tests.support.waiting import eventually

pytestmark = pytest.mark.e2e

LEASE = ("--leader-election", "--leader-lease-seconds", "3", "--leader-retry-seconds", "0.25")
REPLICAS = ("--stream-replicas", "3")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Cluster:
    """Three nats-servers routed to each other on loopback, JetStream clustered."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.client_ports = [free_port() for _ in range(3)]
        self.route_ports = [free_port() for _ in range(3)]
        self.processes: list[subprocess.Popen[bytes] | None] = [None, None, None]

    @property
    def url(self) -> str:
        return ",".join(f"nats://127.0.0.1:{port}" for port in self.client_ports)

    def start(self, index: int) -> None:
        routes = ",".join(f"nats://127.0.0.1:{port}" for i, port in enumerate(self.route_ports)
                          if i != index)
        with (self.data_dir / f"s{index}.log").open("ab") as log:
            self.processes[index] = subprocess.Popen(
                [str(find_binary()), "--jetstream", "--store_dir",
                 str(self.data_dir / f"s{index}"), "--server_name", f"s{index}",
                 "--cluster_name", "gangsched", "--addr", "127.0.0.1",
                 "--port", str(self.client_ports[index]),
                 "--cluster", f"nats://127.0.0.1:{self.route_ports[index]}",
                 "--routes", routes],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    def kill(self, index: int) -> None:
        process = self.processes[index]
        assert process is not None
        process.send_signal(signal.SIGKILL)
        process.wait(10)

    def stop(self) -> None:
        """SIGTERM each server, then SIGKILL if it lingers (as `split.NatsServer.stop`)."""
        for process in self.processes:
            split._terminate(process)

    def log(self, index: int) -> str:
        return (self.data_dir / f"s{index}.log").read_text(errors="replace")


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    running = Cluster(tmp_path)
    try:
        for index in range(3):
            running.start(index)
        eventually(lambda: all("JetStream cluster new metadata leader" in running.log(i)
                               or "Self is new JetStream cluster metadata leader"
                               in running.log(i) for i in range(3)),
                   timeout=30, interval=0.2, what="a JetStream metadata leader elected")
        yield running
    finally:
        running.stop()


def stream_layout(url: str, stream: str) -> tuple[int, str]:
    """(configured replicas, leading server name) of the stream named `stream`."""
    async def read() -> tuple[int, str]:
        nc = await nats.connect(url)
        try:
            info = await nc.jetstream().stream_info(stream)
        finally:
            await nc.close()
        assert info.cluster is not None
        return int(info.config.num_replicas or 1), str(info.cluster.leader)

    return asyncio.run(read())


ELECTION_LINES = ("became leader", "standing by", "task planner failed")
"""What a planner logs as it leads, stands by, or stops serving (its work failed: the
supervisor restarts it, standing by again)."""


def leading(*planners: split.ServiceProcess) -> split.ServiceProcess | None:
    """The planner whose last election line says it leads; None while none does, and while
    more than one does (a leader that lost the lease, e.g. across a NATS server's restart, says
    so only once its renewal fails, after the other became leader: killing it then would kill
    the wrong one, and the other's taking over would already be in its log)."""
    claiming = []
    for planner in planners:
        lines = [line for line in planner.log_text().splitlines()
                 if any(said in line for said in ELECTION_LINES)]
        if lines and "became leader" in lines[-1]:
            claiming.append(planner)
    return claiming[0] if len(claiming) == 1 else None


def apply_gangs(cp: ControlPlane, namespace: str, groups: list[str]) -> dict[str, int]:
    manifests.apply(cp, namespace, *[
        document for group in groups
        for document in (manifests.podgroup(group, 2, timeout_seconds=10),
                         manifests.replicaset(f"rs-{group}", group, 2))])
    return {group: 2 for group in groups}


def test_a_nats_server_and_the_leading_planner_killed_lose_no_gang_and_split_none(
        control_plane: ControlPlane, namespace: str, services: split.Services,
        cluster: Cluster) -> None:
    with running_postgres() as postgres:
        database = postgres.url("postgres")
        subprocess.run([sys.executable, "-m", "services.cli.main", "migrate", "--db", database],
                       check=True, capture_output=True, timeout=60)
        services.nats.url = cluster.url  # the services get all three servers
        services.start("watcher", extra=REPLICAS)
        planner = (*REPLICAS, *LEASE, "--db", database, *rest.PLANNER_FLAGS)
        (first,) = services.start("planner", extra=planner)  # one at a time: each migrates
        (second,) = services.start("planner", extra=planner)
        services.binder(*REPLICAS)
        services.nats.url = f"nats://127.0.0.1:{cluster.client_ports[0]}"
        eventually(lambda: leading(first, second), timeout=20, interval=0.1,
                   what="a leading planner")
        layouts = [stream_layout(services.nats.url, subjects.stream_name(split.PREFIX, name))
                   for name in ("EVENTS", "DECISIONS")]
        assert [found for found, _ in layouts] == [3, 3], layouts
        _, lease_leader = stream_layout(services.nats.url, "KV_GANGSCHED_LEADER")
        victim = int(lease_leader.removeprefix("s"))  # the lease's: the worst server to lose
        # the test reads through a server that stays up
        services.nats.url = f"nats://127.0.0.1:{cluster.client_ports[(victim + 1) % 3]}"
        expected: dict[str, int] = {}
        with rest.partial_watch(control_plane, namespace, "NATS server and leader killed"):
            expected |= apply_gangs(control_plane, namespace, ["a0", "a1"])
            cluster.kill(victim)
            expected |= apply_gangs(control_plane, namespace, ["b0", "b1"])
            rest.gangs_bound(control_plane, namespace, expected, timeout=60)
            cluster.start(victim)

            # losing a server may have moved the lease: kill whoever leads now
            leader = eventually(lambda: leading(first, second), timeout=30, interval=0.1,
                                what="a leading planner after the server's restart")
            assert leader is not None  # `eventually` returns only a truthy value
            standby = second if leader is first else first
            terms = standby.log_text().count("became leader")
            leader.signal(signal.SIGKILL)
            assert leader.process is not None
            leader.process.wait(10)
            killed_at = time.monotonic()
            services.processes.remove(leader)  # killed on purpose
            expected |= apply_gangs(control_plane, namespace, ["c0", "c1"])
            eventually(lambda: standby.log_text().count("became leader") > terms, timeout=15,
                       interval=0.1, what="the standby took over")
            print(f"the standby took over {time.monotonic() - killed_at:.1f}s after the kill")
            rest.gangs_bound(control_plane, namespace, expected, timeout=60)
        attempts = sorted(d["attempt"] for d in rest.placements(services, namespace))
        assert attempts == [1] * len(expected), attempts
        rest.settled(control_plane, namespace, services, standby)
        for process in list(services.processes):  # before PostgreSQL goes
            assert process.stop() == 0, process.log_tail()
            services.processes.remove(process)
