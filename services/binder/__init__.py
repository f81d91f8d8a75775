"""The binder: the only writer to the Kubernetes API (docs/architecture.md).

Layer: binder. `service` (DECISIONS consumer), `placing` (one placement: check, bind, roll
back), `binding`, `rollback`, `reporter` (events, conditions, PodGroup status) are the shell;
`validation`, `statuses`, `messages`, `outcomes`, `ratelimit` are pure. Never imports the
planner or the watcher.
"""
