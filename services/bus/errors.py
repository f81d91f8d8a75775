"""Errors the bus raises, translated from nats-py exceptions at the boundary.

Layer: bus. Callers catch these instead of nats-py types.
"""

from __future__ import annotations


class BusUnavailable(Exception):
    """NATS could not be reached in time (first connect, or a server that never became ready).

    Transient by nature: the caller may retry later. Raised `from` the nats-py cause.
    """


class BusMisconfigured(Exception):
    """A stream or consumer exists with a configuration NATS refuses to change to ours.

    Permanent: an operator must delete or migrate the stream. Raised `from` the nats-py cause.
    """
