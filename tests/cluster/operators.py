"""Third-party controllers run against a local control plane: KubeRay's ray-operator, Kueue.

Layer: test tooling (pytest side, beside `fixture.py`). The binaries come from the testbed's
build (`testbed build` builds `github.com/ray-project/kuberay/ray-operator` and
`sigs.k8s.io/kueue/cmd/kueue` from the modules pinned in `kuberay/go.mod` and `kueue/go.mod`);
their CRDs (and Kueue's webhook configurations) are applied from those modules' own files in
the Go module cache at set-up time, so no copy of them lives in this repository. Never touches
processes it did not start.
"""

from __future__ import annotations

import base64
import functools
import json
import os
import socket
import subprocess
import urllib.error
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import yaml

from tests.cluster.fixture import ControlPlane

HERE = Path(__file__).resolve().parent
KUBERAY_MOD = HERE / "kuberay"
KUBERAY_MODULE = "github.com/ray-project/kuberay/ray-operator"
RAY_CRDS = {"ray.io_rayclusters.yaml": "rayclusters.ray.io"}
KUEUE_MOD = HERE / "kueue"
KUEUE_MODULE = "sigs.k8s.io/kueue"
KUEUE_CRDS = {f"kueue.x-k8s.io_{plural}.yaml": f"{plural}.kueue.x-k8s.io" for plural in (
    "admissionchecks", "clusterqueues", "cohorts", "localqueues", "multikueueclusters",
    "multikueueconfigs", "provisioningrequestconfigs", "resourceflavors", "topologies",
    "workloadpriorityclasses", "workloads")}
KUEUE_WEBHOOK_PATHS = ("/mutate--v1-pod", "/validate--v1-pod", "/mutate-batch-v1-job",
                       "/validate-batch-v1-job", "-kueue-x-k8s-io-")
"""The webhooks kept: those of the integrations enabled (pod, batch/job) and of Kueue's own
kinds. The others' handlers are not served, and a webhook that fails closed would refuse
every Deployment, StatefulSet, ... of the control plane."""
GOMODCACHE = Path(os.environ.get("GANGSCHED_CACHE", Path.home() / ".cache" / "gangsched")) / "gomod"


def module_dir(mod: Path, module: str) -> Path:
    """`module`'s directory in the testbed's module cache, as `mod`'s go.mod pins it."""
    env = {**os.environ, "GOMODCACHE": str(GOMODCACHE), "GOFLAGS": "-mod=mod"}
    out = subprocess.run(["go", "list", "-m", "-f", "{{.Dir}}", module], cwd=mod, env=env,
                         check=True, capture_output=True, text=True).stdout.strip()
    return Path(out)


def free_port() -> int:
    """A loopback port free at the time of asking."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def apply_crds(cp: ControlPlane, crds: Path, files: dict[str, str]) -> None:
    """Server-side apply each CRD file of `crds` (file -> CRD name); wait until Established."""
    from tests.support.waiting import eventually

    for file, name in files.items():
        cp.kubectl("apply", "--server-side", "-f", str(crds / file))
        eventually(functools.partial(_established, cp, name), timeout=60,
                   what=f"CRD {name} Established")


def _established(cp: ControlPlane, crd: str) -> bool:
    status = json.loads(cp.kubectl("get", "crd", crd, "-o", "json")).get("status", {})
    return any(c.get("type") == "Established" and c.get("status") == "True"
               for c in status.get("conditions") or [])


class _Operator:
    """One operator process of ours, its output in `log_path`; a context manager."""

    name = "operator"

    def __init__(self, cp: ControlPlane, log_path: Path) -> None:
        self.cp, self.log_path = cp, log_path
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> Self:
        """Set up what the operator needs, start it, wait until it is ready."""
        raise NotImplementedError

    def _launch(self, argv: list[str]) -> None:
        """Start `argv` with the control plane's admin kubeconfig, output to the log."""
        log = self.log_path.open("ab")
        self.process = subprocess.Popen(
            argv, stdout=log, stderr=subprocess.STDOUT,
            env={**os.environ, "KUBECONFIG": str(self.cp.kubeconfig)})
        log.close()

    def _running(self) -> bool:
        assert self.process is not None
        assert self.process.poll() is None, f"{self.name} exited {self.process.returncode}"
        return True

    def stop(self) -> None:
        """SIGTERM, then SIGKILL after 15 s (only our own process)."""
        if self.process is None:
            return
        self.process.terminate()
        try:
            self.process.wait(15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def log_tail(self, lines: int = 60) -> str:
        if not self.log_path.exists():
            return ""
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.stop()


class RayOperator(_Operator):
    """KubeRay's operator with `--batch-scheduler=scheduler-plugins`: a RayCluster labelled
    `ray.io/gang-scheduling-enabled` gets a PodGroup (minMember = workers + head) and pods
    with `schedulerName: scheduler-plugins-scheduler` in that group."""

    name = "ray-operator"

    def start(self) -> RayOperator:
        """Apply the RayCluster CRD, start the operator, wait until /readyz answers."""
        from tests.support.waiting import eventually

        apply_crds(self.cp, module_dir(KUBERAY_MOD, KUBERAY_MODULE) / "config" / "crd" / "bases",
                   RAY_CRDS)
        assert self.cp.bin_dir is not None
        probe = free_port()
        self._launch(
            [str(self.cp.bin_dir / "ray-operator"), "--batch-scheduler=scheduler-plugins",
             "--enable-leader-election=false",
             f"--metrics-addr=127.0.0.1:{free_port()}",
             f"--health-probe-bind-address=127.0.0.1:{probe}", "--log-stdout-encoder=console"])
        eventually(lambda: self._running() and _healthy(f"http://127.0.0.1:{probe}/readyz"),
                   timeout=60, what="ray-operator ready")
        return self


class Kueue(_Operator):
    """Kueue with the batch/job and pod integrations, managing the `namespaces` given only
    (`managedJobsNamespaceSelector`; its pod and Job webhooks are scoped to them too).

    Its webhooks serve on loopback with a certificate made here (`internalCertManagement`
    off): the module's webhook configurations are installed with `clientConfig.url`
    `https://127.0.0.1:<port>/<path>` and this certificate as `caBundle`. The visibility
    API server (VisibilityOnDemand) is off: nothing here reads pending workloads.
    """

    name = "kueue"

    def __init__(self, cp: ControlPlane, log_path: Path, namespaces: tuple[str, ...]) -> None:
        super().__init__(cp, log_path)
        self.namespaces = namespaces
        self.dir = log_path.parent / "kueue"

    def start(self) -> Kueue:
        """Apply Kueue's CRDs, make its serving cert, start it, install its webhooks once its
        /readyz answers (the webhook server is up)."""
        from tests.support.waiting import eventually

        module = module_dir(KUEUE_MOD, KUEUE_MODULE)
        apply_crds(self.cp, module / "config" / "components" / "crd" / "bases", KUEUE_CRDS)
        assert self.cp.bin_dir is not None
        certs = self.dir / "certs"
        serving_cert(certs)
        webhook, probe = free_port(), free_port()
        config = self.dir / "config.yaml"
        config.write_text(yaml.safe_dump(self.configuration(webhook, probe, certs)))
        self._launch([*self._metrics_cert_mount(certs), str(self.cp.bin_dir / "kueue"),
                      f"--config={config}", "--feature-gates=VisibilityOnDemand=false",
                      "--zap-log-level=2"])
        eventually(lambda: self._running() and _healthy(f"http://127.0.0.1:{probe}/readyz"),
                   timeout=60, what="kueue ready")
        manifests = module / "config" / "components" / "webhook" / "manifests.yaml"
        ca_bundle = base64.b64encode((certs / "tls.crt").read_bytes()).decode()
        for document in webhook_configurations(manifests.read_text(), webhook, ca_bundle,
                                               self.namespaces):
            self.cp.kubectl("apply", "-f", "-", input=yaml.safe_dump(document))
        return self

    def _metrics_cert_mount(self, certs: Path) -> list[str]:
        """A command prefix giving Kueue `/etc/kueue/metrics/certs` in a private mount
        namespace only (an overlay on /etc; needs root, as `mount` does).

        Kueue v0.17 reads its metrics serving cert from that fixed path whenever
        internalCertManagement is off (cmd/kueue/main.go), even with metrics disabled;
        the host's /etc is left untouched."""
        upper, work = self.dir / "etc-upper", self.dir / "etc-work"
        target = upper / "kueue" / "metrics" / "certs"
        target.mkdir(parents=True, exist_ok=True)
        work.mkdir(exist_ok=True)
        for name in ("tls.crt", "tls.key"):
            (target / name).write_bytes((certs / name).read_bytes())
        script = ('mount -t overlay overlay -o "lowerdir=/etc,upperdir=$1,workdir=$2" /etc'
                  ' && shift 2 && exec "$@"')
        return ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh",
                str(upper), str(work)]

    def configuration(self, webhook_port: int, probe_port: int, cert_dir: Path) -> dict[str, Any]:
        """Kueue's `config.kueue.x-k8s.io/v1beta2` Configuration for this control plane.

        Source: apis/config/v1beta2/configuration_types.go: only jobs with a
        `kueue.x-k8s.io/queue-name` are managed (manageJobsWithoutQueueName false), and the
        pod integration only in the namespaces matched by managedJobsNamespaceSelector.
        """
        return {
            "apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration",
            "health": {"healthProbeBindAddress": f"127.0.0.1:{probe_port}"},
            "metrics": {"bindAddress": "0"},
            "webhook": {"host": "127.0.0.1", "port": webhook_port, "certDir": str(cert_dir)},
            "leaderElection": {"leaderElect": False},
            "internalCertManagement": {"enable": False},
            "manageJobsWithoutQueueName": False,
            "managedJobsNamespaceSelector": namespace_selector(self.namespaces),
            "integrations": {"frameworks": ["batch/job", "pod"]},
        }


def namespace_selector(namespaces: tuple[str, ...]) -> dict[str, Any]:
    """A label selector matching exactly these namespaces (by their automatic name label)."""
    return {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "In",
                                  "values": list(namespaces)}]}


def serving_cert(cert_dir: Path) -> None:
    """A self-signed EC P-256 serving cert for 127.0.0.1 as `tls.crt`/`tls.key` in `cert_dir`
    (controller-runtime's webhook server reads those names); it is its own CA bundle."""
    cert_dir.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
         "-nodes", "-days", "2", "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1",
         "-keyout", str(cert_dir / "tls.key"), "-out", str(cert_dir / "tls.crt")],
        check=True, capture_output=True)


def webhook_configurations(manifests: str, port: int, ca_bundle: str,
                           namespaces: tuple[str, ...]) -> list[dict[str, Any]]:
    """Kueue's Mutating/ValidatingWebhookConfigurations, rewritten for loopback.

    Shapes: only the webhooks of KUEUE_WEBHOOK_PATHS; each `clientConfig` becomes
    `{url: https://127.0.0.1:<port><path>, caBundle}`; the pod and Job webhooks get a
    namespaceSelector of `namespaces` (Kueue's own docs exclude kube-system the same way).
    """
    documents = []
    for document in yaml.safe_load_all(manifests):
        if not document:
            continue
        kept = []
        for hook in document["webhooks"]:
            path = hook["clientConfig"]["service"]["path"]
            if not any(part in path for part in KUEUE_WEBHOOK_PATHS):
                continue
            hook["clientConfig"] = {"url": f"https://127.0.0.1:{port}{path}", "caBundle": ca_bundle}
            if "kueue-x-k8s-io" not in path:
                hook["namespaceSelector"] = namespace_selector(namespaces)
            kept.append(hook)
        document["metadata"]["name"] = f"kueue-{document['metadata']['name']}"
        documents.append({**document, "webhooks": kept})
    return documents
