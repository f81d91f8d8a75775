"""The planner SIGKILLed mid-batch and between commit and publish (fault 1).

The planner restarts on its own database: what it committed is published from the outbox
(Msg-Id de-duplicated, so a decision published before the kill is not published twice), what
it had not committed is planned again from EVENTS. Each gang is placed exactly once.
"""

from __future__ import annotations

import signal

import pytest

from services.planner import faults
from tests.cluster.fixture import ControlPlane
from tests.e2e import manifests, split
from tests.e2e.faults import rest
from tests.support.waiting import consistently, eventually

pytestmark = pytest.mark.e2e

GANGS = {f"g{index}": 2 for index in range(6)}


def kill(process: split.ServiceProcess) -> None:
    """SIGKILL and reap (the object is started again on the same data directory)."""
    process.signal(signal.SIGKILL)
    assert process.process is not None
    process.process.wait(10)


def apply_gangs(
        control_plane: ControlPlane, namespace: str, groups: list[str] | None = None) -> None:
    manifests.apply(control_plane, namespace, *[
        document for group, size in GANGS.items() if groups is None or group in groups
        for document in (manifests.podgroup(group, size, timeout_seconds=10),
                         manifests.replicaset(f"rs-{group}", group, size))])


def placed_once(services: split.Services, namespace: str) -> None:
    """Each gang has exactly one Placement on DECISIONS (attempt 1)."""
    by_group: dict[str, list[int]] = {}
    for decision in rest.placements(services, namespace):
        by_group.setdefault(decision["group"].split("/")[-1], []).append(decision["attempt"])
    assert by_group == {group: [1] for group in GANGS}, by_group


def test_a_planner_killed_mid_batch_restarts_on_its_database_and_places_every_gang_once(
        control_plane: ControlPlane, namespace: str, services: split.Services) -> None:
    _, planner = services.start("watcher", "planner", extra=rest.PLANNER_FLAGS)
    services.binder()
    with rest.partial_watch(control_plane, namespace, "planner killed mid-batch"):
        apply_gangs(control_plane, namespace, ["g0", "g1", "g2"])
        eventually(lambda: rest.placements(services, namespace), timeout=30, interval=0.05,
                   what="the first Placement published")
        apply_gangs(control_plane, namespace, ["g3", "g4", "g5"])
        kill(planner)  # while it fetches, plans or commits the second wave's events
        planner.start()
        rest.gangs_bound(control_plane, namespace, GANGS)
    placed_once(services, namespace)
    rest.settled(control_plane, namespace, services, planner)


def test_a_planner_killed_between_commit_and_publish_publishes_its_outbox_on_restart(
        control_plane: ControlPlane, namespace: str, services: split.Services,
        monkeypatch: pytest.MonkeyPatch) -> None:
    (watcher,) = services.start("watcher", extra=rest.PLANNER_FLAGS)
    services.binder()
    # only this namespace's decisions: an earlier test's terminating objects decide too
    monkeypatch.setenv(faults.CRASH_AFTER_COMMIT_ENV, f"ns:{namespace}")
    (planner,) = services.start("planner", extra=rest.PLANNER_FLAGS)
    monkeypatch.delenv(faults.CRASH_AFTER_COMMIT_ENV)
    with rest.partial_watch(control_plane, namespace, "planner killed after commit"):
        apply_gangs(control_plane, namespace)
        assert planner.process is not None
        process = planner.process
        eventually(lambda: process.poll() is not None, timeout=30, interval=0.1,
                   what="the planner killed itself after its first deciding commit")
        assert planner.process.returncode == -signal.SIGKILL, planner.log_tail()
        assert "killing the planner after commit, before publish" in planner.log_text()
        consistently(lambda: rest.placements(services, namespace) == [], duration=2,
                     interval=0.5, what="nothing published by the killed planner")
        planner.start()
        rest.gangs_bound(control_plane, namespace, GANGS)
    placed_once(services, namespace)
    rest.settled(control_plane, namespace, services, planner)
    assert watcher.process is not None and watcher.process.poll() is None
