"""Explain tells, from the log alone, why a pod waits or where and when it was placed."""

from __future__ import annotations

import pytest

from services.audit import explain
from services.audit.explain import Item
from services.contracts.decisions import Placement
from services.contracts.events import GroupBound, MemberBound
from tests.unit.audit.recorded import (
    T0,
    Recorder,
    observed_bound,
    placements,
    scenario,
    seed_gang,
)
from tests.unit.planner.builders import make_pod


def items_of(rec: Recorder) -> list[Item]:
    """Everything the database holds, in log order."""
    items: list[Item] = [event for rnd in rec.rounds for event in rnd.events]
    return explain.chain([*items, *rec.decisions])


def test_a_pending_pod_of_a_gang_too_big_for_the_node_names_the_gang_and_the_missing_cpu() -> None:
    rec = Recorder()
    rec.round(*seed_gang(min_member=4))
    found = explain.explain_pod("default", "nginx-5", items_of(rec))
    assert found.verdict == ("Pending: gang default/nginx: 3 of 4 members fit; "
                             "0/1 nodes are available: 1 Insufficient cpu.")
    assert found.title == "pod default/nginx-5 (group default/nginx)"
    assert any("PodGroup default/nginx minMember 4" in step.text for step in found.steps)


@pytest.mark.parametrize("member_outcomes", [False, True], ids=["GroupBound", "old log"])
def test_a_bound_pod_names_its_node_its_time_and_its_decision(member_outcomes: bool) -> None:
    rec = scenario(member_outcomes=member_outcomes)
    first = next(d for d in rec.decisions if isinstance(d, Placement))
    member = first.members[0]
    found = explain.explain_pod("default", member.name, items_of(rec))
    assert found.verdict == (f"Bound to kwok-node-0 at 2023-11-14T22:13:20.100Z by decision "
                             f"{first.id}")
    texts = [step.text for step in found.steps]
    assert any(text.startswith(f"placed on kwok-node-0 by decision {first.id}") for text in texts)
    assert [text for text in texts if text.startswith("bound to ")] == [
        f"bound to kwok-node-0 (decision {first.id})"]


def test_a_rolled_back_and_replaced_gang_tells_the_rollback_and_the_new_placement() -> None:
    rec = scenario()
    first, retry = placements(rec.decisions)[1:]
    found = explain.explain_pod("default", "train-0", items_of(rec))
    texts = [step.text for step in found.steps]
    rolled = next(i for i, t in enumerate(texts) if "rolled back" in t and first.id in t)
    placed_again = next(i for i, t in enumerate(texts) if f"by decision {retry.id}" in t)
    assert rolled < placed_again
    assert found.verdict.startswith("Bound to ") and found.verdict.endswith(retry.id)


def test_the_same_reason_told_again_and_again_is_told_once() -> None:
    rec = Recorder()
    rec.round(*seed_gang(min_member=4))
    reason = explain.explain_pod("default", "nginx-0", items_of(rec)).verdict
    rec.decisions.extend(d for d in list(rec.decisions))  # recorded twice in a row
    steps = explain.explain_pod("default", "nginx-0", items_of(rec)).steps
    assert sum(1 for step in steps if reason.removeprefix("Pending: ") in step.text) == 1


def test_a_pod_the_log_never_saw_is_unknown() -> None:
    found = explain.explain_pod("default", "ghost", items_of(scenario()))
    assert not found.is_known and found.verdict.startswith("Unknown: pod default/ghost")


def test_a_pod_name_that_is_a_podgroups_points_to_explaining_the_podgroup() -> None:
    """`explain nginx` asks about a pod; the name `kubectl get pg` shows is a PodGroup's."""
    found = explain.explain_pod("default", "nginx", items_of(scenario()))
    assert not found.is_known
    assert found.verdict == ("Unknown: pod default/nginx does not appear in the log; a PodGroup "
                             "default/nginx is in the log: gangsched explain podgroup "
                             "default/nginx")


def ended(fates: dict[str, str]) -> Recorder:
    """The scenario, then gang `train`'s members ending on their nodes (`fates`: member name to
    its last phase)."""
    rec = scenario()
    rec.round(*[make_pod(name).requests(cpu_milli=1000).in_group("train")
                .created(rec.pod(name).created_at_ms).on_node(rec.pod(name).node_name or "",
                                                              phase=fate).build(T0 + 9000)
                for name, fate in fates.items()])
    return rec


@pytest.mark.parametrize(("fates", "verdict"), [
    ({"train-0": "Succeeded", "train-1": "Succeeded"},
     "Finished: 2 member(s) succeeded (on kwok-node-0, kwok-node-1)"),
    ({"train-0": "Failed", "train-1": "Running"},
     "Failed: 1 member(s) failed, 1 running (on kwok-node-0, kwok-node-1)"),
])
def test_an_ended_gang_names_the_members_its_phase_is_named_for(
        fates: dict[str, str], verdict: str) -> None:
    """A finished gang read `Finished: 0 member(s) running on ...`."""
    found = explain.explain_podgroup("default", "train", items_of(ended(fates)))
    assert found.verdict == verdict


def test_a_podgroup_waiting_for_capacity_says_so_with_its_phase() -> None:
    rec = Recorder()
    rec.round(*seed_gang(min_member=4))
    found = explain.explain_podgroup("default", "nginx", items_of(rec))
    assert found.verdict.endswith("gang default/nginx: 3 of 4 members fit; "
                                  "0/1 nodes are available: 1 Insufficient cpu.")
    assert found.status.startswith("phase ") and "6 pending" in found.status


def test_a_running_podgroup_with_members_beyond_quorum_waiting_tells_both() -> None:
    rec = scenario()
    found = explain.explain_podgroup("default", "nginx", items_of(rec))
    assert found.verdict.startswith("Running: gang default/nginx: minMember 3 reached; "
                                    "3 more member(s) do not fit")
    assert "3 bound, 3 pending" in found.status
    assert any(step.text.startswith("place default/nginx (attempt 1)") for step in found.steps)


def test_lines_carry_utc_times_references_status_and_verdict() -> None:
    rec = Recorder()
    rec.round(*seed_gang(min_member=4))
    lines = explain.explain_pod("default", "nginx-0", items_of(rec)).lines()
    assert lines[0] == "pod default/nginx-0 (group default/nginx)"
    assert lines[1].startswith("2023-11-14T22:13:20.000Z  observed PodGroup default/nginx")
    assert lines[-2].startswith("status: pod Pending")
    assert lines[-1].startswith("verdict: Pending: gang default/nginx: 3 of 4 members fit")


def test_a_podgroup_story_tells_only_its_own_podgroup_and_its_rollback() -> None:
    rec = scenario()
    found = explain.explain_podgroup("default", "train", items_of(rec))
    texts = [step.text for step in found.steps]
    assert not any("nginx" in text for text in texts)
    assert any(text.startswith("gang default/train rolled back") for text in texts)
    assert found.verdict == "Running: 2 member(s) running on kwok-node-0, kwok-node-1"


def test_an_old_log_whose_member_outcome_came_after_its_gangs_tells_the_bind_once() -> None:
    rec = Recorder()
    (placed,) = placements(rec.round(*seed_gang()))
    at = placed.at_ms + 100
    members = [MemberBound(at_ms=at, decision_id=placed.id, group=placed.group,
                           pod_uid=m.pod_uid, node=m.node) for m in placed.members]
    # a publish that failed is published again after the later messages of its window
    rec.round(*members[:-1], GroupBound(at_ms=at, decision_id=placed.id, group=placed.group),
              members[-1], *observed_bound(rec, placed, at + 50))
    last = placed.members[-1]
    texts = [step.text for step in explain.explain_pod("default", last.name, items_of(rec)).steps]
    assert [text for text in texts if text.startswith("bound to ")] == [
        f"bound to {last.node} (decision {placed.id})"]
