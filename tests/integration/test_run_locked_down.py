"""`gangsched run`'s embedded NATS is locked down (docs/design-notes.md, same title): a client
without the credentials generated for this start is refused; they are only in 0600 files, never
on a command line.

The API server of the kubeconfig is unreachable: the services wait for it, the embedded
nats-server is up all the same (run.json comes only once every service is ready, so the
server's URL is read from its ports file).
"""

from __future__ import annotations

import json
import signal
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import nats
import psutil
import pytest

from tests.support.gangsched_process import GangschedRun
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration

KUBECONFIG = """apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: not-a-secret}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
"""


@pytest.fixture
def run(tmp_path: Path) -> Iterator[GangschedRun]:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(KUBECONFIG)
    process = GangschedRun(kubeconfig, tmp_path / "data", "--http-port", "-1")
    process.launch()
    try:
        yield process
    finally:
        try:
            code = stop(process)
        finally:
            print(process.log_tail(60))
    assert code == 0, f"gangsched run exited {code}"


def stop(run: GangschedRun) -> int:
    """SIGTERM and wait (without the fixture's `run.json` expectations)."""
    assert run.process is not None
    if run.process.poll() is None:
        run.process.send_signal(signal.SIGTERM)
        try:
            return run.process.wait(30)
        except subprocess.TimeoutExpired:
            run.process.kill()
            run.process.wait()
            raise
    return run.process.returncode


def embedded_url(run: GangschedRun) -> str:
    """The embedded nats-server's URL, from its ports file, once it is up."""
    def url() -> str | None:
        assert run.process is not None and run.process.poll() is None, run.log_tail()
        files = sorted((run.data_dir / "nats" / "ports").glob("*.ports"))
        credentials = run.data_dir / "nats-credentials.json"
        if not files or not credentials.exists():
            return None
        return str(json.loads(files[-1].read_text())["nats"][0])

    found = eventually(url, timeout=30, interval=0.1, what="embedded nats-server up")
    assert found is not None  # `eventually` returns only a truthy value
    return found


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


async def test_a_client_without_the_credentials_is_refused_and_one_with_them_admitted(
        run: GangschedRun) -> None:
    url = embedded_url(run)
    with pytest.raises(nats.errors.Error, match="Authorization Violation"):
        await nats.connect(url, allow_reconnect=False, connect_timeout=2)
    credentials = json.loads((run.data_dir / "nats-credentials.json").read_text())
    client = await nats.connect(url, user=credentials["user"],
                                password=credentials["password"], allow_reconnect=False)
    assert client.is_connected
    await client.close()


async def test_the_credentials_are_private_files_and_on_no_command_line(run: GangschedRun) -> None:
    embedded_url(run)
    credentials = run.data_dir / "nats-credentials.json"
    password = json.loads(credentials.read_text())["password"]
    assert mode(credentials) == 0o600
    assert mode(run.data_dir / "nats" / "nats-server.conf") == 0o600
    assert run.process is not None
    processes = [psutil.Process(run.process.pid),
                 *psutil.Process(run.process.pid).children(recursive=True)]
    assert any("nats-server" in " ".join(p.cmdline()) for p in processes)
    for process in processes:
        assert password not in " ".join(process.cmdline())


async def test_each_start_has_new_credentials_and_none_are_left_after_exit(
        run: GangschedRun) -> None:
    embedded_url(run)
    credentials = run.data_dir / "nats-credentials.json"
    first = json.loads(credentials.read_text())["password"]
    assert stop(run) == 0
    assert not credentials.exists()
    run.launch()
    embedded_url(run)
    assert json.loads(credentials.read_text())["password"] != first
