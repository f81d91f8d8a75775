"""Kubernetes object and label name rules (apimachinery's `validation.IsDNS1123Subdomain` and
`IsDNS1123Label`), shared by the watcher's label checks and the command line's name checks.

Layer: contracts. Pure.
"""

from __future__ import annotations

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
