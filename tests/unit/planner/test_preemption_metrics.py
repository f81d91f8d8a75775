"""The planner counts Preemptions and their victims, as kube-scheduler's
scheduler_preemption_attempts_total and scheduler_preemption_victims do."""

from __future__ import annotations

from services.contracts.decisions import Assignment, Preemption, Victim
from services.planner import service
from services.runtime.metrics import REGISTRY


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def test_each_preemption_counts_once_and_observes_its_victims() -> None:
    victims = tuple(Victim(f"u{i}", "ml", f"v{i}", "n1", "ml/low", 1) for i in range(3))
    decision = Preemption(id="5-0", plan_seq=5, at_ms=0, group="ml/high", priority=9,
                          deadline_ms=60_000, nominated=(Assignment("h", "ml", "h", "n1"),),
                          victims=victims)
    before = (sample("gangsched_preemption_attempts_total"),
              sample("gangsched_preemption_victims_chosen_sum"),
              sample("gangsched_preemption_victims_chosen_bucket", le="2.0"),
              sample("gangsched_preemption_victims_chosen_bucket", le="4.0"))
    service._count_attempts([decision])
    after = (sample("gangsched_preemption_attempts_total"),
             sample("gangsched_preemption_victims_chosen_sum"),
             sample("gangsched_preemption_victims_chosen_bucket", le="2.0"),
             sample("gangsched_preemption_victims_chosen_bucket", le="4.0"))
    assert [b - a for a, b in zip(before, after, strict=True)] == [1.0, 3.0, 0.0, 1.0]
