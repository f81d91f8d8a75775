"""The names and namespaces the API server takes for the kinds `gangsched simulate` reads.

Layer: planner simulate (pure). Source: Kubernetes 1.36's `ValidateObjectMeta` with each kind's
name rule: a DNS-1123 subdomain for most (`NameIsDNSSubdomain`: Pod, Node, PriorityClass,
RuntimeClass, storage, ReplicaSet, Deployment, Job, and custom resources such as
Coscheduling's PodGroup, `apiextensions-apiserver`'s validator), a DNS-1123 label for a
StatefulSet (its name is part of its pods' host names, since 1.27), and only the generic
path-segment rule for a PodDisruptionBudget (its validation checks no name); a namespaced
object's namespace is a DNS-1123 label (`ValidateNamespaceName`). The messages are the API
server's. A Job's name beyond 63 characters is refused through the labels its pods get
(`object_labels`, `controller_labels`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from services.contracts import names

CLUSTER_SCOPED = frozenset({"Node", "PersistentVolume", "StorageClass", "PriorityClass",
                            "RuntimeClass", "Namespace", "CSINode", "VolumeAttachment"})
"""The kinds simulate reads that have no namespace (`manifests` gives the others `default`)."""
MAX_SUBDOMAIN = 253
MAX_LABEL = 63
SUBDOMAIN_RULE = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                  "characters, '-' or '.', and must start and end with an alphanumeric "
                  "character (e.g. 'example.com', regex used for validation is "
                  r"'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
LABEL_RULE = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters "
              "or '-', and must start and end with an alphanumeric character (e.g. 'my-name',"
              "  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')")
REQUIRED = "Required value: name or generateName is required"


def problem(body: Mapping[str, Any]) -> tuple[str, str] | None:
    """The field (`metadata.name` or `metadata.namespace`) the API server would refuse in
    object `body` and why, in its words (`Invalid value: "Bad_Name": a lowercase RFC 1123
    subdomain ...`); None when both are valid. Shapes: `body` has a string `kind` and a
    `metadata` mapping whose `name` is a string; a namespace that is absent, empty or not text
    is left to the caller (defaulted, or refused as a wrong type)."""
    meta = body["metadata"]
    name: str = meta["name"]
    if not name:
        return "metadata.name", REQUIRED
    wrong = _NAME_RULES.get(body["kind"], subdomain_problem)(name)
    if wrong is not None:
        return "metadata.name", wrong
    namespace = meta.get("namespace")
    if body["kind"] in CLUSTER_SCOPED or not isinstance(namespace, str) or not namespace:
        return None
    wrong = label_problem(namespace)
    return None if wrong is None else ("metadata.namespace", wrong)


def subdomain_problem(name: str) -> str | None:
    """Why `name` is no DNS-1123 subdomain, in the API server's words (`Invalid value: ...`),
    as apimachinery's `IsDNS1123Subdomain` says it first; None when it is one."""
    if len(name) > MAX_SUBDOMAIN:
        return invalid(name, f"must be no more than {MAX_SUBDOMAIN} characters")
    return None if names.is_dns_subdomain(name) else invalid(name, SUBDOMAIN_RULE)


def label_problem(name: str) -> str | None:
    """Why `name` is no DNS-1123 label, in the API server's words (`Invalid value: ...`), as
    apimachinery's `IsDNS1123Label` says it first (a valid subdomain that is no label must
    hold dots, and is told so); None when it is one."""
    if len(name) > MAX_LABEL:
        return invalid(name, f"must be no more than {MAX_LABEL} characters")
    if names.is_dns_label(name):
        return None
    return invalid(name, "must not contain dots" if names.is_dns_subdomain(name) else LABEL_RULE)


def _path_segment(name: str) -> str | None:
    problems = path_segment_problems(name)
    return invalid(name, problems[0]) if problems else None


def path_segment_problems(name: str) -> list[str]:
    """Every message `IsValidPathSegmentName` (apimachinery's, and client-go's, which checks a
    name it puts in a request's path) gives `name`, in its order: `may not be '..'` alone, or
    `may not contain '/'` then `... '%'`; empty when `name` may be a path segment."""
    if name in (".", ".."):
        return [f"may not be '{name}'"]
    return [f"may not contain '{part}'" for part in ("/", "%") if part in name]


_NAME_RULES: Mapping[str, Callable[[str], str | None]] = {
    "StatefulSet": label_problem, "PodDisruptionBudget": _path_segment,
    "Namespace": label_problem}
"""The kinds named otherwise than by a DNS-1123 subdomain."""


def invalid(value: str, why: str) -> str:
    """The API server's `Invalid value: "<value>": <why>`, the value as `quoted` shows it."""
    return f"Invalid value: {quoted(value)}: {why}"


def quoted(value: str) -> str:
    """`value` as an API server message shows it: quoted with its control characters escaped
    (as Go's %q: one line whatever it holds), cut to 80 characters."""
    return json.dumps(value if len(value) <= 80 else value[:77] + "...")
