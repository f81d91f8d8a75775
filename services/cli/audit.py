"""The audit commands: `gangsched replay`, `gangsched explain`, `gangsched decisions`.

Layer: cli. Parses options (each a flag and a GANGSCHED_* variable), finds the database and
NATS of a running gangsched in `<data-dir>/run.json` when no URL is given, and hands over
to `replaying`, `explaining` and `following`. Exit status (`exit_codes`): 0 success (every
decision verified); 1 the audit could not run (database or stream missing, NATS unreachable);
2 bad options; 3 a negative verdict: a divergence or nothing verified (replay --verify), an
object the log does not know (explain, replay --pod/--podgroup, decisions --podgroup/--type).
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from services.cli import data_dir_lock, data_dirs, exit_codes, log_positions, options, run_info
from services.contracts.decisions import DECISION_TYPES
from services.planner.core.config import PlannerConfig

if TYPE_CHECKING:
    from services.audit.until import Until
    from services.cli.following import Signer
    from services.cli.replaying import ReplayOutcome, ReplayRequest
    from services.config.settings import BusSettings
    from services.contracts.signing import DecisionKey

F = TypeVar("F", bound=Callable[..., Any])
ConfigFrom = Callable[[dict[str, Any]], PlannerConfig]

_option = options.option
_stack = options.stack


data_dir_option = _option(
    "--data-dir", type=options.PATH, default=Path(".gangsched"), show_default=True,
    help="Data directory of a running gangsched (`gangsched run`, or a service run apart): "
         "its run.json gives the database and NATS URLs.")
db_option = _option("--db", default=None, type=options.DATABASE_URL,
                    help="Database URL (or SQLite file path) to read. Unset: run.json's, else "
                         "<data-dir>/gangsched.db.")
scheduler_option = _option("--scheduler-name", default="gangsched", show_default=True,
                           type=options.SCHEDULER_NAME,
                           help="spec.schedulerName of the pods gangsched schedules.")
nats_options = _stack(
    _option("--nats", default=None, type=options.NATS_URL,
            help="NATS URL(s), comma-separated, as the services take them. Unset: "
                 "run.json's (the embedded server of `gangsched run`, or the NATS of a "
                 "service run apart)."),
    _option("--prefix", default=None, type=options.PREFIX,
            help="Subject and stream prefix. Unset: run.json's, else gangsched."),
    options.nats_auth_options,
)


def namespaced(text: str) -> tuple[str, str]:
    """`ns/name` → `(ns, name)`; a bare name is in namespace `default`.

    Raises:
        ValueError: `text` names no object: it is empty or blanks only, a part of it is
            (`/x`, `ns/`, `ns/ `), or it has more than one `/`.
    """
    if not text.strip():  # said in words: a usage line collapses the blanks of a value
        raise ValueError("expected <namespace>/<name>, got "
                         + ("only whitespace" if text else "an empty value"))
    namespace, slash, name = text.partition("/")
    if not slash:
        namespace, name = "default", namespace
    if not namespace.strip() or not name.strip() or "/" in name:
        raise ValueError(f"expected <namespace>/<name>, got {text!r}")
    return namespace, name


class NamespacedName(click.ParamType):  # type: ignore[type-arg]
    """The filters naming one pod or PodGroup (`replay --pod/--podgroup`, `decisions
    --podgroup`): `<namespace>/<name>`, or a bare `<name>` in `default`, converted to
    `(namespace, name)`. What names no object (`namespaced`), an empty or blank value among
    them, is a usage error naming the option (exit 2), never taken for no filter."""

    name = "namespace/name"

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> tuple[str, str]:
        """`(namespace, name)`; `self.fail` (a usage error, exit 2) for what names none."""
        if isinstance(value, tuple):  # a default, or converted already
            return value
        try:
            return namespaced(str(value))
        except ValueError as error:
            self.fail(str(error), param, ctx)


NAMESPACED_NAME = NamespacedName()

output_option = click.option("-o", "--output", type=click.Choice(["table", "json"]),
                             default="table", show_default=True,
                             help="Aligned rows, or one JSON object per line.")


def register(app: click.Group, config_from: ConfigFrom) -> None:
    """Add replay, explain and decisions to `app`; `config_from` builds the PlannerConfig
    from parsed planner options exactly as the services do (so a replay plans the same)."""
    app.add_command(replay_command(config_from))
    app.add_command(explain_command)
    app.add_command(decisions_command)


def replay_command(config_from: ConfigFrom) -> click.Command:
    """The `replay` command, planning with `config_from(parsed options)`."""

    @click.command(name="replay")
    @_option("--source", type=click.Choice(["db", "nats"]), default="db", show_default=True,
             help="db: the audit tables (authoritative, every round). nats: the EVENTS "
                  "stream, planned at the plan points of the published decisions.")
    @data_dir_option
    @db_option
    @nats_options
    @click.option("--from-seq", type=log_positions.SEQUENCE, default=None,
                  help="Show the timeline from this EVENTS sequence on (1 or more). The state "
                       "is always rebuilt from the first event (silently), so later rounds "
                       "are exact. Past the end of the log (or of --until): said in one "
                       "line, exit 3.")
    @click.option("--since", type=log_positions.UtcTime(), default=None,
                  help="Show the timeline from this UTC time on (ISO 8601); rebuilt as above. "
                       "After the log's latest event: said in one line, exit 3.")
    @click.option("--until", type=log_positions.SeqOrTime(), default=None,
                  help="Stop after this sequence (an integer, 1 or more) or before the first "
                       "round applying an event later than this time (ISO 8601).")
    @click.option("--podgroup", default=None, type=NAMESPACED_NAME,
                  help="Only show entries about PodGroup ns/name (a bare name: default/name). "
                       "None in the log: said in one line, exit 3.")
    @click.option("--pod", default=None, type=NAMESPACED_NAME,
                  help="Only show entries about pod ns/name (a bare name: default/name). None "
                       "in the log: said in one line, exit 3.")
    @output_option
    @click.option("--verify", is_flag=True,
                  help="Compare every re-derived decision with the recorded one, byte for byte; "
                       "exit 3 at the first divergence (both versions printed).")
    @click.option("--timeline/--no-timeline", "show_timeline", default=None,
                  help="Print the timeline. Default: yes, unless --verify is given.")
    @click.option("--ticks", "show_ticks", is_flag=True,
                  help="Also show the clock ticks (one a second) in the timeline.")
    @_option("--max-event-lead-seconds", type=options.EVENT_LEAD, default=60.0, show_default=True,
             help="With --source nats: the planner's bound, to re-run its check that refuses "
                  "a watcher event this many seconds ahead of the time NATS stored it.")
    @options.decision_key_options
    @scheduler_option
    @options.placement_options
    def replay(**parsed: Any) -> None:
        """Rebuild the planner state from the log and re-derive every decision.

        Plans at the recorded plan points with the same planner options as the live run
        (pass the same --scoring, --default-timeout-seconds, ... or GANGSCHED_* variables):
        a different config shows up as a divergence under --verify. Never writes to the
        database (opened read-only) or the streams (ordered consumers, nothing acked).

        Exit status: 0 done; 1 the log cannot be read; 2 bad options; 3 a divergence or
        nothing verified (--verify), or a timeline that can show nothing because --from-seq
        or --since is past the end of the log or --until before its start, or nothing in it
        is about the --pod or --podgroup (without --verify; with it, the verification
        decides).
        """
        from services.cli import replaying

        request = _replay_request(parsed, config_from(parsed))
        outcome = _run(replaying.replay(request),
                       db_url=request.db_url if request.source == "db" else None)
        _report(outcome, request, parsed["until"])

    return replay


def _replay_request(parsed: dict[str, Any], config: PlannerConfig) -> ReplayRequest:
    from services.audit.timeline import Focus, Window
    from services.audit.until import Until
    from services.cli.replaying import ReplayRequest

    if parsed["pod"] and parsed["podgroup"]:
        raise click.UsageError("give --pod or --podgroup, not both")
    until_seq = parsed["until"].seq if parsed["until"] else None
    if parsed["from_seq"] and until_seq is not None and parsed["from_seq"] > until_seq:
        raise click.UsageError(f"--from-seq {parsed['from_seq']} is after --until {until_seq}: "
                               "the timeline would show nothing")
    focus = None
    if parsed["pod"] or parsed["podgroup"]:
        kind = "pod" if parsed["pod"] else "podgroup"
        focus = Focus(kind, *(parsed["pod"] or parsed["podgroup"]))
    verify = bool(parsed["verify"])
    shown = parsed["show_timeline"]
    decision_key = _decision_key(parsed["decision_key_file"])  # a usage error goes first
    reads_elsewhere = parsed["db"] if parsed["source"] == "db" else parsed.get("nats")
    data_dirs.require(parsed["data_dir"], made=False,
                      read_unless=None if reads_elsewhere else f"--{parsed['source']}")
    bus = (_served_bus(parsed, "replay from", "Its database records every planning round: "
                       "gangsched replay --source db --data-dir {data_dir}")[0]
           if parsed["source"] == "nats" else _bus(parsed, with_url=False))
    return ReplayRequest(
        source=parsed["source"], db_url=run_info.database_url(parsed["db"], parsed["data_dir"]),
        bus=bus, config=config, window=Window(parsed["from_seq"] or 1, parsed["since"]),
        until=parsed["until"] or Until(), focus=focus, output=parsed["output"], verify=verify,
        show_timeline=(not verify) if shown is None else bool(shown),
        show_ticks=bool(parsed["show_ticks"]),
        max_event_lead_seconds=parsed["max_event_lead_seconds"],
        decision_key=decision_key)


def _decision_key(path: Path | None) -> DecisionKey | None:
    """The key of `--decision-key-file` (None when not given), checked as the binder's is."""
    from services.cli import decision_keys
    from services.config.settings import Settings

    if path is None:
        return None
    try:
        return decision_keys.with_key(Settings(decision_key_file=path), ("binder",)).decision_key
    except decision_keys.BadKey as error:
        raise click.BadParameter(str(error), param_hint="--decision-key-file") from None


def _report(outcome: ReplayOutcome, request: ReplayRequest, until: Until | None) -> None:
    """Tell what the replay found on standard error, and with --verify its report; exit 3
    for a divergence or when nothing was verified. Each finding is one line: an empty log is
    told once, not also as "nothing about the focus" and "verified 0 decisions"."""
    from services.cli import audit_view, replaying

    verifier = outcome.verifier
    if outcome.events == 0:
        empty = replaying.empty_log(request.source)
        problem = f"nothing was verified: {empty}" if request.verify else empty
    elif request.verify and verifier.plan_points == 0 and verifier.divergence is None:
        where = f"at or before --until {log_positions.shown(until)}" if until else "in the log"
        problem = f"nothing was verified: no planning round {where}"
    else:
        problem = ""
    if request.verify and request.output == "json":
        audit_view.echo_json(audit_view.verification_json(verifier))
    elif request.verify and not problem:
        for line in audit_view.verification_lines(verifier):
            click.echo(line)
    if problem:  # an audit that checked nothing must not read as a pass
        click.echo(problem, err=True)
        if request.verify or (outcome.events == 0 and _narrowed(request)):
            # a timeline asked of a pod, a group or a stretch of an empty log shows nothing,
            # as one past the end of a log that holds events (exit 3 alike)
            raise SystemExit(exit_codes.NEGATIVE)
        return
    note = replaying.left_out_note(outcome.left_out)
    if note:  # events that changed nothing, and why: an audit must not skip them unsaid
        click.echo(note, err=True)
    beyond = (replaying.past_the_end(request, outcome)
              if request.show_timeline and verifier.divergence is None else None)
    if beyond:  # a timeline asked from where the log holds nothing must not read as empty
        click.echo(beyond, err=True)
        if not request.verify:  # else the verification's verdict is the answer
            raise SystemExit(exit_codes.NEGATIVE)
    elif request.focus is not None and not outcome.shown and request.show_timeline:
        click.echo(f"nothing in the log is about {request.focus.kind} "
                   f"{request.focus.namespace}/{request.focus.name}", err=True)
        if not request.verify:  # as `explain` of an object the log does not know
            raise SystemExit(exit_codes.NEGATIVE)
    if verifier.divergence is not None:
        if request.source == "nats":
            click.echo("note: NATS holds no record of planning rounds that decided nothing, and "
                       "such a round can change the planner's bookkeeping; verify from the "
                       "database (--source db), which records every round, before calling "
                       "this a determinism bug", err=True)
        raise SystemExit(exit_codes.NEGATIVE)


def _narrowed(request: ReplayRequest) -> bool:
    """Whether the replay asked for part of the log: a pod or group (`--pod`, `--podgroup`),
    or a stretch (`--from-seq`, `--since`, `--until`)."""
    window, until = request.window, request.until
    return (request.focus is not None or window.from_seq > 1 or window.since_ms is not None
            or until.seq is not None or until.at_ms is not None)


@click.command(name="explain")
@click.argument("kind_or_name")
@click.argument("name", required=False)
@data_dir_option
@db_option
@scheduler_option
@click.option("-o", "--output", type=click.Choice(["text", "json"]), default="text",
              show_default=True, help="Human text, or one JSON object.")
def explain_command(kind_or_name: str, name: str | None, data_dir: Path, db: str | None,
                    scheduler_name: str, output: str) -> None:
    """Why a pod waits, or where and when it was placed, from the log alone.

    \b
    gangsched explain pod <namespace>/<name>
    gangsched explain podgroup <namespace>/<name>
    gangsched explain <namespace>/<pod>

    A name without a namespace is in `default`. Exit status 3 when the log holds no trace
    of the object.
    """
    from services.cli import audit_view, explaining

    aliases = {"pods": "pod", "pg": "podgroup", "pgs": "podgroup", "podgroups": "podgroup"}
    if name is None and aliases.get(kind_or_name, kind_or_name) in explaining.KINDS:
        raise click.UsageError(f"explain {kind_or_name} needs <namespace>/<name>")
    kind = kind_or_name if name is not None else "pod"
    kind = aliases.get(kind, kind)
    if kind not in explaining.KINDS:
        raise click.UsageError(f"explain pod|podgroup <namespace>/<name>, not {kind!r}")
    namespace, object_name = _namespaced(name if name is not None else kind_or_name)
    data_dirs.require(data_dir, made=False, read_unless=None if db else "--db")
    url = run_info.database_url(db, data_dir)
    explanation = _run(explaining.explain_object(url, kind, namespace, object_name,
                                                 scheduler_name), db_url=url)
    if output == "json":
        audit_view.echo_json(audit_view.explanation_json(explanation))
    else:
        for line in explanation.lines():
            click.echo(line)
    if not explanation.is_known:
        raise SystemExit(exit_codes.NEGATIVE)


@click.command(name="decisions")
@click.option("--follow", "-f", is_flag=True, help="Keep printing new decisions as they come.")
@click.option("--podgroup", default=None, type=NAMESPACED_NAME,
              help="Only the decisions of PodGroup ns/name, a bare name being default/name "
                   "(with --type Preemption: also the preemptions of other gangs that evict "
                   "its members).")
@click.option("--type", "decision_type", type=options.AnyCase(DECISION_TYPES),
              default=None, metavar=f"[{'|'.join(DECISION_TYPES)}]",
              help="Only decisions of this type, in any case (placement is Placement).")
@data_dir_option
@nats_options
@_option("--decision-key-file", type=options.PATH, default=None,
         help="The planner's decision key: decisions not signed with it are left out, each "
              "said in one line on standard error, as the binder refuses them. Unset: that of "
              "the `gangsched run` in --data-dir (its decision.key), unless --nats is given.")
@output_option
def decisions_command(follow: bool, podgroup: tuple[str, str] | None, decision_type: str | None,
                      output: str, **parsed: Any) -> None:
    """Print the published decisions (an unacknowledged ordered consumer: the binder's own
    consumer never notices), then keep following them with --follow. A message that is no
    decision, or malformed, and one not signed with the planner's key (when the key is at
    hand: --decision-key-file, or a `gangsched run`'s in --data-dir) are left out, each said
    in one line on standard error.

    Exit status 3 (without --follow) when --podgroup or --type finds no decision: said in one
    line; an empty stream without either is 0. Ctrl-C stops --follow (exit 0); without it,
    the listing cut short exits 1 (`Aborted!`).
    """
    from services.cli import following

    signer = _signer(parsed)  # a usage error goes first
    data_dirs.require(parsed["data_dir"], made=False,
                      read_unless=None if parsed.get("nats") else "--nats")
    # Ctrl-C is how --follow is stopped (exit 0); a listing it cuts short is not all there:
    # click's `Aborted!` and exit 1, as for every other one-shot command (`replay`, `explain`)
    stopping: contextlib.AbstractContextManager[None] = (
        contextlib.suppress(KeyboardInterrupt) if follow else contextlib.nullcontext())
    with stopping:
        bus, url = _served_bus(parsed, "read decisions from", "The decisions recorded there "
                               "can be read offline: gangsched replay --data-dir {data_dir}")
        gone = None if parsed.get("nats") else _run_gone(parsed["data_dir"], url)
        line = _following_line(parsed, bus, url)
        # said once following has begun (NATS reached, the stream there): a NATS that cannot
        # be reached is then told in the one line of its error
        printed = _run(following.print_decisions(
            bus, podgroup, follow=follow, output=output, gone=gone, decision_type=decision_type,
            started=(lambda: click.echo(line, err=True)) if follow else None, signer=signer))
        if not printed and not follow:
            kind = f" {decision_type}" if decision_type else ""
            about = f" of PodGroup {podgroup[0]}/{podgroup[1]}" if podgroup else ""
            click.echo(f"no{kind} decision{about} on the DECISIONS stream", err=True)
            if podgroup or decision_type:  # the answer about what was asked is no
                raise SystemExit(exit_codes.NEGATIVE)


def _signer(parsed: dict[str, Any]) -> Signer | None:
    """The key `decisions` checks signatures with: `--decision-key-file` (a usage error when
    it holds no usable key), else, reading the NATS of the run in `--data-dir` (no `--nats`),
    the run's own `decision.key` there when it can be read; else None (nothing checked)."""
    from services.cli.decision_keys import RUN_KEY_FILE
    from services.cli.following import Signer

    given = parsed["decision_key_file"]
    if given is not None:
        key = _decision_key(given)
        return None if key is None else Signer(key, str(given))
    run_key = parsed["data_dir"] / RUN_KEY_FILE
    if parsed.get("nats") or not run_key.is_file():
        return None
    try:
        key = _decision_key(run_key)
    except click.BadParameter:  # another user's, or damaged: checked by nothing, as before
        return None
    return None if key is None else Signer(key, str(run_key))


def _served_bus(parsed: dict[str, Any], purpose: str, offline: str) -> tuple[BusSettings, str]:
    """`_bus(parsed)` and its URL when it names a NATS server (given, or that of a live
    gangsched in `--data-dir`: a `gangsched run`, or a service run apart). Else exit 1
    (`exit_codes.Failed`) at once, saying why (`_no_nats`), rather than wait for a NATS that
    is not there; `offline` (its `{data_dir}` filled in) tells how to read what is recorded
    when a database is there.
    `purpose`: what the NATS was wanted for, e.g. "read decisions from"."""
    bus = _bus(parsed)
    if parsed.get("nats") and bus.url:
        return bus, bus.url
    data_dir = parsed["data_dir"]
    pid = data_dir_lock.holder(data_dir)
    if bus.url and run_info.owner_alive(data_dir) is not False and (
            pid is not None or not run_info.embedded_left_behind(data_dir)):
        return bus, bus.url
    hint = (". " + offline.format(data_dir=data_dir)
            if (data_dir / "gangsched.db").is_file() else "")
    raise exit_codes.Failed(f"no NATS to {purpose}: {_no_nats(data_dir, bus.url, pid)}{hint}")


def _no_nats(data_dir: Path, url: str | None, pid: str | None) -> str:
    """Why the data directory names no NATS to read, `url` being what its run.json names and
    `pid` the holder of its lock: the gangsched that wrote run.json died without removing it
    (killed?), run.json is no file, the gangsched holding the directory is still starting
    (it writes run.json once every service it runs is ready), the directory holds no
    gangsched data at all, or no gangsched runs there."""
    run_file = data_dir / run_info.RUN_FILE
    if url and run_info.owner_alive(data_dir) is False:
        elsewhere = ("" if run_info.embedded_left_behind(data_dir)
                     else f"; if its NATS at {url} still serves, give --nats {url}")
        return (f"the gangsched that wrote {run_file} (pid {run_info.owner(data_dir)}) is no "
                f"longer running (it stopped without removing it: killed?){elsewhere}")
    if url:  # the credentials of an embedded NATS: only `gangsched run` writes them
        return (f"the `gangsched run` in {data_dir} is no longer running (it stopped without "
                "removing its run.json: killed?)")
    if run_file.is_dir():
        return (f"{run_file} is a directory, not a file: a gangsched serving {data_dir} "
                "writes its run.json there, naming its NATS; move that directory away, or "
                "give --nats")
    if pid is not None:
        return (f"the gangsched in {data_dir} (pid {pid}) is not ready yet: it writes "
                "run.json, naming its NATS, once every service it runs is ready; try again "
                "shortly")
    if not run_info.holds_data(data_dir):
        return (f"{data_dir} holds no gangsched data (no run.json, database or lock): no "
                "gangsched runs there; give its --data-dir, or --nats")
    return (f"no --nats given and no running gangsched in {data_dir} (the run.json of one "
            "names its NATS)")


def _following_line(parsed: dict[str, Any], bus: BusSettings, url: str) -> str:
    """The one line `decisions --follow` tells once it follows: what it follows, where."""
    from services.bus import urls

    whose = ("" if parsed.get("nats")
             else f" of the gangsched in {parsed['data_dir']}")
    return (f"following the decisions{whose} on {urls.shown(url)} (prefix {bus.prefix}): "
            "those stored, then each new one as it comes; Ctrl-C to stop")


def _run_gone(data_dir: Path, url: str) -> Callable[[], str | None]:
    """Why the gangsched in `data_dir`, whose NATS is `url` (a `gangsched run`'s embedded
    one, or the one a service run apart uses), no longer serves it (run.json gone, or naming
    another server: a restart on a new port), or None."""
    from services.bus import urls

    def check() -> str | None:
        if run_info.nats_url(None, data_dir) == url:
            return None
        return (f"the gangsched in {data_dir} stopped or restarted (its run.json no longer "
                f"names {urls.shown(url)}): run the command again to follow it")
    return check


def _namespaced(text: str) -> tuple[str, str]:
    """`namespaced(text)` for an argument of `explain`.

    Raises:
        click.BadParameter: `text` names no object (a usage error, exit 2).
    """
    try:
        return namespaced(text)
    except ValueError as error:
        raise click.BadParameter(str(error)) from None


def _bus(parsed: dict[str, Any], *, with_url: bool = True) -> BusSettings:
    """The NATS settings of an audit command: the options given, else run.json's (its embedded
    server's URL and credentials, and prefix); `with_url` False: no URL is looked up (a
    database replay reads no NATS, only the prefix its verifier checks subjects against).

    Raises:
        run_info.Damaged: run.json's `nats` or `prefix`, looked up, is unusable.
    """
    from services.config.settings import BusSettings

    data_dir = parsed["data_dir"]
    user, password = parsed.get("nats_user"), options.nats_password(parsed)
    creds = parsed.get("nats_creds")
    embedded = run_info.nats_credentials(parsed.get("nats"), data_dir)
    if embedded is not None and not (user or password or creds):
        user, password = embedded  # the embedded server of `gangsched run` in data_dir
    url = run_info.nats_url(parsed.get("nats"), data_dir) if with_url else None
    return BusSettings(url=url,
                       prefix=run_info.prefix(parsed.get("prefix"), data_dir),
                       user=user, password=password, creds_file=creds)


def _run(main: Any, db_url: str | None = None) -> Any:
    """Run a coroutine; turn the expected failures into `exit_codes.Failed` (exit status 1) with a
    clear message (naming `db_url`, the database it reads, when that is the failure)."""
    with _failures(db_url):
        return asyncio.run(main)


@contextlib.contextmanager
def _failures(db_url: str | None) -> Iterator[None]:
    from services.bus.errors import BusRefused, BusUnavailable, JetStreamUnavailable, NotFound
    from services.contracts.codec import PoisonedMessage
    from services.planner.rederive.replay import ReplayFailed
    from services.store.audit import AuditUnavailable, DamagedRow
    from services.store.errors import SchemaMismatch

    try:
        yield
    except (AuditUnavailable, SchemaMismatch, ReplayFailed, PoisonedMessage) as error:
        raise exit_codes.Failed(str(error)) from None
    except DamagedRow as error:
        raise exit_codes.Failed(_damaged_database(error, db_url)) from None
    except NotFound as error:
        raise exit_codes.Failed(f"stream not found (wrong --prefix?): {error}") from None
    except JetStreamUnavailable as error:  # the server is there: its JetStream is not
        raise exit_codes.Failed(error.problem) from None
    except BusUnavailable as error:
        raise exit_codes.Failed(f"NATS unavailable: {error}") from None
    except BusRefused as error:
        raise exit_codes.Failed(f"NATS refused: {error}") from None
    except Exception as error:
        failure = _nats_failure(error) or _database_failure(error, db_url)
        if failure is None:
            raise
        raise failure from None


def _damaged_database(error: Exception, url: str | None) -> str:
    """A damaged row (`error`, naming it) of the database `url`, named by its path or URL."""
    from services.cli import databases

    named = f" {databases.shown(url)}" if url else ""
    return f"the database{named} is damaged: {error}"


def _nats_failure(error: Exception) -> exit_codes.Failed | None:
    """An incomplete NATS log as `exit_codes.Failed` (only if a NATS source was opened:
    nats-py is not imported for a database audit)."""
    nats_log = sys.modules.get("services.audit.nats_log")
    if nats_log is not None and isinstance(error, nats_log.IncompleteLog):
        return exit_codes.Failed(str(error))
    return None


def _database_failure(error: Exception, url: str | None) -> exit_codes.Failed | None:
    """A database that cannot be reached or read, as `exit_codes.Failed` naming it (`url`) and
    the cause."""
    from services.cli import databases
    from services.store.errors import unusable_database

    if url is None:
        problem = unusable_database(error)
        return None if problem is None else exit_codes.Failed(
            f"cannot read the database: {problem}")
    named = databases.unusable(url, error, writing=False)
    return None if named is None else exit_codes.Failed(f"cannot read the database {named}")
