"""The planner: events in, all-or-nothing decisions out, from a state it can always re-derive.

Layer: service (beside the watcher and the binder, which it never imports). It reads the
EVENTS stream and writes the DECISIONS stream through `services.bus`, and keeps its state in its
own database through `services.store`; it never calls the Kubernetes API and never reads the
wall clock to plan (time comes from events).

Rooms:
- `core/`: the pure planner, `(state, events) -> (state, decisions)`, deterministic; mirrors
  kube-scheduler's filters and scores (with `services.fit`) and Coscheduling's gang rules.
- `rederive/`: rebuild state from a recorded log and re-plan at its plan points; the restart
  catch-up and `gangsched replay --verify` both run on it.
- `simulate/`: manifests played through the same core on a simulated clock.
- `service.py` (the consume, commit, publish, ack loop), `intake.py` (sorting a batch:
  skip, apply, dead-letter), `isolation.py` (refusing the events that make the core raise),
  `publication.py` (outbox and dead letters to NATS), `catchup.py` (restore at start),
  `snapshotting.py`, `scheduling_time.py`, `faults.py`, `ports.py` (what the shell needs of
  the store and the bus), `election.py` (leader election on `services.bus.lease`).

See docs/architecture.md for how an event flows from watch to bind.
"""
