"""Database URLs in text meant for people, logs and files: never a secret.

Layer: store (pure string handling; SQLAlchemy's URL parser only). A database URL carries a
secret in two places: the password of its userinfo (`user:pw@host`) and query parameters
(`?password=pw`, as libpq and asyncpg take it, or any parameter whose name suggests a secret:
`SECRET_WORDS`). `shown` drops both, also from a URL that does not parse (a port that is no
number), and keeps the rest: the user name is no secret, and PostgreSQL's `PGPASSWORD` or
`~/.pgpass` can then supply the password for it (run.json holds such a URL). Every message,
log line and file that names a database URL goes through `shown`.
"""

from __future__ import annotations

import re
from urllib.parse import unquote

from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

SECRET_WORDS = ("password", "passwd", "passphrase", "pwd", "secret", "token", "credential",
                "apikey", "accesskey", "privatekey", "auth")
"""A query parameter whose name (lower case, letters only) contains one of these, or is
`pass`, holds a secret (`password`, `sslpassword`, `api_key`, `authToken`, ...); `passfile`
and `sslkey` name files, not secrets, and are kept."""


def secret_parameter(name: str) -> bool:
    """Whether the query parameter `name` suggests a secret value (`SECRET_WORDS`)."""
    letters = re.sub(r"[^a-z]", "", name.lower())
    return letters == "pass" or any(word in letters for word in SECRET_WORDS)


def shown(url: str) -> str:
    """`url` without its secrets (module docstring): `postgresql+asyncpg://u:pw@h/db?password=
    pw&sslmode=require` → `postgresql+asyncpg://u@h/db?sslmode=require`. A file path (no
    `://`) is returned as it is."""
    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError):  # ValueError: a port that is no number
        return _unparsed_shown(url)
    if "@" in (parsed.host or ""):  # `u:p@ss@h`: SQLAlchemy cuts the password at its `@`
        return _unparsed_shown(url)
    secrets = [name for name in parsed.query if secret_parameter(name)]
    public = parsed.difference_update_query(secrets)._replace(password=None)
    return public.render_as_string(hide_password=False)


def in_memory_sqlite(url: str) -> bool:
    """Whether `url` is a SQLite database kept in memory: no file path (`sqlite://`,
    `sqlite+aiosqlite://`, `sqlite:///`), `:memory:`, or a SQLite URI one (`file::memory:`,
    `mode=memory`, with `uri=true`). Such a database lives as long as one connection: a
    migration of it is gone before the planner looks, and nothing it records can be audited."""
    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError):
        return False
    if parsed.get_backend_name() != "sqlite":
        return False
    database = parsed.database or ""
    if database in ("", ":memory:"):
        return True
    as_uri = str(parsed.query.get("uri", "")).lower() in ("true", "1")
    return as_uri and (database.startswith("file::memory:")
                       or parsed.query.get("mode") == "memory")


def hides_secrets(url: str) -> bool:
    """Whether `shown(url)` leaves a secret out (so that it cannot be pasted as the URL)."""
    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError):
        return _unparsed_shown(url) != url
    return parsed.password is not None or any(map(secret_parameter, parsed.query))


def _unparsed_shown(url: str) -> str:
    """`shown` for a URL SQLAlchemy cannot parse, cut as text: the userinfo runs to the last
    `@` (a password may hold `/`, `?` or `:`: rather hide too much than a secret), of which
    the user (up to its first `:`) is kept; then the secret query parameters are dropped."""
    scheme, separator, rest = url.partition("://")
    if not separator:
        return url
    userinfo, at, location = rest.rpartition("@")
    if at:
        rest = f"{userinfo.split(':', 1)[0]}@{location}"
    return f"{scheme}://{_without_secret_parameters(rest)}"


def _without_secret_parameters(text: str) -> str:
    """`text` (a URL's part after `://`) without the query parameters `secret_parameter`
    names, the others kept as written."""
    base, mark, query = text.partition("?")
    if not mark:
        return text
    kept = [part for part in query.split("&")
            if not secret_parameter(unquote(part.partition("=")[0]))]
    return base + ("?" + "&".join(kept) if kept else "")
