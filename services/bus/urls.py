"""NATS URLs as `--nats` takes them: several servers, comma-separated, maybe with credentials.

Layer: bus (pure string handling; imports no NATS client, so the CLI can use it cheaply).
Never returns a password or token in text meant for messages, logs or files.
"""

from __future__ import annotations

from urllib.parse import SplitResult, urlsplit

from services.contracts import names


def server_urls(url: str) -> list[str]:
    """The server URLs of a comma-separated `--nats` value, spaces trimmed, empties dropped."""
    return [part.strip() for part in url.split(",") if part.strip()]


def shown(url: str) -> str:
    """`url` for messages and files: every server without the user, password or token it
    carries (`nats://watcher:pw@nats:4222` → `nats://nats:4222`)."""
    parts = (_split(server) for server in server_urls(url))
    return ",".join("<unparsable NATS URL>" if part is None
                    else part._replace(netloc=part.netloc.rpartition("@")[2]).geturl()
                    for part in parts)


def user(url: str) -> str | None:
    """The user of the first server URL carrying `user:password@`, as nats-py sends it; a
    bare `token@` is a token, not a user."""
    for server in server_urls(url):
        part = _split(server)
        if part is not None and part.username and part.password is not None:
            return part.username
    return None


SCHEMES = ("nats", "tls", "ws", "wss")
"""The schemes nats-py connects with."""


WEBSOCKET_SCHEMES = ("ws", "wss")
"""The schemes of NATS over websocket, which nats-py never mixes with the others in one list."""
NO_HOST = "none"
"""The host name nats-py takes for no host at all (it refuses a URL naming it)."""


def problem(url: str) -> str | None:
    """Why `url` is not a `--nats` value nats-py can use, or None when it is: no server, a
    server without a host, an unknown scheme, a scheme not in lowercase (nats-py reads
    `NATS://h:4222` as the host `NATS`), a bad port or port 0, a host that cannot be a host
    name or an IP address (or is `none`, which nats-py refuses), a server without a scheme
    that is more than `host[:port]` (`nats:/h`, `nats//h:4222`: nats-py reads the host
    `nats`), or websocket and other servers in one list (nats-py refuses the mix). A bare host
    (`nats`, `user:pw@nats`) is nats-py's `nats://host:4222`, and `host:port` its
    `nats://host:port`.

    Whether the servers are reachable is not checked here (that is the connection's task).
    """
    servers = server_urls(url)
    if not servers:
        return "no server URL"
    for server in servers:
        why = _server_problem(server)
        if why is not None:
            return why
    websocket = {server.partition("://")[0] in WEBSOCKET_SCHEMES for server in servers}
    if len(websocket) > 1:
        return ("websocket (ws://, wss://) and other (nats://, tls://) servers in one list: "
                "nats-py connects to either kind, never both")
    return None


def _server_problem(server: str) -> str | None:
    """`problem` of one server URL."""
    part = _split(server)
    tail = server.rpartition("@")[2]  # shown without the user, password or token
    if part is None:
        return f"{tail!r} has a bad port"
    scheme = server.partition("://")[0] if "://" in server else ""
    if part.scheme not in SCHEMES:
        known = ", ".join(f"{name}://" for name in SCHEMES)
        return f"{part.scheme}:// is not a NATS scheme (use {known})"
    if scheme and scheme != part.scheme:
        return (f"{scheme}:// must be written in lowercase, {part.scheme}://: nats-py reads "
                f"{scheme!r} as a host name")
    if not part.hostname:
        return f"{shown(server)!r} names no host"
    if not names.is_host(part.hostname):
        return f"{part.hostname!r} is not a host name or IP address"
    if part.hostname == NO_HOST:
        return f"{part.hostname!r} is no host nats-py connects to: it takes it for a missing one"
    if not scheme and (part.path or part.query or part.fragment):
        return f"{tail!r} is neither host:port nor a URL (nats://host:port)"
    if part.port == 0:
        return f"{shown(server)!r} has port 0, on which no server can be reached"
    return None


def _split(server: str) -> SplitResult | None:
    """One server URL split (nats-py's default scheme for a bare `host:port`), or None."""
    try:
        part = urlsplit(server if "://" in server else f"nats://{server}")
        part.port  # noqa: B018 - a bad port raises only when read
    except ValueError:
        return None
    return part
