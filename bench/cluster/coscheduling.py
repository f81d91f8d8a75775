"""Build scheduler-plugins v0.34.7 (kube-scheduler + Coscheduling) from the Go module proxy.

Layer: bench tooling. `python -m bench.cluster.coscheduling` downloads
`sigs.k8s.io/scheduler-plugins@v0.34.7` into the testbed's module cache, copies it to a temp
dir, and builds `cmd/scheduler` into ~/.cache/gangsched/scheduler-plugins/v0.34.7/kube-scheduler.

The module's own go.mod pins every k8s.io staging module to v0.34.7, but the module proxy used
here refuses 14 of those versions (HTTP 403 "This module version is not available"), so they are
replaced by the nearest patch release it serves (`REPLACEMENTS`). Only csi-translation-lib is
compiled into the binary (`go version -m` shows it as the one k8s.io module not at v0.34.7); the
others are needed only to resolve the module graph. Measured: 13 min 20 s at nice 10 on 2 busy
cores with an empty build cache for these versions.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MODULE = "sigs.k8s.io/scheduler-plugins"
VERSION = "v0.34.7"
GOMODCACHE = Path.home() / ".cache/gangsched/gomod"
TARGET = Path.home() / f".cache/gangsched/scheduler-plugins/{VERSION}/kube-scheduler"
REPLACEMENTS = {
    "cli-runtime": "v0.34.8", "cluster-bootstrap": "v0.34.8", "code-generator": "v0.34.8",
    "cri-client": "v0.34.8", "csi-translation-lib": "v0.34.8", "endpointslice": "v0.34.8",
    "kube-aggregator": "v0.34.8", "kube-controller-manager": "v0.34.8",
    "kubectl": "v0.34.8", "pod-security-admission": "v0.34.8", "cri-api": "v0.34.9",
    "kube-proxy": "v0.34.9", "externaljwt": "v0.34.9", "sample-apiserver": "v0.34.2",
}


def _go(*argv: str, cwd: Path | None = None) -> str:
    env = {**os.environ, "GOMODCACHE": str(GOMODCACHE), "GOFLAGS": "-mod=mod"}
    return subprocess.run(["go", *argv], cwd=cwd, env=env, check=True, text=True,
                          capture_output=True).stdout


def build() -> Path:
    """Build the binary if missing; returns its path."""
    if TARGET.exists():
        return TARGET
    with tempfile.TemporaryDirectory(prefix="scheduler-plugins-") as temp:
        source = Path(temp) / "src"
        _go("mod", "download", f"{MODULE}@{VERSION}", cwd=Path(temp))
        shutil.copytree(GOMODCACHE / f"{MODULE}@{VERSION}", source)
        for path in source.rglob("*"):
            path.chmod(path.stat().st_mode | 0o200)
        for name, version in sorted(REPLACEMENTS.items()):
            _go("mod", "edit", "-replace", f"k8s.io/{name}=k8s.io/{name}@{version}", cwd=source)
        TARGET.parent.mkdir(parents=True, exist_ok=True)
        started = time.monotonic()
        _go("build", "-o", str(TARGET), "./cmd/scheduler", cwd=source)
        (TARGET.parent / "go.mod.used").write_text((source / "go.mod").read_text())
        print(f"built {TARGET} in {time.monotonic() - started:.0f}s", file=sys.stderr)
    return TARGET


if __name__ == "__main__":
    print(build())
