"""The aligned rows of `replay` and `decisions` show long names whole: folded within their
column on a terminal, one line per row (for grep and cut) in a file or a pipe."""

from __future__ import annotations

import io

from rich.console import Console

from services.cli.audit_view import DECISION_COLUMNS, TIMELINE_COLUMNS, RowPrinter
from services.contracts import events

GROUP = "team-research/llama-finetune-8x-gpu-gang-0042"
SUMMARY = "placed 8 pods on gpu-node-1, gpu-node-2 [zone a] " + "and more " * 20


def printed(terminal: bool, width: int = 120) -> list[str]:
    out = io.StringIO()
    console = Console(file=out, width=width, highlight=False, force_terminal=terminal,
                      color_system=None)
    printer = RowPrinter(console, DECISION_COLUMNS)
    printer.row("17", "2026-11-30 05:00:00.000", "Placement", GROUP, "17-0", SUMMARY)
    return out.getvalue().splitlines()


def test_on_a_terminal_a_long_group_name_is_folded_within_its_column_not_cut() -> None:
    lines = printed(terminal=True)
    assert lines[0].split()[:4] == ["Seq", "Time", "(UTC)", "Type"]
    column = lines[0].index("Group")
    assert "".join(line[column:column + 26].strip() for line in lines[1:]) == GROUP
    assert "…" not in "".join(lines)


def test_in_a_pipe_each_row_is_one_whole_line_with_no_trailing_blanks() -> None:
    header, row = printed(terminal=False)
    assert header.split()[:4] == ["Seq", "Time", "(UTC)", "Type"]
    assert row.startswith("17      2026-11-30 05:00:00.000  Placement    " + GROUP)
    assert row.endswith(SUMMARY.rstrip())  # whole, brackets kept (no markup)
    assert header == header.rstrip() and row == row.rstrip()


def test_in_a_pipe_the_rows_after_a_long_group_name_keep_its_columns() -> None:
    """A group name longer than its column used to shift the Id and Summary of each row naming
    it; the column now widens to it, so the rows that follow stay aligned with it (names whole,
    as in the replay timeline, which prints its rows alike)."""
    out = io.StringIO()
    printer = RowPrinter(Console(file=out, width=200, highlight=False), DECISION_COLUMNS)
    rows = [("4", "default/pod:annotation-second-scheduler", "67-0"),
            ("5", "default/train", "68-0"),
            ("6", "default/pod:annotation-second-scheduler", "69-0")]
    for seq, group, decision_id in rows:
        printer.row(seq, "2026-11-30 05:00:00.000", "Placement", group, decision_id, "placed")
    lines = out.getvalue().splitlines()[1:]
    assert [line.split()[4:6] for line in lines] == [[group, id_] for _, group, id_ in rows]
    assert len({line.index(decision_id) for line, (_, _, decision_id)
                in zip(lines, rows, strict=True)}) == 1
    assert len({line.index("placed") for line in lines}) == 1


def test_a_terminal_too_narrow_for_the_summary_gets_one_whole_line_per_row() -> None:
    """An 80-column terminal left the summary out and split times mid-word; its lines are now
    the pipe's, which the terminal wraps."""
    assert printed(terminal=True, width=80) == printed(terminal=False)


def test_the_timeline_type_column_holds_the_longest_event_type() -> None:
    width = dict(TIMELINE_COLUMNS)["Type"]
    longest = max((name for name in dir(events) if name.endswith(("Observed", "Deleted"))),
                  key=len)
    assert width is not None and width >= len(longest) == len("DisruptionBudgetObserved")


def test_a_120_column_terminal_gets_the_timeline_as_a_grid() -> None:
    out = io.StringIO()
    console = Console(file=out, width=120, highlight=False, force_terminal=True,
                      color_system=None)
    RowPrinter(console, TIMELINE_COLUMNS).row(
        "3", "2026-11-30 05:00:00.000", "pdb", "DisruptionBudgetObserved", "default/web",
        "minAvailable 2")
    header, row = out.getvalue().splitlines()
    assert row.split() == ["3", "2026-11-30", "05:00:00.000", "pdb",
                           "DisruptionBudgetObserved", "default/web", "minAvailable", "2"]
    assert header.index("Summary") == row.index("minAvailable")
