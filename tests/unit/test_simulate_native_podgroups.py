"""`gangsched simulate` on a native PodGroup's topology constraints
(`spec.schedulingConstraints.topology`, which `watcher.native.topology_key` reads): of
their types (services/planner/simulate/shapes.py `NATIVE_PODGROUP`) and values
(services/planner/simulate/native_podgroups.py) as the API server takes them.

The API server decodes the field into `[]TopologyConstraint{Key string}` (api
scheduling/v1alpha2), so a mapping, a string, or an item whose `key` is no string is refused
(`json: cannot unmarshal ...`); its declarative validation (with TopologyAwareWorkloadScheduling
on) takes at most one item, whose `key` is required and a label key. Anything else is one line
naming the field, exit status 2, never a gang reported "unsupported" for a PodGroup the API
server refuses.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from services.planner.simulate import native_podgroups, shapes
from tests.unit.test_simulate_malformed import NODE, refused, simulate

RULE = ("must consist of alphanumeric characters, '-', '_' or '.', and must start and end with "
        "an alphanumeric character (e.g. 'MyName' or 'my.name' or '123-abc', regex used for "
        "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")
"""apimachinery `content.IsLabelKey`'s rule of a key's name part (`RegexError`)."""


def native(topology: Any) -> dict[str, Any]:
    return {"apiVersion": shapes.NATIVE_API_VERSION, "kind": "PodGroup",
            "metadata": {"name": "g"},
            "spec": {"schedulingPolicy": {"gang": {"minCount": 2}},
                     "schedulingConstraints": {"topology": topology}}}


def podgroup(topology: str) -> str:
    return (f"apiVersion: {shapes.NATIVE_API_VERSION}\nkind: PodGroup\nmetadata: {{name: g}}\n"
            "spec: {schedulingPolicy: {gang: {minCount: 2}}, "
            f"schedulingConstraints: {{topology: {topology}}}}}\n")


@pytest.mark.parametrize(("topology", "field", "why"), [
    ({"key": "rack"}, "spec.schedulingConstraints.topology", "must be a list, got {'key': 'rack'}"),
    ("rack", "spec.schedulingConstraints.topology", "must be a list, got 'rack'"),
    ([{"key": 5}], "spec.schedulingConstraints.topology[0].key",
     'must be a string, got 5 (quote it: "5")'),
    (["rack"], "spec.schedulingConstraints.topology[0]", "must be a mapping, got 'rack'"),
])
def test_a_topology_of_the_wrong_type_is_refused(topology: Any, field: str, why: str) -> None:
    assert shapes.problem(native(topology)) == (field, why)


@pytest.mark.parametrize("topology", [[{"key": "rack"}], [], None, [{"key": None}]])
def test_a_well_typed_topology_passes_the_shape_check(topology: Any) -> None:
    assert shapes.problem(native(topology)) is None


@pytest.mark.parametrize(("topology", "field", "why"), [
    ("[{key: rack}, {key: zone}]", "topology", "Too many: 2: must have at most 1 item"),
    ("[{key: ''}, {key: ''}]", "topology", "Too many: 2: must have at most 1 item"),
    ("[{}]", "topology[0].key", "Required value"),
    ("[{key: null}]", "topology[0].key", "Required value"),
    ("[null]", "topology[0].key", "Required value"),
    ("[{key: a/b/c}]", "topology[0].key", f'Invalid value: "a/b/c": a valid label key {RULE} '
     "with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"),
    ("[{key: /rack}]", "topology[0].key",
     'Invalid value: "/rack": prefix part must be non-empty'),
    ("[{key: 'rack zone'}]", "topology[0].key", f'Invalid value: "rack zone": name part {RULE}'),
])
def test_a_topology_the_api_server_refuses_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], topology: str, field: str,
        why: str) -> None:
    assert refused(tmp_path, NODE + podgroup(topology), capsys) == (
        f" document 2 (PodGroup default/g): spec.schedulingConstraints.{field}: {why}")


@pytest.mark.parametrize("topology", ["[{key: example.com/rack}]", "[{key: rack}]", "[]",
                                      "null"])
def test_a_topology_the_api_server_takes_is_simulated(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], topology: str) -> None:
    code, _, err = simulate(tmp_path, NODE + podgroup(topology), capsys)
    assert code == 0, err


def test_the_checker_names_the_field_relative_to_the_spec() -> None:
    assert native_podgroups.problem({"schedulingConstraints": {"topology": [{}]}}) == (
        "schedulingConstraints.topology[0].key", "Required value")
    assert native_podgroups.problem({}) is None
    assert native_podgroups.problem(None) is None


def racks(*nodes: tuple[str, str]) -> str:
    return "".join(f"apiVersion: v1\nkind: Node\nmetadata: {{name: {name}, labels: "
                   f"{{example.com/rack: {value}}}}}\nstatus: {{allocatable: {{cpu: '1', "
                   "memory: 8Gi, pods: '110'}}\n---\n" for name, value in nodes)


MEMBERS = "".join(f"---\napiVersion: v1\nkind: Pod\nmetadata: {{name: w{i}}}\nspec: "
                  "{schedulerName: gangsched, schedulingGroup: {podGroupName: g}, containers: "
                  "[{name: c, resources: {requests: {cpu: '1'}}}]}\n" for i in range(2))


def test_a_gang_with_a_topology_is_simulated_in_one_domain(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # rack a holds one member, rack b both: kube-scheduler's TopologyPlacement places the gang
    # in rack b (core revision 45 left it Pending as unsupported)
    text = (racks(("a0", "a"), ("b0", "b"), ("b1", "b"))
            + podgroup("[{key: example.com/rack}]") + MEMBERS)
    code, out, err = simulate(tmp_path, text, capsys)
    assert code == 0, err
    pods = json.loads(out)["pods"]
    assert {name: pod["node"] for name, pod in pods.items()} == {"default/w0": "b0",
                                                                "default/w1": "b1"}


def test_a_gang_no_domain_holds_stays_pending_with_kube_schedulers_wording(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = racks(("a0", "a"), ("b0", "b")) + podgroup("[{key: example.com/rack}]") + MEMBERS
    code, out, err = simulate(tmp_path, text, capsys)
    assert code == 0, err
    pods = json.loads(out)["pods"]
    assert {pod["node"] for pod in pods.values()} == {None}
    assert {pod["reason"] for pod in pods.values()} == {
        "gang default/g: 0/2 placements are available, first placement status: "
        "example.com/rack=a: 1 of 2 members fit; 0/1 nodes are available: 1 Insufficient cpu."}
