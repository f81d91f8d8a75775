"""The JSON bodies sent to the API server: Binding, Event, paths."""

from __future__ import annotations

from datetime import UTC, datetime

from services.kube import events, pods, resources
from services.kube.events import ObjectRef

NOW = datetime(2024, 5, 1, 12, 0, 0, 123456, tzinfo=UTC)


def test_a_binding_carries_the_pod_uid_as_precondition_and_targets_the_node() -> None:
    body = pods.binding_body("ml", "w-0", "uid-1", "node-a")
    assert body == {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "w-0", "namespace": "ml", "uid": "uid-1"},
        "target": {"apiVersion": "v1", "kind": "Node", "name": "node-a"},
    }


def test_an_event_names_gangsched_as_reporting_component_and_the_pod_as_involved_object() -> None:
    about = ObjectRef("Pod", "v1", "ml", "w-0", "uid-1")
    body = events.event_body(
        about, event_type="Normal", reason="Scheduled", message="Successfully assigned ml/w-0 to n",
        action="Binding", now=NOW, instance="gangsched-host",
    )
    assert body["metadata"]["namespace"] == "ml"
    assert body["metadata"]["name"].startswith("w-0.")
    assert body["involvedObject"] == {
        "kind": "Pod", "apiVersion": "v1", "namespace": "ml", "name": "w-0", "uid": "uid-1",
    }
    assert body["reportingComponent"] == "gangsched"
    assert body["source"] == {"component": "gangsched"}
    assert body["reportingInstance"] == "gangsched-host"
    assert body["firstTimestamp"] == body["lastTimestamp"] == "2024-05-01T12:00:00Z"
    assert body["eventTime"] == "2024-05-01T12:00:00.123456Z"
    assert (body["type"], body["reason"], body["action"], body["count"]) == (
        "Normal", "Scheduled", "Binding", 1,
    )


def test_a_long_event_message_is_truncated() -> None:
    about = ObjectRef("Pod", "v1", "ml", "w-0", "uid-1")
    body = events.event_body(
        about, event_type="Warning", reason="FailedScheduling", message="x" * 5000,
        action="Scheduling", now=NOW, instance="i",
    )
    assert len(body["message"]) == events.MESSAGE_MAX_CHARS
    assert body["message"].endswith("...")


def test_paths_quote_their_segments() -> None:
    assert resources.pod_path("ml", "w-0", "binding") == "/api/v1/namespaces/ml/pods/w-0/binding"
    assert resources.node_path("a/b") == "/api/v1/nodes/a%2Fb"
    assert resources.podgroup_path("ml", "g", "status") == (
        "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/ml/podgroups/g/status"
    )
