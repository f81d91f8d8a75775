"""`gangsched simulate` refuses a PodGroup its CRD refuses (the API server would never admit
it), in one line naming the object and the field, exit 2; the rules are the CRD's own; the
watcher still reads leniently what the API server admitted (`minMember: 0` as 1)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from services.cli import exit_codes, podgroup_crd
from services.cli.main import app
from services.watcher import slim

CRD = Path(__file__).resolve().parents[3] / "deploy" / "crds" / "scheduling.x-k8s.io_podgroups.yaml"
NODE = ("apiVersion: v1\nkind: Node\nmetadata: {name: n}\n"
        "status: {allocatable: {cpu: '4', memory: 8Gi, pods: '110'}}\n")
WHERE = "pg.yaml document 1 (PodGroup default/g)"


def simulate(spec: str, tmp_path: Path) -> tuple[int, str]:
    (tmp_path / "node.yaml").write_text(NODE)
    (tmp_path / "pg.yaml").write_text("apiVersion: scheduling.x-k8s.io/v1alpha1\nkind: PodGroup\n"
                                      f"metadata: {{name: g}}\nspec: {spec}\n")
    result = CliRunner().invoke(app, ["simulate", "-o", "json", str(tmp_path / "node.yaml"),
                                      str(tmp_path / "pg.yaml")])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, result.stderr.replace(f"{tmp_path}/", "")


@pytest.mark.parametrize(("spec", "told"), [
    ("{minMember: 0}", "spec.minMember: must be at least 1, got 0"),
    ("{minMember: -1}", "spec.minMember: must be at least 1, got -1"),
    ("{minMember: 2147483648}", "spec.minMember: must be a 32-bit integer, got 2147483648"),
    ("{minMember: '3'}", "spec.minMember: must be a 32-bit integer, got '3'"),
    ("{minMember: 2, scheduleTimeoutSeconds: -1}",
     "spec.scheduleTimeoutSeconds: must be at least 0, got -1"),
    ("{minMember: 2, minResources: [cpu]}", "spec.minResources: must be an object"),
    ("{minMember: 2, minResources: {cpu: '-1'}}",
     "spec.minResources.cpu: a minResources quantity must not be negative, got -1"),
    ("{minMember: 2, minResources: {memory: -5}}",
     "spec.minResources.memory: a minResources quantity must not be negative, got -5"),
    ("{minMember: 2, minResources: {cpu: 1.5}}",
     "spec.minResources.cpu: must be an integer or a quantity, got 1.5"),
    ("{minMember: 2, minResources: {cpu: 1e3m}}", "spec.minResources.cpu: not a quantity: '1e3m'"),
    ("{minMember: 2, minResources: {cpu: '" + "0" * 64 + "1'}}",
     "spec.minResources.cpu: must be at most 64 characters, has 65"),
    ("{minMember: 2, minResources: {" + ", ".join(f"r{i}: 1" for i in range(129)) + "}}",
     "spec.minResources: must have at most 128 resources, has 129"),
    ("3", "spec: must be an object"),
    ("{minMember: 2.5}", "spec.minMember: must be a 32-bit integer, got 2.5"),
    ("{minMember: 2, scheduleTimeoutSeconds: .inf}",
     "spec.scheduleTimeoutSeconds: must be a 32-bit integer, got inf"),
    ("{minMember: 2147483648.0}", "spec.minMember: must be a 32-bit integer, got 2147483648"),
    ("{minMembr: 2}", 'unknown field "spec.minMembr"'),
    ("{minMember: 2, minResources: {cpu: 1}, timeout: 3, aaa: 1}", 'unknown field "spec.aaa"'),
    ("{minMember: 2}\nstatus: {phase: Running, runing: 1}", 'unknown field "status.runing"'),
    ("{minMember: 2}\nspecc: {minMember: 2}", 'unknown field "specc"'),
])
def test_a_podgroup_the_crd_refuses_is_refused_in_one_line_naming_it(
        spec: str, told: str, tmp_path: Path) -> None:
    assert simulate(spec, tmp_path) == (exit_codes.USAGE, f"gangsched simulate: {WHERE}: {told}\n")


@pytest.mark.parametrize("spec", [
    "{}", "null", "{minMember: 1, scheduleTimeoutSeconds: 0}",
    "{minMember: null, scheduleTimeoutSeconds: null}",  # pruned by the API server: absent
    "{minMember: 3, minResources: {cpu: 2, memory: 1Gi, nvidia.com/gpu: '0', ephemeral-storage: "
    "+1.5e3}}"])
def test_a_podgroup_the_crd_admits_is_simulated(spec: str, tmp_path: Path) -> None:
    assert simulate(spec, tmp_path) == (exit_codes.OK, "")


@pytest.mark.parametrize(("spec", "served"), [
    ({"minMember": 2.0, "scheduleTimeoutSeconds": 30.0, "minResources": {"cpu": 2.0, "x": "1"}},
     {"minMember": 2, "scheduleTimeoutSeconds": 30, "minResources": {"cpu": 2, "x": "1"}}),
    ({"minMember": 3}, {"minMember": 3}),
])
def test_an_integral_number_is_an_integer_as_the_api_server_serves_it(
        spec: dict[str, Any], served: dict[str, Any]) -> None:
    """kube-openapi's validation takes 2.0 for an integer, and the API server's Go encoder
    writes it back `2`: the simulation reads what it would serve."""
    podgroup = {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
                "metadata": {"name": "g"}, "spec": spec}
    got = podgroup_crd.admitted(podgroup)
    assert got == {**podgroup, "spec": served}
    assert type(got["spec"]["minMember"]) is int


def test_an_integral_min_member_is_simulated_as_that_integer(tmp_path: Path) -> None:
    (tmp_path / "node.yaml").write_text(NODE)
    (tmp_path / "pg.yaml").write_text("apiVersion: scheduling.x-k8s.io/v1alpha1\nkind: PodGroup\n"
                                      "metadata: {name: g}\nspec: {minMember: 2.0}\n")
    result = CliRunner().invoke(app, ["simulate", "-o", "json", str(tmp_path / "node.yaml"),
                                      str(tmp_path / "pg.yaml")])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["podGroups"]["default/g"]["minMember"] == 2


def test_the_known_fields_are_the_crd_s() -> None:
    crd: dict[str, Any] = yaml.safe_load(CRD.read_text())
    (version,) = crd["spec"]["versions"]
    schema = version["schema"]["openAPIV3Schema"]
    assert "x-kubernetes-preserve-unknown-fields" not in schema
    assert (list(schema["properties"]), list(schema["properties"]["spec"]["properties"]),
            list(schema["properties"]["status"]["properties"])) == (
        list(podgroup_crd.FIELDS), list(podgroup_crd.SPEC_FIELDS),
        list(podgroup_crd.STATUS_FIELDS))


def test_the_watcher_still_reads_what_the_api_server_admitted_leniently() -> None:
    event = slim.podgroup_event({"metadata": {"name": "g"}, "spec": {"minMember": 0}}, 0)
    assert (event.min_member, event.invalid_reason) == (1, None)


def test_the_rules_are_the_crd_s() -> None:
    crd: dict[str, Any] = yaml.safe_load(CRD.read_text())
    (version,) = crd["spec"]["versions"]
    spec = version["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert spec["type"] == "object"
    fields = spec["properties"]
    assert {name: (field["type"], field["format"], field["minimum"])
            for name, field in fields.items() if "minimum" in field} == {
        name: ("integer", "int32", minimum) for name, minimum in podgroup_crd.MINIMUMS.items()}
    resources = fields["minResources"]
    quantity = resources["additionalProperties"]
    assert (resources["type"], resources["maxProperties"]) == (
        "object", podgroup_crd.MAX_MIN_RESOURCES)
    assert quantity["anyOf"] == [{"type": "integer"}, {"type": "string"}]
    assert (quantity["pattern"], quantity["maxLength"]) == (
        podgroup_crd.QUANTITY_PATTERN, podgroup_crd.MAX_QUANTITY_LENGTH)
    assert [rule["rule"] for rule in quantity["x-kubernetes-validations"]] == [
        "!string(self).startsWith('-')"]
    assert set(fields) == {*podgroup_crd.MINIMUMS, "minResources"}  # nothing else to check
