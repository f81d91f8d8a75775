"""Where a placement's time went, from a kept gangsched database (`--keep`).

Layer: bench. `python -m bench.cluster.phases DB` (DB: a run kept with `--keep --work-dir W`,
`W/<kind>-gangsched/gangsched-data/gangsched.db`) prints, for singletons and gangs apart,
percentiles of the time between

- **created → seen**: the pod's creationTimestamp and the watcher's first event of it (watch
  delivery, the watcher's queue);
- **seen → planned**: that event and the event the planner planned at (queueing in the planner:
  backpressure, quorum, backoff);
- **planned → bound**: the plan point's event and the placement's GroupBound (publish, the
  binder's queue and its binds);

and how many placements awaited their outcome every 2 s (against `--max-placements-in-flight`).
Every time is the watcher's or the binder's wall clock as stored in the event (UTC epoch ms), so
the phases add up without clock skew between processes. py-spy shares were unreliable on the
saturated machine (more samples than CPU seconds); this reads what the pipeline recorded.
"""

from __future__ import annotations

import sqlite3
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from bench.cluster import kept
from bench.cluster.analysis import percentile
from services.contracts import codec
from services.contracts.decisions import Placement
from services.contracts.events import GroupBound, PodObserved

PHASES = ("created → seen", "seen → planned", "planned → bound")
BUCKET_MS = 2000


@dataclass(frozen=True)
class Traced:
    """One placement's times (UTC epoch ms): its latest member's creation and first sight, its
    plan point's event, and its GroupBound (None: never bound)."""

    members: int
    created_ms: int
    seen_ms: int
    planned_ms: int
    bound_ms: int | None


def read(path: str) -> list[Traced]:
    """The placements of the gangsched database at `path` (SQLite), in plan order.

    Raises sqlite3.Error when the file is not such a database."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        at_of: dict[int, int] = {}
        first: dict[str, tuple[int, int]] = {}
        bound: dict[str, int] = {}
        for seq, kind, at_ms, data in db.execute(
                "SELECT seq, type, at_ms, data FROM audit_events ORDER BY seq"):
            at_of[seq] = at_ms
            if kind == "PodObserved":
                pod = codec.decode_event(data)
                assert isinstance(pod, PodObserved)
                first.setdefault(pod.uid, (pod.created_at_ms, at_ms))
            elif kind == "GroupBound":
                done = codec.decode_event(data)
                assert isinstance(done, GroupBound)
                bound[done.decision_id] = at_ms
        traced = []
        for (data,) in db.execute("SELECT data FROM outbox ORDER BY plan_seq, position"):
            decision = codec.decode_decision(data)
            if not isinstance(decision, Placement) or decision.plan_seq not in at_of:
                continue
            times = [first[m.pod_uid] for m in decision.members if m.pod_uid in first]
            if not times:
                continue
            traced.append(Traced(len(decision.members), max(c for c, _ in times),
                                 max(s for _, s in times), at_of[decision.plan_seq],
                                 bound.get(decision.id)))
        return traced
    finally:
        db.close()


def phases(traced: Iterable[Traced]) -> dict[str, list[int]]:
    """Each phase's durations (ms) over the bound placements of `traced`, sorted."""
    spans: dict[str, list[int]] = {name: [] for name in PHASES}
    for t in traced:
        if t.bound_ms is None:
            continue
        for name, value in zip(PHASES, (t.seen_ms - t.created_ms, t.planned_ms - t.seen_ms,
                                         t.bound_ms - t.planned_ms), strict=True):
            spans[name].append(value)
    return {name: sorted(values) for name, values in spans.items()}


def in_flight(traced: Sequence[Traced], bucket_ms: int = BUCKET_MS) -> list[int]:
    """Placements planned and not yet bound at the end of each `bucket_ms` window, from the
    first plan point on (never-bound ones count until the last GroupBound)."""
    bound = [t for t in traced if t.bound_ms is not None]
    if not bound:
        return []
    start = min(t.planned_ms for t in traced)
    end = max(t.bound_ms for t in bound if t.bound_ms is not None)
    return [sum(1 for t in traced if t.planned_ms <= at
                and (t.bound_ms is None or t.bound_ms > at))
            for at in range(start + bucket_ms, end + bucket_ms, bucket_ms)]


def report(traced: Sequence[Traced]) -> str:
    """The text `main` prints."""
    lines = []
    for label, kind in (("singletons", [t for t in traced if t.members == 1]),
                        ("gangs", [t for t in traced if t.members > 1])):
        spans = phases(kind)
        lines.append(f"{label} ({sum(t.bound_ms is not None for t in kind)} bound of "
                     f"{len(kind)} placements), ms:")
        lines += [f"  {name:16} " + "  ".join(
            f"{label} {_ms(percentile(list(v), q))}" for label, q in (("p50", 50), ("p90", 90),
                                                                     ("max", 100)))
            for name, v in spans.items()]
    lines.append(f"awaiting their outcome, every {BUCKET_MS // 1000} s: "
                 + " ".join(str(n) for n in in_flight(traced)))
    return "\n".join(lines)


def _ms(value: float | None) -> str:
    return "     -" if value is None else f"{value:6.0f}"


def main(argv: Sequence[str] | None = None) -> int:
    """Print the report of one database; exit 1 with one line when it cannot be read."""
    return kept.main("python -m bench.cluster.phases", __doc__.split("\n\n")[0],
                     lambda path: report(read(path)), argv)


if __name__ == "__main__":
    sys.exit(main())
