"""Reading simulation manifests: validation, priority classes, workloads expanded into pods.

A pod's `spec.priority` and `spec.preemptionPolicy` are resolved from the PriorityClasses of the
manifests as the API server's Priority admission plugin does at creation (`_resolve_priority`).
PodDisruptionBudgets are checked as the API server validates `spec` (`_check_budget`); their
status is the simulation's to compute (`budgets`).

Layer: planner simulate (pure; dict in, dict out; never does I/O). Workloads become the pods
their controllers would create, named as those controllers name them: StatefulSet `<name>-<i>`,
ReplicaSet and Job `<name>-<5 chars>`, Deployment `<name>-<10 chars>-<5 chars>` (through its
ReplicaSet). The "random" characters are derived from a hash of the namespace, workload and
ordinal, so the same manifests always give the same names. Kinds that do not matter to
scheduling (Service, ConfigMap, ...) are ignored and listed.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Mapping
from typing import Any

import msgspec

from services.contracts import resources
from services.planner.simulate import api_versions

AT_ANNOTATION = "simulate.gangsched.io/at"
RUNTIME_ANNOTATION = "simulate.gangsched.io/runtime"
SIM_PREFIX = "simulate.gangsched.io/"
SAFE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
"""The characters Kubernetes uses for generated name suffixes (rand.SafeEncodeString)."""
BUILTIN_PRIORITY_CLASSES = {"system-cluster-critical": 2000000000,
                            "system-node-critical": 2000001000}
HIGHEST_USER_DEFINABLE_PRIORITY = 1_000_000_000
PREEMPTION_POLICIES = ("PreemptLowerPriority", "Never")
DEFAULT_PREEMPTION_POLICY = "PreemptLowerPriority"
STORAGE_KINDS = ("PersistentVolumeClaim", "PersistentVolume", "StorageClass")
BUDGET_KIND = "PodDisruptionBudget"
SCHEDULED_KINDS = ("Node", "Pod", "PodGroup", *STORAGE_KINDS, BUDGET_KIND)
CLUSTER_KINDS = ("Node", "PersistentVolume", "StorageClass")
"""Kinds without a namespace."""
ACCESS_MODES = ("ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany", "ReadWriteOncePod")
BINDING_MODES = ("Immediate", "WaitForFirstConsumer")
WORKLOAD_KINDS = ("ReplicaSet", "Deployment", "Job", "StatefulSet")


class InvalidManifest(ValueError):
    """A document that cannot be simulated; the message names the document and the field."""

    def __init__(self, where: str, field: str, message: str) -> None:
        super().__init__(f"{where}: {field}: {message}" if field else f"{where}: {message}")
        self.where, self.field = where, field


class Item(msgspec.Struct, frozen=True):
    """One Node, Pod, PodGroup, claim, volume, StorageClass or PodDisruptionBudget to play, with
    where it came from.

    Units: `at_seconds` simulated seconds after the start; `runtime_seconds` seconds a bound pod
    runs before it succeeds (None: forever).
    """

    where: str
    kind: str
    obj: dict[str, Any]
    at_seconds: float
    runtime_seconds: float | None = None


class PriorityClass(msgspec.Struct, frozen=True):
    """A PriorityClass's `value` and `preemptionPolicy` (what admission copies into a pod)."""

    name: str
    value: int
    preemption_policy: str = DEFAULT_PREEMPTION_POLICY


class Document(msgspec.Struct, frozen=True):
    """A parsed YAML document and its place: `<file> document <n>` (1-based)."""

    source: str
    number: int
    body: Any


def describe(document: Document, body: Mapping[str, Any] | None = None) -> str:
    """`<file> document <n> (<Kind> <ns>/<name>)` for messages."""
    obj = body if body is not None else document.body
    where = f"{document.source} document {document.number}"
    if isinstance(obj, Mapping):
        meta = obj.get("metadata") if isinstance(obj.get("metadata"), Mapping) else {}
        name = meta.get("name", "?") if isinstance(meta, Mapping) else "?"
        namespace = meta.get("namespace") if isinstance(meta, Mapping) else None
        shown = f"{namespace}/{name}" if namespace else str(name)
        where += f" ({obj.get('kind', '?')} {shown})"
    return where


def suffix(seed: str, length: int) -> str:
    """`length` characters of SAFE_ALPHABET derived from `seed` (deterministic)."""
    digest = hashlib.sha256(seed.encode()).digest()
    return "".join(SAFE_ALPHABET[byte % len(SAFE_ALPHABET)] for byte in digest[:length])


def expand(documents: list[Document]) -> tuple[list[Item], list[str]]:
    """Validate the documents and turn them into items in document order; also the ignored ones.

    Raises:
        InvalidManifest: a malformed document (not an object, no kind or name, a kind the
            API server does not serve in a group simulate reads, an apiVersion the API server
            does not serve the kind in, a bad annotation, replicas, priority
            class or node quantity), or a duplicate name.
    """
    flat = [doc for doc in _flatten(documents) if doc.body is not None]
    classes = _priority_classes(flat)
    items: list[Item] = []
    ignored: list[str] = []
    for doc in flat:
        kind = doc.body.get("kind")
        if kind in SCHEDULED_KINDS:
            items.append(_item(doc, doc.body, classes))
        elif kind in WORKLOAD_KINDS:
            items.extend(_workload_pods(doc, classes))
        elif kind != "PriorityClass":
            ignored.append(describe(doc))
    _check_unique(items)
    return items, ignored


def _flatten(documents: list[Document]) -> list[Document]:
    flat = []
    for doc in documents:
        if doc.body is None:
            continue
        if not isinstance(doc.body, Mapping):
            raise InvalidManifest(describe(doc), "(document)", "not a Kubernetes object")
        if not isinstance(doc.body.get("kind"), str):
            raise InvalidManifest(describe(doc), "kind", "missing")
        wrong_version = api_versions.problem(doc.body)
        if wrong_version is not None:
            raise InvalidManifest(describe(doc), "apiVersion", wrong_version)
        unknown = api_versions.unknown_kind(doc.body)
        if unknown is not None:
            raise InvalidManifest(describe(doc), "kind", unknown)
        if doc.body["kind"] == "List":
            items = doc.body.get("items")
            if not isinstance(items, list):
                raise InvalidManifest(describe(doc), "items", "must be a list")
            flat.extend(_flatten([Document(doc.source, doc.number, item) for item in items]))
            continue
        meta = doc.body.get("metadata")
        if not isinstance(meta, Mapping) or not isinstance(meta.get("name"), str):
            raise InvalidManifest(describe(doc), "metadata.name", "missing")
        flat.append(doc)
    return flat


INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
MAX_WORKLOAD_PODS = 100_000
"""The most pods one workload may expand into (as many as an Indexed Job may complete): each is
a pod in memory, and an int32 replica count would fill memory before the simulation begins."""
"""The range of a PriorityClass `value` (int32 in the API)."""
Classes = dict[str | None, PriorityClass]
"""PriorityClasses by name; under None the globalDefault one, if any."""


def _priority_classes(docs: list[Document]) -> Classes:
    """The built-in system classes and those of the manifests, checked as the API server's
    validation and the Priority plugin check them on creation, in document order.

    Raises:
        InvalidManifest: a value that is no 32-bit integer or above 1000000000 (unless a
            system class), a name defined twice, a `globalDefault` that is not a boolean, a
            reserved name, a preemptionPolicy that is neither PreemptLowerPriority nor
            Never, a second globalDefault class.
    """
    classes: Classes = {name: PriorityClass(name, value)
                        for name, value in BUILTIN_PRIORITY_CLASSES.items()}
    seen: set[str] = set()
    for doc in docs:
        if doc.body.get("kind") != "PriorityClass":
            continue
        name, value = doc.body["metadata"]["name"], doc.body.get("value")
        if not isinstance(value, int) or isinstance(value, bool) or not (
                INT32_MIN <= value <= INT32_MAX):
            raise InvalidManifest(describe(doc), "value", "must be a 32-bit integer")
        if name in seen:
            raise InvalidManifest(describe(doc), "metadata.name", f"PriorityClass {name} is "
                                  "defined twice (the API server keeps one object per name)")
        seen.add(name)
        default = doc.body.get("globalDefault", False)
        if not isinstance(default, bool):
            raise InvalidManifest(describe(doc), "globalDefault", "must be true or false")
        if name in BUILTIN_PRIORITY_CLASSES and value == BUILTIN_PRIORITY_CLASSES[name]:
            continue  # a dump of a cluster holds the system classes too, unchanged
        if name.startswith("system-"):
            raise InvalidManifest(describe(doc), "metadata.name", "the name of the priority "
                                  "class is a reserved name for system use only")
        if value > HIGHEST_USER_DEFINABLE_PRIORITY:
            raise InvalidManifest(describe(doc), "value", "maximum allowed value of a user "
                                  f"defined priority is {HIGHEST_USER_DEFINABLE_PRIORITY}")
        policy = doc.body.get("preemptionPolicy", DEFAULT_PREEMPTION_POLICY)
        if policy not in PREEMPTION_POLICIES:
            raise InvalidManifest(describe(doc), "preemptionPolicy", f"must be one of "
                                  f"{', '.join(PREEMPTION_POLICIES)}, got {policy!r}")
        classes[name] = PriorityClass(name, value, policy)
        if default:
            if None in classes:
                raise InvalidManifest(describe(doc), "globalDefault", f"PriorityClass "
                                      f"{classes[None].name} is already marked as default. "
                                      "Only one default can exist")
            classes[None] = classes[name]
    return classes


def _seconds(doc: Document, body: Mapping[str, Any], key: str) -> float | None:
    annotations = body.get("metadata", {}).get("annotations") or {}
    if not isinstance(annotations, Mapping) or key not in annotations:
        return None
    try:
        value = float(str(annotations[key]))
    except ValueError:
        value = -1.0
    if not value >= 0:
        raise InvalidManifest(describe(doc, body), f'metadata.annotations["{key}"]',
                              f"must be a number of seconds >= 0, got {annotations[key]!r}")
    return value


def _item(doc: Document, body: Mapping[str, Any], classes: Classes,
          at_seconds: float | None = None, runtime: float | None = None) -> Item:
    obj = copy.deepcopy(dict(body))
    kind = obj["kind"]
    obj["metadata"].setdefault("uid", f"sim-{kind.lower()}-{_key(obj)}")
    if kind not in CLUSTER_KINDS:
        obj["metadata"].setdefault("namespace", "default")
    if kind == "Node":
        _check_node(doc, obj)
    if kind in STORAGE_KINDS:
        _check_storage(doc, obj)
    if kind == BUDGET_KIND:
        _check_budget(doc, obj)
    if kind == "Pod":
        _check_pod(doc, obj)
        _resolve_priority(doc, obj, classes)
    at = _seconds(doc, body, AT_ANNOTATION)
    own_runtime = _seconds(doc, body, RUNTIME_ANNOTATION)
    return Item(describe(doc, obj), kind, obj, at if at is not None else (at_seconds or 0.0),
                own_runtime if own_runtime is not None else runtime)


def _key(obj: Mapping[str, Any]) -> str:
    meta = obj["metadata"]
    return f"{meta.get('namespace') or 'default'}-{meta['name']}"


def _check_pod(doc: Document, obj: dict[str, Any]) -> None:
    """What the API server's validation would refuse and the planner would misread: a spec
    that is not a mapping, `containers` that is not a non-empty list of mappings (the watcher
    never sees such a pod; a manifest given to simulate has not been validated).

    Raises:
        InvalidManifest: naming the field.
    """
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        raise InvalidManifest(describe(doc, obj), "spec", "must be a mapping")
    for field in ("containers", "initContainers"):
        value = spec.get(field)
        if value is None and field == "initContainers":
            continue
        if (not isinstance(value, list) or (field == "containers" and not value)
                or not all(isinstance(container, dict) for container in value)):
            raise InvalidManifest(describe(doc, obj), f"spec.{field}",
                                  "must be a list of containers (mappings)"
                                  + (", at least one" if field == "containers" else ""))


def _check_node(doc: Document, obj: dict[str, Any]) -> None:
    status = obj.get("status") if isinstance(obj.get("status"), Mapping) else {}
    assert isinstance(status, Mapping)
    for field in ("allocatable", "capacity"):
        quantities = status.get(field)
        if quantities is None:
            continue
        if not isinstance(quantities, Mapping):
            raise InvalidManifest(describe(doc, obj), f"status.{field}", "must be a mapping")
        for name, text in quantities.items():
            try:  # beyond range is no error: the node offers the most gangsched can count
                resources.saturated_units(str(name), text)
            except resources.InvalidQuantity as error:
                raise InvalidManifest(describe(doc, obj), f"status.{field}.{name}",
                                      error.detail) from error
    if not status.get("allocatable") and not status.get("capacity"):
        raise InvalidManifest(describe(doc, obj), "status.allocatable",
                              "missing (a simulated node needs its capacity)")


def _check_storage(doc: Document, obj: dict[str, Any]) -> None:
    """A claim's, volume's or class's fields the volume filters read, as the API validates
    them: storage quantities, access modes, a class's binding mode.

    Raises:
        InvalidManifest: the first malformed field, named.
    """
    kind, spec = obj["kind"], obj.get("spec")
    if kind == "StorageClass":
        mode = obj.get("volumeBindingMode", "Immediate")
        if mode not in BINDING_MODES:
            raise InvalidManifest(describe(doc, obj), "volumeBindingMode",
                                  f"must be one of {', '.join(BINDING_MODES)}, got {mode!r}")
        return
    if not isinstance(spec, Mapping):
        raise InvalidManifest(describe(doc, obj), "spec", "missing")
    modes = spec.get("accessModes", [])
    if not isinstance(modes, list) or any(mode not in ACCESS_MODES for mode in modes):
        raise InvalidManifest(describe(doc, obj), "spec.accessModes",
                              f"each must be one of {', '.join(ACCESS_MODES)}")
    where, amounts = (("spec.capacity", spec.get("capacity")) if kind == "PersistentVolume"
                      else ("spec.resources.requests",
                            (spec.get("resources") or {}).get("requests")))
    if not isinstance(amounts, Mapping) or "storage" not in amounts:
        raise InvalidManifest(describe(doc, obj), f"{where}.storage", "missing")
    try:
        resources.to_units(resources.STORAGE, amounts["storage"])
    except resources.InvalidQuantity as error:
        raise InvalidManifest(describe(doc, obj), f"{where}.storage", error.detail) from error


def _check_budget(doc: Document, obj: dict[str, Any]) -> None:
    """A PodDisruptionBudget's `spec` as the API server validates it (policy/v1): a mapping;
    minAvailable or maxUnavailable, not both, each an integer >= 0 or a percentage `<n>%` of
    at most 100%. (Its selector is checked where it is read, `services.cli.simulate`.)

    Raises:
        InvalidManifest: the first malformed field, named.
    """
    spec = obj.get("spec")
    if not isinstance(spec, Mapping):
        raise InvalidManifest(describe(doc, obj), "spec", "missing")
    if "minAvailable" in spec and "maxUnavailable" in spec:
        raise InvalidManifest(describe(doc, obj), "spec",
                              "minAvailable and maxUnavailable cannot be both set")
    for field in ("minAvailable", "maxUnavailable"):
        value = spec.get(field)
        if value is None:
            continue
        is_count = isinstance(value, int) and not isinstance(value, bool) and value >= 0
        is_percent = (isinstance(value, str) and value.endswith("%")
                      and value[:-1].isdigit() and int(value[:-1]) <= 100)
        if not (is_count or is_percent):
            raise InvalidManifest(describe(doc, obj), f"spec.{field}", "must be an integer >= 0 "
                                  f"or a percentage such as '50%' (at most 100%), got {value!r}")


def _resolve_priority(doc: Document, obj: dict[str, Any], classes: Classes) -> None:
    """Set `spec.priority` and `spec.preemptionPolicy` as the Priority admission plugin does:
    from the class named by `priorityClassName` (system classes first); with no name, from
    the globalDefault class (whose name is then set), else priority 0 and
    PreemptLowerPriority. A value given in the spec must equal the one computed.

    Raises:
        InvalidManifest: an unknown class (the plugin's Forbidden "no PriorityClass with name
            ... was found"), or a `priority` or `preemptionPolicy` in the spec that differs.
    """
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        raise InvalidManifest(describe(doc, obj), "spec", "missing")
    name = spec.get("priorityClassName") or None
    if name is not None and name not in classes:
        raise InvalidManifest(describe(doc, obj), "spec.priorityClassName",
                              f"no PriorityClass with name {name} was found (in the manifests "
                              "or built in)")
    chosen = classes.get(name)
    if chosen is not None and name is None:
        spec["priorityClassName"] = chosen.name
    value = chosen.value if chosen is not None else 0
    policy = chosen.preemption_policy if chosen is not None else DEFAULT_PREEMPTION_POLICY
    given = spec.get("priority")
    if given is not None and (not isinstance(given, int) or isinstance(given, bool)
                              or given != value):
        raise InvalidManifest(describe(doc, obj), "spec.priority", f"the integer value of "
                              f"priority ({given}) must not be provided in pod spec; priority "
                              f"admission controller computed {value} from the given "
                              "PriorityClass name")
    if spec.get("preemptionPolicy", policy) != policy:
        raise InvalidManifest(describe(doc, obj), "spec.preemptionPolicy", f"the string value "
                              f"of PreemptionPolicy ({spec['preemptionPolicy']}) must not be "
                              f"provided in pod spec; priority admission controller computed "
                              f"{policy} from the given PriorityClass name")
    spec["priority"], spec["preemptionPolicy"] = value, policy


def _workload_pods(doc: Document, classes: Classes) -> list[Item]:
    body = doc.body
    kind, meta = body["kind"], body["metadata"]
    spec = body.get("spec")
    if not isinstance(spec, Mapping):
        raise InvalidManifest(describe(doc), "spec", "missing")
    template = spec.get("template")
    if not isinstance(template, Mapping) or not isinstance(template.get("spec"), Mapping):
        raise InvalidManifest(describe(doc), "spec.template.spec", "missing")
    count = _replicas(doc, spec)
    namespace = meta.get("namespace") or "default"
    at = _seconds(doc, body, AT_ANNOTATION) or 0.0
    runtime = _seconds(doc, body, RUNTIME_ANNOTATION)
    owner_kind, owner_name = kind, meta["name"]
    labels = dict(template.get("metadata", {}).get("labels") or {})
    if kind == "Deployment":
        pod_hash = suffix(f"{namespace}/{owner_name}/template", 10)
        owner_kind, owner_name = "ReplicaSet", f"{owner_name}-{pod_hash}"
        labels["pod-template-hash"] = pod_hash
    items = []
    for ordinal in range(count):
        name = (f"{owner_name}-{ordinal}" if kind == "StatefulSet"
                else f"{owner_name}-{suffix(f'{namespace}/{owner_name}/{ordinal}', 5)}")
        pod = _pod_from_template(template, name, namespace, labels, meta, owner_kind, owner_name)
        items.append(_item(doc, pod, classes, at_seconds=at, runtime=runtime))
    return items


def _replicas(doc: Document, spec: Mapping[str, Any]) -> int:
    kind = doc.body["kind"]
    if kind == "Job":
        parallelism = spec.get("parallelism", 1)
        completions = spec.get("completions", parallelism)
        values = {"spec.parallelism": parallelism, "spec.completions": completions}
    else:
        values = {"spec.replicas": spec.get("replicas", 1)}
    for field, value in values.items():
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise InvalidManifest(describe(doc), field, f"must be an integer >= 0, got {value!r}")
    count = int(min(values.values()))
    if count > MAX_WORKLOAD_PODS:
        field = min(values, key=lambda name: values[name])
        raise InvalidManifest(describe(doc), field, f"must be less than or equal to "
                              f"{MAX_WORKLOAD_PODS} to simulate (every replica becomes a pod), "
                              f"got {count}")
    return count


def _pod_from_template(template: Mapping[str, Any], name: str, namespace: str,
                       labels: dict[str, Any], owner_meta: Mapping[str, Any], owner_kind: str,
                       owner_name: str) -> dict[str, Any]:
    template_meta = template.get("metadata") or {}
    metadata: dict[str, Any] = {
        "name": name, "namespace": namespace, "labels": dict(labels),
        "annotations": dict(template_meta.get("annotations") or {}),
        "ownerReferences": [{"kind": owner_kind, "name": owner_name, "controller": True,
                             "uid": f"sim-{owner_kind.lower()}-{namespace}-{owner_name}"}],
    }
    if "creationTimestamp" in owner_meta:
        metadata["creationTimestamp"] = owner_meta["creationTimestamp"]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata,
            "spec": copy.deepcopy(dict(template["spec"]))}


def _check_unique(items: list[Item]) -> None:
    seen: dict[tuple[str, str], str] = {}
    for item in items:
        meta = item.obj["metadata"]
        key = (item.kind, f"{meta.get('namespace', '')}/{meta['name']}")
        if key in seen:
            raise InvalidManifest(item.where, "metadata.name",
                                  f"duplicate {item.kind} (also {seen[key]})")
        seen[key] = item.where
