"""The command line of a tool that reads one kept run's gangsched database.

Layer: bench. `bench.cluster.phases` and `bench.cluster.observations` take the database of a
run kept with `--keep --work-dir W` (`W/<kind>-gangsched/gangsched-data/gangsched.db`) and print
a report of it.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
from collections.abc import Callable, Sequence


def main(prog: str, description: str, render: Callable[[str], str],
         argv: Sequence[str] | None = None) -> int:
    """Parse `argv` (one database path), print `render(path)`; 0, or 1 with one line on
    stderr when the file is not such a database (`render` raised sqlite3.Error)."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument("database", help="a kept run's gangsched-data/gangsched.db")
    args = parser.parse_args(argv)
    try:
        print(render(args.database))
    except sqlite3.Error as error:
        print(f"cannot read {args.database}: {error}", file=sys.stderr)
        return 1
    return 0
