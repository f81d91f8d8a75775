"""Subjects, payloads and de-duplication ids of the watcher's messages."""

from __future__ import annotations

import pytest

from services.contracts import codec
from services.contracts.events import (
    AttachmentDeleted,
    AttachmentObserved,
    ClockTicked,
    CSINodeDeleted,
    CSINodeObserved,
    DisruptionBudgetDeleted,
    DisruptionBudgetObserved,
    Event,
    NodeObserved,
    NodeSelectorRequirement,
    PodDeleted,
    PodObserved,
)
from services.kube.listwatch import Change, ChangeType
from services.watcher import messages


def pod(uid: str = "u1", rv: str = "7") -> dict[str, object]:
    return {
        "metadata": {"name": "w.0", "namespace": "ml", "uid": uid, "resourceVersion": rv,
                     "creationTimestamp": "2024-05-01T10:00:00Z"},
        "spec": {"schedulerName": "gangsched", "containers": [{"name": "c"}]},
        "status": {"phase": "Pending"},
    }


def test_an_observed_pod_is_published_under_its_namespace_and_name() -> None:
    subject, data, msg_id = messages.change_message("gs", "pod", Change("observed", pod()), 1000)
    assert subject == "gs.events.pod.ml.w_0"
    assert msg_id == "pod/u1/7/observed"
    event = codec.decode_event(data)
    assert isinstance(event, PodObserved)
    assert (event.uid, event.at_ms, event.resource_version) == ("u1", 1000, "7")


def test_a_deleted_pod_has_its_own_id_so_it_is_never_taken_for_the_observation() -> None:
    _, data, msg_id = messages.change_message("gs", "pod", Change("deleted", pod()), 1000)
    assert msg_id == "pod/u1/7/deleted"
    assert isinstance(codec.decode_event(data), PodDeleted)


def test_nodes_are_cluster_scoped() -> None:
    node = {"metadata": {"name": "n1", "uid": "nu", "resourceVersion": "3"},
            "status": {"allocatable": {"cpu": "4"}}}
    subject, data, msg_id = messages.change_message("gs", "node", Change("observed", node), 5)
    assert subject == "gs.events.node._.n1"
    assert msg_id == "node/nu/3/observed"
    assert isinstance(codec.decode_event(data), NodeObserved)


@pytest.mark.parametrize(("kind", "spec", "observed", "deleted"), [
    ("csinode", {"drivers": [{"name": "d", "allocatable": {"count": 2}}]},
     CSINodeObserved(at_ms=5, uid="x1", name="n1", resource_version="3", limits={"d": 2}),
     CSINodeDeleted(at_ms=5, uid="x1", name="n1", resource_version="3")),
    ("attachment", {"attacher": "d", "nodeName": "n1", "source": {"persistentVolumeName": "v"}},
     AttachmentObserved(at_ms=5, uid="x1", name="n1", resource_version="3", node="n1",
                        attacher="d", volume="v"),
     AttachmentDeleted(at_ms=5, uid="x1", name="n1", resource_version="3")),
])
def test_csinodes_and_volume_attachments_are_cluster_scoped_on_their_own_kinds(
        kind: str, spec: dict[str, object], observed: Event, deleted: Event) -> None:
    obj = {"metadata": {"name": "n1", "uid": "x1", "resourceVersion": "3"}, "spec": spec}
    changes: tuple[tuple[ChangeType, Event], ...] = (("observed", observed), ("deleted", deleted))
    for change, event in changes:
        subject, data, msg_id = messages.change_message("gs", kind, Change(change, obj), 5)
        assert (subject, msg_id) == (f"gs.events.{kind}._.n1", f"{kind}/x1/3/{change}")
        assert codec.decode_event(data) == event


def test_ticks_are_deduplicated_per_second() -> None:
    subject, data, msg_id = messages.tick_message("gs", 1_700_000_000_999)
    assert subject == "gs.events.clock._.tick"
    assert msg_id == "clock/1700000000"
    assert codec.decode_event(data) == ClockTicked(at_ms=1_700_000_000_999)


def budget(selector: object) -> dict[str, object]:
    return {"metadata": {"name": "web", "namespace": "ml", "uid": "b1", "resourceVersion": "4"},
            "spec": {"selector": selector}, "status": {"disruptionsAllowed": 1}}


def test_a_budget_is_published_under_its_namespace_on_the_pdb_kind() -> None:
    selector = {"matchLabels": {"app": "web"}}
    subject, data, msg_id = messages.change_message("gs", "pdb",
                                                    Change("observed", budget(selector)), 9)
    assert (subject, msg_id) == ("gs.events.pdb.ml.web", "pdb/b1/4/observed")
    assert codec.decode_event(data) == DisruptionBudgetObserved(
        at_ms=9, uid="b1", namespace="ml", name="web", resource_version="4",
        selector=(NodeSelectorRequirement("app", "In", ("web",)),), disruptions_allowed=1)
    subject, data, msg_id = messages.change_message("gs", "pdb",
                                                    Change("deleted", budget(selector)), 9)
    assert (subject, msg_id) == ("gs.events.pdb.ml.web", "pdb/b1/4/deleted")
    assert isinstance(codec.decode_event(data), DisruptionBudgetDeleted)


def test_only_an_observed_malformed_budget_has_a_problem_to_log() -> None:
    malformed = budget("app=web")
    assert messages.problem("pdb", Change("observed", malformed)) == (
        "spec.selector is not a valid label selector (read as selecting no pod)")
    assert messages.problem("pdb", Change("deleted", malformed)) is None
    assert messages.problem("pdb", Change("observed", budget({}))) is None
    assert messages.problem("pod", Change("observed", pod())) is None
