"""The pace of the cyclic garbage collector in a long-running service.

Layer: runtime. CPython's default thresholds (700, 10, 10) collect the youngest generation
after every 700 net container allocations. A gangsched service holds a large long-lived heap
(the binder's cluster view, the planner's state, the watcher's caches) while it allocates and
frees short-lived objects by the hundred per message (JSON decoding, HTTP requests and
responses, NATS messages), which reference counting frees anyway; at the default pace the
binder spent 29% of its CPU collecting (2.6 of 9.1 CPU seconds in a workload-b run of the
cluster benchmark, 1,798 collections; the planner and watcher about 10% each). At
`THRESHOLDS` the same run collected 8 times in 0.2 s.

What stays the same: reference counting frees every object without a cycle at once; cycles
(tracebacks kept with exceptions, some asyncio and aiohttp objects) are still collected, later:
the oldest generation at most every `THRESHOLDS[0] * THRESHOLDS[1] * THRESHOLDS[2]` net
allocations (CPython also waits until a quarter of the long-lived objects are new).
"""

from __future__ import annotations

import gc

THRESHOLDS = (50_000, 20, 10)
"""Net container allocations before a young collection; young collections per middle one;
middle collections per full one (`gc.set_threshold`)."""


def pace_for_service() -> None:
    """Set `THRESHOLDS` for this process (idempotent; never raises)."""
    gc.set_threshold(*THRESHOLDS)
