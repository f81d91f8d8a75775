"""The Helm chart (deploy/chart) and the plain manifests rendered from it (deploy/manifests).

Renders with the helm binary of the testbed cache (`tests/cluster/testbed build`, which `make
test` runs first); nothing here talks to a cluster: tests/e2e/test_deploy.py applies the chart.
"""

from __future__ import annotations

import re
import subprocess
from typing import Any

import click
import pytest

from services.bus import connection
from services.cli.main import app
from services.config.settings import BusSettings
from services.contracts import producers
from tests.unit.deploy import chart

RELEASE = chart.RELEASE
Objects = list[dict[str, Any]]


FULL_OPTIONS = (
    "nats.replicas=3", "nats.tls.enabled=true", "nats.tls.secretName=nats-tls",
    "metrics.serviceMonitor.enabled=true", "planner.replicas=2", "database.type=postgresql",
    "database.postgresql.url=postgresql+asyncpg://u:p@db/gangsched",
    "nats.auth.passwords.binder=given-binder-password", "nats.auth.allowStreamUpdates=true",
)
"""The non-default values the tests below check, in one render (each render takes ~1 s)."""


@pytest.fixture(scope="module")
def rendered_text() -> str:
    return chart.render_text()


@pytest.fixture(scope="module")
def rendered(rendered_text: str) -> Objects:
    return chart.documents(rendered_text)


@pytest.fixture(scope="module")
def full() -> Objects:
    return chart.render(*FULL_OPTIONS)


def _workloads(objects: Objects) -> list[dict[str, Any]]:
    return [obj for obj in objects if obj["kind"] in ("Deployment", "StatefulSet")]


def _rules(objects: Objects, name: str) -> set[tuple[str, str, str]]:
    """(apiGroup, resource, verb) of every rule of ClusterRole `name`."""
    role = chart.find(objects, "ClusterRole", name)
    return {(group, resource, verb) for rule in role["rules"] for group in rule["apiGroups"]
            for resource in rule["resources"] for verb in rule["verbs"]}


def subject_matches(pattern: str, subject: str) -> bool:
    """NATS subject matching: `*` is one token, a final `>` one or more."""
    wanted, tokens = pattern.split("."), subject.split(".")
    for index, token in enumerate(wanted):
        if token == ">":
            return len(tokens) > index
        if index >= len(tokens) or token not in ("*", tokens[index]):
            return False
    return len(tokens) == len(wanted)


def may_publish(user: dict[str, Any], subject: str) -> bool:
    """Whether nats-server lets `user` (a rendered nats.conf entry) publish to `subject`."""
    rules = user["permissions"]["publish"]
    allowed = any(subject_matches(p, subject) for p in rules.get("allow", []))
    return allowed and not any(subject_matches(p, subject) for p in rules.get("deny", []))


def may_subscribe(user: dict[str, Any], subject: str) -> bool:
    return any(subject_matches(p, subject) for p in user["permissions"]["subscribe"]["allow"])


# --- the chart and its copies ---------------------------------------------------------------


def test_the_plain_manifests_are_the_chart_rendered_with_defaults() -> None:
    assert chart.MANIFEST.read_text() == chart.manifest_text(), (
        "deploy/manifests/gangsched.yaml is stale: run `python -m tests.unit.deploy.chart`")


_PASSWORD_VALUE = re.compile(r"""["']?password["']?\s*[:=]\s*(?P<value>[^\s,}]*)""", re.IGNORECASE)


def test_the_plain_manifests_hold_no_secret() -> None:
    """Everyone applying deploy/ unchanged would share any password rendered into it."""
    text = chart.MANIFEST.read_text()
    assert "$2a$" not in text and "$2b$" not in text and "$2y$" not in text, "bcrypt hash"
    for match in _PASSWORD_VALUE.finditer(text):
        value = match.group("value").strip("\"'")
        assert value.startswith("$GANGSCHED_") or value == "", match.group(0)
    for obj in chart.documents(text):
        if obj["kind"] == "Secret":
            assert obj["metadata"]["name"] != chart.USERS_SECRET
            assert not (set(obj.get("data") or {}) | set(obj.get("stringData") or {})) & {
                *chart.USERS, "route"}, obj["metadata"]["name"]
    objects = chart.documents(text)
    for name in ("watcher", "planner", "binder"):
        env = {item["name"]: item for item in
               chart.container(objects, "Deployment", f"{RELEASE}-{name}")["env"]}
        assert env["GANGSCHED_NATS_PASSWORD"]["valueFrom"]["secretKeyRef"] == {
            "name": chart.USERS_SECRET, "key": name}
    nats = {item["name"]: item for item in
            chart.container(objects, "StatefulSet", f"{RELEASE}-nats")["env"]}
    for user in chart.USERS:
        assert nats[f"GANGSCHED_{user.upper()}_PASSWORD"]["valueFrom"]["secretKeyRef"] == {
            "name": chart.USERS_SECRET, "key": user}
    assert chart.CREATE_SECRET in text  # the header tells how to make that Secret


def test_an_existing_secret_keeps_every_password_out_of_a_cluster_render() -> None:
    objects = chart.render(*chart.MANIFEST_VALUES, "nats.replicas=3")
    assert not any(obj["kind"] == "Secret" and obj["metadata"]["name"] == chart.USERS_SECRET
                   for obj in objects)
    conf = chart.secret_data(chart.find(objects, "Secret", f"{RELEASE}-nats-config"))["nats.conf"]
    assert "password: $GANGSCHED_ROUTE_PASSWORD" in conf and "nats-route://" not in conf
    nats = chart.container(objects, "StatefulSet", f"{RELEASE}-nats")
    routes = nats["args"][nats["args"].index("--routes") + 1].split(",")
    assert routes == [f"nats-route://route:$(GANGSCHED_ROUTE_PASSWORD)@{RELEASE}-nats-{i}."
                      f"{RELEASE}-nats-headless:6222" for i in range(3)]
    env = {item["name"]: item for item in nats["env"]}
    assert env["GANGSCHED_ROUTE_PASSWORD"]["valueFrom"]["secretKeyRef"] == {
        "name": chart.USERS_SECRET, "key": "route"}
    with pytest.raises(subprocess.CalledProcessError) as refused:
        chart.render(*chart.MANIFEST_VALUES, "nats.auth.passwords.binder=x")
    assert "existingSecret" in refused.value.stderr


def test_the_chart_crd_is_the_crd_in_deploy_crds() -> None:
    crds = chart.REPO / "deploy" / "crds"
    copies = chart.CHART / "crds"
    assert sorted(p.name for p in copies.iterdir()) == sorted(p.name for p in crds.iterdir())
    for original in crds.iterdir():
        assert (copies / original.name).read_bytes() == original.read_bytes(), (
            f"deploy/chart/crds/{original.name} differs from deploy/crds: copy it over")


def test_kustomize_adds_the_namespace_to_the_manifests() -> None:
    kubectl = chart.helm().parent / "kubectl"
    out = subprocess.run([str(kubectl), "kustomize", str(chart.REPO / "deploy")],
                         capture_output=True, text=True, check=True).stdout
    built = {(obj["kind"], obj["metadata"]["name"]) for obj in chart.documents(out)}
    manifest = {(obj["kind"], obj["metadata"]["name"])
                for obj in chart.documents(chart.MANIFEST.read_text())}
    assert built == manifest | {("Namespace", chart.NAMESPACE)}


def test_every_setting_in_the_configmap_is_a_gangsched_option(rendered: Objects) -> None:
    variables = {param.envvar for command in ("watcher", "planner", "binder")
                 for param in app.commands[command].params if isinstance(param, click.Option)}
    settings = chart.find(rendered, "ConfigMap", f"{RELEASE}-settings")["data"]
    assert set(settings) <= variables, set(settings) - variables
    for workload in ("watcher", "planner", "binder"):
        env = chart.container(rendered, "Deployment", f"{RELEASE}-{workload}")["env"]
        names = {item["name"] for item in env if item["name"].startswith("GANGSCHED_")}
        assert names <= variables, names - variables


# --- RBAC -----------------------------------------------------------------------------------


def test_the_watcher_may_only_list_and_watch_what_it_observes(rendered: Objects) -> None:
    assert _rules(rendered, f"{RELEASE}-watcher") == {
        (group, resource, verb) for group, resource in
        (("", "nodes"), ("", "pods"), ("scheduling.x-k8s.io", "podgroups"),
         ("scheduling.k8s.io", "podgroups"), ("", "persistentvolumeclaims"),
         ("", "persistentvolumes"), ("storage.k8s.io", "storageclasses"),
         ("policy", "poddisruptionbudgets"), ("", "namespaces"),
         ("storage.k8s.io", "csinodes"), ("storage.k8s.io", "volumeattachments"))
        for verb in ("list", "watch")}


def test_the_binder_may_only_make_the_calls_of_services_kube(rendered: Objects) -> None:
    assert _rules(rendered, f"{RELEASE}-binder") == {
        ("", "pods", "get"), ("", "pods", "delete"), ("", "pods/binding", "create"),
        ("", "pods/status", "patch"), ("", "nodes", "get"), ("", "nodes", "list"),
        ("events.k8s.io", "events", "create"), ("events.k8s.io", "events", "patch"),
        *((api, "podgroups", "get") for api in ("scheduling.x-k8s.io", "scheduling.k8s.io")),
        *((api, "podgroups/status", "patch")
          for api in ("scheduling.x-k8s.io", "scheduling.k8s.io")),
        *(("", resource, verb) for resource in ("persistentvolumes", "persistentvolumeclaims")
          for verb in ("get", "patch")),
        *(("coordination.k8s.io", "leases", verb) for verb in ("create", "get", "update"))}


def test_the_binder_may_read_and_renew_only_the_lease_of_its_scheduler_name(
        rendered: Objects) -> None:
    role = chart.find(rendered, "ClusterRole", f"{RELEASE}-binder")
    leases = [rule for rule in role["rules"] if rule["resources"] == ["leases"]]
    assert leases == [
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["create"]},
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
         "resourceNames": ["gangsched"], "verbs": ["get", "update"]}]
    renamed = chart.render("settings.schedulerName=batch.example")
    role = chart.find(renamed, "ClusterRole", f"{RELEASE}-binder")
    assert [rule.get("resourceNames") for rule in role["rules"]
            if rule["resources"] == ["leases"]] == [None, ["batch.example"]]
    unheld = chart.render("settings.schedulerLease=false")
    assert not [rule for rule in chart.find(unheld, "ClusterRole", f"{RELEASE}-binder")["rules"]
                if rule["resources"] == ["leases"]]


def test_the_planner_gets_no_role_and_no_token(rendered: Objects) -> None:
    roles = {obj["metadata"]["name"] for obj in rendered
             if obj["kind"] in ("ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")}
    assert f"{RELEASE}-planner" not in roles
    planner = chart.find(rendered, "Deployment", f"{RELEASE}-planner")["spec"]["template"]
    assert planner["spec"]["automountServiceAccountToken"] is False


def test_each_service_runs_as_its_own_service_account(rendered: Objects) -> None:
    for name in ("watcher", "planner", "binder"):
        pod = chart.find(rendered, "Deployment", f"{RELEASE}-{name}")["spec"]["template"]
        assert pod["spec"]["serviceAccountName"] == f"{RELEASE}-{name}"
        chart.find(rendered, "ServiceAccount", f"{RELEASE}-{name}")
    for name in ("watcher", "binder"):
        binding = chart.find(rendered, "ClusterRoleBinding", f"{RELEASE}-{name}")
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": f"{RELEASE}-{name}",
                                        "namespace": chart.NAMESPACE}]


# --- pods -----------------------------------------------------------------------------------


def test_every_container_runs_non_root_read_only_without_privileges(rendered: Objects) -> None:
    for workload in _workloads(rendered):
        pod = workload["spec"]["template"]["spec"]
        assert pod["securityContext"]["runAsNonRoot"] is True
        assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
        for container in pod["containers"] + pod.get("initContainers", []):
            context = container["securityContext"]
            assert context["allowPrivilegeEscalation"] is False
            assert context["readOnlyRootFilesystem"] is True
            assert context["capabilities"] == {"drop": ["ALL"]}
            assert container["resources"]["requests"], container["name"]


def test_every_service_has_probes_and_a_scrapable_metrics_port(rendered: Objects) -> None:
    for name in ("watcher", "planner", "binder"):
        deployment = chart.find(rendered, "Deployment", f"{RELEASE}-{name}")
        container = deployment["spec"]["template"]["spec"]["containers"][0]
        assert container["args"] == [name]
        assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
        assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}
        assert container["ports"] == [{"name": "http", "containerPort": 8080, "protocol": "TCP"}]
        annotations = deployment["spec"]["template"]["metadata"]["annotations"]
        assert annotations["prometheus.io/scrape"] == "true"
        assert annotations["prometheus.io/port"] == "8080"
        service = chart.find(rendered, "Service", f"{RELEASE}-{name}")
        assert service["spec"]["ports"][0]["targetPort"] == "http"


def test_the_planner_elects_a_leader_and_keeps_sqlite_on_a_volume_by_default(
        rendered: Objects) -> None:
    env = chart.container_env(rendered, "Deployment", f"{RELEASE}-planner")
    assert env["GANGSCHED_LEADER_ELECTION"] == "true"
    assert "GANGSCHED_DB" not in env  # SQLite in the data directory, on the claim
    planner = chart.find(rendered, "Deployment", f"{RELEASE}-planner")["spec"]
    assert planner["strategy"] == {"type": "Recreate"}
    volumes = {v["name"]: v for v in planner["template"]["spec"]["volumes"]}
    assert volumes["data"]["persistentVolumeClaim"]["claimName"] == f"{RELEASE}-planner-db"
    chart.find(rendered, "PersistentVolumeClaim", f"{RELEASE}-planner-db")


def test_more_than_one_planner_needs_postgresql(full: Objects) -> None:
    with pytest.raises(subprocess.CalledProcessError) as refused:
        chart.render("planner.replicas=2")
    assert "needs database.type=postgresql" in refused.value.stderr
    objects = full
    env = chart.container_env(objects, "Deployment", f"{RELEASE}-planner")
    assert env["GANGSCHED_DB"] == "postgresql+asyncpg://u:p@db/gangsched"
    pod = chart.find(objects, "Deployment", f"{RELEASE}-planner")["spec"]["template"]["spec"]
    assert [c["args"] for c in pod["initContainers"]] == [["migrate"]]
    assert not any(obj["kind"] == "PersistentVolumeClaim" for obj in objects)


# --- NATS -----------------------------------------------------------------------------------


def test_each_nats_user_may_publish_only_what_its_service_produces(rendered: Objects) -> None:
    users = chart.nats_users(rendered)
    decision = "gangsched.decisions.placement.ml.train"
    observed = "gangsched.events.pod.ml.p1"
    outcome = "gangsched.events.outcome.ml.train"
    table = {
        "watcher": {observed: True, outcome: False, decision: False},
        "planner": {observed: False, outcome: False, decision: True,
                    "gangsched.deadletter": True, "$KV.GANGSCHED_LEADER.planner": True},
        "binder": {observed: False, outcome: True, decision: False},
        "subscriber": {observed: False, outcome: False, decision: False,
                       "$JS.API.CONSUMER.CREATE.GANGSCHED_DECISIONS": False,
                       "$JS.API.CONSUMER.CREATE.GANGSCHED_DECISIONS.mine": True,
                       "$JS.API.CONSUMER.DELETE.GANGSCHED_DECISIONS.binder": False,
                       "$JS.API.CONSUMER.MSG.NEXT.GANGSCHED_DECISIONS.binder": False,
                       "$JS.API.STREAM.DELETE.GANGSCHED_DECISIONS": False},
    }
    for user, subjects in table.items():
        for subject, allowed in subjects.items():
            assert may_publish(users[user], subject) is allowed, (user, subject)


STREAMS = ("GANGSCHED_EVENTS", "GANGSCHED_DECISIONS", "GANGSCHED_DEADLETTER")


def test_no_nats_user_may_create_a_consumer_named_only_in_the_body(rendered: Objects) -> None:
    # the body of the nameless create may name another service's durable and rewrite it
    for user, permissions in chart.nats_users(rendered).items():
        for stream in STREAMS:
            assert not may_publish(permissions, f"$JS.API.CONSUMER.CREATE.{stream}"), user


def test_each_producer_publishes_events_only_on_its_own_subject_kinds(rendered: Objects) -> None:
    users = chart.nats_users(rendered)
    for kind, producer in producers.PRODUCER_OF_KIND.items():  # every kind of the contracts
        subject = f"gangsched.events.{kind}.default.x"
        for user in ("watcher", "planner", "binder", "subscriber"):
            assert may_publish(users[user], subject) is (user == producer), (user, subject)
    for user in users:
        assert not may_publish(users[user], "gangsched.events.forged.default.x"), user
    assert not may_publish(users["watcher"], "gangsched.deadletter")


def test_no_service_user_may_update_delete_or_purge_a_stream_but_each_may_create_them(
        rendered: Objects) -> None:
    users = chart.nats_users(rendered)
    for user in ("watcher", "planner", "binder"):
        for stream in STREAMS:
            assert may_publish(users[user], f"$JS.API.STREAM.INFO.{stream}"), user
            assert may_publish(users[user], f"$JS.API.STREAM.CREATE.{stream}"), user
    for user, entry in users.items():
        for verb in ("UPDATE", "DELETE", "PURGE", "MSG.DELETE"):
            for stream in (*STREAMS, "KV_GANGSCHED_LEADER", "ANY"):
                allowed = (user, verb, stream) == ("planner", "UPDATE", "KV_GANGSCHED_LEADER")
                assert may_publish(entry, f"$JS.API.STREAM.{verb}.{stream}") is allowed, (
                    user, verb, stream)


def test_allowing_stream_updates_lets_only_the_planner_update_only_the_three_streams(
        full: Objects) -> None:
    users = chart.nats_users(full)
    for stream in STREAMS:
        assert may_publish(users["planner"], f"$JS.API.STREAM.UPDATE.{stream}")
        assert not may_publish(users["planner"], f"$JS.API.STREAM.PURGE.{stream}")
        for user in ("watcher", "binder", "subscriber"):
            assert not may_publish(users[user], f"$JS.API.STREAM.UPDATE.{stream}"), user
    assert not may_publish(users["planner"], "$JS.API.STREAM.UPDATE.ANY")


def test_durable_consumers_belong_to_their_service_only(rendered: Objects) -> None:
    users = chart.nats_users(rendered)
    planner_next = "$JS.API.CONSUMER.MSG.NEXT.GANGSCHED_EVENTS.planner"
    binder_ack = "$JS.ACK.GANGSCHED_DECISIONS.binder.1.2.3.4.5.6"
    assert may_publish(users["planner"], planner_next)
    assert not may_publish(users["watcher"], planner_next)
    assert not may_publish(users["binder"], planner_next)
    assert may_publish(users["binder"], binder_ack)
    assert not may_publish(users["subscriber"], binder_ack)


def test_each_service_reads_only_its_own_inbox_and_the_subscriber_only_decisions(
        rendered: Objects) -> None:
    users = chart.nats_users(rendered)
    for name in ("watcher", "planner", "binder"):
        assert may_subscribe(users[name], f"_INBOX_{name}.abc")
        assert not may_subscribe(users[name], "_INBOX.abc")
        assert not may_subscribe(users[name], "gangsched.decisions.placement.ml.train")
    assert may_subscribe(users["subscriber"], "gangsched.decisions.placement.ml.train")
    assert not may_subscribe(users["subscriber"], "gangsched.events.pod.ml.p1")
    assert not may_subscribe(users["subscriber"], "_INBOX_planner.abc")


def test_every_nats_user_may_read_the_inbox_its_client_gets_and_no_other_users(
        rendered: Objects) -> None:
    # the inbox prefix services/bus/connection.py gives a named user (`gangsched decisions`
    # as the subscriber included), in the chart and in the plain manifests as shipped
    def inbox(user: str) -> str:
        return connection.inbox_prefix(BusSettings(user=user, password="pw")) + ".r1.1"

    for objects in (rendered, chart.manifest_objects()):
        users = chart.nats_users(objects)
        assert set(users) == set(chart.USERS)
        for name, entry in users.items():
            assert may_subscribe(entry, inbox(name)), name
            for other in set(users) - {name}:
                assert not may_subscribe(entry, inbox(other)), (name, other)


def test_each_service_connects_as_its_nats_user_with_its_password(rendered: Objects) -> None:
    users = chart.secret_data(chart.find(rendered, "Secret", f"{RELEASE}-nats-users"))
    assert set(users) == {"watcher", "planner", "binder", "subscriber"}
    assert len(set(users.values())) == 4 and all(len(p) == 32 for p in users.values())
    for name in ("watcher", "planner", "binder"):
        env = chart.container_env(rendered, "Deployment", f"{RELEASE}-{name}")
        assert env["GANGSCHED_NATS_USER"] == name
        assert env["GANGSCHED_NATS_PASSWORD"] == users[name]
        assert env["GANGSCHED_NATS"] == f"nats://{RELEASE}-nats.{chart.NAMESPACE}.svc:4222"
    conf = chart.secret_data(chart.find(rendered, "Secret", f"{RELEASE}-nats-config"))
    assert not any(password in conf["nats.conf"] for password in users.values())


def test_given_passwords_are_kept(full: Objects) -> None:
    objects = full
    users = chart.secret_data(chart.find(objects, "Secret", f"{RELEASE}-nats-users"))
    assert users["binder"] == "given-binder-password"


def test_three_nats_servers_form_a_cluster_and_streams_get_three_replicas(full: Objects) -> None:
    objects = full
    conf = chart.secret_data(chart.find(objects, "Secret", f"{RELEASE}-nats-config"))
    routes = [line.strip() for line in conf["nats.conf"].splitlines() if "nats-route://" in line]
    assert [r.split("@")[1] for r in routes] == [
        f'{RELEASE}-nats-{i}.{RELEASE}-nats-headless:6222"' for i in range(3)]
    assert chart.find(objects, "StatefulSet", f"{RELEASE}-nats")["spec"]["replicas"] == 3
    settings = chart.find(objects, "ConfigMap", f"{RELEASE}-settings")["data"]
    assert settings["GANGSCHED_STREAM_REPLICAS"] == "3"


def test_tls_serves_nats_over_tls_and_every_service_trusts_its_ca(full: Objects) -> None:
    objects = full
    conf = chart.secret_data(chart.find(objects, "Secret", f"{RELEASE}-nats-config"))
    assert 'cert_file: "/etc/nats-tls/tls.crt"' in conf["nats.conf"]
    for name in ("watcher", "planner", "binder"):
        env = chart.container_env(objects, "Deployment", f"{RELEASE}-{name}")
        assert env["GANGSCHED_NATS"].startswith("tls://")
        assert env["SSL_CERT_FILE"] == "/etc/gangsched/nats-ca/ca.crt"


def test_a_service_monitor_is_rendered_only_when_asked(rendered: Objects, full: Objects) -> None:
    assert not any(obj["kind"] == "ServiceMonitor" for obj in rendered)
    monitor = chart.find(full, "ServiceMonitor", RELEASE)
    assert monitor["spec"]["endpoints"][0]["port"] == "http"


def test_the_rendered_nats_conf_only_names_paths_of_the_nats_pod(rendered: Objects) -> None:
    conf = chart.secret_data(chart.find(rendered, "Secret", f"{RELEASE}-nats-config"))
    paths = {line.split(":", 1)[1].strip() for line in conf["nats.conf"].splitlines()
             if line.strip().startswith(("store_dir", "pid_file"))}
    assert paths == {'"/data"', '"/var/run/nats/nats.pid"'}


def _mounts_decision_key(objects: Objects, component: str) -> str | None:
    """The Secret a component's pod mounts as its decision key, or None."""
    deployment = chart.find(objects, "Deployment", f"{RELEASE}-{component}")
    volumes = deployment["spec"]["template"]["spec"]["volumes"]
    names = [v["secret"]["secretName"] for v in volumes if v["name"] == "decision-key"]
    return names[0] if names else None


def test_only_the_planner_and_the_binder_get_the_decision_key(rendered: Objects) -> None:
    secret = chart.find(rendered, "Secret", f"{RELEASE}-decision-key")
    assert len(chart.secret_data(secret)["key"]) == 64
    assert _mounts_decision_key(rendered, "planner") == f"{RELEASE}-decision-key"
    assert _mounts_decision_key(rendered, "binder") == f"{RELEASE}-decision-key"
    assert _mounts_decision_key(rendered, "watcher") is None
    for component in ("planner", "binder"):
        env = chart.container_env(rendered, "Deployment", f"{RELEASE}-{component}")
        assert env["GANGSCHED_DECISION_KEY_FILE"] == "/etc/gangsched/decision-key/key"
    assert "GANGSCHED_DECISION_KEY_FILE" not in chart.container_env(
        rendered, "Deployment", f"{RELEASE}-watcher")


def test_the_plain_manifests_use_the_decision_key_secret_the_user_makes() -> None:
    objects = chart.documents(chart.MANIFEST.read_text())
    assert not any(obj["kind"] == "Secret" and obj["metadata"]["name"] == chart.KEY_SECRET
                   for obj in objects)
    assert _mounts_decision_key(objects, "planner") == chart.KEY_SECRET
    assert _mounts_decision_key(objects, "binder") == chart.KEY_SECRET
    assert chart.CREATE_KEY_SECRET in chart.MANIFEST.read_text()
