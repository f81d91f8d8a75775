"""Where a running gangsched is: `<data-dir>/run.json` (written by `gangsched run`), and the
credentials of its embedded NATS, `<data-dir>/nats-credentials.json`.

Layer: cli. Reads and writes small JSON files; an option given on the command line always
wins, then run.json, then the default of the data directory (SQLite `<data-dir>/gangsched.db`).
Both files are mode 0600. run.json never holds a secret: its URLs are written without
password (the database URL as `store.urls.shown` gives it, without the password of its
userinfo nor its secret query parameters; the NATS URL without any userinfo, which may be a
token). The credentials file holds only the per-start credentials of the embedded
nats-server, never credentials the user gave.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from services.bus import urls
from services.config.settings import Settings
from services.runtime.private_files import make_private_directory, write_private
from services.store import urls as database_urls

RUN_FILE = "run.json"
CREDENTIALS_FILE = "nats-credentials.json"
DEFAULT_PREFIX = "gangsched"


def load(data_dir: Path, name: str = RUN_FILE) -> dict[str, Any]:
    """The content of `<data_dir>/<name>` (run.json), or `{}` when absent or unreadable."""
    try:
        info = json.loads((data_dir / name).read_text())
    except (OSError, ValueError):
        return {}
    return info if isinstance(info, dict) else {}


def write(data_dir: Path, info: dict[str, Any]) -> None:
    """Write `info` as `<data_dir>/run.json`, mode 0600, its `nats` and `db` URLs stripped of
    secrets (see module docstring)."""
    make_private_directory(data_dir)
    public = {**info, "nats": info.get("nats") and urls.shown(str(info["nats"])),
              "db": info.get("db") and database_urls.shown(str(info["db"]))}
    write_private(data_dir / RUN_FILE, json.dumps(public, indent=2) + "\n")


def write_credentials(data_dir: Path, user: str, password: str) -> None:
    """Record the embedded NATS's credentials in `<data_dir>/nats-credentials.json` (0600)."""
    make_private_directory(data_dir)
    text = json.dumps({"user": user, "password": password}, indent=2) + "\n"
    write_private(data_dir / CREDENTIALS_FILE, text)


def nats_credentials(given_url: str | None, data_dir: Path) -> tuple[str, str] | None:
    """The (user, password) of the embedded NATS that run.json names, when no URL is given.

    A URL given on the command line is another server: the embedded server's credentials are
    never sent there.
    """
    if given_url:
        return None
    recorded = load(data_dir, CREDENTIALS_FILE)
    user, password = recorded.get("user"), recorded.get("password")
    if isinstance(user, str) and isinstance(password, str) and user and password:
        return user, password
    return None


DATA_NAMES = (RUN_FILE, CREDENTIALS_FILE, "gangsched.db", "lock", "nats", "decision.key")
"""What gangsched keeps in a data directory: run.json and the embedded NATS's credentials,
the default SQLite database, the lock of the process holding it (`data_dir_lock`), the
embedded NATS's store and `run`'s decision key."""


def holds_data(data_dir: Path) -> bool:
    """Whether `data_dir` holds anything of gangsched's (`DATA_NAMES`); False when it is no
    directory."""
    return any((data_dir / name).exists() for name in DATA_NAMES)


def embedded_left_behind(data_dir: Path) -> bool:
    """Whether `data_dir` still holds the credentials of a `gangsched run`'s embedded NATS, which
    the run removes as it stops: a run that died without stopping (SIGKILL, a crash) when no
    process holds the directory's lock."""
    return (data_dir / CREDENTIALS_FILE).is_file()


def remove(data_dir: Path) -> None:
    """Remove run.json and the credentials file (the process no longer serves)."""
    for name in (RUN_FILE, CREDENTIALS_FILE):
        (data_dir / name).unlink(missing_ok=True)


def database_url(given: str | None, data_dir: Path) -> str:
    """`given`, else run.json's `db`, else the data directory's default SQLite database."""
    recorded = load(data_dir).get("db")
    return given or (str(recorded) if recorded else Settings(data_dir=data_dir).store_url())


def nats_url(given: str | None, data_dir: Path) -> str | None:
    """`given`, else run.json's `nats` (the embedded server of a running `gangsched run`)."""
    recorded = load(data_dir).get("nats")
    return given or (str(recorded) if recorded else None)


def prefix(given: str | None, data_dir: Path) -> str:
    """`given`, else run.json's `prefix`, else `gangsched`."""
    recorded = load(data_dir).get("prefix")
    return given or (str(recorded) if recorded else DEFAULT_PREFIX)
