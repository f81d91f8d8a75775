"""Volume rules for one pod: kube-scheduler's VolumeRestrictions, VolumeBinding and VolumeZone.

Layer: fit (pure; shared by the planner and the binder). A `Book` holds the claims, volumes and
storage classes observed. `prefilter` gives the pod-level reason that keeps a pod off every
node (the PreFilter messages, in plugin order); `bound_reasons` and `zone_reason` judge one
node for the pod's bound claims; `find_matching_volume` is VolumeBinding's choice of a static
PersistentVolume for an unbound WaitForFirstConsumer claim on one node. Wording from the
plugins (`services.fit.reasons`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from services.contracts.events import (
    ClaimObserved,
    NodeObserved,
    PodClaim,
    PodObserved,
    StorageClassObserved,
    VolumeObserved,
)
from services.fit import filters, reasons

READ_WRITE_ONCE_POD = "ReadWriteOncePod"
WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"
NO_PROVISIONER = "kubernetes.io/no-provisioner"
AVAILABLE = "Available"
LOST = "Lost"
ZONE_LABELS = ("failure-domain.beta.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/region",
               "topology.kubernetes.io/zone", "topology.kubernetes.io/region")
"""The PV labels VolumeZone reads, in its order."""
_GA_LABEL = {"failure-domain.beta.kubernetes.io/zone": "topology.kubernetes.io/zone",
             "failure-domain.beta.kubernetes.io/region": "topology.kubernetes.io/region"}


class Book:
    """What is observed of storage: claims by `namespace/name`, volumes and classes by name."""

    def __init__(self, claims: Mapping[str, ClaimObserved], volumes: Mapping[str, VolumeObserved],
                 classes: Mapping[str, StorageClassObserved]) -> None:
        self.claims = claims
        self.volumes = volumes
        self.classes = classes

    def claim(self, namespace: str, name: str) -> ClaimObserved | None:
        """The claim `namespace/name`, if observed."""
        return self.claims.get(claim_key(namespace, name))

    def is_delay_binding(self, claim: ClaimObserved) -> bool:
        """Whether the claim's class binds WaitForFirstConsumer (as `IsDelayBindingMode`: no
        class, or a class not found, is Immediate)."""
        found = self.classes.get(claim.storage_class) if claim.storage_class else None
        return found is not None and found.binding_mode == WAIT_FOR_FIRST_CONSUMER


def claim_key(namespace: str, name: str) -> str:
    """The key of a claim in a `Book`: `namespace/name`."""
    return f"{namespace}/{name}"


def is_fully_bound(claim: ClaimObserved) -> bool:
    """A volume name and the bind-completed annotation (as VolumeBinding's `isPVCFullyBound`)."""
    return bool(claim.volume_name) and claim.is_bind_completed


def prefilter(pod: PodObserved, book: Book) -> str | None:
    """Why no node can take `pod` for its claims, as the first failing PreFilter says it.

    Source, in kube-scheduler's order: VolumeRestrictions (a `persistentVolumeClaim` not found),
    VolumeBinding (`podHasPVCs`: not found, the ephemeral volume's claim not yet created, Lost,
    being deleted, an ephemeral claim of another pod; then an unbound claim whose class binds
    Immediately, or one naming a volume but not yet bound), VolumeZone (a bound claim's volume
    not found, an unbound claim with no class, or its class not found). A claim with an
    unreadable spec (`invalid_reason`) is named with that reason.
    """
    ours = [(ref, book.claim(pod.namespace, ref.name)) for ref in pod.volume_claims]
    for ref, claim in ours:
        if claim is None and not ref.is_ephemeral:
            return reasons.claim_not_found(ref.name)
    for ref, claim in ours:
        reason = _has_claim(pod, ref, claim)
        if reason is not None:
            return reason
    for _, claim in ours:
        assert claim is not None
        if not is_fully_bound(claim) and (claim.volume_name or not book.is_delay_binding(claim)):
            return reasons.UNBOUND_IMMEDIATE_CLAIMS
    for ref, claim in ours:
        assert claim is not None
        if ref.is_ephemeral:
            continue
        if claim.volume_name:
            if claim.volume_name not in book.volumes:
                return reasons.volume_not_found(claim.volume_name)
        elif not claim.storage_class:
            return reasons.CLAIM_WITHOUT_VOLUME_OR_CLASS
        elif claim.storage_class not in book.classes:
            return reasons.storage_class_not_found(claim.storage_class)
    return None


def _has_claim(pod: PodObserved, ref: PodClaim, claim: ClaimObserved | None) -> str | None:
    """VolumeBinding's `podHasPVCs` for one claim (see `prefilter`)."""
    if claim is None:
        return reasons.ephemeral_claim_missing(ref.name)
    if claim.invalid_reason is not None:
        return reasons.claim_invalid(claim.name, claim.invalid_reason)
    if claim.phase == LOST:
        return reasons.claim_lost(claim.name, claim.volume_name)
    if claim.is_deleting:
        return reasons.claim_deleting(claim.name)
    if ref.is_ephemeral and claim.owner_uid != pod.uid:
        return reasons.ephemeral_not_owned(pod.namespace, claim.name, pod.name)
    return None


def claims_of(pod: PodObserved, book: Book) -> list[tuple[PodClaim, ClaimObserved]]:
    """The pod's claims that are observed, with the reference each comes from."""
    found = []
    for ref in pod.volume_claims:
        claim = book.claim(pod.namespace, ref.name)
        if claim is not None:
            found.append((ref, claim))
    return found


def read_write_once_pod_claims(pod: PodObserved, book: Book) -> set[str]:
    """Keys of the pod's `persistentVolumeClaim` claims with access mode ReadWriteOncePod.

    Source: as VolumeRestrictions' `readWriteOncePodPVCsForPod` (ephemeral volumes are not
    read).
    """
    return {claim_key(pod.namespace, claim.name) for ref, claim in claims_of(pod, book)
            if not ref.is_ephemeral and READ_WRITE_ONCE_POD in claim.access_modes}


def claim_keys(pod: PodObserved) -> set[str]:
    """Keys of every `persistentVolumeClaim` claim the pod uses (what a ReadWriteOncePod
    claim's other users are counted by, as `NodeInfo.PVCRefCounts`)."""
    return {claim_key(pod.namespace, ref.name) for ref in pod.volume_claims
            if not ref.is_ephemeral}


def node_affinity_matches(volume: VolumeObserved, node: NodeObserved) -> bool:
    """The volume's required node affinity matches the node's labels (`CheckNodeAffinity`)."""
    terms = volume.node_affinity
    return terms is None or any(filters.term_matches(term, node.labels, node.name)
                                for term in terms)


def bound_reasons(pod: PodObserved, book: Book, node: NodeObserved) -> list[str]:
    """VolumeBinding's reasons for the node from the pod's fully bound claims.

    Source: as `checkBoundClaims`: the first claim whose volume is not found stops the check
    (`node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)`); a volume
    whose node affinity does not match the node gives `node(s) didn't match
    PersistentVolume's node affinity`.
    """
    for _, claim in claims_of(pod, book):
        if not is_fully_bound(claim):
            continue
        volume = book.volumes.get(claim.volume_name)
        if volume is None:
            return [reasons.BOUND_VOLUME_MISSING]
        if not node_affinity_matches(volume, node):
            return [reasons.VOLUME_NODE_AFFINITY_CONFLICT]
    return []


def zone_sets(pod: PodObserved, book: Book) -> list[tuple[str, frozenset[str]]]:
    """The zone/region label constraints of the volumes the pod's bound claims name.

    Source: as VolumeZone's `getPVTopologies`: each zone/region label of each volume, its value
    split on `__` (`LabelZonesToSet`); an empty piece makes the label ignored.
    """
    found = []
    for ref, claim in claims_of(pod, book):
        volume = book.volumes.get(claim.volume_name) if not ref.is_ephemeral else None
        if volume is None:
            continue
        for label in ZONE_LABELS:
            value = volume.labels.get(label)
            if value is None:
                continue
            zones = value.split("__")
            if all(zones):
                found.append((label, frozenset(zones)))
    return found


def zone_reason(zones: Iterable[tuple[str, frozenset[str]]], node: NodeObserved) -> str | None:
    """VolumeZone's filter: a node with any zone/region label must carry each volume's label
    (or its GA name) with a value in the volume's set."""
    labels = node.labels
    if not any(label in labels for label in ZONE_LABELS):
        return None
    for label, values in zones:
        value = labels.get(label, labels.get(_GA_LABEL.get(label, label)))
        if value is None or value not in values:
            return reasons.VOLUME_ZONE_CONFLICT
    return None


PRE_BOUND, AVAILABLE_MATCH = "pre-bound", "available"


def volume_match(claim: ClaimObserved, volume: VolumeObserved) -> str | None:
    """How `volume` may serve `claim` wherever it is reachable: PRE_BOUND (its claimRef names
    the claim), AVAILABLE_MATCH (an Available volume the claim could bind), or None.

    Source: `FindMatchingVolume`'s checks other than node affinity and the volumes already
    chosen: capacity, volume mode, attributes class (`claimVAC != volumeVAC`, both read as
    `ptr.Deref(..., "")`: a claim of none takes only a volume of none, even one pre-bound to
    it; the VolumeAttributesClass gate is locked on in 1.36) and deletion first; a volume
    bound to the claim is then taken whatever its phase and class; else it must be unbound,
    Available, of the claim's class, match the claim's selector and offer every access mode
    the claim asks for.
    """
    ref = volume.claim
    is_ours = (ref is not None and (ref.namespace, ref.name) == (claim.namespace, claim.name)
               and ref.uid in ("", claim.uid))
    if (volume.is_deleting or (ref is not None and not is_ours)
            or volume.capacity_bytes < claim.request_bytes
            or volume.volume_mode != claim.volume_mode
            or volume.volume_attributes_class != claim.volume_attributes_class):
        return None
    if is_ours:
        return PRE_BOUND
    if (volume.phase != AVAILABLE or volume.storage_class != claim.storage_class
            or not all(mode in volume.access_modes for mode in claim.access_modes)):
        return None
    if claim.selector is not None and not all(
            filters.requirement_matches(r, volume.labels) for r in claim.selector):
        return None
    return AVAILABLE_MATCH


def find_matching_volume(claim: ClaimObserved, volumes: Iterable[VolumeObserved],
                         node: NodeObserved, excluded: set[str]) -> VolumeObserved | None:
    """The volume VolumeBinding would bind `claim` to on `node`, or None.

    Source: as `FindMatchingVolume` with a node: the first volume (not in `excluded`) bound to
    the claim decides: it if its node affinity matches the node, else None; otherwise the
    smallest matching volume (`volume_match`) whose node affinity matches. Ties and the order
    volumes are met in: name order (kube-scheduler takes its cache's order).
    """
    best: VolumeObserved | None = None
    for volume in sorted(volumes, key=lambda v: v.name):
        if volume.name in excluded:
            continue
        match = volume_match(claim, volume)
        if match == PRE_BOUND:
            return volume if node_affinity_matches(volume, node) else None
        if (match == AVAILABLE_MATCH and node_affinity_matches(volume, node)
                and (best is None or volume.capacity_bytes < best.capacity_bytes)):
            best = volume
    return best


def can_provision(storage_class: StorageClassObserved | None, node: NodeObserved) -> bool:
    """Whether the claim's class may provision a volume for `node` (`checkVolumeProvisions`:
    a provisioner other than none, and `allowedTopologies` matching the node's labels when
    set). Storage capacity (CSIStorageCapacity) is not judged."""
    if storage_class is None or storage_class.provisioner in ("", NO_PROVISIONER):
        return False
    terms = storage_class.allowed_topologies
    return not terms or any(filters.term_matches(term, node.labels) for term in terms)
