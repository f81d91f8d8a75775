"""Create, check and repair the JetStream streams gangsched uses: EVENTS, DECISIONS, DEADLETTER.

Layer: bus. Idempotent and config-checked: safe to call from every service at every start.
Never deletes a stream or its messages.

Every start checks each stream against gangsched's whole configuration: the fields gangsched
sets and those anyone allowed to update a stream could set to damage the log (limits that drop
messages, republish, sources, subject transforms, roll-up and TTL headers, ...). A stream that
differs is updated back when NATS allows it; when NATS refuses (a user without
`$JS.API.STREAM.UPDATE`, as the chart's service users are, or a change NATS never makes, such
as unsealing), the start fails with one line naming the stream and the differing fields.
An update that shortens the retention (max age) of a stream holding messages deletes those
older than the new age, so it is made only with the operator's consent
(`--stream-shorten-retention`, `StreamSpec.shorten_allowed`); without it the start fails with
one line saying how to keep them or let them go.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC

import nats
from nats.js import JetStreamContext
from nats.js.api import DiscardPolicy, RetentionPolicy, StorageType, StreamConfig, StreamInfo

from services.bus import connection, transience
from services.bus.connection import Connection, ReadyHold
from services.bus.errors import BusMisconfigured, JetStreamUnavailable
from services.config.settings import BusSettings
from services.contracts import subjects
from services.runtime.unreachable import Repeats

log = logging.getLogger(__name__)

MIN_DUPLICATE_WINDOW_SECONDS = 120.0
"""Duplicates are dropped for at least two minutes, so a message published again after a
watcher restart or a retry is stored once."""

UNLIMITED = -1
"""NATS's spelling of "no limit" for counts and sizes (it also reads 0 so)."""

HARDENING = frozenset({"deny_delete", "deny_purge"})
"""Fields only gangsched versions before the streams were hardened left unset (docs/deploy.md,
"NATS security"): a stream lacking them is not damaged, so a refused update of these alone is
logged, not fatal."""

REPAIR_HINT = ("repair it as a NATS user allowed to update streams (with the chart: one start "
               "with nats.auth.allowStreamUpdates=true)")

CREATE_HINT = ("check --stream-replicas (more than 1 needs a NATS cluster of as many servers) "
               "and --stream-max-age-seconds (0, or at least 0.1), and that the NATS user may "
               "create streams")

_REFUSALS = (nats.js.errors.APIError, nats.errors.TimeoutError, nats.errors.NoRespondersError)
"""How NATS says no to a stream request: an API error, or silence (a permissions violation
is reported asynchronously and the request times out)."""


@dataclass(frozen=True)
class StreamSpec:
    """What one stream must look like. Units: seconds (`max_age_seconds` 0 = unlimited)."""

    name: str
    subjects: tuple[str, ...]
    max_age_seconds: float
    duplicate_window_seconds: float
    replicas: int
    prefix: str = ""
    """The gangsched prefix the stream serves; a stream of that name whose subjects are all
    outside `<prefix>.` belongs to another prefix (`collided`). Empty: not checked."""
    shorten_allowed: bool = False
    """Whether an update may shorten the stream's max age while it holds messages (deleting
    those older than `max_age_seconds`): the operator's `--stream-shorten-retention`."""

    def config(self) -> StreamConfig:
        """The nats-py stream configuration: file storage, limits retention, no other limit,
        no message deletes or purges (the log is an audit log), no header-driven extras."""
        return StreamConfig(
            name=self.name,
            subjects=list(self.subjects),
            retention=RetentionPolicy.LIMITS,
            storage=StorageType.FILE,
            max_age=self.max_age_seconds,
            duplicate_window=self.duplicate_window_seconds,
            num_replicas=self.replicas,
            max_msgs=UNLIMITED,
            max_bytes=UNLIMITED,
            max_msgs_per_subject=UNLIMITED,
            max_msg_size=UNLIMITED,
            max_consumers=UNLIMITED,
            discard=DiscardPolicy.OLD,
            deny_delete=True,
            deny_purge=True,
            allow_rollup_hdrs=False,
        )


@dataclass(frozen=True)
class Difference:
    """One checked field where a stream differs from its spec (normalised values)."""

    field: str
    have: object
    want: object

    def __str__(self) -> str:
        return f"{self.field} {_show(self.have)} -> {_show(self.want)}"


def stream_specs(settings: BusSettings) -> list[StreamSpec]:
    """The EVENTS, DECISIONS and DEADLETTER streams for `settings.prefix`.

    Units: the duplicate window is at least `MIN_DUPLICATE_WINDOW_SECONDS` and, when the age is
    limited, at most `max_age_seconds` (NATS refuses a window longer than the age).
    """
    window = max(settings.duplicate_window_seconds, MIN_DUPLICATE_WINDOW_SECONDS)
    if settings.max_age_seconds > 0:
        window = min(window, settings.max_age_seconds)
    prefix = settings.prefix

    def spec(suffix: str, subject: str) -> StreamSpec:
        return StreamSpec(
            name=subjects.stream_name(prefix, suffix),
            subjects=(subject,),
            max_age_seconds=settings.max_age_seconds,
            duplicate_window_seconds=window,
            replicas=settings.replicas,
            prefix=prefix,
            shorten_allowed=settings.shorten_retention,
        )

    return [
        spec("EVENTS", subjects.events_wildcard(prefix)),
        spec("DECISIONS", subjects.decisions_wildcard(prefix)),
        spec("DEADLETTER", subjects.dead_letter_subject(prefix)),
    ]


def stream_of(settings: BusSettings) -> Callable[[str], str | None]:
    """Maps a subject to the name of the stream of `stream_specs(settings)` that stores it
    (`gangsched.decisions.Placement.ml.g` -> `GANGSCHED_DECISIONS`), None for a subject
    none of them takes: what a `services.bus.publishing.Publisher` names when it finds the
    stream of a subject gone."""
    specs = stream_specs(settings)

    def of(subject: str) -> str | None:
        return next((spec.name for spec in specs
                     if any(subjects.matches(taken, subject) for taken in spec.subjects)), None)

    return of


async def ensure_streams(js: JetStreamContext, settings: BusSettings) -> None:
    """Create every stream of `stream_specs(settings)`, or repair one whose config differs.

    Raises:
        BusMisconfigured: NATS refused to create a stream, or a stream differs and NATS
            refused to update it back (see the module docstring).
        JetStreamUnavailable: JetStream did not answer: the server runs none, or cannot
            serve now (`transience.jetstream_answers`, which names which); transient. Said
            in a warning the first time and every `REPEATS_BETWEEN_LOGS`-th, and the
            readiness following the connection (`connection.hold_while_disconnected`) is
            held down with it until a set-up succeeds.
    """
    client = connection.client_of(js)
    try:
        async with _lock():  # services started together in one process check one at a time
            for spec in stream_specs(settings):
                with transience.jetstream_answers(js):
                    await ensure_stream(js, spec)
    except JetStreamUnavailable as error:
        _unanswered(client).say(error.problem, connection.followers(client))
        raise
    _UNANSWERED.pop(client, _Unanswered()).release()


class _Unanswered:
    """JetStream not answering the stream set-up of one connection: the readiness held down
    for it, with its `problem` as the reason (/readyz: `not ready: planner (NATS at <url> has
    no JetStream (...))`), and how often it was said."""

    def __init__(self) -> None:
        self.problem = ""
        self.held: list[ReadyHold] = []
        self.repeats = Repeats()

    def say(self, problem: str, followers: list[ReadyHold]) -> None:
        """Hold `followers` down with `problem` (only); log it the first time and every
        `REPEATS_BETWEEN_LOGS`-th, with its count."""
        if problem != self.problem:
            self.release()
            self.problem = problem
        for ready in followers:
            ready.hold(problem)
        self.held += [ready for ready in followers if ready not in self.held]
        count = self.repeats.count(problem)
        if count is not None:
            log.warning("cannot set up the streams: %s; retrying, not ready meanwhile%s",
                        problem, f" ({count} such failures)" if count > 1 else "")

    def release(self) -> None:
        """End the holds (JetStream answered, or with another problem)."""
        for ready in self.held:
            ready.release(self.problem)
        self.held = []


_UNANSWERED: weakref.WeakKeyDictionary[Connection, _Unanswered] = weakref.WeakKeyDictionary()


def _unanswered(client: Connection) -> _Unanswered:
    """What `ensure_streams` keeps of `client`'s JetStream not answering."""
    return _UNANSWERED.setdefault(client, _Unanswered())


_LOCKS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = (
    weakref.WeakKeyDictionary())


def _lock() -> asyncio.Lock:
    """This event loop's lock around `ensure_streams`."""
    return _LOCKS.setdefault(asyncio.get_running_loop(), asyncio.Lock())


async def ensure_stream(js: JetStreamContext, spec: StreamSpec) -> None:
    """Create the stream `spec` if missing, else update it back when a checked field differs.

    A create of an existing identical stream succeeds (NATS makes it idempotent), so services
    starting together need not coordinate.
    Raises:
        BusMisconfigured: as `ensure_streams`.
    """
    try:
        info = await js.stream_info(spec.name)
    except nats.js.errors.NotFoundError:
        await _create(js, spec)
        return
    found = differences(info.config, spec)
    if not found:
        return
    owner = collided(info.config, spec)
    if owner:
        raise BusMisconfigured(
            f"stream {spec.name} holds the subjects of another prefix ({', '.join(owner)}), "
            f"not prefix {spec.prefix}'s: stream names keep only letters, digits, _ and - of "
            "a prefix, in capitals, so both prefixes map to this one; choose a prefix that "
            "differs in those (nothing was changed)")
    shortened = shortens_retention(found) if info.state.messages else None
    if shortened is not None and not spec.shorten_allowed:
        raise BusMisconfigured(
            f"stream {spec.name} holds {info.state.messages} message(s) and "
            f"--stream-max-age-seconds {_show(shortened.want)} is shorter than its retention "
            f"({_retention(shortened.have)}): NATS would delete those older than that. To keep "
            f"them, start with --stream-max-age-seconds {_show(shortened.have)}; to delete "
            "them, start once with --stream-shorten-retention (nothing was changed)")
    await _repair(js, spec, found)
    if shortened is not None:
        log.warning("shortened the retention of stream %s from %s to %s s: its messages older "
                    "than that are deleted (--stream-shorten-retention)", spec.name,
                    _retention(shortened.have), _show(shortened.want))


def _retention(seconds: object) -> str:
    """A stream's max age for people: `604800 s`, or `unlimited` for 0."""
    return "unlimited" if seconds == 0 else f"{_show(seconds)} s"


async def installation(js: JetStreamContext, prefix: str) -> str:
    """The identity of the gangsched installation whose event log this is: `<prefix>@<when
    its EVENTS stream was created>` (ISO 8601, UTC, to the microsecond; no `/`, which no
    prefix holds either). The same for every service of
    one installation and across their restarts; another NATS or prefix, or a log made anew,
    is another installation.

    Raises:
        BusUnavailable, BusRefused: NATS cannot answer, or refuses (`transience.bus_errors`).
        BusMisconfigured: the EVENTS stream reports no creation time.
    """
    name = subjects.stream_name(prefix, "EVENTS")
    with transience.bus_errors(f"reading stream {name}", js):
        info = await js.stream_info(name)
    if info.created is None:
        raise BusMisconfigured(f"stream {name} reports no creation time")
    return f"{prefix}@{info.created.astimezone(UTC).isoformat(timespec='microseconds')}"


def shortens_retention(found: list[Difference]) -> Difference | None:
    """The `max_age` difference among `found` when the update would shorten the retention
    (seconds; 0 is unlimited): from unlimited to a limit, or to a shorter limit; else None."""
    for difference in found:
        have, want = difference.have, difference.want
        if (difference.field == "max_age" and isinstance(have, float | int)
                and isinstance(want, float | int) and want > 0 and (have == 0 or want < have)):
            return difference
    return None


def collided(current: StreamConfig, spec: StreamSpec) -> list[str]:
    """The subjects of an existing stream named as `spec`'s when none of them is under
    `spec.prefix` (`<prefix>.` or the prefix itself): the stream of another prefix whose name
    maps to the same one (`subjects.stream_name`), never to be taken over (its publishers
    would lose every message from then on). Empty when the stream is ours (its subjects may
    still differ and be repaired) or `spec.prefix` is unset."""
    held = sorted(current.subjects or [])
    if not spec.prefix or not held:
        return []
    ours = [subject for subject in held
            if subject == spec.prefix or subject.startswith(f"{spec.prefix}.")]
    return [] if ours else held


def differences(current: StreamConfig, spec: StreamSpec) -> list[Difference]:
    """Each checked field where `current` differs from `spec`, in a fixed field order.

    Shapes: empty when equal; values normalised (enums as their strings, unset limits as -1,
    durations rounded to the millisecond, subjects sorted).
    """
    have, want = checked_fields(current), checked_fields(spec.config())
    return [Difference(name, have[name], want[name]) for name in want if have[name] != want[name]]


def config_differences(current: StreamConfig, spec: StreamSpec) -> list[str]:
    """`differences` as text: `["max_age 60 -> 3600", ...]`."""
    return [str(difference) for difference in differences(current, spec)]


def checked_fields(config: StreamConfig) -> dict[str, object]:
    """The fields of `config` gangsched checks, normalised so equal meanings compare equal.

    Shapes: field name → value, in the order differences are reported. Not checked, as they
    cannot lose, add or redirect messages: description, metadata, placement, compression,
    direct gets, consumer limits, first sequence.
    """
    return {
        "subjects": sorted(config.subjects or []),
        "retention": _text(config.retention),
        "storage": _text(config.storage),
        "num_replicas": config.num_replicas or 1,
        "max_age": _seconds(config.max_age),
        "duplicate_window": _seconds(config.duplicate_window),
        "max_msgs": _limit(config.max_msgs),
        "max_bytes": _limit(config.max_bytes),
        "max_msgs_per_subject": _limit(config.max_msgs_per_subject),
        "max_msg_size": _limit(config.max_msg_size),
        "max_consumers": _limit(config.max_consumers),
        "discard": _text(config.discard or DiscardPolicy.OLD),
        "discard_new_per_subject": bool(config.discard_new_per_subject),
        "no_ack": bool(config.no_ack),
        "sealed": bool(config.sealed),
        "deny_delete": bool(config.deny_delete),
        "deny_purge": bool(config.deny_purge),
        "allow_rollup_hdrs": bool(config.allow_rollup_hdrs),
        "allow_msg_ttl": bool(config.allow_msg_ttl),
        "allow_msg_schedules": bool(config.allow_msg_schedules),
        "allow_msg_counter": bool(config.allow_msg_counter),
        "allow_atomic": bool(config.allow_atomic),
        "allow_batched": bool(config.allow_batched),
        "persist_mode": _text(config.persist_mode) or "default",
        "republish": _struct(config.republish),
        "subject_transform": _struct(config.subject_transform),
        "mirror": _struct(config.mirror),
        "sources": [_struct(source) for source in config.sources or []],
    }


async def _create(js: JetStreamContext, spec: StreamSpec) -> None:
    """Create `spec`'s stream. Raises BusMisconfigured when NATS refuses (replicas a single
    server cannot keep, a retention below its minimum, a denied request)."""
    await _request(js.add_stream, spec, "cannot be created", hint=CREATE_HINT)
    log.info("created stream %s (%s)", spec.name, ", ".join(spec.subjects))


async def _repair(js: JetStreamContext, spec: StreamSpec, found: list[Difference]) -> None:
    """Update `spec`'s stream back to `spec`; refuse loudly when NATS does not let us, unless
    only `HARDENING` fields differ (then warn and go on with the stream as it is)."""
    described = "; ".join(str(difference) for difference in found)
    try:
        info = await _request(js.update_stream, spec, f"differs ({described}) and cannot update")
    except BusMisconfigured as refused:
        if {difference.field for difference in found} <= HARDENING:
            log.warning("%s; going on without them", refused)
            return
        raise
    left = differences(info.config, spec)
    if left:
        raise BusMisconfigured(
            f"stream {spec.name}: NATS accepted the update but still differs "
            f"({'; '.join(str(difference) for difference in left)}): {REPAIR_HINT}")
    log.warning("repaired stream %s: %s", spec.name, described)


async def _request(call: Callable[..., Awaitable[StreamInfo]], spec: StreamSpec,
                   what: str, *, hint: str = REPAIR_HINT) -> StreamInfo:
    """Run `add_stream` or `update_stream` with `spec`, translating refusals.

    Raises:
        BusMisconfigured: `stream <name> <what>: <NATS's answer>: <hint>`, one line.
        nats.js.errors.ServiceUnavailableError: JetStream did not answer (no refusal).
    """
    try:
        return await call(config=spec.config())
    except nats.js.errors.ServiceUnavailableError:
        raise  # JetStream not answering now (`ensure_streams` names it), not a refusal
    except _REFUSALS as error:
        answer = str(error) or type(error).__name__
        if isinstance(error, nats.errors.TimeoutError | nats.errors.NoRespondersError):
            answer = f"no answer from NATS ({type(error).__name__}: is the request denied?)"
        raise BusMisconfigured(f"stream {spec.name} {what}: {answer}: {hint}") from error


def _text(value: object) -> str | None:
    """An enum's string value (or None)."""
    return None if value is None else str(getattr(value, "value", value))


def _seconds(value: float | None) -> float:
    """A duration in seconds, to the millisecond (NATS stores nanoseconds)."""
    return round(value or 0.0, 3)


def _limit(value: int | None) -> int:
    """A count or size limit; unset, 0 and negative all mean unlimited (-1)."""
    return value if value is not None and value > 0 else UNLIMITED


def _struct(value: object) -> object:
    """A nested nats-py config (RePublish, StreamSource, ...) as a plain dict, or None."""
    as_dict = getattr(value, "as_dict", None)
    return None if value is None or as_dict is None else as_dict()


def _show(value: object) -> str:
    """A normalised field value as text (durations with `%g`)."""
    return f"{value:g}" if isinstance(value, float) else repr(value)
