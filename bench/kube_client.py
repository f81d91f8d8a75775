"""CPU per API request of gangsched's Kubernetes client, against the real testbed (not a test).

Issue 14: the binder spent ~42% of its samples in `KubeClient.request`, mostly in
kubernetes_asyncio's `ApiClient.call_api` (parameter sanitising, its JSON encoding). This runs
the same requests through the client as it is (`services.kube.client.KubeClient`, straight
through the library's aiohttp session) and through the old path (`CallApiClient` below, kept
only here), the two taking turns chunk by chunk so both see the same load of the shared
machine. It reports this process's CPU time per request (`resource.getrusage(RUSAGE_SELF)`:
user and system CPU of this process only, so the API server's work on the shared cores is not
counted; user CPU is where the Python code runs, system CPU mostly the loopback TCP), the
median over chunks and the ratio new/old; and the API server's CPU per request (/proc).

    python -m bench.kube_client                    # 4,000 requests per case and client, 20 chunks
    python -m bench.kube_client --requests 500 --chunks 4 --auth token

Cases: GET a node (the whole object: `NODE`, with a real node's image list), GET its metadata
only (`PARTIAL_OBJECT_METADATA`, the binder's post-bind existence check), POST an event
(events.k8s.io/v1), each sequential and `--concurrency` at a time; then the binder's retry
wrappers around a call that succeeds at once (tenacity per call before, the fast path of
`services.binder.retries` now).
The testbed's admin kubeconfig authenticates with a client certificate; `--auth token` uses
its static bearer token instead (the `authorization` header is then built per request).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import resource
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp
import msgspec
import tenacity

from bench.cluster import cpu
from services.binder import reporter, retries
from services.config.settings import KubeSettings
from services.kube import client as kube_client
from services.kube import errors, events, resources
from services.kube.client import PARTIAL_OBJECT_METADATA, KubeClient
from services.kube.events import ObjectRef
from services.runtime import metrics
from tests.cluster.fixture import ControlPlane
from tests.e2e.kube import token_kubeconfig

NODE = "bench-images"
"""A node made for the benchmark, its status shaped like a real node's: the kubelet reports
up to 50 images (`--node-status-max-images`), here each with two names and a size."""
NAMESPACE = "default"
IMAGES = 50


class CallApiClient(KubeClient):
    """The request path before the client fast path (kept for this comparison only): through
    `ApiClient.call_api` with `_preload_content=False`, and a new `aiohttp.ClientTimeout`
    per request."""

    async def _send(
        self,
        what: str,
        method: str,
        path: str,
        query: kube_client.Query,
        body: dict[str, Any] | list[Any] | None,
        content_type: str,
        accept: str,
        timeout: aiohttp.ClientTimeout,
    ) -> aiohttp.ClientResponse:
        fresh = aiohttp.ClientTimeout(total=timeout.total, connect=timeout.connect,
                                      sock_read=timeout.sock_read)
        try:
            response: aiohttp.ClientResponse = await self._api.call_api(
                path, method, query_params=list(query),
                header_params={"Content-Type": content_type, "Accept": accept}, body=body,
                auth_settings=kube_client.AUTH_SETTINGS, _preload_content=False,
                _request_timeout=fresh)
        except (aiohttp.ClientError, TimeoutError, OSError) as error:
            metrics.kube_requests.labels(method, "error").inc()
            raise errors.KubeUnavailable(f"{what}: {error!r}") from error
        metrics.kube_requests.labels(method, str(response.status)).inc()
        return response


Request = Callable[[KubeClient, int], Awaitable[Any]]


async def get_node(client: KubeClient, _: int) -> Any:
    return await client.request("GET", resources.node_path(NODE))


async def get_node_metadata(client: KubeClient, _: int) -> Any:
    return await client.request("GET", resources.node_path(NODE), accept=PARTIAL_OBJECT_METADATA)


async def post_event(client: KubeClient, number: int) -> Any:
    about = ObjectRef("Pod", "v1", NAMESPACE, f"bench-{number}", f"uid-{number}")
    body = events.event_body(about, event_type="Normal", reason="Bench", message="bench",
                             action="Binding", now=datetime.now(UTC), controller="bench",
                             instance="bench")
    return await client.request("POST", resources.events_path(NAMESPACE), body=body)


CASES: dict[str, Request] = {
    "GET node": get_node,
    "GET node metadata": get_node_metadata,
    "POST event": post_event,
}


@dataclass(frozen=True)
class Cost:
    """Microseconds per request: our user CPU, our system CPU, wall, and the API server's
    CPU (its process, from /proc: 10 ms ticks, and its own background work included)."""

    user_us: float
    system_us: float
    wall_us: float
    server_us: float = 0.0

    @property
    def cpu_us(self) -> float:
        return self.user_us + self.system_us


@dataclass
class Samples:
    """One `Cost` per chunk."""

    costs: list[Cost] = field(default_factory=list)

    def median(self, what: Callable[[Cost], float]) -> float:
        return statistics.median(what(cost) for cost in self.costs)


async def run_case(client: KubeClient, request: Request, count: int, concurrency: int,
                   offset: int) -> Cost:
    """`count` requests, `concurrency` at a time; their cost per request."""
    gate = asyncio.Semaphore(concurrency)

    async def one(number: int) -> None:
        async with gate:
            await request(client, offset + number)

    before, wall = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    if concurrency == 1:
        for number in range(count):
            await request(client, offset + number)
    else:
        await asyncio.gather(*(one(number) for number in range(count)))
    wall = time.perf_counter() - wall
    after = resource.getrusage(resource.RUSAGE_SELF)
    return Cost(user_us=(after.ru_utime - before.ru_utime) / count * 1e6,
                system_us=(after.ru_stime - before.ru_stime) / count * 1e6,
                wall_us=wall / count * 1e6)


async def connect_both(kubeconfig: Path) -> dict[str, KubeClient]:
    """A new-path and an old-path client from the same kubeconfig (each its own pool)."""
    new = await kube_client.connect(KubeSettings(kubeconfig=kubeconfig))
    template = await kube_client.connect(KubeSettings(kubeconfig=kubeconfig))
    old = CallApiClient(template._api, request_timeout_seconds=new._request_timeout_seconds,
                        refresher=template._refresher)
    return {"old": old, "new": new}


async def measure_requests(kubeconfig: Path, count: int, chunks: int, concurrency: int,
                           server_pid: int) -> dict[tuple[str, int, str], Samples]:
    """Every case, sequential and concurrent: `count` requests per client in `chunks`
    chunks, old and new taking turns chunk by chunk (so both see the same load of the shared
    machine), one `Cost` sample per chunk."""
    clients = await connect_both(kubeconfig)
    results: dict[tuple[str, int, str], Samples] = {}
    per_chunk = max(1, count // chunks)
    try:
        for client in clients.values():  # warm up: connections, TLS, first-call imports
            await run_case(client, get_node, 50, concurrency, 0)
        offset = 0
        for name, request in CASES.items():
            for parallel in (1, concurrency):
                for chunk in range(chunks):
                    order = list(clients) if chunk % 2 == 0 else list(reversed(clients))
                    for which in order:
                        offset += per_chunk
                        server = cpu.snapshot({"server": server_pid})
                        cost = await run_case(clients[which], request, per_chunk, parallel,
                                              offset)
                        server_us = cpu.used_since(server, {"server": server_pid})["server"]
                        cost = dataclasses.replace(cost, server_us=server_us / per_chunk * 1e6)
                        results.setdefault((name, parallel, which), Samples()).costs.append(cost)
    finally:
        for client in clients.values():
            await client.close()
    return results


async def _succeed() -> None:
    return None


async def best_effort_before(write: Callable[[], Awaitable[None]]) -> None:
    """`reporter.best_effort` before the fast path: a tenacity policy built and run per call."""
    retrying = tenacity.AsyncRetrying(
        retry=tenacity.retry_if_exception_type(errors.KubeUnavailable),
        wait=tenacity.wait_exponential(multiplier=0.2, max=2.0),
        stop=tenacity.stop_after_attempt(reporter.WRITE_ATTEMPTS),
        reraise=True,
    )
    await retrying(write)


async def best_effort_now(write: Callable[[], Awaitable[None]]) -> None:
    await reporter.best_effort("bench", write)


async def forever_before(write: Callable[[], Awaitable[None]]) -> None:
    """The binder's unlimited retry loop before the fast path (`binding._retrying`, per call)."""
    retrying = tenacity.AsyncRetrying(
        retry=tenacity.retry_if_exception_type(errors.KubeUnavailable),
        wait=tenacity.wait_exponential(multiplier=0.1, max=5.0),
        before_sleep=lambda state: None,
        reraise=True,
    )
    async for attempt in retrying:
        with attempt:
            await write()


FOREVER = retries.Retry(first_wait_seconds=0.1, max_wait_seconds=5.0)


async def forever_now(write: Callable[[], Awaitable[None]]) -> None:
    await FOREVER.call(write, before_sleep=lambda state: None)


WRAPPERS: dict[str, dict[str, Callable[[Callable[[], Awaitable[None]]], Awaitable[None]]]] = {
    "best_effort (3 attempts)": {"old": best_effort_before, "new": best_effort_now},
    "retry forever": {"old": forever_before, "new": forever_now},
}


async def measure_wrappers(count: int, chunks: int) -> dict[tuple[str, str], list[float]]:
    """CPU µs per call of each retry wrapper around a call that succeeds at once."""
    results: dict[tuple[str, str], list[float]] = {}
    for _ in range(chunks):
        for name, pair in WRAPPERS.items():
            for which, wrapper in pair.items():
                cpu = time.process_time()
                for _ in range(count):
                    await wrapper(_succeed)
                results.setdefault((name, which), []).append(
                    (time.process_time() - cpu) / count * 1e6)
    return results


def report(requests: dict[tuple[str, int, str], Samples],
           wrappers: dict[tuple[str, str], list[float]], header: Sequence[str]) -> str:
    lines = [*header, "",
             "| request | in flight | CPU µs/req old | new | new/old | user CPU µs/req old | "
             "new | new/old | wall µs/req old | new | API server CPU µs/req |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, parallel in sorted({(n, p) for n, p, _ in requests}, key=lambda k: (
            list(CASES).index(k[0]), k[1])):
        old, new = requests[(name, parallel, "old")], requests[(name, parallel, "new")]
        row = [name, str(parallel)]
        for what in (lambda c: c.cpu_us, lambda c: c.user_us):
            before, after = old.median(what), new.median(what)
            row += [f"{before:.0f}", f"{after:.0f}", f"{after / before:.2f}"]
        row += [f"{old.median(lambda c: c.wall_us):.0f}", f"{new.median(lambda c: c.wall_us):.0f}",
                f"{Samples(old.costs + new.costs).median(lambda c: c.server_us):.0f}"]
        lines.append("| " + " | ".join(row) + " |")
    lines += ["", "| retry wrapper, call succeeds at once | CPU µs/call old | CPU µs/call new |",
              "|---|---|---|"]
    for name in WRAPPERS:
        lines.append(f"| {name} | {statistics.median(wrappers[(name, 'old')]):.1f} | "
                     f"{statistics.median(wrappers[(name, 'new')]):.1f} |")
    return "\n".join(lines)


def node_status() -> dict[str, Any]:
    images = [{"names": [f"registry.example/team/image-{n}@sha256:{n:064x}",
                         f"registry.example/team/image-{n}:v1.{n}"],
               "sizeBytes": 1_000_000 * (n + 1)} for n in range(IMAGES)]
    capacity = {"cpu": "64", "memory": "256Gi", "pods": "110", "nvidia.com/gpu": "8"}
    return {"status": {"capacity": capacity, "allocatable": capacity, "images": images,
                       "nodeInfo": {"kubeletVersion": "v1.36.3", "containerRuntimeVersion":
                                    "containerd://2.1.0", "operatingSystem": "linux",
                                    "architecture": "amd64"}}}


async def make_node(kubeconfig: Path) -> tuple[int, int]:
    """Create `NODE` with its status; the node's JSON size whole and metadata only."""
    client = await kube_client.connect(KubeSettings(kubeconfig=kubeconfig))
    try:
        await client.request("POST", "/api/v1/nodes", body={
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": NODE, "labels": {"kubernetes.io/hostname": NODE}}})
        await client.request("PATCH", resources.node_path(NODE) + "/status", body=node_status(),
                             content_type=kube_client.MERGE_PATCH)
        whole = await get_node(client, 0)
        meta = await get_node_metadata(client, 0)
    finally:
        await client.close()
    return len(msgspec.json.encode(whole)), len(msgspec.json.encode(meta))


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--requests", type=int, default=4000, help="requests per case and client")
    parser.add_argument("--chunks", type=int, default=20,
                        help="samples per case and client (old and new alternate by chunk)")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--auth", choices=("cert", "token"), default="cert")
    args = parser.parse_args(argv)
    with ControlPlane(nodes=1) as cp, tempfile.TemporaryDirectory() as work:
        kubeconfig = cp.kubeconfig
        if args.auth == "token":
            kubeconfig = token_kubeconfig(cp, Path(work) / "token.kubeconfig", cp.token)
        whole, meta = asyncio.run(make_node(kubeconfig))
        requests = asyncio.run(measure_requests(kubeconfig, args.requests, args.chunks,
                                                args.concurrency, cp.pids["kube-apiserver"]))
    wrappers = asyncio.run(measure_wrappers(args.requests * 2 // args.chunks, args.chunks))
    print(report(requests, wrappers, [
        f"kube client CPU per request: {args.requests} requests per case and client, median "
        f"of {args.chunks} chunks, auth {args.auth}; node JSON {whole} bytes whole, "
        f"{meta} bytes metadata only"]))


if __name__ == "__main__":
    main()
