"""The JSON bodies sent to the API server: Binding, Event, paths."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any
from urllib.parse import quote

import pytest

from services.kube import errors, events, pods, resources
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


def test_an_event_names_the_scheduler_as_reporting_controller_and_regards_the_pod() -> None:
    about = ObjectRef("Pod", "v1", "ml", "w-0", "uid-1")
    body = events.event_body(
        about, event_type="Normal", reason="Scheduled", message="Successfully assigned ml/w-0 to n",
        action="Binding", now=NOW, controller="scheduler-plugins-scheduler",
        instance="gangsched-host",
    )
    assert body["apiVersion"] == "events.k8s.io/v1"
    assert body["metadata"]["namespace"] == "ml"
    assert body["metadata"]["name"].startswith("w-0.")
    assert body["regarding"] == {
        "kind": "Pod", "apiVersion": "v1", "namespace": "ml", "name": "w-0", "uid": "uid-1",
    }
    assert body["reportingController"] == "scheduler-plugins-scheduler"
    assert body["reportingInstance"] == "gangsched-host"
    assert body["eventTime"] == "2024-05-01T12:00:00.123456Z"
    assert (body["type"], body["reason"], body["action"], body["note"]) == (
        "Normal", "Scheduled", "Binding", "Successfully assigned ml/w-0 to n",
    )
    assert "series" not in body


def test_a_long_event_note_is_truncated() -> None:
    about = ObjectRef("Pod", "v1", "ml", "w-0", "uid-1")
    body = events.event_body(
        about, event_type="Warning", reason="FailedScheduling", message="x" * 5000,
        action="Scheduling", now=NOW, controller="gangsched", instance="i",
    )
    assert len(body["note"]) == events.MESSAGE_MAX_CHARS
    assert body["note"].endswith("...")


class RecordingClient:
    """Answers every request as the API server would when it succeeds; `gone` names events
    that have expired."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str, Any]] = []
        self.gone: set[str] = set()

    async def request(self, method: str, path: str, *, body: Any = None,
                      content_type: str | None = None) -> dict[str, Any]:
        self.requests.append((method, path, body))
        if method == "PATCH" and path.rsplit("/", 1)[-1] in self.gone:
            raise errors.KubeNotFound("gone", status=404)
        return {}


async def test_a_repeated_event_extends_its_series_instead_of_making_another() -> None:
    client = RecordingClient()
    recorder = events.EventRecorder(client, controller="gangsched", instance="i")  # type: ignore[arg-type]
    about = ObjectRef("Pod", "v1", "ml", "w-0", "uid-1")
    for seconds in (0, 30, 60):
        await recorder.record(about, event_type="Warning", reason="FailedScheduling",
                              message="0/1 nodes are available", action="Scheduling",
                              now=NOW + timedelta(seconds=seconds))
    methods = [method for method, _, _ in client.requests]
    assert methods == ["POST", "PATCH", "PATCH"]
    name = client.requests[0][2]["metadata"]["name"]
    assert client.requests[2][1] == f"/apis/events.k8s.io/v1/namespaces/ml/events/{name}"
    assert client.requests[2][2] == {"series": {
        "count": 3, "lastObservedTime": "2024-05-01T12:01:00.123456Z"}}


async def test_another_note_a_late_repeat_or_an_expired_event_makes_a_new_event() -> None:
    client = RecordingClient()
    recorder = events.EventRecorder(client, controller="gangsched", instance="i")  # type: ignore[arg-type]
    about = ObjectRef("Pod", "v1", "ml", "w-0", "uid-1")

    async def record(message: str, seconds: float) -> None:
        await recorder.record(about, event_type="Warning", reason="FailedScheduling",
                              message=message, action="Scheduling",
                              now=NOW + timedelta(seconds=seconds))

    await record("a", 0)
    await record("b", 1)  # another note: its own event
    await record("a", 1 + events.SERIES_WINDOW.total_seconds() + 1)  # too late for a's series
    client.gone.add(client.requests[-1][2]["metadata"]["name"])
    await record("a", 1 + events.SERIES_WINDOW.total_seconds() + 2)  # expired: made anew
    assert [method for method, _, _ in client.requests] == ["POST", "POST", "POST", "PATCH",
                                                            "POST"]


def test_paths_quote_their_segments() -> None:
    assert resources.pod_path("ml", "w-0", "binding") == "/api/v1/namespaces/ml/pods/w-0/binding"
    assert resources.node_path("a/b") == "/api/v1/nodes/a%2Fb"
    assert resources.podgroup_path("ml", "g", "status") == (
        "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/ml/podgroups/g/status"
    )


@pytest.mark.parametrize("name", ["w-0", "a.b_c~d", "", "a/b", "a b", "a%2F", "é", "a?x#y", "a\n"])
def test_a_segment_is_quoted_exactly_as_quote_would(name: str) -> None:
    assert resources.node_path(name) == "/api/v1/nodes/" + quote(name, safe="")


@pytest.mark.parametrize("stamp", [
    datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=UTC),
    datetime(2026, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
    datetime(2026, 6, 1, 0, 0, tzinfo=UTC),  # no microseconds: still six digits
    datetime(2026, 6, 1, 2, 30, 0, 5, tzinfo=timezone(timedelta(hours=2, minutes=30))),
])
def test_micro_time_is_rfc3339_in_utc_with_microseconds(stamp: datetime) -> None:
    assert events.micro_time(stamp) == stamp.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
