"""The watcher: the only reader of the Kubernetes API (docs/architecture.md).

Layer: watcher. `service` (list/watch → slim events → EVENTS, plus clock ticks), `slim` (pure
API JSON → events; `volumes`, `budgets`, `native` and `kueue` for their kinds), `messages`
(subjects and message ids), `recovery` (the seed read back from the log at start). Never
imports the planner or the binder; never writes to the API server.
"""
