"""The `gangsched` command's entry point (pyproject.toml's console script).

Layer: cli (top). Holds Ctrl-C and SIGTERM (`services.runtime.interrupts.hold`) before
anything else is imported, so that one while `gangsched` starts (importing its command line
takes a good part of a second) is no `KeyboardInterrupt` traceback and no death by SIGTERM's
default: a service acts on it once its shutdown handlers are installed, as on any later one
(exit status 0), and every other command gets both back as Python's as it starts
(`main._Gangsched.resolve_command`).
"""

from __future__ import annotations

from services.runtime import interrupts


def main() -> None:
    """Run the `gangsched` command line (`services.cli.main.app`), SIGINT and SIGTERM held from
    the start.

    Raises:
        SystemExit: always, with the command's exit status (`services.cli.exit_codes`).
    """
    interrupts.hold()
    from services.cli.main import app

    app()
