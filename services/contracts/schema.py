"""JSON Schemas of the published messages, generated from the msgspec types (`docs/schema/`).

Layer: contracts. Pure; `write_schemas` is the only function that touches files, and only when
asked (by `gangsched schema` and the test that keeps `docs/schema/` current).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec

from services.contracts.decisions import Decision
from services.contracts.events import Event, Outcome

SCHEMAS: dict[str, Any] = {
    "decisions.schema.json": Decision,
    "outcomes.schema.json": Outcome,
    "events.schema.json": Event,
}
"""File name → the union type it describes."""


def render(kind: Any) -> str:
    """The JSON Schema of `kind` as stable, pretty JSON text (sorted keys, trailing newline)."""
    return json.dumps(msgspec.json.schema(kind), indent=2, sort_keys=True) + "\n"


def write_schemas(directory: Path) -> list[Path]:
    """Write every schema of `SCHEMAS` into `directory`; returns the paths written."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, kind in SCHEMAS.items():
        path = directory / name
        path.write_text(render(kind))
        written.append(path)
    return written
