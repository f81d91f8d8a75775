"""What a request puts on the wire stays what the text route put there: the URL (a plain path
joined to the server's URL parsed once, any other path and every query still parsed from text),
the headers (built once per content type and credentials), and no cookie, ever (the session's
jar keeps none, as client-go's http.Client has none).

The far end is an aiohttp server on loopback that records each request's raw path and headers,
and asks for a cookie in every answer.
"""

from __future__ import annotations

import contextlib
import urllib.parse
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
import yarl
from aiohttp import web

from services.kube import client, errors, resources
from services.kube.client import MERGE_PATCH
from services.runtime import metrics
from tests.support.kube_clients import token_client

pytestmark = pytest.mark.usefixtures("no_proxy_environment")

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class Recorder:
    """The requests an aiohttp app received: `(method, raw path, headers)`."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, dict[str, str]]] = []

    async def handle(self, request: web.Request) -> web.Response:
        await request.read()
        self.seen.append((request.method, request.raw_path, dict(request.headers)))
        return web.json_response({"kind": "Status"}, headers={"Set-Cookie": "affinity=a1; Path=/"})


@contextlib.asynccontextmanager
async def api_server(host: str = "127.0.0.1", answer: Handler | None = None
                     ) -> AsyncIterator[tuple[Recorder, int]]:
    """A server on a free port recording what it receives (`answer`: what it answers
    instead of a Status)."""
    recorder = Recorder()
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", answer or recorder.handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, host, 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield recorder, port
    finally:
        await runner.cleanup()


HOSTS = ["https://127.0.0.1:6443", "https://API.Example.com:443", "http://[::1]:8080",
         "https://rancher.example/k8s/clusters/c-1", "https://h.example/prefix/",
         "https://h.example/", "https://bücher.example"]
PATHS = [
    resources.pod_path("default", "web-0.a_b~c", "binding"),
    resources.pod_path("d", "p q/ü%", "status"),  # escaped by `resources`: the text route
    resources.events_path("kube-system"),
    "/api/v1/namespaces/default/pods/caf\u00e9",  # not escaped by the caller
    "/api/v1/namespaces/default/pods/.hidden",
    "/api/v1/namespaces/default/pods/a/../b",
    "/api/v1/namespaces/default/pods//b",
    "/api/v1/namespaces/default/pods/a%2Db",
    "/apis/x/v1/a?b",
    "/api/v1/namespaces/default/pods/a#b",
]


@pytest.mark.parametrize("host", HOSTS)
@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("query", [(), (("labelSelector", "a in (b,c)"), ("limit", "500"))])
async def test_a_request_goes_to_the_url_the_text_route_made(
        host: str, path: str, query: tuple[tuple[str, str], ...]) -> None:
    kube = token_client(host)
    try:
        text = host + path + ("?" + urllib.parse.urlencode(query) if query else "")
        made = yarl.URL(kube._url(path, query))
        assert made == yarl.URL(text)
        assert str(made) == str(yarl.URL(text))
        assert made.raw_path_qs == yarl.URL(text).raw_path_qs
    finally:
        await kube.close()


async def test_escaped_names_reach_the_server_as_escaped_before() -> None:
    async with api_server() as (recorder, port):
        kube = token_client(f"http://127.0.0.1:{port}")
        try:
            await kube.request("POST", resources.pod_path("d", "p q/ü%", "binding"), body={})
            await kube.request("GET", resources.pod_path("default", "web-0.x", "binding"))
            await kube.request("GET", "/api/v1/pods", query=(("labelSelector", "a in (b)"),))
        finally:
            await kube.close()
    assert [path for _, path, _ in recorder.seen] == [
        "/api/v1/namespaces/d/pods/p%20q%2F%C3%BC%25/binding",
        "/api/v1/namespaces/default/pods/web-0.x/binding",
        "/api/v1/pods?labelSelector=a+in+(b)",
    ]


async def test_headers_follow_the_content_type_accept_and_credentials() -> None:
    async with api_server() as (recorder, port):
        kube = token_client(f"http://127.0.0.1:{port}")
        try:
            await kube.request("POST", "/api/v1/namespaces/d/events", body={})
            await kube.request("PATCH", "/api/v1/namespaces/d/pods/p", body={},
                               content_type=MERGE_PATCH, accept=client.PARTIAL_OBJECT_METADATA)
            kube._api.configuration.api_key = {"BearerToken": "rotated"}
            kube._kept_credentials = None  # as when CREDENTIALS_REUSE_SECONDS have passed
            await kube.request("POST", "/api/v1/namespaces/d/events", body={})
        finally:
            await kube.close()
    shown = [{name: headers.get(name) for name in
              ("Content-Type", "Accept", "Authorization", "User-Agent", "Cookie")}
             for _, _, headers in recorder.seen]
    assert shown == [
        {"Content-Type": "application/json", "Accept": "application/json",
         "Authorization": "Bearer t0ken", "User-Agent": "gangsched", "Cookie": None},
        {"Content-Type": MERGE_PATCH, "Accept": client.PARTIAL_OBJECT_METADATA,
         "Authorization": "Bearer t0ken", "User-Agent": "gangsched", "Cookie": None},
        {"Content-Type": "application/json", "Accept": "application/json",
         "Authorization": "Bearer rotated", "User-Agent": "gangsched", "Cookie": None},
    ]


async def test_a_cookie_the_server_sets_is_never_sent_back() -> None:
    async with api_server() as (recorder, port):
        kube = token_client(f"http://localhost:{port}")  # a host name: a jar would keep it
        try:
            for _ in range(2):
                await kube.request("GET", "/api/v1/nodes/n1")
        finally:
            await kube.close()
    assert len(recorder.seen) == 2
    assert all("Cookie" not in headers for _, _, headers in recorder.seen)


async def test_each_answer_is_counted_under_its_verb_and_code() -> None:
    def counted() -> float:
        return metrics.REGISTRY.get_sample_value(
            "gangsched_kube_requests_total", {"verb": "PATCH", "code": "200"}) or 0.0

    before = counted()
    async with api_server() as (_, port):
        kube = token_client(f"http://127.0.0.1:{port}")
        try:
            for _ in range(3):
                await kube.request("PATCH", "/api/v1/nodes/n1", body={})
        finally:
            await kube.close()
    assert counted() == before + 3


@pytest.mark.parametrize("body", [b"<html><body>Sign in</body></html>", b"[1, 2]", b"\"ok\""])
async def test_a_success_whose_body_is_no_json_object_is_unavailable(body: bytes) -> None:
    """A 200 whose body is a proxy's HTML login page (or JSON but no object) is no answer:
    read as `{}` it was a list of nothing, so the watcher told every known object deleted."""
    async def answer(request: web.Request) -> web.Response:
        return web.Response(body=body, content_type="text/html")

    async with api_server(answer=answer) as (_, port):
        kube = token_client(f"http://127.0.0.1:{port}")
        try:
            with pytest.raises(errors.KubeUnavailable) as raised:
                await kube.request("GET", "/api/v1/pods")
            assert str(raised.value) == (
                "GET /api/v1/pods: answered 200 with a body that is no JSON object: "
                f"{body[:80].decode()!r}")
        finally:
            await kube.close()


async def test_a_throttled_answer_carries_the_wait_it_asks_for() -> None:
    """A 429 with `Retry-After: 3` (the API server's priority and fairness shedding load)
    is KubeUnavailable carrying 3 s, which every retry of ours waits at least."""
    async def answer(request: web.Request) -> web.Response:
        return web.json_response({"kind": "Status", "reason": "TooManyRequests",
                                  "message": "too many requests"}, status=429,
                                 headers={"Retry-After": "3"})

    async with api_server(answer=answer) as (_, port):
        kube = token_client(f"http://127.0.0.1:{port}")
        try:
            with pytest.raises(errors.KubeUnavailable) as raised:
                await kube.request("POST", "/api/v1/namespaces/d/pods/p/binding", body={})
            assert raised.value.retry_after_seconds == 3
            assert raised.value.detail == "HTTP 429 TooManyRequests: too many requests"
        finally:
            await kube.close()
