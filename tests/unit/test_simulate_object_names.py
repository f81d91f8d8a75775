"""`gangsched simulate` refuses a name or namespace the API server would refuse
(services/planner/simulate/object_names.py), in its words, as one line and exit status 2:
a DNS-1123 subdomain for built-in kinds, a path segment for Coscheduling's PodGroup (a custom
resource), a DNS-1123 label for a namespace."""

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


@pytest.mark.parametrize("kind", sorted(set(SERVED) - {"List", "PodGroup"}))
def test_a_built_in_kind_named_no_dns_subdomain_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str) -> None:
    code, err = simulate(tmp_path, NODE + "---\n" + named(kind, "Bad_Name"), capsys)
    assert code == 2
    assert f"({kind} " in err and "metadata.name" in err
    assert 'Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain must consist' in err
    assert len(err.strip().splitlines()) == 1


def test_a_podgroup_takes_any_path_segment_but_not_a_slash_or_a_dot() -> None:
    def refused(name: str) -> str | None:
        body = {"apiVersion": SERVED["PodGroup"][0], "kind": "PodGroup",
                "metadata": {"name": name}}
        found = object_names.problem(body)
        return None if found is None else found[1]

    assert refused("Train_Job.v2") is None  # a CRD's objects are only path segments
    assert refused("a/b") == "Invalid value: \"a/b\": may not contain '/'"
    assert refused("..") == "Invalid value: \"..\": may not be '..'"
    native = {"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup",
              "metadata": {"name": "Train_Job"}}
    assert object_names.problem(native) is not None  # the native API is built in


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
