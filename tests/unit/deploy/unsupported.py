"""The constraints the chart's ValidatingAdmissionPolicy warns about, taken from the watcher's
code, and the file the chart reads them from (deploy/chart/files/unsupported-constraints.yaml).

    python -m tests.unit.deploy.unsupported    # rewrite that file if stale

`CANDIDATES` pairs each hard constraint gangsched has ever refused with a CEL condition that is
true when a pod uses it, and an example pod spec using it. The policy keeps a candidate only
while `services.watcher.slim.pod_event` still lists the example's field in `unsupported`, so the
warnings follow the code: when the planner learns a constraint, regenerating drops its warning
(a unit test fails while the file is stale, and another when the code refuses a field no
candidate describes). The warning text is the planner's own reason (`reasons.unsupported`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from services.planner.core import reasons
from services.watcher import slim
from tests.support import generated

REPO = Path(__file__).resolve().parents[3]
FILE = REPO / "deploy" / "chart" / "files" / "unsupported-constraints.yaml"


@dataclass(frozen=True)
class Candidate:
    """A hard constraint: its field path (as slim names it), a CEL condition on `object` (the
    Pod) true when the pod uses it, and a pod spec that uses it."""

    field: str
    uses: str
    example: dict[str, Any]


REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


def _terms(kind: str, when: str) -> str:
    """CEL: the `when` (REQUIRED or PREFERRED) terms of `spec.affinity.<kind>` (an empty list
    when absent)."""
    return (f"(has(object.spec.affinity) && has(object.spec.affinity.{kind}) && "
            f"has(object.spec.affinity.{kind}.{when}) ? "
            f"object.spec.affinity.{kind}.{when} : [])")


def _namespace_selector_set(term: str) -> str:
    """CEL: the pod affinity term `term` has a non-empty `namespaceSelector`."""
    selector = f"{term}.namespaceSelector"
    return (f"has({selector}) && ((has({selector}.matchLabels) && "
            f"size({selector}.matchLabels) > 0) || (has({selector}.matchExpressions) "
            f"&& size({selector}.matchExpressions) > 0))")


_CONTAINER = {"name": "main", "image": "fake"}
_TERM = {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"a": "b"}},
         "namespaceSelector": {"matchLabels": {"team": "ml"}}}

INLINE_DISKS: dict[str, dict[str, Any]] = {
    "gcePersistentDisk": {"pdName": "data", "fsType": "ext4"},
    "awsElasticBlockStore": {"volumeID": "vol-0123456789abcdef0", "fsType": "ext4"},
    "rbd": {"monitors": ["10.0.0.1:6789"], "image": "data", "fsType": "ext4"},
    "iscsi": {"targetPortal": "10.0.0.1:3260", "iqn": "iqn.2001-04.com.example:data",
              "lun": 0, "fsType": "ext4"},
}
"""Inline volumes whose disk conflicts VolumeRestrictions checks, each with a source the API
server accepts (`services.fit.disks.KINDS`; gangsched refused them until core revision 41)."""

CANDIDATES = (
    Candidate("spec.topologySpreadConstraints",
              "has(object.spec.topologySpreadConstraints) && object.spec.topologySpreadConstraints"
              ".exists(c, c.whenUnsatisfiable == 'DoNotSchedule')",
              {"topologySpreadConstraints": [{
                  "maxSkew": 1, "topologyKey": "kubernetes.io/hostname",
                  "whenUnsatisfiable": "DoNotSchedule",
                  "labelSelector": {"matchLabels": {"a": "b"}}}]}),
    Candidate("spec.volumes[].persistentVolumeClaim",
              "has(object.spec.volumes) && object.spec.volumes.exists(v, "
              "has(v.persistentVolumeClaim))",
              {"volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]}),
    Candidate("spec.volumes[].ephemeral",
              "has(object.spec.volumes) && object.spec.volumes.exists(v, has(v.ephemeral))",
              {"volumes": [{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {
                  "accessModes": ["ReadWriteOnce"],
                  "resources": {"requests": {"storage": "1Gi"}}}}}}]}),
    Candidate("spec.resourceClaims",
              "has(object.spec.resourceClaims) && size(object.spec.resourceClaims) > 0",
              {"resourceClaims": [{"name": "gpu", "resourceClaimName": "gpu"}]}),
    *(Candidate(f"spec.volumes[].{kind}",
                f"has(object.spec.volumes) && object.spec.volumes.exists(v, has(v.{kind}))",
                {"volumes": [{"name": "disk", kind: source}]})
      for kind, source in INLINE_DISKS.items()),
    Candidate("spec.initContainers[].ports[].hostPort",
              "has(object.spec.initContainers) && object.spec.initContainers.exists(c, "
              "has(c.ports) && c.ports.exists(p, has(p.hostPort) && p.hostPort != 0))",
              {"initContainers": [{**_CONTAINER, "name": "init",
                                   "ports": [{"containerPort": 80, "hostPort": 8080}]}]}),
    *(Candidate(f"spec.affinity.{kind}.{REQUIRED}[].namespaceSelector",
                f"{_terms(kind, REQUIRED)}.exists(t, {_namespace_selector_set('t')})",
                {"affinity": {kind: {REQUIRED: [_TERM]}}})
      for kind in ("podAffinity", "podAntiAffinity")),
    *(Candidate(f"spec.affinity.{kind}.{PREFERRED}[].podAffinityTerm.namespaceSelector",
                f"{_terms(kind, PREFERRED)}.exists(t, "
                f"{_namespace_selector_set('t.podAffinityTerm')})",
                {"affinity": {kind: {PREFERRED: [{"weight": 1, "podAffinityTerm": _TERM}]}}})
      for kind in ("podAffinity", "podAntiAffinity")),
)
"""Every hard constraint gangsched refuses or once refused (a supported one stays listed, so
that refusing it again brings its warning back)."""

REFUSED_BY_THE_API_SERVER = ("*.labelSelector", "*.namespaceSelector")
"""Fields slim reports that the API server already refuses in a pod (an invalid selector)."""


def example_pod(candidate: Candidate) -> dict[str, Any]:
    """A pod of gangsched using `candidate`'s constraint."""
    spec = {"schedulerName": "gangsched", "containers": [_CONTAINER], **candidate.example}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "uses-" + candidate.field.split(".")[-1].lower().strip("[]"),
                         "uid": "u", "resourceVersion": "1"},
            "spec": spec}


def refused(candidate: Candidate) -> bool:
    """Whether gangsched's watcher marks the example pod as using `candidate`'s field."""
    return candidate.field in slim.pod_event(example_pod(candidate), at_ms=0).unsupported


def constraints() -> list[dict[str, str]]:
    """The policy's entries: field, CEL condition (true when a pod uses it) and reason."""
    return [{"field": c.field, "uses": c.uses, "reason": reasons.unsupported(c.field)}
            for c in CANDIDATES if refused(c)]


HEADER = """\
# The pod constraints gangsched refuses (services/watcher/slim.py), for the chart's
# ValidatingAdmissionPolicy (templates/admission-policy.yaml): `uses` is a CEL condition on the
# Pod, true when the pod asks for `field`; `reason` is the planner's FailedScheduling reason.
# Do not edit: regenerate with `python -m tests.unit.deploy.unsupported` (a unit test fails
# when this file is stale).
"""


def file_text() -> str:
    """What deploy/chart/files/unsupported-constraints.yaml must contain."""
    return HEADER + yaml.safe_dump(constraints(), sort_keys=False, width=10_000)


if __name__ == "__main__":
    generated.regenerate(FILE, file_text)
