"""A service given a kubeconfig no retry can mend (TLS material that is not PEM, a server that
is not a URL, an empty file, a path of $KUBECONFIG that is a directory or cannot be read) exits 1
at once with one line naming the file and what is wrong: no traceback, and no waiting for an API
server it could never reach."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from services.cli import exit_codes

GANGSCHED = str(Path(sys.executable).with_name("gangsched"))

KUBECONFIG = """apiVersion: v1
kind: Config
clusters: [{{name: c, cluster: {{server: "{server}", {tls}}}}}]
users: [{{name: u, user: {{token: SUPERSECRETTOKEN}}}}]
contexts: [{{name: x, context: {{cluster: c, user: u}}}}]
current-context: x
"""


@pytest.mark.parametrize(("text", "why"), [
    (KUBECONFIG.format(server="https://127.0.0.1:1",
                       tls="certificate-authority-data: Tk9UQkFTRTY0IQ=="),
     'kubeconfig {path}: cluster "c": certificate-authority-data is not a PEM certificate'),
    (KUBECONFIG.format(server="not a url", tls="insecure-skip-tls-verify: true"),
     'kubeconfig {path}: cluster "c": server "not a url": invalid character " " in host name'),
    ("", "{path} is not a kubeconfig (the file is empty)"),
], ids=["ca-not-pem", "server-not-a-url", "empty"])
def test_the_watcher_refuses_a_kubeconfig_it_can_never_use_in_one_line(
        tmp_path: Path, text: str, why: str) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text(text)
    done = subprocess.run(
        [GANGSCHED, "watcher", "--nats", "nats://127.0.0.1:1", "--kubeconfig", str(path),
         "--http-port", "-1"],
        capture_output=True, text=True, timeout=60, check=False, cwd=tmp_path)
    assert (done.returncode, done.stderr) == (
        exit_codes.FAILED, f"Error: no Kubernetes credentials: {why.format(path=path)}\n")


GOOD = KUBECONFIG.format(server="https://127.0.0.1:1", tls="insecure-skip-tls-verify: true")


def _watcher(tmp_path: Path, kubeconfig: str) -> subprocess.CompletedProcess[str]:
    """`gangsched watcher` reading the kubeconfig files of $KUBECONFIG=`kubeconfig`."""
    return subprocess.run(
        [GANGSCHED, "watcher", "--nats", "nats://127.0.0.1:1", "--http-port", "-1"],
        capture_output=True, text=True, timeout=60, check=False, cwd=tmp_path,
        env={**os.environ, "KUBECONFIG": kubeconfig, "KUBERNETES_SERVICE_HOST": ""})


@pytest.mark.parametrize(("make", "why"), [
    (lambda path: path.mkdir(), "Is a directory"),
    (lambda path: path.symlink_to(path), "Too many levels of symbolic links"),
], ids=["directory", "symlink-loop"])
def test_a_kubeconfig_variable_path_that_cannot_be_read_is_one_line_naming_it(
        tmp_path: Path, make: Callable[[Path], object], why: str) -> None:
    # kubectl (client-go) skips a path of $KUBECONFIG that does not exist, and fails on one
    # it cannot read: "read /tmp/somedir: is a directory"
    bad, good = tmp_path / "somedir", tmp_path / "good"
    make(bad)
    good.write_text(GOOD)
    done = _watcher(tmp_path, f"{bad}:{good}")
    assert (done.returncode, done.stderr) == (
        exit_codes.FAILED, f"Error: no Kubernetes credentials: cannot read kubeconfig {bad}: "
                           f"{why}\n")


def test_a_kubeconfig_variable_path_whose_name_is_too_long_is_one_line_naming_it(
        tmp_path: Path) -> None:
    long, good = tmp_path / ("x" * 300), tmp_path / "good"  # os.stat fails: no traceback
    good.write_text(GOOD)
    done = _watcher(tmp_path, f"{good}:{long}")
    assert (done.returncode, done.stderr) == (
        exit_codes.FAILED, f"Error: no Kubernetes credentials: cannot read kubeconfig {long}: "
                           "File name too long\n")


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a file of any mode")
@pytest.mark.parametrize("where", ["file", "directory"])
def test_a_kubeconfig_variable_path_without_permission_is_one_line_naming_it(
        tmp_path: Path, where: str) -> None:
    good = tmp_path / "good"
    good.write_text(GOOD)
    locked = tmp_path / "locked"
    locked.mkdir()
    bad = locked / "config"
    bad.write_text(GOOD)
    (bad if where == "file" else locked).chmod(0)  # open, or os.stat, refused
    try:
        done = _watcher(tmp_path, f"{bad}:{good}")
    finally:
        locked.chmod(0o700)
        bad.chmod(0o600)
    assert (done.returncode, done.stderr) == (
        exit_codes.FAILED, f"Error: no Kubernetes credentials: cannot read kubeconfig {bad}: "
                           "Permission denied\n")

