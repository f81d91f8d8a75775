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


def problem(url: str) -> str | None:
    """Why `url` is not a `--nats` value nats-py can use (no server, a server without a host,
    an unknown scheme, a bad port or port 0, a host that cannot be a host name or an IP
    address), or
    None when it is. A bare host (`nats`, `user:pw@nats`) is nats-py's `nats://host:4222`.

    Whether the servers are reachable is not checked here (that is the connection's task).
    """
    servers = server_urls(url)
    if not servers:
        return "no server URL"
    for server in servers:
        part = _split(server)
        if part is None:
            return f"{server.rpartition('@')[2]!r} has a bad port"
        if part.scheme not in SCHEMES:
            schemes = ", ".join(f"{scheme}://" for scheme in SCHEMES)
            return f"{part.scheme}:// is not a NATS scheme (use {schemes})"
        if not part.hostname:
            return f"{shown(server)!r} names no host"
        if not names.is_host(part.hostname):
            return f"{part.hostname!r} is not a host name or IP address"
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
