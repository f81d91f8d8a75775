"""Absolute paths for the files gangsched names, whatever symbolic links lie on the way.

Layer: config (pure).
"""

from __future__ import annotations

from pathlib import Path


def resolved(path: Path) -> Path:
    """`path.resolve()` (absolute, symbolic links followed); a loop of links, which Python
    3.11 raises as a `RuntimeError` (no `OSError`, so no caller's file checks catch it), is
    left as it is, made absolute, so that opening the file says why (`Too many levels of
    symbolic links`) instead of a crash."""
    try:
        return path.resolve()
    except RuntimeError:
        return path.absolute()
