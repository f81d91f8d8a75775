"""Trust on the real control plane: forged decisions on the bus bind nothing and delete nothing.

The services run apart on a NATS any client may publish to (the worst case: no NATS
permissions at all), so only the binder's own checks stand between a forger and the cluster:
the planner's signature on every decision, and, should a forger hold the key, the member
checks against the API server's objects (a pod counts as bound only when this placement's
binding stamped it).
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from services.contracts.decisions import Assignment, Placement
from services.contracts.signing import DecisionKey
from tests.cluster.fixture import ControlPlane
from tests.e2e import kube, manifests, split
from tests.support.waiting import consistently, eventually

pytestmark = pytest.mark.e2e

NODE = "kwok-node-0"


def _pod(cp: ControlPlane, namespace: str, name: str) -> dict[str, Any]:
    return kube.get_json(cp, "pod", name, "-n", namespace)


def _member(pod: dict[str, Any], node: str = NODE) -> Assignment:
    meta = pod["metadata"]
    return Assignment(pod_uid=meta["uid"], namespace=meta["namespace"], name=meta["name"],
                      node=node)


def _forged(group: str, *members: Assignment) -> Placement:
    """A Placement the planner never made: an id no planner round has, due in a minute."""
    now_ms = time.time_ns() // 1_000_000
    return Placement(id=f"999999-{uuid.uuid4().hex[:6]}", plan_seq=1, at_ms=now_ms,
                     group=group, attempt=1, deadline_ms=now_ms + 60_000, members=members)


def _send(services: split.Services, placement: Placement, key: DecisionKey | None) -> None:
    split.publish_decision(services.nats.url, placement, key)


def _running_pod_of_another_scheduler(cp: ControlPlane, namespace: str) -> dict[str, Any]:
    """A ReplicaSet's pod of the default scheduler, already bound and Running on NODE (a
    kube-system pod, for the binder's purposes: its RBAC may delete any pod)."""
    spec = {**manifests.pod_spec(), "schedulerName": "default-scheduler", "nodeName": NODE}
    manifests.apply(cp, namespace, {
        "apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "dns"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "dns"}},
                 "template": {"metadata": {"labels": {"app": "dns"}}, "spec": spec}}})
    return eventually(lambda: kube.running(kube.pods(cp, namespace))[0], timeout=30,
                      what="the other scheduler's pod Running")


def test_unsigned_or_wrongly_signed_placements_are_dead_lettered_and_bind_nothing(
        control_plane: ControlPlane, namespace: str, services: split.Services) -> None:
    services.start("watcher", "planner")
    services.binder()
    # a gangsched pod whose nodeSelector matches no node: the planner never places it
    manifests.apply(control_plane, namespace,
                    manifests.pod("stuck", None, nodeSelector={"no-such": "label"}))
    stuck = eventually(lambda: _pod(control_plane, namespace, "stuck"), timeout=30,
                       what="the pod exists")
    victim = _running_pod_of_another_scheduler(control_plane, namespace)
    forgeries = [
        _forged(f"{namespace}/stuck", _member(stuck)),
        _forged(f"{namespace}/dns", _member(victim), _member(stuck)),
    ]
    for placement, key in zip(forgeries, (None, DecisionKey(b"f" * 32)), strict=True):
        _send(services, placement, key)

    def refused() -> bool:
        reasons = {headers.get("Gangsched-Reason", "") for headers, _ in
                   split.dead_letters(services.nats.url)}
        assert "not the planner's decision: not signed (no Gangsched-Signature header)" \
            in reasons, reasons
        assert any(r.startswith("not the planner's decision: signed with another key")
                   for r in reasons), reasons
        return True

    eventually(refused, timeout=30, what="both forged placements dead-lettered")

    def untouched() -> bool:
        assert _pod(control_plane, namespace, "stuck")["spec"].get("nodeName") is None
        assert _pod(control_plane, namespace, victim["metadata"]["name"])["metadata"][
            "uid"] == victim["metadata"]["uid"]
        return True

    consistently(untouched, duration=3, what="nothing bound, nothing deleted")
    assert split.messages(services.nats.url, "EVENTS",
                          split.outcome_subject(namespace, None)) == []


def test_a_signed_placement_naming_a_pod_it_did_not_bind_deletes_nothing(
        control_plane: ControlPlane, namespace: str, services: split.Services,
        tmp_path: Path) -> None:
    # Should a forger hold the key, the binder still judges members by the API server's
    # objects: the other scheduler's running pod is not "bound" by this placement, so the
    # failing bogus member rolls back nothing.
    services.start("watcher", "planner")
    services.binder()
    key = DecisionKey.from_text(services.key_file.read_text())
    victim = _running_pod_of_another_scheduler(control_plane, namespace)
    bogus = Assignment(pod_uid="no-such-uid", namespace=namespace, name="ghost", node=NODE)
    placement = _forged(f"{namespace}/dns", _member(victim), bogus)
    _send(services, placement, key)

    def rolled_back() -> dict[str, Any]:
        found = split.messages(services.nats.url, "EVENTS",
                               split.outcome_subject(namespace, "dns"))
        final = [o for o in found if o["type"] == "GroupRolledBack"]
        assert final, found
        return final[0]

    outcome = eventually(rolled_back, timeout=30, what="the forged placement rolled back")
    assert outcome["deleted_pods"] == []
    assert "not by this placement" in outcome["reason"] or "ghost" in outcome["reason"]
    consistently(lambda: _pod(control_plane, namespace, victim["metadata"]["name"])[
        "metadata"]["uid"] == victim["metadata"]["uid"], duration=3,
        what="the other scheduler's pod never deleted")
    assert "rollback: deleted pod" not in services.processes[-1].log_text()


def test_every_pod_gangsched_binds_carries_its_placement(
        control_plane: ControlPlane, namespace: str, services: split.Services) -> None:
    services.start("watcher", "planner")
    services.binder()
    manifests.apply(control_plane, namespace, manifests.podgroup("g", 2),
                    manifests.replicaset("w", "g", 2))

    def stamped() -> set[str]:
        pods = kube.bound(kube.pods(control_plane, namespace))
        assert len(pods) == 2
        return {(p["metadata"].get("annotations") or {}).get("gangsched.io/placement", "")
                for p in pods}

    placements = eventually(stamped, timeout=60, what="both members bound")
    assert len(placements) == 1 and "" not in placements
    decision = split.last_message(services.nats.url, "DECISIONS",
                                  split.decision_subject("Placement", namespace, "g"))
    assert decision is not None and placements == {decision["id"]}
