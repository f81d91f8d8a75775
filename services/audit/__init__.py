"""Audit: replay the event log, verify every decision, explain a pod, read the logs.

Layer: on top of the planner core, the store and the bus (read-only). Pure modules (`log`,
`replay`, `verify`, `timeline`, `explain`, `times`) do no I/O; `db_log` and `nats_log` read the
recorded log. Never writes to the live database or the live streams: it opens the database
read-only and reads streams with ephemeral, unacknowledged (ordered) consumers.
"""
