"""The aligned rows of `replay` and `decisions` show long names whole (folded), never cut."""

from __future__ import annotations

import io

from rich.console import Console

from services.cli.audit_view import DECISION_COLUMNS, RowPrinter


def test_a_group_name_longer_than_its_column_is_folded_not_cut():
    out = io.StringIO()
    printer = RowPrinter(Console(file=out, width=120, highlight=False), DECISION_COLUMNS)
    group = "team-research/llama-finetune-8x-gpu-gang-0042"
    printer.row("17", "2026-11-30 05:00:00.000", "Placement", group, "17-0", "placed 8 pods")
    lines = out.getvalue().splitlines()
    assert lines[0].split()[:4] == ["Seq", "Time", "(UTC)", "Type"]
    group_column = lines[0].index("Group")
    folded = "".join(line[group_column:group_column + 26].strip() for line in lines[1:])
    assert folded == group
    assert "…" not in out.getvalue()
