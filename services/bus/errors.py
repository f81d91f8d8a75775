"""Errors the bus raises, translated from nats-py exceptions at the boundary.

Layer: bus. Callers catch these instead of nats-py types (`transience.bus_errors` translates);
this module imports nothing, so catching them never loads nats-py.
"""

from __future__ import annotations


class BusUnavailable(Exception):
    """NATS could not be reached in time (first connect, or a server that never became ready).

    Transient by nature: the caller may retry later. Raised `from` the nats-py cause.
    """


class JetStreamUnavailable(BusUnavailable):
    """NATS answered, but its JetStream did not: the server runs none (`nats-server` without
    `-js`), or it cannot serve now (a cluster without a quorum). `problem` says which, naming
    the server (`connection.jetstream_problem`); the message is `<request>: <problem>`, or
    the problem alone. Raised `from` the nats-py cause."""

    def __init__(self, problem: str, what: str = "") -> None:
        super().__init__(f"{what}: {problem}" if what else problem)
        self.problem = problem


class BusMisconfigured(Exception):
    """A stream or consumer exists with a configuration NATS refuses to change to ours.

    Permanent: an operator must delete or migrate the stream. Raised `from` the nats-py cause.
    """


class BusRefused(Exception):
    """NATS answered, and refused the request (a JetStream API error other than "not there":
    a wrong last sequence, a permission, a bad request).

    Permanent for this request: retrying the same request gets the same answer. Raised `from`
    the nats-py cause.
    """


class NotFound(BusRefused):
    """What the request names does not exist: a stream, a consumer, a KV bucket or key, or
    the last message of a subject. Raised `from` the nats-py cause."""


class StreamGone(NotFound):
    """A stream a consumer had read from is gone (the NATS store lost, or the stream deleted),
    and its consumer's caller tracks positions in it (`PullConsumer.open(stream_loss_fatal=
    True)`): a stream made anew would hold other messages at those positions. Raised `from`
    the nats-py cause."""


class StreamRecreated(Exception):
    """A stream a consumer had read from was deleted and created anew under the same name (its
    creation time, `reading.identity`, differs), and does not hold the message the consumer's
    position belongs to, while its caller tracks positions in it (`PullConsumer.open(
    stream_loss_fatal=True)`): reading on from them would skip or misread messages.

    Shapes: `was` and `now` the two identities (`now` None when the server did not say);
    `seq` the position checked (the landmark's sequence); `found` what the stream holds there,
    the value of a `reading.Holding` other than "same": "other" (another message), "ends_before"
    (the stream ends at `last_seq`, before `seq`), "removed" (retention removed it, the stream
    starting at `first_seq`, or after the stream said it held it) or "unrecorded" (no message
    was recorded to compare): for these two only the creation time could tell.
    """

    def __init__(self, stream: str, was: str, now: str | None, *, seq: int, found: str,
                 first_seq: int, last_seq: int) -> None:
        starts = f": it starts at seq {first_seq}" if first_seq > seq else ""
        there = {
            "other": f"holds another message at seq {seq}",
            "ends_before": f"ends at seq {last_seq}, before seq {seq}",
            "removed": f"no longer holds seq {seq} (retention removed it{starts})",
        }.get(found, f"holds seq {seq}, with nothing recorded to compare")
        super().__init__(f"stream {stream} was created anew at {now} and {there}, the "
                         f"position read up to in the one created at {was}")
        self.stream, self.was, self.now, self.seq = stream, was, now, seq
        self.found, self.first_seq, self.last_seq = found, first_seq, last_seq
