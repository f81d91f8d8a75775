"""Errors the store raises.

Layer: store.
"""

from __future__ import annotations


class SchemaMismatch(Exception):
    """The database schema revision differs from the one this code needs.

    Permanent until an operator runs `gangsched migrate`; the message says so and names both
    revisions.
    """


def unusable_database(error: BaseException) -> str | None:
    """`"<DriverError>: <message>"` when `error` says the database cannot be reached or read
    (connection refused, not a database file, authentication, ...), else None.

    Shapes: `error` as raised through SQLAlchemy (`DBAPIError`, its driver error in `orig`) or
    by the driver or the OS directly (`OSError`, e.g. a refused connection before SQLAlchemy).
    """
    from sqlalchemy.exc import DBAPIError

    if not isinstance(error, DBAPIError | OSError):
        return None
    cause = getattr(error, "orig", None) or error
    return f"{type(cause).__name__}: {cause}"
