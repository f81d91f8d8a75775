"""Create or update the JetStream streams gangsched uses: EVENTS, DECISIONS, DEADLETTER.

Layer: bus. Idempotent and config-checked: safe to call from every service at every start.
Never deletes a stream or its messages.
"""

from __future__ import annotations

import asyncio
import logging
import math
import weakref
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

import nats
from nats.js import JetStreamContext
from nats.js.api import RetentionPolicy, StorageType, StreamConfig, StreamInfo

from services.bus.errors import BusMisconfigured
from services.config.settings import BusSettings
from services.contracts import subjects

log = logging.getLogger(__name__)

MIN_DUPLICATE_WINDOW_SECONDS = 120.0
"""DESIGN §6: duplicates are dropped for at least two minutes (watcher restarts, retries)."""


@dataclass(frozen=True)
class StreamSpec:
    """What one stream must look like. Units: seconds (`max_age_seconds` 0 = unlimited)."""

    name: str
    subjects: tuple[str, ...]
    max_age_seconds: float
    duplicate_window_seconds: float
    replicas: int

    def config(self) -> StreamConfig:
        """The nats-py stream configuration: file storage, limits retention."""
        return StreamConfig(
            name=self.name,
            subjects=list(self.subjects),
            retention=RetentionPolicy.LIMITS,
            storage=StorageType.FILE,
            max_age=self.max_age_seconds,
            duplicate_window=self.duplicate_window_seconds,
            num_replicas=self.replicas,
        )


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
        )

    return [
        spec("EVENTS", subjects.events_wildcard(prefix)),
        spec("DECISIONS", subjects.decisions_wildcard(prefix)),
        spec("DEADLETTER", subjects.dead_letter_subject(prefix)),
    ]


async def ensure_streams(js: JetStreamContext, settings: BusSettings) -> None:
    """Create every stream of `stream_specs(settings)`, or update one whose config differs.

    Raises:
        BusMisconfigured: NATS refused to create or update a stream (e.g. subjects overlap
            another stream, or a field that cannot change such as storage).
    """
    async with _lock():  # services started together in one process check one at a time
        for spec in stream_specs(settings):
            await ensure_stream(js, spec)


_LOCKS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = (
    weakref.WeakKeyDictionary())


def _lock() -> asyncio.Lock:
    """This event loop's lock around `ensure_streams`."""
    return _LOCKS.setdefault(asyncio.get_running_loop(), asyncio.Lock())


async def ensure_stream(js: JetStreamContext, spec: StreamSpec) -> None:
    """Create the stream `spec` if missing, else update it when a checked field differs.

    Raises:
        BusMisconfigured: as `ensure_streams`.
    """
    try:
        info = await js.stream_info(spec.name)
    except nats.js.errors.NotFoundError:
        await _apply(js.add_stream, spec, "create")
        log.info("created stream %s (%s)", spec.name, ", ".join(spec.subjects))
        return
    differences = config_differences(info.config, spec)
    if differences:
        await _apply(js.update_stream, spec, "update")
        log.info("updated stream %s: %s", spec.name, "; ".join(differences))


def config_differences(current: StreamConfig, spec: StreamSpec) -> list[str]:
    """Human descriptions of each checked field where `current` differs from `spec`.

    Shapes: `["max_age 60 -> 3600", ...]`, in a fixed field order; empty when equal.
    """
    wanted = spec.config()
    checked: Sequence[tuple[str, object, object]] = (
        ("subjects", sorted(current.subjects or []), sorted(spec.subjects)),
        ("retention", current.retention, wanted.retention),
        ("storage", current.storage, wanted.storage),
        ("num_replicas", current.num_replicas, wanted.num_replicas),
        ("max_age", current.max_age or 0.0, wanted.max_age),
        ("duplicate_window", current.duplicate_window, wanted.duplicate_window),
    )
    return [
        f"{field} {have!r} -> {want!r}"
        for field, have, want in checked
        if not _same(have, want)
    ]


def _same(have: object, want: object) -> bool:
    """Equality, with floats compared to the millisecond (NATS stores durations in ns)."""
    if isinstance(have, float | int) and isinstance(want, float | int):
        return math.isclose(float(have), float(want), abs_tol=1e-3)
    return have == want


async def _apply(
    call: Callable[..., Awaitable[StreamInfo]], spec: StreamSpec, verb: str
) -> None:
    """Run `add_stream` or `update_stream` with `spec`, translating API errors."""
    try:
        await call(config=spec.config())
    except nats.js.errors.APIError as error:
        raise BusMisconfigured(f"cannot {verb} stream {spec.name}: {error}") from error
