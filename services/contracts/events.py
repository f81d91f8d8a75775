"""Events: facts in the past tense, the only input of the planner.

Layer: contracts. Pure; never does I/O.

Every event carries `at_ms`, the UTC wall-clock time in epoch milliseconds at which its producer
observed the fact. The planner takes time only from these values, so replaying the same log gives
the same decisions. Events are versioned by their tag; new fields are added only with defaults so
that old logs still decode. Only what the planner needs is carried: never env values, secrets, or
annotations.

Every message type is a frozen msgspec Struct with `gc=False`: immutable data that can never
take part in a reference cycle, so the cyclic GC need not track the millions a replay or a busy
planner holds.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from services.contracts.integers import EpochMs, Int64
from services.contracts.resources import ResourceList

SCHEMA_VERSION = 1


class Taint(msgspec.Struct, frozen=True, gc=False):
    """A node taint (`spec.taints[]`); `effect` is NoSchedule, PreferNoSchedule or NoExecute."""

    key: str
    effect: str
    value: str = ""


class NodeImage(msgspec.Struct, frozen=True, gc=False):
    """An image a node's kubelet reports it holds (`status.images[]`): its names (tags and
    digests, as given) and its size. Units: `size_bytes` bytes."""

    names: tuple[str, ...]
    size_bytes: Int64 = 0


class Toleration(msgspec.Struct, frozen=True, gc=False):
    """A pod toleration (`spec.tolerations[]`); empty `key` with operator Exists tolerates all."""

    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""


class NodeSelectorRequirement(msgspec.Struct, frozen=True, gc=False):
    """One `matchExpressions` entry: operator In, NotIn, Exists, DoesNotExist, Gt or Lt."""

    key: str
    operator: str
    values: tuple[str, ...] = ()


class NodeSelectorTerm(msgspec.Struct, frozen=True, gc=False):
    """One node selector term (a required node-affinity term, or a preferred one's
    `preference`); every requirement of both lists is ANDed.

    `match_fields` are requirements on the Node's fields (only `metadata.name` exists; operators
    In and NotIn with exactly one value, as the API server validates them).
    """

    match_expressions: tuple[NodeSelectorRequirement, ...] = ()
    match_fields: tuple[NodeSelectorRequirement, ...] = ()


class PreferredSchedulingTerm(msgspec.Struct, frozen=True, gc=False):
    """One preferred node-affinity term
    (`nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[]`).

    `weight` is the term's weight (1..100 as the API server validates it); `preference` its
    NodeSelectorTerm, matched as a required term is. What NodeAffinity's score reads: a node
    scores the sum of the weights of the terms whose preference it matches.
    """

    weight: Int64
    preference: NodeSelectorTerm


class HostPort(msgspec.Struct, frozen=True, gc=False):
    """A container port bound on the node (`spec.containers[].ports[]` with `hostPort` > 0).

    Defaults as kube-scheduler sanitizes them: protocol TCP, host IP 0.0.0.0 (every address).
    """

    port: Int64
    protocol: str = "TCP"
    host_ip: str = "0.0.0.0"


class PodAffinityTerm(msgspec.Struct, frozen=True, gc=False):
    """One pod (anti-)affinity term (`podAffinity/podAntiAffinity.required...[]`, or the
    `podAffinityTerm` of a preferred one).

    `label_selector` is the term's `labelSelector` as requirements ANDed (`matchLabels` as In
    with one value; `matchLabelKeys`/`mismatchLabelKeys` already merged in by the API server);
    None when absent (matches no pod), () when empty (matches every pod). `namespaces` are
    resolved as kube-scheduler does: the owner pod's own namespace when the term names none and
    has no `namespaceSelector`. `all_namespaces` when `namespaceSelector` is `{}`;
    `namespace_selector` a non-empty one as requirements (as `label_selector`), matched against
    the labels of a pod's Namespace (`NamespaceObserved`): a pod is in the term's namespaces
    when its namespace is named or its Namespace's labels match.
    """

    topology_key: str
    label_selector: tuple[NodeSelectorRequirement, ...] | None = None
    namespaces: tuple[str, ...] = ()
    all_namespaces: bool = False
    namespace_selector: tuple[NodeSelectorRequirement, ...] | None = None


class WeightedPodAffinityTerm(msgspec.Struct, frozen=True, gc=False):
    """One preferred pod (anti-)affinity term
    (`podAffinity/podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[]`).

    `weight` is the term's weight (1..100 as the API server validates it); `term` its
    `podAffinityTerm`, read as a required term is (`PodAffinityTerm`).
    """

    weight: Int64
    term: PodAffinityTerm


class TopologySpreadConstraint(msgspec.Struct, frozen=True, gc=False):
    """One `spec.topologySpreadConstraints[]` entry, as the API server stored it.

    `when_unsatisfiable` is DoNotSchedule (a filter) or ScheduleAnyway (a score);
    `label_selector` as `PodAffinityTerm.label_selector` (None: absent, matches no pod; ():
    empty), with the API server's own merge of `matchLabelKeys` already in it; the planner
    merges `match_label_keys` once more with the pod's current labels, as kube-scheduler does.
    `min_domains` 1 when absent; `node_affinity_policy` and `node_taints_policy` Honor or Ignore
    (absent: Honor and Ignore, kube-scheduler's defaults). Units: `max_skew` pods.
    """

    max_skew: Int64
    topology_key: str
    when_unsatisfiable: str = "DoNotSchedule"
    label_selector: tuple[NodeSelectorRequirement, ...] | None = None
    min_domains: Int64 = 1
    node_affinity_policy: str = "Honor"
    node_taints_policy: str = "Ignore"
    match_label_keys: tuple[str, ...] = ()


class PodClaim(msgspec.Struct, frozen=True, gc=False):
    """A claim a pod's volume uses (in the pod's namespace); `is_ephemeral` for a generic
    ephemeral volume (`spec.volumes[].ephemeral`, claim `<pod name>-<volume name>`)."""

    name: str
    is_ephemeral: bool = False


class AttachableVolume(msgspec.Struct, frozen=True, gc=False):
    """A volume a CSI driver attaches to the node, as NodeVolumeLimits counts it: the driver's
    name and the volume's handle (`spec.csi.volumeHandle` of a PersistentVolume, or the handle
    kube's CSI translation gives an in-tree volume it migrates, e.g. `vol-1` for the EBS volume
    `aws://us-east-1a/vol-1`). Two pods using one volume count it once on a node."""

    driver: str
    handle: str


class Disk(msgspec.Struct, frozen=True, gc=False):
    """An inline disk volume of a pod that VolumeRestrictions checks for conflicts on a node
    (`spec.volumes[]` with `gcePersistentDisk`, `awsElasticBlockStore`, `iscsi` or `rbd`).

    `kind` is that field's name; `name` the disk's identity within its kind (`pdName`,
    `volumeID`, `iqn`, or the RBD `image`); `pool` the RBD pool ("" for the other kinds);
    `monitors` the RBD Ceph monitors, in spec order (() for the other kinds); `read_only` the
    volume's `readOnly`.
    """

    kind: str
    name: str
    read_only: bool = False
    pool: str = ""
    monitors: tuple[str, ...] = ()


class ClaimRef(msgspec.Struct, frozen=True, gc=False):
    """A PersistentVolume's `spec.claimRef`; `uid` is "" when the reference names none."""

    namespace: str
    name: str
    uid: str = ""


class OwnerRef(msgspec.Struct, frozen=True, gc=False):
    """The controller owner of a pod (`metadata.ownerReferences[controller=true]`)."""

    kind: str
    name: str
    uid: str


class NodeObserved(msgspec.Struct, frozen=True, gc=False, tag="NodeObserved"):
    """A Node was listed, added or modified.

    Units: `allocatable` in gangsched units (cpu millicores, memory bytes, pods count).
    """

    at_ms: EpochMs
    name: str
    uid: str
    resource_version: str
    allocatable: ResourceList
    labels: dict[str, str] = {}
    taints: tuple[Taint, ...] = ()
    is_unschedulable: bool = False
    is_ready: bool = True
    declared_features: tuple[str, ...] = ()
    """`status.declaredFeatures`, as the API server stores them (sorted, unique: it validates
    so): the features its kubelet declares, which NodeDeclaredFeatures' filter reads (absent
    in events recorded before they were read: none)."""
    images: tuple[NodeImage, ...] = ()
    """`status.images`, in the order given (what ImageLocality's score reads; absent in events
    recorded before they were read: none)."""


class NodeDeleted(msgspec.Struct, frozen=True, gc=False, tag="NodeDeleted"):
    """A Node was deleted (or vanished while the watch was down: a synthetic delete)."""

    at_ms: EpochMs
    name: str
    uid: str
    resource_version: str = ""


class PodObserved(msgspec.Struct, frozen=True, gc=False, tag="PodObserved"):
    """A Pod was listed, added or modified.

    `requests` is the pod's effective request as kube-scheduler computes it (max of each init
    container and the sum of app containers, plus overhead), in gangsched units, always
    including `pods: 1`. `unsupported` names constraint fields the planner does not implement
    (e.g. `spec.affinity.podAffinity`); such a pod is never placed. `phase` is the pod phase
    (Pending, Running, Succeeded, Failed, Unknown). `host_ports` are its app containers' ports
    with a hostPort, in spec order (what kube-scheduler's NodePorts plugin reads). `labels` are
    the pod's labels and `pod_affinity`/`pod_anti_affinity` its required inter-pod terms, in
    spec order (what InterPodAffinity's filter reads); `preferred_pod_affinity` and
    `preferred_pod_anti_affinity` its preferred (weighted) terms, in spec order (what
    InterPodAffinity's score reads). `topology_spread` are its
    `topologySpreadConstraints`, in spec order (what PodTopologySpread reads).
    `preferred_affinity` its preferred node-affinity terms, in spec order (what NodeAffinity's
    score reads; absent in events recorded before they were scored: none).
    """

    at_ms: EpochMs
    uid: str
    namespace: str
    name: str
    resource_version: str
    scheduler_name: str
    phase: str
    created_at_ms: Int64
    requests: ResourceList
    node_name: str | None = None
    group_name: str | None = None
    priority: Int64 = 0
    node_selector: dict[str, str] = {}
    required_affinity: tuple[NodeSelectorTerm, ...] | None = None
    tolerations: tuple[Toleration, ...] = ()
    unsupported: tuple[str, ...] = ()
    invalid_reason: str | None = None
    is_scheduling_gated: bool = False
    is_deleting: bool = False
    owner: OwnerRef | None = None
    host_ports: tuple[HostPort, ...] = ()
    labels: dict[str, str] = {}
    pod_affinity: tuple[PodAffinityTerm, ...] = ()
    pod_anti_affinity: tuple[PodAffinityTerm, ...] = ()
    preferred_pod_affinity: tuple[WeightedPodAffinityTerm, ...] = ()
    preferred_pod_anti_affinity: tuple[WeightedPodAffinityTerm, ...] = ()
    topology_spread: tuple[TopologySpreadConstraint, ...] = ()
    volume_claims: tuple[PodClaim, ...] = ()
    """The PersistentVolumeClaims its volumes use, in spec order (what VolumeBinding,
    VolumeRestrictions and VolumeZone read): `persistentVolumeClaim.claimName`, and a generic
    ephemeral volume as the claim `<pod>-<volume>` its controller creates."""
    preemption_policy: str = "PreemptLowerPriority"
    """`spec.preemptionPolicy` (the API server copies it from the PriorityClass):
    `PreemptLowerPriority`, or `Never` (the pod never preempts; DefaultPreemption's
    PodEligibleToPreemptOthers)."""
    start_ms: Int64 | None = None
    """`status.startTime`, UTC epoch milliseconds (None until the kubelet sets it): what
    DefaultPreemption's last tie-break between candidates reads."""
    preferred_affinity: tuple[PreferredSchedulingTerm, ...] = ()
    preferred_unparseable: str | None = None
    """Why kube-scheduler cannot parse `preferred_affinity` though the API server admits it
    (None: it can), worded as `nodeaffinity.NewPreferredSchedulingTerms` words it, e.g.
    `[0].matchExpressions[0].values[0]: Invalid value: "five": for 'Gt', 'Lt' operators, the
    value must be an integer`: NodeAffinity's PreScore then fails the pod whenever two or more
    nodes pass the filters, and with one it binds there unscored. Absent in events recorded
    before: None."""
    disks: tuple[Disk, ...] = ()
    """Its inline disk volumes, in spec order (what VolumeRestrictions' disk conflict check
    reads; absent in events recorded before they were judged: none)."""
    migrated_volumes: tuple[AttachableVolume, ...] = ()
    """Its inline in-tree volumes that kube migrates to a CSI driver (AWS EBS, GCE PD, Azure
    Disk, Cinder, Portworx), translated as kube's CSI translation does, in spec order; what
    NodeVolumeLimits counts on a node that has a CSINode (absent in events recorded before they
    were counted: none). One it cannot translate is left out."""
    required_features: tuple[str, ...] = ()
    """The node features its scheduling requires, sorted, as kube's `nodedeclaredfeatures`
    library infers them from the spec (e.g. `RestartAllContainersOnContainerExits` for a
    restart rule with the action RestartAllContainers): a node must declare each
    (`NodeObserved.declared_features`), NodeDeclaredFeatures' filter. Absent in events recorded
    before they were inferred: none."""
    nonzero_extra: ResourceList = {}
    """What NodeResourcesFit's LeastAllocated and MostAllocated scores add to `requests`, cpu
    (millicores) and memory (bytes) only, keys with 0 left out: every container's missing cpu or
    memory request counted as 100m and 200 MiB, as kube-scheduler 1.36's
    `NonMissingContainerRequests` and `NodeInfo.NonZeroRequested` count it (a request given as 0
    stays 0; a resource set at pod level gets none), and for a pod with pod-level requests only
    a resource neither a container nor the pod level gives. Never charged: the fit is
    unaffected. Absent in events recorded before it was scored: none."""
    images: tuple[str, ...] = ()
    """Its init containers' then app containers' images, in spec order, each named as
    ImageLocality matches it (`:latest` appended to a name without a tag or digest): what that
    score sums, one entry per container. Absent in events recorded before: none."""
    image_volumes: tuple[str, ...] = ()
    """Its image volumes' references, named alike (ImageLocality counts them too, but not as
    containers). Absent in events recorded before: none."""
    nonzero_own: ResourceList | None = None
    """What those scores add to `requests` when this pod is the one placed, where it differs
    from `nonzero_extra` (None: it does not): a pod with pod-level requests counts each
    container's missing cpu or memory request too, not only a resource missing everywhere
    (the plugin's `calculatePodResourceRequest`)."""


class PodDeleted(msgspec.Struct, frozen=True, gc=False, tag="PodDeleted"):
    """A Pod was deleted (or vanished while the watch was down: a synthetic delete)."""

    at_ms: EpochMs
    uid: str
    namespace: str
    name: str
    resource_version: str = ""


NATIVE_GROUP_API = "scheduling.k8s.io/v1alpha2"
"""The `api_version` of a native PodGroup (Kubernetes 1.36, feature gate GenericWorkload)."""

KUEUE_GROUP_API = "kueue.x-k8s.io/pod-group"
"""The `api_version` of the PodGroupObserved the watcher makes of a Kueue pod group (no API
object: its `resource_version` is the group's total count, which may go down as well as up)."""


class PodGroupObserved(msgspec.Struct, frozen=True, gc=False, tag="PodGroupObserved"):
    """A PodGroup was listed, added or modified.

    `invalid_reason` is set (and the spec fields defaulted) when the object is malformed, so the
    planner can keep its members Pending with that reason instead of losing the event.
    Units: `min_resources` in gangsched units; `schedule_timeout_seconds` in seconds.
    """

    at_ms: EpochMs
    uid: str
    namespace: str
    name: str
    resource_version: str
    created_at_ms: Int64
    min_member: Int64
    min_resources: ResourceList = {}
    schedule_timeout_seconds: Int64 | None = None
    invalid_reason: str | None = None
    api_version: str = "scheduling.x-k8s.io/v1alpha1"
    """Which PodGroup API the object is of: Coscheduling's, or `scheduling.k8s.io/v1alpha2`."""
    unsupported: tuple[str, ...] = ()
    """Constraint fields of the PodGroup the planner does not implement: its gang is never
    placed, and waits with `unsupported constraint: <field>`, as a pod's `unsupported`. Only
    events recorded by watchers before core revision 46 name one (a native PodGroup's
    `spec.schedulingConstraints.topology`, now read into `topology_key`); absent: none."""
    topology_key: str | None = None
    """A native PodGroup's `spec.schedulingConstraints.topology[0].key`: the node label whose
    one value every member of the group must share (kube-scheduler's TopologyPlacement; nodes
    without the label never take a member). None: no such constraint (a Coscheduling PodGroup,
    a native one with no or an empty list, an event recorded before it was read)."""
    scheduling_constraints: bool = False
    """Whether a native PodGroup's `spec.schedulingConstraints` is set, even with no topology
    (`{}`, `topology: []`): kube-scheduler's DefaultPreemption then refuses to preempt for its
    pods (`pg.Spec.SchedulingConstraints != nil`, TopologyAwareWorkloadScheduling), and so
    does gangsched. Always True with a `topology_key`; False in events recorded before."""


class PodGroupDeleted(msgspec.Struct, frozen=True, gc=False, tag="PodGroupDeleted"):
    """A PodGroup was deleted."""

    at_ms: EpochMs
    uid: str
    namespace: str
    name: str
    resource_version: str = ""


class ClaimObserved(msgspec.Struct, frozen=True, gc=False, tag="ClaimObserved"):
    """A PersistentVolumeClaim was listed, added or modified.

    `storage_class` is the class as `GetPersistentVolumeClaimClass` reads it (the beta
    annotation, else `spec.storageClassName`, else ""); `volume_name` is `spec.volumeName`;
    `is_bind_completed` the `pv.kubernetes.io/bind-completed` annotation is present (with a
    volume name: fully bound, as VolumeBinding reads it); `selected_node` the
    `volume.kubernetes.io/selected-node` annotation ("" when absent); `owner_uid` the
    controller owner's uid (a generic ephemeral volume's pod). `selector` is `spec.selector`
    as requirements (None: no selector). Units: `request_bytes` bytes of
    `spec.resources.requests.storage` (0 when absent).
    """

    at_ms: EpochMs
    uid: str
    namespace: str
    name: str
    resource_version: str
    storage_class: str = ""
    volume_name: str = ""
    is_bind_completed: bool = False
    phase: str = "Pending"
    access_modes: tuple[str, ...] = ()
    request_bytes: Int64 = 0
    volume_mode: str = "Filesystem"
    selector: tuple[NodeSelectorRequirement, ...] | None = None
    selected_node: str = ""
    owner_uid: str = ""
    is_deleting: bool = False
    invalid_reason: str | None = None
    volume_attributes_class: str = ""
    """`spec.volumeAttributesClassName` ("" when absent or null, as kube's `ptr.Deref` reads
    it): VolumeBinding's `FindMatchingVolume` takes only a volume of the same attributes class
    (`services.fit.volumes.volume_match`). Absent in events recorded before it was read: none."""


class ClaimDeleted(msgspec.Struct, frozen=True, gc=False, tag="ClaimDeleted"):
    """A PersistentVolumeClaim was deleted."""

    at_ms: EpochMs
    uid: str
    namespace: str
    name: str
    resource_version: str = ""


class VolumeObserved(msgspec.Struct, frozen=True, gc=False, tag="VolumeObserved"):
    """A PersistentVolume was listed, added or modified.

    `storage_class` as `GetPersistentVolumeClass` reads it; `node_affinity` the terms of
    `spec.nodeAffinity.required` (None: none); `labels` the PV's labels (VolumeZone reads the
    zone/region ones, a claim's selector all); `claim` its `spec.claimRef`; `phase` its
    `status.phase`. Units: `capacity_bytes` bytes of `spec.capacity.storage`.
    """

    at_ms: EpochMs
    uid: str
    name: str
    resource_version: str
    storage_class: str = ""
    access_modes: tuple[str, ...] = ()
    capacity_bytes: Int64 = 0
    volume_mode: str = "Filesystem"
    labels: dict[str, str] = {}
    node_affinity: tuple[NodeSelectorTerm, ...] | None = None
    claim: ClaimRef | None = None
    phase: str = "Pending"
    is_deleting: bool = False
    csi: AttachableVolume | None = None
    """`spec.csi` (driver, volumeHandle), None when it is no CSI volume: what NodeVolumeLimits
    counts on every node, and what a VolumeAttachment of it counts as."""
    migrated: AttachableVolume | None = None
    """For an in-tree volume kube migrates (AWS EBS, GCE PD, Azure Disk, Cinder, Portworx), the
    CSI volume its translation gives; counted only on a node that has a CSINode. None
    otherwise, or when it cannot be translated."""
    volume_attributes_class: str = ""
    """`spec.volumeAttributesClassName` ("" when absent or null): VolumeBinding matches it to
    the claim's (`ClaimObserved.volume_attributes_class`). Absent in events recorded before it
    was read: none."""


class VolumeDeleted(msgspec.Struct, frozen=True, gc=False, tag="VolumeDeleted"):
    """A PersistentVolume was deleted."""

    at_ms: EpochMs
    uid: str
    name: str
    resource_version: str = ""


class StorageClassObserved(msgspec.Struct, frozen=True, gc=False, tag="StorageClassObserved"):
    """A StorageClass was listed, added or modified.

    `binding_mode` is `volumeBindingMode` (Immediate or WaitForFirstConsumer; the API server
    defaults it to Immediate); `allowed_topologies` the `allowedTopologies` terms, each
    `matchLabelExpressions` entry read as an In requirement (empty: every node).
    """

    at_ms: EpochMs
    uid: str
    name: str
    resource_version: str
    provisioner: str = ""
    binding_mode: str = "Immediate"
    allowed_topologies: tuple[NodeSelectorTerm, ...] = ()


class CSINodeObserved(msgspec.Struct, frozen=True, gc=False, tag="CSINodeObserved"):
    """A CSINode (`storage.k8s.io/v1`, named as its Node) was listed, added or modified.

    `limits` maps each driver of `spec.drivers` that has `allocatable.count` to that count: the
    most volumes of that driver the node may have attached (NodeVolumeLimits' `getVolumeLimits`).
    A node with a CSINode also has kube's in-tree volume migration on (`isCSIMigrationOn`).
    """

    at_ms: EpochMs
    uid: str
    name: str
    resource_version: str
    limits: dict[str, Int64] = {}


class CSINodeDeleted(msgspec.Struct, frozen=True, gc=False, tag="CSINodeDeleted"):
    """A CSINode was deleted (or vanished while the watch was down: a synthetic delete)."""

    at_ms: EpochMs
    uid: str
    name: str
    resource_version: str = ""


class AttachmentObserved(msgspec.Struct, frozen=True, gc=False, tag="AttachmentObserved"):
    """A VolumeAttachment (`storage.k8s.io/v1`) was listed, added or modified: `node` is
    `spec.nodeName`, `attacher` `spec.attacher` (the CSI driver), `volume`
    `spec.source.persistentVolumeName` ("" for an inline volume's attachment, which
    NodeVolumeLimits does not count)."""

    at_ms: EpochMs
    uid: str
    name: str
    resource_version: str
    node: str = ""
    attacher: str = ""
    volume: str = ""


class AttachmentDeleted(msgspec.Struct, frozen=True, gc=False, tag="AttachmentDeleted"):
    """A VolumeAttachment was deleted (or vanished while the watch was down)."""

    at_ms: EpochMs
    uid: str
    name: str
    resource_version: str = ""


class NamespaceObserved(msgspec.Struct, frozen=True, gc=False, tag="NamespaceObserved"):
    """A Namespace was listed, added or modified: its labels, which an inter-pod (anti-)affinity
    term's `namespaceSelector` matches (`PodAffinityTerm.namespace_selector`)."""

    at_ms: EpochMs
    uid: str
    name: str
    resource_version: str
    labels: dict[str, str] = {}


class NamespaceDeleted(msgspec.Struct, frozen=True, gc=False, tag="NamespaceDeleted"):
    """A Namespace was deleted (or vanished while the watch was down: a synthetic delete)."""

    at_ms: EpochMs
    uid: str
    name: str
    resource_version: str = ""


class StorageClassDeleted(msgspec.Struct, frozen=True, gc=False, tag="StorageClassDeleted"):
    """A StorageClass was deleted."""

    at_ms: EpochMs
    uid: str
    name: str
    resource_version: str = ""


class DisruptionBudgetObserved(msgspec.Struct, frozen=True, gc=False,
                               tag="DisruptionBudgetObserved"):
    """A PodDisruptionBudget (`policy/v1`) was listed, added or modified.

    `selector` is `spec.selector` as requirements (matchLabels read as In with one value);
    None or empty selects no pod, as kube-scheduler's preemption reads a PDB.
    `disruptions_allowed` is `status.disruptionsAllowed`; `disrupted_pods` the names in
    `status.disruptedPods` (already counted by the API server: evicting them again is no
    violation). What DefaultPreemption's `filterPodsWithPDBViolation` reads.
    """

    at_ms: EpochMs
    uid: str
    namespace: str
    name: str
    resource_version: str
    selector: tuple[NodeSelectorRequirement, ...] | None = None
    disruptions_allowed: Int64 = 0
    disrupted_pods: tuple[str, ...] = ()


class DisruptionBudgetDeleted(msgspec.Struct, frozen=True, gc=False,
                              tag="DisruptionBudgetDeleted"):
    """A PodDisruptionBudget was deleted."""

    at_ms: EpochMs
    uid: str
    namespace: str
    name: str
    resource_version: str = ""


class ClockTicked(msgspec.Struct, frozen=True, gc=False, tag="ClockTicked"):
    """The watcher's clock advanced; lets deadlines and backoffs expire in a quiet cluster."""

    at_ms: EpochMs


class MemberBound(msgspec.Struct, frozen=True, gc=False, tag="MemberBound"):
    """The binder bound one member of a placement that was then rolled back (binding accepted
    by the API server), before its GroupRolledBack.

    A placement whose every member bound is told by its GroupBound alone (each member on its
    planned node, the Placement's `members`); logs written before that also hold a MemberBound
    per member ahead of the GroupBound, at the same time, and readers take both forms.
    """

    at_ms: EpochMs
    decision_id: str
    group: str
    pod_uid: str
    node: str


class MemberBindFailed(msgspec.Struct, frozen=True, gc=False, tag="MemberBindFailed"):
    """The binder could not bind one member; `is_permanent` is False for retryable errors."""

    at_ms: EpochMs
    decision_id: str
    group: str
    pod_uid: str
    node: str
    reason: str
    is_permanent: bool


class GroupBound(msgspec.Struct, frozen=True, gc=False, tag="GroupBound"):
    """Every member of the placement `decision_id` is bound, each to the node the Placement
    names for it (`Placement.members`), as of `at_ms`: one event for the whole gang."""

    at_ms: EpochMs
    decision_id: str
    group: str


class GroupRolledBack(msgspec.Struct, frozen=True, gc=False, tag="GroupRolledBack"):
    """A placement could not complete before its deadline and was undone.

    `deleted_pods` are uids of members bound in this attempt that were deleted so that their
    controller recreates them; `failed_pod` is the uid of the first member that failed.
    """

    at_ms: EpochMs
    decision_id: str
    group: str
    reason: str
    failed_pod: str | None = None
    deleted_pods: tuple[str, ...] = ()


Event = (
    NodeObserved
    | NodeDeleted
    | PodObserved
    | PodDeleted
    | PodGroupObserved
    | PodGroupDeleted
    | ClockTicked
    | MemberBound
    | MemberBindFailed
    | GroupBound
    | GroupRolledBack
    | ClaimObserved
    | ClaimDeleted
    | VolumeObserved
    | VolumeDeleted
    | StorageClassObserved
    | StorageClassDeleted
    | DisruptionBudgetObserved
    | DisruptionBudgetDeleted
    | NamespaceObserved
    | NamespaceDeleted
    | CSINodeObserved
    | CSINodeDeleted
    | AttachmentObserved
    | AttachmentDeleted
)
"""Every event type; tagged by the JSON field `type`."""

Outcome = MemberBound | MemberBindFailed | GroupBound | GroupRolledBack
"""The events the binder publishes back into the EVENTS stream."""

EventKind = Literal["node", "pod", "podgroup", "clock", "outcome", "pvc", "pv",
                    "storageclass", "pdb", "namespace", "csinode", "attachment"]
