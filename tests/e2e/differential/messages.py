"""FailedScheduling messages as reason → node count maps, so two schedulers' messages compare.

kube-scheduler words an unschedulable pod as `0/24 nodes are available: 3 Insufficient cpu,
21 node(s) had untolerated taint(s). preemption: 0/24 nodes are available: 24 No preemption
victims found for incoming pod.` (`framework.FitError.Error`, then DefaultPreemption's part);
a PreFilter rejection has no counts (`0/24 nodes are available: pod affinity terms
conflict.`). gangsched words a pod alone the same way, optionally followed by `; ...` notes.
Only the filters' part, up to the first `. ` or `.;`, is compared: what follows (PostFilter
plugins: `no new claims to deallocate, preemption: ...`; gangsched's notes) is no filter
verdict. No per-node reason contains `. `.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

PREFILTER = -1
"""The count given to a reason without a number (a PreFilter message, for every node)."""

_HEAD = re.compile(r"0/(?P<total>\d+) nodes are available: (?P<body>.*)", re.DOTALL)
_END = re.compile(r"\.(?:\s|;|$)")
_ITEM = re.compile(r"(?P<count>\d+) (?P<reason>.+)", re.DOTALL)


@dataclass(frozen=True)
class NodeReasons:
    """A parsed message: `total` nodes, and each per-node reason with how many nodes gave it
    (PREFILTER for a PreFilter message without counts)."""

    total: int
    counts: dict[str, int]


class NotAFitMessage(ValueError):
    """The text is not a `0/N nodes are available: ...` message."""


def parse(message: str) -> NodeReasons:
    """`message` as a reason → count map (module docstring).

    Raises:
        NotAFitMessage: the message does not start with `0/N nodes are available: `.
    """
    head = _HEAD.match(message.strip())
    if head is None:
        raise NotAFitMessage(message)
    body = head["body"]
    end = _END.search(body)
    if end is not None:
        body = body[:end.start()]
    counts: dict[str, int] = {}
    for part in re.split(r", (?=\d+ )", body) if body else []:
        item = _ITEM.fullmatch(part)
        if item is None:
            counts[part] = PREFILTER
        else:
            counts[item["reason"]] = counts.get(item["reason"], 0) + int(item["count"])
    return NodeReasons(int(head["total"]), counts)


def filter_part(message: str) -> str:
    """The filters' part of a `0/N nodes are available: ...` message, up to its first `.`
    that ends it (module docstring), period included.

    Raises:
        NotAFitMessage: as `parse`.
    """
    text = message.strip()
    head = _HEAD.match(text)
    if head is None:
        raise NotAFitMessage(message)
    end = _END.search(text, head.start("body"))
    return text if end is None else text[:end.start() + 1]


def is_fit_message(message: str | None) -> bool:
    """Whether `message` is a `0/N nodes are available: ...` message."""
    return message is not None and _HEAD.match(message.strip()) is not None
