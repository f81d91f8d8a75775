"""Forced rollback on the real control plane (no unbind: bound members are recreated).

The watcher and planner run as their own processes on a NATS the test starts; the binder is
started only once the Placement is on DECISIONS (or held with SIGSTOP), so the test can change
the cluster between decision and bind. After every rollback: no partial gang stays bound (owned
members bound in the attempt are deleted and recreated by their ReplicaSet), bare pods are
untouched, the events and the PodGroup status say what happened, and the gang is placed again
once it can be.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from services.binder import messages
from tests.cluster.fixture import ControlPlane, KubectlError
from tests.e2e import kube, manifests, split
from tests.support.waiting import eventually

pytestmark = pytest.mark.e2e

BACKOFF = ("--backoff-initial-seconds", "7", "--backoff-max-seconds", "8")
"""The planner retries a rolled-back gang after 7-8 s: long enough to see what the rollback
left behind before the gang is placed again (the binder writes PodGroup status after a 3 s
settle, so a shorter-lived state is never shown)."""



# --- reading what happened -------------------------------------------------------------------

def placement(services: split.Services, namespace: str, attempt: int = 1) -> dict[str, Any]:
    """The group's Placement decision of `attempt`, once the planner has published it."""
    subject = split.decision_subject("Placement", namespace, "g")

    def check() -> dict[str, Any] | None:
        found = split.last_message(services.nats.url, "DECISIONS", subject)
        return found if found is not None and found["attempt"] == attempt else None

    result = eventually(check, timeout=30, interval=0.2,
                        what=f"Placement attempt {attempt} of {namespace}/g")
    assert result is not None  # `eventually` returns only a truthy value
    return result


def outcome(services: split.Services, namespace: str, decision_id: str,
            kind: str) -> dict[str, Any]:
    """The bind outcome `kind` (e.g. GroupRolledBack) the binder published for a decision."""
    subject = split.outcome_subject(namespace, "g")

    def check() -> dict[str, Any] | None:
        for message in split.messages(services.nats.url, "EVENTS", subject):
            if message["type"] == kind and message["decision_id"] == decision_id:
                return message
        return None

    result = eventually(check, timeout=45, interval=0.3,
                        what=f"{kind} for decision {decision_id}")
    assert result is not None  # `eventually` returns only a truthy value
    return result


def pods_by_name(cp: ControlPlane, namespace: str) -> dict[str, dict[str, Any]]:
    return {pod["metadata"]["name"]: pod for pod in kube.pods(cp, namespace)}


def uid(pod: dict[str, Any]) -> str:
    return str(pod["metadata"]["uid"])


def node_of(pod: dict[str, Any]) -> str | None:
    node: str | None = pod["spec"].get("nodeName")
    return node


def replicaset_pods(cp: ControlPlane, namespace: str) -> dict[str, dict[str, Any]]:
    return {name: pod for name, pod in pods_by_name(cp, namespace).items()
            if pod["metadata"].get("ownerReferences")}


def podgroup_events(cp: ControlPlane, namespace: str) -> list[str]:
    """Messages of the FailedScheduling events about PodGroup g."""
    return [event["message"] for event in kube.events(cp, namespace, "FailedScheduling")
            if event["involvedObject"]["kind"] == "PodGroup"]


def pod_events(cp: ControlPlane, namespace: str, name: str, reason: str) -> list[str]:
    return [event["message"] for event in kube.events(cp, namespace, reason)
            if event["involvedObject"]["kind"] == "Pod"
            and event["involvedObject"]["name"] == name]


def rolled_back_condition(cp: ControlPlane, namespace: str, *words: str) -> dict[str, Any]:
    """Wait until PodGroup g's `Scheduled` condition says its placement was rolled back."""
    def check() -> dict[str, Any]:
        status = kube.get_json(cp, "podgroup", "g", "-n", namespace).get("status") or {}
        found = [c for c in status.get("conditions") or [] if c["type"] == "Scheduled"]
        assert found, status
        condition: dict[str, Any] = found[0]
        assert (condition["status"], condition["reason"]) == ("False", "Unschedulable"), found
        assert "rolled back" in condition["message"], condition
        assert all(word in condition["message"] for word in words), (words, condition)
        return condition

    result: dict[str, Any] = eventually(check, timeout=20, interval=0.2,
                                        what="the PodGroup condition naming the rollback")
    return result


def condition_message(cp: ControlPlane, namespace: str) -> str | None:
    """The message of PodGroup g's `Scheduled` condition, if it has one."""
    status = kube.get_json(cp, "podgroup", "g", "-n", namespace).get("status") or {}
    found = [c for c in status.get("conditions") or [] if c["type"] == "Scheduled"]
    return str(found[0]["message"]) if found else None


def gang_runs(cp: ControlPlane, namespace: str, members: int) -> dict[str, dict[str, Any]]:
    """Wait until `members` pods are bound and PodGroup g reports them Running."""
    def check() -> dict[str, dict[str, Any]]:
        pods = pods_by_name(cp, namespace)
        assert len(kube.bound(list(pods.values()))) == members, {
            name: node_of(pod) for name, pod in pods.items()}
        status = kube.get_json(cp, "podgroup", "g", "-n", namespace).get("status") or {}
        assert (status.get("phase"), status.get("running")) == ("Running", members), status
        return pods

    result: dict[str, dict[str, Any]] = eventually(check, timeout=45, interval=0.3,
                                                   what=f"{members} members bound and Running")
    return result


def names_of(assignments: list[dict[str, Any]]) -> list[str]:
    return [member["name"] for member in assignments]


# --- the cases -----------------------------------------------------------------------------

def test_member_deleted_between_decision_and_bind_rolls_back_and_the_gang_is_placed_again(
        control_plane: ControlPlane, namespace: str, services: split.Services) -> None:
    services.start("watcher", "planner", extra=BACKOFF)
    manifests.apply(control_plane, namespace, manifests.podgroup("g", 4),
                    manifests.replicaset("train", "g", 3), manifests.pod("solo", "g"))
    decided = placement(services, namespace)
    assert "solo" in names_of(decided["members"])
    victim = next(m for m in decided["members"] if m["name"].startswith("train-"))
    solo = pods_by_name(control_plane, namespace)["solo"]
    control_plane.kubectl("delete", "pod", victim["name"], "-n", namespace, "--grace-period=0",
                          "--force")
    eventually(lambda: victim["name"] not in pods_by_name(control_plane, namespace),
               timeout=15, what="the member deleted")

    services.binder()
    rolled = outcome(services, namespace, decided["id"], "GroupRolledBack")
    assert rolled["failed_pod"] == victim["pod_uid"]
    assert rolled["reason"] == f"pod {namespace}/{victim['name']} was deleted"
    assert rolled["deleted_pods"] == []  # validation refused the gang before any bind
    pods = pods_by_name(control_plane, namespace)
    assert kube.bound(list(pods.values())) == [], "a partial gang stayed bound"
    assert uid(pods["solo"]) == uid(solo), "the bare pod was replaced"
    assert len(replicaset_pods(control_plane, namespace)) == 3, "the member was not recreated"
    expected = (f"gang {namespace}/g: placement attempt 1 rolled back: "
                f"pod {namespace}/{victim['name']} was deleted")
    eventually(lambda: expected in podgroup_events(control_plane, namespace), timeout=15,
               what="a FailedScheduling event on the PodGroup")
    assert expected in pod_events(control_plane, namespace, "solo", "FailedScheduling")
    rolled_back_condition(control_plane, namespace, victim["name"], "was deleted")

    pods = gang_runs(control_plane, namespace, 4)
    assert uid(pods["solo"]) == uid(solo)
    again = placement(services, namespace, attempt=2)
    outcome(services, namespace, again["id"], "GroupBound")


def test_node_deleted_between_decision_and_bind_rolls_back_and_the_gang_waits_for_a_node(
        control_plane: ControlPlane, namespace: str, services: split.Services) -> None:
    node = f"rollback-{namespace}"
    selector = {"gangsched-test": namespace}
    created = manifests.kwok_node(node, labels=selector)
    try:
        manifests.apply(control_plane, None, created)
        services.start("watcher", "planner", extra=BACKOFF)
        manifests.apply(control_plane, namespace, manifests.podgroup("g", 3),
                        manifests.replicaset("train", "g", 2, nodeSelector=selector),
                        manifests.pod("solo", "g", nodeSelector=selector))
        decided = placement(services, namespace)
        assert {member["node"] for member in decided["members"]} == {node}
        before = {name: uid(pod) for name, pod in pods_by_name(control_plane, namespace).items()}
        control_plane.kubectl("delete", "node", node)
        eventually(lambda: not control_plane.kubectl("get", "node", node, "--ignore-not-found"),
                   timeout=15, what="the node deleted")

        services.binder()
        rolled = outcome(services, namespace, decided["id"], "GroupRolledBack")
        first = decided["members"][0]
        reason = f"pod {namespace}/{first['name']} cannot go to node {node}: the node was deleted"
        assert (rolled["reason"], rolled["failed_pod"]) == (reason, first["pod_uid"])
        assert rolled["deleted_pods"] == []
        pods = pods_by_name(control_plane, namespace)
        assert kube.bound(list(pods.values())) == []
        assert {name: uid(pod) for name, pod in pods.items()} == before, "a member was replaced"
        eventually(lambda: any(f"gang {namespace}/g: placement attempt 1 rolled back: {reason}"
                               == message for message in podgroup_events(control_plane,
                                                                          namespace)),
                   timeout=15, what="a FailedScheduling event on the PodGroup")
        rolled_back_condition(control_plane, namespace, "the node was deleted")

        manifests.apply(control_plane, None, created)
        pods = gang_runs(control_plane, namespace, 3)
        assert {name: uid(pod) for name, pod in pods.items()} == before
        assert {node_of(pod) for pod in pods.values()} == {node}
    finally:
        control_plane.kubectl("delete", "node", node, "--ignore-not-found")


def test_binds_refused_by_rbac_roll_back_owned_members_and_keep_bare_pods(
        control_plane: ControlPlane, namespace: str, services: split.Services,
        tmp_path: Path) -> None:
    with binder_account(control_plane, namespace, tmp_path, services) as account:
        services.start("watcher", "planner",
                       extra=("--backoff-initial-seconds", "1", "--backoff-max-seconds", "2"))
        services.binder(kubeconfig=account.kubeconfig)
        manifests.apply(control_plane, namespace, manifests.replicaset("train", "g", 2),
                        manifests.pod("solo-ok", "g"), manifests.pod("solo-refused", "g"))
        owned = eventually(lambda: replicaset_pods(control_plane, namespace)
                           if len(replicaset_pods(control_plane, namespace)) == 2 else None,
                           timeout=15, what="the ReplicaSet's pods")
        assert owned is not None  # `eventually` returns only a truthy value
        # The binder may bind the ReplicaSet's pods and solo-ok, but not solo-refused.
        account.allow_binding([*owned, "solo-ok"])
        before = {name: uid(pod) for name, pod in pods_by_name(control_plane, namespace).items()}
        manifests.apply(control_plane, namespace, manifests.podgroup("g", 4))

        decided = placement(services, namespace)
        rolled = outcome(services, namespace, decided["id"], "GroupRolledBack")
        assert rolled["failed_pod"] == before["solo-refused"]
        assert rolled["reason"].startswith(f"pod {namespace}/solo-refused: bind refused: "
                                           "HTTP 403 Forbidden"), rolled
        assert sorted(rolled["deleted_pods"]) == sorted(before[name] for name in owned)
        pods = eventually(lambda: pods_by_name(control_plane, namespace)
                          if len(pods_by_name(control_plane, namespace)) == 4 else None,
                          timeout=15, what="the ReplicaSet's replacements")
        assert pods is not None  # `eventually` returns only a truthy value
        assert not set(owned) & set(pods), "owned members bound in the attempt were not deleted"
        assert uid(pods["solo-ok"]) == before["solo-ok"], "a bare pod was deleted"
        assert node_of(pods["solo-ok"]) is not None, "the bare pod's bind was undone"
        assert uid(pods["solo-refused"]) == before["solo-refused"]
        assert node_of(pods["solo-refused"]) is None
        bound = {name for name, pod in pods.items() if node_of(pod)}
        assert bound == {"solo-ok"}, f"partial gang bound: {bound}"
        expected = (f"gang {namespace}/g: placement attempt 1 rolled back: "
                    f"pod {namespace}/solo-refused: bind refused: HTTP 403 Forbidden")
        eventually(lambda: any(m.startswith(expected) and m.endswith(
            "; 2 bound members deleted for their controllers to recreate; "
            "1 bound member without a controller kept")
                               for m in podgroup_events(control_plane, namespace)),
                   timeout=15, what="a FailedScheduling event on the PodGroup")
        rolled_back_condition(control_plane, namespace, "solo-refused", "forbidden")

        account.allow_binding(None)
        pods = gang_runs(control_plane, namespace, 4)
        assert uid(pods["solo-ok"]) == before["solo-ok"]
        assert uid(pods["solo-refused"]) == before["solo-refused"]


def test_deadline_passing_while_the_api_server_is_paused_rolls_back_after_it_resumes(
        control_plane: ControlPlane, namespace: str, services: split.Services,
        tmp_path: Path) -> None:
    with binder_account(control_plane, namespace, tmp_path, services) as account:
        account.allow_binding(None)
        services.start("watcher", "planner", extra=BACKOFF)
        binder = services.binder(kubeconfig=account.kubeconfig)
        manifests.apply(control_plane, namespace, manifests.podgroup("g", 4, timeout_seconds=5),
                        manifests.replicaset("train", "g", 3))
        eventually(lambda: "3 of 4 members exist" in (condition_message(
            control_plane, namespace) or ""), timeout=20,
            what="the binder reported the waiting gang")
        # Hold the binder, so that the gang's Placement is the first decision it sees next.
        binder.signal(signal.SIGSTOP)
        eventually(lambda: split.waiting_pulls(services.nats.url) == 0, timeout=10, interval=0.2,
                   what="the held binder's pull request expired")
        manifests.apply(control_plane, namespace, manifests.pod("solo", "g"))
        decided = placement(services, namespace)
        by_name = {member["name"]: member for member in decided["members"]}
        early = min(name for name in by_name if name.startswith("train-"))
        # Binds sent into the paused API server may be stored when it resumes, after the
        # deadline, even between the binder's reads. The later members' never can be (RBAC):
        # the gang cannot complete that way, and what is bound is what the test bound.
        account.allow_binding([early, "solo"])
        # Two binds are stored before the API server stops answering (as when a binder's binds
        # went through and their answers were lost); the other two never are before it resumes.
        manifests.create(control_plane, namespace, *(manifests.binding(
            namespace, name, by_name[name]["pod_uid"], by_name[name]["node"], decided["id"])
            for name in (early, "solo")))

        apiserver = control_plane.pids["kube-apiserver"]
        os.kill(apiserver, signal.SIGSTOP)
        try:
            binder.signal(signal.SIGCONT)
            # the binder's round runs one timeout from when it starts binding (queueing is not
            # charged): hold the API server past that too, or binds answered as it resumes
            # would (rightly) finish the gang
            resumed_ms = time.time() * 1000
            held_until_ms = max(decided["deadline_ms"],
                                resumed_ms + decided["deadline_ms"] - decided["at_ms"]) + 1000
            eventually(lambda: time.time() * 1000 > held_until_ms, timeout=20, interval=0.1,
                       what="the placement's deadline and the binder's round passed")
        finally:
            os.kill(apiserver, signal.SIGCONT)
        taken = re.search(rf"placement {decided['id']} of \S+ \(attempt 1, 4 members, delivery "
                          rf"first\) due in (-?[0-9.]+)s", binder.log_text())
        assert taken and float(taken.group(1)) > 0, "the binder took the placement too late"

        rolled = outcome(services, namespace, decided["id"], "GroupRolledBack")
        # The reason counts what the API server held (the two binds the test stored), not
        # which answers came before the deadline; the owned one is deleted, the bare one kept.
        reason = "deadline passed with 2 of 4 members bound"
        assert rolled["reason"] == reason, rolled
        assert rolled["deleted_pods"] == [by_name[early]["pod_uid"]], rolled
        pods = pods_by_name(control_plane, namespace)
        assert early not in pods, "the owned member bound in the attempt was not deleted"
        assert uid(pods["solo"]) == by_name["solo"]["pod_uid"], "the bare pod was deleted"
        assert node_of(pods["solo"]) == by_name["solo"]["node"]
        assert {name for name, pod in pods.items() if node_of(pod)} == {"solo"}
        expected = messages.rolled_back(f"{namespace}/g", 1, reason, 1, 1)
        assert expected.endswith("1 bound member without a controller kept")
        eventually(lambda: expected in podgroup_events(control_plane, namespace), timeout=15,
                   what="a FailedScheduling event on the PodGroup")
        rolled_back_condition(control_plane, namespace, "deadline passed")

        account.allow_binding(None)
        pods = gang_runs(control_plane, namespace, 4)
        assert uid(pods["solo"]) == by_name["solo"]["pod_uid"]


# --- a binder identity without pods/binding ---------------------------------------------------

class BinderAccount:
    """A ServiceAccount for the binder with everything it needs except `pods/binding`, which a
    namespaced Role grants for named pods only (or for all pods, or not at all)."""

    def __init__(self, cp: ControlPlane, namespace: str, kubeconfig: Path) -> None:
        self.cp = cp
        self.namespace = namespace
        self.kubeconfig = kubeconfig
        self.cluster_name = f"gangsched-binder-{namespace}-{uuid.uuid4().hex[:6]}"

    def create(self) -> None:
        subject = {"kind": "ServiceAccount", "name": "binder", "namespace": self.namespace}
        manifests.apply(self.cp, None,
                        {"apiVersion": "v1", "kind": "ServiceAccount",
                         "metadata": {"name": "binder", "namespace": self.namespace}},
                        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                         "metadata": {"name": self.cluster_name}, "rules": BINDER_RULES},
                        {"apiVersion": "rbac.authorization.k8s.io/v1",
                         "kind": "ClusterRoleBinding", "metadata": {"name": self.cluster_name},
                         "roleRef": {"apiGroup": "rbac.authorization.k8s.io",
                                     "kind": "ClusterRole", "name": self.cluster_name},
                         "subjects": [subject]},
                        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                         "metadata": {"name": "binder-binding", "namespace": self.namespace},
                         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                                     "name": "binder-binding"},
                         "subjects": [subject]})
        self.allow_binding([])
        token = self.cp.kubectl("create", "token", "binder", "-n", self.namespace,
                                "--duration=1h").strip()
        kube.token_kubeconfig(self.cp, self.kubeconfig, token)

    def allow_binding(self, pod_names: list[str] | None) -> None:
        """Grant `pods/binding` for these pods only (None: for every pod; []: for none)."""
        rule: dict[str, Any] = {"apiGroups": [""], "resources": ["pods/binding"],
                                "verbs": ["create"]}
        if pod_names is not None:
            rule["resourceNames"] = pod_names or ["nothing"]
        manifests.apply(self.cp, self.namespace, {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": "binder-binding"}, "rules": [rule]})
        eventually(lambda: self._can_bind(pod_names), timeout=10, interval=0.2,
                   what=f"pods/binding granted for {pod_names}")

    def _can_bind(self, pod_names: list[str] | None) -> bool:
        """Whether the API server already enforces the grant: a named pod may be bound and
        any other may not (None: any pod may; []: none may)."""
        if pod_names is None:
            return self._can_bind_pod("any-pod")
        return (all(self._can_bind_pod(name) for name in pod_names)
                and not self._can_bind_pod("any-other-pod"))

    def _can_bind_pod(self, name: str) -> bool:
        try:
            answer = self.cp.kubectl(
                "auth", "can-i", "create", f"pods/{name}", "--subresource=binding",
                "-n", self.namespace, f"--as=system:serviceaccount:{self.namespace}:binder")
        except KubectlError as error:  # `can-i` exits 1 for "no"
            answer = error.stdout
        return answer.strip() == "yes"

    def delete(self) -> None:
        self.cp.kubectl("delete", "clusterrolebinding,clusterrole", self.cluster_name,
                        "--ignore-not-found")


BINDER_RULES = [
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch", "delete"]},
    {"apiGroups": [""], "resources": ["pods/status"], "verbs": ["patch", "update"]},
    {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch"]},
    {"apiGroups": ["", "events.k8s.io"], "resources": ["events"],
     "verbs": ["create", "patch", "update"]},
    {"apiGroups": ["scheduling.x-k8s.io"], "resources": ["podgroups"],
     "verbs": ["get", "list", "watch"]},
    {"apiGroups": ["scheduling.x-k8s.io"], "resources": ["podgroups/status"],
     "verbs": ["get", "patch", "update"]},
    {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
     "verbs": ["get", "create", "update"]},
]
"""What the binder does besides binding: read pods and nodes, delete rolled-back members, write
pod conditions, events and PodGroup status, hold the Lease of its scheduler name."""


@contextlib.contextmanager
def binder_account(cp: ControlPlane, namespace: str, tmp_path: Path,
                   services: split.Services) -> Iterator[BinderAccount]:
    """A BinderAccount for the test, its cluster-scoped RBAC deleted afterwards, once the
    `services` using it are stopped."""
    account = BinderAccount(cp, namespace, tmp_path / "binder.kubeconfig")
    try:
        account.create()
        yield account
    finally:
        for process in services.processes:  # before their rights go: they release the Lease
            if process.kubeconfig == account.kubeconfig:
                process.stop()
        account.delete()
