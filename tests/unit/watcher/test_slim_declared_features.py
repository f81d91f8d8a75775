"""Slimming what NodeDeclaredFeatures reads: a Node's `status.declaredFeatures`, and the
features a pod's scheduling requires, inferred from its spec as kube's `nodedeclaredfeatures`
library infers them (`InferForPodScheduling` of v0.36.3: a RestartAllContainers restart rule
on any container or init container; `hostNetwork` with `hostUsers: false`)."""

from __future__ import annotations

from typing import Any

import pytest

from services.watcher import declared_features, slim
from services.watcher.spec_memory import SpecMemory

RESTART_ALL = "RestartAllContainersOnContainerExits"
USERNS = "UserNamespacesHostNetworkSupport"
RULE = {"action": "RestartAllContainers", "exitCodes": {"operator": "In", "values": [42]}}


def node(status: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": "n0", "uid": "u0"}, "status": status}


def pod(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "p", "namespace": "ml", "uid": "u1"},
            "spec": {"containers": [{"name": "c"}], **spec}}


def restarting(*rules: Any, init: bool = False) -> dict[str, Any]:
    container = {"name": "r", "restartPolicy": "Never", "restartPolicyRules": list(rules)}
    return pod(initContainers=[container]) if init else pod(containers=[container])


def test_a_nodes_declared_features_are_carried_as_listed() -> None:
    listed = ["ExtendWebSocketsToKubelet", RESTART_ALL, "Vendor/fastNet"]
    event = slim.node_event(node({"declaredFeatures": listed}), 0)
    assert event.declared_features == tuple(listed)


@pytest.mark.parametrize(("status", "carried"), [
    ({}, ()), ({"declaredFeatures": None}, ()), ({"declaredFeatures": RESTART_ALL}, ()),
    ({"declaredFeatures": [RESTART_ALL, 7, None, {"a": 1}]}, (RESTART_ALL,)),
])
def test_declared_features_of_the_wrong_type_read_as_absent(
        status: dict[str, Any], carried: tuple[str, ...]) -> None:
    assert slim.node_event(node(status), 0).declared_features == carried


@pytest.mark.parametrize(("obj", "required"), [
    (restarting(RULE), (RESTART_ALL,)),
    (restarting(RULE, init=True), (RESTART_ALL,)),
    (restarting({"action": "Restart", "exitCodes": {"operator": "In", "values": [1]}}, RULE),
     (RESTART_ALL,)),
    (restarting({"action": "Restart", "exitCodes": {"operator": "In", "values": [1]}}), ()),
    (pod(hostNetwork=True, hostUsers=False), (USERNS,)),
    (pod(hostNetwork=True), ()),
    (pod(hostNetwork=True, hostUsers=True), ()),
    (pod(hostUsers=False), ()),
    (pod(hostNetwork=True, hostUsers=False,
         containers=[{"name": "c", "restartPolicy": "Never", "restartPolicyRules": [RULE]}]),
     (RESTART_ALL, USERNS)),
    (pod(), ()),
])
def test_the_required_features_are_inferred_as_kube_infers_them(
        obj: dict[str, Any], required: tuple[str, ...]) -> None:
    event = slim.pod_event(obj, 0)
    assert event.required_features == required
    assert event.invalid_reason is None and event.unsupported == ()


@pytest.mark.parametrize("spec", [
    {"containers": "c"}, {"containers": [None, "c", {"restartPolicyRules": "RULE"}]},
    {"initContainers": [{"restartPolicyRules": [None, "RestartAllContainers", {"action": 1}]}]},
    {"hostNetwork": "true", "hostUsers": "false"}, {"hostNetwork": True, "hostUsers": None},
])
def test_malformed_fields_require_nothing_and_never_raise(spec: dict[str, Any]) -> None:
    obj = {"metadata": {"name": "p", "uid": "u1"}, "spec": spec}
    assert slim.pod_event(obj, 0).required_features == ()


def test_a_remembered_reading_carries_the_features() -> None:
    memory = SpecMemory()
    spec = restarting(RULE)["spec"]
    assert memory(spec, "ml").required_features == (RESTART_ALL,)
    assert memory(dict(spec), "ml").required_features == (RESTART_ALL,)


def test_a_feature_past_its_max_version_is_no_longer_required(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """`InferForPodScheduling` skips a feature whose MaxVersion the target version exceeds
    (none has one in 1.36; the library's rule all the same)."""
    graduated = declared_features.Feature(
        RESTART_ALL, declared_features.restarts_all_containers, max_version=(1, 36, 2))
    monkeypatch.setattr(declared_features, "REGISTRY", (graduated,))
    spec = restarting(RULE)["spec"]
    assert declared_features.required(spec) == ()
    assert declared_features.required(spec, version=(1, 36, 2)) == (RESTART_ALL,)
    assert declared_features.required(spec, version=(1, 35, 0)) == (RESTART_ALL,)


def test_the_registry_is_sorted_by_name_as_the_library_sorts_it() -> None:
    names = [feature.name for feature in declared_features.REGISTRY]
    assert names == sorted(names) == [RESTART_ALL, USERNS]
