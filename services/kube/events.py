"""core/v1 Events, as `kubectl get events` and `kubectl describe` show them.

Layer: kube. `event_body` is pure; `create_event` is one API request and never retries.
Events name gangsched as the reporting component (`reportingComponent`, `source.component`),
so users can tell which scheduler placed a pod.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from services.kube.client import KubeClient
from services.kube.resources import events_path

COMPONENT = "gangsched"
MESSAGE_MAX_CHARS = 1024
"""events.k8s.io caps `note` at 1 kB; core/v1 does not, but long messages help no one."""

INSTANCE_MAX_CHARS = 128
NORMAL = "Normal"
WARNING = "Warning"


@dataclass(frozen=True)
class ObjectRef:
    """The object an event is about (`involvedObject`)."""

    kind: str
    api_version: str
    namespace: str
    name: str
    uid: str


def reporting_instance() -> str:
    """This process's `reportingInstance`: `gangsched-<hostname>` (pod name in a cluster)."""
    return f"{COMPONENT}-{socket.gethostname()}"[:INSTANCE_MAX_CHARS]


def event_body(
    about: ObjectRef,
    *,
    event_type: str,
    reason: str,
    message: str,
    action: str,
    now: datetime,
    instance: str,
) -> dict[str, Any]:
    """A core/v1 Event with count 1, named `<object name>.<nanoseconds in hex>` as client-go does.

    Shapes: `event_type` is Normal or Warning; `reason` CamelCase (`Scheduled`); `now` in UTC.
    """
    if len(message) > MESSAGE_MAX_CHARS:
        message = message[: MESSAGE_MAX_CHARS - 3] + "..."
    stamp = now.astimezone(UTC)
    seconds = stamp.strftime("%Y-%m-%dT%H:%M:%SZ")
    nanos = int(stamp.timestamp() * 1_000_000) * 1000
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"{about.name}.{nanos:x}", "namespace": about.namespace},
        "involvedObject": {
            "kind": about.kind,
            "apiVersion": about.api_version,
            "namespace": about.namespace,
            "name": about.name,
            "uid": about.uid,
        },
        "type": event_type,
        "reason": reason,
        "message": message,
        "action": action,
        "count": 1,
        "firstTimestamp": seconds,
        "lastTimestamp": seconds,
        "eventTime": stamp.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        "reportingComponent": COMPONENT,
        "reportingInstance": instance,
        "source": {"component": COMPONENT},
    }


async def create_event(client: KubeClient, body: dict[str, Any]) -> None:
    """POST the event built by `event_body` into its namespace.

    Raises:
        KubeError subclasses (KubeNotFound when the namespace is gone).
    """
    await client.request("POST", events_path(body["metadata"]["namespace"]), body=body)
