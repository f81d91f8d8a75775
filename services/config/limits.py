"""The upper bounds of the gangsched count options, from what the parts they feed can carry.

Layer: config (pure constants). The options' ranges (`services/cli/options.py`) and the chart's
values.schema.json (checked against them by tests/unit/deploy/test_chart_values.py) use these;
the JetStream consumers and the Kubernetes client are built with the first two, so an option's
maximum cannot drift from the thing it protects. A value over its maximum is click's one-line
usage error, exit status 2.
"""

from __future__ import annotations

MAX_ACK_PENDING = 10_000
"""Deliveries a gangsched JetStream consumer holds unacknowledged at most (its
`max_ack_pending`, `services.bus.consuming.PullConsumer.open`): NATS hands out no more until
some are acknowledged. The planner acknowledges a batch only after committing it, so a
`--batch-size` above this could never fill (every fetch would wait out its timeout); and more
than this many placements in flight (`--max-placements-in-flight`) cannot even be delivered to
the binders: the rest wait in the stream while their deadlines run. Units: messages."""

MAX_MEMBERS_IN_FLIGHT = 150_000
"""The largest `--max-members-in-flight`: Kubernetes' supported limit of pods in one cluster
(150,000), so a larger value could never bind. Units: pods."""

KUBE_POOL_SIZE = 256
"""Connections each Kubernetes client keeps open at most (`services.kube.client.POOL_SIZE`,
aiohttp's connector limit, opened as needed): the most requests one client has in flight
(`REQUEST_SLOTS` of them, the rest kept for watches). A `--bind-concurrency` above it binds no
faster. Requests over the slots wait for one before their timeout starts
(`services.kube.client.KubeClient.request`): queued in the pool instead, 1,000 binds of 1 s
through 128 connections with a 5 s timeout had 360 time out.
Why 256: an API server short of CPU serves the requests in flight side by side, so a client's
share of it follows its share of those requests; with 112 binds in flight against the
benchmark creator's 256 POSTs, placements queued in the binder for 3-4 s. Workload a at 1,000
nodes, three runs each, alternated (session 29): 499.5 pods/s on average (494-503) with 256,
463 (421-525) with 128; gang latency p50 1.7-2.2 s against 3.0-3.6 s, p99 2.7-3.2 s against
4.1-4.7 s. With API Priority and Fairness (on by default since Kubernetes 1.20) the API server
queues a client's excess in its priority level; without it, more mutating requests than its
`--max-mutating-requests-inflight` (200 by default) are answered 429 and retried (client-go
does the same). Units: connections."""

MAX_SEARCH_BUDGET_STEPS = 10_000
"""The largest `--search-budget-steps`. The whole-gang search runs inside a planning round,
which holds the planner's event loop: while it runs, /healthz, the leader lease renewal and
NATS go unanswered. A search that runs out of its budget took 0.42 ms a step at 5,000 nodes
(about 4.2 s for 10,000 steps); at 1,000,000,000 steps a gang that cannot fit stalls the
planner for days (the chart's liveness probe, 6 failures 10 s apart, would kill it, and the
restarted planner plans the same batch again). Units: steps (a member tried on a node)."""

MAX_SNAPSHOT_INTERVAL_EVENTS = 10_000_000
"""The largest `--snapshot-interval-events` (0 = no bound). A restart re-plans the events
applied since the last snapshot, about 50,000 a second (bench/results/replay-1m.txt), before it
serves: 10,000,000 is some 3-4 minutes of catching up. Units: events."""
