"""End-to-end fixtures: one local control plane per session, a namespace per test, gangsched and
kube-scheduler as real processes."""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from services.config.settings import KubeSettings
from services.kube import client as kube_client
from services.kube.client import KubeClient
from tests.cluster.fixture import ControlPlane
from tests.e2e import kube, split
from tests.support.gangsched_process import GangschedRun, serving
from tests.support.waiting import eventually


@pytest.fixture
def services(control_plane: ControlPlane, tmp_path: Path) -> Iterator[split.Services]:
    """gangsched's services as separate processes on a private NATS (the test starts the ones
    it needs); all stopped after the test, their logs printed, and each must exit 0."""
    running = split.Services(control_plane.kubeconfig, tmp_path / "services")
    try:
        yield running
    finally:
        codes = running.close()
        print(running.logs(150))
    assert all(code == 0 for code in codes.values()), codes


@pytest.fixture(scope="session")
def control_plane() -> Iterator[ControlPlane]:
    """One KWOK node shaped like the seed example's node (10 CPU, 8Gi, 110 pods)."""
    with ControlPlane(nodes=1, cpu="10", memory="8Gi", pods=110) as cp:
        yield cp


@pytest.fixture(scope="module")
def scheduler_plane() -> Iterator[ControlPlane]:
    """A control plane with kube-scheduler and no nodes, per module: a differential run
    creates its own nodes (tests/e2e/differential)."""
    with ControlPlane(nodes=0, kube_scheduler=True) as cp:
        yield cp


@pytest.fixture
async def api(control_plane: ControlPlane) -> AsyncIterator[KubeClient]:
    """gangsched's own API client, with the control plane's admin kubeconfig."""
    client = await kube_client.connect(KubeSettings(kubeconfig=control_plane.kubeconfig))
    try:
        yield client
    finally:
        await client.close()


@pytest.fixture
def namespace(control_plane: ControlPlane, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh namespace; deleted after the test, waiting until its pods are gone so the next
    test finds the node's capacity free. No gangsched runs between tests, so none holds the
    scheduler name's Lease (`services/kube/leases.py`) either: one an earlier test's binder
    could not release (its API server paused or its rights revoked as it stopped) is deleted
    first, so this test's binder does not stand by until it expires (15 s)."""
    name = f"t-{uuid.uuid4().hex[:8]}"
    control_plane.kubectl("delete", "lease", "gangsched", "-n", "kube-system",
                          "--ignore-not-found")
    control_plane.kubectl("create", "namespace", name)
    yield name
    control_plane.kubectl("delete", "namespace", name, "--wait=false")
    control_plane.kubectl("delete", "pods", "--all", "-n", name, "--grace-period=0", "--force",
                          "--wait=false")
    eventually(lambda: kube.get_json(control_plane, "pods", "-n", name)["items"] == [],
               timeout=60, what=f"namespace {name} emptied")


@pytest.fixture
def gangsched(control_plane: ControlPlane, tmp_path: Path) -> Iterator[GangschedRun]:
    """`gangsched run` against the control plane with embedded NATS and SQLite."""
    with serving(control_plane.kubeconfig, tmp_path / "gangsched") as run:
        yield run


@pytest.fixture
def kube_scheduler(control_plane: ControlPlane, tmp_path: Path) -> Iterator[None]:
    """kube-scheduler from the same build, as the default scheduler beside gangsched."""
    assert control_plane.bin_dir is not None  # the control plane is started
    log = (tmp_path / "kube-scheduler.log").open("wb")
    process = subprocess.Popen(
        [str(control_plane.bin_dir / "kube-scheduler"), f"--kubeconfig={control_plane.kubeconfig}",
         "--leader-elect=false", "--secure-port=0"],
        stdout=log, stderr=subprocess.STDOUT)
    try:
        yield
    finally:
        process.terminate()
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()
