"""Files the repository generates from its own sources (the plain manifests, the chart README,
the admission policy's constraints): rewritten by `python -m <module>`, checked by unit tests."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def write_if_stale(path: Path, wanted: str) -> bool:
    """Write `wanted` to `path` unless it already holds exactly that; True if written."""
    if path.exists() and path.read_text() == wanted:
        return False
    path.write_text(wanted)
    return True


def regenerate(path: Path, text: Callable[[], str]) -> None:
    """The `__main__` of a generator: rewrite `path` with `text()` if stale, and say which."""
    written = write_if_stale(path, text())
    print(f"{path.relative_to(REPO)} {'written' if written else 'already current'}",
          file=sys.stderr)
