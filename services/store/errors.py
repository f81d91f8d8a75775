"""Errors the store raises.

Layer: store.
"""

from __future__ import annotations


class SchemaMismatch(Exception):
    """The database schema revision differs from the one this code needs.

    Permanent until an operator runs `gangsched migrate`; the message says so and names both
    revisions.
    """
