"""NATS subject and stream names under a configurable prefix.

Layer: contracts. Pure; never does I/O.

Subjects: `<prefix>.events.<kind>.<namespace>.<name>` and
`<prefix>.decisions.<type>.<namespace>.<group>`. Cluster-scoped objects use `_` as namespace.
Characters NATS gives meaning to (`.`, `*`, `>`, whitespace) are replaced by `_` in tokens, so a
subscriber filtering by name writes dots as underscores.
"""

from __future__ import annotations

import functools
import re

_UNSAFE = re.compile(r"[.*>\s]")
CLUSTER_SCOPE = "_"
PREFIX_PATTERN = re.compile(r"[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*")
"""A prefix gangsched takes (`--prefix`): dot-separated tokens of letters, digits, `_`, `-`."""


TOKEN_CACHE_SIZE = 65_536
"""Most texts whose tokens `token` remembers (least recently used dropped first): the planner
names namespaces and groups, but the watcher names every object (pods too), so a large
cluster fills it. Full, it holds about 12 MiB for 63-character names and 24 MiB for
253-character ones (the texts it keeps alive included; measured with tracemalloc)."""


@functools.lru_cache(maxsize=TOKEN_CACHE_SIZE)
def token(text: str) -> str:
    """Make `text` one NATS subject token (never empty).

    Cached by `text` (a pure function of it): the planner names the same namespaces and groups
    in every decision subject, and the regex substitution was a visible share of its CPU."""
    return _UNSAFE.sub("_", text) or CLUSTER_SCOPE


def events_subject(prefix: str, kind: str, namespace: str, name: str) -> str:
    """Subject of one event: `<prefix>.events.<kind>.<ns>.<name>`."""
    return f"{prefix}.events.{kind}.{token(namespace)}.{token(name)}"


def decisions_subject(prefix: str, decision_type: str, namespace: str, group: str) -> str:
    """Subject of one decision: `<prefix>.decisions.<type>.<ns>.<group>`."""
    return f"{prefix}.decisions.{decision_type}.{token(namespace)}.{token(group)}"


def event_kind(prefix: str, subject: str) -> str | None:
    """The `<kind>` token of an events subject under `prefix`, or None if `subject` is not one
    (`gangsched.events.pod.ml.w-0` → `pod`)."""
    head = f"{prefix}.events."
    if not subject.startswith(head):
        return None
    kind = subject[len(head):].split(".", 1)[0]
    return kind or None


def events_wildcard(prefix: str) -> str:
    """Subject filter for the whole EVENTS stream."""
    return f"{prefix}.events.>"


def decisions_wildcard(prefix: str) -> str:
    """Subject filter for the whole DECISIONS stream."""
    return f"{prefix}.decisions.>"


def decisions_of_type_wildcard(prefix: str, decision_type: str) -> str:
    """Subject filter for one decision type, e.g. every Placement."""
    return f"{prefix}.decisions.{decision_type}.>"


def dead_letter_subject(prefix: str) -> str:
    """Subject where poisoned messages are republished with the reason in a header."""
    return f"{prefix}.deadletter"


def matches(pattern: str, subject: str) -> bool:
    """Whether `subject` is one of the subjects NATS's `pattern` names: `*` stands for one
    token, a final `>` for one token or more (`gangsched.events.>` matches
    `gangsched.events.pod.ml.w-0`, not `gangsched.events`)."""
    want, have = pattern.split("."), subject.split(".")
    for index, token in enumerate(want):
        if token == ">":
            return len(have) > index
        if index >= len(have) or token not in ("*", have[index]):
            return False
    return len(have) == len(want)


def stream_name(prefix: str, suffix: str) -> str:
    """Stream name for `prefix` (e.g. `gangsched`, `EVENTS` → `GANGSCHED_EVENTS`)."""
    return f"{re.sub(r'[^A-Za-z0-9_-]', '_', prefix).upper()}_{suffix}"


NATS_NAME_LENGTH = 255
"""The longest stream name NATS takes, in characters."""
MAX_PREFIX_LENGTH = NATS_NAME_LENGTH - len(stream_name("", "DEADLETTER"))
"""The longest prefix taken, in characters (244): the longest name made of the prefix is
`<PREFIX>_DEADLETTER` (then the leader lease bucket's `KV_<PREFIX>_LEADER`): a longer prefix
was taken, then every start failed on the stream."""
