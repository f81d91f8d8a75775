"""Command-line options shared by the gangsched commands.

Layer: cli. Every option is a flag and a `GANGSCHED_*` environment variable (docs/deploy.md); this
module turns them into a `Settings`. It never does I/O, but for reading the one secret a
`--...-file` option names, when the options are parsed.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from services.cli import text_files
from services.config import limits, paths
from services.config.settings import (
    BinderSettings,
    BusSettings,
    KubeSettings,
    PlannerServiceSettings,
    Settings,
    StoreSettings,
    WatcherSettings,
)
from services.contracts import names
from services.kube.resources import GROUP_APIS

F = TypeVar("F", bound=Callable[..., Any])


def option(name: str, *more: str, **kwargs: Any) -> Callable[[F], F]:
    """A click option that is also the variable GANGSCHED_<NAME> (`--x/--no-x`: GANGSCHED_X,
    true or false), showing its default and variable in --help; `more` are other spellings
    (e.g. `-o`)."""
    flag = name.split("/")[0]
    envvar = "GANGSCHED_" + flag.lstrip("-").replace("-", "_").upper()
    kwargs.setdefault("show_default", True)
    kwargs.setdefault("show_envvar", True)
    return click.option(name, *more, envvar=envvar, **kwargs)


_option = option


class AnyCase(click.Choice[str]):
    """One of `choices`, given in any case (`placement`, `Placement`), converted to the choice
    as spelled there. A value that is none of them is click's usage error naming the choices
    as spelled, as --help does (click names them casefolded: `'statusupdate'`)."""

    def __init__(self, choices: tuple[str, ...] | list[str]) -> None:
        super().__init__(choices, case_sensitive=False)

    def get_invalid_choice_message(self, value: Any, ctx: click.Context | None) -> str:
        """`'x' is not one of 'A', 'B'.`, the choices as spelled."""
        return f"{value!r} is not one of {', '.join(map(repr, self.choices))}."


LOG_LEVEL = AnyCase(["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"])
"""Python logging levels, by name (in any case)."""
MAX_SECONDS = 1e9
"""The longest duration taken, in seconds (about 31 years): as milliseconds it still fits the
int64 fields of events and decisions."""


MILLISECOND = 0.001
"""The shortest duration taken but 0, in seconds: durations are kept (in events, decisions and
deadlines) as whole milliseconds, so a shorter one (`1e-300`) would silently become 0, which
means "no bound" or "at once" where 0 is taken, and a period of 1 ms where it is not."""
SHORTEST_PERIOD = 0.1
"""The shortest period, in seconds, of what a service repeats for as long as it runs: a clock
tick the watcher publishes (each one a stored message the planner plans), a leader lease
renewal (a NATS request). Shorter, the service floods NATS; NATS itself keeps nothing for
less (a stream's or a lease's max age is at least 100 ms)."""
LONGEST_TICK = 60.0
"""The longest clock tick taken, in seconds: the planner's clock moves by ticks, so a group's
timeout, backoff or nomination lapses only at the next tick, and a longer one would hold every
such deadline (some of a second) for as long."""
LONGEST_LINGER = 10.0
"""The longest `--batch-linger-seconds` taken, in seconds: the planner waits up to twice the
linger with a batch it fetched, well within the 30 s NATS waits for its acknowledgement before
delivering it again (a longer linger held every partial batch unplanned that long)."""


class Seconds(click.FloatRange):
    """A duration in seconds from `least` to `most`, or 0 when `zero` says what 0 means;
    refusing `nan` and `inf` (which pass a plain `FloatRange`: every comparison with nan is
    false) and, with `zero`, a value between 0 and `least` (which would lose its meaning,
    `MILLISECOND`), with click's one-line usage error.

    Units: `least` and `most` in seconds; `zero` a phrase (`"no bound"`), or None when 0 is
    refused as any value below `least` is (click's range error); `why` (the reason no value
    between 0 and `least` is taken) is told only with `zero`."""

    name = "seconds"

    def __init__(self, least: float = MILLISECOND, most: float = MAX_SECONDS, *,
                 zero: str | None = None, why: str = "durations are whole milliseconds"
                 ) -> None:
        super().__init__(min=0 if zero else least, max=most)
        self.least, self.zero, self.why = least, zero, why

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> Any:
        """The value as a finite float in range; `self.fail` (exit 2) otherwise."""
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number of seconds.", param, ctx)
        if self.zero and 0 < number < self.least:
            self.fail(f"{number:g} is more than 0 but less than {self.least:g} s ({self.why}): "
                      f"give 0 ({self.zero}) or at least {self.least:g}", param, ctx)
        return number


PERIOD = Seconds(least=SHORTEST_PERIOD)
"""The period of something a service repeats while it runs (at least `SHORTEST_PERIOD`)."""
TICK = Seconds(least=SHORTEST_PERIOD, most=LONGEST_TICK)
"""`--tick-seconds`: a `PERIOD` of at most `LONGEST_TICK`."""
NOMINATION = Seconds(least=1.0)
"""`--nomination-seconds`: at least a second; a hold that lapses before the victims have
terminated lets the preemptor evict more gangs at each attempt (refused as click refuses a
value out of its range)."""
RETENTION = Seconds(least=SHORTEST_PERIOD, zero="unlimited",
                    why="NATS keeps a stream's messages at least 100 ms")
"""`--stream-max-age-seconds`: 0 (unlimited) or at least 100 ms; below a nanosecond NATS was
sent 0, unlimited retention."""
EVENT_LEAD = Seconds(zero="no bound")
"""`--max-event-lead-seconds` (planner, and the audit commands that replay its checks)."""


WAIT_FLOOR = "shorter is no wait worth timing"
"""Why a wait timed on the service's own clock (not kept in milliseconds) takes no less than a
millisecond but 0: the `why` of `seconds_or_zero` for those."""


def seconds_or_zero(zero: str, most: float = MAX_SECONDS, *,
                    why: str = "durations are whole milliseconds") -> Seconds:
    """A duration in seconds that may be 0, meaning `zero` (a phrase: `"no backoff"`), else
    from a millisecond to `most`; `why` says why not less (shown when refused)."""
    return Seconds(most=most, zero=zero, why=why)


def stack(*decorators: Callable[[F], F]) -> Callable[[F], F]:
    """One decorator applying `decorators` in the order written (the first is outermost)."""
    def apply(function: F) -> F:
        for decorator in reversed(decorators):
            function = decorator(function)
        return function

    return apply


class NonEmptyPath(click.Path):
    """A file or directory path (`click.Path`, converted to a `Path`) that refuses an empty
    value: `Path("")` is the current directory, so `--data-dir ''` would fill it with
    gangsched's files and `--out ''` write there. Every path option and the GANGSCHED_*
    variable feeding it uses it (click takes an empty variable for an unset one)."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("path_type", Path)
        super().__init__(**kwargs)

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> Any:
        """The value as a `Path`; `self.fail` (exit 2) for an empty one."""
        if isinstance(value, str | bytes) and not value:
            self.fail("an empty path names no file or directory (it would be the current "
                      "directory): give a path", param, ctx)
        return super().convert(value, param, ctx)


PATH = NonEmptyPath()
"""A path option's type (`NonEmptyPath`)."""


class Host(click.ParamType):  # type: ignore[type-arg]
    """`--http-host`: an address or host name to listen on, not blank (an empty host listens
    on every interface, which `0.0.0.0` or `::` must say on purpose), and one that can be a
    host (`names.is_host`: `a..b` cannot)."""

    name = "host"

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> str:
        """The host; `self.fail` (exit 2) for a blank one or one that cannot be a host."""
        text = str(value)
        if not text.strip():
            self.fail("an empty host would listen on every interface: give an address "
                      "(127.0.0.1, or 0.0.0.0 for all on purpose)", param, ctx)
        if not names.is_host(text):
            self.fail(f"{text!r} is not a host name or IP address", param, ctx)
        return text


HOST = Host()


local_options = stack(
    _option("--data-dir", type=PATH, default=Path(".gangsched"),
            help="Directory of the SQLite database, `run`'s embedded NATS store, and "
                 "run.json (what the gangsched there serves, read by `decisions`, `replay`, "
                 "`explain`): written once ready by `run`, or by a service run apart where "
                 "no other live gangsched keeps one."),
    _option("--log-level", default="INFO", type=LOG_LEVEL, help="Python logging level."),
)
"""What every command working on a local data directory takes (e.g. `migrate`)."""


class NamespaceName(click.ParamType):  # type: ignore[type-arg]
    """A namespace name: a DNS-1123 label (lowercase letters, digits and `-`, starting and
    ending with a letter or digit, at most 63 characters), as the API server validates it."""

    name = "namespace"

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> str:
        text = str(value)
        if not names.is_dns_label(text):
            self.fail(f"{text!r} is not a namespace name: lowercase letters, digits and -, "
                      "starting and ending with a letter or digit, at most 63 characters",
                      param, ctx)
        return text


class SchedulerName(click.ParamType):  # type: ignore[type-arg]
    """`--scheduler-name` of the audit commands: any text but the empty (the API server takes
    any `spec.schedulerName`, and an empty one means the default scheduler), so that a log
    an earlier gangsched wrote for any name can be replayed."""

    name = "name"

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> str:
        text = str(value)
        if not text.strip():
            self.fail("an empty scheduler name is the default scheduler's, not gangsched's",
                      param, ctx)
        return text


class ServedSchedulerName(SchedulerName):
    """`--scheduler-name` of the services and `simulate`: a qualified name (`[prefix/]name`,
    `names.is_label_name`). The API server takes any `spec.schedulerName`, but refuses any
    other as the `reportingController` of the events the binder records under it (as
    kube-scheduler names its profile), so not one event would tell users why a pod waits. The
    binder's Lease asks more of it (a DNS-1123 subdomain), while it holds one (`lease_name`)."""

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> str:
        """The name; `self.fail` (exit 2) for an empty one, or one no event can carry."""
        text = super().convert(value, param, ctx)
        if not names.is_label_name(text):
            self.fail(f"{text!r} cannot name gangsched in the events it records (the API "
                      "server takes only a qualified name: [prefix/]name, a name of at most 63 "
                      "letters, digits, -, _ and . starting and ending with a letter or digit, "
                      "a prefix a DNS subdomain)", param, ctx)
        return text


class LabelKey(click.ParamType):  # type: ignore[type-arg]
    """A node label key (`--topology-key`): a qualified name, `[prefix/]name`, as the API
    server validates label keys (`names.is_label_name`); no node carries any other, so a
    mistyped key would silently turn topology preference off."""

    name = "label"

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> str:
        """The key; `self.fail` (exit 2) for one no label can have."""
        text = str(value)
        if not names.is_label_name(text):
            self.fail(f"{text!r} is not a label key: [prefix/]name, a name of at most 63 "
                      "letters, digits, -, _ and . starting and ending with a letter or "
                      "digit, a prefix a DNS subdomain (e.g. topology.kubernetes.io/zone)",
                      param, ctx)
        return text


NAMESPACE_NAME = NamespaceName()
SCHEDULER_NAME = SchedulerName()
SERVED_SCHEDULER_NAME = ServedSchedulerName()
LABEL_KEY = LabelKey()


common_options = stack(
    local_options,
    _option("--scheduler-name", default="gangsched", type=SERVED_SCHEDULER_NAME,
            help="spec.schedulerName of the pods gangsched schedules."),
    _option("--http-host", default="127.0.0.1", type=HOST,
            help="Address of /healthz, /readyz, /metrics."),
    _option("--http-port", type=click.IntRange(-1, 65535), default=0,
            help="Port of /healthz, /readyz, /metrics (0 = a free port, -1 = disabled)."),
)
"""What every service command takes."""

SMALL_FILE_BYTES = 1 << 20
"""The most a secret or credentials file may hold (1 MiB; theirs are a few hundred bytes)."""


def _small_text(given: str, path: Path, kind: click.ParamType[Any], param: click.Parameter | None,
                ctx: click.Context | None) -> str:
    """The text of the secret or credentials file `path` (named `given` on the command line),
    or a usage error in one line: unreadable, not UTF-8, or no file to read a secret from (a
    device such as /dev/zero, which never ends; `text_files`)."""
    try:
        return text_files.read_text(path, SMALL_FILE_BYTES)
    except text_files.TextFileRefused as error:
        kind.fail(f"cannot read {given!r}: {error}", param, ctx)
    except (OSError, UnicodeDecodeError) as error:
        reason = error.strerror if isinstance(error, OSError) else "not text"
        kind.fail(f"cannot read {given!r}: {reason}", param, ctx)


class SecretFile(click.ParamType):  # type: ignore[type-arg]
    """A file holding one secret (a password): converts to its content, one trailing newline
    dropped (as `echo` or a Kubernetes Secret volume leave it)."""

    name = "file"

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> str:
        if not str(value):
            self.fail("an empty path names no file: give the file holding the secret",
                      param, ctx)
        text = _small_text(str(value), Path(str(value)).expanduser(), self, param, ctx)
        secret = text.removesuffix("\n").removesuffix("\r")
        if not secret:
            self.fail(f"{str(value)!r} is empty", param, ctx)
        return secret


class CredsFile(click.ParamType):  # type: ignore[type-arg]
    """A NATS credentials file (`nsc generate creds`: a user JWT and its NKey seed, each
    between its `-----BEGIN ...-----` lines): converts to its path once it is readable and
    holds both, so a wrong path fails here in one line, not at the first connection."""

    name = "file"
    MARKERS = ("BEGIN NATS USER JWT", "BEGIN USER NKEY SEED")

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> Path:
        if not str(value):
            self.fail("an empty path names no file: give the credentials file", param, ctx)
        path = Path(str(value)).expanduser()
        try:
            text_files.require_regular(path, "NATS reads it again at every connection")
        except text_files.TextFileRefused as error:
            self.fail(f"cannot use {str(value)!r}: {error}", param, ctx)
        text = _small_text(str(value), path, self, param, ctx)
        missing = [marker for marker in self.MARKERS if marker not in text]
        if missing:
            self.fail(f"{str(value)!r} is no NATS credentials file (no {missing[0]!r} block)",
                      param, ctx)
        return path


def _warn_on_command_line(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """Warn that a secret given as a flag is visible to every local user (`ps`)."""
    source = ctx.get_parameter_source(str(param.name))
    if value is not None and source is click.core.ParameterSource.COMMANDLINE:
        click.echo("warning: --nats-password on the command line is deprecated: every user of "
                   "this machine can read it in the process list; use --nats-password-file "
                   "or GANGSCHED_NATS_PASSWORD", err=True)
    return value


nats_auth_options = stack(
    _option("--nats-user", default=None, help="NATS user name."),
    _option("--nats-password", default=None, callback=_warn_on_command_line,
            help="NATS password. Deprecated as a flag (the process list shows it): set the "
                 "variable, or use --nats-password-file."),
    _option("--nats-password-file", type=SecretFile(), default=None,
            help="File holding the NATS password (e.g. a mounted Secret)."),
    _option("--nats-creds", type=CredsFile(), default=None,
            help="NATS credentials file (JWT + nkey)."),
)
"""How a command authenticates to NATS (the services, and the audit commands)."""


def group_apis(text: str) -> tuple[str, ...]:
    """`--group-apis` as API groups, in GROUP_APIS order, each once.

    Raises:
        click.BadParameter: an unknown API group, or none at all.
    """
    given = {part.strip() for part in text.split(",") if part.strip()}
    unknown = sorted(given - set(GROUP_APIS))
    if unknown or not given:
        what = f"unknown PodGroup API group(s) {unknown}" if unknown else "no PodGroup API group"
        raise click.BadParameter(f"{what}; choose from {', '.join(GROUP_APIS)}",
                                 param_hint="--group-apis")
    return tuple(api for api in GROUP_APIS if api in given)


def nats_password(options: dict[str, Any]) -> str | None:
    """The NATS password of the parsed options, from --nats-password or --nats-password-file.

    Raises:
        click.UsageError: both are given.
    """
    given, from_file = options.get("nats_password"), options.get("nats_password_file")
    if given is not None and from_file is not None:
        raise click.UsageError("give --nats-password or --nats-password-file, not both")
    password = given if given is not None else from_file
    return str(password) if password else None


class NatsUrl(click.ParamType):  # type: ignore[type-arg]
    """`--nats`: one or more comma-separated NATS server URLs, checked when parsed
    (`run_info.nats_problem`: a lowercase scheme nats-py speaks, a host, a valid port; nothing
    nats-py refuses or reads as another server), so that a malformed value is a usage line at
    once, not a wait for a server that is not there."""

    name = "url"

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> str:
        from services.cli.run_info import nats_problem

        text = str(value)
        why = nats_problem(text) if text else None
        if why is not None:
            self.fail(f"not a NATS URL: {why}", param, ctx)
        return text


NATS_URL = NatsUrl()


class Prefix(click.ParamType):  # type: ignore[type-arg]
    """`--prefix`: the first tokens of every subject and the start of every stream name:
    dot-separated tokens of letters, digits, `_` and `-` (`subjects.PREFIX_PATTERN`). NATS
    takes no empty token, whitespace, `*` or `>` in a subject; the rest is kept out as well, so
    that two prefixes whose stream names map to the same one differ visibly (`team.a` and
    `team_a` still do: `streams.collided` refuses the second)."""

    name = "prefix"

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> str:
        from services.contracts.subjects import MAX_PREFIX_LENGTH, PREFIX_PATTERN

        text = str(value)
        if len(text) > MAX_PREFIX_LENGTH:
            self.fail(f"a prefix of {len(text)} characters is too long: NATS names a stream at "
                      f"most 255, so at most {MAX_PREFIX_LENGTH} (<PREFIX>_DEADLETTER)",
                      param, ctx)
        if not PREFIX_PATTERN.fullmatch(text):
            self.fail(f"{text!r} is not a prefix: dot-separated tokens of letters, digits, "
                      "_ and - (e.g. gangsched or prod.gangsched)", param, ctx)
        return text


PREFIX = Prefix()

bus_options = stack(
    _option("--nats", default=None, type=NATS_URL,
            help="NATS URL(s), comma-separated: nats://, tls://, ws:// or wss:// (a bare "
                 "host or host:port is nats://). Required by watcher, planner and binder; "
                 "unset, `run` starts an embedded nats-server."),
    _option("--prefix", default="gangsched", type=PREFIX,
            help="Subject and stream prefix, so several clusters can share one NATS: "
                 "dot-separated tokens of letters, digits, _ and -."),
    _option("--stream-replicas", type=click.Choice(["1", "3", "5"]), default="1",
            callback=lambda _ctx, _param, value: None if value is None else int(value),
            help="JetStream stream replicas (an odd number, as the servers of a NATS "
                 "cluster)."),
    _option("--stream-max-age-seconds", type=RETENTION, default=7 * 24 * 3600.0,
            help="Retention of the EVENTS and DECISIONS streams, in seconds (0 = unlimited)."),
    _option("--stream-shorten-retention", is_flag=True, default=False,
            help="Let this start shorten the retention of streams that hold messages, "
                 "deleting those older than --stream-max-age-seconds (refused otherwise)."),
    nats_auth_options,
)

SQLITE_SUFFIXES = (".db", ".sqlite", ".sqlite3")
"""File name endings `--db` takes as a new SQLite database file."""


class DatabaseUrl(click.ParamType):  # type: ignore[type-arg]
    """A database URL for `--db`, checked when parsed: SQLite or PostgreSQL (any driver
    spelling), or a plain file path, taken as a SQLite database file.

    A path counts as one only when it names an existing file or ends in `.db`, `.sqlite` or
    `.sqlite3`, so a mistyped URL (`--db "postgres//host"`, `--db "not a url"`) is refused
    instead of silently becoming a new SQLite file of that name.
    """

    name = "url"

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> str:
        from sqlalchemy.exc import ArgumentError

        from services.store import urls
        from services.store.engines import async_url

        text = str(value)
        if "://" not in text:  # a path: the SQLite database file
            path = Path(text).expanduser()
            if "?" in text or "%" in text:
                self.fail(f"{value!r}: a SQLite file path with '?' or '%' would be read as a "
                          "URL query or escape; rename the file or give the URL "
                          "sqlite+aiosqlite:///path/file.db with them %-escaped", param, ctx)
            if not path.is_file() and path.suffix not in SQLITE_SUFFIXES:
                self.fail(f"{value!r} is neither a database URL nor a SQLite file (an existing "
                          "file or a path ending in .db, .sqlite or .sqlite3); give "
                          "sqlite+aiosqlite:///path/file.db or "
                          "postgresql+asyncpg://user@host/db", param, ctx)
            text = f"sqlite+aiosqlite:///{paths.resolved(Path(text).expanduser())}"
        try:
            async_url(text)
        except (ValueError, ArgumentError) as error:
            # the parser quotes what follows a password's unescaped '@' (up to the real '@host')
            why = (str(error) if "@" not in str(error) else
                   "its host, port or database cannot be read: %-escape an '@', ':' or '/' in "
                   "the password")
            self.fail(f"{urls.shown(str(value))!r} is not a database URL gangsched can use "
                      f"({why}); give sqlite+aiosqlite:///path/file.db, "
                      "postgresql+asyncpg://user@host/db or a file path", param, ctx)
        if urls.in_memory_sqlite(text):
            self.fail(f"{str(value)!r} is an in-memory SQLite database, which keeps nothing "
                      "once its connection closes: give a file, "
                      "sqlite+aiosqlite:///path/file.db", param, ctx)
        return text


DATABASE_URL = DatabaseUrl()

store_options = _option(
    "--db", default=None, type=DATABASE_URL,
    help="Database URL (sqlite+aiosqlite:///file.db or postgresql+asyncpg://...) or a SQLite "
         "file path. Unset: SQLite in the data directory.",
)

kube_options = stack(
    _option("--kubeconfig", type=PATH, default=None,
            help="Kubeconfig file. Unset: in-cluster credentials, else the files of "
                 "$KUBECONFIG (colon-separated, as kubectl reads them), else ~/.kube/config."),
    _option("--context", default=None, help="Kubeconfig context."),
)

watcher_options = stack(
    _option("--tick-seconds", type=TICK, default=1.0,
            help="Seconds between ClockTicked events, from 0.1 (each tick is a message the "
                 "planner plans) to 60 (timeouts and backoffs lapse at the next tick)."),
    _option("--group-apis", default="scheduling.x-k8s.io",
            help="PodGroup API groups read, comma-separated: scheduling.x-k8s.io "
                 "(Coscheduling's PodGroup CRD) and/or scheduling.k8s.io (the native "
                 "v1alpha2 PodGroup, pods' spec.schedulingGroup)."),
)

placement_options = stack(
    _option("--default-timeout-seconds", type=click.IntRange(min=1, max=int(MAX_SECONDS)),
            default=60,
            help="scheduleTimeoutSeconds for PodGroups that set none, in seconds."),
    _option("--backoff-initial-seconds", type=seconds_or_zero("no backoff"), default=1.0,
            help="First backoff of a rolled-back group, and first wait between the early "
                 "retries of an unschedulable one (0: every group tried every round), in "
                 "seconds."),
    _option("--backoff-max-seconds", type=seconds_or_zero("no backoff"), default=60.0,
            help="Backoff cap of a rolled-back group, in seconds (early retries of an "
                 "unschedulable group wait at most 10 s, or this if less)."),
    _option("--starvation-seconds", type=seconds_or_zero("at once"), default=300.0,
            help="Wait after which a gang reserves the capacity it needs, in seconds."),
    _option("--scoring", type=click.Choice(["least-allocated", "most-allocated"]),
            default="least-allocated", help="Node scoring strategy."),
    _option("--prefer-topology/--no-prefer-topology", default=False,
            help="Prefer placing a gang under one value of --topology-key."),
    _option("--topology-key", default="topology.kubernetes.io/zone", type=LABEL_KEY,
            help="Node label used for gang locality."),
    _option("--search-budget-steps",
            type=click.IntRange(min=0, max=limits.MAX_SEARCH_BUDGET_STEPS), default=1000,
            help="Most steps (a member tried on a node) of one whole-gang search, run when "
                 "placing a mixed gang member by member fails; 0 turns the search off. At "
                 f"most {limits.MAX_SEARCH_BUDGET_STEPS:,}: the search holds the planner "
                 "(about 0.4 ms a step at 5,000 nodes)."),
    _option("--max-placements-in-flight",
            type=click.IntRange(min=0, max=limits.MAX_ACK_PENDING), default=512,
            help="Most placements awaiting their outcome from the binders; at the limit no "
                 "gang is placed until one settles (0 = no limit). At most "
                 f"{limits.MAX_ACK_PENDING:,}, the most NATS delivers to the binders "
                 "unacknowledged."),
    _option("--max-members-in-flight",
            type=click.IntRange(min=0, max=limits.MAX_MEMBERS_IN_FLIGHT), default=4096,
            help="Most members (pods) of the placements awaiting their outcome, together; at "
                 "the limit no gang is placed until one settles (0 = no limit; a gang is "
                 "always placed when nothing is in flight). Twice the 2,048 members one "
                 "binder binds at once."),
    _option("--preemption/--no-preemption", default=True,
            help="Let a gang that cannot be placed evict whole gangs of lower priority so "
                 "that it fits (never when it would not fit even then)."),
    _option("--preempt-other-schedulers/--no-preempt-other-schedulers", default=False,
            help="Let preemption evict pods bound by other schedulers too (default: only "
                 "gangsched's own pods)."),
    _option("--nomination-seconds", type=NOMINATION, default=120.0,
            help="How long a preemptor's nominated nodes stay held for it while its victims "
                 "terminate, in seconds (at least 1); then it may preempt again."),
)
"""How the planner places (its `PlannerConfig`): also what `replay` and `simulate` take, since a
replay must plan with the live run's settings."""

planner_options = stack(
    placement_options,
    _option("--batch-size", type=click.IntRange(min=1, max=limits.MAX_ACK_PENDING),
            default=512,
            help=f"Events fetched per planning batch; at most {limits.MAX_ACK_PENDING:,}, the "
                 "most NATS delivers to the planner unacknowledged."),
    _option("--leader-election/--no-leader-election", default=False,
            help="Planner: serve only while holding the leader lease (NATS KV), so several "
                 "planners can run with one active."),
    _option("--leader-lease-seconds", type=PERIOD, default=10.0,
            help="Leader lease TTL, in seconds (at least 0.1, the least NATS keeps): a "
                 "standby takes over this long after the leader's last renewal."),
    _option("--leader-retry-seconds", type=PERIOD, default=1.0,
            help="Seconds between lease renewals (leader) and take-over attempts (standbys); "
                 "at least 0.1 (each is a NATS request) and shorter than two thirds of the "
                 "lease."),
    _option("--snapshot-interval-seconds",
            type=seconds_or_zero("every batch", why=WAIT_FLOOR), default=30.0,
            help="Planner: write the state snapshot at most this often, in seconds (0 = every "
                 "batch); a restart re-plans the batches committed after it."),
    _option("--batch-linger-seconds",
            type=seconds_or_zero("plan at once", LONGEST_LINGER, why=WAIT_FLOOR), default=0.05,
            help="Planner: after a fetch that did not fill a batch, wait this long for more "
                 "events before planning, in seconds (0 = plan at once): a burst is planned "
                 "once, not once per few pods. At most 10: the batch waits for its "
                 "acknowledgement meanwhile."),
    _option("--snapshot-interval-events",
            type=click.IntRange(min=0, max=limits.MAX_SNAPSHOT_INTERVAL_EVENTS),
            default=50_000,
            help="Planner: also write the snapshot once this many events were applied since "
                 "the last one (0 = no bound); at most "
                 f"{limits.MAX_SNAPSHOT_INTERVAL_EVENTS:,}, which a restart re-plans in "
                 "minutes."),
    _option("--max-event-lead-seconds", type=EVENT_LEAD, default=60.0,
            help="Planner: dead-letter a watcher event (observation or clock tick) whose "
                 "at_ms is more than this many seconds ahead of the time NATS stored it "
                 "(0 = no bound)."),
)

binder_options = stack(
    _option("--bind-concurrency", type=click.IntRange(min=1, max=limits.KUBE_POOL_SIZE),
            default=16,
            help=f"Binds in flight per placement; at most {limits.KUBE_POOL_SIZE}, the "
                 "connections of the binder's Kubernetes client."),
    _option("--rollback-bare-pods/--no-rollback-bare-pods", default=False,
            help="Also delete bound members without a controller owner on rollback."),
    _option("--event-interval-seconds", type=seconds_or_zero("every time", why=WAIT_FLOOR),
            default=30.0,
            help="Minimum seconds between two FailedScheduling events for one pod."),
    _option("--scheduler-lease/--no-scheduler-lease", default=True,
            help="Binder: bind only while holding the Lease named after --scheduler-name (as "
                 "kube-scheduler's --leader-elect), so a second installation serving the same "
                 "name stands by instead of binding the same pods."),
    _option("--scheduler-lease-namespace", type=NAMESPACE_NAME, default="kube-system",
            help="Binder: namespace of that Lease."),
)

decision_key_options = _option(
    "--decision-key-file", type=PATH, default=None,
    help="Planner and binder: file holding the shared key (at least 32 bytes, e.g. `openssl "
         "rand -hex 32`) the planner signs decisions with and the binder checks them with. "
         "Unset, `run` keeps one in <data-dir>/decision.key (made on first start, mode 0600).")


def lease_name(settings: Settings, services: tuple[str, ...]) -> None:
    """Check that the scheduler name can name the binder's Lease, when `services` include the
    binder and it holds the Lease (`--scheduler-lease`).

    Raises:
        click.UsageError: the name is no DNS-1123 subdomain (the API server takes any
            `spec.schedulerName`, but names a Lease only so).
    """
    name = settings.scheduler_name
    if "binder" in services and settings.binder.scheduler_lease \
            and not names.is_dns_subdomain(name):
        raise click.UsageError(
            f"--scheduler-name {name!r} cannot name the binder's Lease (a DNS-1123 subdomain: "
            "lowercase letters, digits, - and ., at most 253 characters): choose such a name, "
            "or run without the Lease (--no-scheduler-lease)")


def leader_timing(lease_seconds: float, retry_seconds: float) -> None:
    """Refuse leader-election timing the planner could not keep (`election.Timing`).

    Raises:
        click.UsageError: the retry is not shorter than two thirds of the lease.
    """
    from services.runtime.election import Timing

    try:
        Timing(lease_seconds=lease_seconds, retry_seconds=retry_seconds)
    except ValueError:
        raise click.UsageError(
            f"--leader-retry-seconds ({retry_seconds:g}) must be shorter than two thirds of "
            f"--leader-lease-seconds ({lease_seconds:g}): the leader renews its lease every "
            "retry and gives it up after two thirds of it without a renewal") from None


def settings_from(options: dict[str, Any]) -> Settings:
    """Build `Settings` from the parsed options of a command (absent options keep defaults).

    Raises:
        click.UsageError: `--leader-election` with a retry not shorter than two thirds of the
            lease (`election.Timing`): the leader could never renew in time.
    """
    def get(name: str, default: Any) -> Any:
        value = options.get(name)
        return default if value is None else value

    if get("leader_election", False):
        leader_timing(get("leader_lease_seconds", 10.0), get("leader_retry_seconds", 1.0))

    defaults = Settings()
    return Settings(
        data_dir=get("data_dir", defaults.data_dir),
        scheduler_name=get("scheduler_name", defaults.scheduler_name),
        http_host=get("http_host", defaults.http_host),
        http_port=get("http_port", defaults.http_port),
        log_level=get("log_level", defaults.log_level),
        bus=BusSettings(
            url=options.get("nats"),
            prefix=get("prefix", "gangsched"),
            replicas=get("stream_replicas", 1),
            max_age_seconds=get("stream_max_age_seconds", BusSettings.max_age_seconds),
            shorten_retention=bool(get("stream_shorten_retention", False)),
            user=options.get("nats_user"),
            password=nats_password(options),
            creds_file=options.get("nats_creds"),
        ),
        store=StoreSettings(url=options.get("db")),
        kube=KubeSettings(kubeconfig=options.get("kubeconfig"), context=options.get("context")),
        watcher=WatcherSettings(tick_seconds=get("tick_seconds", 1.0),
                                group_apis=group_apis(get("group_apis", "scheduling.x-k8s.io"))),
        planner=PlannerServiceSettings(
            batch_size=get("batch_size", 512),
            batch_linger_seconds=get("batch_linger_seconds", 0.05),
            leader_election=get("leader_election", False),
            leader_lease_seconds=get("leader_lease_seconds", 10.0),
            leader_retry_seconds=get("leader_retry_seconds", 1.0),
            snapshot_interval_seconds=get("snapshot_interval_seconds", 30.0),
            snapshot_interval_events=get("snapshot_interval_events", 50_000),
            max_event_lead_seconds=get("max_event_lead_seconds", 60.0),
        ),
        binder=BinderSettings(
            concurrency=get("bind_concurrency", 16),
            rollback_bare_pods=get("rollback_bare_pods", False),
            event_interval_seconds=get("event_interval_seconds", 30.0),
            scheduler_lease=get("scheduler_lease", True),
            scheduler_lease_namespace=get("scheduler_lease_namespace", "kube-system"),
        ),
        decision_key_file=options.get("decision_key_file"),
    )
