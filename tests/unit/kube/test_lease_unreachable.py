"""A binder standing by for its Lease says why when the API server cannot answer: the Lease's
`LeaseUnavailable` names the server and the reason, and a campaign warns with them
(`services.runtime.election.Outage`), instead of a debug line nobody sees. A server that
answers with an error (429, 503) is said to have answered it, never to be unreachable."""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import json
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import certifi
import pytest
from kubernetes_asyncio.config import incluster_config

from services.config.settings import KubeSettings
from services.kube import client
from services.kube.leases import KubeLease
from services.runtime import election
from services.runtime.health import ReadyFlag
from tests.support.kubeconfigs import TOKEN_KUBECONFIG as KUBECONFIG


def free_port() -> int:
    with socket.socket() as unused:  # a port nothing listens on
        unused.bind(("127.0.0.1", 0))
        return int(unused.getsockname()[1])


async def lease_at(tmp_path: Path, server: str) -> tuple[client.KubeClient, KubeLease]:
    path = tmp_path / "kubeconfig"
    path.write_text(KUBECONFIG.format(server=server))
    kube = await client.connect(KubeSettings(kubeconfig=path))
    return kube, KubeLease(kube, namespace="kube-system", name="gangsched",
                           installation="test@1", process="p", lease_seconds=15)


@pytest.mark.usefixtures("no_proxy_environment")
async def test_an_unreachable_api_server_is_named_with_the_reason(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    port = free_port()
    kube, lease = await lease_at(tmp_path, f"https://127.0.0.1:{port}")
    try:
        with pytest.raises(election.LeaseUnavailable) as raised:
            await lease.acquire()
        assert raised.value.server == f"the API server at https://127.0.0.1:{port}"
        assert raised.value.why == "connection refused"
        campaign = asyncio.create_task(election.campaign(
            lease, election.Timing(lease_seconds=0.09, retry_seconds=0.01)))
        await asyncio.sleep(0.2)
        campaign.cancel()
        with pytest.raises(asyncio.CancelledError):
            await campaign
    finally:
        await kube.close()
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert warned[0] == (f"cannot reach the API server at https://127.0.0.1:{port}: "
                         "connection refused; retrying every 0.01s")
    assert len(warned) <= 3  # the first, then every tenth


def answering(status: str, reason: str, message: str) -> Callable[
        [asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]:
    """A loopback API server answering every request `HTTP/1.1 <status>` with a Status object
    of `reason` and `message`."""
    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        body = json.dumps({"kind": "Status", "reason": reason, "message": message}).encode()
        writer.write(f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\n"
                     f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
        await writer.drain()
        writer.close()

    return answer


@pytest.mark.usefixtures("no_proxy_environment")
async def test_an_api_server_that_answers_unavailable_is_named_with_its_answer(
        tmp_path: Path) -> None:
    server = await asyncio.start_server(
        answering("503 Service Unavailable", "ServiceUnavailable", "etcd down"), "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        kube, lease = await lease_at(tmp_path, f"http://127.0.0.1:{port}")
        try:
            with pytest.raises(election.LeaseUnavailable) as raised:
                await lease.acquire()
        finally:
            await kube.close()
    assert raised.value.server == f"the API server at http://127.0.0.1:{port}"
    assert raised.value.why == "HTTP 503 ServiceUnavailable: etcd down"
    assert raised.value.answered
    assert raised.value.problem == (f"the API server at http://127.0.0.1:{port} answered "
                                    "HTTP 503 ServiceUnavailable: etcd down")


class HeldFlag(ReadyFlag):
    """A readiness flag that says when it is first held down."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.held = asyncio.Event()

    def hold(self, reason: str) -> None:
        super().hold(reason)
        self.held.set()


@contextlib.asynccontextmanager
async def held_standby(tmp_path: Path, status: str, reason: str,
                       message: str) -> AsyncIterator[tuple[HeldFlag, int]]:
    """A standby campaigning for its Lease at a loopback API server that answers every request
    `status` (`answering`), once its readiness is held down: its flag and the server's port.
    Leaving cancels the campaign and closes its client."""
    server = await asyncio.start_server(answering(status, reason, message), "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    flag = HeldFlag("binder")
    flag.set()  # an earlier attempt was answered
    async with server:
        kube, lease = await lease_at(tmp_path, f"http://127.0.0.1:{port}")
        campaign = asyncio.create_task(election.campaign(
            lease, election.Timing(lease_seconds=0.09, retry_seconds=0.01), ready=flag))
        try:
            await asyncio.wait_for(flag.held.wait(), 10)
            yield flag, port
        finally:
            campaign.cancel()
            with pytest.raises(asyncio.CancelledError):
                await campaign
            await kube.close()


@pytest.mark.parametrize(("status", "reason", "message"), [
    ("503 Service Unavailable", "ServiceUnavailable", "etcd down"),
    ("429 Too Many Requests", "TooManyRequests", "too many requests, please try again later"),
])
@pytest.mark.usefixtures("no_proxy_environment")
async def test_a_standby_the_api_server_answers_with_an_error_says_so_not_unreachable(
        tmp_path: Path, caplog: pytest.LogCaptureFixture, status: str, reason: str,
        message: str) -> None:
    async with held_standby(tmp_path, status, reason, message) as (flag, port):
        problem = (f"the API server at http://127.0.0.1:{port} answered "
                   f"HTTP {status.split()[0]} {reason}: {message}")
        assert flag.holds == [problem]  # /readyz: `not ready: binder (<problem>)`
        assert not flag.is_ready
    assert flag.holds == []  # no longer standing by
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert warned[0] == f"{problem}; retrying every 0.01s"
    assert not any("cannot reach" in said for said in warned)


@pytest.mark.parametrize(("status", "reason", "message"), [
    ("401 Unauthorized", "Unauthorized", "Unauthorized"),
    ("403 Forbidden", "Forbidden", 'leases.coordination.k8s.io "gangsched" is forbidden'),
])
@pytest.mark.usefixtures("no_proxy_environment")
async def test_a_standby_refused_by_the_api_server_says_why_on_readyz(
        tmp_path: Path, status: str, reason: str, message: str) -> None:
    """A token expired or rotated away (401), or RBAC (403): the refusal the warning names is
    what holds the standby down, not a bare `not ready: binder`; released at the end."""
    async with held_standby(tmp_path, status, reason, message) as (flag, _):
        held = (flag.holds, flag.is_ready)  # /readyz: `not ready: binder (<holds>)`
    code = status.split()[0]
    assert held == ([
        "taking Lease kube-system/gangsched: GET /apis/coordination.k8s.io/v1/namespaces/"
        f"kube-system/leases/gangsched: HTTP {code} {reason}: {message} (the binder needs get, "
        "create and update on leases.coordination.k8s.io in namespace kube-system)"], False)
    assert flag.holds == []  # no longer standing by


@pytest.mark.usefixtures("no_proxy_environment")
async def test_a_token_that_cannot_be_read_is_not_said_as_an_unreachable_api_server(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A service-account token file being rotated (exists, empty): nothing is sent, and the
    problem a standby's /readyz and warning say is its own token, not the network."""
    asked: list[bytes] = []

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        asked.append(await reader.readuntil(b"\r\n\r\n"))
        writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    token = tmp_path / "token"
    token.write_text("t0ken")
    monkeypatch.setattr(incluster_config, "SERVICE_TOKEN_FILENAME", str(token))
    monkeypatch.setattr(incluster_config, "SERVICE_CERT_FILENAME", certifi.where())
    monkeypatch.setattr(incluster_config, "TOKEN_REFRESH_PERIOD", datetime.timedelta(0))
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", str(port))
    async with server:
        kube = await client.connect(KubeSettings())
        token.write_text("")
        lease = KubeLease(kube, namespace="kube-system", name="gangsched",
                          installation="test@1", process="p", lease_seconds=15)
        try:
            with pytest.raises(election.LeaseUnavailable) as raised:
                await lease.acquire()
        finally:
            await kube.close()
    assert asked == []
    assert raised.value.problem == (
        f"cannot read the credentials for the API server at https://127.0.0.1:{port}: "
        "credentials unavailable: ConfigException('Token file exists but empty.')")
