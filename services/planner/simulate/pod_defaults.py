"""What the API server sets in a pod before storing it, for `gangsched simulate`.

Layer: planner simulate (pure; `admit` changes the pod spec it is given, or says why the
RuntimeClass plugin refuses it). The watcher reads pods the API server has defaulted and
admitted; a manifest given to simulate has been through neither, so what kube-scheduler would
read of it is set here. Sources, Kubernetes 1.36:
- Defaulting, `SetDefaults_Pod` (`pkg/apis/core/v1/defaults.go`, `defaultHostNetworkPorts`): on
  a pod with `hostNetwork: true`, each port of its containers and init containers without a
  `hostPort` (0 or absent) gets its `containerPort` as `hostPort`, so NodePorts holds it on the
  node. A Pod only: `SetDefaults_PodSpec`, which a workload's pod template gets, does not (no
  feature gate of 1.36 changes it); the pod its controller creates from the template is a Pod,
  defaulted so on creation.
- Defaulting, the same function's `defaultHugePagePodLimits` and `defaultPodRequests`
  (PodLevelResources, on by default): a pod-level request of cpu or memory the pod does not
  give is its containers' aggregate request when a container requests it, else its pod-level
  limit (`pod_level_resources`).
- Validation, `validatePodHostNetworkDeps` (`pkg/apis/core/validation/validation.go`): on a
  hostNetwork pod spec, an app container's `hostPort`, when given (not 0), must equal its
  `containerPort` (`host_network_port_problem`).
- The DefaultTolerationSeconds admission plugin (`plugin/pkg/admission/defaulttolerationseconds`,
  `Plugin.Admit`; enabled by default): a pod without a toleration of the taint
  `node.kubernetes.io/not-ready:NoExecute` gets `{key: node.kubernetes.io/not-ready, operator:
  Exists, effect: NoExecute, tolerationSeconds: 300}`, and likewise for
  `node.kubernetes.io/unreachable` (300 s: the API server's default flags
  `--default-not-ready-toleration-seconds` and `--default-unreachable-toleration-seconds`). A
  toleration with that key or an empty one, and effect NoExecute or an empty one, counts as
  one of that taint, as the plugin counts it.
- The RuntimeClass admission plugin's `Admit` (`runtime_classes.admit`; enabled by default),
  the admission plugins' order (`pkg/kubeapiserver/options/plugins.go`) putting it after
  DefaultTolerationSeconds: the overhead, node selector and tolerations of the class the pod
  names merged into it; its `Validate` follows the pod's validation
  (`runtime_classes.validate`, which `manifests` runs).
- `PrepareForCreate`'s `mutatePodAffinity` (`pkg/registry/core/pod/strategy.go`): each pod
  (anti-)affinity term's `matchLabelKeys` and `mismatchLabelKeys` merged into its
  `labelSelector` with the pod's labels (`pod_affinity_keys`).
Shapes: `spec` is a pod spec (a mapping) whose field types `shapes` checked; its `containers`
are mappings (`manifests._check_containers`); `labels` the pod's labels (text keys and values).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from services.planner.simulate import pod_affinity_keys, pod_level_resources, runtime_classes

NOT_READY_TAINT = "node.kubernetes.io/not-ready"
UNREACHABLE_TAINT = "node.kubernetes.io/unreachable"
NO_EXECUTE = "NoExecute"
DEFAULT_TOLERATION_SECONDS = 300
"""`defaultNotReadyTolerationSeconds` and `defaultUnreachableTolerationSeconds`, in seconds."""
PORTED_CONTAINERS = ("containers", "initContainers")
"""The containers whose ports `defaultHostNetworkPorts` defaults (not ephemeral ones)."""


def admit(spec: dict[str, Any], labels: Mapping[str, Any] | None,
          classes: runtime_classes.RuntimeClasses) -> tuple[str, str] | None:
    """Set in the pod spec `spec` of a pod labelled `labels` (null: none) what defaulting, the
    DefaultTolerationSeconds and RuntimeClass plugins (given the RuntimeClasses `classes`) and
    the pod strategy's `PrepareForCreate` set on creation (module docstring), in the API
    server's order: defaulting (pod-level resources, then host ports, as `SetDefaults_Pod`),
    admission, then `PrepareForCreate`. The RuntimeClass plugin's refusal, `(field, why)` with
    the field relative to `spec` (`runtime_classes.admit`), if it refuses the pod (then
    `PrepareForCreate` is not run); else None."""
    pod_level_resources.default(spec)
    default_host_network_ports(spec)
    add_default_tolerations(spec)
    refused = runtime_classes.admit(spec, classes)
    if refused is not None:
        return refused
    pod_affinity_keys.merge(spec, labels)
    return None


def default_host_network_ports(spec: dict[str, Any]) -> None:
    """`defaultHostNetworkPorts`, which `SetDefaults_Pod` runs on a pod with `hostNetwork:
    true`: each container and init container port without a `hostPort` (absent, null or 0)
    gets its `containerPort` (a port without one keeps none)."""
    if spec.get("hostNetwork") is not True:
        return
    for field in PORTED_CONTAINERS:
        for container in spec.get(field) or []:
            for port in container.get("ports") or []:
                if isinstance(port, dict) and not port.get("hostPort") \
                        and port.get("containerPort"):
                    port["hostPort"] = port["containerPort"]


def add_default_tolerations(spec: dict[str, Any]) -> None:
    """`Plugin.Admit` of DefaultTolerationSeconds: append to `spec.tolerations` the toleration
    of `node.kubernetes.io/not-ready:NoExecute`, then of `node.kubernetes.io/unreachable:
    NoExecute` (operator Exists, tolerationSeconds 300), each unless one already tolerates that
    taint (`_tolerates`)."""
    tolerations = list(spec.get("tolerations") or [])
    added = [{"key": key, "operator": "Exists", "effect": NO_EXECUTE,
              "tolerationSeconds": DEFAULT_TOLERATION_SECONDS}
             for key in (NOT_READY_TAINT, UNREACHABLE_TAINT)
             if not any(_tolerates(toleration, key) for toleration in tolerations)]
    if added:
        spec["tolerations"] = [*tolerations, *added]


def _tolerates(toleration: Mapping[str, Any] | None, key: str) -> bool:
    """Whether the plugin counts `toleration` (null: the empty one the API server decodes) as
    one of the taint `key`:NoExecute: its key that one or empty, its effect NoExecute or
    empty (its operator and value not looked at, as the plugin does not)."""
    given = toleration or {}
    return (given.get("key") or "") in (key, "") and (given.get("effect") or "") in (
        NO_EXECUTE, "")


def host_network_port_problem(spec: Mapping[str, Any]) -> tuple[str, str] | None:
    """The first app container port of the pod spec `spec` that `validatePodHostNetworkDeps`
    refuses, and why: with `hostNetwork: true`, a `hostPort` given (not 0) that differs from
    the port's `containerPort`. The field path is relative to `spec`:
    `("containers[0].ports[0].hostPort", "Invalid value: 8080: must match `containerPort` when
    `hostNetwork` is true")`; None when there is none. The same rule holds for a Pod (after
    `default_host_network_ports`, where a hostPort of 0 became the containerPort) and for a
    pod template (where the API server lets 0 through, to be defaulted in the Pod)."""
    if spec.get("hostNetwork") is not True:
        return None
    for i, container in enumerate(spec.get("containers") or []):
        for j, port in enumerate(container.get("ports") or []):
            given = (port or {}).get("hostPort") or 0
            if given and given != ((port or {}).get("containerPort") or 0):
                return (f"containers[{i}].ports[{j}].hostPort", f"Invalid value: {given}: "
                        "must match `containerPort` when `hostNetwork` is true")
    return None
