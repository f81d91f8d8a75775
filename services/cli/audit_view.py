"""How replay, explain and decisions print: aligned rows (rich), JSON lines, progress, reports.

Layer: cli. Rows are printed one at a time under a header printed once, so a long replay or a
`--follow` streams instead of building one huge table. JSON output is one object per line.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table
from rich.text import Text

from services.audit import summaries, times
from services.audit.explain import Explanation
from services.audit.timeline import Entry
from services.contracts.decisions import Decision
from services.planner.rederive.verify import Divergence, Verifier

PIPE_WIDTH = 200
TIMELINE_COLUMNS = (("Seq", 7), ("Time (UTC)", 24), ("Kind", 8), ("Type", 24), ("Name", 20),
                    ("Summary", None))
"""Type holds the longest event type whole (`DisruptionBudgetObserved`); a longer name folds
within its column; with the summary's least width a grid takes 118 columns."""
DECISION_COLUMNS = (("Seq", 7), ("Time (UTC)", 24), ("Type", 12), ("Group", 26), ("Id", 10),
                    ("Summary", None))


SUMMARY_MIN_WIDTH = 30
"""The fewest columns of a terminal the last, widest cell (the summary) must get for rows to be
laid out as a grid; a narrower terminal gets one line per row, as a pipe does, which it wraps
(an 80-column one left the summary out and split times and names mid-word)."""


class RowPrinter:
    """Aligned rows with a header printed before the first one. Shapes: `columns` are
    `(title, width)` pairs; on a terminal wide enough (`SUMMARY_MIN_WIDTH`) a longer cell
    folds onto more lines and width None takes the rest of the line; elsewhere each row is one
    line, every cell whole, a column widening to its longest cell so far (the rows after a long
    group or pod name stay aligned with it, rather than each such row shifting the columns after
    it). Cells are plain text (no Rich markup)."""

    def __init__(self, console: Console, columns: Sequence[tuple[str, int | None]]) -> None:
        self.console = console
        self.columns = columns
        self.has_header = False
        self.widths = [width or 0 for _, width in columns]
        """Each column's width on one-line rows: as given, or its longest cell so far (the
        last, width None, is never padded)."""

    def row(self, *cells: str) -> None:
        """Print one row (the header first, once)."""
        if not self.has_header:
            self.has_header = True
            self._print([title for title, _ in self.columns], style="bold")
        self._print(list(cells))

    def _is_grid(self) -> bool:
        """Whether rows are laid out as a grid: on a terminal wide enough for every column."""
        fixed = sum(width or 0 for _, width in self.columns) + len(self.columns) - 1
        return self.console.is_terminal and self.console.width >= fixed + SUMMARY_MIN_WIDTH

    def _print(self, cells: list[str], style: str = "") -> None:
        if not self._is_grid():  # a file, a pipe or a narrow terminal: one line per row
            self.widths = [max(known, len(cell)) if width is not None else 0
                           for cell, known, (_, width)
                           in zip(cells, self.widths, self.columns, strict=True)]
            fixed = [cell.ljust(width) for cell, width in zip(cells, self.widths, strict=True)]
            self.console.print(Text(" ".join(fixed).rstrip()), soft_wrap=True)
            return
        grid = Table.grid(padding=(0, 1))
        for _, width in self.columns:
            if width is None:
                grid.add_column(ratio=1, overflow="fold")
            else:  # folded, not cut: a long group or pod name is still shown whole
                grid.add_column(width=width, overflow="fold")
        grid.add_row(*[Text(cell) for cell in cells], style=style)
        self.console.print(grid)


def console() -> Console:
    """The standard-output console (its file is looked up at each write, so test runners can
    capture it); `PIPE_WIDTH` columns wide when not a terminal, so files keep whole lines."""
    terminal = Console(highlight=False)
    if terminal.is_terminal:
        return terminal
    return Console(highlight=False, width=PIPE_WIDTH)


def echo_json(body: dict[str, Any]) -> None:
    """Print one JSON line."""
    click.echo(json.dumps(body, separators=(",", ":"), ensure_ascii=False))


class TimelineView:
    """Prints timeline entries as rows (`table`) or JSON lines (`json`)."""

    def __init__(self, output: str) -> None:
        self.output = output
        self.rows = RowPrinter(console(), TIMELINE_COLUMNS)

    def show(self, entries: Sequence[Entry]) -> None:
        """Print timeline entries, in the order given."""
        for entry in entries:
            if self.output == "json":
                echo_json(entry.to_json())
            else:
                self.rows.row(str(entry.seq), times.iso(entry.at_ms), entry.kind, entry.type,
                              entry.name, entry.summary)


class DecisionView:
    """Prints followed decisions as rows (`table`) or the JSON exactly as published (`json`)."""

    def __init__(self, output: str) -> None:
        self.output = output
        self.rows = RowPrinter(console(), DECISION_COLUMNS)

    def show(self, seq: int, decision: Decision | None, data: bytes) -> None:
        """Print one decision (its raw JSON when its type is unknown here)."""
        if self.output == "json" or decision is None:
            click.echo(data.decode())
            return
        self.rows.row(str(seq), times.iso(decision.at_ms), type(decision).__name__,
                      decision.group, decision.id, summaries.decision_summary(decision))


NOT_A_DECISION = "not a decision"


def skipped(seq: int, why: str, what: str = NOT_A_DECISION) -> None:
    """Say on standard error that the DECISIONS message at `seq` is no decision (`what`: not
    one at all, or `a malformed Placement`) and was left out, in one line (`why` cut to 120
    characters)."""
    _left_out(seq, f"{what} ({_shortened(why)})")


def unsigned(seq: int, why: str) -> None:
    """Say on standard error that the DECISIONS message at `seq` was left out for not being
    signed with the planner's key (`why`, as the binder dead-letters it: gangsched's words,
    never the message's, so whole), in one line."""
    _left_out(seq, f"not the planner's decision: {why}")


def _left_out(seq: int, what: str) -> None:
    click.echo(f"gangsched decisions: DECISIONS seq {seq} left out: {what}", err=True)


def _shortened(why: str) -> str:
    """`why` on one line, cut to 120 characters."""
    why = " ".join(why.split())
    return why if len(why) <= 120 else why[:117] + "..."


@contextlib.contextmanager
def progress(total: int, *, enabled: bool) -> Iterator[Callable[[int], None]]:
    """A progress bar of replayed events on standard error (only on a terminal); yields the
    function that advances it by a number of events."""
    err = Console(stderr=True)
    if not enabled or not err.is_terminal:
        yield lambda count: None
        return
    columns = (TextColumn("replaying"), BarColumn(), MofNCompleteColumn(), TextColumn("events"),
               TimeRemainingColumn())
    with Progress(*columns, console=err, transient=True) as bar:
        task = bar.add_task("replay", total=total)
        yield lambda count: bar.advance(task, count)


def verification_lines(verifier: Verifier) -> list[str]:
    """The verification report as text: the divergence with both versions, then the count."""
    divergence = verifier.divergence
    if divergence is None:
        return [verifier.summary()]
    lines = [divergence.describe()]
    for label, side in (("recorded", divergence.recorded), ("re-derived", divergence.derived)):
        if side is None:
            lines.append(f"  {label}: (none)")
        else:
            lines += [f"  {label}: {side[0]}", f"    {side[1].decode()}"]
    differing = differing_fields(divergence)
    if differing:
        lines.append(f"  fields that differ: {', '.join(differing)}")
    lines.append(f"{verifier.summary()} before the divergence")
    return lines


def verification_json(verifier: Verifier) -> dict[str, Any]:
    """The verification report as one JSON object (`kind` `verification`)."""
    body: dict[str, Any] = {"kind": "verification", "verified": verifier.decisions,
                            "plan_points": verifier.plan_points, "divergence": None}
    divergence = verifier.divergence
    if divergence is not None:
        body["divergence"] = {
            "plan_seq": divergence.plan_seq, "index": divergence.index,
            "description": divergence.describe(),
            "recorded": _side(divergence.recorded), "derived": _side(divergence.derived),
            "fields": differing_fields(divergence),
            "recorded_by": divergence.recorded_by, "replayed_by": divergence.replayed_by}
    return body


def _side(side: tuple[str, bytes] | None) -> dict[str, Any] | None:
    if side is None:
        return None
    return {"subject": side[0], "message": json.loads(side[1])}


def differing_fields(divergence: Divergence) -> list[str]:
    """Top-level JSON fields whose values differ (empty when a side is missing)."""
    if divergence.recorded is None or divergence.derived is None:
        return []
    left, right = json.loads(divergence.recorded[1]), json.loads(divergence.derived[1])
    return sorted(key for key in set(left) | set(right) if left.get(key) != right.get(key))


def explanation_json(explanation: Explanation) -> dict[str, Any]:
    """An explanation as one JSON object: title, steps (at, ref, text), status, verdict."""
    return {"title": explanation.title,
            "steps": [{"at": times.iso(s.at_ms), "at_ms": s.at_ms, "ref": s.ref, "text": s.text}
                      for s in explanation.steps],
            "status": explanation.status, "verdict": explanation.verdict}
