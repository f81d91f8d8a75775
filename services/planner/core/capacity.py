"""The node index: every node's allocatable and free capacity as NumPy arrays, for vectorised fit.

Layer: planner core (pure; NumPy only). Built from `PlannerState.nodes` and `node_used`, then kept
current by `charge` as pods are bound, reserved and released. Rows are nodes sorted by name, so
`argmax` ties break by node name; columns are resource names sorted. Never encoded: rebuilt after
a snapshot is loaded or the node set changes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import TYPE_CHECKING, TypeAlias

import numpy as np
import numpy.typing as npt

from services.contracts.events import HostPort, NodeObserved, PodObserved
from services.fit import filters, pod_affinity
from services.planner.core.pod_lookup import PodLookup

if TYPE_CHECKING:
    from services.planner.core.volumes import Volumes

IntArray: TypeAlias = npt.NDArray[np.int64]
FloatArray: TypeAlias = npt.NDArray[np.float64]
BoolArray: TypeAlias = npt.NDArray[np.bool_]

Signature: TypeAlias = tuple[object, ...]
"""What the non-resource filters of a pod depend on (equal signatures filter alike)."""

PREFERRED_SUMS_KEPT = 4096
"""At most this many sets of preferred terms keep their sums (`NodeIndex.preferred_sums`);
past it the cache starts again (memory stays bounded however many distinct terms come)."""

PREFER_NO_SCHEDULE_PENALTY = 300
"""Rank taken per untolerated PreferNoSchedule taint where no normalization is made (the
whole-gang search's and a starving gang's hold's node ranking; TaintToleration has weight 3 of
100). One-by-one placement scores the taints as kube-scheduler does instead
(`scoring.taint_penalty`)."""


class StaticFit:
    """The non-resource filters of one pod signature over every node.

    Shapes: `mask[row]` True when the node passes; `untolerated[row]` how many of its
    PreferNoSchedule taints the pod does not tolerate (0 where it fails), `penalty[row]`
    `PREFER_NO_SCHEDULE_PENALTY` per such taint; `has_untolerated` whether any row has one;
    `reason_counts` the first failing filter's reason → number of nodes, of the filters of
    `filters.static_reason`; `lacking[row]` True where those pass but the node lacks a feature
    the pod requires (`filters.node_declared_features`: refused, False in `mask`), None when
    the pod requires none (NodeDeclaredFeatures' PreFilter Skip). kube-scheduler runs that
    filter last, so its reason is counted where every other filter passes
    (`placement.explain`), not here.
    """

    def __init__(self, mask: BoolArray, untolerated: IntArray, reason_counts: dict[str, int],
                 lacking: BoolArray | None = None) -> None:
        self.mask = mask
        self.untolerated = untolerated
        self.penalty: IntArray = PREFER_NO_SCHEDULE_PENALTY * untolerated
        self.has_untolerated = bool(untolerated.any())
        self.reason_counts = reason_counts
        self.lacking = lacking


class Hold:
    """Capacity a starving gang reserves for itself this round (anti-starvation).

    Shapes: `amounts[col, row]` taken from `NodeIndex.free` for the groups planned after the
    gang; `rows` the node rows it holds, sorted.
    """

    def __init__(self, group: str, amounts: IntArray, rows: list[int]) -> None:
        self.group = group
        self.amounts = amounts
        self.rows = rows


class CachedScores:
    """A pod shape's scores over every node, valid up to `changes[:position]` of its index."""

    def __init__(self, scores: FloatArray, position: int) -> None:
        self.scores = scores
        self.position = position


class NodeIndex:
    """Allocatable and free capacity per node and resource.

    Shapes: `alloc[col, row]` and `free[col, row]` (resource-major, so one resource over all
    nodes is contiguous); `names[row]` node names sorted; `resources[col]` resource names sorted;
    `changes` the rows whose free capacity changed, in order, so a pod shape's cached scores
    (`score_cache`, see `placement`) only recompute those rows. `port_users` maps the uid of
    every bound or reserved pod with host ports to (its row, its ports, whether it is ours), and
    `row_ports[row]` holds the same by row (`set_ports`; kept by `derived` and placement trials).
    `pod_users` maps the uid of every bound or reserved pod to (its row, the pod, whether it is
    ours), `anti_users` the same for those with required anti-affinity terms (`set_pod`:
    what InterPodAffinity counts), and `score_users` for those with preferred terms or
    required affinity terms (what InterPodAffinity's score reads of every pod,
    `pod_affinity.is_scored`), `disk_holders` those with inline disks by disk (kind, name)
    (what VolumeRestrictions' disk conflicts read, `PodObserved.disks`), and `volume_users`
    those with claims or migrated inline volumes (what NodeVolumeLimits counts), each change
    to it also appended to `volume_log` as (row, pod, is_ours, +1 or -1) for the round's
    `volume_limits.Limits` to follow (it empties the log when it starts).
    `extra[col, row]` is what the missing container requests of the pods charged there add to
    what NodeResourcesFit's score counts as requested (`PodObserved.nonzero_extra`, cpu and
    memory; never taken from `free`), `has_extra` whether any row has some (until rebuilt).
    Units: gangsched units (cpu millicores, bytes, counts). `free` may go negative when pods of
    other schedulers over-commit a node.
    """

    def __init__(self, nodes: list[NodeObserved], used: Mapping[str, Mapping[str, int]]) -> None:
        self.nodes = nodes
        self.names = [node.name for node in nodes]
        self.row = {name: row for row, name in enumerate(self.names)}
        names: set[str] = set()
        for node in nodes:
            names.update(node.allocatable)
        self.resources = sorted(names)
        self.col = {name: col for col, name in enumerate(self.resources)}
        self.alloc: IntArray = np.zeros((len(self.resources), len(nodes)), dtype=np.int64)
        self.free: IntArray = np.zeros_like(self.alloc)
        for row, node in enumerate(nodes):
            for name, amount in node.allocatable.items():
                self.alloc[self.col[name], row] = amount
        self.free[:] = self.alloc
        self.extra: IntArray = np.zeros_like(self.alloc)
        self.has_extra = False
        self.divisor: IntArray = _divisor(self.alloc)
        self._static: dict[Signature, StaticFit] = {}
        self._domains: dict[str, list[tuple[str, BoolArray]]] = {}
        self._label_codes: dict[str, tuple[list[str], IntArray]] = {}
        self.image_holders: dict[str, tuple[IntArray, IntArray]] | None = None
        """Per image name the rows reporting it and their sizes (`image_locality.holders`),
        built on first need, then kept current row by row as a node's images change
        (`update_node`)."""
        self.image_scores: dict[tuple[tuple[str, ...], tuple[str, ...]], FloatArray] = {}
        """ImageLocality's scores per set of pod images (`image_locality.scores`), dropped
        whenever a node's images change."""
        self.preferred_sums: dict[tuple[object, ...], IntArray] = {}
        """Per set of preferred node-affinity terms, their raw sums over every row
        (`node_affinity_score.Scorer`): they read only node labels and names, so they stay
        valid until a node's labels change (`update_node`; at most `PREFERRED_SUMS_KEPT`)."""
        self.changes: list[int] = []
        self.score_cache: dict[tuple[object, ...], CachedScores] = {}
        self.port_users: dict[str, tuple[int, tuple[HostPort, ...], bool]] = {}
        self.row_ports: dict[int, dict[str, tuple[HostPort, ...]]] = {}
        self.pod_users: dict[str, tuple[int, PodObserved, bool]] = {}
        self.anti_users: dict[str, tuple[int, PodObserved, bool]] = {}
        self.score_users: dict[str, tuple[int, PodObserved, bool]] = {}
        self.disk_holders: dict[tuple[str, str], dict[str, tuple[int, PodObserved, bool]]] = {}
        self.volume_users: dict[str, tuple[int, PodObserved, bool]] = {}
        self.volume_log: list[tuple[int, PodObserved, bool, int]] = []
        self.volume_cache: dict[str, tuple[PodObserved, tuple[object, ...], dict[str, str]]] = {}
        """The volumes each counted pod counts (`volume_limits`), kept across rounds: uid → the
        pod observed, the storage objects they were read from, the volumes."""
        self.lookup = PodLookup()
        """`pod_users` by label and anti-affinity anchor (`pod_lookup`)."""
        self._domain_rows: dict[str, dict[str, BoolArray]] = {}
        self.volumes: Volumes | None = None
        """The volume filters of the current round (`attempt.Round` sets them)."""
        self.namespaces: pod_affinity.Namespaces = {}
        """The Namespaces by name, whose labels a pod term's `namespaceSelector` reads
        (`derived.ensure` sets the planner state's own, kept current by `apply`)."""
        for row, node in enumerate(nodes):
            self._add(row, used.get(node.name, {}), -1)
        self.changes.clear()

    def __len__(self) -> int:
        return len(self.names)

    def _add(self, row: int, amounts: Mapping[str, int], sign: int) -> None:
        for name, amount in amounts.items():
            col = self.col.get(name)
            if col is not None:
                self.free[col, row] += sign * amount
        self.changes.append(row)

    def take(self, row: int, vec: IntArray, extra: IntArray | None = None) -> None:
        """Take a request vector from one row's free capacity (a placement trial), and count
        the pod's non-zero `extra` (`extra_vector`) there."""
        self.free[:, row] -= vec
        if extra is not None:
            self.extra[:, row] += extra
            self.has_extra = True
        self.changes.append(row)

    def give(self, row: int, vec: IntArray, extra: IntArray | None = None) -> None:
        """Give a request vector (and the pod's non-zero `extra`) back to one row (a trial
        rolled back)."""
        self.free[:, row] += vec
        if extra is not None:
            self.extra[:, row] -= extra
        self.changes.append(row)

    def extra_vector(self, pod: PodObserved, is_placed: bool = False) -> IntArray | None:
        """The pod's `nonzero_extra` as a column vector (None: it has none); `is_placed`: what
        counts for it as the pod being placed (`nonzero_own` where it differs)."""
        amounts = (pod.nonzero_own if is_placed and pod.nonzero_own is not None
                   else pod.nonzero_extra)
        return self.vector(amounts)[0] if amounts else None

    def shift(self, amounts: IntArray, sign: int) -> None:
        """Take (`sign` 1) or give back (-1) capacity on every row; drops cached scores."""
        self.free -= sign * amounts
        self.forget_scores()

    def forget_scores(self) -> None:
        """Drop every cached score (after a change too wide to catch up row by row)."""
        self.score_cache.clear()
        self.changes.clear()

    def charge(self, node: str, requests: Mapping[str, int], sign: int,
               extra: Mapping[str, int] | None = None) -> None:
        """Take (`sign` 1) or give back (`sign` -1) a pod's requests on `node`, if indexed, and
        count (or stop counting) its non-zero `extra` (`PodObserved.nonzero_extra`) there."""
        row = self.row.get(node)
        if row is not None:
            self._add(row, requests, -sign)
            if extra:
                self.count_extra(row, extra, sign)

    def count_extra(self, row: int, extra: Mapping[str, int], sign: int) -> None:
        """Count (`sign` 1) or stop counting (-1) a pod's non-zero `extra` on `row`."""
        for name, amount in extra.items():
            col = self.col.get(name)
            if col is not None:
                self.extra[col, row] += sign * amount
                self.has_extra = True

    def covers(self, node: NodeObserved) -> bool:
        """Whether an update of an indexed node can be applied in place (no new resource)."""
        return node.name in self.row and all(name in self.col for name in node.allocatable)

    def update_node(self, node: NodeObserved) -> None:
        """Apply a changed Node in place (`covers(node)` must hold); when what the filters and
        scores read of it changed (labels, taints, readiness, cordon, declared features), every
        cache built from them is dropped."""
        row = self.row[node.name]
        old = self.nodes[row]
        for col, name in enumerate(self.resources):
            delta = node.allocatable.get(name, 0) - old.allocatable.get(name, 0)
            self.alloc[col, row] += delta
            self.free[col, row] += delta
        self.divisor[:, row] = _divisor(self.alloc[:, row])
        self.nodes[row] = node
        self.changes.append(row)
        if old.images != node.images:
            if self.image_holders is not None:
                _rehold(self.image_holders, row, node_image_sizes(old), node_image_sizes(node))
            self.image_scores.clear()
        if (old.labels, old.taints, old.is_ready, old.is_unschedulable,
                old.declared_features) != (node.labels, node.taints, node.is_ready,
                                           node.is_unschedulable, node.declared_features):
            self._static.clear()
            self._domains.clear()
            self._label_codes.clear()
            self.preferred_sums.clear()
            self._domain_rows.clear()
            self.forget_scores()

    def set_ports(self, uid: str, node: str | None, ports: tuple[HostPort, ...],
                  is_ours: bool = True) -> None:
        """Record that pod `uid` holds `ports` on `node` (None or no ports: holds none)."""
        old = self.port_users.pop(uid, None)
        if old is not None:
            users = self.row_ports[old[0]]
            del users[uid]
            if not users:
                del self.row_ports[old[0]]
        row = None if node is None else self.row.get(node)
        if row is not None and ports:
            self.port_users[uid] = (row, ports, is_ours)
            self.row_ports.setdefault(row, {})[uid] = ports

    def set_pod(self, uid: str, node: str | None, pod: PodObserved | None,
                is_ours: bool = True) -> None:
        """Record that `pod` is bound or reserved on `node` (None: on no indexed node)."""
        old = self.pod_users.pop(uid, None)
        if old is not None:
            self.lookup.remove(uid, old[1])
            for disk in {(disk.kind, disk.name) for disk in old[1].disks} if old[1].disks else ():
                holders = self.disk_holders[disk]
                del holders[uid]
                if not holders:
                    del self.disk_holders[disk]
        self.anti_users.pop(uid, None)
        self.score_users.pop(uid, None)
        old_volumes = self.volume_users.pop(uid, None)
        if old_volumes is not None:
            self.volume_log.append((old_volumes[0], old_volumes[1], old_volumes[2], -1))
        row = None if node is None else self.row.get(node)
        if row is not None and pod is not None:
            self.pod_users[uid] = (row, pod, is_ours)
            self.lookup.add(uid, pod)
            if pod.pod_anti_affinity:
                self.anti_users[uid] = (row, pod, is_ours)
            if pod_affinity.is_scored(pod):
                self.score_users[uid] = (row, pod, is_ours)
            for disk in {(disk.kind, disk.name) for disk in pod.disks} if pod.disks else ():
                self.disk_holders.setdefault(disk, {})[uid] = (row, pod, is_ours)
            if pod.volume_claims or pod.migrated_volumes:
                self.volume_users[uid] = (row, pod, is_ours)
                self.volume_log.append((row, pod, is_ours, 1))

    def domain_rows(self, key: str, value: str) -> BoolArray | None:
        """The rows whose label `key` is `value` (None: no such row)."""
        by_value = self._domain_rows.get(key)
        if by_value is None:
            by_value = self._domain_rows[key] = dict(self.domains(key))
        return by_value.get(value)

    def ports_on(self, row: int, only_pinned: bool = False) -> tuple[HostPort, ...]:
        """Every host port in use on `row` (`only_pinned`: of other schedulers' pods only)."""
        users = self.row_ports.get(row)
        if not users:
            return ()
        return tuple(port for uid in sorted(users) for port in users[uid]
                     if not (only_pinned and self.port_users[uid][2]))

    def ports_free(self, ports: tuple[HostPort, ...]) -> BoolArray:
        """Rows where none of `ports` collides with a port in use (as NodePorts)."""
        mask = np.ones(len(self.names), dtype=np.bool_)
        if ports:
            for row in self.row_ports:
                mask[row] = filters.node_ports(ports, self.ports_on(row)) is None
        return mask

    def vector(self, requests: Mapping[str, int]) -> tuple[IntArray, list[int], list[str]]:
        """A request as a column vector, the columns it asks for, and resources no node has.

        Shapes: `(vec[col], cols with amount > 0, missing resource names sorted)`.
        """
        vec = np.zeros(len(self.resources), dtype=np.int64)
        cols: list[int] = []
        missing: list[str] = []
        for name, amount in sorted(requests.items()):
            if amount <= 0:
                continue
            col = self.col.get(name)
            if col is None:
                missing.append(name)
            else:
                vec[col] = amount
                cols.append(col)
        return vec, cols, missing

    def fits(self, vec: IntArray, cols: list[int], rows: IntArray | None = None) -> BoolArray:
        """Rows (all, or `rows`) whose free capacity holds `vec` (as NodeResourcesFit)."""
        mask = np.ones(len(self.names) if rows is None else len(rows), dtype=np.bool_)
        for col in cols:
            free = self.free[col] if rows is None else self.free[col][rows]
            mask &= free >= vec[col]
        return mask

    def fits_row(self, row: int, vec: IntArray, cols: list[int]) -> bool:
        """`fits` for one row."""
        free = self.free
        return all(int(free[col, row]) >= int(vec[col]) for col in cols)

    def domains(self, label: str) -> list[tuple[str, BoolArray]]:
        """The values of node label `label`, sorted, each with the rows that carry it."""
        cached = self._domains.get(label)
        if cached is None:
            rows: dict[str, list[int]] = {}
            for row, node in enumerate(self.nodes):
                value = node.labels.get(label)
                if value is not None:
                    rows.setdefault(value, []).append(row)
            cached = []
            for value in sorted(rows):
                mask = np.zeros(len(self.nodes), dtype=np.bool_)
                mask[rows[value]] = True
                cached.append((value, mask))
            self._domains[label] = cached
        return cached

    def label_codes(self, label: str) -> tuple[list[str], IntArray]:
        """The distinct values of `label` over the nodes, sorted, and per row the position of
        its value there (-1: the node lacks the label), cached until a node's labels change.

        Shapes: `codes[row]` in -1..len(values) - 1, so `hits[codes]` maps a per-value verdict
        with the absent one appended (`hits[-1]`) onto every row.
        """
        cached = self._label_codes.get(label)
        if cached is None:
            values = sorted({node.labels[label] for node in self.nodes if label in node.labels})
            position = {value: i for i, value in enumerate(values)}
            codes: IntArray = np.array([position[node.labels[label]] if label in node.labels
                                        else -1 for node in self.nodes], dtype=np.int64)
            cached = self._label_codes[label] = (values, codes)
        return cached

    def static_fit(self, pod: PodObserved) -> StaticFit:
        """The non-resource filters of `pod` over every node (cached per signature)."""
        key = signature(pod)
        cached = self._static.get(key)
        if cached is None:
            cached = self._static[key] = self._compute_static(pod)
        return cached

    def _compute_static(self, pod: PodObserved) -> StaticFit:
        """`StaticFit` of `pod`: each node judged by `filters.static_reason`, then, for a pod
        that requires node features, by `filters.node_declared_features` (`lacking`)."""
        count = len(self.nodes)
        mask = np.zeros(count, dtype=np.bool_)
        untolerated = np.zeros(count, dtype=np.int64)
        lacking = np.zeros(count, dtype=np.bool_) if pod.required_features else None
        counts: Counter[str] = Counter()
        for row, node in enumerate(self.nodes):
            reason = filters.static_reason(pod, node)
            if reason is not None:
                counts[reason] += 1
            elif lacking is not None and filters.node_declared_features(pod, node) is not None:
                lacking[row] = True
            else:
                mask[row] = True
                untolerated[row] = filters.prefer_no_schedule_count(pod, node)
        return StaticFit(mask, untolerated, dict(counts), lacking)


def node_image_sizes(node: NodeObserved) -> dict[str, int]:
    """Every name the node reports an image under, with that image's size (bytes; a name
    reported twice: the first)."""
    sizes: dict[str, int] = {}
    for image in node.images:
        for name in image.names:
            sizes.setdefault(name, image.size_bytes)
    return sizes


def _rehold(holders: dict[str, tuple[IntArray, IntArray]], row: int, old: dict[str, int],
            new: dict[str, int]) -> None:
    """Update `NodeIndex.image_holders` for one row whose images went from `old` to `new`
    (names to sizes): only the names either lists are touched."""
    for name in set(old) | set(new):
        if old.get(name) == new.get(name):
            continue
        rows, sizes = holders.get(name, (np.zeros(0, dtype=np.int64),
                                         np.zeros(0, dtype=np.int64)))
        keep = rows != row
        rows, sizes = rows[keep], sizes[keep]
        if name in new:
            rows = np.append(rows, row)
            sizes = np.append(sizes, new[name])
        if len(rows):
            holders[name] = (rows, sizes)
        else:
            holders.pop(name, None)


def _divisor(alloc: IntArray) -> IntArray:
    """Allocatable, 1 where a node has none (the scores leave that resource out): what the
    scores divide by, never 0."""
    divisor: IntArray = np.where(alloc > 0, alloc, 1)
    return divisor


def signature(pod: PodObserved) -> Signature:
    """What `filters.static_reason`, `filters.node_declared_features` and the taint penalty
    read from a pod (a cache key only: equal pods whose selector dicts differ in order get two
    equal entries)."""
    return (tuple(pod.node_selector.items()), pod.required_affinity, pod.tolerations,
            pod.node_name, pod.required_features)


def build(nodes: Mapping[str, NodeObserved], used: Mapping[str, Mapping[str, int]]) -> NodeIndex:
    """An index of `nodes` (rows sorted by name) with `used` already taken from free."""
    return NodeIndex([nodes[name] for name in sorted(nodes)], used)
