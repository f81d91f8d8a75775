"""How many of a run's observations told the planner something new, from a kept database.

Layer: bench. `python -m bench.cluster.observations DB` (DB: a run kept with `--keep
--work-dir W`, `W/<kind>-gangsched/gangsched-data/gangsched.db`) reads the events the planner
applied (`audit_events`) and sorts each observation (`*Observed`) of an object into

- **first**: the first event of its object (by uid) in the log;
- **changed**: it differs from its object's previous event in a field other than the time it
  was observed (`at_ms`) and its `resource_version`; the fields that changed are counted;
- **repeated**: it equals its object's previous event but for those two, the events the
  watcher leaves out since session 38 (`services.watcher.repeats`; its republish after ten
  minutes aside, which a benchmark run never reaches).

Printed per event type, with the other events' counts. A run of an older gangsched shows how
many repeats it published. A newer one still shows the repeats it publishes on purpose: what a
list yields (at a restart, after 410 Gone, every resync) and the Kueue PodGroup stated with each
member observed (JetStream keeps one per count and minute of creation within its duplicate
window).
"""

from __future__ import annotations

import sqlite3
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import msgspec

from bench.cluster import kept
from services.contracts import codec

_IGNORED = ("at_ms", "resource_version")


@dataclass
class Tally:
    """One event type's observations: `first`, `changed`, `repeated` counts, and how often
    each set of changed fields (names, sorted) came in the changed ones."""

    first: int = 0
    changed: int = 0
    repeated: int = 0
    fields: Counter[tuple[str, ...]] = field(default_factory=Counter)


def read(path: str) -> tuple[dict[str, Tally], Counter[str]]:
    """The tallies of the observations in the gangsched database at `path` (SQLite), by
    event type, and the count of every event type applied.

    Raises sqlite3.Error when the file is not such a database."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        tallies: dict[str, Tally] = {}
        counts: Counter[str] = Counter()
        last: dict[tuple[str, str], msgspec.Struct] = {}
        for kind, data in db.execute("SELECT type, data FROM audit_events ORDER BY seq"):
            counts[kind] += 1
            if not kind.endswith("Observed"):
                continue
            event = codec.decode_event(data)
            tally = tallies.setdefault(kind, Tally())
            key = (kind, str(getattr(event, "uid", "")))
            previous = last.get(key)
            last[key] = event
            if previous is None:
                tally.first += 1
                continue
            changed = tuple(sorted(
                name for name in event.__struct_fields__
                if name not in _IGNORED and getattr(event, name) != getattr(previous, name)))
            if changed:
                tally.changed += 1
                tally.fields[changed] += 1
            else:
                tally.repeated += 1
        return tallies, counts
    finally:
        db.close()


def report(tallies: dict[str, Tally], counts: Counter[str]) -> str:
    """The text `main` prints."""
    lines = [f"{'observation':20} {'first':>7} {'changed':>8} {'repeated':>9}"]
    for kind in sorted(tallies):
        t = tallies[kind]
        lines.append(f"{kind:20} {t.first:7} {t.changed:8} {t.repeated:9}")
        lines += [f"  changed {', '.join(names)}: {n}" for names, n in t.fields.most_common(5)]
    repeated = sum(t.repeated for t in tallies.values())
    observed = sum(t.first + t.changed + t.repeated for t in tallies.values())
    lines.append(f"repeated: {repeated} of {observed} observations; all events: "
                 + ", ".join(f"{kind} {n}" for kind, n in counts.most_common()))
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Print the report of one database; exit 1 with one line when it cannot be read."""
    return kept.main("python -m bench.cluster.observations", __doc__.split("\n\n")[0],
                     lambda path: report(*read(path)), argv)


if __name__ == "__main__":
    sys.exit(main())
