"""The `gangsched` command: run, watcher, planner, binder, migrate, replay, explain, decisions,
simulate, schema, version.

Layer: cli (top). Parses options (every option is a flag and a GANGSCHED_* variable), sets up
logging, and hands over to the services; prints clear errors instead of tracebacks for
expected failures (schema behind, NATS unreachable, bad input), with the exit status of
`exit_codes` (0 done, 1 could not do its work, 2 bad usage or input, 3 a negative verdict).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import sys
import textwrap
from collections.abc import Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from services import __version__
from services.cli import audit, exit_codes, options, output, usage
from services.planner.core.config import PlannerConfig
from services.runtime import interrupts

if TYPE_CHECKING:
    from services.cli import failed_start
    from services.config.settings import Settings

log = logging.getLogger("gangsched")

SERVICE_COMMANDS: set[str] = set()
"""The commands that run services until signalled (`run_service`; each `_service_command`): a
Ctrl-C while they start is held until their shutdown handlers are installed
(`services.runtime.interrupts`)."""


class _Gangsched(click.Group):
    """The `gangsched` group: click's, with every command run under `output.guarded` and
    every usage error told in one line (`usage.in_one_line`)."""

    def main(self, *args: Any, **kwargs: Any) -> Any:
        """Run the command line (click's `main`); standard output that cannot be written is
        one line on standard error and exit status 1 (`output.guarded`)."""
        return output.guarded(lambda: super(_Gangsched, self).main(*args, **kwargs))

    def resolve_command(self, ctx: click.Context, args: list[str],
                        ) -> tuple[str | None, click.Command | None, list[str]]:
        """The command named first in `args` (click's `resolve_command`). A command that is
        no service gets Ctrl-C back as Python's (`interrupts.release`): only a service holds
        one that came while `gangsched` started, for its shutdown handlers (`services.cli.entry`).

        Raises:
            KeyboardInterrupt: a Ctrl-C came while `gangsched` started and the command is no
                service (click then exits as on any Ctrl-C).
            click.UsageError: no such command.
        """
        name, command, rest = super().resolve_command(ctx, args)
        if name not in SERVICE_COMMANDS:
            interrupts.release()
        return name, command, rest

    def make_context(self, info_name: str | None, args: list[str],
                     parent: click.Context | None = None, **extra: Any) -> click.Context:
        """Click's context for the group's own options and command name.

        Raises:
            usage.UsageLine: a usage error of the group (`gangsched --bogus`, `gangsched x`).
        """
        with usage.in_one_line():
            return super().make_context(info_name, args, parent, **extra)

    def invoke(self, ctx: click.Context) -> Any:
        """Run the command named (click's `invoke`).

        Raises:
            usage.UsageLine: a usage error of the command, as parsed or as it runs.
        """
        with usage.in_one_line():
            try:
                return super().invoke(ctx)
            except click.UsageError as error:
                if error.ctx is None and ctx.invoked_subcommand is not None:
                    # click's parser tells an option given no value without its command
                    command = self.get_command(ctx, ctx.invoked_subcommand)
                    if command is not None:
                        error.ctx = click.Context(command, info_name=ctx.invoked_subcommand,
                                                  parent=ctx)
                raise


@click.group(name="gangsched", cls=_Gangsched,
             context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, "-V", "--version", prog_name="gangsched",
                      message="%(prog)s %(version)s")
def app() -> None:
    """gangsched: a gang (all-or-nothing) scheduler for Kubernetes."""


def _service_command(name: str, services: tuple[str, ...], help_text: str,
                     *more: Any) -> None:
    SERVICE_COMMANDS.add(name)

    @app.command(name=name, help=help_text)
    @options.common_options
    @options.bus_options
    @options.store_options
    @options.kube_options
    @options.watcher_options
    @options.planner_options
    @options.binder_options
    @options.decision_key_options
    @options.stack(*more)
    def command(**parsed: Any) -> None:
        _serve(parsed, services)

    _hide_others(command, services)


def _option_names(decorator: Any) -> set[str]:
    """The parameter names an option decorator (or stack of them) declares."""
    def probe() -> None: ...
    decorator(probe)
    return {str(param.name) for param in getattr(probe, "__click_params__", [])}


SERVICE_OPTIONS = {
    "watcher": _option_names(options.kube_options) | _option_names(options.watcher_options),
    "planner": _option_names(options.store_options) | _option_names(options.planner_options)
    | _option_names(options.decision_key_options),
    "binder": _option_names(options.kube_options) | _option_names(options.binder_options)
    | _option_names(options.decision_key_options),
}
"""The options only some services use; the common and NATS options serve all."""


def _hide_others(command: click.Command, services: tuple[str, ...]) -> None:
    """Leave out of `--help` the options of services this command does not run: they are
    still accepted, and ignored, so one set of flags or variables can start any service (the
    README's `gangsched watcher|planner|binder --nats ... --db ... --decision-key-file ...`,
    the chart's shared GANGSCHED_* variables); the help's epilog says so, naming them."""
    used = set().union(*(SERVICE_OPTIONS[service] for service in services))
    unused = [param for param in command.params if isinstance(param, click.Option)
              and param.name in set().union(*SERVICE_OPTIONS.values()) - used]
    for param in unused:
        param.hidden = True
    if unused:
        flags = ", ".join(param.opts[0] for param in unused)
        told = (f"Accepted and unused by the {' and '.join(services)}, so that one set of flags "
                f"or GANGSCHED_* variables starts any service: {flags} (see `gangsched run "
                "--help`).")
        command.epilog = "\b\n" + textwrap.fill(  # \b: click keeps the lines, flags unbroken
            told, width=96, break_on_hyphens=False, break_long_words=False)


_service_command("run", ("watcher", "planner", "binder"),
                 "Run watcher, planner and binder, each in a process of its own under this "
                 "one (embedded NATS and SQLite unless --nats / --db are given).",
                 options.option("--single-process/--no-single-process", default=False,
                                help="Run the three services in this one process instead "
                                     "(one core; for debugging and profiling)."))
_service_command("watcher", ("watcher",), "Run the watcher: list/watch the API, publish events.")
_service_command("planner", ("planner",), "Run the planner: consume events, publish decisions.")
_service_command("binder", ("binder",), "Run the binder: bind placements, report, roll back.")


PLANNER_OPTIONS = ("default_timeout_seconds", "backoff_initial_seconds", "backoff_max_seconds",
                   "starvation_seconds", "scoring", "prefer_topology", "topology_key",
                   "search_budget_steps", "max_placements_in_flight", "max_members_in_flight",
                   "preemption", "preempt_other_schedulers", "nomination_seconds")
"""The PlannerConfig fields each command running a planner takes as an option (the field
`x_y` as `--x-y`); the others (`release_grace_seconds`, `score_resources`) keep their
defaults."""
_PLANNER_OPTION = re.compile(r"\b(" + "|".join(PLANNER_OPTIONS) + r")\b")


def planner_config(parsed: dict[str, Any]) -> PlannerConfig:
    """The planner's pure configuration from parsed options (defaults where absent).

    Raises:
        click.BadParameter: PlannerConfig refuses them; its reason tells the fields that are
            options by the options' names (`--backoff-max-seconds`), any other by its own.
    """
    defaults = PlannerConfig()
    values = {name: parsed[name] for name in PLANNER_OPTIONS if parsed.get(name) is not None}
    try:
        return PlannerConfig(**{**_fields(defaults), **values,
                                "scheduler_name": parsed.get("scheduler_name") or "gangsched"})
    except ValueError as error:
        told = _PLANNER_OPTION.sub(lambda name: f"--{name[1].replace('_', '-')}", str(error))
        raise click.BadParameter(told) from None


def _fields(config: PlannerConfig) -> dict[str, Any]:
    return {name: getattr(config, name) for name in config.__struct_fields__}


audit.register(app, planner_config)


def _serve(parsed: dict[str, Any], services: tuple[str, ...]) -> None:
    """Run `services` in this process, holding the data directory (one process per data dir)
    when it keeps this process's state (embedded NATS store, default SQLite file).

    Usage errors (no NATS for a service run apart, no decision key, a --decision-key-file
    that holds no usable key, planner options that do not go together) are told before the
    data directory is touched: a refused start leaves no directory behind.
    """
    from services.cli import data_dir_lock, decision_keys, failed_start

    settings = options.settings_from(parsed)
    options.lease_name(settings, services)
    planner = planner_config(parsed)
    start = failed_start.StartGuard(settings.data_dir)
    if not settings.bus.url and len(services) == 1:
        raise click.UsageError(
            f"`gangsched {services[0]}` needs --nats (or GANGSCHED_NATS): the services run apart "
            "share one NATS; only `gangsched run` starts an embedded nats-server of its own")
    exclusive = data_dir_lock.holds_state(settings, services)
    run_key = decision_keys.uses_run_key(settings, services)
    try:
        decision_keys.check_given(settings, services)
        if not run_key:  # a given key file: read before the data directory is made
            settings = decision_keys.with_key(settings, services)
        _data_dir(settings, made=exclusive or run_key)
        if run_key:  # `run`'s own key, kept in the data directory (made now: unmade if empty)
            with start.removing_on_failure(exclusive=False):
                settings = decision_keys.with_key(settings, services)
    except decision_keys.NoKey as error:
        raise click.UsageError(str(error)) from None
    except decision_keys.BadKey as error:
        raise exit_codes.BadInput(str(error)) from None
    except decision_keys.KeyNotMade as error:
        raise exit_codes.Failed(str(error)) from None
    try:
        with (data_dir_lock.hold(settings.data_dir) if exclusive else contextlib.nullcontext(),
              start.removing_on_failure(exclusive=exclusive)):
            _serve_locked(settings, services, parsed, planner, start)
    except data_dir_lock.DataDirUnusable as error:
        raise exit_codes.Failed(str(error)) from None


def _data_dir(settings: Settings, *, made: bool) -> None:
    """`data_dirs.require` of the command's data directory (`made`: it keeps files there)."""
    from services.cli import data_dirs

    data_dirs.require(settings.data_dir, made=made)


def _serve_locked(settings: Settings, services: tuple[str, ...], parsed: dict[str, Any],
                  planner: PlannerConfig, start: failed_start.StartGuard) -> None:
    """`_serve` once this process holds the data directory: the services, until signalled
    (`run`: in child processes, unless --single-process), planning with `planner`; `start` is
    told whether they were ever ready (a failed start removes the data directory it made:
    `failed_start`)."""
    from services.cli import serve

    configure_logging(settings.log_level)
    if len(services) > 1 and not parsed.get("single_process"):
        from services.cli.run_processes import serve_in_processes

        main = serve_in_processes(settings, planner)
    else:
        main = serve.serve(settings, services, planner)
    try:
        run_service(main)
    finally:
        start.note_ready()
        serve.remove_run_file(settings.data_dir)


def run_service(main: Coroutine[Any, Any, None]) -> None:
    """Run `main` until it ends or SIGTERM/SIGINT arrives, with the collector paced for a
    long-running service (`runtime.collector`).

    Raises:
        exit_codes.Failed: an expected failure (schema, database, NATS unreachable or its
            streams unusable, Kubernetes, port, a child process that cannot start), with its
            one-line reason (exit status 1).
    """
    from services.bus.errors import BusMisconfigured, BusUnavailable
    from services.kube.errors import KubeError
    from services.runtime import collector
    from services.runtime.health import PortUnavailable
    from services.runtime.process_supervision import ChildFailed
    from services.store.errors import SchemaMismatch, StoreUnavailable

    collector.pace_for_service()
    try:
        asyncio.run(_until_signalled(main))
    except (SchemaMismatch, StoreUnavailable, ChildFailed) as error:
        raise exit_codes.Failed(str(error)) from None
    except BusUnavailable as error:
        raise exit_codes.Failed(f"NATS unavailable: {error}") from None
    except BusMisconfigured as error:
        raise exit_codes.Failed(f"NATS: {error}") from None
    except KubeError as error:  # said once: "no Kubernetes credentials: ...", not twice
        said = str(error)
        raise exit_codes.Failed(said if "Kubernetes" in said else f"Kubernetes: {said}") from None
    except PortUnavailable as error:
        raise exit_codes.Failed(str(error)) from None


async def _until_signalled(main: Any) -> None:
    from services.runtime.shutdown import run_until_signalled

    await run_until_signalled(main)


@app.command()
@options.store_options
@options.local_options
def migrate(**parsed: Any) -> None:
    """Create or upgrade the state store schema to this version's head.

    Unset --db: the SQLite file in the data directory, which is made if missing; refused while
    a `gangsched run` or planner uses that directory (its lock), whose database it would change
    under it. The directory of a SQLite --db must exist: none is made for it. Prints one line,
    the revision reached and the one it upgraded from (alembic's own log only with
    --log-level DEBUG).
    """
    from services.cli import data_dir_lock, databases
    from services.store import schema
    from services.store.errors import SchemaMismatch, StoreUnavailable

    settings = options.settings_from(parsed)
    configure_logging(settings.log_level)
    _data_dir(settings, made=not settings.store.url)  # the default SQLite file is kept there
    url = settings.store_url()
    try:  # the data directory is gangsched's own, made if missing; the directory of a --db not
        with (contextlib.nullcontext() if settings.store.url
              else data_dir_lock.hold(settings.data_dir)):
            before = schema.migrate_sync(url, make_directory=not settings.store.url)
    except data_dir_lock.DataDirUnusable as error:
        raise exit_codes.Failed(str(error)) from None
    except (SchemaMismatch, StoreUnavailable) as error:
        raise exit_codes.Failed(str(error)) from None
    except Exception as error:
        problem = databases.unusable(url, error, writing=True)
        if problem is None:
            raise
        raise exit_codes.Failed(f"cannot migrate the database {problem}") from None
    head = schema.head_revision()
    click.echo(f"database at head revision {head} " + (
        "(already)" if before == head else f"(upgraded from {before or 'an empty database'})"))


@app.command(name="schema")
@click.option("--out", type=options.PATH, default=Path("docs/schema"),
              show_default=True, help="Directory to write the JSON Schemas into (made if "
                                      "missing; the directory it is in must exist).")
def schema_command(out: Path) -> None:
    """Write the JSON Schemas of events, outcomes and decisions."""
    from services.contracts import schema

    why = _not_a_directory(out) or _unmade_parent(out)
    if why is not None:
        raise exit_codes.Failed(f"cannot write the schemas to {out}: {why}")
    try:
        written = schema.write_schemas(out)
    except OSError as error:
        raise exit_codes.Failed(
            f"cannot write the schemas to {out}: {error.strerror or error}") from None
    for path in written:
        click.echo(str(path))


def _not_a_directory(out: Path) -> str | None:
    """Why `out` cannot be the directory the schemas go into, being something else (a file, a
    device such as /dev/null, a link to nothing), or None: it is a directory, is missing (made
    then), or cannot be looked at (writing then says why). Making it said only `File exists`."""
    from services.cli.data_dirs import LINK_TO_NOTHING

    try:
        if out.is_dir() or not (out.exists() or out.is_symlink()):
            return None
        what = ("a file, not a directory" if out.is_file() else "not a directory"
                if out.exists() else LINK_TO_NOTHING)
    except OSError:
        return None
    return f"it is {what}; --out names the directory to write the schemas into"


def _unmade_parent(out: Path) -> str | None:
    """Why the directory `out` cannot be made without making the one it is in: as `migrate`
    makes the SQLite file of a --db but never its directory, `schema` makes the --out
    directory but never its parents (a mistyped path must not silently become a new tree of
    directories). None when its parent is a directory, or cannot be looked at (writing then
    says why)."""
    missing = out.parent
    try:
        if missing.is_dir():
            return None
        while not missing.parent.is_dir() and missing.parent != missing:
            missing = missing.parent  # name the first directory that is not there
        if missing.exists() or missing.is_symlink():
            return f"{missing} is not a directory"
    except OSError:
        return None
    return (f"directory {missing} does not exist (gangsched makes only the --out directory "
            "itself: create it first)")


@app.command()
@click.argument("files", nargs=-1, required=True, type=options.NonEmptyPath(exists=True))
@click.option("-o", "--output", type=click.Choice(["table", "json"]), default="table",
              show_default=True, help="Readable table or one JSON object.")
@options.option("--scheduler-name", default="gangsched", show_default=True,
                type=options.SERVED_SCHEDULER_NAME,
                help="spec.schedulerName of the pods gangsched schedules.")
@options.placement_options
def simulate(files: tuple[Path, ...], output: str, **parsed: Any) -> None:
    """Play manifests (Nodes, PodGroups, Pods, workloads, PriorityClasses, RuntimeClasses,
    PodDisruptionBudgets, Namespaces, storage) through the planner, with no cluster."""
    from services.cli.simulate import simulate_command

    sys.exit(simulate_command(list(files), output, planner_config(parsed)))


@app.command()
def version() -> None:
    """Print the gangsched version."""
    click.echo(f"gangsched {__version__}")


def configure_logging(level: str) -> None:
    """Log at `level` to stderr; alembic's log (per-connection chatter, "Context impl
    SQLiteImpl", and each migration run: `migrate` says in its one line what it did) only at
    DEBUG."""
    logging.basicConfig(
        level=level.upper(), stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    if level.upper() != "DEBUG":
        logging.getLogger("alembic.runtime.migration").setLevel(logging.WARNING)


if __name__ == "__main__":  # `python -m services.cli.main`: held from here (`entry` for all)
    interrupts.hold()
    app()
