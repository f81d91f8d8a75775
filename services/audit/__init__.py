"""Audit: replay the event log, verify every decision, explain a pod, read the logs.

Layer: on top of the planner, the store and the bus (read-only). Re-derivation (rounds, replay,
verification) is the planner's own (`services.planner.rederive`); audit adds where to read a
log from (`db_log`, `nats_log`), where to stop (`until`) and what to show (`timeline`,
`explain`, the stories). Pure modules (`until`, `timeline`, `explain`, `times`) do no I/O.
Never writes to the live database or the live streams: it opens the database read-only and
reads streams with ephemeral, unacknowledged (ordered) consumers.
"""
