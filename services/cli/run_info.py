"""Where a running gangsched is: `<data-dir>/run.json` (written by `gangsched run`).

Layer: cli. Reads one small JSON file; an option given on the command line always wins, then
run.json, then the default of the data directory (SQLite `<data-dir>/gangsched.db`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from services.config.settings import Settings

RUN_FILE = "run.json"
DEFAULT_PREFIX = "gangsched"


def load(data_dir: Path) -> dict[str, Any]:
    """The content of `<data_dir>/run.json`, or `{}` when absent or unreadable."""
    try:
        info = json.loads((data_dir / RUN_FILE).read_text())
    except (OSError, ValueError):
        return {}
    return info if isinstance(info, dict) else {}


def database_url(given: str | None, data_dir: Path) -> str:
    """`given`, else run.json's `db`, else the data directory's default SQLite database."""
    recorded = load(data_dir).get("db")
    return given or (str(recorded) if recorded else Settings(data_dir=data_dir).store_url())


def nats_url(given: str | None, data_dir: Path) -> str | None:
    """`given`, else run.json's `nats` (the embedded server of a running `gangsched run`)."""
    recorded = load(data_dir).get("nats")
    return given or (str(recorded) if recorded else None)


def prefix(given: str | None, data_dir: Path) -> str:
    """`given`, else run.json's `prefix`, else `gangsched`."""
    recorded = load(data_dir).get("prefix")
    return given or (str(recorded) if recorded else DEFAULT_PREFIX)
