"""Node declared features and the pod fields that require them, as the API server takes them,
for the Nodes and pods `gangsched simulate` reads.

Layer: planner simulate (pure). Source: Kubernetes 1.36's `pkg/apis/core/validation`:
`validateNodeDeclaredFeatures` (a Node's `status.declaredFeatures`: each name an UpperCamelCase
segment and `/`-separated segments, at most 253 characters, the list sorted without repeats;
the planner reads the list as a set, which kube's `TryMap` of a sorted list is), the parts of
`validateContainerRestartPolicy` that decide whether a container's `restartPolicyRules` are
taken (a `restartPolicy` set; each rule's `action` `Restart` or `RestartAllContainers`, its
`exitCodes` given, their `operator` `In` or `NotIn`), and `validateHostUsers`, which refuses
`hostNetwork: true` with `hostUsers: false` while the alpha feature gate
`UserNamespacesHostNetworkSupport` is off (its default). What the pod then requires of a node is
inferred as the watcher infers it (`watcher.declared_features`, through `watcher.slim`). The
messages are the API server's, its first error in its order (a container's policy, then its
rules in order; containers before init containers). Not checked: the counts of rules (20) and
exit codes (255), and a `restartPolicy` value.

Shapes: the JSON types of the fields read were checked (`shapes`: text, booleans, lists).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

from services.planner.simulate.object_names import invalid, quoted
from services.planner.simulate.tolerations import unsupported

FEATURE_NAME = re.compile(r"[A-Z][a-zA-Z0-9]*(/[a-zA-Z][a-zA-Z0-9]*)*")
"""`nodeDeclaredFeatureRegexp`."""
MAX_FEATURE_NAME = 253
"""`validation.DNS1123SubdomainMaxLength`."""
FEATURE_NAME_FORM = ("must start with an UpperCamelCase segment, with subsequent segments "
                     "separated by '/' (e.g., MyFeature or MyFeature/mySubFeature), and contain "
                     "only alphanumeric characters and slashes")
ACTIONS = ("Restart", "RestartAllContainers")
OPERATORS = ("In", "NotIn")
HOST_NETWORK_WITH_USER_NAMESPACE = "Forbidden: when `hostUsers` is false"


def node_problem(status: Any) -> tuple[str, str] | None:
    """The first entry of a Node's `status.declaredFeatures` the API server refuses, with the
    field relative to the status: `("declaredFeatures[1]", 'Invalid value: "A": list must be
    sorted alphabetically')`; None when it takes them all (or there are none)."""
    features = status.get("declaredFeatures") if isinstance(status, Mapping) else None
    return next(_feature_errors(features if isinstance(features, list) else []), None)


def _feature_errors(features: list[Any]) -> Iterator[tuple[str, str]]:
    """Every error of `validateNodeDeclaredFeatures`, in its order: each name, then whether the
    next one repeats or precedes it. A null entry is the empty name (Go's zero value)."""
    names = ["" if name is None else str(name) for name in features]
    for i, name in enumerate(names):
        where = f"declaredFeatures[{i}]"
        if len(name.encode()) > MAX_FEATURE_NAME:
            yield where, invalid(name, f"invalid feature name {json.dumps(name)}: must be no "
                                       f"more than {MAX_FEATURE_NAME} characters")
        elif FEATURE_NAME.fullmatch(name) is None:
            yield where, invalid(name, f"invalid feature name {json.dumps(name)}: "
                                       f"{FEATURE_NAME_FORM}")
        if i + 1 < len(names) and name == names[i + 1]:
            yield f"declaredFeatures[{i + 1}]", f"Duplicate value: {quoted(name)}"
        elif i + 1 < len(names) and name > names[i + 1]:
            yield f"declaredFeatures[{i + 1}]", invalid(names[i + 1],
                                                        "list must be sorted alphabetically")


def pod_problem(spec: Mapping[str, Any]) -> tuple[str, str] | None:
    """The first field of a pod spec the API server refuses among its containers' restart
    rules and a host network in a user namespace (module docstring), with the field relative
    to the spec: `("containers[0].restartPolicyRules[0].action", 'Unsupported value: "Stop":
    supported values: "Restart", "RestartAllContainers"')`; None when it takes them."""
    for field in ("containers", "initContainers"):
        containers = spec.get(field)
        for i, container in enumerate(containers if isinstance(containers, list) else []):
            if isinstance(container, Mapping):
                found = next(_restart_rule_errors(container, f"{field}[{i}]"), None)
                if found is not None:
                    return found
    if spec.get("hostNetwork") is True and spec.get("hostUsers") is False:
        return "hostNetwork", HOST_NETWORK_WITH_USER_NAMESPACE
    return None


def _restart_rule_errors(container: Mapping[str, Any], where: str) -> Iterator[tuple[str, str]]:
    """The errors of one container's `restartPolicyRules` (`validateContainerRestartPolicy`,
    as checked here), in the API server's order; null entries and fields read as absent."""
    rules = container.get("restartPolicyRules")
    rules = [rule if isinstance(rule, Mapping) else {} for rule in
             (rules if isinstance(rules, list) else [])]
    if rules and container.get("restartPolicy") is None:
        yield (f"{where}.restartPolicy",
               "Required value: must specify restartPolicy when restart rules are used")
    for i, rule in enumerate(rules):
        at = f"{where}.restartPolicyRules[{i}]"
        action = "" if rule.get("action") is None else str(rule.get("action"))
        if action not in ACTIONS:
            yield f"{at}.action", unsupported(action, ACTIONS)
        exit_codes = rule.get("exitCodes")
        if not isinstance(exit_codes, Mapping):
            yield f"{at}.exitCodes", "Required value: must be specified"
            continue
        operator = "" if exit_codes.get("operator") is None else str(exit_codes.get("operator"))
        if operator not in OPERATORS:
            yield f"{at}.exitCodes.operator", unsupported(operator, OPERATORS)
