"""Runs `gangsched run` as a real subprocess against a control plane, for end-to-end tests."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from tests.support.waiting import eventually


class GangschedRun:
    """`gangsched run` in a subprocess, with its log and `run.json` in `data_dir`.

    `run.json` (written by the `run` command once every service is ready) holds the NATS URL,
    the database URL and the HTTP address of /healthz, /readyz and /metrics.
    """

    def __init__(self, kubeconfig: Path, data_dir: Path, *extra: str) -> None:
        self.kubeconfig = kubeconfig
        self.data_dir = data_dir
        self.extra = extra
        self.log_path = data_dir / "gangsched.log"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, ready_timeout: float = 60.0) -> dict[str, str]:
        """Start the process and wait until it reports ready; returns the `run.json` content."""
        self.launch()
        info = eventually(self._ready, timeout=ready_timeout, what="gangsched run ready")
        assert info is not None  # `eventually` returns only a truthy value
        return info

    def launch(self) -> None:
        """Start the process without waiting for it to be ready."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        (self.data_dir / "run.json").unlink(missing_ok=True)
        log = self.log_path.open("ab")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "services.cli.main", "run", "--kubeconfig",
             str(self.kubeconfig), "--data-dir", str(self.data_dir), "--log-level", "DEBUG",
             *self.extra],
            stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        log.close()

    def _ready(self) -> dict[str, str] | None:
        assert self.process is not None
        if self.process.poll() is not None:
            code = self.process.returncode
            raise RuntimeError(f"gangsched run exited {code}:\n{self.log_tail()}")
        path = self.data_dir / "run.json"
        if not path.exists():
            return None
        info: dict[str, str] = json.loads(path.read_text())
        return info

    def metric_samples(self) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
        """Every sample on its `/metrics` now, by (sample name, sorted labels)."""
        info = self._ready()
        assert info is not None and info.get("http"), "gangsched serves no /metrics"
        with urllib.request.urlopen(f"{info['http']}/metrics", timeout=5) as response:
            text = response.read().decode()
        return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
                for family in text_string_to_metric_families(text)
                for sample in family.samples}

    def stop(self, timeout: float = 30.0) -> int:
        """SIGTERM the process and wait; SIGKILL if it does not stop in `timeout` seconds."""
        if self.process is None or self.process.poll() is not None:
            return self.process.returncode if self.process else 0
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise AssertionError(f"gangsched run ignored SIGTERM for {timeout}s") from None

    def log_tail(self, lines: int = 80) -> str:
        """The last `lines` lines of the process log."""
        if not self.log_path.exists():
            return ""
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def wait_stopped(self) -> None:
        """Wait for the process to have fully exited (used after `stop`)."""
        deadline = time.monotonic() + 10
        while self.process is not None and self.process.poll() is None:
            if time.monotonic() > deadline:
                raise AssertionError("gangsched run still alive")
            time.sleep(0.1)


@contextlib.contextmanager
def serving(kubeconfig: Path, data_dir: Path, *extra: str) -> Iterator[GangschedRun]:
    """`gangsched run` with `extra` flags, ready for the body; stopped after it, with its log
    printed (shown for a failing test), and it must have exited 0."""
    run = GangschedRun(kubeconfig, data_dir, *extra)
    try:
        run.start()
        yield run
    finally:
        code = run.stop()
        print(run.log_tail(200))
    assert code == 0, f"gangsched run exited {code}"

BOTH_GROUP_APIS = ("--group-apis", "scheduling.x-k8s.io,scheduling.k8s.io")
"""`gangsched run`'s flags to read native PodGroups (`scheduling.k8s.io/v1alpha2`) beside
Coscheduling's."""
