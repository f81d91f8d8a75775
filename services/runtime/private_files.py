"""Files only their owner may read: secrets (generated passwords) and what points to them.

Layer: runtime. Never writes a secret into a file that others could read, not even briefly.
"""

from __future__ import annotations

import os
from pathlib import Path

PRIVATE_MODE = 0o600


def write_private(path: Path, text: str) -> None:
    """Write `text` to `path`, readable and writable by its owner only (mode 0600), atomically.

    The temporary file beside `path` is created 0600 before anything is written into it, and
    replaces `path` whole, so a reader sees the old content or the new, and never does anyone
    else.
    Raises:
        OSError: the directory is missing or not writable.
    """
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.unlink(missing_ok=True)
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_MODE)
    with os.fdopen(descriptor, "w") as file:
        file.write(text)
    temporary.replace(path)
