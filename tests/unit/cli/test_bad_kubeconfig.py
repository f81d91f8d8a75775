"""A service given a kubeconfig no retry can mend (TLS material that is not PEM, a server that
is not a URL, an empty file) exits 1 at once with one line naming the file and what is wrong:
no traceback, and no waiting for an API server it could never reach."""

from __future__ import annotations

import subprocess
import sys
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
