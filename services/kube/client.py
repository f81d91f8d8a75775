"""One authenticated HTTP client for the API server, speaking raw JSON.

Layer: kube, the only package that imports kubernetes_asyncio. The library loads the
configuration (kubeconfig or in-cluster), owns the aiohttp session (TLS context, client
certificate, proxy, connection pool) and supplies the credentials of every request
(`ApiClient.update_params_for_auth`, which runs the configuration's token refresh hook).
Requests themselves go straight through that session, not through `ApiClient.call_api`:
bodies are encoded and decoded with msgspec, the headers are built once per content type and
credentials, a plain path is joined to the server's URL parsed once (`KubeClient._url`), the
session keeps no cookies, timeouts are shared (its generic parameter sanitising, stdlib JSON
and per-request objects cost 5-20% of our CPU per request: `python -m bench.kube_client`, results in
bench/results/kube-client.txt). No model (de)serialisation, so no generated-model bugs (such
as `create_namespaced_binding` failing on the `Status` the API server returns). Every failure
leaves this module as a `services.kube.errors` type. Never retries: callers decide.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import re
import ssl
import time
import urllib.parse
import urllib.request
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterator, Sequence
from typing import Any, TypeVar

import aiohttp
import msgspec
import yarl
from kubernetes_asyncio import config as kube_config
from kubernetes_asyncio.client import ApiClient, Configuration
from kubernetes_asyncio.config.config_exception import ConfigException
from multidict import CIMultiDict, CIMultiDictProxy

from services.config import limits
from services.config.settings import KubeSettings
from services.kube import errors, kubeconfig, tls_files
from services.runtime import metrics, unreachable
from services.runtime.cancellation import cancel_and_wait

log = logging.getLogger(__name__)

Query = Sequence[tuple[str, str]]
"""Query parameters as `(name, value)` pairs, values already rendered (`"true"`, `"500"`)."""

JSON = "application/json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"
PARTIAL_OBJECT_METADATA = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
"""An `Accept` asking for the object's metadata only (meta.k8s.io/v1 PartialObjectMetadata),
as client-go's metadata client asks: the API server sends no spec and no status."""

POOL_SIZE = limits.KUBE_POOL_SIZE
"""Connections kept per client: the watcher's long-lived watches plus bursts of concurrent
binds (the bound of `--bind-concurrency`, `services.config.limits`)."""

STREAM_RESERVE = 16
"""Connections of the pool kept for streams (watches): requests take at most the others."""

REQUEST_SLOTS = POOL_SIZE - STREAM_RESERVE
"""Requests one client has in flight at most. The others wait for a slot *before* their
timeout starts: queued in aiohttp's pool instead, they spent their timeout waiting for a
connection and timed out once the API server was slow (the binder alone can start 32
placements x 16 binds at once)."""

CONNECT_TIMEOUT_SECONDS = 10.0
TOKEN_REFRESH_SECONDS = 60
USER_AGENT = "gangsched"
IN_CLUSTER_HOST_ENV = "KUBERNETES_SERVICE_HOST"

AUTH_SETTINGS = ["BearerToken"]
"""The kubernetes_asyncio auth settings every request carries (what its generated API calls
pass): the configuration's bearer token, if any, as the `authorization` header."""

CREDENTIALS_REUSE_SECONDS = 1.0
"""How long (monotonic seconds) the credentials asked of the library for one request are
reused for the next ones. Asking runs the configuration's refresh hook (an in-cluster token
file's expiry check, an exec plugin's) and builds its settings anew: 2-3% of the binder's CPU
at a thousand requests a second (py-spy, bench/results/cluster-n1000-a-s30prof.json). A
rotated token is picked up at most this much later; client-go's cached token source reads a
rotated service-account token file at most once a minute."""

_PLAIN_PATH = re.compile(r"(?:/[A-Za-z0-9_~-][A-Za-z0-9_.~-]*)+")
"""A path aiohttp's URL parsing would leave exactly as written: segments of RFC 3986
unreserved characters only, none empty, none starting with a dot (so no `.`/`..` segment to
resolve), no `%` escape to normalise, no `?` or `#`. Every path `resources` builds for names
Kubernetes accepts (DNS labels and subdomains) is one; any other takes the general route."""

_decoder = msgspec.json.Decoder()
_UNDECODABLE = (msgspec.DecodeError, RecursionError)
"""A body that is no JSON document (ValidationError is a DecodeError) or nests deeper than
msgspec decodes."""
_encoder = msgspec.json.Encoder()

S = TypeVar("S", bound=msgspec.Struct)
_TRANSPORT_ERRORS = (aiohttp.ClientError, asyncio.TimeoutError, OSError)
_LOADER_ERRORS = (ConfigException, OSError, ValueError, RuntimeError, KeyError, TypeError,
                  AttributeError, AssertionError)
"""What kubernetes_asyncio's loaders raise on a configuration they cannot use, once
`kubeconfig.load` has checked its shape: `ConfigException` and `ValueError` (an exec plugin
failing or answering garbage, an OIDC token that is not a JWT), `OSError` (a plugin or token
file missing), `RuntimeError` (a plugin's output unreadable), and the others for whatever
still slips through its unchecked indexing and asserts."""
_CREDENTIAL_ERRORS = (ConfigException, OSError, ValueError)
"""What supplying a request's credentials raises when they cannot be read now: the in-cluster
refresh hook re-reading a token file that is missing, unreadable or empty (`ConfigException`,
`OSError`), or an auth setting the library cannot apply (`ApiValueError`, a ValueError)."""


class KubeClient:
    """Sends requests to one API server; use `connect` to build one, `close` when done."""

    def __init__(
        self,
        api: ApiClient,
        *,
        request_timeout_seconds: float,
        refresher: asyncio.Task[None] | None = None,
    ) -> None:
        self._api = api
        self._request_timeout_seconds = request_timeout_seconds
        self._refresher = refresher
        self._host = str(api.configuration.host)
        self._shown_host = kubeconfig.shown_url(self._host)
        self._session, self._session_options = _session_of(api)
        self._base_url = yarl.URL(self._host)
        self._base_path = yarl.URL(self._host + "/-").raw_path[:-2]
        self._default_headers = _default_headers(api)
        self._slots = asyncio.Semaphore(REQUEST_SLOTS)
        self._kept_credentials: tuple[float, dict[str, str], list[tuple[str, str]]] | None = None
        self._headers: dict[tuple[str, str], CIMultiDictProxy[str]] = {}
        self._headers_for: dict[str, str] | None = None

    @property
    def server(self) -> str:
        """The API server URL without credentials, for messages (`kubeconfig.shown_url`)."""
        return self._shown_host

    @property
    def host(self) -> str:
        """The API server URL, e.g. `https://127.0.0.1:6443`."""
        return self._host

    async def request(
        self,
        method: str,
        path: str,
        *,
        query: Query = (),
        body: dict[str, Any] | list[Any] | None = None,
        content_type: str = JSON,
        accept: str = JSON,
        timeout_seconds: float | None = None,
    ) -> dict[str, Any]:
        """Send one request and return the decoded JSON response body.

        Shapes: `path` starts with `/api` or `/apis`; `body` is sent as JSON (msgspec-encoded)
        with `content_type`; `accept` is the response type asked for (`JSON`, or
        `PARTIAL_OBJECT_METADATA`); an empty response body decodes to `{}`; a success whose
        body is no JSON object (a proxy's HTML login page) is KubeUnavailable, never read as
        an object without fields (a list of nothing, a pod without a node).
        Units: `timeout_seconds` bounds the whole request once it has a slot (default: the
        client's); at most `REQUEST_SLOTS` are in flight, the others wait their turn first.
        Raises:
            KubeError subclasses (see `services.kube.errors.from_status`); KubeUnavailable for
            timeouts, connection failures and credentials that cannot be read now (a token
            file being rotated); TypeError for a body msgspec cannot encode.
        """
        what = f"{method} {path}"
        status, data = await self._exchange(what, method, path, query, body, content_type,
                                            accept, timeout_seconds)
        return _decode_answer(data, status, what)

    async def get_as(self, path: str, shape: type[S], *, query: Query = (),
                     accept: str = JSON) -> S:
        """GET `path` and decode the answer into `shape`, a msgspec Struct that declares only
        the fields the caller reads.

        Fields `shape` does not declare are skipped as they are parsed, never built: on a list
        of objects with large metadata (managedFields) that is several times cheaper than
        `request`'s dicts. A field `shape` declares but the answer lacks takes its default.
        Raises:
            as `request`; KubeInvalid when the answer does not have `shape`'s types (a server
            that is not a Kubernetes API server, or a type the code mis-declared).
        """
        what = f"GET {path}"
        _, data = await self._exchange(what, "GET", path, query, None, JSON, accept, None)
        try:
            decoded: S = _typed_decoder(shape).decode(data)
        except _UNDECODABLE as error:
            raise errors.KubeInvalid(f"{what}: unexpected answer: {error}") from error
        return decoded

    async def _exchange(
        self,
        what: str,
        method: str,
        path: str,
        query: Query,
        body: dict[str, Any] | list[Any] | None,
        content_type: str,
        accept: str,
        timeout_seconds: float | None,
    ) -> tuple[int, bytes]:
        """One request through a slot: the answer's HTTP status (2xx) and its body, read
        whole.

        Raises:
            KubeError subclasses for any other status (`errors.from_status`, with the
            answer's `Retry-After`); KubeUnavailable as `request`.
        """
        timeout = _request_timeout(timeout_seconds or self._request_timeout_seconds)
        async with self._slots:
            response = await self._send(what, method, path, query, body, content_type, accept,
                                        timeout)
            try:
                data = await response.read()
            except _TRANSPORT_ERRORS as error:
                raise self._unreachable(what, error) from error
            finally:
                response.release()
        if not 200 <= response.status < 300:
            raise _failed(response, data, what)
        return response.status, data

    async def get_if_exists(self, path: str, *, accept: str = JSON) -> dict[str, Any] | None:
        """GET one object's API JSON (its metadata only with `PARTIAL_OBJECT_METADATA`); None
        when it does not exist.

        Raises:
            KubeError subclasses other than KubeNotFound.
        """
        try:
            return await self.request("GET", path, accept=accept)
        except errors.KubeNotFound:
            return None

    async def stream(
        self, path: str, query: Query, *, read_timeout_seconds: float,
        opened: Callable[[], None] | None = None,
    ) -> AsyncGenerator[dict[str, Any], None]:
        """GET `path` and yield each JSON line of the response (a watch stream) as a dict.

        `opened` is called once the API server accepted the request (a 2xx status), before
        the first line: a watch may stay silent for minutes, and its caller still learns that
        the server is reachable.
        Units: `read_timeout_seconds` is the longest silence tolerated between two chunks.
        Raises:
            as `request`; KubeSilent when the accepted stream brings nothing for
            `read_timeout_seconds`; KubeUnreachable also when the stream breaks,
            KubeUnavailable when a line is not JSON.
        """
        what = f"GET {path} (stream)"
        timeout = _stream_timeout(read_timeout_seconds)
        response = await self._send(what, "GET", path, query, None, JSON, JSON, timeout)
        try:
            if not 200 <= response.status < 300:
                raise _failed(response, await response.read(), what)
            if opened is not None:
                opened()
            async for line in _lines(response):
                yield _decode_line(line, what)
        except aiohttp.ServerTimeoutError as error:
            raise errors.KubeSilent(
                what, server=self._shown_host,
                why=f"nothing received for {read_timeout_seconds:g}s") from error
        except _TRANSPORT_ERRORS as error:
            raise self._unreachable(what, error) from error
        finally:
            # Closing (not releasing) drops a connection whose body was not read to the end.
            response.close()

    async def close(self) -> None:
        """Stop refreshing credentials and close the connection pool."""
        if self._refresher is not None:
            await cancel_and_wait(self._refresher)
        await self._api.close()

    async def _send(
        self,
        what: str,
        method: str,
        path: str,
        query: Query,
        body: dict[str, Any] | list[Any] | None,
        content_type: str,
        accept: str,
        timeout: aiohttp.ClientTimeout,
    ) -> aiohttp.ClientResponse:
        """Start the request on the library's session, authenticated as the library would.

        The headers are kubernetes_asyncio's `call_api` headers: ours, then the ApiClient's
        defaults (User-Agent), then the credentials of `AUTH_SETTINGS` (an `in: query` setting
        would add to the query, as there).
        """
        auth_headers, auth_query = await self._credentials(what)
        headers = self._request_headers(content_type, accept, auth_headers)
        url = self._url(path, [*query, *auth_query])
        data = None if body is None else _encoder.encode(body)
        try:
            response = await self._session.request(
                method, url, headers=headers, data=data, timeout=timeout,
                **self._session_options)
        except _TRANSPORT_ERRORS as error:
            _requests_counted(method, "error").inc()
            raise self._unreachable(what, error) from error
        _requests_counted(method, response.status).inc()
        return response

    def _request_headers(self, content_type: str, accept: str,
                         auth_headers: dict[str, str]) -> CIMultiDictProxy[str]:
        """A request's headers: ours, then the ApiClient's defaults, then the credentials'
        (later ones win, as in a dict merge). Built once per content type and accept for the
        credentials in use (`_credentials` keeps them for a while), and read-only, so
        aiohttp's own merge takes them without converting them first."""
        if auth_headers is not self._headers_for:
            self._headers = {}
            self._headers_for = auth_headers
        key = (content_type, accept)
        headers = self._headers.get(key)
        if headers is None:
            merged = {"Content-Type": content_type, "Accept": accept, **self._default_headers,
                      **auth_headers}
            headers = self._headers[key] = CIMultiDictProxy(CIMultiDict(merged))
        return headers

    def _url(self, path: str, query: Query) -> str | yarl.URL:
        """The URL of `path` (with `query` urlencoded): the API server's URL followed by it,
        as text that aiohttp parses and normalises. A plain path (`_PLAIN_PATH`, what every
        name Kubernetes accepts makes) without a query is joined to the server's URL parsed
        once instead, already encoded: the same URL, without parsing and quoting each
        request's text again (a new path each time, so yarl's caches do not help)."""
        if not query and _PLAIN_PATH.fullmatch(path):
            return self._base_url.with_path(self._base_path + path, encoded=True)
        url = self._host + path
        if query:
            url += "?" + urllib.parse.urlencode(query)
        return url

    async def _credentials(self, what: str) -> tuple[dict[str, str], list[tuple[str, str]]]:
        """The credentials of a request (`AUTH_SETTINGS`) as headers and query parameters,
        asked of the library (`ApiClient.update_params_for_auth`) at most once every
        `CREDENTIALS_REUSE_SECONDS`; callers must not change what is returned.

        Raises:
            KubeCredentialsUnavailable: the credentials cannot be read now (e.g. a
            service-account token file being rotated); nothing is kept, so the next request
            asks again.
        """
        now = time.monotonic()
        kept = self._kept_credentials
        if kept is not None and now - kept[0] < CREDENTIALS_REUSE_SECONDS:
            return kept[1], kept[2]
        headers: dict[str, str] = {}
        query: list[tuple[str, str]] = []
        try:
            await self._api.update_params_for_auth(headers, query, AUTH_SETTINGS)
        except _CREDENTIAL_ERRORS as error:  # e.g. a service-account token being rotated
            self._kept_credentials = None
            raise errors.KubeCredentialsUnavailable(
                what, server=self._shown_host, why=repr(error)) from error
        self._kept_credentials = (now, headers, query)
        return headers, query

    def _unreachable(self, what: str, error: BaseException) -> errors.KubeUnreachable:
        """The error for a request `what` that got no (whole) answer because of `error`."""
        return errors.KubeUnreachable(what, server=self._shown_host, why=transport_reason(error))


def transport_reason(error: BaseException) -> str:
    """Why a request got no answer, in plain words (`services.runtime.unreachable.reason`):
    `connection refused`, `timed out`, `name or service not known`, and TLS problems named as
    such (`TLS certificate not accepted: self-signed certificate`, `TLS handshake failed:
    wrong version number`), `the server closed the connection` and `the answer broke off` for
    a connection lost while reading."""
    if isinstance(error, aiohttp.ClientConnectorCertificateError):
        cause = error.certificate_error
        detail = getattr(cause, "verify_message", "") or getattr(cause, "reason", "") or cause
        return f"TLS certificate not accepted: {detail}"
    if isinstance(error, aiohttp.ClientConnectorError) and isinstance(error.os_error, ssl.SSLError):
        return f"TLS handshake failed: {_ssl_words(error.os_error)}"
    if isinstance(error, ssl.SSLError):
        return f"TLS failed: {_ssl_words(error)}"
    if isinstance(error, aiohttp.ServerDisconnectedError):
        return "the server closed the connection"
    if isinstance(error, aiohttp.ClientPayloadError):
        return "the answer broke off"
    return unreachable.reason(error)


def _ssl_words(error: ssl.SSLError) -> str:
    """OpenSSL's reason (`WRONG_VERSION_NUMBER`) as words (`wrong version number`)."""
    return str(error.reason or error).lower().replace("_", " ")


async def connect(settings: KubeSettings) -> KubeClient:
    """Build a client from `settings.kubeconfig` if set, else in-cluster credentials, else the
    default kubeconfig (`$KUBECONFIG` or `~/.kube/config`).

    An explicit kubeconfig wins over in-cluster credentials so an operator can point a pod at
    another cluster. Does not contact the API server.
    Raises:
        KubeNoCredentials: no usable credentials, or a configuration no retry can mend: the
            message names what was tried, or the file (and its entry and field) at fault (see
            `services.kube.kubeconfig.load`, `services.kube.tls_files.check`).
    """
    configuration = Configuration()
    refresher: asyncio.Task[None] | None = None
    if settings.kubeconfig is None and os.environ.get(IN_CLUSTER_HOST_ENV):
        source = _load_in_cluster(configuration)
    else:
        source, loader = await _load_kubeconfig(settings, configuration)
        refresher = asyncio.create_task(_refresh_tokens(loader, configuration))
    configuration.connection_pool_maxsize = POOL_SIZE
    if configuration.proxy is None:
        configuration.proxy = proxy_from_environment(str(configuration.host))
    api = ApiClient(configuration)
    api.user_agent = USER_AGENT
    _stop_trusting_environment(api)
    log.info("Kubernetes API %s (credentials: %s)", kubeconfig.shown_url(str(configuration.host)),
             source)
    return KubeClient(
        api, request_timeout_seconds=settings.request_timeout_seconds, refresher=refresher
    )


async def _load_kubeconfig(settings: KubeSettings,
                           configuration: Configuration) -> tuple[str, Any]:
    """Fill `configuration` from the kubeconfig files (`kubeconfig.files`), read and checked
    by `kubeconfig.load` before kubernetes_asyncio loads the active context: its source for
    the log (`kubeconfig /a:/b`) and the library's loader (for `_refresh_tokens`).

    Raises:
        KubeNoCredentials: as `kubeconfig.files`, `kubeconfig.load` and `tls_files.check`;
            also what the library refuses (an exec plugin that fails), in its words.
    """
    paths = kubeconfig.files(settings.kubeconfig)
    active = kubeconfig.load(paths, settings.context)
    source = "kubeconfig " + os.pathsep.join(str(path) for path in paths)
    try:
        with _loader_errors_unlogged():
            loader = await kube_config.load_kube_config_from_dict(
                active.config, context=active.context, client_configuration=configuration)
    except _LOADER_ERRORS as error:
        raise _refused(source, error) from error
    tls_files.check(configuration.ssl_ca_cert, configuration.cert_file,
                    configuration.key_file, active.tls_names())
    return source, loader


def _load_in_cluster(configuration: Configuration) -> str:
    """Fill `configuration` from the pod's service account; its source for the log.

    Raises:
        KubeNoCredentials: the library refuses the service account (a token file missing),
            the API server's address from the environment is not a URL, or the CA file is not
            a PEM certificate.
    """
    source = "in-cluster service account"
    try:
        kube_config.load_incluster_config(  # type: ignore[no-untyped-call]
            client_configuration=configuration
        )
    except _LOADER_ERRORS as error:
        raise _refused(source, error) from error
    host = str(configuration.host)
    try:
        kubeconfig.server_url(host, tls=True)
    except ValueError as error:
        raise errors.KubeNoCredentials(
            f"{source}: the API server {host} (from {IN_CLUSTER_HOST_ENV} and "
            f"KUBERNETES_SERVICE_PORT): {error}") from error
    ca = f"{source}: CA file {configuration.ssl_ca_cert}"
    tls_files.check(configuration.ssl_ca_cert, None, None, tls_files.TlsNames(ca, ca, ca))
    return source


@contextlib.contextmanager
def _loader_errors_unlogged() -> Iterator[None]:
    """Keep kubernetes_asyncio's kubeconfig loader from logging the error it then raises (an
    exec plugin that fails): `_refused` tells it, once."""
    library = logging.getLogger(kube_config.kube_config.__name__)
    library.addFilter(_nothing)
    try:
        yield
    finally:
        library.removeFilter(_nothing)


def _nothing(record: logging.LogRecord) -> bool:
    """A log filter that lets no record through."""
    return False


def _refused(source: str, error: Exception) -> errors.KubeNoCredentials:
    """The error for credentials from `source` that kubernetes_asyncio refused: its words on
    one line, the exception's type named unless it is the library's own ConfigException."""
    words = kubeconfig.one_line(error)
    if isinstance(error, ConfigException):
        words = words.removeprefix(f"{type(error).__name__}: ")
    return errors.KubeNoCredentials(f"{source}: {words}")


def _session_of(api: ApiClient) -> tuple[aiohttp.ClientSession, dict[str, Any]]:
    """The ApiClient's aiohttp session and the per-request options its REST client adds
    (`proxy`, parsed once, `proxy_headers`, `server_hostname`, each only when set), as that
    client would. The session keeps no cookies from then on (`_keep_no_cookies`).

    Raises:
        KubeError: the ApiClient has no aiohttp session (kubernetes_asyncio changed).
    """
    rest = api.rest_client
    session = getattr(rest, "pool_manager", None)
    if not isinstance(session, aiohttp.ClientSession):
        raise errors.KubeError("kubernetes_asyncio's ApiClient has no aiohttp session "
                               f"(rest_client.pool_manager is {type(session).__name__})")
    _keep_no_cookies(session)
    options: dict[str, Any] = {}
    for name in ("proxy", "proxy_headers", "server_hostname"):
        value = getattr(rest, name, None)
        if value:
            options[name] = yarl.URL(value) if name == "proxy" else value
    return session, options


def _keep_no_cookies(session: aiohttp.ClientSession) -> None:
    """Give `session` a cookie jar that keeps nothing (`aiohttp.DummyCookieJar`).

    A Kubernetes client has no use for cookies: client-go's http.Client has no cookie jar, so
    neither an API server nor anything in front of it can count on one being sent back. The
    default jar kept any `Set-Cookie` of a named host and matched its cookies against every
    request's URL (`CookieJar.filter_cookies`, ~2% of the binder's CPU). A cookie set in the
    kubeconfig's configuration (`ApiClient.cookie`) is a header of every request still
    (`_default_headers`).
    """
    if hasattr(session, "_cookie_jar"):
        session._cookie_jar = aiohttp.DummyCookieJar()
    else:
        log.warning("cannot turn off aiohttp's cookie jar (aiohttp changed?); requests will "
                    "be slower")


def _default_headers(api: ApiClient) -> dict[str, str]:
    """The headers the ApiClient adds to every request: its defaults (User-Agent) and the
    cookie, if one is set."""
    headers = {str(name): str(value) for name, value in api.default_headers.items()}
    if api.cookie:
        headers["Cookie"] = str(api.cookie)
    return headers


@functools.lru_cache(maxsize=256)
def _requests_counted(method: str, code: int | str) -> Any:
    """The `gangsched_kube_requests_total` series of `method` and `code` (an HTTP status, or
    `error` for no answer), looked up once: `labels` validates and locks on every call, 2 us
    a request. The metric's series are never removed, so a kept one stays the exported one."""
    return metrics.kube_requests.labels(method, str(code))


@functools.lru_cache(maxsize=32)
def _request_timeout(total_seconds: float) -> aiohttp.ClientTimeout:
    """One (immutable) timeout per distinct request timeout, shared by all requests."""
    return aiohttp.ClientTimeout(total=total_seconds)


@functools.lru_cache(maxsize=32)
def _stream_timeout(read_timeout_seconds: float) -> aiohttp.ClientTimeout:
    """A watch's timeout: no total, `CONNECT_TIMEOUT_SECONDS` to connect, and
    `read_timeout_seconds` of silence at most between two chunks."""
    return aiohttp.ClientTimeout(
        total=None, connect=CONNECT_TIMEOUT_SECONDS, sock_read=read_timeout_seconds
    )


def proxy_from_environment(url: str) -> str | None:
    """The proxy the environment asks for to reach `url` (`HTTPS_PROXY`/`HTTP_PROXY`, unless
    `NO_PROXY` bypasses the host), resolved once, as aiohttp's `trust_env` would per request."""
    parsed = urllib.parse.urlsplit(url)
    if not parsed.hostname or urllib.request.proxy_bypass(parsed.hostname):
        return None
    return urllib.request.getproxies().get(parsed.scheme or "https")


def _stop_trusting_environment(api: ApiClient) -> None:
    """Make the client's aiohttp session stop re-reading the environment on every request.

    kubernetes_asyncio opens its session with `trust_env=True`, which makes aiohttp look up
    proxies and parse ~/.netrc on a worker thread for each request: a third of the binder's
    CPU in the cluster benchmark. The proxy is resolved once instead (`proxy_from_environment`,
    passed as the configuration's proxy) and the API server never takes netrc credentials.
    """
    session = getattr(getattr(api, "rest_client", None), "pool_manager", None)
    if isinstance(session, aiohttp.ClientSession) and hasattr(session, "_trust_env"):
        session._trust_env = False
    else:
        log.warning("cannot turn off aiohttp trust_env (kubernetes_asyncio changed?); "
                    "requests will be slower")


async def _refresh_tokens(loader: Any, configuration: Configuration) -> None:
    """Keep exec-plugin and GCP tokens of a kubeconfig fresh (returns at once for others).

    A refresh that fails (a plugin that cannot reach its identity provider) is tried again
    every `TOKEN_REFRESH_SECONDS`, as client-go runs the plugin again for a later request:
    giving up would leave the client with a token that expires for good. Each new reason is
    logged as a warning, its repeats at debug level. In-cluster service-account tokens are
    re-read by kubernetes_asyncio itself.
    """
    told = ""
    while True:
        try:
            await kube_config.refresh_token(loader, configuration, TOKEN_REFRESH_SECONDS)
            return  # neither an exec plugin nor GCP: nothing to refresh
        except Exception as error:
            reason = kubeconfig.one_line(error)
            (log.warning if reason != told else log.debug)(
                "refreshing Kubernetes credentials failed (retrying every %ss); requests may "
                "be refused: %s", TOKEN_REFRESH_SECONDS, reason)
            told = reason


async def _lines(response: aiohttp.ClientResponse) -> AsyncIterator[bytes]:
    """The non-empty lines of a streamed body, without a size limit per line."""
    buffer = bytearray()
    async for chunk in response.content.iter_any():
        start = len(buffer)
        buffer += chunk
        end = buffer.find(b"\n", start)
        while end >= 0:
            line = bytes(buffer[:end]).strip()
            del buffer[: end + 1]
            if line:
                yield line
            end = buffer.find(b"\n")
    if buffer.strip():
        yield bytes(buffer).strip()


@functools.cache
def _typed_decoder(shape: type[S]) -> msgspec.json.Decoder[S]:
    """One decoder per Struct type (building one costs more than a small decode)."""
    return msgspec.json.Decoder(shape)


def _decode_object(data: bytes) -> dict[str, Any]:
    """Decode a response body; `{}` when empty or not a JSON object (e.g. a proxy's HTML)."""
    if not data.strip():
        return {}
    try:
        decoded = _decoder.decode(data)
    except _UNDECODABLE:
        return {"message": data[:200].decode("utf-8", "replace")}
    return decoded if isinstance(decoded, dict) else {}


def _failed(response: aiohttp.ClientResponse, data: bytes, what: str) -> errors.KubeError:
    """The error of a request on `what` answered with a status other than 2xx: its body (a
    Status, as the API server sends) read as `errors.from_status` reads it, with the wait the
    answer asks for (`errors.retry_after_seconds`)."""
    return errors.from_status(
        response.status, _decode_object(data), what,
        retry_after_seconds=errors.retry_after_seconds(
            response.status, response.headers.get("Retry-After")))


def _decode_answer(data: bytes, status: int, what: str) -> dict[str, Any]:
    """Decode a successful (2xx) response body: `{}` when empty.

    Raises:
        KubeUnavailable: the body is no JSON object (as client-go's decoding fails and its
            caller retries): read as one, it would stand for an object without fields.
    """
    if not data.strip():
        return {}
    try:
        decoded = _decoder.decode(data)
    except _UNDECODABLE:
        decoded = None
    if not isinstance(decoded, dict):
        raise errors.KubeUnavailable(
            f"{what}: answered {status} with a body that is no JSON object: "
            f"{data[:80].decode('utf-8', 'replace')!r}")
    return decoded


def _decode_line(line: bytes, what: str) -> dict[str, Any]:
    """Decode one watch line.

    Raises:
        KubeUnavailable: not a JSON object (a truncated or garbled stream).
    """
    try:
        decoded = _decoder.decode(line)
    except _UNDECODABLE as error:
        raise errors.KubeUnavailable(f"{what}: undecodable line {line[:80]!r}") from error
    if not isinstance(decoded, dict):
        raise errors.KubeUnavailable(f"{what}: unexpected line {line[:80]!r}")
    return decoded
