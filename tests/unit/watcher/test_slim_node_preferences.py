"""Slimming preferred node affinity: terms carried with their weights in spec order, each
preference read as a required term is, and refused (the pod kept Pending with the field named)
where the API server's validation (`ValidatePreferredSchedulingTerms`) refuses them; values it
admits but kube-scheduler cannot parse (`labels.NewRequirement`) are named in
`preferred_unparseable` with kube-scheduler's error, the pod still valid."""

from __future__ import annotations

from typing import Any

import pytest

from services.contracts.events import (
    NodeSelectorRequirement,
    NodeSelectorTerm,
    PreferredSchedulingTerm,
)
from services.watcher import slim

FIELD = "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution"
SSD = {"key": "disk", "operator": "In", "values": ["ssd"]}


def preferring(*terms: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": "p", "namespace": "ml", "uid": "u1"},
            "spec": {"containers": [{"name": "c"}], "affinity": {"nodeAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": list(terms)}}}}


def test_terms_keep_weights_and_spec_order_and_the_pod_stays_valid() -> None:
    event = slim.pod_event(preferring(
        {"weight": 50, "preference": {"matchExpressions": [SSD]}},
        {"weight": 1, "preference": {"matchFields": [
            {"key": "metadata.name", "operator": "NotIn", "values": ["n1"]}]}},
        {"weight": 100, "preference": {}}), 0)
    assert event.invalid_reason is None and event.unsupported == ()
    assert event.preferred_affinity == (
        PreferredSchedulingTerm(50, NodeSelectorTerm(
            match_expressions=(NodeSelectorRequirement("disk", "In", ("ssd",)),))),
        PreferredSchedulingTerm(1, NodeSelectorTerm(
            match_fields=(NodeSelectorRequirement("metadata.name", "NotIn", ("n1",)),))),
        PreferredSchedulingTerm(100, NodeSelectorTerm()))


def test_no_preferred_terms_read_as_none() -> None:
    assert slim.pod_event(preferring(), 0).preferred_affinity == ()


@pytest.mark.parametrize(("term", "reason"), [
    ({"weight": 0, "preference": {"matchExpressions": [SSD]}},
     "[0].weight must be in the range 1-100, got 0"),
    ({"weight": 101, "preference": {"matchExpressions": [SSD]}},
     "[0].weight must be in the range 1-100, got 101"),
    ({"preference": {"matchExpressions": [SSD]}},
     "[0].weight must be in the range 1-100, got None"),
    ({"weight": "5", "preference": {"matchExpressions": [SSD]}},
     "[0].weight must be in the range 1-100, got '5'"),
    ({"weight": 5, "preference": {"matchExpressions": [
        SSD, {"key": "disk", "operator": "Like", "values": ["ssd"]}]}},
     "[0].preference.matchExpressions[1].operator is not a valid selector operator: 'Like'"),
    ({"weight": 5, "preference": {"matchExpressions": [{"key": "disk", "operator": "In"}]}},
     "[0].preference.matchExpressions[0].values must be specified when `operator` is In"),
    ({"weight": 5, "preference": {"matchExpressions": [
        {"key": "disk", "operator": "Exists", "values": ["ssd"]}]}},
     "[0].preference.matchExpressions[0].values must be empty when `operator` is Exists"),
    ({"weight": 5, "preference": {"matchExpressions": [
        {"key": "gen", "operator": "Gt", "values": ["1", "2"]}]}},
     "[0].preference.matchExpressions[0].values must be exactly one value when `operator` is "
     "Gt"),
    ({"weight": 5, "preference": {"matchExpressions": [
        {"key": "bad key", "operator": "Exists"}]}},
     "[0].preference.matchExpressions[0].key is not a valid label name: 'bad key'"),
    ({"weight": 5, "preference": {"matchFields": [
        {"key": "metadata.name", "operator": "Exists"}]}},
     "[0].preference.matchFields[0].operator is not a valid field selector operator: 'Exists'"),
    ({"weight": 5, "preference": {"matchFields": [
        {"key": "metadata.name", "operator": "In", "values": ["n1", "n2"]}]}},
     "[0].preference.matchFields[0].values must be exactly one value when `operator` is In"),
    ({"weight": 5, "preference": {"matchFields": [
        {"key": "metadata.uid", "operator": "In", "values": ["n1"]}]}},
     "[0].preference.matchFields[0].key is not a valid field selector key: 'metadata.uid'"),
    ({"weight": 5, "preference": {"matchFields": [
        {"key": "metadata.name", "operator": "In", "values": ["N_1"]}]}},
     "[0].preference.matchFields[0].values[0] is not a valid node name: 'N_1'"),
])
def test_a_term_the_api_server_refuses_keeps_the_pod_pending_with_the_field_named(
        term: dict[str, Any], reason: str) -> None:
    event = slim.pod_event(preferring(term), 0)
    assert event.invalid_reason == f"{FIELD}{reason}"
    assert event.unsupported == ()


def test_the_first_problem_in_spec_order_is_named() -> None:
    event = slim.pod_event(preferring({"weight": 5, "preference": {"matchExpressions": [SSD]}},
                                      {"weight": -1, "preference": {"matchExpressions": [
                                          {"key": "disk", "operator": "Nope"}]}}), 0)
    assert event.invalid_reason == f"{FIELD}[1].weight must be in the range 1-100, got -1"


def test_an_invalid_request_is_named_before_a_preferred_term() -> None:
    obj = preferring({"weight": 0, "preference": {}})
    obj["spec"]["containers"] = [{"name": "c", "resources": {"requests": {"cpu": "lots"}}}]
    reason = slim.pod_event(obj, 0).invalid_reason
    assert reason is not None and reason.startswith("spec.containers")



FORM = ("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' "
        "or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
        "'my_value',  or '12345', regex used for validation is "
        "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")
INTEGER = "for 'Gt', 'Lt' operators, the value must be an integer"


@pytest.mark.parametrize(("requirement", "error"), [
    ({"key": "gen", "operator": "Gt", "values": ["five"]},
     f'[0].matchExpressions[0].values[0]: Invalid value: "five": {INTEGER}'),
    # ParseInt reads the sign, but "-5" and "+5" are no label values (alphanumeric first)
    ({"key": "gen", "operator": "Gt", "values": ["-5"]},
     f'[0].matchExpressions[0].values[0][gen]: Invalid value: "-5": {FORM}'),
    ({"key": "gen", "operator": "Lt", "values": ["+5"]},
     f'[0].matchExpressions[0].values[0][gen]: Invalid value: "+5": {FORM}'),
    ({"key": "disk", "operator": "In", "values": ["ssd", "fast disk"]},
     f'[0].matchExpressions[0].values[1][disk]: Invalid value: "fast disk": {FORM}'),
    ({"key": "disk", "operator": "NotIn", "values": ["x" * 64]},
     f'[0].matchExpressions[0].values[0][disk]: Invalid value: "{"x" * 64}": must be no more '
     "than 63 characters"),
    ({"key": "disk", "operator": "In", "values": ["ssd-"]},
     f'[0].matchExpressions[0].values[0][disk]: Invalid value: "ssd-": {FORM}'),
    # both errors of one value, the integer one first, joined as an aggregate
    ({"key": "gen", "operator": "Lt", "values": ["v 2"]},
     f'[[0].matchExpressions[0].values[0]: Invalid value: "v 2": {INTEGER}, '
     f'[0].matchExpressions[0].values[0][gen]: Invalid value: "v 2": {FORM}]'),
])
def test_a_value_kube_scheduler_cannot_parse_is_named_and_the_pod_stays_valid(
        requirement: dict[str, Any], error: str) -> None:
    event = slim.pod_event(preferring({"weight": 5, "preference": {
        "matchExpressions": [requirement]}}), 0)
    assert event.invalid_reason is None
    assert event.preferred_unparseable == error
    assert event.preferred_affinity[0].preference.match_expressions[0].values == tuple(
        requirement["values"])


def test_parseable_values_leave_nothing_named() -> None:
    event = slim.pod_event(preferring(
        {"weight": 5, "preference": {"matchExpressions": [
            SSD, {"key": "gen", "operator": "Gt", "values": ["5"]},
            {"key": "disk", "operator": "In", "values": ["", "a.b_c-d", "x" * 63]}]}}), 0)
    assert event.preferred_unparseable is None


def test_terms_are_indexed_in_spec_order_as_kube_scheduler_paths_them() -> None:
    event = slim.pod_event(preferring(
        {"weight": 5, "preference": {"matchExpressions": [SSD]}},
        {"weight": 7, "preference": {"matchExpressions": [
            SSD, {"key": "gen", "operator": "Lt", "values": ["ten"]}]}}), 0)
    assert event.preferred_unparseable == (
        f'[1].matchExpressions[1].values[0]: Invalid value: "ten": {INTEGER}')
