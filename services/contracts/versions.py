"""Ordering two observations of one object by resourceVersion: the rule the planner and the
binder's view share.

Layer: contracts. Pure. Kubernetes calls resourceVersions opaque, so they are compared only when
both are decimal integers (as etcd's are); otherwise the later observation wins.
"""

from __future__ import annotations


def is_older(seen: str, held: str) -> bool:
    """Whether an observation at resourceVersion `seen` is older than the one held (`held`).

    Compared as numbers of any length without `int` (which refuses more than 4,300 digits: a
    forged 5,000-digit resourceVersion raised ValueError in the planner's apply); only ASCII
    digits are decimal here (etcd's are; `str.isdecimal` also takes other scripts' digits).
    """
    if not (_is_decimal(seen) and _is_decimal(held)):
        return False
    seen, held = seen.lstrip("0"), held.lstrip("0")
    return (len(seen), seen) < (len(held), held)


def _is_decimal(text: str) -> bool:
    return text.isascii() and text.isdecimal()
