"""`gangsched run` without Kubernetes credentials stops at once and says why."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def test_run_with_a_missing_kubeconfig_exits_with_the_reason(tmp_path: Path) -> None:
    missing = tmp_path / "absent-kubeconfig"
    result = subprocess.run(
        [sys.executable, "-m", "services.cli.main", "run", "--kubeconfig", str(missing),
         "--data-dir", str(tmp_path / "data"), "--http-port", "-1"],
        capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1] == (
        f"Error: no Kubernetes credentials: kubeconfig {missing} does not exist or is not a "
        "file")  # said once, not "Kubernetes: no Kubernetes credentials"
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "data" / "nats").exists()  # nothing was started


def test_run_with_no_kubeconfig_anywhere_names_what_it_looked_for(tmp_path: Path) -> None:
    import os

    env = {**os.environ, "HOME": str(tmp_path), "KUBECONFIG": ""}
    env.pop("KUBERNETES_SERVICE_HOST", None)
    result = subprocess.run(
        [sys.executable, "-m", "services.cli.main", "run", "--data-dir", str(tmp_path / "data"),
         "--http-port", "-1"],
        capture_output=True, text=True, timeout=60, check=False, env=env)
    assert result.returncode == 1
    assert result.stderr.strip().endswith(
        "no Kubernetes credentials: not in a cluster, no --kubeconfig given, and no kubeconfig "
        f"at {tmp_path}/.kube/config")
    assert "Traceback" not in result.stderr


def test_the_planner_with_an_unreachable_postgresql_exits_with_one_line(tmp_path: Path) -> None:
    import os

    # port 1 on loopback refuses at once; NATS is never reached, the database is checked first
    key = tmp_path / "decision.key"
    key.write_text("0123456789abcdef" * 4 + "\n")
    key.chmod(0o600)
    result = subprocess.run(
        [sys.executable, "-m", "services.cli.main", "planner", "--nats", "nats://127.0.0.1:1",
         "--db", "postgresql+asyncpg://gangsched:s3cret@127.0.0.1:1/gangsched",
         "--data-dir", str(tmp_path / "data"), "--http-port", "-1"],
        capture_output=True, text=True, timeout=60, check=False,
        env={**os.environ, "GANGSCHED_DECISION_KEY_FILE": str(key)})
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("Error: cannot reach the database "
                           "postgresql+asyncpg://gangsched@127.0.0.1:1/gangsched: "), last
    assert "s3cret" not in result.stderr
