"""A minimal async HTTP client for the test API server: admin bearer token, raw JSON.

Layer: bench. Deliberately independent of `services.kube`, so the harness measures gangsched
from the outside. Requests are plain aiohttp over TLS with one connection pool; nothing retries
except `create_all`, which retries 429/5xx and connection errors a few times, so a transient
overload of the API server does not silently shrink the workload.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass
from typing import Any

import aiohttp
import msgspec

_decoder = msgspec.json.Decoder()
_encoder = msgspec.json.Encoder()

RETRIES = 5
RETRY_DELAY_SECONDS = 0.5


class ApiError(RuntimeError):
    def __init__(self, status: int, what: str, body: bytes) -> None:
        self.status = status
        super().__init__(f"{what}: HTTP {status}: {body[:300].decode(errors='replace')}")


@dataclass(frozen=True)
class Endpoint:
    """Where and how to reach the API server (from the testbed's `testbed.json`)."""

    server: str
    ca_file: str
    token: str

    @classmethod
    def from_info(cls, info: dict[str, Any]) -> Endpoint:
        return cls(server=str(info["server"]), ca_file=str(info["ca_file"]),
                   token=str(info["token"]))


class Api:
    """One aiohttp session against the API server; `async with Api(endpoint, pool) as api`."""

    def __init__(self, endpoint: Endpoint, pool_size: int = 256) -> None:
        self.endpoint = endpoint
        self._pool_size = pool_size
        self._session: aiohttp.ClientSession | None = None

    async def __aenter__(self) -> Api:
        context = ssl.create_default_context(cafile=self.endpoint.ca_file)
        connector = aiohttp.TCPConnector(ssl=context, limit=self._pool_size)
        self._session = aiohttp.ClientSession(
            base_url=self.endpoint.server, connector=connector,
            headers={"Authorization": f"Bearer {self.endpoint.token}",
                     "Accept": "application/json", "Content-Type": "application/json"},
            timeout=aiohttp.ClientTimeout(total=120))
        return self

    async def __aexit__(self, *_: object) -> None:
        assert self._session is not None
        await self._session.close()

    @property
    def session(self) -> aiohttp.ClientSession:
        assert self._session is not None, "use `async with Api(...)`"
        return self._session

    async def get(self, path: str, **params: str) -> dict[str, Any]:
        async with self.session.get(path, params=params) as response:
            return await _body(response, f"GET {path}")

    async def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        async with self.session.post(path, data=_encoder.encode(body)) as response:
            return await _body(response, f"POST {path}")

    async def post_retrying(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """POST, retrying throttling, server errors and broken connections; 409 counts as done."""
        for attempt in range(RETRIES):
            try:
                return await self.post(path, body)
            except ApiError as error:
                if error.status == 409:
                    return {}
                if (error.status != 429 and error.status < 500) or attempt == RETRIES - 1:
                    raise
            except (TimeoutError, aiohttp.ClientError):
                if attempt == RETRIES - 1:
                    raise
            await asyncio.sleep(RETRY_DELAY_SECONDS * (attempt + 1))
        raise AssertionError("unreachable")

    async def post_all(self, items: Iterable[tuple[str, dict[str, Any]]],
                       concurrency: int) -> None:
        """POST every `(path, body)` with `concurrency` workers taking them in order.

        Raises: the first error, after every worker stopped (a failed POST stops only its worker's
        share of the remaining items, which the other workers then take).
        """
        queue = iter(items)

        async def worker() -> None:
            for path, body in queue:
                await self.post_retrying(path, body)

        results = await asyncio.gather(*(worker() for _ in range(concurrency)),
                                       return_exceptions=True)
        errors = [r for r in results if isinstance(r, BaseException)]
        if errors:
            raise errors[0]

    async def watch(self, path: str, resource_version: str,
                    on_open: Callable[[], None] = lambda: None, **selectors: str,
                    ) -> AsyncIterator[dict[str, Any]]:
        """Yield the events of a watch on a collection `path`, starting after `resource_version`;
        `on_open` is called once the API server accepted the watch; `selectors` are extra query
        parameters (`fieldSelector=...`).

        Shapes: each event is `{"type": ADDED|MODIFIED|DELETED|BOOKMARK|ERROR, "object": {...}}`.
        """
        params = {"watch": "true", "resourceVersion": resource_version,
                  "allowWatchBookmarks": "true", "timeoutSeconds": "3600", **selectors}
        timeout = aiohttp.ClientTimeout(total=None, sock_read=None)
        async with self.session.get(path, params=params, timeout=timeout) as response:
            if response.status != 200:
                raise ApiError(response.status, f"WATCH {path}", await response.read())
            on_open()
            buffer = b""
            async for chunk in response.content.iter_any():
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    if line.strip():
                        yield _decoder.decode(line)


async def _body(response: aiohttp.ClientResponse, what: str) -> dict[str, Any]:
    data = await response.read()
    if not 200 <= response.status < 300:
        raise ApiError(response.status, what, data)
    decoded: dict[str, Any] = _decoder.decode(data) if data.strip() else {}
    return decoded
