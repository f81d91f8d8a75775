"""The planner's tunables: scheduler name, timeouts, backoff, starvation bound, scoring.

Layer: planner core (pure data). Never reads the environment or files; the shell builds a
`PlannerConfig` from `services.config` settings and passes it in. A replay must use the same
config as the recorded run to re-derive the same decisions.
"""

from __future__ import annotations

import msgspec

from services.contracts import binding_window

LEAST_ALLOCATED = "least-allocated"
MOST_ALLOCATED = "most-allocated"
SCORING_STRATEGIES = (LEAST_ALLOCATED, MOST_ALLOCATED)


class PlannerConfig(msgspec.Struct, frozen=True):
    """How the planner plans.

    Units: every `*_seconds` in seconds. `scoring` is `least-allocated` (spread) or
    `most-allocated` (bin-pack), as kube-scheduler's NodeResourcesFit scoring strategies.
    `prefer_topology` asks gangs to land under one value of the node label `topology_key`.
    `starvation_seconds` is how long a gang may wait before it reserves the capacity it needs;
    `release_grace_seconds` is how long after a placement's deadline the planner itself releases
    reservations the binder never confirmed nor rolled back; it outlasts the binder's binding
    stop (`contracts.binding_window.BIND_GRACE_MS`, 60 s past the deadline, queue time not
    charged) by the rollback margin and its ack wait (6 s), so a crashed binder's Placement is
    redelivered and finished or rolled back before the planner gives it up.
    """

    scheduler_name: str = "gangsched"
    default_timeout_seconds: int = 60
    backoff_initial_seconds: float = 1.0
    backoff_max_seconds: float = 60.0
    starvation_seconds: float = 300.0
    scoring: str = LEAST_ALLOCATED
    topology_key: str = "topology.kubernetes.io/zone"
    prefer_topology: bool = False
    release_grace_seconds: float = binding_window.RELEASE_GRACE_MS / 1000
    score_resources: tuple[str, ...] = ("cpu", "memory")
    """Resources weighed (equally) by the scoring strategy, as kube-scheduler's default."""
    search_budget_steps: int = 1000
    """Most members tried on a node by one whole-gang search (`search`), when placing a mixed
    gang member by member fails; 0 turns the search off. Units: steps (a step costs about the
    scoring of one member over the nodes it fits: ~1 ms at 5,000 nodes, so a search that runs
    out of budget there costs ~1-2 s; most end in a few steps). The options take at most
    `services.config.limits.MAX_SEARCH_BUDGET_STEPS`: the search holds the planner's loop."""
    max_placements_in_flight: int = 512
    """Most placements handed to the binders and not yet bound, rolled back or expired; at the
    limit no group is placed until one settles (0 = no limit). Backpressure: placements beyond
    what the binders hold at once (512 each, `binder.service.MAX_PLACEMENTS_IN_FLIGHT`) would
    only wait in the stream, on capacity the planner no longer offers anyone, and be placed on
    an older view of the cluster. Groups held back are not told anything new (nothing failed)."""
    max_members_in_flight: int = 4096
    """Most members (pods) of those placements together; at the limit no group is placed until
    one settles (0 = no limit). A binder binds at most 2,048 members at once
    (`binder.service.MAX_MEMBERS_BINDING`), so placements are weighed by their size as
    well as counted: 512 gangs of 64 would otherwise queue 32,768 binds, minutes of work at
    the API server's pace, behind deadlines of a minute. The limit is checked before each
    placement, so the one that reaches it may pass it: a gang larger than the limit is placed
    in its turn (never starved), and then the others wait for room."""

    preemption: bool = True
    """Whether a gang that cannot be placed may evict pods of lower priority (`preemption`)."""
    preempt_other_schedulers: bool = False
    """Whether pods bound by other schedulers may be victims (default: gangsched's own only;
    docs/design-notes.md "Preemption")."""
    nomination_seconds: float = 120.0
    """How long the nodes a preemptor nominated stay held for it while its victims terminate
    (their grace period, 30 s by default, plus the binder's work), in seconds; then the hold
    lapses and the gang may preempt again."""

    def __post_init__(self) -> None:
        """Refuse settings the planner cannot honour.

        Raises:
            ValueError: unknown `scoring`, a negative or non-finite duration or budget, or a
                backoff cap below the first backoff (it would never be reached: every
                backoff would be the cap).
        """
        if self.scoring not in SCORING_STRATEGIES:
            raise ValueError(f"scoring must be one of {', '.join(SCORING_STRATEGIES)}, "
                             f"got {self.scoring!r}")
        durations = {"default_timeout_seconds": self.default_timeout_seconds,
                     "backoff_initial_seconds": self.backoff_initial_seconds,
                     "backoff_max_seconds": self.backoff_max_seconds,
                     "starvation_seconds": self.starvation_seconds,
                     "release_grace_seconds": self.release_grace_seconds,
                     "search_budget_steps": self.search_budget_steps,
                     "max_placements_in_flight": self.max_placements_in_flight,
                     "max_members_in_flight": self.max_members_in_flight,
                     "nomination_seconds": self.nomination_seconds}
        for name, value in durations.items():
            if not 0 <= value < float("inf"):  # nan fails every comparison
                raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
        if self.backoff_max_seconds < self.backoff_initial_seconds:  # as kube-scheduler's
            raise ValueError(f"backoff_max_seconds must be at least backoff_initial_seconds "
                             f"({self.backoff_initial_seconds!r}), got "
                             f"{self.backoff_max_seconds!r}")  # every digit: not 1e+06

