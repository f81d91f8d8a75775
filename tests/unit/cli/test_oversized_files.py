"""A decision key file or kubeconfig far larger than any is refused in one line, unread. Both
were read whole: a disk image or log given by mistake held the command until memory ran out (a
MemoryError traceback under a limit, the machine's memory without). A sparse file stands for
one here: 8 GiB that take no disk."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
MEMORY_BYTES = 1 << 30
"""The address space the command is given: reading the file whole fails within it."""
RUN = "from services.cli.main import app; app(prog_name='gangsched')"


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BYTES, MEMORY_BYTES))


def _gangsched(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", RUN, *argv], capture_output=True, text=True, timeout=20,
        cwd=ROOT, preexec_fn=_limited, check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT), "GANGSCHED_NATS": ""})


@pytest.fixture
def huge(tmp_path: Path) -> Path:
    path = tmp_path / "huge"
    path.touch(mode=0o600)
    os.truncate(path, 8 << 30)
    return path


def test_a_huge_decision_key_file_is_one_usage_line(huge: Path, tmp_path: Path) -> None:
    result = _gangsched("planner", "--nats", "nats://127.0.0.1:1", "--decision-key-file",
                        str(huge), "--data-dir", str(tmp_path / "data"))
    assert (result.returncode, result.stdout, result.stderr) == (
        2, "", f"gangsched planner: cannot read the decision key file {huge}: it is larger "
               "than 64 KiB\n")


def test_a_huge_kubeconfig_is_one_line(huge: Path, tmp_path: Path) -> None:
    result = _gangsched("watcher", "--nats", "nats://127.0.0.1:1", "--kubeconfig", str(huge),
                        "--data-dir", str(tmp_path / "data"))
    assert (result.returncode, result.stdout, result.stderr) == (
        1, "", f"Error: no Kubernetes credentials: {huge} is not a kubeconfig (larger than "
               "16 MiB)\n")


def test_a_huge_file_a_kubeconfig_names_is_one_line(huge: Path, tmp_path: Path) -> None:
    """The Kubernetes client reads a kubeconfig's tokenFile (and certificates) whole."""
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: k, cluster: {server: 'https://127.0.0.1:1'}}]\n"
        "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
        f"users: [{{name: u, user: {{tokenFile: {huge}}}}}]\n")
    result = _gangsched("watcher", "--nats", "nats://127.0.0.1:1", "--kubeconfig",
                        str(kubeconfig), "--data-dir", str(tmp_path / "data"))
    assert result.returncode == 1 and result.stdout == "", result.stderr
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert f"tokenFile {huge} is larger than 16 MiB, too large for a token" in result.stderr
