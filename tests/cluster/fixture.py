"""Pytest support: run `tests/cluster/testbed up` as a subprocess and talk to it.

    with ControlPlane(nodes=2) as cp:
        cp.kubectl("get", "nodes")
        cp.apply(manifest_yaml, namespace="default")

The binaries are built first (synchronously, `testbed build`, cached under
~/.cache/gangsched/testbed/<key>/bin; a cold build takes tens of minutes), then `testbed up`
runs in its own process group and we wait for DIR/ready. On teardown the testbed gets SIGTERM
and stops every process it started. If anything fails, the working dir (logs, kubeconfig) is
kept and the tail of every log is printed.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import TracebackType
from typing import Any

from services.runtime import parent_death

TESTBED = Path(__file__).resolve().parent / "testbed"


class ControlPlaneError(RuntimeError):
    pass


class KubectlError(ControlPlaneError):
    def __init__(self, args: list[str], returncode: int, stdout: str, stderr: str):
        self.args_ = args
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr
        super().__init__(f"kubectl {' '.join(args)} failed ({returncode}): {stderr.strip()}")


def build(timeout: float = 3600.0) -> Path:
    """Build the control-plane binaries if they are not cached yet; return the bin dir."""
    return _testbed_path("build", timeout=timeout)


def tool(name: str, timeout: float = 1800.0) -> Path:
    """Build the test tool `name` (`testbed tool NAME`: cached apart from the control plane,
    under its own key) if it is not cached yet; return its binary."""
    return _testbed_path("tool", name, timeout=timeout)


def _testbed_path(*argv: str, timeout: float) -> Path:
    """Run `testbed ARGV...` and return the path it prints last."""
    r = subprocess.run(
        [sys.executable, str(TESTBED), *argv],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if r.returncode != 0:
        raise ControlPlaneError(
            f"testbed {' '.join(argv)} failed ({r.returncode}):\n{r.stderr[-5000:]}"
        )
    return Path(r.stdout.strip().splitlines()[-1])


class ControlPlane:
    """A local etcd + kube-apiserver + kube-controller-manager + KWOK (+ kube-scheduler).

    Attributes once started: dir, kubeconfig, bin_dir, server, ca_file, token (an admin bearer
    token in group system:masters), info (DIR/testbed.json: ports, pids, versions, timings).
    """

    def __init__(
        self,
        nodes: int = 1,
        cpu: str | int = "10",
        memory: str = "8Gi",
        pods: int = 110,
        kube_scheduler: bool = False,
        *,
        no_apf: bool = False,
        extra_args: list[str] | tuple[str, ...] = (),
        dir: str | os.PathLike[str] | None = None,
        ready_timeout: float = 120.0,
        build_timeout: float = 3600.0,
        keep_dir: bool = False,
    ) -> None:
        self.nodes, self.cpu, self.memory, self.pods = nodes, str(cpu), memory, pods
        self.kube_scheduler, self.no_apf, self.extra_args = kube_scheduler, no_apf, list(extra_args)
        self.ready_timeout, self.build_timeout = ready_timeout, build_timeout
        self._own_dir = dir is None
        self.dir = Path(dir) if dir is not None else Path(tempfile.mkdtemp(prefix="gangsched-cp-"))
        self.keep_dir = keep_dir
        self.kubeconfig = self.dir / "kubeconfig"
        # kubectl's (and helm's, through KUBECACHEDIR) API discovery cache for this plane only
        self.kubectl_cache = self.dir / "kubectl-cache"
        self.bin_dir: Path | None = None
        self.info: dict[str, Any] = {}
        self.proc: subprocess.Popen[bytes] | None = None
        self.returncode: int | None = None
        self.failed = False
        self._log_file: Any = None

    # -- life cycle ------------------------------------------------------------------------

    def start(self) -> ControlPlane:
        try:
            self.bin_dir = build(self.build_timeout)
            self._start_up()
        except KeyboardInterrupt:  # no failure to diagnose: stopped, its directory removed
            self.close()
            raise
        except BaseException:
            self.failed = True
            self.stop()
            self.print_logs()
            raise
        return self

    def _start_up(self) -> None:
        (self.dir / "logs").mkdir(parents=True, exist_ok=True)
        (self.dir / "ready").unlink(missing_ok=True)
        cmd = [
            sys.executable,
            str(TESTBED),
            "up",
            "--dir",
            str(self.dir),
            "--nodes",
            str(self.nodes),
            "--node-cpu",
            self.cpu,
            "--node-memory",
            self.memory,
            "--node-pods",
            str(self.pods),
        ]
        if self.kube_scheduler:
            cmd.append("--kube-scheduler")
        if self.no_apf:
            cmd.append("--no-apf")
        cmd += self.extra_args
        self._log_file = open(self.dir / "logs" / "testbed.log", "ab")  # noqa: SIM115
        self.proc = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=self._log_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            # `testbed up` stops its components on SIGTERM: sent when this process ends in any
            # way (a killed benchmark or test run), so no control plane outlives it
            preexec_fn=parent_death.preexec(),
        )
        deadline = time.monotonic() + self.ready_timeout
        while not (self.dir / "ready").exists():
            if self.proc.poll() is not None:
                tail = (
                    (self.dir / "logs" / "testbed.log")
                    .read_text(errors="replace")
                    .splitlines()[-15:]
                )
                raise ControlPlaneError(
                    f"testbed up exited with code {self.proc.returncode} before ready:\n"
                    + "\n".join(tail)
                )
            if time.monotonic() > deadline:
                raise ControlPlaneError(f"control plane not ready after {self.ready_timeout:.0f}s")
            time.sleep(0.2)
        self.info = json.loads((self.dir / "testbed.json").read_text())

    def stop(self, timeout: float = 30.0) -> int | None:
        """SIGTERM the testbed and wait (SIGKILL after `timeout`; its children die with it)."""
        if self.proc is not None and self.returncode is None:
            if self.proc.poll() is None:
                os.kill(self.proc.pid, signal.SIGTERM)
                try:
                    self.proc.wait(timeout=timeout)
                except subprocess.TimeoutExpired:
                    self.failed = True
                    os.kill(self.proc.pid, signal.SIGKILL)
                    self.proc.wait()
            self.returncode = self.proc.returncode
            if self.returncode != 0:
                self.failed = True
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None
        return self.returncode

    def close(self) -> None:
        """Stop; then remove the working dir if we made it and nothing failed (else keep it)."""
        self.stop()
        if self.failed:
            print(f"control plane dir kept: {self.dir}", file=sys.stderr)
        elif self._own_dir and not self.keep_dir:
            shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> ControlPlane:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
        interrupted = exc_type is not None and issubclass(exc_type, KeyboardInterrupt)
        if (exc_type is not None and not interrupted) or self.failed:
            self.failed = True
            self.print_logs()  # a Ctrl-C is no failure to diagnose
        self.close()

    # -- inspection ------------------------------------------------------------------------

    @property
    def server(self) -> str:
        return str(self.info["server"])

    @property
    def ca_file(self) -> Path:
        return Path(self.info["ca_file"])

    @property
    def token(self) -> str:
        return str(self.info["token"])

    @property
    def pids(self) -> dict[str, int]:
        """Component -> pid (etcd, kube-apiserver, kube-controller-manager, kwok, ...)."""
        return {str(k): int(v) for k, v in self.info.get("pids", {}).items()}

    def leftover_processes(self) -> list[str]:
        """Live processes whose command line mentions this control plane's dir (none after stop)."""
        found = []
        needle = str(self.dir).encode()
        for p in Path("/proc").iterdir():
            if not p.name.isdigit() or int(p.name) == os.getpid():
                continue
            try:
                cmdline = (p / "cmdline").read_bytes()
                state = (p / "stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if needle in cmdline and state != "Z":
                text = cmdline.replace(b"\0", b" ").decode(errors="replace")
                found.append(f"{p.name} {text[:200]}")
        return found

    def log_tails(self, lines: int = 40) -> str:
        out = []
        for f in sorted((self.dir / "logs").glob("*.log")):
            try:
                text = f.read_text(errors="replace").splitlines()[-lines:]
            except OSError:
                continue
            out.append(f"----- {f} (last {len(text)} lines) -----\n" + "\n".join(text))
        return "\n".join(out)

    def print_logs(self, lines: int = 40) -> None:
        print(self.log_tails(lines), file=sys.stderr)

    # -- kubectl ---------------------------------------------------------------------------

    def kubectl_command(self, *args: str) -> list[str]:
        """The argv of kubectl with the admin kubeconfig and this plane's own discovery cache.

        kubectl caches API discovery per `host_port` under `~/.kube/cache` for hours; loopback
        ports are reused by later planes, so a shared cache would resolve `podgroups` from an
        earlier plane that served other APIs (the native `scheduling.k8s.io` group, say).
        Raises ControlPlaneError before the plane is started.
        """
        if self.bin_dir is None:
            raise ControlPlaneError("control plane not started")
        return [str(self.bin_dir / "kubectl"), "--kubeconfig", str(self.kubeconfig),
                "--cache-dir", str(self.kubectl_cache), *[str(a) for a in args]]

    def kubectl(self, *args: str, input: str | None = None, timeout: float = 60.0) -> str:
        """Run kubectl with the admin kubeconfig: stdout, or KubectlError (with stderr)."""
        argv = [str(a) for a in args]
        r = subprocess.run(
            self.kubectl_command(*argv),
            input=input,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if r.returncode != 0:
            raise KubectlError(argv, r.returncode, r.stdout, r.stderr)
        return r.stdout

    def apply(self, yaml_text: str, namespace: str | None = None) -> str:
        """`kubectl apply -f -` of a (multi-document) manifest."""
        ns = ["-n", namespace] if namespace else []
        return self.kubectl("apply", *ns, "-f", "-", input=yaml_text)
