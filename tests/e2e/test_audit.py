"""Audit on the real control plane: replay --verify while gangsched runs, and explain."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from tests.cluster.fixture import ControlPlane
from tests.e2e import kube
from tests.support.gangsched_process import GangschedRun
from tests.support.waiting import eventually

pytestmark = pytest.mark.e2e


def gangsched_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "services.cli.main", *args],
                          capture_output=True, text=True, timeout=120)


def test_replay_verifies_the_seed_gang_while_gangsched_runs_and_explain_names_the_gang(
        control_plane: ControlPlane, namespace: str, gangsched: GangschedRun) -> None:
    control_plane.kubectl("apply", "-f", "-",
                          input=kube.example_documents("nginx-gang.yaml", namespace))

    def three_running() -> list[dict[str, Any]]:
        pods = kube.pods(control_plane, namespace)
        assert len(pods) == 6 and len(kube.running(pods)) == 3, len(kube.running(pods))
        return pods

    pods = eventually(three_running, timeout=30, what="3 Running of 6")
    data_dir = str(gangsched.data_dir)

    replay = gangsched_cli("replay", "--verify", "--data-dir", data_dir)
    assert replay.returncode == 0, replay.stdout + replay.stderr
    assert replay.stdout.startswith("verified ") and "plan points" in replay.stdout
    assert gangsched.process is not None and gangsched.process.poll() is None  # still running

    pending = sorted(p["metadata"]["name"] for p in pods if not p["spec"].get("nodeName"))[0]

    def explained() -> str:
        result = gangsched_cli("explain", "pod", f"{namespace}/{pending}", "--data-dir", data_dir)
        assert result.returncode == 0, result.stdout + result.stderr
        verdict = result.stdout.splitlines()[-1]
        assert verdict.startswith(f"verdict: Pending: gang {namespace}/nginx: "), verdict
        return verdict

    verdict = eventually(explained, timeout=20, what="explain names the gang")
    assert "Insufficient cpu" in verdict
