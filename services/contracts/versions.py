"""Ordering two observations of one object by resourceVersion: the rule the planner and the
binder's view share.

Layer: contracts. Pure. Kubernetes calls resourceVersions opaque, so they are compared only when
both are decimal integers (as etcd's are); otherwise the later observation wins.
"""

from __future__ import annotations


def is_older(seen: str, held: str) -> bool:
    """Whether an observation at resourceVersion `seen` is older than the one held (`held`)."""
    return seen.isdecimal() and held.isdecimal() and int(seen) < int(held)
