"""Third-party controllers run against a local control plane: KubeRay's ray-operator.

Layer: test tooling (pytest side, beside `fixture.py`). The binary comes from the testbed's
build (`testbed build` builds `github.com/ray-project/kuberay/ray-operator` from the module
pinned in `kuberay/go.mod`); its CRDs are applied from that module's own files in the Go module
cache at set-up time, so no copy of them lives in this repository. Never touches processes it
did not start.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import urllib.error
import urllib.request
from pathlib import Path
from types import TracebackType

from tests.cluster.fixture import ControlPlane

HERE = Path(__file__).resolve().parent
KUBERAY_MOD = HERE / "kuberay"
KUBERAY_MODULE = "github.com/ray-project/kuberay/ray-operator"
RAY_CRDS = {"ray.io_rayclusters.yaml": "rayclusters.ray.io"}
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


class RayOperator:
    """KubeRay's operator with `--batch-scheduler=scheduler-plugins`: a RayCluster labelled
    `ray.io/gang-scheduling-enabled` gets a PodGroup (minMember = workers + head) and pods
    with `schedulerName: scheduler-plugins-scheduler` in that group."""

    def __init__(self, cp: ControlPlane, log_path: Path) -> None:
        self.cp, self.log_path = cp, log_path
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> RayOperator:
        """Apply the RayCluster CRD, start the operator, wait until /readyz answers."""
        from tests.support.waiting import eventually

        crds = module_dir(KUBERAY_MOD, KUBERAY_MODULE) / "config" / "crd" / "bases"
        for file, name in RAY_CRDS.items():
            self.cp.kubectl("apply", "--server-side", "-f", str(crds / file))
            eventually(lambda name=name: self._established(name), timeout=60,
                       what=f"CRD {name} Established")
        assert self.cp.bin_dir is not None
        probe = free_port()
        log = self.log_path.open("ab")
        self.process = subprocess.Popen(
            [str(self.cp.bin_dir / "ray-operator"), "--batch-scheduler=scheduler-plugins",
             "--enable-leader-election=false",
             f"--metrics-addr=127.0.0.1:{free_port()}",
             f"--health-probe-bind-address=127.0.0.1:{probe}", "--log-stdout-encoder=console"],
            stdout=log, stderr=subprocess.STDOUT,
            env={**os.environ, "KUBECONFIG": str(self.cp.kubeconfig)})
        log.close()
        eventually(lambda: self._running() and _healthy(f"http://127.0.0.1:{probe}/readyz"),
                   timeout=60, what="ray-operator ready")
        return self

    def _established(self, crd: str) -> bool:
        status = json.loads(self.cp.kubectl("get", "crd", crd, "-o", "json")).get("status", {})
        return any(c.get("type") == "Established" and c.get("status") == "True"
                   for c in status.get("conditions") or [])

    def _running(self) -> bool:
        assert self.process is not None
        assert self.process.poll() is None, f"ray-operator exited {self.process.returncode}"
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

    def __enter__(self) -> RayOperator:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.stop()
