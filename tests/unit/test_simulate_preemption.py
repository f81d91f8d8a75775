"""`gangsched simulate` carries out Preemptions and shows them (pods, table, JSON).

The simulated binder is tested with a Preemption built here, for a preemptor whose
preemptionPolicy is Never (so a planner core that preempts on its own never adds another). The
end-to-end case (manifests in, table and JSON out) runs the planner core's own Preemption.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import msgspec
import pytest
from rich.console import Console

from services.cli import simulate as cli
from services.contracts.decisions import Assignment, Placement, Preemption, Victim
from services.contracts.events import Event, PodObserved
from services.planner.core.config import PlannerConfig
from services.planner.simulate import engine
from tests.unit.planner.builders import make_node, make_pod, make_podgroup, pod_uid

T0 = 1_700_000_000_000


def member(gang: str, i: int, priority: int, at_ms: int) -> PodObserved:
    pod = (make_pod(f"{gang}-{i}").requests(cpu_milli=4000).in_group(gang).priority(priority)
           .created(at_ms).build(at_ms))
    return msgspec.structs.replace(pod, preemption_policy="Never")


def arrivals() -> list[engine.Arrival]:
    """Nodes a and b of 4 CPU; gang low (2 x 4 CPU, priority 10) at 0 s; gang high (2 x 4 CPU,
    priority 1000) at 10 s."""
    events: list[Event] = [make_node("a").capacity(cpu_milli=4000).build(T0),
                           make_node("b").capacity(cpu_milli=4000).build(T0),
                           make_podgroup("low", 2).created(T0).build(T0),
                           *[member("low", i, 10, T0) for i in range(2)]]
    later: list[Event] = [make_podgroup("high", 2).created(T0 + 10_000).build(T0 + 10_000),
                          *[member("high", i, 1000, T0 + 10_000) for i in range(2)]]
    return ([engine.Arrival(T0, event) for event in events]
            + [engine.Arrival(T0 + 10_000, event) for event in later])


def preemption_for_high(sim: engine.Simulation, at_ms: int) -> Preemption:
    node = {uid: pod.node_name or "" for uid, pod in sim.state.pods.items()}
    return Preemption(
        id="99-0", plan_seq=sim.seq, at_ms=at_ms, group="default/high", priority=1000,
        deadline_ms=at_ms + 60_000,
        nominated=tuple(Assignment(pod_uid(f"high-{i}"), "default", f"high-{i}",
                                   node[pod_uid(f"low-{i}")]) for i in range(2)),
        victims=tuple(Victim(pod_uid(f"low-{i}"), "default", f"low-{i}", node[pod_uid(f"low-{i}")],
                             "default/low", 10) for i in range(2)),
        reason="preempted by a higher-priority gang")


def simulated() -> tuple[engine.Simulation, Preemption]:
    """Low bound; high waits at 10 s; the Preemption carried out at 10 s; run to the end."""
    sim = engine.Simulation(arrivals(), PlannerConfig())
    sim.instant(T0)
    sim.instant(T0 + 10_000)
    decision = preemption_for_high(sim, T0 + 10_000)
    sim.decisions.append(decision)
    sim.preempt(decision, T0 + 10_000)
    return sim, decision


def test_the_simulated_binder_deletes_victims_gracefully_then_the_preemptor_is_placed() -> None:
    sim, _ = simulated()
    low = [sim.state.pods[pod_uid(f"low-{i}")] for i in range(2)]
    assert [(p.is_deleting, p.node_name) for p in low] == [(True, "a"), (True, "b")]
    assert sim.next_time() == T0 + 10_000 + engine.EVICTION_GRACE_MS
    result = sim.run()
    assert {pod_uid(f"low-{i}") for i in range(2)}.isdisjoint(result.state.pods)
    assert sorted(result.deleted) == [pod_uid("low-0"), pod_uid("low-1")]
    assert [(gone.pod.name, gone.pod.is_deleting, gone.at_ms, gone.preemption)
            for _, gone in sorted(result.deleted.items())] == [
        ("low-0", True, T0 + 11_000, "99-0"), ("low-1", True, T0 + 11_000, "99-0")]
    high = [result.pods[pod_uid(f"high-{i}")] for i in range(2)]
    assert sorted((r.node, r.bound_at_ms) for r in high) == [("a", T0 + 11_000),
                                                              ("b", T0 + 11_000)]
    placed = [d for d in result.decisions if isinstance(d, Placement) and d.group == "default/high"]
    assert len(placed) == 1 and placed[0].at_ms == T0 + 11_000


def test_a_victim_already_going_is_not_deleted_twice() -> None:
    sim, decision = simulated()
    sim.preempt(decision, T0 + 10_500)  # the planner repeating itself while they go
    assert [due for due, _, _ in sim.evictions] == [T0 + 11_000] * 2


def test_the_report_shows_the_preemption_and_its_deleted_victims() -> None:
    sim, _ = simulated()
    data = cli.report(sim.run(), [], [], T0)
    low = data["pods"]["default/low-0"]
    assert low == {"node": None, "group": "default/low", "boundAt": 0,
                   "reason": "preempted at 10 s by gang default/high (priority 1000 > its 10) to "
                             "make room on a; decision 99-0; deleted at 11 s",
                   "phase": "Deleted", "finishedAt": None}
    assert data["pods"]["default/high-1"]["node"] == "b"
    assert data["preemptions"] == [{
        "id": "99-0", "at": 10, "preemptor": "default/high", "priority": 1000,
        "reason": "preempted by a higher-priority gang",
        "nominated": [{"pod": "default/high-0", "node": "a"},
                      {"pod": "default/high-1", "node": "b"}],
        "victims": [{"pod": "default/low-0", "node": "a", "group": "default/low",
                     "priority": 10, "deletedAt": 11},
                    {"pod": "default/low-1", "node": "b", "group": "default/low",
                     "priority": 10, "deletedAt": 11}]}]
    console = Console(width=200, record=True, file=open(os.devnull, "w"))  # noqa: SIM115
    cli.render_table(data, console)
    text = console.export_text()
    assert "Preemptions" in text
    row = next(line for line in text.partition("Preemptions")[2].splitlines() if "99-0" in line)
    assert [cell.strip() for cell in row.split("│")[1:-1]] == [
        "10", "default/high", "1000", "99-0",
        "default/low-0 on a (priority 10, deleted at 11 s), default/low-1 on b (priority 10, "
        "deleted at 11 s)"]
    assert "2 of 4 pods bound; 2 preempted;" in text


CLUSTER = """
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: low}
value: 10
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
---
apiVersion: v1
kind: Node
metadata: {name: a}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: b}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
"""


def manifests_of(gangs: tuple[tuple[str, int], ...]) -> str:
    """The PriorityClasses low and high, nodes a and b, and per `(gang, at seconds)` a PodGroup
    of 2 and its 2 pods of 4 CPU whose priorityClassName is the gang's name."""
    return CLUSTER + "".join(f"""---
apiVersion: scheduling.x-k8s.io/v1alpha1
kind: PodGroup
metadata: {{name: {gang}, annotations: {{simulate.gangsched.io/at: "{at}"}}}}
spec: {{minMember: 2}}
""" + "".join(f"""---
apiVersion: v1
kind: Pod
metadata:
  name: {gang}-{i}
  labels: {{scheduling.x-k8s.io/pod-group: {gang}}}
  annotations: {{simulate.gangsched.io/at: "{at}"}}
spec:
  schedulerName: gangsched
  priorityClassName: {gang}
  containers: [{{name: c, resources: {{requests: {{cpu: "4"}}}}}}]
""" for i in range(2)) for gang, at in gangs)


SCENARIO = manifests_of((("low", 0), ("high", 10)))
"""Nodes a and b of 4 CPU; gang low (PriorityClass value 10) of 2 x 4 CPU fills both at 0 s;
gang high (value 1000) of 2 x 4 CPU arrives at 10 s."""


def test_a_high_priority_gang_preempts_the_whole_low_gang_end_to_end(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    manifests = tmp_path / "preemption.yaml"
    manifests.write_text(SCENARIO)
    assert cli.simulate_command([manifests], "json") == 0
    data = json.loads(capsys.readouterr().out)
    (preemption,) = data["preemptions"]
    assert (preemption["at"], preemption["preemptor"], preemption["priority"]) == (
        10, "default/high", 1000)
    assert sorted((v["pod"], v["group"], v["priority"], v["deletedAt"])
                  for v in preemption["victims"]) == [
        ("default/low-0", "default/low", 10, 11), ("default/low-1", "default/low", 10, 11)]
    pods = data["pods"]
    for name in ("default/low-0", "default/low-1"):
        assert (pods[name]["node"], pods[name]["phase"]) == (None, "Deleted")
        assert pods[name]["reason"].startswith(
            "preempted at 10 s by gang default/high (priority 1000 > its 10) to make room on ")
    high = [pods[f"default/high-{i}"] for i in range(2)]
    assert sorted(pod["node"] for pod in high) == ["a", "b"]
    assert all(pod["boundAt"] >= 11 for pod in high)
    assert data["podGroups"]["default/high"]["phase"] == "Running"
    assert cli.simulate_command([manifests], "table") == 0
    table = capsys.readouterr().out
    assert "Preemptions" in table and "2 of 4 pods bound; 2 preempted;" in table


def test_a_victim_of_another_scheduler_is_deleted_too_and_listed_so() -> None:
    legacy = (make_pod("legacy").scheduler("default-scheduler").requests(cpu_milli=4000)
              .on_node("a").build(T0))
    high = msgspec.structs.replace(make_pod("hi").requests(cpu_milli=4000).priority(1000)
                                   .created(T0).build(T0), preemption_policy="Never")
    sim = engine.Simulation([engine.Arrival(T0, make_node("a").capacity(cpu_milli=4000)
                                            .build(T0)),
                             engine.Arrival(T0, legacy), engine.Arrival(T0, high)],
                            PlannerConfig())
    sim.instant(T0)
    decision = Preemption(
        id="1-0", plan_seq=sim.seq, at_ms=T0, group="default/pod:hi", priority=1000,
        deadline_ms=T0 + 60_000, nominated=(Assignment(pod_uid("hi"), "default", "hi", "a"),),
        victims=(Victim(pod_uid("legacy"), "default", "legacy", "a", "default/pod:legacy", 0),))
    sim.decisions.append(decision)
    sim.preempt(decision, T0)
    data = cli.report(sim.run(), [], [], T0)
    assert data["otherSchedulers"] == [
        "default/legacy (schedulerName default-scheduler: preempted at 0 s by pod default/hi "
        "(priority 1000 > its 0) to make room on a; decision 1-0; deleted at 1 s)"]
    assert (data["pods"]["default/hi"]["node"], data["pods"]["default/hi"]["boundAt"]) == ("a", 1)
