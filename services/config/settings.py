"""The settings of the gangsched services, with units and defaults.

Layer: config. Pure data; the CLI (`services/cli`) maps every field to a flag `--field-name`
and an environment variable `GANGSCHED_FIELD_NAME`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from services.config import paths
from services.contracts.signing import DecisionKey


@dataclass(frozen=True)
class BusSettings:
    """NATS JetStream connection and stream settings (streams in `services.bus.streams`).

    Units: `max_age_seconds` and `duplicate_window_seconds` in seconds (0 = unlimited age).
    `url` None means: start an embedded nats-server in the data directory (`run` only).
    `shorten_retention`: consent to shorten the max age of streams holding messages (their
    older messages are then deleted; `streams.ensure_stream`).
    """

    url: str | None = None
    prefix: str = "gangsched"
    replicas: int = 1
    max_age_seconds: float = 7 * 24 * 3600
    duplicate_window_seconds: float = 120.0
    user: str | None = None
    password: str | None = None
    creds_file: Path | None = None
    shorten_retention: bool = False


@dataclass(frozen=True)
class StoreSettings:
    """State store URL: `sqlite+aiosqlite:///path.db` (default, embedded) or
    `postgresql+asyncpg://user:pass@host/db`. None means SQLite in the data directory."""

    url: str | None = None


@dataclass(frozen=True)
class KubeSettings:
    """Kubernetes API access: in-cluster credentials, else `kubeconfig` (else ~/.kube/config).

    Units: `request_timeout_seconds` in seconds. No client-side rate limit (no QPS/burst): the
    binder bounds its own concurrency.
    """

    kubeconfig: Path | None = None
    context: str | None = None
    request_timeout_seconds: float = 30.0
    watch_timeout_seconds: int = 300


@dataclass(frozen=True)
class WatcherSettings:
    """Watcher behaviour. Units: `tick_seconds` in seconds between ClockTicked events.

    `group_apis`: the PodGroup API groups read (`scheduling.x-k8s.io`, Coscheduling's CRD;
    `scheduling.k8s.io`, the native v1alpha2 PodGroup and pods' `spec.schedulingGroup`).
    """

    tick_seconds: float = 1.0
    group_apis: tuple[str, ...] = ("scheduling.x-k8s.io",)


@dataclass(frozen=True)
class PlannerServiceSettings:
    """Planner shell behaviour. Units: `fetch_timeout_seconds` seconds; `batch_size` messages
    (at most `limits.MAX_ACK_PENDING`, the most its consumer is delivered unacknowledged).

    `leader_election`: serve only while holding the NATS KV leader lease (several planners,
    one active); `leader_lease_seconds` is the lease TTL and `leader_retry_seconds` the renewal
    and take-over attempt interval, both in seconds (see `services.runtime.election`).
    `snapshot_interval_seconds` (wall clock; 0 = every batch) and `snapshot_interval_events`
    (0 = no bound): how often the state snapshot is written; a restart replays the batches
    committed after it (see `services.planner.snapshotting`).
    `batch_linger_seconds` (seconds; 0 = plan what one fetch brings): after a fetch that did
    not fill a batch, wait this long and take what arrived meanwhile into the same batch, so
    a burst of events (a Job creating its pods) is planned once, not once per few pods.
    `max_event_lead_seconds` (seconds; 0 = no bound): a watcher event (observation or clock
    tick) whose `at_ms` is further than this ahead of the time the NATS server stored it is
    dead-lettered, never applied (see `services.planner.intake`).
    """

    batch_size: int = 512
    fetch_timeout_seconds: float = 0.2
    batch_linger_seconds: float = 0.0
    snapshot_interval_seconds: float = 30.0
    snapshot_interval_events: int = 50_000
    max_event_lead_seconds: float = 60.0
    leader_election: bool = False
    leader_lease_seconds: float = 10.0
    leader_retry_seconds: float = 1.0


@dataclass(frozen=True)
class BinderSettings:
    """Binder behaviour.

    Units: `event_interval_seconds` is the minimum time between two FailedScheduling events for
    one pod (rate limit); `concurrency` is the number of binds in flight per placement (at most
    `limits.KUBE_POOL_SIZE`, the connections of the binder's Kubernetes client).
    """

    concurrency: int = 16
    rollback_bare_pods: bool = False
    event_interval_seconds: float = 30.0
    scheduler_lease: bool = True
    """Bind only while holding the Lease named after the scheduler name in
    `scheduler_lease_namespace` (`services.kube.leases`), so two installations serving one
    name never bind at once."""
    scheduler_lease_namespace: str = "kube-system"


@dataclass(frozen=True)
class Settings:
    """Everything one gangsched process needs.

    `data_dir` holds the embedded NATS store and the SQLite database when no URLs are given.
    `scheduler_name` is the `spec.schedulerName` gangsched serves (default `gangsched`).
    `http_port` serves /healthz, /readyz, /metrics (0 = a free port; -1 = disabled).
    """

    data_dir: Path = Path(".gangsched")
    scheduler_name: str = "gangsched"
    http_host: str = "127.0.0.1"
    http_port: int = 0
    log_level: str = "INFO"
    bus: BusSettings = field(default_factory=BusSettings)
    store: StoreSettings = field(default_factory=StoreSettings)
    kube: KubeSettings = field(default_factory=KubeSettings)
    watcher: WatcherSettings = field(default_factory=WatcherSettings)
    planner: PlannerServiceSettings = field(default_factory=PlannerServiceSettings)
    binder: BinderSettings = field(default_factory=BinderSettings)
    decision_key: DecisionKey | None = field(default=None, repr=False)
    """The planner's signing and the binder's checking key, read from `decision_key_file`
    (`--decision-key-file`; `run` keeps its own in the data directory when none is given)."""
    decision_key_file: Path | None = None

    def store_url(self) -> str:
        """The effective database URL (SQLite file `<data_dir>/gangsched.db` by default)."""
        if self.store.url:
            return self.store.url
        return f"sqlite+aiosqlite:///{paths.resolved(self.data_dir / 'gangsched.db')}"
