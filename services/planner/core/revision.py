"""Which planner plans: recorded with every round, so an audit of a log recorded by another
planner says so instead of calling the difference a determinism bug.

Layer: planner core (pure constants).
"""

from __future__ import annotations

from services import __version__

CORE_REVISION = 46
"""Bump whenever the same log and config would give different decisions (placement, reasons, time,
backoff, status, message fields): replay verifies rounds of another revision only as "they
differ". A name in quotes is the docs/design-notes.md section that states the rule. 1: the first
revision recorded (2026-11-30). 2: a gang in backoff whose pending members changed is looked at
again and told the reason found now. 3: a partly bound gang (members bound below minMember, e.g.
bare pods a rollback kept) queues first and reserves the capacity it still needs every round, so
it completes before any other gang ("Deadlines, rollback and expiry"). 4: a mixed gang that
one-by-one placement leaves short is placed by a whole-gang search; host ports (NodePorts) and
matchFields are judged, no longer unsupported ("Whole-gang search", "NodePorts and
matchFields"). 5: required inter-pod (anti-)affinity is judged (InterPodAffinity), members of a
gang counting for each other. 6: no group is placed while `max_placements_in_flight` placements
await their outcome ("Deadlines, rollback and expiry"). 7: DoNotSchedule topology spread
constraints are judged (PodTopologySpread), no longer unsupported; members of a gang count for
each other, and such gangs may be searched; ScheduleAnyway constraints add PodTopologySpread's
score (weight 2) in one-by-one placement. 8: a gang that has run (bound + Succeeded members
reached minMember) counts its Succeeded members toward quorum, so replacements are placed
without waiting for minMember new pods; a PodGroup whose failed members were replaced is not
Failed; the Scheduled condition no longer counts Failed members as bound ("Members replaced
after the gang ran"). 9: pods with PersistentVolumeClaims are judged (VolumeRestrictions,
VolumeBinding, VolumeZone) instead of refused as unsupported; claims, volumes and storage
classes are applied to the state. 10: reasons as kube-scheduler v1.36 gives them (found by the
differential test): an untolerated taint is `node(s) had untolerated taint(s)`, one count for
all taints (was `{key: value}` each); `<count> <reason>` parts sorted as strings (were sorted by
reason); nodes outside the names `matchFields` pin a pod to are `node(s) didn't satisfy
plugin(s) [NodeAffinity]` before any other filter, and names that conflict read `pod affinity
terms conflict` without a count; sidecars' host ports count, plain init containers' are ignored.
11: a GroupBound outcome marks the gang as having run when it is applied, so a replacement is
placed however the events of its gang's run were batched. 12: the whole-gang search of a gang
with topology spread tries, within its budget, members without constraints first and then member
order when largest first finds nothing. 13: while the binders are busy (backpressure), a
starving or partly bound gang keeps holding its capacity and nodes. 14: a pod whose
`matchFields` names conflict reads `pod affinity terms conflict` even when a claim of it would
also keep it off every node (NodeAffinity's PreFilter runs before the volume plugins'; found by
the differential test). 15: a gang that cannot be placed preempts: it evicts whole gangs (or
pods) of strictly lower priority when its quorum fits once they are gone (a Preemption
decision), and the nominated capacity is held for it until it is placed or `nomination_seconds`
pass; a victim gang's condition reads Preempted, the preemptor's Preempting ("Preemption (whole
gangs, never futile)"). 16: preemption also weighs, per node, the reprieve over the units bound
there alone (in `MoreImportantPod` order, then smallest first), so a singleton evicts no more
pods than kube-scheduler's per-node choice; reprieve order is kube-scheduler's (budget
violators, found with allowances shared in importance order, first; then priority, then earliest
start time); found by the preemption differential test. A second per-node reprieve, without
budget bias and smallest first, wins when it evicts lower-priority or fewer pods at no more
violations. 17: preferred inter-pod (anti-)affinity is scored (InterPodAffinity's score, weight
2, in one-by-one placement): the pod's preferred terms, and counted pods' required affinity
(hard weight 1) and preferred terms matching it ("What placement honours" in README.md); a
preferred term with a non-empty `namespaceSelector` is ignored (not scored), the pod still
placed. 18: a preemptor counts lower-priority pods already terminating as gone (a victim of a
lapsed nomination still in its grace period is not joined by another), and a nomination ends
when its gang loses its PodGroup (deleted or invalid) instead of holding the room until its
deadline. 19: when more than 128 units could be victims, the ones weighed are whole nodes' worth
(lowest priority nodes first), no longer the 128 cheapest over the cluster, which emptied no
node. 20: a gang that ran and whose first members Succeeded may be a victim (it holds minMember
as quorum counts it); only a gang holding fewer is spared as partly bound. 21: nominations hold
their capacity highest priority gang first (was: by key), so room a victim frees on a node
nominated for two gangs goes to the higher one. 22: a nominated gang takes no starving or
partly-bound hold besides its nomination (it reserved other nodes it would never take). 23: a
nomination also puts its gang's members on their nominated nodes for every other pod's filters
(inter-pod affinity, spread, host ports), as kube-scheduler's addNominatedPods; a gang short of
its minResources preempts when the victims' room covers them (was: never preempted). 24: no group
is placed either while the placements in flight hold `max_members_in_flight` members together
(a placement is still made when none is in flight) ("Deadlines, rollback and expiry"). 25: a
gang short of quorum is told so (Rejection, Unschedulable condition) only once no member has
joined it for a second of event time (`quorum.QUIET_MS`), and again no sooner than 1 s doubling to
10 s after its previous telling; a gang whose members arrive in a burst is placed without a word
of waiting ("Quorum told once members stop arriving"). 26: a member joins its gang when first
observed and no later than 2 s after its creationTimestamp (`quorum.JOIN_LAG_MS`): one updated
again and again held its gang's telling forever. 27: the Waiting condition message no longer
counts the member pods (`gang <g>: <b> of <m> members bound`, and `; no member pod exists` when
none does), so members arriving no longer change the PodGroup's status one by one ("Quorum told
once members stop arriving"). 28: a nominated gang's reason counts the preempted pods still
there (it counted every one evicted), and says when they all left and the gang does not fit yet.
29: a PodGroup made easier to satisfy (smaller minMember or minResources, or no longer invalid)
lets its gang retry early as freed capacity does, instead of waiting out its backoff. 30: failed
early retries of a gang found unschedulable back off, 1 s doubling to 10 s (were: every second
while capacity freed) ("Early retries paced by the backoff"); a pending member that
can never be placed (invalid, unsupported, kept off every node by a volume PreFilter) no longer
keeps back the members that reach minMember without it ("A member that can never be placed waits
apart"); a starving or partly bound gang whose first members by name never fit holds capacity for
the members that do ("Anti-starvation room"). 31: a gang found unschedulable whose pending
members have required pod (anti-)affinity or DoNotSchedule topology spread constraints retries
early (1 s doubling to 10 s) when a pod newly counted on a node (bound, or reserved by a
placement) or a counted pod relabelled matches one of their affinity terms or spread selectors
(or, relabelled, leaves an anti-affinity term), as InterPodAffinity's and PodTopologySpread's
queueing hints requeue a pod, instead of waiting out its backoff ("A pod that may satisfy a
waiting gang wakes it"); once the whole-gang search places a quorum, the members it left out
are placed one by one on what is left, and members of gangs with required pod affinity or
DoNotSchedule spread are tried again while a pass places any, so only members that fit nowhere
are told "do not fit" ("Every member that fits joins the quorum"). 32: preferred node affinity is
scored (NodeAffinity's score, weight 2, in one-by-one placement): per node the sum of the weights
of the preferred terms it matches, normalized over the feasible nodes ("What placement honours" in
README.md); a pod whose preferred terms the API server would refuse waits with the field named. 33:
one wake or one freeing of capacity gives a gang found unschedulable at most one early retry,
"after its last attempt" judged in event order (a retry in the round that saw the change uses it
up; capacity freed in the millisecond of an attempt but after it still counts), so the retries no
longer depend on where plan points fall; a pod newly counted is judged on the labels it was counted
with (relabelled before the round, it still wakes); a pod wakes a gang only as kube-scheduler's
queueing hints queue it: matching all of a member's required affinity terms (relabelled: not all
before, all now), or relabelled so that a DoNotSchedule selector's match changes ("A pod that may
satisfy a waiting gang wakes it"); after the whole-gang search, a pass over the members left tries
only those a member placed since may matter to (as a wake judges a pod newly counted), and none is
made once quorum is out of reach: the reason of such a gang counts the members one by one or the
search placed ("Every member that fits joins the quorum"); preemption's reprieve over every
candidate unit at once is also made highest priority then smallest first, without budget bias, as
per node, and the choice's order picks between them (a spread gang evicted three pods of the
highest priority where two sufficed); a Node deleted counts as capacity freed (PodTopologySpread's
hint on Node Delete); an upgrade restart from a snapshot of revision 32 or before keeps the early
retry it was owed. 34: PreferNoSchedule taints are scored as TaintToleration scores them (weight 3,
the count of untolerated taints reverse-normalized over the feasible nodes) in one-by-one
placement, no longer a flat 300 per taint, so a node with two taints beside one with one loses 150,
not 300, against the preferences ("TaintToleration's score"); a pod whose preferred node-affinity
terms kube-scheduler cannot parse (`preferred_unparseable`: a Gt/Lt value no integer, a value no
label value) is placed only where one node passes its filters, else waits with NodeAffinity's
PreScore error, and the whole-gang search places it only where its filters leave one node (it was
refused for a non-integer Gt/Lt, placed for the other values) ("NodeAffinity, the preferred
part"). 35: a toleration whose operator is neither Exists nor Equal (Gt/Lt, which the API server
admits only with the alpha TaintTolerationComparisonOperators gate) tolerates nothing, as
`ToleratesTaint` with that gate off, its default in 1.36 (it was read as Equal). 36: a gang in
backoff behind busy binders no longer tells its members left out (invalid, unsupported, kept off
every node by a PreFilter) alone while its backoff runs: they are told with its failure (a note;
told again, as with idle binders, only when its pending members change, so one that joins is
told at once), and it sleeps until its backoff ends, as a round that skips it asleep tells
nothing; they are told alone once its backoff ends with the binders still busy. A restart,
which plans every group once more, made that lone Rejection where the planner that never
stopped made none, and its catch-up diverged ("What a restart plans again"). 37: a gang found
unschedulable is no longer retried on its timed backoff (1 s doubling to `backoff_max_seconds`):
only early, on a change it may fit after (capacity freed, a Node, volume object or PodGroup
changed, a pod its affinity or spread may need; now also a pending member added, changed or
deleted, its PodGroup created or changed in any way, a nomination that ended, and a starving
or partly bound gang's hold that ended or moved or whose gang's pending members or PodGroup
changed), when it starts starving, or 5 minutes after it was found so (or its backoff, if
longer), kube-scheduler's unschedulable-pool flush (`backoff.UNSCHEDULABLE_FLUSH_MS`); a
rolled-back or expired gang keeps its backoff. A gang whose nomination lapsed is tried again
at once. A failed early retry whose reason differs from the one told (`reasons.gist`: not only
in a starving gang's wait or the count of victims leaving) is told; one retried every round for
its hold or nomination only when that note changed. Only the gang that held
capacity in the last round is retried every round as the holder (a starving gang that would
not fit even on emptied nodes was, every round) ("Retried on a change, flushed after 5
minutes"). 38: a PodGroup's `Scheduled` condition counts as bound the members the binder
reported bound (GroupBound) and the watch does not show bound yet: it goes from Binding to
Scheduled at once, where it went back to Waiting ("0 of N members bound") until the watch
caught up, a status written once more per gang (more when the watch shows its members bound in
several batches) ("PodGroup status"). 39: a PodGroup observed again under the same uid with a
later creation time keeps the earliest creation of a live member (neither finished nor being
deleted), no earlier than the time it held and no later than the new one, so a gang keeps
its place in the queue: the watcher's Kueue PodGroup takes its creation from whichever member
it was seen through, and a later member's moved the gang behind groups created after it. 40:
a PodGroup observation older than the one held (resourceVersion, same uid) or of a uid deleted
within the tombstone window is dropped, and a delete removes a PodGroup or Node only of its own
uid (a retried publish stored late undid a larger minMember or removed a replacement); a
PodGroup deleted or replaced by another uid forgets that its gang ran, and Succeeded pods alone
no longer make a gang "run" (a bound member must be among them), so a PodGroup created again
beside its last run's Succeeded pods is a gang again; a group none of whose members waits
forgets when it began waiting, so members created later are not starving on arrival
("PodGroup lifecycle and late events"); an inter-pod term's non-empty `namespaceSelector`
selects pods by their Namespace's labels (NamespaceObserved), no longer unsupported on an
incoming pod nor every namespace on a bound one, and a Namespace's labels changing frees
capacity ("InterPodAffinity, the required part"). 41: inline GCE PD, AWS EBS, iSCSI and RBD
volumes are judged (VolumeRestrictions' disk conflicts: `node(s) had no available disk` where
a pod bound or reserved there, or a member placed before, mounts the same disk so that they
conflict), no longer unsupported; NodeVolumeLimits is judged (`node(s) exceed max volume
count` where a CSINode's per-driver attach limit would be exceeded by the volumes of the pods
there, VolumeAttachments no pod uses and the pod's own), and a CSINode's limits changing or a
VolumeAttachment deleted frees capacity ("Volumes"). 42: minResources are checked against
the free capacity of every node, not only of those passing the gang's filters, and ask a free
pod slot per minMember, as Coscheduling's `CheckClusterResource`; the reason ends `on N
node(s)` ("minResources"). 43: a gang whose minResources even nodes emptied of gangsched's pods
cannot meet reserves no capacity when starving; a Finished or Failed PodGroup with no live
member keeps its status (finished pods deleted no longer make it Pending); a PodGroup made anew
is told its status afresh; the `Scheduled` condition reads Scheduled once minMember are bound,
and Binding while its placement is bound, whatever members beyond it wait for ("PodGroup
status"); NodeDeclaredFeatures: a pod that requires a node feature (a RestartAllContainers
restart rule) is refused on nodes not declaring it, and a node declaring a new feature wakes
waiting groups ("NodeDeclaredFeatures"). 44: a PodGroup deleted, or made anew, forgets the
old object's `scheduleStartTime`: the new one's is its own first attempt ("PodGroup status");
a pod without labels matches no PodDisruptionBudget in preemption; a nomination ends once a
nominated node is gone or fails its member's non-resource filters, so the gang may preempt
again; a gang that needs more victims than the 128 weighed in full is weighed against every
candidate, no longer told preemption is not helpful ("Preemption"). 45: NodeResourcesFit's
score counts each container's missing cpu and memory request as 100m and 200 MiB, on the pod
and on the pods on the node (`PodObserved.nonzero_extra`), and past allocatable scores 0
(LeastAllocated) or full (MostAllocated) ("NodeResourcesFit's score counts missing requests");
NodeResourcesBalancedAllocation's score is added (weight 1) to the resource score of one-by-one
placement and the whole-gang search ("NodeResourcesBalancedAllocation"); NodeResourcesFit's
score is computed in int64 as Go's (the float product was a point low for some allocatable
amounts, e.g. 4900m), leaving out of the average a resource the node has none of and an
extended one the pod requests none of; ImageLocality's score is added (weight 1) in one-by-one
placement ("ImageLocality"); a claim and a volume match only when their
`volumeAttributesClassName` is the same (VolumeBinding's `FindMatchingVolume`); a native
PodGroup with a non-empty `spec.schedulingConstraints.topology` is never placed: its gang waits
with `PodGroup ns/g: unsupported constraint: spec.schedulingConstraints.topology`, and a
nomination it held lapses ("A native PodGroup's topology constraint"). 46: a native PodGroup's
topology constraint is honoured as kube-scheduler's TopologyPlacement: the gang is placed in one
value of the label `topology[0].key` (that of its members already scheduled; members on two values,
on a node without the label or on a node gone: `cannot determine domain for already scheduled pods:
...`; no node with the label: `no feasible placements found (no node has the label K)`), the domain
chosen by PodGroupPodsCount plus NodeResourcesFit's MostAllocated placement score, ties to the
lowest value; none fitting, it waits with `0/<n> placements are available, first placement status:
K=<lowest value>: ...`, that domain's nodes alone counted in `0/<m> nodes are available`; it never
preempts (nor does one whose `schedulingConstraints` is set but empty, as kube-scheduler's
DefaultPreemption) and a nomination it held lapses; a starving one holds capacity in one domain
("TopologyPlacement"); a native PodGroup whose pods are all another scheduler's gets no StatusUpdate
(kube-scheduler writes its `PodGroupScheduled` condition) ("PodGroup status")."""

PLANNER = f"gangsched {__version__} core {CORE_REVISION}"
"""This planner, as `rounds.planner` records it (at most 64 characters)."""
