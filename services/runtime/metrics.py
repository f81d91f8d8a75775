"""Prometheus metrics of every gangsched service, in one registry served on `/metrics`.

Layer: runtime. Names follow Prometheus practice (`gangsched_*`, units in the name, `_total`
counters); services import this module and update the metrics; nothing here reads them back.
"""

from __future__ import annotations

import platform

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    Info,
    PlatformCollector,
    ProcessCollector,
)

from services import __version__

REGISTRY = CollectorRegistry(auto_describe=True)
ProcessCollector(registry=REGISTRY)
PlatformCollector(registry=REGISTRY)

_LATENCY_BUCKETS_SECONDS = (
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30,
)
_GROUP_BUCKETS_SECONDS = (0.01, 0.05, 0.1, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600, 1800)

build_info = Info(
    "gangsched_build",
    "This gangsched's version and the Python it runs on (gangsched_build_info, value 1).",
    registry=REGISTRY,
)
build_info.info({"version": __version__, "python": platform.python_version()})
task_restarts = Counter(
    "gangsched_task_restarts_total",
    "Supervised tasks restarted after they failed, by task name.",
    ["task"],
    registry=REGISTRY,
)
kube_requests = Counter(
    "gangsched_kube_requests_total",
    "Requests sent to the Kubernetes API server, by HTTP verb and response code (`error`: no "
    "response: a timeout or a broken connection). Watch streams count once, when opened.",
    ["verb", "code"],
    registry=REGISTRY,
)
podgroups = Gauge(
    "gangsched_podgroups",
    "PodGroups the planner knows, by the phase it last decided for them.",
    ["phase"],
    registry=REGISTRY,
)
scheduling_attempt_duration_seconds = Histogram(
    "gangsched_scheduling_attempt_duration_seconds",
    "Wall time of one planning round (apply a batch of events, then place), in seconds.",
    buckets=_LATENCY_BUCKETS_SECONDS,
    registry=REGISTRY,
)
schedule_attempts = Counter(
    "gangsched_schedule_attempts_total",
    "Group scheduling attempts by result: scheduled, unschedulable, error.",
    ["result"],
    registry=REGISTRY,
)
preemption_attempts = Counter(
    "gangsched_preemption_attempts_total",
    "Preemptions decided: one per gang that evicts lower-priority pods to fit (as "
    "kube-scheduler's scheduler_preemption_attempts_total).",
    registry=REGISTRY,
)
preemption_victims_chosen = Histogram(
    "gangsched_preemption_victims_chosen",
    "Pods one Preemption decision names as victims (as kube-scheduler's "
    "scheduler_preemption_victims).",
    buckets=(1, 2, 4, 8, 16, 32, 64),
    registry=REGISTRY,
)
pending_pods = Gauge(
    "gangsched_pending_pods",
    "Pods of gangsched waiting to be placed, as the planner last saw them.",
    registry=REGISTRY,
)
binder_members_binding = Gauge(
    "gangsched_binder_members_binding",
    "Members of the placements the binder is binding now (its member budget in use).",
    registry=REGISTRY,
)
binder_placements_waiting = Gauge(
    "gangsched_binder_placements_waiting",
    "Placements the binder holds that wait for room in its member budget to start binding.",
    registry=REGISTRY,
)
consumer_lag = Gauge(
    "gangsched_consumer_lag",
    "Messages in the stream not yet delivered to the consumer, as of its last fetch.",
    ["consumer"],
    registry=REGISTRY,
)
dead_letters = Counter(
    "gangsched_dead_letters_total",
    "Poisoned messages (undecodable, unknown type, invalid) moved to the dead-letter subject.",
    ["consumer"],
    registry=REGISTRY,
)
events_refused = Counter(
    "gangsched_events_refused_total",
    "Events the planner dead-lettered instead of applying, by reason class: undecodable, "
    "wrong_producer (a type on another producer's subjects), ahead_of_time (at_ms too far "
    "past the time NATS stored it), planning_error (the planner core raised on it).",
    ["consumer", "reason"],
    registry=REGISTRY,
)
consumer_repairs = Counter(
    "gangsched_consumer_repairs_total",
    "Durable consumers found tampered with and repaired, by consumer and reason: "
    "config_drift (its configuration differed from the one its service set), sequence_gap "
    "(the planner was delivered a sequence past one retention does not explain).",
    ["consumer", "reason"],
    registry=REGISTRY,
)
msg_id_collisions = Counter(
    "gangsched_msg_id_collisions_total",
    "Publishes whose Nats-Msg-Id another message already held, so JetStream acked them as "
    "duplicates without storing them (published again under a fallback id), by check: "
    "differs (the stored message is another one), unreadable (it could not be read back).",
    ["check"],
    registry=REGISTRY,
)
events_processed = Counter(
    "gangsched_events_processed_total",
    "Events applied by a consumer (redeliveries at or below the tracked sequence excluded).",
    ["consumer"],
    registry=REGISTRY,
)
decisions_published = Counter(
    "gangsched_decisions_published_total",
    "Decisions published to the DECISIONS stream, by decision type.",
    ["type"],
    registry=REGISTRY,
)
bind_duration_seconds = Histogram(
    "gangsched_bind_duration_seconds",
    "Wall time to bind every member of one placement, in seconds.",
    buckets=_LATENCY_BUCKETS_SECONDS,
    registry=REGISTRY,
)
rollbacks = Counter(
    "gangsched_rollbacks_total",
    "Placements rolled back by the binder.",
    registry=REGISTRY,
)
preemptions = Counter(
    "gangsched_preemptions_total",
    "Preemption decisions the binder carried out (each victim evicted or found needing "
    "nothing; decisions received after their deadline not counted).",
    registry=REGISTRY,
)
preemption_victims = Counter(
    "gangsched_preemption_victims_total",
    "Pods the binder deleted as preemption victims (the delete was accepted).",
    registry=REGISTRY,
)
preemption_victims_skipped = Counter(
    "gangsched_preemption_victims_skipped_total",
    "Preemption victims the binder did not delete, by reason: gone, replaced (another pod "
    "of that name), moved (not on the victim's node), finished, terminating (already being "
    "deleted), priority (not below the preemptor's), expired (decision past its deadline).",
    ["reason"],
    registry=REGISTRY,
)
podgroup_scheduling_duration_seconds = Histogram(
    "gangsched_podgroup_scheduling_duration_seconds",
    "Time from PodGroup creation to all of its minMember pods bound, in seconds.",
    buckets=_GROUP_BUCKETS_SECONDS,
    registry=REGISTRY,
)
outcome_lookups = Counter(
    "gangsched_binder_outcome_lookups_total",
    "Lookups of a group's newest outcome (one per placement), by where the answer came from: "
    "`view` (the binder's bus view, after one read of the stream's newest message shared by "
    "the lookups asked together) or `stream` (a read of the group's outcome subject).",
    ["source"],
    registry=REGISTRY,
)
reports_superseded = Counter(
    "gangsched_reports_superseded_total",
    "Rejections and status updates acknowledged unwritten because a newer one of the same "
    "group arrived first.",
    registry=REGISTRY,
)
events_deferred = Counter(
    "gangsched_events_deferred_total",
    "FailedScheduling events on pods owed because the binder's event budget was spent "
    "(written later at the budget's rate; the PodScheduled condition is written at once).",
    registry=REGISTRY,
)
events_dropped = Counter(
    "gangsched_events_dropped_total",
    "Owed FailedScheduling events dropped because too many were owed.",
    registry=REGISTRY,
)
