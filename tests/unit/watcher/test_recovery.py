"""The seed read back from the log: the last event of each subject says what exists."""

from __future__ import annotations

from typing import Any

import msgspec

from services.contracts import codec
from services.contracts.events import (
    AttachmentDeleted,
    AttachmentObserved,
    ClockTicked,
    CSINodeDeleted,
    CSINodeObserved,
    DisruptionBudgetDeleted,
    DisruptionBudgetObserved,
    NodeObserved,
    PodDeleted,
    PodObserved,
)
from services.kube.listwatch import Known
from services.watcher import recovery
from services.watcher.service import resync_seconds


def observed(uid: str, rv: str) -> bytes:
    return codec.encode(PodObserved(
        at_ms=1, uid=uid, namespace="ml", name=f"p-{uid}", resource_version=rv,
        scheduler_name="gangsched", phase="Pending", created_at_ms=1, requests={"pods": 1},
    ))


def test_observations_are_known_and_deletes_forget() -> None:
    known: dict[str, Known] = {}
    recovery.fold(known, observed("u1", "5"))
    recovery.fold(known, observed("u2", "6"))
    recovery.fold(known, codec.encode(PodDeleted(at_ms=2, uid="u2", namespace="ml", name="p-u2")))
    assert known == {"u1": Known("p-u1", "ml", "5")}


def test_nodes_are_known_without_namespace() -> None:
    known: dict[str, Known] = {}
    node = NodeObserved(at_ms=1, name="n1", uid="nu", resource_version="9", allocatable={})
    recovery.fold(known, codec.encode(node))
    assert known == {"nu": Known("n1", "", "9")}


def test_csinodes_and_attachments_are_known_without_namespace_and_deletes_forget() -> None:
    known: dict[str, Known] = {}
    for uid in ("c1", "c2"):
        recovery.fold(known, codec.encode(CSINodeObserved(
            at_ms=1, uid=uid, name=f"n-{uid}", resource_version="3", limits={"d": 1})))
        recovery.fold(known, codec.encode(AttachmentObserved(
            at_ms=1, uid=f"a-{uid}", name=f"csi-{uid}", resource_version="4", node=f"n-{uid}")))
    recovery.fold(known, codec.encode(CSINodeDeleted(at_ms=2, uid="c2", name="n-c2")))
    recovery.fold(known, codec.encode(AttachmentDeleted(at_ms=2, uid="a-c2", name="csi-c2")))
    assert known == {"c1": Known("n-c1", "", "3"), "a-c1": Known("csi-c1", "", "4")}


def test_budgets_are_known_in_their_namespace_and_deletes_forget() -> None:
    known: dict[str, Known] = {}
    for uid in ("b1", "b2"):
        recovery.fold(known, codec.encode(DisruptionBudgetObserved(
            at_ms=1, uid=uid, namespace="ml", name=f"pdb-{uid}", resource_version="4")))
    recovery.fold(known, codec.encode(DisruptionBudgetDeleted(
        at_ms=2, uid="b2", namespace="ml", name="pdb-b2")))
    assert known == {"b1": Known("pdb-b1", "ml", "4")}


def test_other_events_and_garbage_change_nothing() -> None:
    known: dict[str, Known] = {}
    recovery.fold(known, codec.encode(ClockTicked(at_ms=1)))
    recovery.fold(known, b"not json")
    assert known == {}


def test_an_object_whose_last_event_is_stale_is_remembered_without_a_version() -> None:
    known: dict[str, Known] = {}
    recovery.fold(known, observed("u1", "5"), is_stale=True)
    assert known["u1"] == Known("p-u1", "ml", "")  # listed as changed: published again


def test_resync_is_half_the_retention_at_most_hourly_and_never_without_retention() -> None:
    assert resync_seconds(7 * 24 * 3600.0) == 3.5 * 24 * 3600.0
    assert resync_seconds(600.0) == 3600.0
    assert resync_seconds(0.0) is None


def test_a_pod_read_with_unsupported_constraints_is_published_again_after_a_restart() -> None:
    """An upgrade may read what the watcher before it did not (a namespaceSelector since core
    revision 40): such a pod is relisted as changed, not left with its old reading until it
    changes or the resync, days later; a pod without unsupported constraints is not."""
    from services.kube.listwatch import Inventory
    from services.watcher import slim

    pod = {"metadata": {"name": "web", "namespace": "default", "uid": "u-web",
                        "resourceVersion": "5"},
           "spec": {"schedulerName": "gangsched", "containers": [{"name": "c"}]},
           "status": {"phase": "Pending"}}
    now = slim.pod_event(pod, 1000)
    before = msgspec.structs.replace(now, unsupported=("spec.affinity.podAntiAffinity."
                                                       "requiredDuringSchedulingIgnored"
                                                       "DuringExecution[].namespaceSelector",))
    for logged, republished in ((before, True), (now, False)):
        known: dict[str, Any] = {}
        recovery.fold(known, codec.encode(logged))
        inventory = Inventory(known)
        inventory.begin_list()
        assert bool(inventory.listed(pod)) is republished, logged.unsupported
