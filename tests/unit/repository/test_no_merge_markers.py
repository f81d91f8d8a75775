"""No tracked file carries an unresolved merge: a conflict once reached README.md unseen."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
MARKER = re.compile(rb"^(<{7} |={7}$|>{7} )", re.MULTILINE)


def test_no_tracked_file_has_conflict_markers() -> None:
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True,
                            check=True).stdout.split(b"\0")
    marked = []
    for name in filter(None, listed):
        path = ROOT / name.decode()
        if not path.is_file() or path.stat().st_size > 5_000_000:
            continue
        data = path.read_bytes()
        if b"\0" not in data[:8192] and MARKER.search(data):
            marked.append(name.decode())
    assert marked == []
