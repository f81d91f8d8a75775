"""CPU time of processes (with their descendants) and a summary of a py-spy profile.

Layer: bench. Reads /proc (Linux); clock ticks from `os.sysconf`. The profile is py-spy's
`--format raw` output: one line per distinct stack, `frame;frame;...;frame count`, root first,
each frame `function (path:line)`.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

TICKS_PER_SECOND = os.sysconf("SC_CLK_TCK")
TOP = 25
PLUMBING = ("threading", "<frozen runpy>", "click")
PLUMBING_FILES = ("events.py", "base_events.py", "runners.py")
SERVICES = ("watcher", "planner", "binder", "bus", "store", "kube", "runtime")


@dataclass(frozen=True)
class Scan:
    """Every process at one moment. Shapes: `parents` children by parent pid; `seconds` user +
    system CPU seconds by pid including its reaped children's (what a process tree used, its
    exited members included); `own_seconds` without them (what the process itself used:
    counted under a process's own name, a reaped child's CPU would count twice, once under
    the child's name while it ran and again under its parent's); `started` its start time
    (clock ticks since boot), which tells a reused pid from the process seen before."""

    parents: dict[int, list[int]]
    seconds: dict[int, float]
    own_seconds: dict[int, float]
    started: dict[int, int]


def scan() -> Scan:
    """Every process now (`Scan`), from /proc; a process gone while read is left out."""
    found = Scan({}, {}, {}, {})
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        pid = int(entry.name)
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        own = int(fields[11]) + int(fields[12])  # utime stime
        reaped = int(fields[13]) + int(fields[14])  # cutime cstime
        found.parents.setdefault(int(fields[1]), []).append(pid)
        found.seconds[pid] = (own + reaped) / TICKS_PER_SECOND
        found.own_seconds[pid] = own / TICKS_PER_SECOND
        found.started[pid] = int(fields[19])
    return found


def processes() -> tuple[dict[int, list[int]], dict[int, float]]:
    """Every process now: children by parent pid, and CPU seconds by pid including reaped
    children's (`Scan.seconds`)."""
    now = scan()
    return now.parents, now.seconds


def tree(root: int, parents: dict[int, list[int]]) -> list[int]:
    """`root` and its descendants, root first."""
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo += parents.get(pid, [])
    return found


def _tree_seconds(root: int) -> float:
    parents, seconds = processes()
    return sum(seconds.get(pid, 0.0) for pid in tree(root, parents))


def snapshot(pids: dict[str, int]) -> dict[str, float]:
    """CPU seconds used so far by each named process and its descendants."""
    return {name: _tree_seconds(pid) for name, pid in pids.items()}


def used_since(before: dict[str, float], pids: dict[str, int]) -> dict[str, float]:
    """CPU seconds each named process (tree) used since `before` was taken."""
    now = snapshot(pids)
    return {name: round(now[name] - before.get(name, 0.0), 2) for name in sorted(pids)}


CHILD_MODULE = "services.cli.child"


def process_label(argv: list[str]) -> str:
    """What a process of a scheduler's tree is, from its command line: the service a
    `gangsched run` child runs (`python -m services.cli.child binder` → `binder`), `nats-server`,
    else the module run with `-m` (`services.cli.main`) or the program's file name."""
    if not argv:
        return "?"
    if "-m" in argv[:-1]:
        module = argv[argv.index("-m") + 1]
        after = argv[argv.index("-m") + 2:]
        return after[0] if module == CHILD_MODULE and after else module
    return Path(argv[0]).name


def argv(pid: int) -> list[str]:
    """The command line of `pid`, one string per argument; empty when it is gone."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


def parts(root: int) -> dict[str, float]:
    """CPU seconds used so far by `root` and each of its descendants, summed by
    `process_label`: a scheduler's CPU by process. Each process counts its own CPU only
    (`Scan.own_seconds`): a child that exited and was reaped is not counted again under its
    parent's name."""
    now = scan()
    found: dict[str, float] = {}
    for pid in tree(root, now.parents):
        label = process_label(argv(pid))
        found[label] = found.get(label, 0.0) + now.own_seconds.get(pid, 0.0)
    return found


def parts_since(before: dict[str, float], root: int) -> dict[str, float]:
    """CPU seconds each process of `root`'s tree used since `before` (`parts`) was taken,
    largest first. A process restarted meanwhile is undercounted (what its predecessor used
    left with it), never negative."""
    now = parts(root)
    return {label: round(max(0.0, seconds - before.get(label, 0.0)), 2)
            for label, seconds in sorted(now.items(), key=lambda item: -item[1])}


def summarise_profile(path: Path) -> dict[str, Any]:
    """Samples by gangsched service (outermost `services/<x>/` frame), by library (innermost
    package), by leaf frame, and the functions with the most inclusive samples.
    Shapes: `{name: share of samples}`."""
    stacks: list[tuple[list[str], int]] = []
    for line in path.read_text(errors="replace").splitlines():
        stack, _, samples = line.rpartition(" ")
        if stack and samples.isdigit():
            stacks.append((stack.split(";"), int(samples)))
    total = sum(count for _, count in stacks) or 1
    by_service: Counter[str] = Counter()
    by_leaf: Counter[str] = Counter()
    by_library: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    for frames, count in stacks:
        by_service[_service(frames)] += count
        by_library[_library(frames)] += count
        by_leaf[_short(frames[-1])] += count
        for frame in {_short(f) for f in frames}:
            inclusive[frame] += count

    def shares(counter: Counter[str]) -> dict[str, float]:
        return {k: round(v / total, 4) for k, v in counter.most_common(TOP)}

    return {"samples": total, "rate_hz": 100, "by_service": shares(by_service),
            "by_library": shares(by_library),
            "by_leaf": shares(by_leaf), "inclusive": shares(inclusive), "raw": str(path)}


def _service(frames: list[str]) -> str:
    """The first `services/<x>/` package from the root of the stack (then the next one)."""
    found = [s for f in frames for s in SERVICES if f"services/{s}/" in f]
    if not found:
        return "other (event loop, libraries)"
    outer = found[0]
    inner = next((s for s in found if s != outer), None)
    return f"{outer} > {inner}" if inner else outer


def _library(frames: list[str]) -> str:
    """Where the sample is spent: the package of the innermost frame that is not event-loop
    or thread plumbing (`aiohttp`, `nats`, `services/kube`, `ssl`, `concurrent` (the thread
    pool), ...). py-spy prints paths relative to their sys.path entry."""
    for frame in reversed(frames):
        path = frame.partition(" (")[2].rstrip(")").rsplit(":", 1)[0]
        parts = path.split("/")
        if parts[0] == "services":
            return "/".join(parts[:2])
        name = parts[0].removesuffix(".py")
        if name in PLUMBING or (name == "asyncio" and parts[-1] in PLUMBING_FILES):
            continue
        return name
    return "event loop (idle or dispatch)"


def _short(frame: str) -> str:
    """`function (path:line)` → `function (file or package/module)` without the line."""
    function, _, where = frame.partition(" (")
    where = where.rstrip(")").rsplit(":", 1)[0]
    parts = where.split("/")
    if "services" in parts:
        where = "/".join(parts[parts.index("services"):])
    elif "site-packages" in parts:
        where = "/".join(parts[parts.index("site-packages") + 1:])
    else:
        where = "/".join(parts[-2:])
    return f"{function} ({where})"
