"""The claims, volumes and storage classes of a run, as the real PV controller changes them.

kube-controller-manager's PV controller binds claims after they are created (a claim naming its
volume, an Immediate claim an Available volume matches) and sets new volumes Available; when
kube-scheduler binds a pod with an unbound WaitForFirstConsumer claim, it sets the chosen
volume's claimRef and the controller completes the binding before the pod is bound.
`wait_settled` is what the run waits for before offering pods; `wait_bound` waits, after a pod
is bound, until the mirrors show its claims bound (the next verdict must see them); `changed`
names the objects whose slimmed state changed while a pod was offered, leaving out the pod's
own claims and the volumes bound to them (kube-scheduler judged the pod before it bound
those).
"""

from __future__ import annotations

from functools import partial
from typing import Any

import msgspec

from services.fit.volumes import claim_key
from services.watcher.volumes import BIND_COMPLETED_ANNOTATION
from tests.e2e.differential.families import ClusterPlan
from tests.e2e.differential.oracle import Mirror, Mirrors
from tests.e2e.differential.verdict import STORAGE_KINDS, Slimmer

Obj = dict[str, Any]
Fingerprint = dict[tuple[str, str], object]
"""(kind, `namespace/name` or name) → the object's slimmed event without time and version."""
BOUND = "Bound"


def _key(obj: Obj) -> str:
    meta = obj["metadata"]
    return claim_key(meta["namespace"], meta["name"]) if meta.get("namespace") else meta["name"]


def _phase(obj: Obj) -> str | None:
    phase: str | None = obj.get("status", {}).get("phase")
    return phase


def is_fully_bound(claim: Obj) -> bool:
    """A volume name, the bind-completed annotation and phase Bound (the PV controller's
    last step)."""
    return (bool(claim["spec"].get("volumeName")) and _phase(claim) == BOUND
            and BIND_COMPLETED_ANNOTATION in claim["metadata"].get("annotations", {}))


def _bound_to(volume: Obj, claim: Obj) -> bool:
    ref = volume["spec"].get("claimRef") or {}
    return ref.get("uid") == claim["metadata"]["uid"] and _phase(volume) == BOUND


def volumes_settled(mirrors: Mirrors, names: set[str]) -> bool:
    """Whether every volume of `names` is listed and out of phase Pending, Bound if it has a
    claimRef."""
    volumes = {_key(v): v for v in mirrors.storage["pv"].objects.values()}
    return all(name in volumes and _phase(volumes[name]) not in (None, "Pending")
               and (not volumes[name]["spec"].get("claimRef") or _phase(volumes[name]) == BOUND)
               for name in names)


def claims_settled(mirrors: Mirrors, keys: set[str]) -> bool:
    """Whether every claim of `keys` (`namespace/name`) is listed and, if it names a volume,
    fully bound."""
    claims = {_key(c): c for c in mirrors.storage["pvc"].objects.values()}
    return all(key in claims and (not claims[key]["spec"].get("volumeName")
                                  or is_fully_bound(claims[key])) for key in keys)


async def wait_settled(mirrors: Mirrors, plan: ClusterPlan, timeout: float) -> None:
    """Wait until the planned volumes and claims are as the PV controller leaves them
    (`volumes_settled`, `claims_settled`; a volume is Bound before its claim is).

    Raises:
        TimeoutError: as `Mirror.wait_for`.
    """
    names = {obj["metadata"]["name"] for obj in plan.objects if obj["kind"] == "PersistentVolume"}
    keys = {_key(obj) for obj in plan.objects if obj["kind"] == "PersistentVolumeClaim"}
    await mirrors.storage["pv"].wait_for(lambda: volumes_settled(mirrors, names),
                                         f"{len(names)} settled volumes", timeout)
    await mirrors.storage["pvc"].wait_for(lambda: claims_settled(mirrors, keys),
                                          f"{len(keys)} settled claims", timeout)


def claim_names(pod: Obj) -> list[str]:
    """The `persistentVolumeClaim` claim names of the pod's volumes, in spec order."""
    return [volume["persistentVolumeClaim"]["claimName"]
            for volume in pod["spec"].get("volumes", []) if "persistentVolumeClaim" in volume]


def unbound(storage: dict[str, list[Obj]], pod: Obj) -> list[str]:
    """The pod's claims (names) that exist and are not fully bound."""
    namespace = pod["metadata"]["namespace"]
    claims = {_key(claim): claim for claim in storage.get("pvc", [])}
    return [name for name in claim_names(pod)
            if (claim := claims.get(claim_key(namespace, name))) is not None
            and not is_fully_bound(claim)]


async def wait_bound(mirrors: Mirrors, pod: Obj) -> None:
    """After kube-scheduler bound `pod`: wait until the mirrors show each of its claims fully
    bound and each claim's volume Bound to it.

    Raises:
        TimeoutError: as `Mirror.wait_for`.
    """
    namespace = pod["metadata"]["namespace"]
    claims, volumes = mirrors.storage["pvc"], mirrors.storage["pv"]
    for name in claim_names(pod):
        claim: Obj = await claims.wait_for(partial(_fully_bound, claims, namespace, name),
                                           f"claim {namespace}/{name} bound")
        await volumes.wait_for(partial(_volume_of, volumes, claim),
                               f"volume of claim {namespace}/{name} bound")


def _volume_of(volumes: Mirror, claim: Obj) -> bool:
    return any(volume["metadata"]["name"] == claim["spec"]["volumeName"]
               and _bound_to(volume, claim) for volume in volumes.objects.values())


def _fully_bound(claims: Mirror, namespace: str, name: str) -> Obj | None:
    claim = claims.by_name(namespace, name)
    return claim if claim is not None and is_fully_bound(claim) else None


def fingerprint(slimmer: Slimmer, storage: dict[str, list[Obj]]) -> Fingerprint:
    """What gangsched reads of every storage object now (module docstring)."""
    found: Fingerprint = {}
    for kind in STORAGE_KINDS:
        for obj in storage.get(kind, []):
            event = slimmer.event(kind, obj)
            found[kind, _key(obj)] = msgspec.structs.replace(event, at_ms=0,
                                                             resource_version="")
    return found


def changed(before: Fingerprint, after: Fingerprint, pod: Obj,
            storage: dict[str, list[Obj]]) -> set[tuple[str, str]]:
    """Storage objects that changed between the two fingerprints, except the pod's own claims
    and the volumes (in `storage`, after) bound to one of them."""
    namespace = pod["metadata"]["namespace"]
    own = {claim_key(namespace, name) for name in claim_names(pod)}
    theirs = {volume["metadata"]["name"] for volume in storage.get("pv", [])
              if _ref_key(volume) in own}
    return {key for key in before.keys() | after.keys()
            if before.get(key) != after.get(key)
            and not (key[0] == "pvc" and key[1] in own)
            and not (key[0] == "pv" and key[1] in theirs)}


def _ref_key(volume: Obj) -> str | None:
    ref = volume["spec"].get("claimRef")
    return claim_key(ref.get("namespace", ""), ref.get("name", "")) if ref else None
