"""`gangsched simulate` on a native PodGroup's topology constraints
(`spec.schedulingConstraints.topology`, which `watcher.native.unsupported_fields` reads): of
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
