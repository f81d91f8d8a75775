"""The `gangsched` command: every way in, and the composition of the services in processes.

Layer: the top; it may import every other package and nothing imports it. `entry.py` is the
console script (a Ctrl-C while it starts is held for the services' shutdown), `main.py` declares
the commands, `options.py` turns flags and `GANGSCHED_*` variables into `Settings`, `serve.py`
runs watcher, planner and binder (some or all) under supervision with health and metrics,
`run_processes.py` and `child.py` run `gangsched run`'s three services in child processes,
`audit.py` with `replaying.py`, `explaining.py`, `following.py` and `audit_view.py` are
`replay`, `explain` and `decisions`, `simulate.py` is `simulate`. Expected failures (bad
input, NATS or the database unreachable, schema behind) end with one clear line and a non-zero
exit, never a traceback.
"""
