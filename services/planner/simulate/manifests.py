"""Reading simulation manifests: validation, priority classes, workloads expanded into pods.

A pod's `spec.priority` and `spec.preemptionPolicy` are resolved from the PriorityClasses of the
manifests as the API server's Priority admission plugin does at creation (`_resolve_priority`).
PodDisruptionBudgets are checked as the API server validates `spec` (`_check_budget`); their
status is the simulation's to compute (`budgets`). CSINodes and VolumeAttachments, what
NodeVolumeLimits reads, are checked as the API server validates what it reads of them
(`_check_volume_limits`); the simulation creates no VolumeAttachment for the pods it binds (a
volume of a pod on a node counts there as the pod's own, as kube-scheduler counts it). The
sources of pods' volumes and PersistentVolumes are checked as the API server validates them
(`_check_volume_sources`), and so are a pod's container names and ports (`containers`), the
values of its and a PersistentVolume's required node affinity (`node_affinity`), its pod
affinity terms' label keys (`pod_affinity_keys`), a workload's selector
(`workload_selectors`) and a native PodGroup's topology constraints (`native_podgroups`).
RuntimeClasses are read and checked as the API server validates them (`_runtime_classes`,
`runtime_classes`), and each pod is admitted by the RuntimeClass admission
plugin, which sets the overhead, node selector and tolerations of the class it names or refuses
it (`runtime_classes.admit`, `runtime_classes.validate`). Each pod gets what the API server's
defaulting, the DefaultTolerationSeconds and RuntimeClass admission plugins and the pod strategy
set in it on creation (`pod_defaults`).

Layer: planner simulate (pure; dict in, dict out; never does I/O). Workloads become the pods
their controllers would create, named as those controllers name them: StatefulSet `<name>-<i>`,
ReplicaSet and Job `<name>-<5 chars>`, Deployment `<name>-<10 chars>-<5 chars>` (through its
ReplicaSet). The "random" characters are derived from a hash of the namespace, workload and
ordinal, so the same manifests always give the same names. A suspended Job or a paused
Deployment has none; an OrderedReady StatefulSet's are created one after another
(`workload_controllers`, `_one_at_a_time`). Kinds that do not matter to scheduling (Service,
ConfigMap, ...) are ignored and listed.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import itertools
import json
import math
import re
from collections.abc import Iterator, Mapping
from typing import Any

import msgspec

from services.contracts import names, resources
from services.contracts.resources import shown
from services.planner.simulate import (
    api_versions,
    container_resources,
    containers,
    controller_labels,
    native_podgroups,
    node_affinity,
    node_features,
    object_labels,
    object_names,
    pod_affinity_keys,
    pod_defaults,
    runtime_classes,
    shapes,
    tolerations,
    volume_sources,
    workload_controllers,
    workload_selectors,
)

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
VOLUME_LIMIT_KINDS = ("CSINode", "VolumeAttachment")
SCHEDULED_KINDS = ("Namespace", "Node", "Pod", "PodGroup", *STORAGE_KINDS, BUDGET_KIND,
                   *VOLUME_LIMIT_KINDS)
MAX_CSI_NODE_ID = 256
ACCESS_MODES = ("ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany", "ReadWriteOncePod")
BINDING_MODES = ("Immediate", "WaitForFirstConsumer")
WORKLOAD_KINDS = ("ReplicaSet", "Deployment", "Job", "StatefulSet")


class InvalidManifest(ValueError):
    """A document that cannot be simulated; the message names the document and the field."""

    def __init__(self, where: str, field: str, message: str) -> None:
        super().__init__(f"{where}: {field}: {message}" if field else f"{where}: {message}")
        self.where, self.field = where, field


UNEXPECTED_ERRORS = (TypeError, ValueError, AttributeError, LookupError, OverflowError,
                     RecursionError)
"""What reading a document raises only when one of its fields has a type or value no check here
expects (a bug of these checks): `reading` turns it into an `InvalidManifest`."""


@contextlib.contextmanager
def reading(where: str) -> Iterator[None]:
    """The last resort around reading one document (`where`, from `describe`): an error of
    `UNEXPECTED_ERRORS` becomes the one-line `InvalidManifest` of that document, not a
    traceback. Every field is meant to be checked before it is read, with its own message;
    this only keeps a field no check foresaw from crashing the command.

    Raises:
        InvalidManifest: raised inside, or made of an unexpected error.
    """
    try:
        yield
    except InvalidManifest:
        raise
    except UNEXPECTED_ERRORS as error:
        raise InvalidManifest(where, "", unreadable(error)) from error


def unreadable(error: BaseException) -> str:
    """The message of an unexpected error reading a document, in one line, cut short."""
    try:
        detail = " ".join(str(error).split())
    except (ValueError, RecursionError):
        detail = ""
    detail = detail if len(detail) <= 120 else f"{detail[:120]}..."
    return (f"cannot be read: a field has a type or value simulate does not expect "
            f"({type(error).__name__}{': ' + detail if detail else ''})")


class Item(msgspec.Struct, frozen=True):
    """One Node, Pod, PodGroup, claim, volume, StorageClass, PodDisruptionBudget, Namespace,
    CSINode or VolumeAttachment to play, with where it came from.

    Units: `at_seconds` simulated seconds after the start; `runtime_seconds` seconds a bound pod
    runs before it succeeds (None: forever). `after`: the uid of the pod that must be bound
    (Running and Ready, as simulated) for `ready_seconds` seconds before this pod is created,
    not before `at_seconds` (an OrderedReady StatefulSet's previous ordinal, `_one_at_a_time`);
    None: created at `at_seconds`.
    """

    where: str
    kind: str
    obj: dict[str, Any]
    at_seconds: float
    runtime_seconds: float | None = None
    after: str | None = None
    ready_seconds: float = 0.0


class PriorityClass(msgspec.Struct, frozen=True):
    """A PriorityClass's `value` and `preemptionPolicy` (what admission copies into a pod)."""

    name: str
    value: int
    preemption_policy: str = DEFAULT_PREEMPTION_POLICY


class Admission(msgspec.Struct, frozen=True):
    """What the admission plugins a pod meets read of the manifests: the PriorityClasses
    (Priority: `_resolve_priority`) and the RuntimeClasses (RuntimeClass:
    `runtime_classes.admit`)."""

    priority_classes: Classes
    runtime_classes: runtime_classes.RuntimeClasses


class Document(msgspec.Struct, frozen=True):
    """A parsed YAML document and its place: `<file> document <n>` (1-based)."""

    source: str
    number: int
    body: Any


def describe(document: Document, body: Mapping[str, Any] | None = None) -> str:
    """`<file> document <n> (<Kind> <ns>/<name>)` for messages, in one line: a kind, name or
    namespace that is not text shows as `?` (or is left out), one with a line break or other
    unprintable character as its repr. Never raises."""
    obj = body if body is not None else document.body
    where = f"{document.source} document {document.number}"
    if isinstance(obj, Mapping):
        given = obj.get("metadata")
        meta: Mapping[str, Any] = given if isinstance(given, Mapping) else {}
        name = _printable(meta.get("name")) or "?"
        namespace = _printable(meta.get("namespace"))
        shown = f"{namespace}/{name}" if namespace else name
        where += f" ({_printable(obj.get('kind')) or '?'} {shown})"
    return where


def _printable(value: Any) -> str:
    """`value` if it is text without unprintable characters, its repr if it is other text,
    else "" (what `describe` shows of a kind, name or namespace)."""
    if not isinstance(value, str):
        return ""
    return value if value.isprintable() else shown(value)


def suffix(seed: str, length: int) -> str:
    """`length` characters of SAFE_ALPHABET derived from `seed` (deterministic)."""
    digest = hashlib.sha256(seed.encode()).digest()
    return "".join(SAFE_ALPHABET[byte % len(SAFE_ALPHABET)] for byte in digest[:length])


def expand(documents: list[Document]) -> tuple[list[Item], list[str]]:
    """Validate the documents and turn them into items in document order; also the ignored ones.

    Raises:
        InvalidManifest: a malformed document (not an object, no kind or name, a kind the
            API server does not serve in a group simulate reads, an apiVersion the API server
            does not serve the kind in, a field of the wrong type (`shapes`), a bad
            annotation, replicas, priority class or node quantity, a volume source, container
            name or port, workload selector, required node-affinity value or pod affinity
            label keys the API server refuses: `volume_sources`, `containers`,
            `workload_selectors`, `node_affinity`, `pod_affinity_keys`), a RuntimeClass the
            API server refuses (`runtime_classes`), a pod the Priority or RuntimeClass
            admission plugin refuses, or a duplicate name.
    """
    flat = [doc for doc in _flatten(documents) if doc.body is not None]
    admission = Admission(_priority_classes(flat), _runtime_classes(flat))
    items: list[Item] = []
    ignored: list[str] = []
    taken = _named_pods(flat)
    for doc in flat:
        kind = doc.body.get("kind")
        with reading(describe(doc)):
            if kind in SCHEDULED_KINDS:
                items.append(_item(doc, doc.body, admission))
            elif kind in WORKLOAD_KINDS:
                items.extend(_workload_pods(doc, admission, taken))
            elif kind == "PriorityClass":
                _check_fields(doc, doc.body)  # its value and policy: `_priority_classes`
            elif kind == runtime_classes.KIND:
                continue  # read and checked whole: `_runtime_classes`
            else:
                ignored.append(describe(doc))
    _check_unique(items)
    return [*_implied_namespaces(items), *items], ignored


def _named_pods(docs: list[Document]) -> set[tuple[str, str]]:
    """(namespace, name) of every Pod the manifests name: no generated name may take one."""
    named: set[tuple[str, str]] = set()
    for doc in docs:
        meta = doc.body.get("metadata")
        if doc.body.get("kind") == "Pod" and isinstance(meta, Mapping) and isinstance(
                meta.get("name"), str):
            named.add((_namespace(meta), meta["name"]))
    return named


def _generated_name(base: str, seed: str, namespace: str, taken: set[tuple[str, str]]) -> str:
    """`base` and a 5-character suffix from `seed` not `taken` in `namespace` (then taken):
    the API server answers a `generateName` that gives an existing name with AlreadyExists,
    and the controller creates the pod again, with a new random suffix; here the next
    suffix derived from `seed`. Of 27**5 suffixes, 4,650 replicas draw two alike 0.75 times
    on average, so without the retry a large workload was refused as holding a duplicate."""
    attempt = 0
    while True:
        name = base + suffix(seed if attempt == 0 else f"{seed}/{attempt}", 5)
        if (namespace, name) not in taken:
            taken.add((namespace, name))
            return name
        attempt += 1


def _implied_namespaces(items: list[Item]) -> list[Item]:
    """A Namespace item, arriving first, for each namespace an item is in that no manifest
    declares: on a cluster it exists (the API server refuses an object in a namespace that
    does not), labelled only with its name (`controller_labels.namespace_labels`)."""
    declared = {item.obj["metadata"]["name"] for item in items if item.kind == "Namespace"}
    used = sorted({namespace for item in items
                   if (namespace := item.obj["metadata"].get("namespace")) is not None})
    return [Item(f"namespace {name} (implied by the objects in it)", "Namespace",
                 {"apiVersion": "v1", "kind": "Namespace", "metadata": {
                     "name": name, "uid": f"sim-namespace-{name}",
                     "labels": controller_labels.namespace_labels({}, name)}}, 0.0)
            for name in used if name not in declared]


def _flatten(documents: list[Document]) -> list[Document]:
    flat = []
    for doc in documents:
        if doc.body is None:
            continue
        with reading(describe(doc)):
            flat.extend(_flattened(doc))
    return flat


def _flattened(doc: Document) -> list[Document]:
    """`_flatten` of one document that is not empty.

    Raises:
        InvalidManifest: not an object, no kind or name, a kind, apiVersion, name or
            namespace the API server would refuse, a `metadata` that is no mapping, a List
            without a list of items.
    """
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
        return _flatten([Document(doc.source, doc.number, item) for item in items])
    meta = doc.body.get("metadata")
    if meta is not None and not isinstance(meta, Mapping):  # as `shapes` words a wrong type
        raise InvalidManifest(describe(doc), "metadata", f"must be a mapping, got {shown(meta)}")
    name = meta.get("name") if isinstance(meta, Mapping) else None
    if not isinstance(name, str):
        raise InvalidManifest(describe(doc), "metadata.name", "missing" if name is None
                              else f"must be a string, got {shown(name)}")
    if doc.body["kind"] in api_versions.SERVED:
        refused = object_names.problem(doc.body)
        if refused is not None:
            raise InvalidManifest(describe(doc), *refused)
    return [doc]


INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
"""The range of a PriorityClass `value` (int32 in the API)."""
MAX_WORKLOAD_PODS = 100_000
"""The most pods one workload may expand into (as many as an Indexed Job may complete): each is
a pod in memory, and an int32 replica count would fill memory before the simulation begins."""
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
        with reading(describe(doc)):
            _add_priority_class(doc, classes, seen)
    return classes


def _add_priority_class(doc: Document, classes: Classes, seen: set[str]) -> None:
    """Check the PriorityClass `doc` (`_priority_classes`) and add it to `classes` (and its
    name to `seen`).

    Raises:
        InvalidManifest: as `_priority_classes`.
    """
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
        return  # a dump of a cluster holds the system classes too, unchanged
    if name.startswith("system-"):
        raise InvalidManifest(describe(doc), "metadata.name", "the name of the priority "
                              "class is a reserved name for system use only")
    if value > HIGHEST_USER_DEFINABLE_PRIORITY:
        raise InvalidManifest(describe(doc), "value", "maximum allowed value of a user "
                              f"defined priority is {HIGHEST_USER_DEFINABLE_PRIORITY}")
    policy = doc.body.get("preemptionPolicy", DEFAULT_PREEMPTION_POLICY)
    if not isinstance(policy, str) or policy not in PREEMPTION_POLICIES:
        raise InvalidManifest(describe(doc), "preemptionPolicy", f"must be one of "
                              f"{', '.join(PREEMPTION_POLICIES)}, got {shown(policy)}")
    classes[name] = PriorityClass(name, value, policy)
    if default:
        if None in classes:
            raise InvalidManifest(describe(doc), "globalDefault", f"PriorityClass "
                                  f"{classes[None].name} is already marked as default. "
                                  "Only one default can exist")
        classes[None] = classes[name]


def _runtime_classes(docs: list[Document]) -> runtime_classes.RuntimeClasses:
    """The RuntimeClasses of the manifests by name, checked as the API server checks them on
    creation (`shapes`, then `runtime_classes.problem`), in document order. Like
    PriorityClasses they are read, not played: each exists from the start.

    Raises:
        InvalidManifest: a field of the wrong type, a field the API server's validation
            refuses (`runtime_classes`), a name defined twice.
    """
    classes: dict[str, runtime_classes.RuntimeClass] = {}
    first: dict[str, str] = {}
    for doc in docs:
        if doc.body.get("kind") != runtime_classes.KIND:
            continue
        with reading(describe(doc)):
            _check_fields(doc, doc.body)
            refused = runtime_classes.problem(doc.body)
            if refused is not None:
                raise InvalidManifest(describe(doc), *refused)
            name = doc.body["metadata"]["name"]
            if name in first:
                raise InvalidManifest(describe(doc), "metadata.name",
                                      f"duplicate {runtime_classes.KIND} (also {first[name]})")
            first[name] = describe(doc)
            classes[name] = runtime_classes.read(doc.body)
    return classes


MAX_SECONDS = 1_000_000_000
"""The latest arrival and the longest runtime the annotations may give, in seconds (about 31.7
years): beyond any simulation worth running, and the simulated clock's milliseconds stay far
within the 64-bit integers of the events' times (`inf` or `1e300` would not)."""


def _seconds(doc: Document, body: Mapping[str, Any], key: str) -> float | None:
    """The annotation `key` (`AT_ANNOTATION`, `RUNTIME_ANNOTATION`) of `body` in seconds, None
    when absent. Its value is text (annotations are, `shapes`): a number such as `"10"` or
    `"2.5"`.

    Raises:
        InvalidManifest: not a number from 0 to `MAX_SECONDS` (`"soon"`, `"-1"`, `"inf"`,
            `"nan"`, `"1e300"`).
    """
    meta = body.get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, Mapping) else None
    if not isinstance(annotations, Mapping) or key not in annotations:
        return None
    given = annotations[key]
    try:
        value = float(given) if isinstance(given, str) else math.nan
    except ValueError:
        value = math.nan
    if not 0 <= value <= MAX_SECONDS:
        raise InvalidManifest(describe(doc, body), f'metadata.annotations["{key}"]',
                              f"must be a number of seconds from 0 to {MAX_SECONDS}, got "
                              f"{shown(given)}")
    return value


def _item(doc: Document, body: Mapping[str, Any], admission: Admission,
          at_seconds: float | None = None, runtime: float | None = None,
          is_checked: bool = False) -> Item:
    """The item of one object (`body`, of `doc`), checked, with its namespace and uid set;
    `at_seconds` and `runtime` are its workload's (its own annotations win). `is_checked`: the
    types of its fields were checked already (a workload's pod: on the workload's template).

    A pod is set what the API server sets on creation (`pod_defaults`: a hostNetwork pod's host
    ports, its pod-level requests, the DefaultTolerationSeconds tolerations, its RuntimeClass's
    overhead, node selector and tolerations, its pod affinity terms' label keys merged) besides
    its priority (`admission`: the classes the plugins read).

    Raises:
        InvalidManifest: the first field the API server would refuse (the kind's own checks,
            then `shapes`), a bad annotation, or a pod the Priority or RuntimeClass admission
            plugin refuses (`_resolve_priority`, `runtime_classes`).
    """
    obj = copy.deepcopy(dict(body))
    kind = obj["kind"]
    obj["metadata"].setdefault("uid", f"sim-{kind.lower()}-{_key(obj)}")
    if kind not in object_names.CLUSTER_SCOPED:
        obj["metadata"].setdefault("namespace", "default")
    if kind == "Node":
        _check_node(doc, obj)
    if kind in STORAGE_KINDS:
        _check_storage(doc, obj)
    if kind == BUDGET_KIND:
        _check_budget(doc, obj)
    if kind == "Pod":
        _check_pod(doc, obj)
    if not is_checked:
        _check_fields(doc, obj)
        _check_labels(doc, obj, obj["metadata"].get("labels"), "metadata.labels")
    if kind in VOLUME_LIMIT_KINDS:  # its fields' types checked (`_check_fields`)
        _check_volume_limits(doc, obj)
    if kind in ("Pod", "PersistentVolume") and not is_checked:  # and a spec, a mapping
        _check_volume_sources(doc, obj, obj["spec"], "spec")
    if kind == "Pod" and not is_checked:  # validated once defaulted (`containers`)
        _refuse(doc, obj, "spec", containers.problem(obj["spec"]))
        _refuse(doc, obj, "spec", pod_defaults.host_network_port_problem(obj["spec"]))
        _refuse(doc, obj, "spec", tolerations.pod_problem(obj["spec"]))
        _refuse(doc, obj, "spec", node_affinity.pod_problem(obj["spec"]))
        _refuse(doc, obj, "spec", node_features.pod_problem(obj["spec"]))
    if kind == "PodGroup" and obj.get("apiVersion") == shapes.NATIVE_API_VERSION:
        _refuse(doc, obj, "spec", native_podgroups.problem(obj.get("spec")))  # its topology
    if kind == "PersistentVolume" and not is_checked:  # its required node affinity's values
        _refuse(doc, obj, "spec", node_affinity.volume_problem(obj["spec"]))
    if kind == "Node":  # its taints, named as the API server names them, and its features
        _refuse(doc, obj, tolerations.TAINTS_PARENT, tolerations.node_problem(obj.get("spec")))
        _refuse(doc, obj, "status", node_features.node_problem(obj.get("status")))
    if kind == "Node":  # the labels as written were checked: the kubelet adds its own
        obj["metadata"]["labels"] = controller_labels.node_labels(
            obj["metadata"].get("labels") or {}, obj["metadata"]["name"])
    if kind == "Namespace":  # and the API server its own
        obj["metadata"]["labels"] = controller_labels.namespace_labels(
            obj["metadata"].get("labels") or {}, obj["metadata"]["name"])
    if kind == "Pod":  # a workload's pod too: its affinity keys are validated merged
        labels = obj["metadata"].get("labels")
        _refuse(doc, obj, "spec", pod_affinity_keys.problem(obj["spec"], labels))
        _resolve_priority(doc, obj, admission.priority_classes)
        classes = admission.runtime_classes  # defaulting, admission, PrepareForCreate, then
        _refuse(doc, obj, "spec", pod_defaults.admit(obj["spec"], labels, classes))
        if is_checked:  # validated as a Pod, not as its template: its image volumes' references
            _check_volume_sources(doc, obj, obj["spec"], "spec")
        _refuse(doc, obj, "spec", runtime_classes.validate(obj["spec"], classes))  # validation
    at = _seconds(doc, body, AT_ANNOTATION)
    own_runtime = _seconds(doc, body, RUNTIME_ANNOTATION)
    return Item(describe(doc, obj), kind, obj, at if at is not None else (at_seconds or 0.0),
                own_runtime if own_runtime is not None else runtime)


def _key(obj: Mapping[str, Any]) -> str:
    meta = obj["metadata"]
    return f"{_namespace(meta)}-{meta['name']}"


def _namespace(meta: Mapping[str, Any]) -> str:
    """The namespace of an object's `meta`: `default` when absent or empty (or not text: then
    `shapes` refuses the object)."""
    namespace = meta.get("namespace")
    return namespace if isinstance(namespace, str) and namespace else "default"


def _check_fields(doc: Document, obj: Mapping[str, Any]) -> None:
    """The JSON type of every field simulate reads of `obj`, as the API server decodes it
    (`shapes`).

    Raises:
        InvalidManifest: the first field of the wrong type, named (`spec.priorityClassName:
            must be a string, got ['gold']`).
    """
    found = shapes.problem(obj)
    if found is not None:
        raise InvalidManifest(describe(doc, obj), *found)


def _mapping(doc: Document, obj: Mapping[str, Any], value: Any,
             field: str) -> Mapping[str, Any]:
    """`value`, found at `field` of `obj`, as the mapping it must be (None, as the API server
    decodes `null`: empty).

    Raises:
        InvalidManifest: not a mapping (`spec.resources: must be a mapping, got '10Gi'`).
    """
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InvalidManifest(describe(doc, obj), field,
                              f"must be a mapping, got {shown(value)}")
    return value


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
    _check_containers(doc, obj, spec, "spec")


def _check_containers(doc: Document, obj: Mapping[str, Any], spec: Mapping[str, Any],
                      where: str) -> None:
    """`containers` of the pod spec `spec` (at `where` of `obj`: `spec`, or a workload's
    `spec.template.spec`) a non-empty list of mappings, `initContainers` absent or a list of
    mappings, their resource names and request/limit pairs as the API server takes them
    (`container_resources`).

    Raises:
        InvalidManifest: naming the field.
    """
    for field in ("containers", "initContainers"):
        value = spec.get(field)
        if value is None and field == "initContainers":
            continue
        if (not isinstance(value, list) or (field == "containers" and not value)
                or not all(isinstance(container, dict) for container in value)):
            raise InvalidManifest(describe(doc, obj), f"{where}.{field}",
                                  "must be a list of containers (mappings)"
                                  + (", at least one" if field == "containers" else ""))
    refused = container_resources.problem(spec)
    if refused is not None:
        raise InvalidManifest(describe(doc, obj), f"{where}.{refused[0]}", refused[1])


def _check_volume_sources(doc: Document, obj: Mapping[str, Any], spec: Mapping[str, Any],
                          where: str) -> None:
    """The volume sources of `obj`, a PersistentVolume (`spec`, its spec) or an object with a
    pod spec (`spec`, at `where`: `spec`, or a workload's `spec.template.spec`), as the API
    server takes them (`volume_sources`: one source a volume, the values of the disk and
    migrated sources' fields read, a Pod's image volumes' `reference`, which a template may
    leave out). Shapes: the types of `obj`'s fields were checked.

    Raises:
        InvalidManifest: the first refused field, named.
    """
    kind = obj["kind"]
    found = (volume_sources.persistent_volume_problem(spec) if kind == "PersistentVolume"
             else volume_sources.pod_problem(spec, is_pod=kind == "Pod"))
    if found is not None:
        raise InvalidManifest(describe(doc, obj), f"{where}.{found[0]}", found[1])


def _refuse(doc: Document, obj: Mapping[str, Any], where: str,
            found: tuple[str, str] | None) -> None:
    """Refuse `obj` for `found`, a checker's (field path relative to `where`, why), if any.

    Raises:
        InvalidManifest: naming `<where>.<field>`, when `found` is not None.
    """
    if found is not None:
        raise InvalidManifest(describe(doc, obj), f"{where}.{found[0]}", found[1])


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
                      else ("spec.resources.requests", _mapping(
                          doc, obj, spec.get("resources"), "spec.resources").get("requests")))
    if not isinstance(amounts, Mapping) or "storage" not in amounts:
        raise InvalidManifest(describe(doc, obj), f"{where}.storage", "missing")
    try:
        resources.to_units(resources.STORAGE, amounts["storage"])
    except resources.InvalidQuantity as error:
        raise InvalidManifest(describe(doc, obj), f"{where}.storage", error.detail) from error


def _check_volume_limits(doc: Document, obj: dict[str, Any]) -> None:
    """What the API server's storage validation refuses of what NodeVolumeLimits reads, in a
    CSINode (each driver's name, a CSI driver name; `nodeID`, required, at most 256
    characters; `allocatable.count` >= 0; no name twice) or a VolumeAttachment (`attacher`, a
    CSI driver name; `nodeName`, a DNS-1123 subdomain; `source`, exactly one of
    `persistentVolumeName`, a DNS-1123 subdomain, and `inlineVolumeSpec`). Shapes: the types of
    `obj`'s fields were checked (`shapes`).

    Raises:
        InvalidManifest: the first refused field, named.
    """
    spec = obj.get("spec") or {}
    found: tuple[str, str] | None = None
    if obj["kind"] == "CSINode":
        found = _driver_problem(spec.get("drivers") or [])
    else:
        source = spec.get("source") or {}
        named = source.get("persistentVolumeName")
        found = volume_sources.csi_driver_name_problem(spec.get("attacher") or "",
                                                       "spec.attacher")
        if found is None and (named is None) == (source.get("inlineVolumeSpec") is None):
            found = ("spec.source", "must specify exactly one of inlineVolumeSpec and "
                     "persistentVolumeName")
        if found is None and named is not None:
            wrong = object_names.subdomain_problem(named) if named else "Required value"
            found = None if wrong is None else ("spec.source.persistentVolumeName", wrong)
        wrong = object_names.subdomain_problem(spec.get("nodeName") or "")
        found = found or (None if wrong is None else ("spec.nodeName", wrong))
    if found is not None:
        raise InvalidManifest(describe(doc, obj), *found)


def _driver_problem(drivers: list[Mapping[str, Any] | None]) -> tuple[str, str] | None:
    """The first field of a CSINode's `drivers` its validation refuses, and why (a `null`
    driver is decoded as an empty one, as the API server decodes it)."""
    seen: set[str] = set()
    for i, given in enumerate(drivers):
        driver = given or {}
        where, name = f"spec.drivers[{i}]", driver.get("name") or ""
        found = volume_sources.csi_driver_name_problem(name, f"{where}.name")
        node_id = driver.get("nodeID") or ""
        count = (driver.get("allocatable") or {}).get("count")
        if found is None and not node_id:
            found = (f"{where}.nodeID", "Required value")
        if found is None and object_labels.utf8_length(node_id) > MAX_CSI_NODE_ID:
            found = (f"{where}.nodeID", f"must be {MAX_CSI_NODE_ID} characters or less")
        if found is None and count is not None and count < 0:
            found = (f"{where}.allocatable.count", "must be greater than or equal to 0")
        if found is None and name in seen:
            found = (f"{where}.name", f"Duplicate value: {json.dumps(name)}")
        if found is not None:
            return found
        seen.add(name)
    return None


_PERCENT = re.compile(r"0*([0-9]{1,3})%")
"""A percentage of `intstr` as the API server reads it (`strconv.Atoi` of the digits before
`%`): leading zeros allowed, the value (at most 3 digits here) checked against 100."""


def _check_budget(doc: Document, obj: dict[str, Any]) -> None:
    """A PodDisruptionBudget's `spec` as the API server validates it (policy/v1): a mapping;
    minAvailable or maxUnavailable, not both, each an integer >= 0 (32-bit) or a percentage
    `<n>%` of at most 100%. (Its selector is checked where it is read, `services.cli.simulate`.)

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
        is_count = (isinstance(value, int) and not isinstance(value, bool)
                    and 0 <= value <= INT32_MAX)
        percent = _PERCENT.fullmatch(value) if isinstance(value, str) else None
        is_percent = percent is not None and int(percent[1]) <= 100
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
    if name is not None and not isinstance(name, str):
        raise InvalidManifest(describe(doc, obj), "spec.priorityClassName",
                              f"must be a string, got {shown(name)}")
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


def _workload_pods(doc: Document, admission: Admission,
                   taken: set[tuple[str, str]]) -> list[Item]:
    """The pods a workload's controller would create from its template (module docstring),
    each an item of the workload's arrival and runtime.

    No pod for a suspended Job or a paused Deployment (`_replicas`); an OrderedReady
    StatefulSet's one at a time (`_one_at_a_time`).

    Raises:
        InvalidManifest: no spec or template spec, bad replicas, containers or annotations,
            a field of the wrong type (the workload's, its template's: `shapes`), a selector,
            container name or port, hostNetwork port, overhead or StatefulSet policy the API
            server refuses (`workload_selectors`, `containers`, `pod_defaults`,
            `runtime_classes`, `workload_controllers`), or a pod the API server would refuse
            (`_item`: one its RuntimeClass refuses, say).
    """
    body = doc.body
    kind, meta = body["kind"], body["metadata"]
    spec = body.get("spec")
    if not isinstance(spec, Mapping):
        raise InvalidManifest(describe(doc), "spec", "missing")
    template = spec.get("template")
    if not isinstance(template, Mapping) or not isinstance(template.get("spec"), Mapping):
        raise InvalidManifest(describe(doc), "spec.template.spec", "missing")
    count = _replicas(doc, spec)
    _check_containers(doc, body, template["spec"], "spec.template.spec")
    _check_fields(doc, body)
    if kind == "StatefulSet":
        _refuse(doc, body, "spec", workload_controllers.stateful_set_problem(spec))
    namespace = _namespace(meta)
    owner_kind, owner_name = kind, meta["name"]
    owner_uid = controller_labels.uid(kind, namespace, owner_name)
    template_meta = _mapping(doc, body, template.get("metadata"), "spec.template.metadata")
    given_labels = template_meta.get("labels")
    labels = dict(_mapping(doc, body, given_labels, "spec.template.metadata.labels"))
    if kind == "Job":  # its generated labels and selector, then its spec's selector
        conflict = controller_labels.job_label_conflict(labels, spec, owner_name, owner_uid)
        if conflict is not None:
            raise InvalidManifest(describe(doc), *conflict)
        selector_problem = workload_selectors.job_problem(spec, given_labels, owner_name,
                                                          owner_uid)
    else:
        selector_problem = workload_selectors.apps_problem(kind, spec, given_labels)
    _refuse(doc, body, "spec", selector_problem)
    _check_volume_sources(doc, body, template["spec"], "spec.template.spec")
    _refuse(doc, body, "spec.template.spec", containers.template_problem(template["spec"]))
    _refuse(doc, body, "spec.template.spec",
            pod_defaults.host_network_port_problem(template["spec"]))
    _refuse(doc, body, "spec.template.spec", tolerations.pod_problem(template["spec"]))
    _refuse(doc, body, "spec.template.spec", node_affinity.pod_problem(template["spec"]))
    _refuse(doc, body, "spec.template.spec", node_features.pod_problem(template["spec"]))
    _refuse(doc, body, "spec.template.spec", pod_affinity_keys.problem(template["spec"], None))
    _refuse(doc, body, "spec.template.spec", runtime_classes.overhead_problem(template["spec"]))
    at = _seconds(doc, body, AT_ANNOTATION) or 0.0
    runtime = _seconds(doc, body, RUNTIME_ANNOTATION)
    _check_labels(doc, body, meta.get("labels"), "metadata.labels")
    if kind == "Job":
        labels = controller_labels.job_template_labels(labels, spec, owner_name, owner_uid)
    _check_labels(doc, body, labels, "spec.template.labels")
    if kind == "Job":
        _check_indexed_hostnames(doc, body, spec)
    if kind == "Deployment":
        pod_hash = suffix(f"{namespace}/{owner_name}/template", 10)
        owner_kind, owner_name = "ReplicaSet", f"{owner_name}-{pod_hash}"
        owner_uid = controller_labels.uid("ReplicaSet", namespace, owner_name)
        labels["pod-template-hash"] = pod_hash
    revision = f"{owner_name}-{suffix(f'{namespace}/{owner_name}/revision', 10)}"
    if kind == "StatefulSet" and count:
        _check_stateful_pods(doc, labels, owner_name, count, revision)
    is_indexed = kind == "Job" and controller_labels.is_indexed(spec)
    items = []
    for ordinal in range(count):
        pod_labels, annotations = labels, dict(template_meta.get("annotations") or {})
        seed = f"{namespace}/{owner_name}/{ordinal}"
        if kind == "StatefulSet":
            name = f"{owner_name}-{ordinal}"
            pod_labels = controller_labels.stateful_pod_labels(labels, name, ordinal, revision)
        elif is_indexed:
            name = _generated_name(controller_labels.indexed_generate_name(owner_name, ordinal),
                                   seed, namespace, taken)
            pod_labels, annotations = controller_labels.indexed_job_pod(labels, annotations,
                                                                        ordinal)
        else:
            name = _generated_name(controller_labels.generated_base(f"{owner_name}-"), seed,
                                   namespace, taken)
        pod = _pod_from_template(template, name, namespace, pod_labels, annotations, meta,
                                 (owner_kind, owner_name, owner_uid))
        items.append(_item(doc, pod, admission, at_seconds=at, runtime=runtime,
                           is_checked=True))
    if kind == "StatefulSet" and workload_controllers.is_one_at_a_time(spec):
        return _one_at_a_time(items, workload_controllers.min_ready_seconds(spec))
    return items


def _one_at_a_time(items: list[Item], ready_seconds: int) -> list[Item]:
    """An OrderedReady StatefulSet's pods (`items`, by ordinal) as its `monotonic` controller
    creates them (`workload_controllers`): the first at the StatefulSet's arrival, each other
    once the one before it has been bound (Running and Ready, as simulated: the engine binds a
    pod Running) for `ready_seconds` (`spec.minReadySeconds`). A chain: the one before has
    itself waited for all before it."""
    return items[:1] + [msgspec.structs.replace(item, after=before.obj["metadata"]["uid"],
                                                ready_seconds=float(ready_seconds))
                        for before, item in itertools.pairwise(items)]


def _check_stateful_pods(doc: Document, labels: Mapping[str, Any], name: str, count: int,
                         revision: str) -> None:
    """Refuse a StatefulSet (`name`, `count` replicas, template `labels`) whose controller
    could not create its pods: their labels `controller-revision-hash` (`<name>-<hash>`) and
    `statefulset.kubernetes.io/pod-name` (`<name>-<ordinal>`, the last ordinal's the longest)
    are label values, at most 63 bytes, so a name over 52 characters leaves every pod refused
    (the API server takes the StatefulSet; its pods never exist, kubernetes#64023).

    Raises:
        InvalidManifest: naming the last pod and the label value refused.
    """
    pod = f"{name}-{count - 1}"
    wrong = object_labels.problem(
        controller_labels.stateful_pod_labels(labels, pod, count - 1, revision))
    if wrong is not None:
        raise InvalidManifest(describe(doc), "metadata.name",
                              f"its controller cannot create pod {pod}: metadata.labels: {wrong}")


def _check_labels(doc: Document, obj: Mapping[str, Any], labels: Any, field: str) -> None:
    """Refuse `labels` (at `field` of `obj`; text keys and values, as `shapes` checked, or
    absent) as the API server would (`object_labels`).

    Raises:
        InvalidManifest: a label key or value the API server refuses.
    """
    if isinstance(labels, Mapping):
        wrong = object_labels.problem(labels)
        if wrong is not None:
            raise InvalidManifest(describe(doc, obj), field, wrong)


def _check_indexed_hostnames(doc: Document, body: Mapping[str, Any],
                             spec: Mapping[str, Any]) -> None:
    """Refuse an Indexed Job whose last pod's hostname, `<name>-<completions - 1>`, is no
    DNS-1123 label, as the API server's `ValidateJob` does.

    Raises:
        InvalidManifest: that hostname is too long (the name itself was checked).
    """
    completions = spec.get("completions")
    if not controller_labels.is_indexed(spec) or not isinstance(completions, int) \
            or completions <= 0:
        return
    name = body["metadata"]["name"]
    hostname = f"{name}-{completions - 1}"
    if not names.is_dns_label(hostname):
        raise InvalidManifest(describe(doc), "metadata.name", object_names.invalid(
            name, f"will not able to create pod with invalid DNS label: {hostname}"))


def _replicas(doc: Document, spec: Mapping[str, Any]) -> int:
    """How many pods the controller of the workload `doc` (its `spec`) creates: `replicas`, a
    Job's smaller of `parallelism` and `completions`; none for a suspended Job or a paused
    Deployment (`workload_controllers.creates_no_pods`), whose counts are checked all the same.

    Raises:
        InvalidManifest: a count that is no integer >= 0, or a count of pods beyond
            `MAX_WORKLOAD_PODS`.
    """
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
    if workload_controllers.creates_no_pods(kind, spec):
        return 0
    count = int(min(values.values()))
    if count > MAX_WORKLOAD_PODS:
        field = min(values, key=lambda name: values[name])
        raise InvalidManifest(describe(doc), field, f"must be less than or equal to "
                              f"{MAX_WORKLOAD_PODS} to simulate (every replica becomes a pod), "
                              f"got {count}")
    return count


def _pod_from_template(template: Mapping[str, Any], name: str, namespace: str,
                       labels: Mapping[str, Any], annotations: Mapping[str, Any],
                       owner_meta: Mapping[str, Any],
                       owner: tuple[str, str, str]) -> dict[str, Any]:
    """The pod `name` a controller creates from `template` (checked), with `labels`,
    `annotations` and a controller reference to `owner` (kind, name, uid)."""
    owner_kind, owner_name, owner_uid = owner
    metadata: dict[str, Any] = {
        "name": name, "namespace": namespace, "labels": dict(labels),
        "annotations": dict(annotations),
        "ownerReferences": [{"kind": owner_kind, "name": owner_name, "controller": True,
                             "uid": owner_uid}],
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
