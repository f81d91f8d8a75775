"""`gangsched simulate` refuses a name or namespace the API server would refuse
(services/planner/simulate/object_names.py), in its words, as one line and exit status 2:
a DNS-1123 subdomain for most kinds (Coscheduling's PodGroup too, a custom resource), a
DNS-1123 label for a StatefulSet and a namespace, only a path segment for a
PodDisruptionBudget."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.planner.simulate import object_names
from services.planner.simulate.api_versions import SERVED
from tests.unit.test_simulate_api_versions import NODE, OBJECTS, simulate


def named(kind: str, name: str, namespace: str | None = None) -> str:
    """A valid object of `kind` (its first served apiVersion) with this name and namespace."""
    meta = f"{{name: '{name}'" + (f", namespace: '{namespace}'" if namespace else "") + "}"
    return f"apiVersion: {SERVED[kind][0]}\nkind: {kind}\nmetadata: {meta}\n{OBJECTS[kind]}"


@pytest.mark.parametrize("kind", sorted(set(SERVED) - {"List", "PodDisruptionBudget"}))
def test_a_kind_named_no_dns_subdomain_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str) -> None:
    code, err = simulate(tmp_path, NODE + "---\n" + named(kind, "Bad_Name"), capsys)
    assert code == 2
    assert f"({kind} " in err and "metadata.name" in err
    assert 'Invalid value: "Bad_Name": a lowercase RFC 1123 ' in err
    assert len(err.strip().splitlines()) == 1


def refused(kind: str, name: str, api_version: str | None = None) -> str | None:
    """Why the API server refuses a `kind` named `name`, or None."""
    body = {"apiVersion": api_version or SERVED[kind][0], "kind": kind,
            "metadata": {"name": name}}
    found = object_names.problem(body)
    return None if found is None else found[1]


def test_each_kind_has_the_api_servers_name_rule() -> None:
    for kind in ("PodGroup", "Pod", "Job", "Deployment"):
        assert refused(kind, "train.v2") is None, kind  # a subdomain may hold dots
        assert refused(kind, "Train_Job") is not None, kind
    assert refused("PodGroup", "Train_Job", "scheduling.k8s.io/v1alpha2") is not None
    # a StatefulSet's name is in its pods' host names: a label (no dots, 63 at most)
    assert refused("StatefulSet", "web.v1") == 'Invalid value: "web.v1": must not contain dots'
    assert refused("StatefulSet", "Web") == (
        'Invalid value: "Web": a lowercase RFC 1123 label must consist of lower case '
        "alphanumeric characters or '-', and must start and end with an alphanumeric character "
        "(e.g. 'my-name',  or '123-abc', regex used for validation is "
        "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')")
    assert refused("StatefulSet", "a" * 64) == (
        f'Invalid value: "{"a" * 64}": must be no more than 63 characters')
    # a PodDisruptionBudget's validation checks no name: only the generic path segment rule
    assert refused("PodDisruptionBudget", "Bad_Name") is None
    assert refused("PodDisruptionBudget", "a/b") == "Invalid value: \"a/b\": may not contain '/'"
    assert refused("PodDisruptionBudget", "..") == "Invalid value: \"..\": may not be '..'"
    assert refused("Pod", "") == "Required value: name or generateName is required"


def test_a_namespace_that_is_no_dns_label_is_refused_and_cluster_kinds_have_none(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, err = simulate(tmp_path, NODE + "---\n" + named("Pod", "p", "Bad NS"), capsys)
    assert code == 2 and "metadata.namespace" in err
    assert 'Invalid value: "Bad NS": a lowercase RFC 1123 label must consist' in err
    long = "a" * 64
    code, err = simulate(tmp_path, NODE + "---\n" + named("Pod", "p", long), capsys)
    assert code == 2 and "must be no more than 63 characters" in err
    code, out = simulate(tmp_path, NODE + "---\n" + named("Pod", "p", "team-a"), capsys)
    assert code == 0, out


def test_a_name_of_more_than_253_characters_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, err = simulate(tmp_path, NODE + "---\n" + named("Pod", "a" * 254), capsys)
    assert code == 2 and "must be no more than 253 characters" in err
