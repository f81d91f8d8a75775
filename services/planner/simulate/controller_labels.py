"""The labels and annotations Kubernetes adds to a workload's pods and to a node, for
`gangsched simulate`.

Layer: planner simulate (pure). Affinity terms, topology spread constraints and
PodDisruptionBudgets commonly select a Job's pods by `job-name` and a StatefulSet's by
`statefulset.kubernetes.io/pod-name`, so a simulated pod must carry what a real one does.
Sources, Kubernetes 1.36:
- Job: the API server's `generateSelector` (`pkg/registry/batch/job/strategy.go`) adds
  `job-name`, `batch.kubernetes.io/job-name`, `controller-uid` and
  `batch.kubernetes.io/controller-uid` to the template on create, unless `spec.manualSelector`
  is true, keeping a label the template already sets. An Indexed Job's controller adds
  `batch.kubernetes.io/job-completion-index` to each pod as a label and an annotation, and names
  the pod `<job>-<index>-<5 random>` (`podGenerateNameWithIndex`).
- StatefulSet: its controller adds `statefulset.kubernetes.io/pod-name`,
  `apps.kubernetes.io/pod-index` and `controller-revision-hash` (`<set>-<hash of the
  template>`; here a hash of the namespace and name: one revision per simulation).
- Deployment: `pod-template-hash` (`manifests`).
- Node: the kubelet registers its node with `kubernetes.io/hostname` (its host name, the node's
  name unless overridden); a hand-written Node without it gets its name, so that anti-affinity
  and spread by host name judge it as a registered one.
- Namespace: the API server labels every Namespace `kubernetes.io/metadata.name: <name>`
  (whatever the manifest says of that label), what a `namespaceSelector` selects one by name
  with; and every namespace a pod is in exists on a cluster (`manifests` implies those no
  manifest declares).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from services.planner.simulate import object_labels
from services.planner.simulate.object_names import invalid

JOB_NAME_LABELS = ("job-name", "batch.kubernetes.io/job-name")
CONTROLLER_UID_LABELS = ("controller-uid", "batch.kubernetes.io/controller-uid")
COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
INDEXED = "Indexed"
HOSTNAME_LABEL = "kubernetes.io/hostname"
METADATA_NAME_LABEL = "kubernetes.io/metadata.name"
POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"
REVISION_LABEL = "controller-revision-hash"
MAX_GENERATED_BASE = 58
"""The longest base a generated name keeps (`names.MaxGeneratedNameLength`: 63 less the 5
random characters)."""


_UIDS = uuid.UUID("6d1f3c52-8f0e-4b7a-9a57-2a4f5b1c9e30")
"""The namespace of the simulated workloads' uids (any fixed UUID: names map to the same uid
in every run)."""


def uid(kind: str, namespace: str, name: str) -> str:
    """The uid of simulated workload `kind` `namespace/name`: a UUID, as the API server's are
    (36 characters, a valid `controller-uid` label value), the same in every run."""
    return str(uuid.uuid5(_UIDS, f"{kind}/{namespace}/{name}"))


def job_template_labels(labels: Mapping[str, Any], spec: Mapping[str, Any], name: str,
                        uid: str) -> dict[str, Any]:
    """The template labels of Job `name` (uid `uid`, `spec` its checked spec) once the API
    server has created it: `labels` plus the job-name and controller-uid labels it has not
    set, unless `spec.manualSelector` is true."""
    added = dict(labels)
    if spec.get("manualSelector") is True:
        return added
    for key in JOB_NAME_LABELS:
        added.setdefault(key, name)
    for key in CONTROLLER_UID_LABELS:
        added.setdefault(key, uid)
    return added


def job_label_conflict(labels: Mapping[str, Any], spec: Mapping[str, Any], name: str,
                       uid: str) -> tuple[str, str] | None:
    """The template label of Job `name` (uid `uid`) that contradicts the selector the API
    server generates, and why, as its `validateGeneratedSelector` refuses it
    (`("spec.template.metadata.labels[job-name]", 'Invalid value: "other": must be
    'train'')`; the API server shows the whole label map as the value); None with
    `spec.manualSelector` true, or when none does."""
    if spec.get("manualSelector") is True:
        return None
    for key, expected in ((CONTROLLER_UID_LABELS[0], uid), (JOB_NAME_LABELS[0], name),
                          (CONTROLLER_UID_LABELS[1], uid), (JOB_NAME_LABELS[1], name)):
        if key in labels and labels[key] != expected:
            return (f"spec.template.metadata.labels[{key}]",
                    invalid(str(labels[key]), f"must be '{expected}'"))
    return None


def is_indexed(spec: Mapping[str, Any]) -> bool:
    """Whether a Job's checked `spec` asks for Indexed completion."""
    return spec.get("completionMode") == INDEXED


def indexed_job_pod(labels: Mapping[str, Any], annotations: Mapping[str, Any],
                    index: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """The labels and annotations of an Indexed Job's pod `index` (0-based), from its
    template's."""
    return ({**labels, COMPLETION_INDEX: str(index)},
            {**annotations, COMPLETION_INDEX: str(index)})


def indexed_generate_name(job: str, index: int) -> str:
    """The generateName of an Indexed Job's pod `index`: `<job>-<index>-`, the job's name cut
    so that it leaves room for the 5 random characters (`podGenerateNameWithIndex`)."""
    tail = f"-{index}-"
    if len(job) + len(tail) > MAX_GENERATED_BASE:
        return job[:MAX_GENERATED_BASE - len(tail)] + tail
    return job + tail


def generated_base(base: str) -> str:
    """A generateName as the API server uses it: cut to `MAX_GENERATED_BASE` characters."""
    return base[:MAX_GENERATED_BASE]


def stateful_pod_labels(labels: Mapping[str, Any], pod: str, ordinal: int,
                        revision: str) -> dict[str, Any]:
    """The labels of StatefulSet pod `pod` (ordinal `ordinal`, set revision `revision`), from
    its template's; the controller's own labels win."""
    return {**labels, POD_NAME_LABEL: pod, POD_INDEX_LABEL: str(ordinal),
            REVISION_LABEL: revision}


def node_labels(labels: Mapping[str, Any], name: str) -> dict[str, Any]:
    """A Node's labels once its kubelet registered it: `labels` with `kubernetes.io/hostname`
    set to `name` when absent and `name` can be a label value (a node name may be a DNS
    subdomain of 253 characters, a label value no more than 63: such a node's kubelet is
    given its host name otherwise, which a manifest does not say)."""
    if HOSTNAME_LABEL in labels or object_labels.value_problem(name) is not None:
        return dict(labels)
    return {HOSTNAME_LABEL: name, **labels}


def namespace_labels(labels: Mapping[str, Any], name: str) -> dict[str, Any]:
    """A Namespace's labels as the API server stores them: `labels` with
    `kubernetes.io/metadata.name` set to `name`."""
    return {**labels, METADATA_NAME_LABEL: name}
