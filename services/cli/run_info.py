"""Where a running gangsched is: `<data-dir>/run.json` (written by `gangsched run`, or by a
service run apart where no other live gangsched keeps one), and the credentials of `run`'s
embedded NATS, `<data-dir>/nats-credentials.json`.

Layer: cli. Reads and writes small JSON files; an option given on the command line always
wins, then run.json, then the default of the data directory (SQLite `<data-dir>/gangsched.db`).
Both files are mode 0600. run.json never holds a secret: its URLs are written without
password (the database URL as `store.urls.shown` gives it, without the password of its
userinfo nor its secret query parameters; the NATS URL without any userinfo, which may be a
token). The credentials file holds only the per-start credentials of the embedded
nats-server, never credentials the user gave.

Each file belongs to the process that wrote it, and no other gangsched overwrites or removes it
while that process lives: run.json records its writer's pid (`owner`); it is written only by
the process holding the data directory's lock (`gangsched run` always holds it), or, where no
process holds it, by a service run apart when no other live process's run.json is there
(`kept_by_another`); each process removes only its own (`remove_own`), and the credentials
only while they are those of its own embedded server (`remove_credentials`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sqlalchemy.exc import ArgumentError

from services.bus import urls
from services.cli import data_dir_lock, exit_codes, text_files
from services.config.settings import Settings
from services.contracts.subjects import PREFIX_PATTERN
from services.runtime.private_files import make_private_directory, write_private
from services.store import urls as database_urls
from services.store.engines import async_url

RUN_FILE = "run.json"
CREDENTIALS_FILE = "nats-credentials.json"
RUN_FILE_BYTES = 1 << 20
"""The most run.json (or the credentials file beside it) may hold, in bytes (1 MiB; they hold
a few hundred): past it, or a FIFO or device in its place, it is no file `gangsched run`
wrote."""
DEFAULT_PREFIX = "gangsched"


def load(data_dir: Path, name: str = RUN_FILE) -> dict[str, Any]:
    """The content of `<data_dir>/<name>` (run.json), or `{}` when absent or unreadable."""
    try:
        info = json.loads(text_files.read_text(data_dir / name, RUN_FILE_BYTES,
                                               regular_only=True))
    except (OSError, ValueError, RecursionError, text_files.TextFileRefused):
        return {}
    return info if isinstance(info, dict) else {}


def write(data_dir: Path, info: dict[str, Any]) -> None:
    """Write `info` as `<data_dir>/run.json`, mode 0600, its `nats` and `db` URLs stripped of
    secrets (see module docstring), with this process's pid as `pid` (its owner). Whether this
    process may write it is the caller's to ask first (`kept_by_another`)."""
    make_private_directory(data_dir)
    public = {**info, "nats": info.get("nats") and urls.shown(str(info["nats"])),
              "db": info.get("db") and database_urls.shown(str(info["db"])),
              "pid": os.getpid(), "started": process_start(os.getpid())}
    write_private(data_dir / RUN_FILE, json.dumps(public, indent=2) + "\n")


def owner(data_dir: Path) -> int | None:
    """The pid run.json records (the process that wrote it), or None: no run.json, one that
    cannot be read, or one with no pid (an earlier gangsched's, or written by hand)."""
    pid = load(data_dir).get("pid")
    return pid if isinstance(pid, int) and not isinstance(pid, bool) and pid > 0 else None


def process_start(pid: int) -> int | None:
    """When process `pid` started, in clock ticks since boot (`/proc/<pid>/stat` field 22), or
    None where /proc cannot tell (no such process, another system): with the pid, what tells
    the process that wrote run.json from a later one given the same pid."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return int(fields[19])
    except (OSError, IndexError, ValueError):
        return None


def _state(pid: int) -> str | None:
    """The process's state letter in /proc (`Z`: a zombie, dead but not reaped), or None."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def owner_alive(data_dir: Path) -> bool | None:
    """Whether the process that wrote run.json still runs: the same pid, not a zombie, and
    (where run.json records it and /proc tells) started when it did; None when run.json names
    no writer (an earlier gangsched's, or none)."""
    info = load(data_dir)
    pid = owner(data_dir)
    if pid is None:
        return None
    started = info.get("started")
    if _state(pid) == "Z":
        return False
    now = process_start(pid)
    if isinstance(started, int) and now is not None and now != started:
        return False  # the pid was given to another process since
    return is_alive(pid)


def is_alive(pid: int) -> bool:
    """Whether a process `pid` exists (another user's counts: it cannot be signalled, yet
    lives)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OverflowError:  # no such pid on this system
        return False
    return True


def kept_by_another(data_dir: Path) -> str | None:
    """The pid of another live gangsched whose run.json `data_dir` keeps, so that this process
    writes none there; None when this process may write it.

    The holder of the directory's lock keeps it (a `gangsched run` with its embedded NATS or
    SQLite file there, or a planner on that file): this process writes it only when it is that
    holder. Where no process holds
    the lock, the writer of the run.json there keeps it while it lives (two services run apart
    in one directory: the first ready keeps it); one whose writer is gone (killed), or that
    names none, is anybody's.
    """
    holder = data_dir_lock.holder(data_dir)
    if holder is not None:
        return None if holder == str(os.getpid()) else holder
    pid = owner(data_dir)
    if pid is not None and pid != os.getpid() and owner_alive(data_dir):
        return str(pid)
    return None


def write_credentials(data_dir: Path, user: str, password: str) -> None:
    """Record the embedded NATS's credentials in `<data_dir>/nats-credentials.json` (0600)."""
    make_private_directory(data_dir)
    text = json.dumps({"user": user, "password": password}, indent=2) + "\n"
    write_private(data_dir / CREDENTIALS_FILE, text)


def nats_credentials(given_url: str | None, data_dir: Path) -> tuple[str, str] | None:
    """The (user, password) of the embedded NATS that run.json names, when no URL is given.

    A URL given on the command line is another server: the embedded server's credentials are
    never sent there; nor to the NATS of a run.json written by another process than the one
    holding the data directory's lock, whose embedded server they are for (a service run apart
    against a shared NATS, ready before a `gangsched run` in the same directory).
    """
    if given_url:
        return None
    writer = owner(data_dir)
    if writer is not None and data_dir_lock.holder(data_dir) != str(writer):
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


def remove_own(data_dir: Path) -> None:
    """Remove run.json if this process wrote it (`owner`: the process no longer serves), or if
    its writer no longer runs (killed: left behind, it would send `decisions` to a NATS that is
    gone), or, by the holder of the directory's lock, if it names no writer (an earlier
    gangsched's, which would hold the lock if it ran); never another live process's (a `gangsched
    run` beside a service run apart in one directory, each stopping when it will)."""
    pid = owner(data_dir)
    if pid == os.getpid() or (pid is not None and owner_alive(data_dir) is False) or (
            pid is None and data_dir_lock.holder(data_dir) == str(os.getpid())):
        (data_dir / RUN_FILE).unlink(missing_ok=True)


def remove_credentials(data_dir: Path, user: str, password: str) -> None:
    """Remove the credentials file if it still holds `user` and `password` (those of the
    embedded NATS this process started, which it stopped); never credentials written since by
    another process."""
    recorded = load(data_dir, CREDENTIALS_FILE)
    if recorded.get("user") == user and recorded.get("password") == password:
        (data_dir / CREDENTIALS_FILE).unlink(missing_ok=True)


class Damaged(exit_codes.Failed):
    """run.json holds what no `gangsched run` writes (damaged, or another program's): the
    message names the file and the field, and how to go on (exit status 1, as a damaged
    database)."""


def recorded(data_dir: Path, field: str) -> str | None:
    """run.json's `field` (`db`, `nats` or `prefix`), checked as the option of that name is
    (`database_problem`, `bus.urls.problem`, `PREFIX_PATTERN`); None when the file or the
    field is absent (or null), or the file cannot be read (another user's: 0600).

    Raises:
        Damaged: the file is no JSON object (or not UTF-8 text), or the field is no text or
            not what its option takes (e.g. `"db": "garbage"`, `"db": 7`, `"nats": "not a
            url"`).
    """
    path = data_dir / RUN_FILE
    try:
        text = text_files.read_text(path, RUN_FILE_BYTES, regular_only=True)
    except OSError:
        return None
    except text_files.TextFileRefused as error:  # a FIFO or device: waited on, or endless
        raise _damaged(path, str(error)) from None
    except UnicodeDecodeError:  # a ValueError too: told as what it is
        raise _damaged(path, "it is not JSON (not UTF-8 text)") from None
    try:
        info = json.loads(text)
    except (ValueError, RecursionError):
        raise _damaged(path, "it is not JSON") from None
    if not isinstance(info, dict):
        raise _damaged(path, f"it is a JSON {type(info).__name__}, not an object")
    value = info.get(field)
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise _damaged(path, f'its "{field}" is {json.dumps(value)}, not a {_WHAT[field]}',
                       field)
    why = _CHECKS[field](value)
    if why is not None:
        raise _damaged(path, f'its "{field}" is not a {_WHAT[field]} ({why})', field)
    return value


def database_problem(url: str) -> str | None:
    """Why `url` is no database URL gangsched can use (as `--db` checks one), or None."""
    if "://" not in url:
        return f"{url!r} is no URL"
    try:
        async_url(url)
    except (ValueError, ArgumentError) as error:
        return f"{database_urls.shown(url)!r}: {error}"
    if database_urls.in_memory_sqlite(url):
        return f"{url!r} is an in-memory SQLite database"
    return None


NO_HOST = " names no host"
"""How `bus.urls.problem` ends the reason of a server that names no host."""


def nats_problem(url: str) -> str | None:
    """Why `url` is no NATS URL gangsched can use (`bus.urls.problem`, as `--nats` checks
    one), or None; a server that names no host is quoted as given (without the user, password
    or token it carries), not as rebuilt from its parts: `nats://` was told as `'nats:'`,
    `nats:///x` as `'nats:/x'`."""
    why = urls.problem(url)
    if why is None or not why.endswith(NO_HOST):
        return why
    for server in urls.server_urls(url):
        if why == f"{urls.shown(server)!r}{NO_HOST}":
            return f"{_without_userinfo(server)!r}{NO_HOST}"
    return why


def _without_userinfo(server: str) -> str:
    """`server` as given, without the `user:password@` or `token@` of its authority."""
    scheme, separator, rest = server.partition("://")
    if not separator:
        scheme, rest = "", server
    end = min((at for at in (rest.find(mark) for mark in "/?#") if at >= 0), default=len(rest))
    return f"{scheme}{separator}{rest[:end].rpartition('@')[2]}{rest[end:]}"


def _prefix_problem(text: str) -> str | None:
    """Why `text` is no subject prefix (as `--prefix` checks one), or None."""
    return None if PREFIX_PATTERN.fullmatch(text) else f"{text!r}"


_CHECKS: dict[str, Callable[[str], str | None]] = {
    "db": database_problem, "nats": nats_problem, "prefix": _prefix_problem}
_WHAT = {"db": "database URL", "nats": "NATS URL", "prefix": "subject prefix"}
_FLAGS = {"db": "--db", "nats": "--nats", "prefix": "--prefix"}


def _damaged(path: Path, why: str, field: str | None = None) -> Damaged:
    """The refusal of the run.json `path`, saying `why`: its `field` is unusable, or (None)
    the whole file is, and with it every option the command would read from it (naming only
    the first one asked for sent a user round from `--prefix` to `--db` and back)."""
    flags = (_FLAGS[field] if field is not None
             else "every one of --db, --nats and --prefix the command takes")
    return Damaged(f"cannot use {path}: {why}; it is damaged or not gangsched's: give "
                   f"{flags}, or remove it if no `gangsched run` serves that directory")


def database_url(given: str | None, data_dir: Path) -> str:
    """`given`, else run.json's `db`, else the data directory's default SQLite database.

    Raises:
        Damaged: run.json is read and its `db` is unusable (`recorded`).
    """
    return given or recorded(data_dir, "db") or Settings(data_dir=data_dir).store_url()


def nats_url(given: str | None, data_dir: Path) -> str | None:
    """`given`, else run.json's `nats` (the embedded server of a running `gangsched run`).

    Raises:
        Damaged: run.json is read and its `nats` is unusable (`recorded`).
    """
    return given or recorded(data_dir, "nats")


def prefix(given: str | None, data_dir: Path) -> str:
    """`given`, else run.json's `prefix`, else `gangsched`.

    Raises:
        Damaged: run.json is read and its `prefix` is unusable (`recorded`).
    """
    return given or recorded(data_dir, "prefix") or DEFAULT_PREFIX
