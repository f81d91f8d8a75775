"""Whether a gang has run does not depend on where plan points fall (review finding): a
gang bound, then one member Succeeded and another replaced, all within one batch."""

from __future__ import annotations

from services.contracts.decisions import Placement
from tests.unit.planner.builders import PodBuilder, make_node, make_pod, make_podgroup
from tests.unit.planner.harness import Cluster


def _member(name: str) -> PodBuilder:
    return make_pod(name).requests(cpu_milli=1000).in_group("g").owned_by("train", "Job")


def _replacement_outcome(plan_after_bind: bool) -> tuple[list[list[str]], str]:
    cluster = Cluster().observe(*[make_node(f"n{i}").capacity(cpu_milli=1000) for i in range(2)],
                                make_podgroup("g", 2), _member("g-0"), _member("g-1"))
    cluster.bind(cluster.plan())
    if plan_after_bind:
        cluster.plan()
    cluster.set_phase("g-0", "Succeeded")
    cluster.delete_pod("g-1")
    cluster.observe(_member("g-1b"))
    decisions = cluster.plan()
    placed = [[m.name for m in d.members] for d in decisions if isinstance(d, Placement)]
    return placed, cluster.statuses("default/g")[-1].phase


def test_the_replacement_is_placed_whether_or_not_a_round_saw_the_gang_bound() -> None:
    assert _replacement_outcome(plan_after_bind=True) == ([["g-1b"]], "Scheduling")
    assert _replacement_outcome(plan_after_bind=False) == ([["g-1b"]], "Scheduling")
