"""The cluster changed under a gang (faults 2-6): its node deleted while it binds,
its PodGroup's minMember changed or the PodGroup deleted and recreated, all its running
members deleted at once (its controller recreates them), a member deleted while it backs
off. The gang binds whole or not at all.
"""

from __future__ import annotations

import re
import signal
import time
from datetime import datetime
from typing import Any

import pytest

from tests.cluster.fixture import ControlPlane
from tests.e2e import kube, manifests, split
from tests.e2e.faults import rest
from tests.e2e.test_rollback import condition_message, uid
from tests.support.waiting import consistently, eventually

pytestmark = pytest.mark.e2e


def start(services: split.Services) -> split.ServiceProcess:
    """Watcher, planner and one binder; the planner."""
    _, planner = services.start("watcher", "planner", extra=rest.PLANNER_FLAGS)
    services.binder()
    return planner


def apply_gang(
        cp: ControlPlane, namespace: str, min_member: int, replicas: int, **extra: Any) -> None:
    """PodGroup g (timeout 5 s) and ReplicaSet train of `replicas` members (`extra`: spec)."""
    manifests.apply(cp, namespace, manifests.podgroup("g", min_member, timeout_seconds=5),
                    manifests.replicaset("train", "g", replicas, **extra))


def outcomes(services: split.Services, namespace: str) -> list[dict[str, Any]]:
    """Group outcomes (GroupBound / GroupRolledBack) of PodGroup g, in order."""
    return [message for message in split.messages(
        services.nats.url, "EVENTS", split.outcome_subject(namespace, "g"))
        if message["type"] in ("GroupBound", "GroupRolledBack")]


def bound_uids(cp: ControlPlane, namespace: str) -> set[str]:
    return {uid(pod) for pod in kube.bound(kube.pods(cp, namespace))}


def delete_pods(cp: ControlPlane, namespace: str, *names: str, selector: str | None = None) -> None:
    which = ["-l", selector] if selector else list(names)
    cp.kubectl("delete", "pods", *which, "-n", namespace, "--grace-period=0", "--force",
               "--wait=false")


def binding_seconds(binder: split.ServiceProcess, decision_id: str) -> float:
    """From the binder taking placement `decision_id` to its rollback, by its log's clock
    (an upper bound of the time any member of it was bound)."""
    stamps = [datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f")
              for line in binder.log_text().splitlines()
              if re.search(rf"placement {decision_id} of \S+ (\(attempt|rolled back)", line)]
    return (stamps[-1] - stamps[0]).total_seconds()


def test_a_node_deleted_while_its_gang_binds_is_seen_on_the_re_read_and_the_gang_rolled_back(
        control_plane: ControlPlane, namespace: str, services: split.Services) -> None:
    node = f"doomed-{namespace}"
    selector = {"gangsched-test": namespace}
    created = manifests.kwok_node(node, labels=selector)
    try:
        manifests.apply(control_plane, None, created)
        watcher, planner = services.start("watcher", "planner", extra=rest.PLANNER_FLAGS)
        with rest.partial_watch(control_plane, namespace, "node deleted while binding"):
            apply_gang(control_plane, namespace, 8, 8, nodeSelector=selector)
            decided = eventually(lambda: rest.placements(services, namespace), timeout=30,
                                 interval=0.1, what="the Placement")[0]
            # The watcher held: the binder's view still has the node (the watcher's lag),
            # so it binds every member; only its re-read of the nodes from the API sees it gone.
            watcher.signal(signal.SIGSTOP)
            try:
                control_plane.kubectl("delete", "node", node)
                binder = services.binder("--bind-concurrency", "1")
                rolled = eventually(lambda: outcomes(services, namespace), timeout=30,
                                    what="the gang's outcome")[0]
            finally:
                watcher.signal(signal.SIGCONT)
            assert rolled["type"] == "GroupRolledBack", rolled
            assert rolled["decision_id"] == decided["id"]
            assert rolled["reason"].endswith("which was deleted meanwhile"), rolled
            assert sorted(rolled["deleted_pods"]) == sorted(
                member["pod_uid"] for member in decided["members"])
            print(f"node deleted while binding: placement taken to rolled back in "
                  f"{binding_seconds(binder, decided['id']):.3f}s (the binder's log)")
            eventually(lambda: rest.bound_by_group(kube.pods(control_plane, namespace)) == {},
                       timeout=20, what="the members bound to the deleted node replaced")
            manifests.apply(control_plane, None, created)
            rest.gangs_bound(control_plane, namespace, {"g": 8})
        rest.settled(control_plane, namespace, services, planner)
    finally:
        control_plane.kubectl("delete", "node", node, "--ignore-not-found")


def test_min_member_raised_binds_nothing_more_and_lowered_places_the_gang(
        control_plane: ControlPlane, namespace: str, services: split.Services) -> None:
    planner = start(services)
    with rest.partial_watch(control_plane, namespace, "minMember changed"):
        apply_gang(control_plane, namespace, 4, 3)
        eventually(lambda: "3 of 4 members exist" in (condition_message(
            control_plane, namespace) or ""), timeout=20, what="the gang waiting for quorum")
        control_plane.kubectl("patch", "podgroup", "g", "-n", namespace, "--type=merge",
                              "-p", '{"spec":{"minMember":5}}')
        eventually(lambda: "3 of 5 members exist" in (condition_message(
            control_plane, namespace) or ""), timeout=20, what="the raised minMember seen")
        consistently(lambda: bound_uids(control_plane, namespace) == set(), duration=3,
                     interval=0.5, what="nothing bound below the raised minMember")
        control_plane.kubectl("patch", "podgroup", "g", "-n", namespace, "--type=merge",
                              "-p", '{"spec":{"minMember":3}}')
        rest.gangs_bound(control_plane, namespace, {"g": 3})
    rest.settled(control_plane, namespace, services, planner)


def test_a_podgroup_deleted_while_its_pods_run_leaves_them_and_its_recreation_adopts_them(
        control_plane: ControlPlane, namespace: str, services: split.Services) -> None:
    planner = start(services)
    with rest.partial_watch(control_plane, namespace, "PodGroup deleted and recreated"):
        apply_gang(control_plane, namespace, 3, 3)
        running = {uid(pod) for pod in rest.gangs_bound(control_plane, namespace, {"g": 3})}
        control_plane.kubectl("delete", "podgroup", "g", "-n", namespace)
        control_plane.kubectl("scale", "replicaset", "train", "-n", namespace, "--replicas=5")
        eventually(lambda: len(kube.pods(control_plane, namespace)) == 5, timeout=15,
                   what="two more members, of a PodGroup that no longer exists")
        consistently(lambda: bound_uids(control_plane, namespace) == running, duration=3,
                     interval=0.5, what="the running members kept, the new ones waiting")
        manifests.apply(control_plane, namespace, manifests.podgroup("g", 3, timeout_seconds=5))
        pods = rest.gangs_bound(control_plane, namespace, {"g": 5})
        assert running <= {uid(pod) for pod in pods}
    rest.settled(control_plane, namespace, services, planner)


def test_a_running_gang_deleted_at_once_is_recreated_by_its_controller_and_placed_whole(
        control_plane: ControlPlane, namespace: str, services: split.Services) -> None:
    # A ReplicaSet, not a Job: KWOK's default stages complete a Job's pods at once, so a
    # Job gang never stays running on this testbed. Both are kube-controller-manager's.
    planner = start(services)
    with rest.partial_watch(control_plane, namespace, "running gang deleted at once"):
        apply_gang(control_plane, namespace, 3, 3)
        first = {uid(pod) for pod in rest.gangs_bound(control_plane, namespace, {"g": 3})}
        delete_pods(control_plane, namespace, selector="app=train")
        started = time.monotonic()

        def replaced() -> bool:
            pods = rest.gangs_bound(control_plane, namespace, {"g": 3}, timeout=1)
            assert not first & {uid(pod) for pod in pods}, "an old member still counted"
            return True

        eventually(replaced, timeout=60, what="three replacements bound")
        print(f"gang replaced and bound {time.monotonic() - started:.1f}s after the delete")
    rest.settled(control_plane, namespace, services, planner)


def test_a_member_deleted_while_its_gang_backs_off_is_replaced_and_the_gang_placed_whole(
        control_plane: ControlPlane, namespace: str, services: split.Services) -> None:
    node = f"later-{namespace}"
    selector = {"gangsched-test": namespace}
    try:
        planner = start(services)
        with rest.partial_watch(control_plane, namespace, "member deleted during backoff"):
            apply_gang(control_plane, namespace, 3, 3, nodeSelector=selector)
            eventually(lambda: "didn't match Pod's node affinity/selector" in (
                condition_message(control_plane, namespace) or ""), timeout=20,
                what="the gang unschedulable, backing off")
            victim = sorted(kube.pods(control_plane, namespace),
                            key=lambda pod: pod["metadata"]["name"])[0]
            delete_pods(control_plane, namespace, victim["metadata"]["name"])
            eventually(lambda: len(kube.pods(control_plane, namespace)) == 3
                       and uid(victim) not in {uid(p) for p in kube.pods(control_plane,
                                                                           namespace)},
                       timeout=15, what="the member replaced")
            consistently(lambda: bound_uids(control_plane, namespace) == set(), duration=2,
                         interval=0.5, what="nothing bound while no node fits")
            manifests.apply(control_plane, None, manifests.kwok_node(node, labels=selector))
            pods = rest.gangs_bound(control_plane, namespace, {"g": 3})
            assert uid(victim) not in {uid(pod) for pod in pods}
        rest.settled(control_plane, namespace, services, planner)
    finally:
        control_plane.kubectl("delete", "node", node, "--ignore-not-found")
