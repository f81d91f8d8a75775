"""Explain tells a Preemption to its victims (which gang, when, where, why) and to its preemptor.

The log: gang `low` (priority 10) bound on both 4-CPU nodes; gang `high` (priority 1000, two
4-CPU members) cannot be placed, so the planner core preempts `low` for it; the victims are
deleted gracefully, and `high` placed.
"""

from __future__ import annotations

import msgspec

from services.audit import explain, preemptions, summaries
from services.audit.explain import Item
from services.audit.timeline import Focus
from services.contracts.decisions import Placement, Preemption
from services.contracts.events import (
    DisruptionBudgetDeleted,
    DisruptionBudgetObserved,
    Event,
    PodDeleted,
    PodObserved,
)
from tests.unit.audit.recorded import T0, Recorder, bind_all, observed_bound, placements
from tests.unit.planner.builders import make_node, make_pod, make_podgroup, pod_uid


def gang(name: str, priority: int, at_ms: int) -> list[Event]:
    return [make_podgroup(name, 2).created(at_ms).build(at_ms),
            *[make_pod(f"{name}-{i}").requests(cpu_milli=4000).in_group(name).priority(priority)
              .created(at_ms).build(at_ms) for i in range(2)]]


def preempted_log() -> tuple[Recorder, Preemption, list[Item]]:
    rec = Recorder()
    nodes = [make_node(n).capacity(cpu_milli=4000).build(T0) for n in ("a", "b")]
    (low,) = placements(rec.round(*nodes, *gang("low", 10, T0)))
    rec.round(*bind_all(low, T0 + 100), *observed_bound(rec, low, T0 + 150))
    rec.round(*gang("high", 1000, T0 + 1000))
    on = {m.name: m.node for m in low.members}
    preemption = next(d for d in rec.decisions if isinstance(d, Preemption))
    deleting: list[PodObserved] = [deleting_now(rec.pod(n), T0 + 1100) for n in on]
    rec.round(*deleting)
    rec.round(*[PodDeleted(at_ms=T0 + 2000, uid=pod_uid(n), namespace="default", name=n)
                for n in on])
    items: list[Item] = [event for rnd in rec.rounds for event in rnd.events]
    return rec, preemption, explain.chain([*items, *rec.decisions])


def deleting_now(pod: PodObserved, at_ms: int) -> PodObserved:
    """The pod observed again, now with a deletionTimestamp (a graceful delete)."""
    return msgspec.structs.replace(pod, is_deleting=True, at_ms=at_ms)


def test_a_victim_pod_names_the_gang_that_preempted_it_when_where_and_why() -> None:
    _, preemption, items = preempted_log()
    found = explain.explain_pod("default", "low-0", items)
    node = next(v.node for v in preemption.victims if v.name == "low-0")
    told = (f"preempted at 2023-11-14T22:13:21.000Z by gang default/high (priority 1000 > "
            f"its 10) to make room on {node}; decision {preemption.id}")
    assert f"{told}" in [step.text for step in found.steps]
    assert found.verdict == ("Preempted" + told.removeprefix("preempted")
                             + "; deleted at 2023-11-14T22:13:22.000Z")
    assert found.status == "pod deleted at 2023-11-14T22:13:22.000Z; PodGroup Pending, running 0"


def test_a_victim_pod_being_deleted_says_its_deletion_is_under_way() -> None:
    rec, preemption, _ = preempted_log()
    items = explain.chain([*[e for rnd in rec.rounds[:-1] for e in rnd.events], *rec.decisions])
    verdict = explain.explain_pod("default", "low-1", items).verdict
    assert verdict.startswith("Preempted at 2023-11-14T22:13:21.000Z by gang default/high")
    assert verdict.endswith(f"decision {preemption.id}; its deletion is under way")


def podgroup_story(name: str, items: list[Item]) -> tuple[explain.Explanation, list[str]]:
    """The explanation of PodGroup default/`name` and the texts of its steps."""
    found = explain.explain_podgroup("default", name, items)
    return found, [step.text for step in found.steps]


def test_the_victim_gangs_story_says_it_was_preempted_whole_and_by_whom() -> None:
    _, preemption, items = preempted_log()
    found, texts = podgroup_story("low", items)
    told = (f"member(s) low-0, low-1 preempted at 2023-11-14T22:13:21.000Z by gang default/high "
            f"(priority 1000 > its 10) to make room on a, b; decision {preemption.id}")
    assert f"{told}" in texts
    assert texts.index(f"{told}") < texts.index("member default/low-0 deleted")
    assert found.verdict == f"Pending: {told}"  # its StatusUpdate after the deletions
    assert "0 member(s) observed, 0 bound, 0 pending" in found.status


def test_the_preemptor_gangs_story_tells_its_victims_and_the_nodes_held_then_its_placement(
        ) -> None:
    rec, preemption, items = preempted_log()
    found, texts = podgroup_story("high", items)
    told = (f"preempting 2 victim(s) (of gang default/low) on a, b for 2 member(s), nodes held "
            f"until 2023-11-14T22:15:21.000Z; decision {preemption.id}")
    assert told in texts
    placed = [d for d in placements(rec.decisions) if d.group == "default/high"]
    assert placed, "the planner never placed the preemptor after its victims went"
    assert texts.index(told) < next(i for i, t in enumerate(texts)
                                    if t.startswith("place default/high"))
    assert "victim" not in found.verdict  # placed since: the verdict is about the placement


def test_a_preemptor_pod_waiting_for_its_victims_is_told_its_nominated_node() -> None:
    rec, preemption, _ = preempted_log()
    before_deletion = [e for rnd in rec.rounds[:-2] for e in rnd.events]
    items = explain.chain([*before_deletion, *[d for d in rec.decisions
                                               if not isinstance(d, Placement)
                                               or d.group != "default/high"]])
    found = explain.explain_pod("default", "high-0", items)
    node = next(m.node for m in preemption.nominated if m.name == "high-0")
    assert (f"nominated to {node} by decision {preemption.id}: 2 victim(s) evicted to make room "
            f"(node held until 2023-11-14T22:15:21.000Z)") in [s.text for s in found.steps]
    assert found.verdict == (f"Pending: nominated to {node} by decision {preemption.id}; "
                             "waiting for 2 victim(s) to go (node held until "
                             "2023-11-14T22:15:21.000Z)")


def test_an_unrelated_pod_hears_nothing_of_the_preemption() -> None:
    rec = Recorder()
    rec.round(make_node("c").capacity(cpu_milli=1000).build(T0),
              make_pod("solo").requests(cpu_milli=500).build(T0))
    _, preemption, _ = preempted_log()
    story = explain.explain_pod("default", "solo", explain.chain(
        [*[e for rnd in rec.rounds for e in rnd.events], preemption]))
    assert not any(preemption.id in step.text for step in story.steps)


def test_who_names_gangs_and_singleton_pods() -> None:
    assert preemptions.who("ml/train") == "gang ml/train"
    assert preemptions.who("ml/pod:solo") == "pod ml/solo"


def test_the_replay_timeline_of_a_victim_pod_or_gang_shows_the_preemption_evicting_it() -> None:
    _, preemption, _ = preempted_log()
    victim_gang, preemptor = Focus("podgroup", "default", "low"), Focus("pod", "default", "high-1")
    victim_pod = Focus("pod", "default", "low-1", uids={pod_uid("low-1")})
    preemptor.uids.add(pod_uid("high-1"))
    assert victim_gang.decision_matches(preemption) and victim_pod.decision_matches(preemption)
    assert preemptor.decision_matches(preemption)
    assert not Focus("pod", "default", "solo", uids={pod_uid("solo")}).decision_matches(preemption)


def test_the_timeline_summarises_a_pdb_by_its_allowed_disruptions() -> None:
    observed = DisruptionBudgetObserved(at_ms=0, uid="u", namespace="ml", name="web",
                                        resource_version="1", disruptions_allowed=1,
                                        disrupted_pods=("web-0",))
    assert summaries.event_summary(observed, {}) == (
        "PodDisruptionBudget ml/web: disruptionsAllowed 1, 1 disrupted")
    assert summaries.event_summary(DisruptionBudgetDeleted(
        at_ms=0, uid="u", namespace="ml", name="web"), {}) == "PodDisruptionBudget ml/web deleted"
