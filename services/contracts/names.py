"""Kubernetes object and label name rules (apimachinery's `validation.IsDNS1123Subdomain` and
`IsDNS1123Label`), shared by the watcher's label checks and the command line's name checks;
and what can be a host to connect to or listen on (`is_host`), shared by the checks of
`--nats`, `--db` and `--http-host`.

Layer: contracts. Pure.
"""

from __future__ import annotations

import ipaddress
import re

_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS_LABEL = re.compile(_LABEL)
"""A DNS-1123 label without its length limit (63): what a namespace is named."""
_DNS_SUBDOMAIN = re.compile(rf"{_LABEL}(\.{_LABEL})*")
"""A DNS-1123 subdomain without its length limit (253): what most objects are named."""


def is_dns_label(text: str) -> bool:
    """Whether `text` is a DNS-1123 label (at most 63 characters), as a namespace's name."""
    return len(text) <= 63 and _DNS_LABEL.fullmatch(text) is not None


def is_dns_subdomain(text: str) -> bool:
    """Whether `text` is a DNS-1123 subdomain (at most 253 characters), as a Lease's name."""
    return len(text) <= 253 and _DNS_SUBDOMAIN.fullmatch(text) is not None


_QUALIFIED_NAME = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")
"""The name part of a qualified name (a label key), without its length limit (63)."""


def is_label_name(key: str) -> bool:
    """A qualified label name: `[prefix/]name`, a DNS subdomain prefix of at most 253
    characters and a name of at most 63 (as `validation.IsQualifiedName`)."""
    prefix, _, name = key.rpartition("/")
    if "/" in key and not is_dns_subdomain(prefix):
        return False
    return len(name) <= 63 and _QUALIFIED_NAME.fullmatch(name) is not None


_HOST_NAME = re.compile(r"[\w-]+(\.[\w-]+)*\.?")
"""A host name: dot-separated labels of letters, digits, `-` and `_`, maybe a closing dot."""
MAX_HOST_NAME = 253
"""The longest host name DNS carries (IDNA-encoded, without a closing dot)."""


def is_host(text: str) -> bool:
    """Whether `text` can be a host: an IP address (IPv6 without brackets, as `urlsplit` and
    SQLAlchemy give it) or a host name whose labels are 1 to 63 characters once IDNA-encoded,
    at most `MAX_HOST_NAME` in all. Python's resolver refuses any other name with a
    `UnicodeError` (`a..b`, a label of 64 characters), which is no `OSError`: unchecked, it
    would surface as a crash where the host is first resolved."""
    try:
        ipaddress.ip_address(text)
    except ValueError:
        if _HOST_NAME.fullmatch(text) is None:
            return False
        try:
            encoded = text.encode("idna")
        except UnicodeError:  # a label empty or longer than 63 characters
            return False
        return len(encoded.removesuffix(b".")) <= MAX_HOST_NAME
    return True
