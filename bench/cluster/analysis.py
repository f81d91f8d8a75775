"""Metrics of one run from the recorder's per-pod times.

Layer: bench, pure. Times are seconds of `time.time()` as received on the watch (one clock).
- `pods_per_s`: bound pods / makespan, makespan = first pod seen (created) → last pod bound;
- gang latency: last member bound - last member created, over the gangs bound whole;
- partially placed gangs: after each bind (in receipt order), the number of gangs with
  0 < bound < minMember; its maximum, the number still partial at the end, and how long each
  gang was partial (first member bound → last member bound). A gang scheduler binds a gang with
  one POST per member, so every gang is partial for the few milliseconds of its binds
  (the transient window); only `partial_at_end` and the window lengths tell the schedulers apart;
- utilisation: requested CPU of bound pods / allocatable CPU of the cluster.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter, defaultdict
from datetime import datetime
from typing import Any

from bench.cluster.recorder import BOUND, CREATED, NODE, SCHEDULED, SEEN
from bench.cluster.workload import POD_CPU_MILLI, Workload

TIMELINE_POINTS = 400


def percentile(values: list[float], q: float) -> float | None:
    """Nearest-rank percentile (`q` in 0..100); None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]


def _stats_ms(values_s: list[float]) -> dict[str, float | None]:
    def ms(value: float | None) -> float | None:
        return None if value is None else round(value * 1000, 1)

    return {"p50_ms": ms(percentile(values_s, 50)), "p99_ms": ms(percentile(values_s, 99)),
            "max_ms": ms(max(values_s) if values_s else None), "count": len(values_s)}


def _api_time_s(text: Any) -> float | None:
    if not isinstance(text, str):
        return None
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def analyse(workload: Workload, pods: dict[str, list[Any]]) -> dict[str, Any]:
    """The metrics of one run. Shapes: `pods` as written by the recorder."""
    ours = {p.name: pods[p.name] for p in workload.pods if p.name in pods}
    bound = {name: r for name, r in ours.items() if r[BOUND] is not None}
    start_s = min(r[SEEN] for r in ours.values())
    end_s = max((r[BOUND] for r in bound.values()), default=start_s)
    makespan_s = end_s - start_s
    created_end_s = max(r[SEEN] for r in ours.values())
    result: dict[str, Any] = {
        "pods": len(workload.pods), "pods_seen": len(ours), "pods_bound": len(bound),
        "expected_bound": workload.expected_bound,
        "makespan_s": round(makespan_s, 3),
        "pods_per_s": round(len(bound) / makespan_s, 1) if makespan_s > 0 else None,
        "creation_s": round(created_end_s - start_s, 3),
        "creation_pods_per_s": round(len(ours) / max(created_end_s - start_s, 1e-9), 1),
        "bound_after_creation_end_s": round(max(0.0, end_s - created_end_s), 3),
        "utilisation_cpu": round(len(bound) * POD_CPU_MILLI
                                 / (workload.node_count * workload.node_cpu_milli), 4),
        "utilisation_slots": round(len(bound) / workload.capacity_pods, 4),
        "api_server_times": _api_makespan(bound.values(), ours.values()),
    }
    result |= _gangs(workload, ours)
    result["singleton_latency"] = _stats_ms(
        [r[BOUND] - r[SEEN] for p in workload.pods if p.gang is None
         for r in [ours.get(p.name)] if r is not None and r[BOUND] is not None])
    result["over_committed_nodes"] = _over_committed(workload, bound.values())
    result["timeline"] = timeline([r[BOUND] - start_s for r in bound.values()])
    return result


def _api_makespan(bound: Any, ours: Any) -> dict[str, Any]:
    """The same makespan from the API server's own timestamps (1 s resolution): first
    creationTimestamp → last PodScheduled lastTransitionTime; a cross-check of the watch times."""
    created = [t for r in ours if (t := _api_time_s(r[CREATED])) is not None]
    scheduled = [t for r in bound if (t := _api_time_s(r[SCHEDULED])) is not None]
    if not created or not scheduled:
        return {"makespan_s": None, "pods_with_condition": len(scheduled)}
    return {"makespan_s": max(scheduled) - min(created), "pods_with_condition": len(scheduled)}


def _gangs(workload: Workload, ours: dict[str, list[Any]]) -> dict[str, Any]:
    members: dict[str, list[list[Any]]] = defaultdict(list)
    for pod in workload.pods:
        if pod.gang is not None and pod.name in ours:
            members[pod.gang].append(ours[pod.name])
    latencies, windows = [], []
    for gang in workload.gangs:
        records = members.get(gang.name, [])
        times = [r[BOUND] for r in records if r[BOUND] is not None]
        if len(times) == gang.size:
            latencies.append(max(times) - max(r[SEEN] for r in records))
            windows.append(max(times) - min(times))
    partial = _partial_over_time(workload, ours)
    return {"gangs": len(workload.gangs), "gangs_bound_whole": len(latencies),
            "gang_latency": _stats_ms(latencies), "partial_window": _stats_ms(windows),
            **partial}


def _partial_over_time(workload: Workload, ours: dict[str, list[Any]]) -> dict[str, Any]:
    """Walk the binds in receipt order, counting gangs with 0 < bound < minMember."""
    size = {g.name: g.size for g in workload.gangs}
    binds = sorted((r[BOUND], p.gang) for p in workload.pods
                   if p.gang is not None and (r := ours.get(p.name)) and r[BOUND] is not None)
    counts: Counter[str] = Counter()
    partial = max_partial = 0
    max_at_s = None
    for at_s, gang in binds:
        counts[gang] += 1
        if counts[gang] == 1 and size[gang] > 1:
            partial += 1
        if counts[gang] == size[gang] and size[gang] > 1:
            partial -= 1
        if partial > max_partial:
            max_partial, max_at_s = partial, at_s
    stranded = sum(counts[g] for g in counts if counts[g] < size[g])
    return {"max_partial_gangs": max_partial, "partial_gangs_at_end": partial,
            "pods_in_partial_gangs_at_end": stranded,
            "max_partial_at_s": None if max_at_s is None else round(
                max_at_s - min(r[SEEN] for r in ours.values()), 3)}


def _over_committed(workload: Workload, bound: Any) -> int:
    per_node = Counter(r[NODE] for r in bound)
    return sum(1 for count in per_node.values() if count > workload.slots_per_node)


def timeline(offsets_s: list[float]) -> list[tuple[float, int]]:
    """`(seconds since the first creation, pods bound by then)`, at most TIMELINE_POINTS."""
    ordered = sorted(offsets_s)
    if not ordered:
        return []
    step = max(1, len(ordered) // TIMELINE_POINTS)
    points = [(round(ordered[i], 3), i + 1) for i in range(0, len(ordered), step)]
    if points[-1][1] != len(ordered):
        points.append((round(ordered[-1], 3), len(ordered)))
    return [(0.0, 0), *points]


def cpu_per_pod(metrics: dict[str, Any]) -> dict[str, float] | None:
    """CPU milliseconds per bound pod, by process and in total (every process of the run: the
    control plane, the scheduler, the creator and the recorder). On a CPU-bound machine the
    total bounds the rate: pods/s <= cores * 1000 / total."""
    used, bound = metrics.get("cpu_seconds"), metrics.get("pods_bound")
    if not used or not bound:
        return None
    per_pod = {name: round(seconds * 1000 / bound, 2) for name, seconds in used.items()}
    per_pod["total"] = round(sum(used.values()) * 1000 / bound, 2)
    return per_pod


def ratios(results: dict[str, dict[str, Any]], subject: str = "gangsched") -> dict[str, Any]:
    """`subject / other` for pods/s (higher is better) and gang latency p50/p99 (lower is
    better, so a ratio < 1 means the subject is faster)."""
    mine = results.get(subject)
    if not mine or "error" in mine:
        return {}
    out = {}
    for name, other in sorted(results.items()):
        if name == subject or "error" in other:
            continue
        out[name] = {
            "pods_per_s": _ratio(mine.get("pods_per_s"), other.get("pods_per_s")),
            "gang_latency_p50": _ratio(mine["gang_latency"]["p50_ms"],
                                       other["gang_latency"]["p50_ms"]),
            "gang_latency_p99": _ratio(mine["gang_latency"]["p99_ms"],
                                       other["gang_latency"]["p99_ms"]),
        }
    return out


def _ratio(a: float | None, b: float | None) -> float | None:
    return None if not a or not b else round(a / b, 3)


def ratio_summary(rounds: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The pods/s ratio subject / other of each round (`rounds`: `{"ratios": ratios(...)}` per
    round, in order), per other scheduler: `{"pods_per_s": [ratio of round 1, 2, ...; None
    where that round has none], "median", "min", "max"}` over the rounds that have one (None
    if none has). Only ratios of runs in the same round are combined: the machine's pace
    drifts between rounds, not much within one."""
    others = sorted({name for entry in rounds for name in entry.get("ratios", {})})
    summary: dict[str, dict[str, Any]] = {}
    for other in others:
        by_round = [entry.get("ratios", {}).get(other, {}).get("pods_per_s") for entry in rounds]
        known = [value for value in by_round if value is not None]
        summary[other] = {
            "pods_per_s": by_round,
            "median": round(statistics.median(known), 3) if known else None,
            "min": min(known, default=None), "max": max(known, default=None)}
    return summary
