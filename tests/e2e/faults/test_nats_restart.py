"""nats-server restarted while gangs are placed (fault 7).

The server is SIGKILLed (its JetStream store is kept, as on a pod restart with a volume) while
the planner publishes and the binder binds, and started again on the same port: every service
reconnects, nothing stored is lost, and each gang is bound whole, once.
"""

from __future__ import annotations

import signal
from urllib.parse import urlsplit

import pytest

from tests.cluster.fixture import ControlPlane
from tests.e2e import manifests, split
from tests.e2e.faults import rest
from tests.support.waiting import eventually

pytestmark = pytest.mark.e2e

GANGS = {f"n{index}": 3 for index in range(4)}


def test_nats_killed_and_restarted_while_gangs_are_placed_loses_no_gang_and_splits_none(
        control_plane: ControlPlane, namespace: str, services: split.Services) -> None:
    watcher, planner = services.start("watcher", "planner", extra=rest.PLANNER_FLAGS)
    binder = services.binder()
    port = urlsplit(services.nats.url).port
    assert port is not None
    with rest.partial_watch(control_plane, namespace, "nats-server restarted"):
        manifests.apply(control_plane, namespace, *[
            document for group, size in GANGS.items()
            for document in (manifests.podgroup(group, size, timeout_seconds=10),
                             manifests.replicaset(f"rs-{group}", group, size))])
        eventually(lambda: rest.placements(services, namespace), timeout=30, interval=0.05,
                   what="the first Placement published")
        assert services.nats.process is not None
        services.nats.process.send_signal(signal.SIGKILL)
        services.nats.process.wait(10)
        services.nats.start(port)
        rest.gangs_bound(control_plane, namespace, GANGS, timeout=60)
    for process in (watcher, planner, binder):
        assert process.process is not None and process.process.poll() is None, (
            process.log_tail())
    attempts: dict[str, list[int]] = {}
    for decision in rest.placements(services, namespace):
        attempts.setdefault(decision["group"].split("/")[-1], []).append(decision["attempt"])
    assert sorted(attempts) == sorted(GANGS), attempts
    assert all(found == [1] for found in attempts.values()), attempts
    rest.settled(control_plane, namespace, services, planner)
