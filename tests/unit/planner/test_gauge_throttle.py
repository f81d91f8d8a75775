"""The planner's pending-pods and PodGroups-by-phase gauges are recounted only after the state
changed, at most once per `GAUGE_INTERVAL_SECONDS` (batches or quiet fetches), and at once when
forced (start)."""

from __future__ import annotations

from services.planner import service
from services.planner.core import plan
from services.planner.core.config import PlannerConfig
from services.runtime import metrics
from tests.unit.planner.builders import make_pod
from tests.unit.planner.test_census import observed


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _pending() -> float | None:
    return metrics.REGISTRY.get_sample_value("gangsched_pending_pods")


def _planner() -> tuple[service.PlannerService, _Clock]:
    planner = service.PlannerService(None, None, prefix="gangsched",  # type: ignore[arg-type]
                                     config=PlannerConfig())
    clock = _Clock()
    planner.clock = clock
    planner.state = observed()
    return planner, clock


def _commit_one_more_pod(planner: service.PlannerService, name: str) -> None:
    """What `_apply` does to the gauges' bookkeeping: the state changed, then a recount."""
    planner.state = plan.apply(planner.state, make_pod(name).build())
    planner.counted_fresh = False
    planner.count_pending()


def test_a_batch_within_the_interval_leaves_the_gauge_and_one_after_it_recounts() -> None:
    planner, clock = _planner()
    planner.count_pending(force=True)
    assert _pending() == 4
    clock.now += service.GAUGE_INTERVAL_SECONDS / 2
    _commit_one_more_pod(planner, "late-1")
    assert _pending() == 4  # at most GAUGE_INTERVAL_SECONDS stale
    clock.now += service.GAUGE_INTERVAL_SECONDS / 2
    _commit_one_more_pod(planner, "late-2")
    assert _pending() == 6
    assert metrics.REGISTRY.get_sample_value("gangsched_podgroups", {"phase": "Pending"}) == 1


def test_a_quiet_fetch_recounts_once_the_interval_passed_and_nothing_unchanged() -> None:
    planner, clock = _planner()
    planner.count_pending(force=True)
    _commit_one_more_pod(planner, "late-1")
    assert _pending() == 4
    planner.count_pending()  # a fetch that brought nothing, within the interval
    assert _pending() == 4
    clock.now += service.GAUGE_INTERVAL_SECONDS
    planner.count_pending()  # the next one, past it
    assert _pending() == 5
    counted_at = planner.counted_at
    clock.now += 10 * service.GAUGE_INTERVAL_SECONDS
    planner.count_pending()  # nothing committed since: no scan
    planner.count_pending(force=True)
    assert planner.counted_at == counted_at


def test_forcing_recounts_a_changed_state_within_the_interval() -> None:
    planner, _ = _planner()
    planner.count_pending(force=True)
    _commit_one_more_pod(planner, "late-1")
    planner.count_pending(force=True)
    assert _pending() == 5
