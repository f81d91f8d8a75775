"""Volumes (VolumeRestrictions, VolumeBinding, VolumeZone): StorageClasses, static local
PersistentVolumes and claims, and pods mounting the claims.

Classes, none of which provisions (so no pod ever waits for a provisioner): `diff-immediate`
and `diff-local` (`kubernetes.io/no-provisioner`, Immediate and WaitForFirstConsumer),
`diff-local-zoned` (WaitForFirstConsumer with allowedTopologies, which static binding does not
read) and `diff-nowhere` (a provisioner nobody runs, WaitForFirstConsumer, allowedTopologies no
node matches: a node without a matching static volume cannot provision either).

Volumes (`diff-pv-...`): for the WaitForFirstConsumer classes, Available local volumes with
required node affinity on one hostname or one zone (those with the zone label too), of 1-20Gi
and access modes RWO, RWX or ReadWriteOncePod; for the Immediate class, volumes pre-bound to a
claim (`claimRef`, the claim names the volume: the PV controller binds them before the run), on
a hostname, a zone (labelled), or with zone labels only (`zone-b` or `zone-a__zone-c`:
VolumeZone alone judges those).

Claims, in every namespace: bound ones (`bound-*`, some ReadWriteOncePod), unbound Immediate
ones (`immediate`: no volume of their class is Available; `no-class`: `storageClassName: ""`;
`absent-class`: a class that does not exist), unbound WaitForFirstConsumer ones (`local-*`,
`zoned-*`, `nowhere-*`, 1-30Gi: some fit no volume) that kube-scheduler binds as the run goes.
Pods mount one or two of them, or a claim that does not exist (`missing-*`).
"""

from __future__ import annotations

import random

from tests.e2e.differential.families import HOSTNAME, ZONE, Base, ClusterPlan, Manifest

IMMEDIATE, LOCAL = "diff-immediate", "diff-local"
ZONED, NOWHERE = "diff-local-zoned", "diff-nowhere"
NO_PROVISIONER = "kubernetes.io/no-provisioner"
ABSENT_PROVISIONER = "diff.gangsched.io/absent"
SIZES_GI = (1, 2, 5, 10, 20)
REQUESTS_GI = (1, 1, 2, 5, 10, 30)
MODES = ("ReadWriteOnce", "ReadWriteOnce", "ReadWriteOnce", "ReadWriteMany", "ReadWriteOncePod")
UNBOUND_CLAIMS = (("local", LOCAL, 10), ("zoned", ZONED, 3), ("nowhere", NOWHERE, 3))
"""(name prefix, class, claims per namespace) of the WaitForFirstConsumer claims."""
BOUND_KINDS = ("host", "zone", "zone-labels", "zone-labels", "rwop", "rwop")
"""The bound claims of a namespace, by where their volume is (`_bound_volume`)."""


def _class(name: str, mode: str, provisioner: str = NO_PROVISIONER,
           zones: list[str] | None = None) -> Manifest:
    manifest: Manifest = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                          "metadata": {"name": name}, "provisioner": provisioner,
                          "volumeBindingMode": mode}
    if zones is not None:
        manifest["allowedTopologies"] = [{"matchLabelExpressions": [
            {"key": ZONE, "values": zones}]}]
    return manifest


def _volume(name: str, storage_class: str, size_gi: int, modes: list[str],
            affinity: tuple[str, str] | None, zone_label: str | None = None) -> Manifest:
    """A local volume; `affinity` (key, value): its required node affinity."""
    spec: Manifest = {"capacity": {"storage": f"{size_gi}Gi"}, "accessModes": modes,
                      "storageClassName": storage_class,
                      "persistentVolumeReclaimPolicy": "Retain",
                      "local": {"path": f"/mnt/{name}"}}
    if affinity is not None:
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": affinity[0], "operator": "In", "values": [affinity[1]]}]}]}}
    else:  # a local volume must have node affinity: a hostPath one need not
        spec["hostPath"] = {"path": spec.pop("local")["path"]}
    meta: Manifest = {"name": name}
    if zone_label is not None:
        meta["labels"] = {ZONE: zone_label}
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": meta, "spec": spec}


def _claim(namespace: str, name: str, storage_class: str, size_gi: int, modes: list[str],
           volume: str | None = None) -> Manifest:
    spec: Manifest = {"accessModes": modes, "storageClassName": storage_class,
                      "resources": {"requests": {"storage": f"{size_gi}Gi"}}}
    if volume is not None:
        spec["volumeName"] = volume
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": name, "namespace": namespace}, "spec": spec}


class Volumes(Base):
    name = "volumes"

    def objects(self, rng: random.Random, plan: ClusterPlan) -> list[Manifest]:
        zones = plan.label_values(ZONE)
        made = [_class(IMMEDIATE, "Immediate"), _class(LOCAL, "WaitForFirstConsumer"),
                _class(ZONED, "WaitForFirstConsumer", zones=zones[:2]),
                _class(NOWHERE, "WaitForFirstConsumer", ABSENT_PROVISIONER, ["zone-none"])]
        count = 0
        for storage_class, number in ((LOCAL, 30), (ZONED, 6), (NOWHERE, 3)):
            for _ in range(number):
                made.append(self._free_volume(rng, plan, f"diff-pv-{count:03d}", storage_class))
                count += 1
        for namespace in plan.namespaces:
            for number, kind in enumerate(BOUND_KINDS):
                volume = f"diff-pv-{count:03d}"
                count += 1
                claim = f"bound-{kind}-{number}"
                modes = ["ReadWriteOncePod"] if kind == "rwop" else ["ReadWriteOnce"]
                pv = _bound_volume(rng, plan, volume, kind, modes)
                pv["spec"]["claimRef"] = {"namespace": namespace, "name": claim}
                made += [pv, _claim(namespace, claim, IMMEDIATE, 1, modes, volume)]
            made += [_claim(namespace, "immediate", IMMEDIATE, 1, ["ReadWriteOnce"]),
                     _claim(namespace, "no-class", "", 1, ["ReadWriteOnce"]),
                     _claim(namespace, "absent-class", "diff-absent", 1, ["ReadWriteOnce"])]
            for prefix, storage_class, number in UNBOUND_CLAIMS:
                for item in range(number):
                    made.append(_claim(namespace, f"{prefix}-{item}", storage_class,
                                       rng.choice(REQUESTS_GI), [rng.choice(MODES)]))
        return made

    @staticmethod
    def _free_volume(rng: random.Random, plan: ClusterPlan, name: str,
                     storage_class: str) -> Manifest:
        modes = sorted({rng.choice(MODES) for _ in range(2)})
        if "ReadWriteOncePod" in modes:  # validation: not with another mode
            modes = ["ReadWriteOncePod"]
        size = rng.choice(SIZES_GI)
        if rng.random() < 0.25:
            zone = rng.choice(plan.label_values(ZONE))
            return _volume(name, storage_class, size, modes, (ZONE, zone), zone)
        return _volume(name, storage_class, size, modes, (HOSTNAME, rng.choice(plan.names())))

    def shape_pod(self, rng: random.Random, pod: Manifest, plan: ClusterPlan) -> None:
        if rng.random() >= 0.3:
            return
        names: list[str] = []
        for _ in range(rng.choice([1, 1, 1, 2])):
            name = _claim_name(rng)
            if name not in names:
                names.append(name)
        pod["spec"]["volumes"] = [{"name": f"data-{number}",
                                   "persistentVolumeClaim": {"claimName": name}}
                                  for number, name in enumerate(names)]


def _bound_volume(rng: random.Random, plan: ClusterPlan, name: str, kind: str,
                  modes: list[str]) -> Manifest:
    zone = rng.choice(plan.label_values(ZONE))
    if kind == "zone" or (kind == "rwop" and rng.random() < 0.5):
        return _volume(name, IMMEDIATE, 5, modes, (ZONE, zone), zone)
    if kind == "zone-labels":
        return _volume(name, IMMEDIATE, 5, modes, None, "__".join(rng.sample(
            plan.label_values(ZONE), rng.choice([1, 2]))))
    return _volume(name, IMMEDIATE, 5, modes, (HOSTNAME, rng.choice(plan.names())))


def _claim_name(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.3:
        number = rng.randrange(len(BOUND_KINDS))
        return f"bound-{BOUND_KINDS[number]}-{number}"
    if roll < 0.87:
        return rng.choice([f"{prefix}-{item}" for prefix, _, number in UNBOUND_CLAIMS
                           for item in range(number)])
    if roll < 0.95:
        return rng.choice(["immediate", "no-class", "absent-class"])
    return f"missing-{rng.randrange(3)}"
