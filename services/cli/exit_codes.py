"""The exit status of every `gangsched` command: one scheme a script can rely on.

Layer: cli. The same four values for the services (`run`, `watcher`, `planner`, `binder`),
`migrate`, `schema`, `simulate` and the audit commands (`replay`, `explain`, `decisions`);
README.md ("Exit codes") tells them to users:

- `OK` 0: done; for `replay --verify` every decision matched, for `explain` the object is in
  the log.
- `FAILED` 1: the command could not do its work: a database, NATS or Kubernetes that is
  missing, unreachable, refusing or of another schema revision, a data directory in use, a
  service that keeps failing, output that cannot be written (a full disk; a reader gone,
  `| head`: `services.cli.output`). Also what Python gives an unexpected crash (a bug, with
  its traceback), and click's own `ClickException`.
- `USAGE` 2: the command line or an input file is wrong: an unknown option, a value out of
  range, a malformed URL or time, an invalid manifest, an unusable key or password file.
  Click's own `UsageError`. Told before anything is started, in one line prefixed with the
  command (`gangsched simulate: ...`), where status 1 is prefixed `Error: `.
- `NEGATIVE` 3: the audit ran and its answer is no: `replay --verify` found a divergence or had
  nothing to verify, `replay` has no timeline to show from `--from-seq` or `--since` (past the
  end of the log) or up to `--until` (before its first round), `explain` found no trace of the
  object, nor did `replay --pod/--podgroup` or `decisions --podgroup/--type` (without
  `--follow`). A value of its own, so that a failure to run (1) or a crash (1) never reads as a
  divergence.
"""

from __future__ import annotations

from typing import IO, Any

import click

OK = 0
FAILED = 1
USAGE = 2
NEGATIVE = 3


class Failed(click.ClickException):
    """The command could not do its work (the message says why): exit status `FAILED`."""

    exit_code = FAILED


class BadInput(click.ClickException):
    """An input the command was given cannot be used (the message says which and why), told
    in one line without click's usage text, in the form of every usage error
    (`gangsched <command>: <message>`, `services.cli.usage`): exit status `USAGE`."""

    exit_code = USAGE

    def __init__(self, message: str) -> None:
        super().__init__(message)
        context = click.get_current_context(silent=True)
        self.command = context.command_path if context is not None else "gangsched"

    def show(self, file: IO[Any] | None = None) -> None:
        """Write `<command path>: <message>` to `file` (standard error when None)."""
        click.echo(f"{self.command}: {self.message}", file=file, err=file is None)

