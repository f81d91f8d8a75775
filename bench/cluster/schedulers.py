"""The schedulers compared, each at its best, and how to start one on a fresh control plane.

Layer: bench. Every scheduler runs against a control plane started with the same settings
(`COMMON_TESTBED_ARGS`: API priority and fairness off, 10,000/5,000 in-flight request limits,
nodes never marked NotReady for late lease renewals: `NODE_MONITOR_GRACE`),
and every scheduler authenticates alike: by the testbed's admin bearer token
(`TOKEN_KUBECONFIG`), as a scheduler deployed in a pod does with its ServiceAccount token. The
API server caches a token's check but verifies a client certificate's signature on every
request, which would tax each request of the benchmarked scheduler (KWOK and
kube-controller-manager keep their certificates, the same in every run).
- `gangsched`: `gangsched run` (embedded NATS + SQLite), INFO logs, from a source tree
  (`--gangsched-src`, default this checkout). It has no client-side QPS limit to raise
  (services/kube/client.py sends requests as they come, pool of 128 connections).
- `kube-scheduler`: the testbed's kube-scheduler, default profile, client QPS/burst 5000/5000.
- `kube-scheduler-gang`: the same binary with GenericWorkload + GangScheduling and the
  `scheduling.k8s.io/v1alpha2` API enabled on every component; gangs as native PodGroups.
- `coscheduling`: scheduler-plugins v0.34.7 built from the module proxy (`--coscheduling-bin`),
  Coscheduling in its own profile, QPS/burst 5000/5000.
- `trivial`: `bench.cluster.binder`, binds each pod the moment it is seen, round-robin; the
  fastest any scheduler can go on this control plane with this creator (the pipeline ceiling).
- `trivial-gang`: the same binder all or nothing per gang (`--gangs`: a gang's members are
  bound when its last one is seen, if they all fit); the fastest an all-or-nothing scheduler
  can go here. Its pods carry the PodGroup label and their gangs `crd` PodGroups, as
  gangsched's do.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from services.runtime import parent_death
from tests.cluster.fixture import ControlPlane

REPO = Path(__file__).resolve().parents[2]
QPS = 5000
TOKEN_KUBECONFIG = "kubeconfig-token"
"""The testbed's admin kubeconfig by bearer token, in the control plane's directory."""
NODE_MONITOR_GRACE = "10m"
"""kube-controller-manager's `--node-monitor-grace-period` (default 50 s): how long a node may
miss its lease renewals before it is marked NotReady and tainted. On two cores saturated by a
run, KWOK renewed 1,000 (let alone 5,000) node leases too late, so nodes turned NotReady during
the run: gangsched's binder then refused them and rolled gangs back, while the other schedulers
bound regardless, and the node updates counted among the run's requests. The benchmark
measures scheduling, not node health, so no node may go NotReady within a run."""
COMMON_TESTBED_ARGS = (
    "--apiserver-arg=--max-requests-inflight=10000",
    "--apiserver-arg=--max-mutating-requests-inflight=5000",
    f"--kcm-arg=--node-monitor-grace-period={NODE_MONITOR_GRACE}",
)
NATIVE_GATES = "GenericWorkload=true,GangScheduling=true"
NATIVE_RUNTIME_CONFIG = "scheduling.k8s.io/v1alpha2=true"
COSCHEDULING_NAME = "scheduler-plugins-scheduler"


class Running:
    """A started scheduler: `pids` (for CPU accounting and profiling), `stop()`, and where its
    Prometheus metrics are served, if anywhere."""

    def __init__(self, pids: list[int], stop: Callable[[], None], log_path: Path | None,
                 metrics_url: str | None = None) -> None:
        self.pids, self._stop, self.log_path = pids, stop, log_path
        self.metrics_url = metrics_url

    def stop(self) -> None:
        self._stop()

    def scrape(self, prefix: str = "gangsched_") -> dict[str, float]:
        """The `prefix`ed samples of its /metrics (`name{labels}` → value); {} if none."""
        if self.metrics_url is None:
            return {}
        try:
            with urllib.request.urlopen(self.metrics_url, timeout=10) as response:
                text = response.read().decode()
        except OSError:
            return {}
        samples = {}
        for line in text.splitlines():
            if line.startswith(prefix) and "_bucket" not in line:
                name, _, value = line.rpartition(" ")
                samples[name] = float(value)
        return samples


@dataclass(frozen=True)
class Scheduler:
    name: str
    scheduler_name: str
    group_api: str
    is_gang: bool
    testbed_args: tuple[str, ...] = ()
    uses_testbed_scheduler: bool = False
    launch: Callable[[ControlPlane, Path, dict[str, Any]], Running] = field(
        default=lambda cp, work, options: Running([], lambda: None, None))


def scheduler_config(kubeconfig: Path, profile: str = "") -> str:
    """A KubeSchedulerConfiguration (v1) with QPS/burst raised and leader election off."""
    return (f"apiVersion: kubescheduler.config.k8s.io/v1\n"
            f"kind: KubeSchedulerConfiguration\n"
            f"leaderElection:\n  leaderElect: false\n"
            f"clientConnection:\n  kubeconfig: {kubeconfig}\n  qps: {QPS}\n  burst: {QPS}\n"
            f"{profile}")


COSCHEDULING_PROFILE = f"""profiles:
- schedulerName: {COSCHEDULING_NAME}
  plugins:
    multiPoint:
      enabled:
      - name: Coscheduling
    queueSort:
      enabled:
      - name: Coscheduling
      disabled:
      - name: "*"
  pluginConfig:
  - name: Coscheduling
    args:
      permitWaitingTimeSeconds: 10
"""


def _testbed_scheduler(cp: ControlPlane, work: Path, options: dict[str, Any]) -> Running:
    pid = cp.pids["kube-scheduler"]
    return Running([pid], lambda: None, cp.dir / "logs" / "kube-scheduler.log")


def _gangsched(cp: ControlPlane, work: Path, options: dict[str, Any]) -> Running:
    """`gangsched run` from `options["gangsched_src"]` (a checkout; default: this repo), with
    `options["gangsched_sitecustomize"]` (a file) imported at start-up when given."""
    source = Path(options.get("gangsched_src") or REPO)
    data = work / "gangsched-data"
    data.mkdir(parents=True, exist_ok=True)
    log_path = data / "gangsched.log"
    python_path = str(source)
    if options.get("gangsched_sitecustomize"):
        site = work / "sitecustomize"
        site.mkdir(exist_ok=True)
        shutil.copy(options["gangsched_sitecustomize"], site / "sitecustomize.py")
        python_path = f"{site}{os.pathsep}{source}"
    with log_path.open("ab") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "services.cli.main", "run", "--kubeconfig",
             str(cp.dir / TOKEN_KUBECONFIG), "--data-dir", str(data), "--log-level", "INFO",
             *options.get("gangsched_args", ())],
            cwd=source, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            preexec_fn=parent_death.preexec(),
            env={**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": python_path})
    deadline = time.monotonic() + 120
    while not (data / "run.json").exists():
        if process.poll() is not None or time.monotonic() > deadline:
            _terminate(process)
            raise RuntimeError(f"gangsched run not ready (exit {process.returncode}); "
                               f"see {log_path}")
        time.sleep(0.2)
    http = json.loads((data / "run.json").read_text()).get("http")
    return Running([process.pid], lambda: _terminate(process, 60), log_path,
                   f"{http}/metrics" if http else None)


def _coscheduling(cp: ControlPlane, work: Path, options: dict[str, Any]) -> Running:
    binary = options.get("coscheduling_bin")
    if not binary or not Path(binary).exists():
        raise FileNotFoundError(f"scheduler-plugins binary not found: {binary!r}")
    config = work / "coscheduling.yaml"
    config.write_text(scheduler_config(cp.dir / TOKEN_KUBECONFIG, COSCHEDULING_PROFILE))
    port = _free_port()
    kc = str(cp.kubeconfig)
    log_path = work / "coscheduling.log"
    with log_path.open("ab") as log:
        process = subprocess.Popen(
            [binary, f"--config={config}", f"--authentication-kubeconfig={kc}",
             f"--authorization-kubeconfig={kc}", "--authentication-skip-lookup=true",
             "--bind-address=127.0.0.1", f"--secure-port={port}",
             f"--cert-dir={work / 'coscheduling-certs'}", "--v=1"],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            preexec_fn=parent_death.preexec())
    _wait_healthy(process, f"https://127.0.0.1:{port}/healthz", log_path)
    return Running([process.pid], lambda: _terminate(process), log_path)


def _trivial(cp: ControlPlane, work: Path, options: dict[str, Any], *,
             name: str = "trivial") -> Running:
    """`bench.cluster.binder` binding the pods of scheduler `name`: all or nothing per gang
    for `trivial-gang`, pod by pod otherwise."""
    log_path = work / f"{name}.log"
    with log_path.open("ab") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "bench.cluster.binder", "--testbed-json",
             str(cp.dir / "testbed.json"), "--scheduler-name", name,
             "--concurrency", str(options.get("bind_concurrency", 256)),
             "--slots-per-node", str(options["slots_per_node"]),
             *(["--gangs"] if name == "trivial-gang" else [])],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            preexec_fn=parent_death.preexec())
    time.sleep(1.0)  # its watch opens in well under a second; nothing exists yet anyway
    if process.poll() is not None:
        raise RuntimeError(f"{name} binder exited {process.returncode}: see {log_path}")
    return Running([process.pid], lambda: _terminate(process), log_path)


def _terminate(process: subprocess.Popen[bytes], timeout_seconds: float = 30.0) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout_seconds)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _wait_healthy(process: subprocess.Popen[bytes], url: str, log_path: Path) -> None:
    import ssl

    context = ssl._create_unverified_context()  # the scheduler's self-signed serving cert
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"scheduler exited {process.returncode}; see {log_path}")
        try:
            with urllib.request.urlopen(url, timeout=2, context=context) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.3)
    _terminate(process)
    raise RuntimeError(f"scheduler not healthy after 60s; see {log_path}")


def all_schedulers(work: Path) -> dict[str, Scheduler]:
    """Every scheduler by name; `work` is where their config files go (per control plane)."""
    kube_config = work / "kube-scheduler.yaml"
    args = (f"--scheduler-arg=--config={kube_config}",)
    return {s.name: s for s in (
        Scheduler("trivial", "trivial", "none", False, launch=_trivial),
        Scheduler("trivial-gang", "trivial-gang", "crd", True,
                  launch=functools.partial(_trivial, name="trivial-gang")),
        Scheduler("gangsched", "gangsched", "crd", True, launch=_gangsched),
        Scheduler("kube-scheduler", "default-scheduler", "none", False, args, True,
                  _testbed_scheduler),
        Scheduler("kube-scheduler-gang", "default-scheduler", "native", True,
                  (*args, f"--feature-gates={NATIVE_GATES}",
                   f"--runtime-config={NATIVE_RUNTIME_CONFIG}"), True, _testbed_scheduler),
        Scheduler("coscheduling", COSCHEDULING_NAME, "crd", True, launch=_coscheduling),
    )}


def prepare(scheduler: Scheduler, cp_dir: Path) -> None:
    """Write what the control plane needs before it starts (the kube-scheduler config)."""
    if scheduler.uses_testbed_scheduler:
        cp_dir.mkdir(parents=True, exist_ok=True)
        (cp_dir / "kube-scheduler.yaml").write_text(
            scheduler_config(cp_dir / TOKEN_KUBECONFIG))
