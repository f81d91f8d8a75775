"""The names and namespaces the API server takes for the kinds `gangsched simulate` reads.

Layer: planner simulate (pure). Source: apimachinery's `ValidateObjectMeta` with each kind's
name rule: built-in kinds are named by a DNS-1123 subdomain (`NameIsDNSSubdomain`: Pod, Node,
PriorityClass, the workloads, storage and budgets), a custom resource (Coscheduling's PodGroup)
by any path segment (`path.IsValidPathSegmentName`), and a namespaced object's namespace is a
DNS-1123 label (`ValidateNamespaceName`). The messages are the API server's.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from services.contracts import names

CUSTOM_GROUPS = ("scheduling.x-k8s.io/",)
"""apiVersions served by a CustomResourceDefinition (names: any path segment)."""
CLUSTER_SCOPED = frozenset({"Node", "PersistentVolume", "StorageClass", "PriorityClass"})
MAX_SUBDOMAIN = 253
MAX_LABEL = 63
SUBDOMAIN_RULE = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                  "characters, '-' or '.', and must start and end with an alphanumeric "
                  "character (e.g. 'example.com', regex used for validation is "
                  r"'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
LABEL_RULE = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters "
              "or '-', and must start and end with an alphanumeric character (e.g. 'my-name',"
              "  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')")


def problem(body: Mapping[str, Any]) -> tuple[str, str] | None:
    """The field (`metadata.name` or `metadata.namespace`) the API server would refuse in
    object `body` and why, in its words (`Invalid value: "Bad_Name": a lowercase RFC 1123
    subdomain ...`); None when both are valid. Shapes: `body` has a string `kind` and a
    `metadata` mapping whose `name` is a string; a namespace that is absent, empty or not text
    is left to the caller (defaulted, or refused as a wrong type)."""
    meta = body["metadata"]
    name: str = meta["name"]
    api_version = body.get("apiVersion")
    is_custom = isinstance(api_version, str) and api_version.startswith(CUSTOM_GROUPS)
    wrong = _path_segment(name) if is_custom else _subdomain(name)
    if wrong is not None:
        return "metadata.name", wrong
    namespace = meta.get("namespace")
    if body["kind"] in CLUSTER_SCOPED or not isinstance(namespace, str) or not namespace:
        return None
    if len(namespace) > MAX_LABEL:
        return "metadata.namespace", _invalid(namespace, f"must be no more than {MAX_LABEL} "
                                              "characters")
    if not names.is_dns_label(namespace):
        return "metadata.namespace", _invalid(namespace, LABEL_RULE)
    return None


def _subdomain(name: str) -> str | None:
    if len(name) > MAX_SUBDOMAIN:
        return _invalid(name, f"must be no more than {MAX_SUBDOMAIN} characters")
    return None if names.is_dns_subdomain(name) else _invalid(name, SUBDOMAIN_RULE)


def _path_segment(name: str) -> str | None:
    if name in (".", ".."):
        return _invalid(name, f"may not be '{name}'")
    for part in ("/", "%"):
        if part in name:
            return _invalid(name, f"may not contain '{part}'")
    return None


def _invalid(value: str, why: str) -> str:
    """The API server's `Invalid value: "<value>": <why>`, the value quoted with its control
    characters escaped (as Go's %q: one line whatever it holds), cut to 80 characters."""
    shown = value if len(value) <= 80 else value[:77] + "..."
    return f"Invalid value: {json.dumps(shown)}: {why}"
