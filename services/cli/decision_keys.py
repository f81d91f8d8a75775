"""The decision key of a service command: read from --decision-key-file, or `run`'s own.

Layer: cli (top). The only code that reads or writes key files; the key itself is checked
and used by `services.contracts.signing`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import secrets
import stat
from pathlib import Path

from services.cli import text_files
from services.config.settings import Settings
from services.contracts.signing import DecisionKey, UnusableKey
from services.runtime.private_files import make_private_directory, write_private_once

log = logging.getLogger(__name__)

RUN_KEY_FILE = "decision.key"
"""`run`'s key, kept in its data directory so decisions still in the stream across a restart
stay valid."""
KEY_FILE_BYTES = 1 << 16
"""The most a decision key file may hold, in bytes (64 KiB; a key is 64 hex digits): a larger
file is no key file, and was read whole (a disk image given by mistake: until memory ran
out)."""
SIGNING_SERVICES = frozenset({"planner", "binder"})


class NoKey(Exception):
    """A planner or binder run apart without --decision-key-file (a usage error)."""


class BadKey(Exception):
    """The key file cannot be read, or holds no usable key (bad input)."""


class KeyNotMade(Exception):
    """`run`'s own key file cannot be created in its data directory (a runtime failure)."""


def with_key(settings: Settings, services: tuple[str, ...]) -> Settings:
    """`settings` with `decision_key` set for the planner and binder among `services`.

    The key comes from `settings.decision_key_file`; without one, a command running both
    planner and binder (`run`) uses `<data_dir>/decision.key`, made on first use (32 random
    bytes as hex, mode 0600; made again when empty, as an earlier gangsched interrupted
    between making and writing it left it: `_run_key`); a planner or binder run apart has
    none.
    Raises:
        NoKey: planner or binder apart without a key file.
        BadKey: the file is unreadable or its key too short.
        KeyNotMade: `run`'s key file is missing and cannot be created.
    """
    if not SIGNING_SERVICES & set(services):
        return settings
    check_given(settings, services)
    path = settings.decision_key_file
    if path is None:
        path = _run_key(settings.data_dir)
    _check_kind(path)
    _check_mode(path)
    try:
        key = DecisionKey.from_text(text_files.read_text(path, KEY_FILE_BYTES, regular_only=True))
    except text_files.TextFileRefused as error:  # e.g. a disk image given by mistake
        raise BadKey(f"cannot read the decision key file {path}: {error}") from None
    except OSError as error:
        raise BadKey(f"cannot read the decision key file {path}: "
                     f"{error.strerror or error}") from None
    except UnicodeDecodeError as error:  # the codec's words name no file: said plainly
        raise BadKey(f"cannot read the decision key file {path}: not UTF-8 text (byte "
                     f"{error.start}); a key is text, e.g. `openssl rand -hex 32`") from None
    except UnusableKey as error:
        raise BadKey(f"{path}: {error}") from None
    _warn_if_readable(path)
    return dataclasses.replace(settings, decision_key=key, decision_key_file=path)


def check_given(settings: Settings, services: tuple[str, ...]) -> None:
    """Refuse a planner or binder run apart without --decision-key-file (touches nothing).

    Raises:
        NoKey: planner or binder apart without a key file.
    """
    signing = SIGNING_SERVICES & set(services)
    if signing and settings.decision_key_file is None and signing != SIGNING_SERVICES:
        raise NoKey(
            "the planner signs its decisions and the binder acts only on signed ones: give "
            "both the same --decision-key-file (or GANGSCHED_DECISION_KEY_FILE), e.g. made "
            "with `openssl rand -hex 32 > decision.key`")


def uses_run_key(settings: Settings, services: tuple[str, ...]) -> bool:
    """Whether `with_key` keeps the key in the data directory (`run`, no key file given)."""
    return settings.decision_key_file is None and set(services) >= SIGNING_SERVICES


def _check_kind(path: Path) -> None:
    """Refuse a key file that is no regular file (a directory, a device such as /dev/null, a
    pipe), before any advice about its permissions: no key can be read from it, and not twice
    (`run` hands the same file to each of its services).

    An empty path is refused as the option is parsed (`options.PATH`).

    Raises:
        BadKey: `path` exists and is no regular file (a symbolic link is followed, as a
            Kubernetes Secret volume makes them).
    """
    try:
        mode = path.stat().st_mode
    except OSError:
        return  # reading it fails next, with the reason
    if stat.S_ISDIR(mode):
        raise BadKey(f"the decision key file {path} is a directory: give the file holding "
                     "the key")
    if not stat.S_ISREG(mode):
        raise BadKey(f"the decision key file {path} is not a regular file: give the file "
                     "holding the key")


def _check_mode(path: Path) -> None:
    """Refuse a key file anyone may write (anyone could then sign decisions).

    Raises:
        BadKey: world-writable.
    """
    try:
        mode = path.stat().st_mode
    except OSError:
        return  # reading it fails next, with the reason
    if mode & stat.S_IWOTH:
        raise BadKey(f"the decision key file {path} is writable by every user: make it "
                     f"readable only by gangsched (chmod 600 {path})")


def _warn_if_readable(path: Path) -> None:
    """Warn about a key file anyone may read; group read is fine (a Kubernetes Secret volume
    with fsGroup). Only once its key was read: a file refused for what it holds is told in
    that one line, without permission advice before it."""
    with contextlib.suppress(OSError):
        if path.stat().st_mode & stat.S_IROTH:
            log.warning("the decision key file %s is readable by every user of this machine: "
                        "anyone who reads it can sign decisions (chmod 600 %s)", path, path)


def _run_key(data_dir: Path) -> Path:
    """`<data_dir>/decision.key`, made owner-only with a new key when absent or empty
    (`_discard_if_empty`). Made whole or not at all (`write_private_once`): a full disk leaves
    no empty key file to block the next start, and a second `run` starting at the same time
    reads the key the first made, never a file still being written.

    Raises:
        KeyNotMade: the file is missing and cannot be made (no space, no permission).
    """
    path = data_dir / RUN_KEY_FILE
    with contextlib.suppress(OSError):  # cannot look (a name too long): making it says why
        if path.exists() and not _is_empty_file(path):
            return path
    try:
        make_private_directory(data_dir)  # FileExistsError: a file is in the way
        _discard_if_empty(path)
        write_private_once(path, secrets.token_hex(32) + "\n")  # False: another `run` made it
    except OSError as error:
        raise _not_made(path, error) from None
    return path


def _is_empty_file(path: Path) -> bool:
    """Whether `path` itself (not a link's target) is a regular file of 0 bytes.

    Raises:
        OSError: it cannot be looked at.
    """
    info = path.lstat()
    return stat.S_ISREG(info.st_mode) and info.st_size == 0


def _discard_if_empty(path: Path) -> None:
    """Remove `run`'s key file `path` if it is empty, saying so: an earlier gangsched made it
    and stopped before writing the key into it (a full disk, a crash). It holds no key that
    anything could have signed or checked a decision with, and only a new one lets `run`
    start. Never a file holding anything (a key, or what `with_key` then refuses), nor a
    symbolic link (its target, e.g. a mounted Secret, is the user's): those are read as given.

    Raises:
        OSError: it cannot be looked at or removed.
    """
    try:
        if not _is_empty_file(path):
            return
    except FileNotFoundError:
        return
    log.warning("the decision key file %s is empty (an earlier start stopped before writing "
                "its key): making a new key", path)
    path.unlink(missing_ok=True)


def _not_made(path: Path, error: OSError) -> KeyNotMade:
    """The refusal to run without `run`'s key file `path`, naming the system's reason."""
    return KeyNotMade(f"cannot create the decision key file {path}: {error.strerror or error}")
