"""A `KubeClient` for a test's own loopback API server: bearer token, gangsched's user agent."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable

from aiohttp import web
from kubernetes_asyncio.client import ApiClient, Configuration

from services.kube import client
from services.kube.client import KubeClient

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
"""What answers every request of a test's API server."""


def token_client(host: str, token: str = "t0ken") -> KubeClient:
    """A client of the API server at `host` (a URL) sending `token` as its bearer token, with a
    5 s request timeout, as the services' clients are made but without a kubeconfig."""
    configuration = Configuration(host=host)
    configuration.api_key = {"BearerToken": token}
    configuration.api_key_prefix = {"BearerToken": "Bearer"}
    api = ApiClient(configuration)
    api.user_agent = client.USER_AGENT
    return KubeClient(api, request_timeout_seconds=5)


@contextlib.asynccontextmanager
async def served(handle: Handler) -> AsyncIterator[KubeClient]:
    """A `token_client` of an API server on a free loopback port whose every request, any
    method and path, `handle` answers; both closed after."""
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    kube = token_client(f"http://127.0.0.1:{port}")
    try:
        yield kube
    finally:
        await kube.close()
        await runner.cleanup()
