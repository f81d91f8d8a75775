"""The JSON types of the fields `gangsched simulate` reads, checked as the API server checks them.

Layer: planner simulate (pure). The API server decodes an object into its Go types before
anything else: a field of the wrong JSON type (`labels: [app]`, `priorityClassName: [gold]`,
`resources: "10Gi"`) is refused (`json: cannot unmarshal array into Go struct field ...`), and
`kubectl apply` fails. The watcher's readers (`watcher.slim`) read such a field as absent,
which is right for an object the API server served but would silently misread a manifest
given to simulate; so each field simulate (or a reader it uses) reads is checked here first,
and a wrong type is refused naming the field: `spec.priorityClassName: must be a string, got
['gold']`.

Shapes: a `dict` is an object whose listed fields are read (others are not, and not checked);
`[shape]` a list of items of that shape; `MapOf(shape)` a map of any keys to values of that
shape; `STRING`, `INTEGER` (an int32, not a boolean), `INT64` (a toleration's
`tolerationSeconds`, an image's `sizeBytes`), `BOOLEAN`; `ANY` is checked where it is read (a
quantity: `resources`, `runtime_classes`). `null` is accepted anywhere, as the API server
decodes it as the field's zero value. Values within the right type (a negative replica count,
an unknown preemption policy) are checked where they are read (`manifests`), as are the few
fields with their own message there (a pod's `containers`, a Node's `allocatable`). Not
checked: a Coscheduling PodGroup's `spec` (its CRD is, `cli.podgroup_crd`) and the kinds
simulate ignores.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, TypeAlias

import msgspec

from services.contracts.integers import INT64_MAX, INT64_MIN
from services.contracts.resources import shown
from services.planner.simulate import volume_sources


class MapOf(msgspec.Struct, frozen=True):
    """A map of any keys to values of `value`'s shape (`labels`, `nodeSelector`, quantities);
    `dotted`: a key is named `.key` in a field path (a resource name), else `["key"]`."""

    value: Shape
    dotted: bool = False


STRING, INTEGER, BOOLEAN, ANY = "a string", "a 32-bit integer", "true or false", "any"
INT64 = "a 64-bit integer"
Shape: TypeAlias = "str | MapOf | list[Shape] | dict[str, Shape]"
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
NOT_FINITE = ("inf", "-inf", "nan")
MAX_HINTED_DIGITS = 20
"""A number given for text is shown quoted (the hint of `_wrong_scalar`) up to this length."""

QUANTITIES = MapOf(ANY, dotted=True)
OBJECT_META: Shape = {
    "name": STRING, "namespace": STRING, "uid": STRING, "resourceVersion": STRING,
    "labels": MapOf(STRING), "annotations": MapOf(STRING), "creationTimestamp": STRING,
    "deletionTimestamp": STRING,
    "ownerReferences": [{"kind": STRING, "name": STRING, "uid": STRING, "controller": BOOLEAN}]}
REQUIREMENT: Shape = {"key": STRING, "operator": STRING, "values": [STRING]}
LABEL_SELECTOR: Shape = {"matchLabels": MapOf(STRING), "matchExpressions": [REQUIREMENT]}
NODE_SELECTOR_TERM: Shape = {"matchExpressions": [REQUIREMENT], "matchFields": [REQUIREMENT]}
NODE_SELECTOR: Shape = {"nodeSelectorTerms": [NODE_SELECTOR_TERM]}
POD_AFFINITY_TERM: Shape = {"labelSelector": LABEL_SELECTOR, "namespaceSelector": LABEL_SELECTOR,
                            "namespaces": [STRING], "topologyKey": STRING}
POD_AFFINITY: Shape = {
    "requiredDuringSchedulingIgnoredDuringExecution": [POD_AFFINITY_TERM],
    "preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": INTEGER, "podAffinityTerm": POD_AFFINITY_TERM}]}
RESOURCES: Shape = {"requests": QUANTITIES, "limits": QUANTITIES}
TOLERATION: Shape = {"key": STRING, "operator": STRING, "value": STRING, "effect": STRING,
                     "tolerationSeconds": INT64}
MIGRATED_VOLUMES: dict[str, Shape] = {
    "awsElasticBlockStore": {"volumeID": STRING}, "gcePersistentDisk": {"pdName": STRING},
    "azureDisk": {"diskURI": STRING, "kind": STRING}, "cinder": {"volumeID": STRING},
    "portworxVolume": {"volumeID": STRING}}
"""What NodeVolumeLimits reads of the in-tree volume sources kube migrates to CSI drivers
(`watcher.csi_translation`), in a pod's volumes and a PersistentVolume's spec."""
INLINE_DISKS: dict[str, Shape] = {
    "gcePersistentDisk": {"pdName": STRING, "readOnly": BOOLEAN},
    "awsElasticBlockStore": {"volumeID": STRING, "readOnly": BOOLEAN},
    "iscsi": {"targetPortal": STRING, "iqn": STRING, "lun": INTEGER, "readOnly": BOOLEAN},
    "rbd": {"monitors": [STRING], "image": STRING, "pool": STRING, "readOnly": BOOLEAN}}
"""What VolumeRestrictions reads of a pod's inline disks (`watcher.disks`), with what the API
server requires of an iSCSI disk besides (`volume_sources`)."""
POD_VOLUME: Shape = {
    "name": STRING, **{source: {} for source in volume_sources.POD_SOURCES},
    "persistentVolumeClaim": {"claimName": STRING}, **MIGRATED_VOLUMES, **INLINE_DISKS,
    "image": {"reference": STRING, "pullPolicy": STRING}}
"""A pod's volume: each source is an object (which one it names is read:
`volume_sources`), and of some their fields."""
CONTAINER: Shape = {
    "name": STRING, "image": STRING, "resources": RESOURCES, "restartPolicy": STRING,
    "restartPolicyRules": [{"action": STRING,
                            "exitCodes": {"operator": STRING, "values": [INTEGER]}}],
    "ports": [{"name": STRING, "containerPort": INTEGER, "hostPort": INTEGER,
               "protocol": STRING, "hostIP": STRING}]}
POD_SPEC: Shape = {
    "containers": [CONTAINER], "initContainers": [CONTAINER], "resources": RESOURCES,
    "overhead": QUANTITIES, "schedulerName": STRING, "nodeName": STRING, "hostNetwork": BOOLEAN,
    "hostUsers": BOOLEAN, "runtimeClassName": STRING,
    "priority": INTEGER, "priorityClassName": STRING, "preemptionPolicy": STRING,
    "nodeSelector": MapOf(STRING),
    "affinity": {"nodeAffinity": {
                     "requiredDuringSchedulingIgnoredDuringExecution": NODE_SELECTOR,
                     "preferredDuringSchedulingIgnoredDuringExecution": [
                         {"weight": INTEGER, "preference": NODE_SELECTOR_TERM}]},
                 "podAffinity": POD_AFFINITY, "podAntiAffinity": POD_AFFINITY},
    "tolerations": [TOLERATION],
    "schedulingGates": [{"name": STRING}],
    "topologySpreadConstraints": [{
        "maxSkew": INTEGER, "topologyKey": STRING, "whenUnsatisfiable": STRING,
        "labelSelector": LABEL_SELECTOR, "minDomains": INTEGER, "nodeAffinityPolicy": STRING,
        "nodeTaintsPolicy": STRING, "matchLabelKeys": [STRING]}],
    "volumes": [POD_VOLUME],
    "resourceClaims": [{}], "schedulingGroup": {"podGroupName": STRING}}
POD_TEMPLATE: Shape = {"metadata": OBJECT_META, "spec": POD_SPEC}
STORAGE_SPEC: dict[str, Shape] = {"accessModes": [STRING], "storageClassName": STRING,
                       "volumeMode": STRING, "volumeAttributesClassName": STRING}

KINDS: Mapping[str, Shape] = {
    "Node": {"spec": {"unschedulable": BOOLEAN,
                      "taints": [{"key": STRING, "value": STRING, "effect": STRING}]},
             "status": {"allocatable": QUANTITIES, "capacity": QUANTITIES,
                        "conditions": [{"type": STRING, "status": STRING}],
                        "declaredFeatures": [STRING],
                        "images": [{"names": [STRING], "sizeBytes": INT64}]}},
    "Pod": {"spec": POD_SPEC, "status": {"phase": STRING, "startTime": STRING}},
    "PodGroup": {},  # Coscheduling's: its CRD; the native one: NATIVE_PODGROUP
    "PersistentVolumeClaim": {
        "spec": {**STORAGE_SPEC, "resources": RESOURCES, "volumeName": STRING,
                 "selector": LABEL_SELECTOR},
        "status": {"phase": STRING}},
    "PersistentVolume": {
        "spec": {**STORAGE_SPEC, "capacity": QUANTITIES,
                 "nodeAffinity": {"required": NODE_SELECTOR},
                 "claimRef": {"namespace": STRING, "name": STRING, "uid": STRING},
                 **{source: {} for source in volume_sources.PV_SOURCES},
                 "csi": {"driver": STRING, "volumeHandle": STRING}, **MIGRATED_VOLUMES},
        "status": {"phase": STRING}},
    "StorageClass": {"provisioner": STRING, "volumeBindingMode": STRING,
                     "allowedTopologies": [{"matchLabelExpressions": [
                         {"key": STRING, "values": [STRING]}]}]},
    "Namespace": {},
    "CSINode": {"spec": {"drivers": [
        {"name": STRING, "nodeID": STRING, "allocatable": {"count": INTEGER}}]}},
    "VolumeAttachment": {"spec": {"attacher": STRING, "nodeName": STRING, "source": {
        "persistentVolumeName": STRING, "inlineVolumeSpec": {}}}},
    "PodDisruptionBudget": {"spec": {"selector": LABEL_SELECTOR},
                            "status": {"disruptionsAllowed": INTEGER,
                                       "disruptedPods": MapOf(STRING)}},
    "PriorityClass": {"value": INTEGER, "globalDefault": BOOLEAN, "preemptionPolicy": STRING},
    "RuntimeClass": {"handler": STRING, "overhead": {"podFixed": QUANTITIES},
                     "scheduling": {"nodeSelector": MapOf(STRING), "tolerations": [TOLERATION]}},
    "ReplicaSet": {"spec": {"replicas": INTEGER, "selector": LABEL_SELECTOR,
                            "template": POD_TEMPLATE}},
    "Deployment": {"spec": {"replicas": INTEGER, "paused": BOOLEAN, "selector": LABEL_SELECTOR,
                            "template": POD_TEMPLATE}},
    "StatefulSet": {"spec": {"replicas": INTEGER, "podManagementPolicy": STRING,
                             "minReadySeconds": INTEGER, "selector": LABEL_SELECTOR,
                             "template": POD_TEMPLATE}},
    "Job": {"spec": {"parallelism": INTEGER, "completions": INTEGER, "manualSelector": BOOLEAN,
                     "completionMode": STRING, "suspend": BOOLEAN, "selector": LABEL_SELECTOR,
                     "template": POD_TEMPLATE}},
}
"""Each kind simulate reads → the fields it reads (besides `metadata`, `OBJECT_META`)."""
NATIVE_PODGROUP: Shape = {"spec": {"schedulingPolicy": {"gang": {"minCount": INTEGER},
                                                        "basic": {}},
                                   "schedulingConstraints": {"topology": [{"key": STRING}]}}}
"""What simulate and the watcher read of a native PodGroup (api scheduling/v1alpha2
`PodGroupSpec`): its policy, and its topology constraints (`[]TopologyConstraint{Key string}`,
read by `watcher.native.topology_key`; their values: `native_podgroups`)."""
NATIVE_API_VERSION = "scheduling.k8s.io/v1alpha2"
"""The native PodGroup's apiVersion (`watcher.native.API_VERSION`)."""


def problem(body: Mapping[str, Any]) -> tuple[str, str] | None:
    """The first field of `body` (an object of a kind simulate reads) whose JSON type the API
    server would refuse, and why: `("spec.template.metadata.labels", "must be a mapping, got
    ['app']")`; None when every field read has its type."""
    kind = body.get("kind")
    shape = KINDS.get(kind) if isinstance(kind, str) else None
    if shape is None:
        return None
    if kind == "PodGroup" and body.get("apiVersion") == NATIVE_API_VERSION:
        shape = NATIVE_PODGROUP
    assert isinstance(shape, dict)
    return field_problem(body, {"metadata": OBJECT_META, **shape}, "")


def field_problem(value: Any, shape: Shape, field: str) -> tuple[str, str] | None:
    """The first part of `value`, found at `field` (empty: the object itself), that is not of
    `shape`, and why; None when it is (module docstring: shapes)."""
    if value is None or shape == ANY:
        return None
    if isinstance(shape, str):
        return None if _is_scalar(value, shape) else (field, _wrong_scalar(value, shape))
    if isinstance(shape, list):
        return _list_problem(value, shape[0], field)
    if not isinstance(value, Mapping):
        return field, f"must be a mapping, got {shown(value)}"
    if isinstance(shape, MapOf):
        items = ((key, _key_field(field, key, shape.dotted)) for key in value)
        return next((found for key, where in items
                     if (found := field_problem(value[key], shape.value, where))), None)
    return next((found for name, inner in shape.items()
                 if (found := field_problem(value.get(name), inner,
                                            f"{field}.{name}" if field else name))), None)


def _list_problem(value: Any, item: Shape, field: str) -> tuple[str, str] | None:
    """`field_problem` of a list whose items have the shape `item`."""
    if not isinstance(value, list):
        return field, f"must be a list, got {shown(value)}"
    return next((found for i, element in enumerate(value)
                 if (found := field_problem(element, item, f"{field}[{i}]"))), None)


def _is_scalar(value: Any, shape: str) -> bool:
    """`value` is of the scalar `shape` (`STRING`, `INTEGER`, `INT64`, `BOOLEAN`) as the API's Go
    type decodes it: a string is no number, a boolean is no integer, an integer fits its 32 or
    64 bits."""
    if shape == STRING:
        return isinstance(value, str)
    if shape == BOOLEAN:
        return isinstance(value, bool)
    low, high = (INT64_MIN, INT64_MAX) if shape == INT64 else (INT32_MIN, INT32_MAX)
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def _wrong_scalar(value: Any, shape: str) -> str:
    """Why `value` is not of the scalar `shape`: `must be a string, got 10 (quote it: "10")`
    (YAML reads an unquoted `10`, `true` or `1.5` as a number or a boolean, not as text)."""
    text, hint = shown(value), ""
    if shape == STRING and isinstance(value, bool):
        hint = f' (quote it: "{text.lower()}")'
    elif shape == STRING and isinstance(value, int | float) and text not in NOT_FINITE and len(
            text) <= MAX_HINTED_DIGITS:
        hint = f' (quote it: "{text}")'
    return f"must be {shape}, got {text}{hint}"


def _key_field(field: str, key: Any, dotted: bool) -> str:
    """The path of the map entry `key` under `field`: `.cpu` if `dotted`, else `["app"]` (a
    label key holds dots and slashes), the key JSON-quoted so that a message stays one line."""
    text = key if isinstance(key, str) else shown(key)
    return f"{field}.{text}" if dotted and text.isprintable() else (
        f"{field}[{json.dumps(text)}]")


