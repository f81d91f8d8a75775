"""The pure planner core: (state, events) → (state, decisions), deterministic.

Layer: planner core. Imports only `services.contracts`, the standard library and NumPy; never
does I/O, reads a clock, draws random numbers or iterates a set or dict for ordering.

Public API (`plan`): `apply(state, event)`, `plan(state, config, plan_seq)`,
`step(state, events, config, plan_seq)`; `state`: `PlannerState`, `empty_state`,
`encode_state`, `decode_state`; `config`: `PlannerConfig`.

Modules: `state` (what is known), `apply` (events → state), `indexes` (membership and node
index, the state's never-encoded `derived` field), `derived` (builds and maintains them),
`capacity` (NumPy node index), `pods` (what a pod is to us),
`filters`, `scoring`, `placement` (greedy, undoable trials), `quorum`, `queue`, `backoff`,
`starvation`, `status`, `reasons` (every user-facing text), `attempt` (one group in one round),
`plan` (the round).
"""
