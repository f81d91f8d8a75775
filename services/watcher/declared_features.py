"""Which node features a pod's scheduling requires, inferred from its spec as kube does.

Layer: watcher (pure). Source: Kubernetes 1.36's `k8s.io/component-helpers/nodedeclaredfeatures`
(`framework.go`, `InferForPodScheduling`, and its registry `features/registry.go`), which
kube-scheduler's NodeDeclaredFeatures plugin calls in its PreFilter with its own version as the
target. Of the registry's five features, two are required for scheduling:

- `RestartAllContainersOnContainerExits` (`features/restartallcontainers`): a container or init
  container with a `restartPolicyRules` rule whose `action` is `RestartAllContainers`;
- `UserNamespacesHostNetworkSupport` (`features/usernamespaceshostnetwork`): `hostNetwork: true`
  with `hostUsers: false`. While its alpha feature gate is off (its default in 1.36) the API
  server refuses such a pod (`spec.hostNetwork: Forbidden: when `hostUsers` is false`), so the
  watcher meets one only where the gate is on; it is inferred all the same, as the library does.

The other three (`InPlacePodLevelResourcesVerticalScaling`,
`InPlacePodVerticalScalingInitContainers`, `ExtendWebSocketsToKubelet`) are never required for
scheduling (only for pod updates, or not at all), so they are not listed. A feature is required
only up to its `max_version` (the library's `MaxVersion`: past it every node has it); none has
one in 1.36. Never raises: a field of the wrong type reads as absent (`watcher.slim`'s contract).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

KUBE_VERSION = (1, 36, 3)
"""The kube-scheduler version gangsched mirrors: the target version of the inference."""
RESTART_ALL_CONTAINERS = "RestartAllContainersOnContainerExits"
USER_NAMESPACES_HOST_NETWORK = "UserNamespacesHostNetworkSupport"
RESTART_ALL_ACTION = "RestartAllContainers"
"""`ContainerRestartRuleActionRestartAllContainers`."""


class Feature(NamedTuple):
    """One declared feature of the registry: its name, whether a pod spec (API JSON) requires
    it for scheduling (`InferForScheduling`), and the last version (major, minor, patch) where
    it matters (`MaxVersion`; None: no bound)."""

    name: str
    is_required_by: Callable[[Mapping[str, Any]], bool]
    max_version: tuple[int, int, int] | None = None


def _containers(spec: Mapping[str, Any], field: str) -> list[Mapping[str, Any]]:
    """The mappings among `spec[field]` (`containers`, `initContainers`); none if not a list."""
    value = spec.get(field)
    return [c for c in value if isinstance(c, Mapping)] if isinstance(value, list) else []


def restarts_all_containers(spec: Mapping[str, Any]) -> bool:
    """Whether a container or init container has a restart rule with the action
    RestartAllContainers (`restartAllContainersFeature.InferForScheduling`)."""
    for container in _containers(spec, "containers") + _containers(spec, "initContainers"):
        rules = container.get("restartPolicyRules")
        for rule in rules if isinstance(rules, list) else []:
            if isinstance(rule, Mapping) and rule.get("action") == RESTART_ALL_ACTION:
                return True
    return False


def uses_user_namespace_with_host_network(spec: Mapping[str, Any]) -> bool:
    """Whether the pod uses the host's network in a user namespace: `hostNetwork: true` and
    `hostUsers: false` (`userNamespacesHostNetworkFeature.InferForScheduling`; an absent
    `hostUsers` is true, the host's user namespace)."""
    return spec.get("hostNetwork") is True and spec.get("hostUsers") is False


REGISTRY = (
    Feature(RESTART_ALL_CONTAINERS, restarts_all_containers),
    Feature(USER_NAMESPACES_HOST_NETWORK, uses_user_namespace_with_host_network),
)
"""The features a pod's scheduling may require, sorted by name (as `framework.New` sorts its
registry)."""


def required(spec: Mapping[str, Any],
             version: tuple[int, int, int] = KUBE_VERSION) -> tuple[str, ...]:
    """The features the pod spec `spec` (API JSON) requires of a node to be scheduled at
    `version`, sorted by name (`Framework.InferForPodScheduling`: a feature past its
    `max_version` is not required)."""
    return tuple(feature.name for feature in REGISTRY
                 if (feature.max_version is None or version <= feature.max_version)
                 and feature.is_required_by(spec))
