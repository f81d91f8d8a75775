"""The chart's hardening on the real API server: the CRD refuses negative PodGroup values with
its messages, the admission policy warns when a pod of gangsched asks for a constraint gangsched
refuses (and only then), and the PodGroup roles aggregate into the built-in view and edit roles.
(tests/e2e/test_deploy.py applies every rendered object, with the default and the HA values.)
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from tests.cluster.fixture import ControlPlane
from tests.support.waiting import eventually
from tests.unit.deploy import chart, unsupported

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

POLICY = f"{chart.RELEASE}-unsupported-constraints"
WARNING = (f"Warning: Validation failed for ValidatingAdmissionPolicy '{POLICY}' with binding "
           f"'{POLICY}': schedulerName gangsched: gangsched will keep this pod Pending ")


def _kubectl(cp: ControlPlane, *args: str, input: str | None = None,
             user: str | None = None) -> subprocess.CompletedProcess[str]:
    """kubectl with the admin kubeconfig (impersonating `user` if given); stderr kept, since
    admission warnings go there."""
    impersonate = ["--as", user] if user else []
    return subprocess.run(cp.kubectl_command(*impersonate, *args), input=input,
                          capture_output=True, text=True, timeout=60, check=False)


def _cluster_objects(kinds: tuple[str, ...]) -> list[dict[str, Any]]:
    return [obj for obj in chart.render() if obj["kind"] in kinds]


@pytest.fixture(scope="module")
def cluster_objects(control_plane: ControlPlane) -> Iterator[list[dict[str, Any]]]:
    """The chart's admission policy, its binding and the aggregated PodGroup roles, applied."""
    objects = _cluster_objects(("ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding",
                                "ClusterRole"))
    objects = [obj for obj in objects if obj["kind"] != "ClusterRole"
               or "podgroups-" in obj["metadata"]["name"]]
    control_plane.kubectl("apply", "--server-side", "-f", "-",
                          input=yaml.safe_dump_all(objects))
    yield objects
    for obj in objects:
        control_plane.kubectl("delete", obj["kind"].lower(), obj["metadata"]["name"],
                              "--ignore-not-found", "--wait=false")


NEGATIVE = [
    ("{minMember: -1}", "spec.minMember: Invalid value: -1: spec.minMember in body should be "
                        "greater than or equal to 1"),
    ("{scheduleTimeoutSeconds: -5}", "spec.scheduleTimeoutSeconds: Invalid value: -5: "
     "spec.scheduleTimeoutSeconds in body should be greater than or equal to 0"),
    ("{minResources: {cpu: '-1'}}", 'spec.minResources[cpu]: Invalid value: "-1": a '
                                    "minResources quantity must not be negative"),
    ("{minResources: {memory: -2}}", "spec.minResources[memory]: Invalid value: -2: a "
                                     "minResources quantity must not be negative"),
]


def _podgroup(namespace: str, spec: str) -> str:
    return (f"apiVersion: scheduling.x-k8s.io/v1alpha1\nkind: PodGroup\n"
            f"metadata: {{name: pg, namespace: {namespace}}}\nspec: {spec}\n")


@pytest.mark.parametrize(("spec", "message"), NEGATIVE, ids=[s for s, _ in NEGATIVE])
def test_the_crd_refuses_a_negative_value_with_its_message(
        control_plane: ControlPlane, namespace: str, spec: str, message: str) -> None:
    result = _kubectl(control_plane, "create", "--dry-run=server", "-f", "-",
                      input=_podgroup(namespace, spec))
    assert result.returncode == 1
    assert message in result.stderr, result.stderr


def test_the_crd_still_takes_coscheduling_podgroups(
        control_plane: ControlPlane, namespace: str) -> None:
    spec = "{minMember: 3, scheduleTimeoutSeconds: 0, minResources: {cpu: '0', memory: 1Gi, " \
           "nvidia.com/gpu: 2}}"
    result = _kubectl(control_plane, "create", "--dry-run=server", "-f", "-",
                      input=_podgroup(namespace, spec))
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""


def _pod(namespace: str, spec: dict[str, Any], scheduler: str = "gangsched") -> str:
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "p", "namespace": namespace},
           "spec": {"schedulerName": scheduler,
                    "containers": [{"name": "main", "image": "fake"}], **spec}}
    return yaml.safe_dump(pod)


def test_a_pod_of_gangsched_with_a_refused_constraint_is_warned(
        control_plane: ControlPlane, namespace: str, cluster_objects: list[dict[str, Any]]) -> None:
    listed = unsupported.constraints()
    assert listed
    for candidate in unsupported.CANDIDATES:
        entry = next((c for c in listed if c["field"] == candidate.field), None)
        if entry is None:
            continue  # gangsched supports it now: nothing to warn about

        def warned(entry: dict[str, str] = entry,
                   spec: dict[str, Any] = candidate.example) -> str:
            result = _kubectl(control_plane, "create", "--dry-run=server", "-f", "-",
                              input=_pod(namespace, spec))
            assert result.returncode == 0, result.stderr  # warned, not refused
            assert f"{WARNING}({entry['reason']})" in result.stderr, result.stderr
            return result.stderr

        eventually(warned, timeout=30, interval=0.5, what=f"warning for {candidate.field}")


def test_other_pods_are_not_warned(
        control_plane: ControlPlane, namespace: str, cluster_objects: list[dict[str, Any]]) -> None:
    claims = {"resourceClaims": [{"name": "gpu", "resourceClaimName": "gpu"}]}
    eventually(lambda: WARNING in _kubectl(control_plane, "create", "--dry-run=server", "-f",
                                           "-", input=_pod(namespace, claims)).stderr,
               timeout=30, interval=0.5, what="the policy in force")
    for pod in (_pod(namespace, {}), _pod(namespace, claims, scheduler="default-scheduler")):
        result = _kubectl(control_plane, "create", "--dry-run=server", "-f", "-", input=pod)
        assert result.returncode == 0, result.stderr
        assert result.stderr == ""


def test_namespace_viewers_read_podgroups_and_editors_manage_them(
        control_plane: ControlPlane, namespace: str, cluster_objects: list[dict[str, Any]]) -> None:
    for role, user in (("view", "viewer"), ("edit", "editor")):
        control_plane.kubectl("create", "rolebinding", f"{user}-{role}", "-n", namespace,
                              f"--clusterrole={role}", f"--user={user}")

    def can(user: str, verb: str) -> bool:
        result = _kubectl(control_plane, "auth", "can-i", verb, "podgroups.scheduling.x-k8s.io",
                          "-n", namespace, user=user)
        return result.stdout.strip() == "yes"

    # the controller-manager aggregates the roles' rules into view and edit
    eventually(lambda: can("viewer", "list") and can("editor", "create"), timeout=30,
               what="PodGroup rules aggregated into view and edit")
    assert [can("viewer", verb) for verb in ("get", "list", "watch")] == [True] * 3
    assert [can("viewer", verb) for verb in ("create", "update", "delete")] == [False] * 3
    assert [can("editor", verb) for verb in ("get", "create", "patch", "delete")] == [True] * 4
    created = _kubectl(control_plane, "create", "-f", "-", user="editor",
                       input=_podgroup(namespace, "{minMember: 2}"))
    assert created.returncode == 0, created.stderr
