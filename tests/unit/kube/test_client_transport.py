"""Transport failures leave the client as KubeUnavailable, counted under code `error`, and a
request goes through the proxy the environment names (the library session's options kept).

The far ends are plain loopback TCP listeners that record what arrives and then hang up, stay
silent, or refuse the proxy tunnel. A server no request could ever reach (not a URL, another
scheme, no host) is refused at connect instead, naming the kubeconfig and the value; a bare
host:port is taken as client-go's `rest.DefaultServerURL` takes it.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
import subprocess
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from services.config.settings import KubeSettings
from services.kube import client, errors
from services.runtime import metrics
from tests.support.kubeconfigs import TOKEN_KUBECONFIG as KUBECONFIG

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]



class Listener:
    """A loopback TCP server on a free port; `lines` holds the first line of each connection."""

    def __init__(self, then: Handler) -> None:
        self.then = then
        self.lines: list[bytes] = []
        self.port = 0

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.lines.append((await reader.readline()).strip())
        await self.then(reader, writer)
        writer.close()


@contextlib.asynccontextmanager
async def listening(then: Handler) -> AsyncIterator[Listener]:
    listener = Listener(then)
    server = await asyncio.start_server(listener._serve, "127.0.0.1", 0)
    listener.port = server.sockets[0].getsockname()[1]
    async with server:
        yield listener


async def hang_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    return None


async def stay_silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    await reader.read()  # until the client gives up and closes


async def one_event_then_silence(reader: asyncio.StreamReader,
                                  writer: asyncio.StreamWriter) -> None:
    line = b'{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"7"}}}\n'
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                 b"Transfer-Encoding: chunked\r\n\r\n"
                 + f"{len(line):x}\r\n".encode() + line + b"\r\n")
    await writer.drain()
    await reader.read()  # frozen: until the client gives up and closes


async def refuse_tunnel(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    writer.write(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
    await writer.drain()


async def connected(tmp_path: Path, server: str) -> client.KubeClient:
    path = tmp_path / "kubeconfig"
    path.write_text(KUBECONFIG.format(server=server))
    return await client.connect(KubeSettings(kubeconfig=path))


def errors_counted() -> float:
    return metrics.REGISTRY.get_sample_value(
        "gangsched_kube_requests_total", {"verb": "GET", "code": "error"}) or 0.0


@pytest.mark.usefixtures("no_proxy_environment")
async def test_a_connection_the_server_drops_is_kube_unavailable_counted_as_error(
        tmp_path: Path) -> None:
    async with listening(hang_up) as listener:
        kube = await connected(tmp_path, f"http://127.0.0.1:{listener.port}")
        before = errors_counted()
        try:
            with pytest.raises(errors.KubeUnreachable) as raised:
                await kube.request("GET", "/api/v1/nodes", query=[("limit", "1")])
        finally:
            await kube.close()
        # aiohttp sends an idempotent request once more after a dropped connection (RFC 9112
        # 9.3.1.1), within the one request gangsched counts
        assert listener.lines == [b"GET /api/v1/nodes?limit=1 HTTP/1.1"] * 2
        assert errors_counted() == before + 1
        assert str(raised.value) == (f"GET /api/v1/nodes: cannot reach the API server at "
                                     f"http://127.0.0.1:{listener.port}: the server closed "
                                     "the connection")


@pytest.mark.usefixtures("no_proxy_environment")
async def test_a_server_that_never_answers_is_kube_unavailable_once_the_timeout_passes(
        tmp_path: Path) -> None:
    async with listening(stay_silent) as listener:
        kube = await connected(tmp_path, f"http://127.0.0.1:{listener.port}")
        try:
            with pytest.raises(errors.KubeUnreachable) as raised:
                await kube.request("GET", "/api/v1/nodes/n1", timeout_seconds=0.2)
        finally:
            await kube.close()
        assert listener.lines == [b"GET /api/v1/nodes/n1 HTTP/1.1"]
        assert (raised.value.server, raised.value.why) == (
            f"http://127.0.0.1:{listener.port}", "timed out")


@pytest.mark.usefixtures("no_proxy_environment")
async def test_a_refused_connection_says_so_in_words_without_credentials(
        tmp_path: Path) -> None:
    with socket.socket() as unused:  # a port nothing listens on
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    path = tmp_path / "kubeconfig"  # a user without a token: the URL's credentials are used
    path.write_text(KUBECONFIG.format(server=f"http://admin:secret@127.0.0.1:{port}").replace(
        '{token: "t0ken"}', "{}"))
    raised = await unreachable(path)
    assert str(raised) == (
        f"GET /api/v1/nodes: cannot reach the API server at http://127.0.0.1:{port}: "
        "connection refused")


@pytest.mark.usefixtures("no_proxy_environment")
async def test_an_untrusted_certificate_is_named_a_tls_certificate_problem(
        tmp_path: Path) -> None:
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:P-256", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(tmp_path / "key"),
                    "-out", str(tmp_path / "cert")], check=True, capture_output=True)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(tmp_path / "cert", tmp_path / "key")
    server = await asyncio.start_server(hang_up, "127.0.0.1", 0, ssl=context)
    port = server.sockets[0].getsockname()[1]
    path = tmp_path / "kubeconfig"
    path.write_text(KUBECONFIG.format(server=f"https://127.0.0.1:{port}").replace(
        ", insecure-skip-tls-verify: true", ""))
    async with server:
        raised = await unreachable(path)
    assert raised.why == "TLS certificate not accepted: self-signed certificate"


async def unreachable(kubeconfig: Path) -> errors.KubeUnreachable:
    """The error of listing nodes with `kubeconfig`."""
    kube = await client.connect(KubeSettings(kubeconfig=kubeconfig))
    try:
        with pytest.raises(errors.KubeUnreachable) as raised:
            await kube.request("GET", "/api/v1/nodes")
    finally:
        await kube.close()
    return raised.value


@pytest.mark.usefixtures("no_proxy_environment")
async def test_a_request_goes_through_the_proxy_the_environment_names(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async with listening(refuse_tunnel) as proxy:
        monkeypatch.setenv("https_proxy", f"http://127.0.0.1:{proxy.port}")
        kube = await connected(tmp_path, "https://10.1.2.3:6443")
        try:
            with pytest.raises(errors.KubeUnavailable, match="403"):
                await kube.request("GET", "/api/v1/nodes")
        finally:
            await kube.close()
        assert proxy.lines == [b"CONNECT 10.1.2.3:6443 HTTP/1.1"]


@pytest.mark.usefixtures("no_proxy_environment")
async def test_a_watch_that_goes_silent_is_kube_silent_after_its_read_timeout(
        tmp_path: Path) -> None:
    async with listening(one_event_then_silence) as listener:
        kube = await connected(tmp_path, f"http://127.0.0.1:{listener.port}")
        received = []
        try:
            with pytest.raises(errors.KubeSilent) as raised:
                async for event in kube.stream("/api/v1/pods", (("watch", "true"),),
                                               read_timeout_seconds=0.3):
                    received.append(event["type"])
        finally:
            await kube.close()
    assert received == ["BOOKMARK"]
    assert str(raised.value) == (
        f"GET /api/v1/pods (stream): cannot reach the API server at "
        f"http://127.0.0.1:{listener.port}: nothing received for 0.3s")


@pytest.mark.parametrize(("server", "shown", "why"), [
    ("not a url", "not a url", 'invalid character " " in host name'),
    ("https://admin:secret@bad host:6443", "https://bad host:6443",
     'invalid character " " in host name'),
    ("ftp://x", "ftp://x", 'scheme "ftp" is not https or http'),
    ("https://", "https://", "not a URL with a host, nor a host:port pair"),
    ("http:///path", "http:///path", "not a URL with a host, nor a host:port pair"),
    ("10.0.0.1:6443/api", "10.0.0.1:6443/api", "not a URL with a host, nor a host:port pair"),
    ("https://:6443", "https://:6443", "no host"),
    ("https://10.0.0.1:65536", "https://10.0.0.1:65536",
     'port "65536" is not a number from 1 to 65535'),
    ("https://10.0.0.1:6443?x=1", "https://10.0.0.1:6443?x=1", "a query or fragment in it"),
], ids=["words", "words-with-credentials", "ftp", "scheme-only", "no-host-path",
        "host-port-path", "port-only", "port-too-large", "query"])
async def test_a_server_that_is_not_a_url_is_refused_at_once(
        tmp_path: Path, server: str, shown: str, why: str) -> None:
    with pytest.raises(errors.KubeError) as raised:
        await connected(tmp_path, server)
    assert str(raised.value) == (f'no Kubernetes credentials: kubeconfig {tmp_path}/kubeconfig: '
                                 f'cluster "c": server "{shown}": {why}')


async def test_a_cluster_without_a_server_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text(KUBECONFIG.format(server="").replace('server: "", ', ""))
    with pytest.raises(errors.KubeError) as raised:
        await client.connect(KubeSettings(kubeconfig=path))
    assert str(raised.value) == (
        f'no Kubernetes credentials: kubeconfig {path}: cluster "c" has no server')


@pytest.mark.parametrize(("tls", "url"), [
    (", insecure-skip-tls-verify: true", "https://10.0.0.1:6443"),
    ("", "http://10.0.0.1:6443"),
], ids=["tls", "plain"])
async def test_a_host_port_server_is_https_when_tls_is_configured_as_in_client_go(
        tmp_path: Path, tls: str, url: str) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text(KUBECONFIG.format(server="10.0.0.1:6443").replace(
        ", insecure-skip-tls-verify: true", tls))
    kube = await client.connect(KubeSettings(kubeconfig=path))
    await kube.close()
    assert kube.host == url


async def test_a_context_without_a_user_connects_anonymously(tmp_path: Path) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text(KUBECONFIG.format(server="https://10.0.0.1:6443").replace(
        "{cluster: c, user: u}", "{cluster: c}"))
    kube = await client.connect(KubeSettings(kubeconfig=path))
    await kube.close()
    assert kube.host == "https://10.0.0.1:6443"


async def test_a_proxy_url_aiohttp_cannot_use_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text(KUBECONFIG.format(server="https://10.0.0.1:6443").replace(
        "insecure-skip-tls-verify: true", 'insecure-skip-tls-verify: true, '
                                          'proxy-url: "socks5://10.0.0.2:1080"'))
    with pytest.raises(errors.KubeError) as raised:
        await client.connect(KubeSettings(kubeconfig=path))
    assert str(raised.value) == (
        f'no Kubernetes credentials: kubeconfig {path}: cluster "c": proxy-url '
        '"socks5://10.0.0.2:1080" is not an http or https URL')
