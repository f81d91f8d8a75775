"""`gangsched simulate` resolves pod priority as the API server's Priority admission plugin
does: the named PriorityClass's value (system classes built in), else the globalDefault
class's, else 0; its preemptionPolicy is copied too; what the plugin refuses is refused."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from services.cli.simulate import simulate_command, to_event
from services.contracts.events import PodObserved
from services.planner.simulate import manifests

CLASSES = """apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: batch}
value: 10
preemptionPolicy: Never
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: standard}
value: 500
globalDefault: true
---
"""


def pod(name: str, spec: str = "") -> str:
    return (f"apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}}}\nspec:\n"
            f"  schedulerName: gangsched\n{spec}  containers: [{{name: c}}]\n---\n")


def pods_of(text: str) -> list[manifests.Item]:
    """The pod items of `text` once read and admitted."""
    documents = [manifests.Document("in.yaml", number, body)
                 for number, body in enumerate(yaml.safe_load_all(text), start=1)]
    return [item for item in manifests.expand(documents)[0] if item.kind == "Pod"]


def admitted(text: str) -> dict[str, PodObserved]:
    """The events of the pods of `text`, by name."""
    events = {item.obj["metadata"]["name"]: to_event(item, 0) for item in pods_of(text)}
    assert all(isinstance(event, PodObserved) for event in events.values())
    return events  # type: ignore[return-value]


def test_the_named_class_the_global_default_or_zero_with_their_preemption_policy() -> None:
    pods = admitted(CLASSES + pod("named", "  priorityClassName: batch\n") + pod("unnamed")
                    + pod("critical", "  priorityClassName: system-node-critical\n"))
    assert {name: (p.priority, p.preemption_policy) for name, p in pods.items()} == {
        "named": (10, "Never"), "unnamed": (500, "PreemptLowerPriority"),
        "critical": (2000001000, "PreemptLowerPriority")}
    plain = admitted(CLASSES.split("---")[0] + "---\n" + pod("plain"))["plain"]
    assert (plain.priority, plain.preemption_policy) == (0, "PreemptLowerPriority")


def test_the_default_class_is_written_into_the_pod_and_a_matching_priority_is_accepted() -> None:
    (item,) = pods_of(CLASSES + pod("p", "  priority: 500\n"))
    spec = item.obj["spec"]
    assert (spec["priorityClassName"], spec["priority"], spec["preemptionPolicy"]) == (
        "standard", 500, "PreemptLowerPriority")


@pytest.mark.parametrize(("text", "message"), [
    (pod("p", "  priorityClassName: gold\n"),
     "document 1 (Pod default/p): spec.priorityClassName: no PriorityClass with name gold was "
     "found (in the manifests or built in)"),
    (CLASSES + pod("p", "  priorityClassName: batch\n  priority: 11\n"),
     "document 3 (Pod default/p): spec.priority: the integer value of priority (11) must not be "
     "provided in pod spec; priority admission controller computed 10 from the given "
     "PriorityClass name"),
    (pod("p", "  priority: 7\n"), "spec.priority: the integer value of priority (7) must not"),
    (CLASSES + pod("p", "  priorityClassName: batch\n  preemptionPolicy: PreemptLowerPriority\n"),
     "document 3 (Pod default/p): spec.preemptionPolicy: the string value of PreemptionPolicy "
     "(PreemptLowerPriority) must not be provided in pod spec; priority admission controller "
     "computed Never from the given PriorityClass name"),
    (CLASSES + "apiVersion: scheduling.k8s.io/v1\n"
               "kind: PriorityClass\nmetadata: {name: other}\nvalue: 1\nglobalDefault: true\n",
     "document 3 (PriorityClass other): globalDefault: PriorityClass standard is already marked "
     "as default. Only one default can exist"),
    ("apiVersion: scheduling.k8s.io/v1\n"
     "kind: PriorityClass\nmetadata: {name: huge}\nvalue: 1000000001\n",
     "document 1 (PriorityClass huge): value: maximum allowed value of a user defined priority "
     "is 1000000000"),
    ("apiVersion: scheduling.k8s.io/v1\n"
     "kind: PriorityClass\nmetadata: {name: system-mine}\nvalue: 1\n",
     "document 1 (PriorityClass system-mine): metadata.name: the name of the priority class is "
     "a reserved name for system use only"),
    ("apiVersion: scheduling.k8s.io/v1\n"
     "kind: PriorityClass\nmetadata: {name: low}\nvalue: -3000000000\n",
     "document 1 (PriorityClass low): value: must be a 32-bit integer"),
    (CLASSES + "apiVersion: scheduling.k8s.io/v1\n"
               "kind: PriorityClass\nmetadata: {name: batch}\nvalue: 20\n",
     "document 3 (PriorityClass batch): metadata.name: PriorityClass batch is defined twice"),
    ("apiVersion: scheduling.k8s.io/v1\n"
     "kind: PriorityClass\nmetadata: {name: p}\nvalue: 1\nglobalDefault: 'yes'\n",
     "document 1 (PriorityClass p): globalDefault: must be true or false"),
    ("apiVersion: scheduling.k8s.io/v1\n"
     "kind: PriorityClass\nmetadata: {name: p}\nvalue: 1\npreemptionPolicy: Sometimes\n",
     "document 1 (PriorityClass p): preemptionPolicy: must be one of PreemptLowerPriority, "
     "Never, got 'Sometimes'"),
])
def test_what_the_priority_plugin_refuses_is_one_line_and_exit_2(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, message: str) -> None:
    path = tmp_path / "in.yaml"
    path.write_text(text)
    assert simulate_command([path], "json") == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and message in err, err


def test_a_dump_holding_the_system_classes_unchanged_is_read(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "in.yaml"
    path.write_text("apiVersion: scheduling.k8s.io/v1\n"
                    "kind: PriorityClass\nmetadata: {name: system-node-critical}\n"
                    "value: 2000001000\n")
    assert simulate_command([path], "json") == 0
