"""Every user-facing reason the planner gives, in one place, carrying the numbers.

Layer: planner core (pure). The per-node wording mirrors kube-scheduler's FailedScheduling
messages (`0/3 nodes are available: 1 Insufficient cpu, 2 node(s) had untolerated
taint(s).`), so people and tools that read those keep working; a gang's reason is
prefixed with the gang and how many of its members fit. Never builds text anywhere else.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from services.contracts import ids
from services.fit import reasons as fit_reasons

# Per-node filter reasons (as the kube-scheduler plugins word them) live with the filters, in
# `services.fit.reasons`, shared with the binder.

HELD_FOR_GANG = "node(s) had capacity reserved for waiting gang {group}"

# Group reasons.
NODES_AVAILABLE = "0/{total} nodes are available: {reasons}."
NO_NODES = "0/0 nodes are available: no nodes are registered."
PREFILTER = "0/{total} nodes are available: {message}."
PRESCORE_FAILED = 'running PreScore plugin "{plugin}": {error}'
GANG_MEMBERS_FIT = "gang {group}: {fit} of {min_member} members fit{succeeded}; {nodes}"
SUCCEEDED_COUNTED = " ({succeeded} Succeeded after the gang ran)"
GANG_EXTRA_MEMBERS = (
    "gang {group}: minMember {min_member} reached; {unplaced} more member(s) do not fit; {nodes}"
)
GANG_QUORUM = (
    "gang {group}: {exist} of {min_member} members exist; waiting for quorum "
    "(minMember {min_member})"
)
GATED_NOTE = " ({gated} more scheduling-gated)"
GANG_MIN_RESOURCES = "gang {group}: minResources do not fit: {shortfalls} on {nodes} node(s)"
MIN_RESOURCES_SHORTFALL = "{resource} {requested} requested, {free} free"
POD_GROUP_NOT_FOUND = "PodGroup {group} not found"
POD_GROUP_INVALID = "PodGroup {group} is invalid: {reason}"
POD_INVALID = "pod {pod} is invalid: {reason}"
UNSUPPORTED = "unsupported constraint: {field}"
POD_GROUP_UNSUPPORTED = "PodGroup {group}: {reason}"
GANG_MEMBER_PREFIX = "gang {group}: pod {pod}: {reason}"
MEMBER_LEFT_OUT = "; pod {pod} waits apart (minMember does not need it): {reason}"
PRIORITIES_DIFFER = "; members have different priorities ({priorities}), the gang uses {used}"
ROLLED_BACK = "gang {group}: placement {decision} rolled back: {reason}"
PLACEMENT_EXPIRED = (
    "gang {group}: placement {decision} was neither bound nor rolled back {grace_seconds:g}s "
    "after its deadline; its reservations were released"
)
STARVING_HOLD = "; waited {waited_seconds:g}s, reserving capacity on {nodes} node(s) for this gang"
STRANDED_HOLD = ("; {bound} member(s) already bound: reserving capacity on {nodes} node(s) so this "
                 "gang completes before any other is placed")
SEARCH_EXHAUSTED = "; search budget of {steps} steps exhausted"
NEVER_FITS = ("; it would not fit even on nodes emptied of gangsched's pods, so it reserves no "
              "capacity")
PREEMPTING = ("; preempting {victims} lower-priority pod(s) of {units} group(s) on {nodes} node(s) "
              "(decision {decision}); the nodes are held for this gang until {deadline}")
NOMINATED = ("; waiting for {victims} preempted pod(s) to leave (decision {decision}); the nodes "
             "are held for this gang until {deadline}")
NOMINATED_LEFT = ("; the pods preempted for it left (decision {decision}) and it does not fit "
                  "yet; the nodes are held for this gang until {deadline}")
PREEMPTION_NOT_HELPFUL = ("; preemption: not helpful, the gang would not fit even with every "
                          "lower-priority pod it may evict gone, so nothing is evicted")
PREEMPTION_UNDER_WAY = ("; preemption: none needed, the room frees as lower-priority pods "
                        "terminate and pods preempted for other gangs leave")
PREEMPTED = ("preempted by {group} (priority {priority} > {victim_priority}) to make room on "
             "{nodes}; decision {decision}")
# kube-scheduler's DefaultPreemption PostFilter for a pod whose PodGroup has scheduling
# constraints (TopologyAwareWorkloadScheduling on, WorkloadAwarePreemption off by default)
PREEMPTION_CONSTRAINED = ("; preemption: not eligible due to placement-based pod group "
                          "scheduling limitation, so nothing is evicted")
SCHEDULING_GATED = "pod is scheduling-gated (spec.schedulingGates)"

# A native PodGroup's topology constraint (kube-scheduler's TopologyPlacementGenerator and
# `podGroupSchedulingPlacementAlgorithm`, worded as they are).
GANG_PLACEMENT = "gang {group}: {status}"
PLACEMENTS_UNAVAILABLE = "0/{placements} placements are available, first placement status: {status}"
PLACEMENT_STATUS = "{key}={value}: {status}"
NO_FEASIBLE_PLACEMENTS = "no feasible placements found (no node has the label {key})"
SCHEDULED_DOMAIN_UNKNOWN = "cannot determine domain for already scheduled pods: {error}"
SCHEDULED_NODE_NOT_FOUND = 'getting node for pod {pod}: nodeinfo not found for node name "{node}"'
SCHEDULED_NODE_UNLABELLED = "no topology domain found for pod {pod}"
SCHEDULED_DOMAINS_DIFFER = "more than 1 domain found for pod group: {first}, {second}"
NOT_PENDING = "pod is not Pending, so it is not scheduled"

# PodGroup `Scheduled` condition messages (status.derive), when no rejection explains the group.
GROUP_SCHEDULED = "gang {group}: {bound} members bound (minMember {min_member})"
GROUP_BINDING = "gang {group}: placement attempt {attempt} is being bound"
GROUP_WAITING = "gang {group}: {bound} of {min_member} members bound"
NO_MEMBER_POD = "; no member pod exists"


def node_reasons(total_nodes: int, counts: Mapping[str, int]) -> str:
    """`0/<n> nodes are available: <count> <reason>, ...`, sorted as kube-scheduler sorts them.

    Shapes: `counts` maps a per-node reason (constants above) to how many nodes gave it; a node
    may give several (one per insufficient resource).
    Source: as `framework.FitError.Error`: the `<count> <reason>` strings sorted as strings; a
    PreFilter rejection (`fit_reasons.PREFILTER_REASONS`) alone, without a count.
    """
    if total_nodes == 0:
        return NO_NODES
    prefilter = sorted(reason for reason in counts if reason in fit_reasons.PREFILTER_REASONS)
    if prefilter:
        return NODES_AVAILABLE.format(total=total_nodes, reasons=prefilter[0])
    parts = sorted(f"{count} {reason}" for reason, count in counts.items() if count > 0)
    return NODES_AVAILABLE.format(total=total_nodes, reasons=", ".join(parts))


def prefilter(total_nodes: int, message: str) -> str:
    """A pod a PreFilter keeps off every node (`0/<n> nodes are available: <message>.`, as
    kube-scheduler's FitError words a PreFilter rejection)."""
    return PREFILTER.format(total=total_nodes, message=message)


def prescore_failed(plugin: str, error: str) -> str:
    """A pod a PreScore plugin fails with an error (not a per-node reason), as kube-scheduler's
    `RunPreScorePlugins` words it in the pod's SchedulerError condition."""
    return PRESCORE_FAILED.format(plugin=plugin, error=error)


def gang_members_fit(group: str, fit: int, min_member: int, nodes: str,
                     succeeded: int = 0) -> str:
    """A gang that cannot reach minMember: how many fit (of them `succeeded` members that
    finished after the gang ran, `quorum.has_run`), then the first unplaced pod's nodes."""
    note = SUCCEEDED_COUNTED.format(succeeded=succeeded) if succeeded else ""
    return GANG_MEMBERS_FIT.format(group=group, fit=fit, min_member=min_member, nodes=nodes,
                                   succeeded=note)


def gang_extra_members(group: str, min_member: int, unplaced: int, nodes: str) -> str:
    """A gang past quorum with members beyond minMember that do not fit yet."""
    return GANG_EXTRA_MEMBERS.format(group=group, min_member=min_member, unplaced=unplaced,
                                     nodes=nodes)


def gang_quorum(group: str, exist: int, min_member: int, gated: int) -> str:
    """A gang with fewer usable members than minMember (gated pods mentioned, not counted)."""
    text = GANG_QUORUM.format(group=group, exist=exist, min_member=min_member)
    return text + (GATED_NOTE.format(gated=gated) if gated else "")


def gang_min_resources(group: str, shortfalls: list[str], nodes: int) -> str:
    """A gang whose minResources (and a pod slot per minMember) exceed the free capacity of
    the cluster's `nodes` nodes (Coscheduling's `resource gap`)."""
    return GANG_MIN_RESOURCES.format(group=group, shortfalls=", ".join(shortfalls),
                                     nodes=nodes)


def min_resources_shortfall(resource: str, requested: str, free: str) -> str:
    """One resource of a minResources shortfall, amounts already formatted."""
    return MIN_RESOURCES_SHORTFALL.format(resource=resource, requested=requested, free=free)


def pod_group_not_found(group: str) -> str:
    """A pod whose label names a PodGroup that does not exist (yet)."""
    return POD_GROUP_NOT_FOUND.format(group=group)


def pod_group_invalid(group: str, reason: str) -> str:
    """A PodGroup the watcher could not read; its members wait."""
    return POD_GROUP_INVALID.format(group=group, reason=reason)


def pod_invalid(pod: str, reason: str) -> str:
    """A pod whose spec the watcher could not read (e.g. an invalid quantity)."""
    return POD_INVALID.format(pod=pod, reason=reason)


def unsupported(field: str) -> str:
    """A pod asking for a constraint the planner does not implement: never silently ignored."""
    return UNSUPPORTED.format(field=field)


def pod_group_unsupported(group: str, field: str) -> str:
    """A PodGroup asking for a constraint the planner does not implement (`unsupported`, worded
    as a pod's): its members wait, never placed on a guess."""
    return POD_GROUP_UNSUPPORTED.format(group=group, reason=unsupported(field))


def gang_member(group: str, pod: str, reason: str) -> str:
    """A member-level reason (invalid, unsupported) that keeps the whole gang waiting."""
    return GANG_MEMBER_PREFIX.format(group=group, pod=pod, reason=reason)


def members_left_out(members: list[tuple[str, str]]) -> str:
    """Suffix for a gang planned without members that can never be placed as they are
    (invalid, unsupported, kept off every node by a PreFilter) and that minMember does not
    need: each `(pod, its own reason)`, in member order."""
    return "".join(MEMBER_LEFT_OUT.format(pod=pod, reason=reason) for pod, reason in members)


def priorities_differ(priorities: list[int], used: int) -> str:
    """Suffix for a gang whose members carry different priorities."""
    listed = ", ".join(str(value) for value in sorted(set(priorities), reverse=True))
    return PRIORITIES_DIFFER.format(priorities=listed, used=used)


def rolled_back(group: str, decision: str, reason: str) -> str:
    """A placement the binder rolled back."""
    return ROLLED_BACK.format(group=group, decision=decision, reason=reason)


def placement_expired(group: str, decision: str, grace_seconds: float) -> str:
    """A placement the binder never confirmed nor rolled back: released by the planner."""
    return PLACEMENT_EXPIRED.format(group=group, decision=decision, grace_seconds=grace_seconds)


_TICKING = (
    (re.compile(r"; waited [^,;]*s, reserving "), "; reserving "),
    (re.compile(r"; waiting for \d+ preempted pod\(s\) to leave "),
     "; waiting for preempted pod(s) to leave "),
)
"""The parts of a reason that change as time passes or victims leave while nothing else
does (`STARVING_HOLD`'s wait, `NOMINATED`'s count), and what `gist` puts in their place."""


def gist(reason: str) -> str:
    """`reason` without the counts that tick on while a gang waits the same way (how long a
    starving gang has waited, how many preempted pods are still leaving): two reasons with
    the same gist tell a user nothing new. Used to decide whether a failed early retry is told
    again (`attempt`)."""
    for pattern, replacement in _TICKING:
        reason = pattern.sub(replacement, reason)
    return reason


def starving_hold(waited_seconds: float, nodes: int) -> str:
    """Suffix for the gang that now reserves capacity against starvation."""
    return STARVING_HOLD.format(waited_seconds=waited_seconds, nodes=nodes)


def stranded_hold(bound: int, nodes: int) -> str:
    """Suffix for a partly bound gang (`quorum.is_stranded`) that now reserves capacity."""
    return STRANDED_HOLD.format(bound=bound, nodes=nodes)


def preempting(victims: int, units: int, nodes: int, decision: str, deadline: str) -> str:
    """Suffix for a gang that evicts pods to fit (`deadline` an ISO-8601 UTC time)."""
    return PREEMPTING.format(victims=victims, units=units, nodes=nodes, decision=decision,
                             deadline=deadline)


def nominated(victims: int, decision: str, deadline: str) -> str:
    """Suffix for a nominated gang (`deadline` ISO-8601 UTC): `victims` of its preemption are
    still leaving, or (0) all left and it does not fit yet."""
    if victims == 0:
        return NOMINATED_LEFT.format(decision=decision, deadline=deadline)
    return NOMINATED.format(victims=victims, decision=decision, deadline=deadline)


def preempted(group: str, priority: int, victim_priority: int, nodes: list[str],
              decision: str) -> str:
    """Why a pod (or gang) was evicted: the preemptor (`gang ns/name` or `pod ns/name`),
    priorities and nodes (sorted)."""
    namespace, name = ids.split_key(ids.GroupKey(group))
    preemptor = (f"pod {namespace}/{name.removeprefix(ids.SINGLETON_PREFIX)}"
                 if ids.is_singleton(ids.GroupKey(group)) else f"gang {group}")
    shown = ", ".join(nodes[:5]) + (f" and {len(nodes) - 5} more" if len(nodes) > 5 else "")
    return PREEMPTED.format(group=preemptor, priority=priority, victim_priority=victim_priority,
                            nodes=shown, decision=decision)


def search_exhausted(steps: int) -> str:
    """Suffix for a gang whose whole-gang search stopped at its budget, not proven infeasible."""
    return SEARCH_EXHAUSTED.format(steps=steps)


def held_for_gang(group: str) -> str:
    """The per-node reason for capacity that a starving gang reserves."""
    return HELD_FOR_GANG.format(group=group)


def group_scheduled(group: str, bound: int, min_member: int) -> str:
    """The condition message of a gang whose bound members reach minMember."""
    return GROUP_SCHEDULED.format(group=group, bound=bound, min_member=min_member)


def group_binding(group: str, attempt: int) -> str:
    """The condition message of a gang whose placement the binder is carrying out."""
    return GROUP_BINDING.format(group=group, attempt=attempt)


def group_waiting(group: str, bound: int, min_member: int, pods: int) -> str:
    """The condition message of a gang below minMember with nothing told and nothing being
    bound: its members still arriving (told once they stop: `quorum.told_from_ms`), or none
    left. The number of member pods is left out: counted, it changed the PodGroup's status
    with every arrival."""
    message = GROUP_WAITING.format(group=group, bound=bound, min_member=min_member)
    return message + NO_MEMBER_POD if pods == 0 else message


def no_feasible_placements(key: str) -> str:
    """No node carries the topology label `key`: kube-scheduler's `RunPlacementGeneratePlugins`
    status for no placement generated (`no feasible placements found`), the label named."""
    return NO_FEASIBLE_PLACEMENTS.format(key=key)


def scheduled_node_not_found(pod: str, node: str) -> str:
    """A member already scheduled to a node the cluster no longer has (TopologyPlacement's
    `getScheduledPodsTopologyDomain`, the snapshot's `Get` error)."""
    return SCHEDULED_DOMAIN_UNKNOWN.format(error=SCHEDULED_NODE_NOT_FOUND.format(pod=pod,
                                                                                node=node))


def scheduled_node_unlabelled(pod: str) -> str:
    """A member already scheduled to a node without the topology label."""
    return SCHEDULED_DOMAIN_UNKNOWN.format(error=SCHEDULED_NODE_UNLABELLED.format(pod=pod))


def scheduled_domains_differ(first: str, second: str) -> str:
    """Members already scheduled in two values of the topology label (`first` the one found
    first in member order)."""
    return SCHEDULED_DOMAIN_UNKNOWN.format(error=SCHEDULED_DOMAINS_DIFFER.format(
        first=first, second=second))


def gang_placement(group: str, status: str) -> str:
    """A gang no topology domain was generated for (`status`: why, as above)."""
    return GANG_PLACEMENT.format(group=group, status=status)


def placements_unavailable(group: str, placements: int, key: str, value: str,
                           reason: str) -> str:
    """A gang that fits in none of its `placements` topology domains: kube-scheduler's
    `0/<n> placements are available, first placement status: <status>`, the status that of
    the domain `key`=`value`, whose gang reason `reason` (`gang <group>: ...`) is given
    without its prefix."""
    status = PLACEMENT_STATUS.format(key=key, value=value,
                                     status=reason.removeprefix(f"gang {group}: "))
    return GANG_PLACEMENT.format(group=group, status=PLACEMENTS_UNAVAILABLE.format(
        placements=placements, status=status))
