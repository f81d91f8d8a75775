"""Reading kubeconfig files as kubectl does, refusing at once what no retry could mend.

Layer: kube. kubernetes_asyncio's own loader takes the files as they come: an empty file, or
a list where a mapping belongs, fails deep inside it with a `TypeError` that names no file; a
server that is not a URL is kept, and every request to it then fails as if the server were
down; base64 that is not is decoded to garbage. Here each file is read and checked first,
every message naming the file (and the entry and field) at fault; the files are merged as
client-go merges them (the first file to set `current-context`, or to define a context,
cluster or user of a name, wins; empty files, and paths of `$KUBECONFIG` that do not exist,
are skipped; a path that exists but cannot be read, a directory, is refused); and the active
context alone is handed to the library (`Active.config`) with its file paths absolute
(relative to the file that names them) and its server a whole URL (client-go's
`rest.DefaultServerURL`).
"""

from __future__ import annotations

import base64
import binascii
import datetime
import errno
import ipaddress
import json
import os
import stat
import string
import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from services.kube import errors
from services.kube.tls_files import TlsNames

SECTIONS = {"clusters": "cluster", "contexts": "context", "users": "user"}
"""Each list of named entries, and the key of an entry's body."""

STRING_FIELDS = {
    "cluster": ("server", "certificate-authority", "certificate-authority-data",
                "tls-server-name", "proxy-url"),
    "context": ("cluster", "user", "namespace"),
    "user": ("client-certificate", "client-certificate-data", "client-key", "client-key-data",
             "token", "tokenFile", "username", "password"),
}
"""The string fields kubernetes_asyncio reads; kubectl takes a number or boolean there as its
text (`token: 12345`), as it does for names."""

BOOLEAN_FIELDS = {"cluster": ("insecure-skip-tls-verify",), "context": (), "user": ()}

FILE_FIELDS = {"cluster": ("certificate-authority",), "context": (),
               "user": ("client-certificate", "client-key", "tokenFile")}
"""Fields naming a file: relative to the kubeconfig that names them, as in client-go."""

DATA_FIELDS = {"cluster": ("certificate-authority-data",), "context": (),
               "user": ("client-certificate-data", "client-key-data")}
"""Base64 fields; each wins over the file field of the same name without `-data`."""

SERVER_SCHEMES = ("https", "http")
HOST_CHARACTERS = frozenset(string.ascii_letters + string.digits + "-._~!$&'()*+,;=%")
"""What Go's `url.Parse` lets through in a host name (`net/url`, `shouldEscape(encodeHost)`)."""

KUBECONFIG_BYTES = 16 << 20
"""The most one kubeconfig file may hold, in bytes (16 MiB; one of a thousand clusters with
their certificates holds a few): a larger file is none, and was read whole."""
CREDENTIAL_FILE_BYTES = 16 << 20
"""The most a file a kubeconfig names (tokenFile, client-certificate, client-key,
certificate-authority) may hold, in bytes (16 MiB: a token or key is a few kilobytes, a CA
bundle rarely a megabyte); the Kubernetes client reads them whole, and an 8 GiB file ran the
process out of memory."""
ANONYMOUS = "anonymous"
"""The name of the empty user handed to the library for a context without one (kubectl
connects anonymously; the library needs a user entry, even an empty one)."""


@dataclass(frozen=True)
class Entry:
    """One named cluster, context or user: its body as the first file defining it has it."""

    kind: str
    name: str
    body: dict[str, Any]
    path: Path

    def where(self) -> str:
        """`kubeconfig /path: cluster "c"`, the start of each message about the entry."""
        return f"kubeconfig {self.path}: {self.kind} {_quoted(self.name)}"


@dataclass(frozen=True)
class Active:
    """The context to connect with, its cluster and user (None: anonymous), checked.

    `config` is the kubeconfig to hand kubernetes_asyncio: that context, cluster and user
    alone, file paths absolute, the server a whole URL.
    """

    context: str
    cluster: Entry
    user: Entry | None
    config: dict[str, Any]

    def tls_names(self) -> TlsNames:
        """How to name the CA, client certificate and client key files in messages."""
        return TlsNames(ca=_source(self.cluster, "certificate-authority"),
                        cert=_source(self.user, "client-certificate"),
                        key=_source(self.user, "client-key"))


def files(explicit: Path | None) -> list[Path]:
    """The kubeconfig files to read: `explicit` (`--kubeconfig`), else those of `$KUBECONFIG`
    that exist, else `~/.kube/config`, as kubectl reads them: a path of `$KUBECONFIG` that
    does not exist is skipped; one that does but cannot be read (a directory, no permission to
    look, a symbolic link loop) is refused, as client-go refuses it ("read <path>: is a
    directory").

    Raises:
        KubeNoCredentials: `explicit` does not exist or is not a file; a path that exists but
            cannot be read (`cannot read kubeconfig <path>: Is a directory`); none of the
            others exists (outside a cluster: the message says so).
    """
    if explicit is not None:
        if not _is_file(explicit):
            raise errors.KubeNoCredentials(
                f"kubeconfig {explicit} does not exist or is not a file")
        return [explicit]
    defaults = _default_kubeconfigs()
    present = [path for path in defaults if _is_file(path)]
    if not present:
        tried = ", ".join(str(path) for path in defaults)
        raise errors.KubeNoCredentials(
            f"not in a cluster, no --kubeconfig given, and no kubeconfig at {tried}")
    return present


def load(paths: Sequence[Path], context: str | None) -> Active:
    """Read and merge `paths` and check the context `context` (None: the current-context).

    Raises:
        KubeNoCredentials: a file that cannot be read, is not YAML, or not a kubeconfig (its
            message names the file and what is wrong); all of them empty; no such context, or
            a context without a cluster; a cluster without a usable server; a file field
            naming no file; a base64 field that is not base64; a client certificate without
            its key, or a key without its certificate.
    """
    documents = [(path, document) for path in paths
                 if (document := _read(path)) is not None]
    if not documents:
        raise errors.KubeNoCredentials(_all_empty(paths))
    entries, current = _merged(documents)
    name = context if context is not None else current
    if name is None:
        raise errors.KubeNoCredentials(
            f"{_named(paths)} set{'s' if len(paths) == 1 else ''} no current-context, "
            "and no --context was given")
    chosen = _find(entries["context"], name, f"no context {_quoted(name)} in {_named(paths)}")
    user = _user_of(chosen, entries["user"])
    has_cert = user is not None and _given(user, "client-certificate")
    cluster = _cluster_of(chosen, entries["cluster"], paths, has_cert=has_cert)
    return Active(context=name, cluster=cluster, user=user,
                  config=_library_config(name, cluster, user))


def server_url(server: str, *, tls: bool) -> str:
    """`server` as a whole URL, as client-go's `rest.DefaultServerURL` takes it: a URL with a
    scheme and a host as it is, else `host[:port]` with `https://` (`tls`: a CA, a client
    certificate or insecure-skip-tls-verify is given) or `http://` put in front.

    Beyond what client-go checks at start, refuses what its every request would fail on (a
    scheme other than https and http, a port that is not one) and what this client cannot
    use (a query or fragment).
    Raises:
        ValueError: not such a URL; its message says why in a few words (`invalid character
            " " in host name`).
    """
    if not server.isprintable():
        raise ValueError("a control character in it")
    if server != server.strip():
        raise ValueError("a space before or after it")
    parts = _split(server)
    if not parts.scheme or not parts.netloc:
        parts = _split(("https://" if tls else "http://") + server)
        if parts.path not in ("", "/"):
            raise ValueError("not a URL with a host, nor a host:port pair")
    if parts.scheme not in SERVER_SCHEMES:
        raise ValueError(f"scheme {_quoted(parts.scheme)} is not https or http")
    if parts.query or parts.fragment or server.endswith(("?", "#")):
        raise ValueError("a query or fragment in it")
    _check_host(parts)
    return urllib.parse.urlunsplit(parts)


def shown_url(url: str) -> str:
    """`url` for messages and logs: without the user and password it may carry
    (`https://admin:pw@10.0.0.1:6443` → `https://10.0.0.1:6443`)."""
    parts = urllib.parse.urlsplit(url)
    return parts._replace(netloc=parts.netloc.rpartition("@")[2]).geturl()


def _default_kubeconfigs() -> list[Path]:
    """The files kubectl would read: each path of `$KUBECONFIG`, else `~/.kube/config`."""
    listed = [Path(part).expanduser() for part in os.environ.get("KUBECONFIG", "").split(
        os.pathsep) if part]
    return listed or [Path("~/.kube/config").expanduser()]


def _is_file(path: Path) -> bool:
    """Whether `path` is a file to read: False when it does not exist (nor a directory on the
    way to it), or is neither a regular file nor a directory (a device, a pipe: skipped).

    Raises:
        KubeNoCredentials: `path` is a directory, or cannot be looked at (no permission to
            search a directory on the way, a symbolic link loop, a name too long); the message
            names it with the reason, as a file that cannot be read (`_read`).
    """
    try:
        mode = path.stat().st_mode
    except (FileNotFoundError, NotADirectoryError):
        return False
    except OSError as error:
        raise errors.KubeNoCredentials(
            f"cannot read kubeconfig {path}: {error.strerror}") from error
    if stat.S_ISDIR(mode):
        raise errors.KubeNoCredentials(
            f"cannot read kubeconfig {path}: {os.strerror(errno.EISDIR)}")
    return stat.S_ISREG(mode)


def _read(path: Path) -> dict[str, Any] | None:
    """The kubeconfig in `path`, its structure checked; None for an empty file (or one of
    comments only), which kubectl skips.

    Raises:
        KubeNoCredentials: `path` cannot be read, is not UTF-8 YAML, or not a kubeconfig.
    """
    try:
        with path.open("rb") as file:
            data = file.read(KUBECONFIG_BYTES + 1)
        if len(data) > KUBECONFIG_BYTES:  # no kubeconfig: a disk image, a log, was read whole
            raise errors.KubeNoCredentials(
                f"{path} is not a kubeconfig (larger than {KUBECONFIG_BYTES >> 20} MiB)")
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise errors.KubeNoCredentials(
            f"{path} is not a kubeconfig (not UTF-8 text)") from error
    except OSError as error:
        raise errors.KubeNoCredentials(
            f"cannot read kubeconfig {path}: {error.strerror}") from error
    try:
        document = yaml.safe_load(text)
    except (yaml.YAMLError, RecursionError) as error:
        raise errors.KubeNoCredentials(
            f"{path} is not a kubeconfig ({one_line(error)})") from error
    if document is None:
        return None
    try:
        _check_document(document)
    except ValueError as error:
        raise errors.KubeNoCredentials(f"{path} is not a kubeconfig ({error})") from error
    return dict(document)


def _check_document(document: object) -> None:
    """Raises: ValueError: `document` does not have a kubeconfig's structure (says where)."""
    if not isinstance(document, dict):
        raise ValueError(f"{_kind(document)}, not a mapping")
    current = document.get("current-context")
    if current is not None and _as_string(current) is None:
        raise ValueError(f"current-context is {_kind(current)}, not a string")
    for section, key in SECTIONS.items():
        listed = document.get(section)
        if listed is not None and not isinstance(listed, list):
            raise ValueError(f"{section} is {_kind(listed)}, not a list")
        for index, item in enumerate(listed or []):
            _check_item(item, f"{section}[{index}]", key)


def _check_item(item: object, where: str, key: str) -> None:
    """One entry of a section: a mapping with a name, its body (under `key`) a mapping with
    fields of the right types.

    Raises:
        ValueError: it is not (says where).
    """
    if not isinstance(item, dict):
        raise ValueError(f"{where} is {_kind(item)}, not a mapping")
    if item.get("name") is None:
        raise ValueError(f"{where} has no name")
    if _as_string(item["name"]) is None:
        raise ValueError(f"{where}.name is {_kind(item['name'])}, not a string")
    body = item.get(key)
    if body is not None and not isinstance(body, dict):
        raise ValueError(f"{where}.{key} is {_kind(body)}, not a mapping")
    for field in STRING_FIELDS[key]:
        value = (body or {}).get(field)
        if value is not None and _as_string(value) is None:
            raise ValueError(f"{where}.{key}.{field} is {_kind(value)}, not a string")
    for field in BOOLEAN_FIELDS[key]:
        value = (body or {}).get(field)
        if value is not None and not isinstance(value, bool):
            raise ValueError(f"{where}.{key}.{field} is {_kind(value)}, not true or false")


def _merged(documents: Sequence[tuple[Path, dict[str, Any]]],
            ) -> tuple[dict[str, dict[str, Entry]], str | None]:
    """The entries of each kind by name, and the current-context: the first file's to have
    them win (client-go's merge)."""
    entries: dict[str, dict[str, Entry]] = {key: {} for key in SECTIONS.values()}
    current: str | None = None
    for path, document in documents:
        if current is None and document.get("current-context") is not None:
            current = _as_string(document["current-context"]) or None
        for section, key in SECTIONS.items():
            for item in document.get(section) or []:
                name = _as_string(item["name"]) or ""
                entries[key].setdefault(name, Entry(key, name, _strings(item.get(key), key),
                                                    path))
    return entries, current


def _find(entries: Mapping[str, Entry], name: str, missing: str) -> Entry:
    """Raises: KubeNoCredentials: no entry `name` (`missing` says so)."""
    if name not in entries:
        raise errors.KubeNoCredentials(missing)
    return entries[name]


def _cluster_of(context: Entry, clusters: Mapping[str, Entry], paths: Sequence[Path], *,
                has_cert: bool) -> Entry:
    """The context's cluster, checked, its server a whole URL (`https://` put before a bare
    host:port also when the user has a client certificate: `has_cert`) and its file paths
    absolute.

    Raises:
        KubeNoCredentials: the context names no cluster, or one no file defines, or the
            cluster has no usable server, file or base64 field.
    """
    name = context.body.get("cluster")
    if not name:
        raise errors.KubeNoCredentials(f"{context.where()} names no cluster")
    found = _find(clusters, name, f"no cluster {_quoted(name)} (of context "
                                  f"{_quoted(context.name)}) in {_named(paths)}")
    cluster = _with_files(found)
    server = cluster.body.get("server")
    if not server:
        raise errors.KubeNoCredentials(f"{cluster.where()} has no server")
    tls = (has_cert or _given(cluster, "certificate-authority")
           or bool(cluster.body.get("insecure-skip-tls-verify")))
    try:
        cluster.body["server"] = server_url(server, tls=tls)
    except ValueError as error:
        raise errors.KubeNoCredentials(
            f"{cluster.where()}: server {_quoted(_shown(server))}: {error}") from error
    _check_proxy(cluster)
    return cluster


def _user_of(context: Entry, users: Mapping[str, Entry]) -> Entry | None:
    """The context's user, checked, its file paths absolute; None for none (kubectl then
    connects anonymously, as it does for a user no file defines).

    Raises:
        KubeNoCredentials: a file or base64 field that is not usable; a client certificate
            without a key, or a key without a certificate (client-go's refusal).
    """
    name = context.body.get("user")
    if not name or name not in users:
        return None
    user = _with_files(users[name])
    has_cert, has_key = _given(user, "client-certificate"), _given(user, "client-key")
    if has_cert != has_key:
        given, missing = (("client-certificate", "client-key") if has_cert
                          else ("client-key", "client-certificate"))
        raise errors.KubeNoCredentials(
            f"{user.where()}: {given} without {missing} (or {missing}-data)")
    return user


def _given(entry: Entry, field: str) -> bool:
    """Whether `entry` has `field` or `field`-data (`client-certificate`: a certificate)."""
    return bool(entry.body.get(f"{field}-data") or entry.body.get(field))


def _with_files(entry: Entry) -> Entry:
    """`entry` with its base64 fields checked and its file fields absolute and checked; a
    file field behind a data field of the same name (or tokenFile behind token) is dropped,
    unused as in kubernetes_asyncio.

    Raises:
        KubeNoCredentials: a base64 field that is not base64; a file that does not exist or
            is not a regular file.
    """
    body = dict(entry.body)
    if "token" in body:  # wins over tokenFile in kubernetes_asyncio
        body.pop("tokenFile", None)
    for field in DATA_FIELDS[entry.kind]:
        if field in body:
            _check_base64(entry, field)
            body.pop(field.removesuffix("-data"), None)
    for field in FILE_FIELDS[entry.kind]:
        if field in body:
            body[field] = _existing_file(entry, field)
    return Entry(entry.kind, entry.name, body, entry.path)


def _check_base64(entry: Entry, field: str) -> None:
    """Raises: KubeNoCredentials: `entry`'s `field` is not base64 (line breaks allowed)."""
    try:
        base64.b64decode("".join(entry.body[field].split()), validate=True)
    except binascii.Error as error:
        raise errors.KubeNoCredentials(f"{entry.where()}: {field} is not base64") from error


def _existing_file(entry: Entry, field: str) -> str:
    """`entry`'s `field`, a file path, made absolute against the kubeconfig's directory.

    Raises:
        KubeNoCredentials: no such file, not a regular file (a directory, a device), or
            larger than `CREDENTIAL_FILE_BYTES`.
    """
    path = os.path.normpath(os.path.join(entry.path.parent.absolute(), entry.body[field]))
    if not os.path.exists(path):
        raise errors.KubeNoCredentials(f"{entry.where()}: {field} {path} does not exist")
    if os.path.isdir(path):
        raise errors.KubeNoCredentials(f"{entry.where()}: {field} {path} is a directory")
    if not os.path.isfile(path):
        raise errors.KubeNoCredentials(f"{entry.where()}: {field} {path} is not a file")
    if os.path.getsize(path) > CREDENTIAL_FILE_BYTES:
        raise errors.KubeNoCredentials(
            f"{entry.where()}: {field} {path} is larger than {CREDENTIAL_FILE_BYTES >> 20} MiB, "
            "too large for a token, certificate or key")
    return path


def _check_proxy(cluster: Entry) -> None:
    """Raises: KubeNoCredentials: the cluster's proxy-url is not an http or https URL with a
    host (client-go also takes socks5, which aiohttp cannot use)."""
    proxy = cluster.body.get("proxy-url")
    if not proxy:
        return
    try:
        parts = _split(proxy)
        if parts.scheme not in SERVER_SCHEMES or not parts.hostname:
            raise ValueError("not http or https")
        _check_host(parts)
    except ValueError as error:
        raise errors.KubeNoCredentials(
            f"{cluster.where()}: proxy-url {_quoted(_shown(proxy))} is not an http or https "
            "URL") from error


def _split(url: str) -> urllib.parse.SplitResult:
    """`url` in parts, its port checked.

    Raises:
        ValueError: `url` cannot be split (an unclosed `[` of an IPv6 host), or its port is
            not a number from 1 to 65535.
    """
    parts = urllib.parse.urlsplit(url)
    try:
        port = parts.port
    except ValueError:  # not digits, or more than 65535
        port = -1
    if port is not None and not 1 <= port <= 65535:
        shown = parts.netloc.rpartition("@")[2].rpartition(":")[2]
        raise ValueError(f"port {_quoted(shown)} is not a number from 1 to 65535")
    return parts


def _check_host(parts: urllib.parse.SplitResult) -> None:
    """Raises: ValueError: no host, an ASCII character in the host name that Go's URL parser
    refuses, or a bracketed host that is not an IPv6 address."""
    host = parts.hostname or ""
    if not host:
        raise ValueError("no host")
    if parts.netloc.rpartition("@")[2].startswith("["):
        try:
            ipaddress.IPv6Address(host.partition("%")[0])
        except ValueError as error:
            raise ValueError(f"{_quoted(host)} is not an IPv6 address") from error
        return
    bad = sorted(c for c in set(host) if c.isascii() and c not in HOST_CHARACTERS)
    if bad:
        raise ValueError(f"invalid character {_quoted(bad[0])} in host name")


def _library_config(context: str, cluster: Entry, user: Entry | None) -> dict[str, Any]:
    """A kubeconfig of the context, its cluster and user alone (an empty user when it has
    none) for kubernetes_asyncio's `load_kube_config_from_dict`."""
    user_name = user.name if user else ANONYMOUS
    return {
        "current-context": context,
        "contexts": [{"name": context, "context": {"cluster": cluster.name,
                                                   "user": user_name}}],
        "clusters": [{"name": cluster.name, "cluster": cluster.body}],
        "users": [{"name": user_name, "user": user.body if user else {}}],
    }


def _strings(body: object, kind: str) -> dict[str, Any]:
    """An entry's body with its string fields as strings (kubectl reads `token: 12345` as
    "12345") and its empty fields (null, "") dropped, as client-go treats them as unset."""
    fields = dict(body) if isinstance(body, dict) else {}
    for field in STRING_FIELDS[kind]:
        if field in fields:
            fields[field] = _as_string(fields[field])
    return {field: value for field, value in fields.items() if value not in (None, "")}


def _as_string(value: object) -> str | None:
    """A YAML scalar as kubectl reads it into a string field; None for a list or mapping."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, datetime.date):
        return value.isoformat()
    return None


def _source(entry: Entry | None, field: str) -> str:
    """How to name the file the library made of `entry`'s `field` (or `field`-data)."""
    if entry is None:
        return f"the {field} file"
    if f"{field}-data" in entry.body:
        return f"{entry.where()}: {field}-data"
    if field in entry.body:
        return f"{entry.where()}: {field} {entry.body[field]}"
    return f"{entry.where()}: the exec plugin's {field}"


def _all_empty(paths: Sequence[Path]) -> str:
    """The message for kubeconfig files that are all empty."""
    if len(paths) == 1:
        return f"{paths[0]} is not a kubeconfig (the file is empty)"
    return f"{', '.join(str(path) for path in paths)} are not kubeconfigs (the files are empty)"


def _named(paths: Sequence[Path]) -> str:
    """`kubeconfig /a`, or `kubeconfigs /a, /b`."""
    listed = ", ".join(str(path) for path in paths)
    return f"kubeconfig {listed}" if len(paths) == 1 else f"kubeconfigs {listed}"


def _shown(url: str) -> str:
    """`url` as written, but without the user and password its authority may carry
    (`https://admin:pw@h` → `https://h`); never fails, whatever `url` holds."""
    scheme, separator, rest = url.partition("://")
    if not separator:
        scheme, rest = "", url
    ends = [index for index in (rest.find("/"), rest.find("?"), rest.find("#")) if index >= 0]
    end = min(ends, default=len(rest))
    return f"{scheme}{separator}{rest[:end].rpartition('@')[2]}{rest[end:]}"


def _kind(value: object) -> str:
    """`a string`, `a list`, ... for messages about a value of the wrong type."""
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    return f"a {type(value).__name__}"


def _quoted(text: str) -> str:
    """`text` in double quotes, as kubectl quotes names and values (`"not a url"`)."""
    return json.dumps(text, ensure_ascii=False)


def one_line(error: BaseException) -> str:
    """The error's first line (YAML parser errors span several, with a caret drawing)."""
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0]}" if text else type(error).__name__
