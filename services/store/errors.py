"""Errors the store raises.

Layer: store.
"""

from __future__ import annotations


class SchemaMismatch(Exception):
    """The database schema revision differs from the one this code needs.

    Permanent until an operator runs `gangsched migrate`; the message says so and names both
    revisions.
    """


class StoreUnavailable(Exception):
    """The database cannot be reached or read (refused, unknown host, authentication, not a
    database file); the message names it, without its password, and the driver's reason."""


def unusable_database(error: BaseException) -> str | None:
    """`"<DriverError>: <message>"` when `error` says the database cannot be reached or read
    (connection refused or lost, unknown host, not a database file, authentication, no such
    database), else None: an error of a query itself (a bug) is not one of these.

    Shapes: `error` as raised through SQLAlchemy (its driver error in `orig`) or by the driver
    or the network directly.
    """
    import socket
    import sqlite3

    from sqlalchemy.exc import DatabaseError, InterfaceError, OperationalError

    if isinstance(error, ConnectionError | socket.gaierror | TimeoutError):
        return f"{type(error).__name__}: {error}"
    if isinstance(error, sqlite3.OperationalError) or type(error) is sqlite3.DatabaseError:
        return f"{type(error).__name__}: {error}"  # from the driver itself (the audit's pages)
    if not isinstance(error, OperationalError | InterfaceError) and type(error) is not (
            DatabaseError):  # plain DatabaseError: SQLite's "file is not a database"
        return None
    cause: BaseException = getattr(error, "orig", None) or error
    if type(cause).__name__ == "Error" and cause.__cause__ is not None:
        cause = cause.__cause__  # asyncpg's own error behind SQLAlchemy's adapter
    return f"{type(cause).__name__}: {cause}"
