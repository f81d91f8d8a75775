"""Wrong use of the CLI gets a one-line reason and a non-zero exit, never a traceback."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from services.cli.main import app, planner_config
from services.config import limits
from services.contracts import names
from services.planner.core.config import PlannerConfig


def invoke(*argv: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(argv), env={"GANGSCHED_NATS": ""})
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, result.output


@pytest.mark.parametrize("url", ["mysql://u@h/db", "oracle://x", "postgresql+asyncpg://u@[bad",
                                 "postgresql://u@h]/db", "postgresql://u@h:99999/db",
                                 "postgresql://u@a..b/db", f"postgresql://u@{'a' * 64}.com/db",
                                 "postgresql+asyncpg://u@/db?host=a..b",
                                 f"postgresql://u@/db?host=h:5432&host={'a' * 64}.com:5432"])
def test_a_database_url_gangsched_cannot_use_is_refused_when_parsed(url: str) -> None:
    code, output = invoke("replay", "--db", url)
    assert code == 2
    assert "is not a database URL gangsched can use" in output


@pytest.mark.parametrize("url", ["postgres://u@h:5432/db", "postgresql://u@h/db",
                                 "postgresql+psycopg://u@h/db"])
def test_every_common_postgresql_spelling_means_asyncpg(url: str) -> None:
    from services.cli.options import DATABASE_URL
    from services.store.engines import async_url

    assert async_url(DATABASE_URL.convert(url, None, None)).drivername == "postgresql+asyncpg"


@pytest.mark.parametrize(("text", "why"), [
    ("not a url", "is neither a database URL nor a SQLite file"),
    ("postgres//host/db", "is neither a database URL nor a SQLite file"),
    ("state", "is neither a database URL nor a SQLite file"),
    ("a?b.db", "would be read as a URL query or escape"),  # would open ./a
    ("100%41.db", "would be read as a URL query or escape"),  # would open ./100A.db
])
def test_a_mistyped_url_or_ambiguous_path_is_refused_and_no_file_made(
        text: str, why: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    code, output = invoke("migrate", "--db", text)
    assert code == 2
    assert why in output
    assert list(tmp_path.iterdir()) == []


def test_a_plain_file_path_is_a_sqlite_database(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    code, output = invoke("migrate", "--db", str(path))
    assert code == 0, output
    assert path.is_file()


@pytest.mark.parametrize("service", ["watcher", "planner", "binder"])
def test_a_service_run_apart_needs_nats(service: str) -> None:
    code, output = invoke(service, "--http-port", "-1")
    assert code == 2
    assert f"`gangsched {service}` needs --nats" in output


@pytest.mark.parametrize("kind", ["pod", "podgroup", "pg"])
def test_explain_of_a_kind_without_a_name_is_a_usage_error(kind: str) -> None:
    code, output = invoke("explain", kind)
    assert code == 2
    assert "needs <namespace>/<name>" in output


def test_decisions_without_nats_or_a_running_gangsched_says_where_to_look(tmp_path: Path) -> None:
    code, output = invoke("decisions", "--data-dir", str(tmp_path))
    assert code == 1  # nothing to read from: the command could not do its work
    assert "no gangsched runs there" in output and "gangsched replay" not in output
    assert invoke("migrate", "--data-dir", str(tmp_path), "--log-level", "WARNING")[0] == 0
    code, output = invoke("decisions", "--data-dir", str(tmp_path))
    assert code == 1  # a database is there: it says how to read it offline
    assert f"gangsched replay --data-dir {tmp_path}" in output


def test_decisions_while_a_run_holds_the_data_directory_says_it_is_not_ready_yet(
        tmp_path: Path) -> None:
    from services.cli import data_dir_lock

    with data_dir_lock.hold(tmp_path):  # as a `gangsched run` still starting holds it
        code, output = invoke("decisions", "--data-dir", str(tmp_path))
    assert code == 1
    assert (f"the gangsched in {tmp_path} (pid {os.getpid()}) is not ready yet"
            in output), output
    assert data_dir_lock.holder(tmp_path) is None  # released: the usual message again
    assert "no running gangsched in" in invoke("decisions", "--data-dir", str(tmp_path))[1]


def test_replay_from_nats_without_one_says_why_as_decisions_does(tmp_path: Path) -> None:
    from services.cli import data_dir_lock

    args = ("replay", "--source", "nats", "--data-dir", str(tmp_path))
    code, output = invoke(*args)
    assert (code, output) == (1, f"Error: no NATS to replay from: {tmp_path} holds no gangsched "
                                 "data (no run.json, database or lock): no gangsched runs "
                                 "there; give its --data-dir, or --nats\n")
    with data_dir_lock.hold(tmp_path):  # as a `gangsched run` still starting holds it
        code, output = invoke(*args)
    assert code == 1
    assert (f"the gangsched in {tmp_path} (pid {os.getpid()}) is not ready yet"
            in output), output
    assert invoke("migrate", "--data-dir", str(tmp_path), "--log-level", "WARNING")[0] == 0
    code, output = invoke(*args)
    assert code == 1  # a database is there: it says how to replay it instead
    assert f"gangsched replay --source db --data-dir {tmp_path}" in output, output
    code, output = invoke(*args, "--decision-key-file", str(tmp_path / "no-such.key"))
    assert code == 2  # a bad option is a usage error, told before looking for a NATS
    assert "cannot read the decision key file" in output, output


def test_version_flag() -> None:
    from services import __version__

    assert invoke("--version") == (0, f"gangsched {__version__}\n")


@pytest.mark.parametrize(("service", "shown", "hidden"), [
    ("watcher", "--tick-seconds", "--scoring"),
    ("planner", "--scoring", "--kubeconfig"),
    ("binder", "--bind-concurrency", "--db"),
])
def test_a_service_help_shows_its_own_options_only(service: str, shown: str, hidden: str) -> None:
    code, output = invoke(service, "--help")
    assert code == 0
    assert shown in output and f"{hidden} " not in output


def test_a_service_still_accepts_another_services_options() -> None:
    code, output = invoke("planner", "--kubeconfig", "/nowhere", "--http-port", "-1")
    assert code == 2
    assert "needs --nats" in output  # not "no such option"


def _closed_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize("command", [["replay", "--verify"], ["explain", "pod", "default/x"]])
def test_an_unreachable_or_unreadable_database_is_one_line_with_status_1(
        command: list[str], tmp_path: Path) -> None:
    not_a_database = tmp_path / "notes.db"
    not_a_database.write_text("these are not the tables you are looking for\n")
    code, output = invoke(*command, "--db", str(not_a_database))
    assert (code, output.strip()) == (
        1, f"Error: cannot read the database {not_a_database}: not a SQLite database file")
    port = _closed_port()
    refused = f"postgresql+asyncpg://u:p@127.0.0.1:{port}/x"
    code, output = invoke(*command, "--db", refused)
    assert code == 1  # named without its password
    assert output.startswith(f"Error: cannot read the database postgresql+asyncpg://u@127.0.0.1:"
                             f"{port}/x: ConnectionRefusedError")


@pytest.mark.parametrize(("command", "verb"), [
    (["replay"], "read"), (["explain", "pod", "default/x"], "read"),
    (["migrate", "--log-level", "WARNING"], "migrate")])
def test_a_postgresql_socket_that_is_not_there_is_one_line_with_status_1(
        command: list[str], verb: str, tmp_path: Path) -> None:
    url = f"postgresql+asyncpg://u@/x?host={tmp_path}"  # a socket directory, no server in it
    code, output = invoke(*command, "--db", url)
    assert (code, output.count("\n")) == (1, 1), output
    assert output.startswith(f"Error: cannot {verb} the database postgresql+asyncpg://u@/x?host=")
    assert ": FileNotFoundError: [Errno 2] No such file or directory\n" in output


SECRET = "TOPSECRET"


@pytest.mark.parametrize(("command", "verb"), [
    (["replay"], "read"), (["explain", "pod", "default/x"], "read"),
    (["migrate", "--log-level", "WARNING"], "migrate")])
@pytest.mark.parametrize(("userinfo", "query", "kept"), [
    ("u", f"?password={SECRET}", ""),
    (f"u:{SECRET}", f"?password={SECRET}&ssl=disable", "?ssl=disable"),
])
def test_an_unreachable_database_is_named_without_any_password(
        command: list[str], verb: str, userinfo: str, query: str, kept: str) -> None:
    port = _closed_port()
    code, output = invoke(*command, "--db", f"postgresql+asyncpg://{userinfo}@127.0.0.1:{port}"
                                            f"/x{query}")
    assert (code, output) == (
        1, f"Error: cannot {verb} the database postgresql+asyncpg://u@127.0.0.1:{port}/x{kept}: "
           f"ConnectionRefusedError: [Errno 111] Connect call failed ('127.0.0.1', {port})\n")


@pytest.mark.parametrize(("url", "shown", "why"), [
    (f"postgresql+asyncpg://u:{SECRET}@127.0.0.1:abc/db", "postgresql+asyncpg://u@127.0.0.1:abc/db",
     "invalid literal for int() with base 10: 'abc'"),
    (f"postgresql+asyncpg://u:{SECRET}@127.0.0.1:abc/db?password={SECRET}&ssl=disable",
     "postgresql+asyncpg://u@127.0.0.1:abc/db?ssl=disable",
     "invalid literal for int() with base 10: 'abc'"),
    (f"postgresql://u:{SECRET}@h:99999/db", "postgresql://u@h:99999/db",
     "port 99999 out of range 1-65535"),
    (f"postgresql://u:TOP@{SECRET}@[h/db", "postgresql://u@[h/db", "malformed host '[h'"),
    (f"mysql://u:{SECRET}@h/db?api_key={SECRET}", "mysql://u@h/db",
     "unsupported database 'mysql': use sqlite or postgresql"),
    (f"postgresql://u@h/db?sslmode=require&auth_token={SECRET}",
     "postgresql://u@h/db?sslmode=require",
     "query parameter 'sslmode' is not one asyncpg takes (asyncpg's is ssl, e.g. ssl=require)"),
    (f"postgresql://u@h/db?client_secret={SECRET}", "postgresql://u@h/db",
     "query parameter 'client_secret' is not one asyncpg takes"),
    (f"postgresql://u:hunter@Pass:w0rd{SECRET}@h/db", "postgresql://u@h/db",
     "its host, port or database cannot be read: %-escape an '@', ':' or '/' in the password"),
])
@pytest.mark.parametrize("command", ["migrate", "replay"])
def test_a_database_url_that_cannot_be_used_is_refused_without_its_secrets(
        command: str, url: str, shown: str, why: str) -> None:
    assert invoke(command, "--db", url) == (
        2, f"gangsched {command}: invalid value for '--db' (env var: 'GANGSCHED_DB'): "
           f"{shown!r} is not a database URL gangsched can use ({why}); give "
           "sqlite+aiosqlite:///path/file.db, postgresql+asyncpg://user@host/db or a file path "
           f"(see gangsched {command} --help)\n")


def test_migrate_of_something_that_is_not_a_database_says_so(tmp_path: Path) -> None:
    not_a_database = tmp_path / "notes.db"
    not_a_database.write_text("plain text\n")
    code, output = invoke("migrate", "--db", str(not_a_database), "--log-level", "WARNING")
    assert (code, output.strip()) == (
        1, f"Error: cannot migrate the database {not_a_database}: not a SQLite database file")


def test_a_database_that_is_a_directory_or_read_only_is_named_so(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from sqlalchemy.exc import OperationalError

    directory = tmp_path / "state.db"
    directory.mkdir()
    assert invoke("explain", "pod", "x", "--db", str(directory)) == (
        1, f"Error: no SQLite database at {directory}: it is a directory\n")
    from services.cli import databases

    # (not through `migrate`: aiosqlite's thread, failing to open a directory, can outlive the
    # test's event loop and be reported against the next test)
    assert databases.unusable(f"sqlite+aiosqlite:///{directory}", OperationalError(
        "connect", {}, Exception("unable to open database file")), writing=True) == (
        f"{directory}: it is a directory, not a SQLite database file")

    read_only = tmp_path / "ro.db"
    read_only.write_bytes(b"")
    real_access = os.access  # root may write anything: pretend a mode 0444 file
    monkeypatch.setattr(os, "access", lambda path, mode: (
        False if Path(path) == read_only and mode & os.W_OK
        else real_access(path, mode)))
    assert databases.sqlite_problem(read_only, writing=True) == (
        "read-only (no permission to write it)")
    assert databases.sqlite_problem(read_only, writing=False) is None


def test_a_schema_mismatch_names_the_database_as_given_and_the_command_to_run(
        tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "old.db"
    assert invoke("migrate", "--db", str(path), "--log-level", "WARNING")[0] == 0
    with sqlite3.connect(path) as connection:
        connection.execute("UPDATE alembic_version SET version_num = '0001'")
    code, output = invoke("replay", "--db", str(path))
    assert code == 1
    url = f"sqlite+aiosqlite:///{path}"  # --db turns a path into this URL; both work pasted
    assert output.strip() == (f"Error: database {url} is at schema revision 0001, behind this "
                              f"gangsched's 0004: run `gangsched migrate --db {url}` first")
    assert "file:" not in output and "mode=ro" not in output


@pytest.mark.parametrize(("argv", "option"), [
    (("run", "--log-level", "LOUD"), "--log-level"),
    (("planner", "--log-level", "LOUD"), "--log-level"),
    (("run", "--http-port", "99999"), "--http-port"),
    (("run", "--batch-size", "0"), "--batch-size"),
    (("run", "--tick-seconds", "-1"), "--tick-seconds"),
    (("run", "--tick-seconds", "0"), "--tick-seconds"),
    (("run", "--bind-concurrency", "0"), "--bind-concurrency"),
    (("run", "--stream-replicas", "2"), "--stream-replicas"),
    (("run", "--stream-replicas", "7"), "--stream-replicas"),
    (("run", "--backoff-max-seconds", "-5"), "--backoff-max-seconds"),
    (("run", "--leader-lease-seconds", "0"), "--leader-lease-seconds"),
    (("run", "--default-timeout-seconds", "0"), "--default-timeout-seconds"),
    (("replay", "--search-budget-steps", "-1"), "--search-budget-steps"),
    (("replay", "--from-seq", "-5"), "--from-seq"),
    (("replay", "--from-seq", "0"), "--from-seq"),
    (("replay", "--from-seq", "x"), "--from-seq"),
    (("replay", "--from-seq", str(2**63)), "--from-seq"),
    (("replay", "--until", "-5"), "--until"),
    (("replay", "--until", "0"), "--until"),
    (("replay", "--until", "²"), "--until"),  # str.isdigit, yet no number int() reads
    (("replay", "--until", "yesterday"), "--until"),
    (("replay", "--since", "-5"), "--since"),
    (("simulate", "--default-timeout-seconds", str(10**9 + 1), "."), "--default-timeout-seconds"),
    (("run", "--batch-size", "10001"), "--batch-size"),
    (("run", "--batch-size", str(2**63)), "--batch-size"),  # NATS refused every fetch of it
    (("planner", "--bind-concurrency", "257"), "--bind-concurrency"),
    (("run", "--search-budget-steps", "10001"), "--search-budget-steps"),
    (("simulate", "--search-budget-steps", "1000000000", "."), "--search-budget-steps"),
    (("replay", "--max-placements-in-flight", "10001"), "--max-placements-in-flight"),
    (("run", "--max-members-in-flight", "150001"), "--max-members-in-flight"),
    (("simulate", "--max-members-in-flight", "-1", "."), "--max-members-in-flight"),
    (("run", "--snapshot-interval-events", "10000001"), "--snapshot-interval-events"),
])
def test_a_setting_out_of_range_is_refused_before_anything_starts(
    argv: tuple[str, ...], option: str
) -> None:
    code, output = invoke(*argv)
    assert code == 2
    assert output.startswith(f"gangsched {argv[0]}: invalid value for '{option}'"), output
    assert output.endswith(f" (see gangsched {argv[0]} --help)\n"), output
    assert output.count("\n") == 1, output


COUNT_RANGES = [("--batch-size", 1, limits.MAX_ACK_PENDING),
                ("--max-placements-in-flight", 0, limits.MAX_ACK_PENDING),
                ("--max-members-in-flight", 0, limits.MAX_MEMBERS_IN_FLIGHT),
                ("--search-budget-steps", 0, limits.MAX_SEARCH_BUDGET_STEPS),
                ("--snapshot-interval-events", 0, limits.MAX_SNAPSHOT_INTERVAL_EVENTS),
                ("--bind-concurrency", 1, limits.KUBE_POOL_SIZE)]
"""Each count option of the services and its range (services/config/limits.py says why)."""


@pytest.mark.parametrize(("option", "minimum", "maximum"), COUNT_RANGES)
def test_a_count_is_taken_up_to_its_maximum_and_refused_past_it_as_flag_or_variable(
        option: str, minimum: int, maximum: int) -> None:
    code, output = invoke("planner", option, str(maximum), "--http-port", "-1")
    assert (code, "`gangsched planner` needs --nats" in output) == (2, True), output  # parsed
    variable = "GANGSCHED_" + option.removeprefix("--").replace("-", "_").upper()
    for argv, env in (([option, str(maximum + 1)], {}), ([], {variable: str(maximum + 1)})):
        result = CliRunner().invoke(app, ["planner", *argv], env={"GANGSCHED_NATS": "", **env})
        assert (result.exit_code, result.output) == (2, (
            f"gangsched planner: invalid value for '{option}' (env var: '{variable}'): "
            f"{maximum + 1} is not in the range {minimum}<=x<={maximum} "
            "(see gangsched planner --help)\n")), result.output


def test_until_takes_an_integer_as_a_sequence_and_anything_else_as_a_time() -> None:
    from services.audit.until import Until
    from services.cli.log_positions import SeqOrTime

    assert SeqOrTime().convert("42", None, None) == Until(seq=42)
    assert SeqOrTime().convert(" 2023-11-14T22:13:20Z", None, None) == Until(
        at_ms=1_700_000_000_000)


def test_a_manifest_that_is_not_utf8_or_not_yaml_is_one_line(tmp_path: Path) -> None:
    binary, broken = tmp_path / "binary.yaml", tmp_path / "broken.yaml"
    binary.write_bytes(b"\xff\xfekind: Node\n")
    broken.write_text("a: [1,\n b: 2\n")
    code, output = invoke("simulate", str(binary))
    assert code == 2 and output.strip() == (
        f"gangsched simulate: {binary}: not UTF-8 text (byte 0); manifests are UTF-8")
    code, output = invoke("simulate", str(broken))
    assert code == 2 and len(output.strip().splitlines()) == 1 and "line 3 column 1" in output


def test_a_manifest_with_a_control_character_says_where_in_one_line(tmp_path: Path) -> None:
    """UTF-8, but not YAML (a NUL byte): PyYAML's `in "<unicode string>"` never shows."""
    nul = tmp_path / "nul.yaml"
    nul.write_bytes(b"kind: Node\n\x00\n")
    code, output = invoke("simulate", str(nul))
    assert (code, output.strip()) == (2, f"gangsched simulate: {nul}: character 12: #x0000 is "
                                         "not allowed in YAML (special characters are not "
                                         "allowed): not a YAML or JSON file?")


@pytest.mark.parametrize(("text", "where", "key"), [
    ("kind: Node\nmetadata:\n  name: a\n  name: b\n", "line 4 column 3", "'name'"),
    ("kind: Node\nkind: Pod\n", "line 2 column 1", "'kind'"),
    ('{"kind": "Node", "metadata": {"labels": {"x": "1", "x": "2"}}}', "line 1 column 52",
     "'x'"),
])
def test_a_manifest_giving_a_key_twice_is_refused(tmp_path: Path, text: str, where: str,
                                                  key: str) -> None:
    """The last value would win silently; the Kubernetes YAML library's strict decoding
    refuses it (`key "name" already set in map`), and so does simulate."""
    manifest = tmp_path / "twice.yaml"
    manifest.write_text(text)
    code, output = invoke("simulate", str(manifest))
    assert (code, output.strip()) == (
        2, f"gangsched simulate: {manifest}: {where}: key {key} already set in this mapping "
           "(given twice)")


def test_merge_keys_and_equal_keys_in_different_mappings_are_not_repeats() -> None:
    from services.cli import manifest_yaml

    assert manifest_yaml.load_all("a: {name: x}\nb: {name: y}\n<<: {c: 1}\nc: 2\n") == [
        {"a": {"name": "x"}, "b": {"name": "y"}, "c": 2}]


@pytest.mark.parametrize(("command", "url", "why"), [
    (["decisions"], "http://127.0.0.1:4222",
     "http:// is not a NATS scheme (use nats://, tls://, ws://, wss://)"),
    (["binder"], "nats://:4222", "'nats://:4222' names no host"),
    (["watcher"], "nats://u:secret@h:99999", "'h:99999' has a bad port"),
])
def test_a_nats_url_nats_py_cannot_use_is_refused_when_parsed(
        command: list[str], url: str, why: str) -> None:
    code, output = invoke(*command, "--nats", url)
    assert code == 2
    assert f"not a NATS URL: {why}" in output
    assert "secret" not in output


NATS_COMMANDS = sorted(name for name, command in app.commands.items()
                       if any(param.name == "nats" for param in command.params))
"""Every command taking --nats."""


@pytest.mark.parametrize("command", NATS_COMMANDS)
@pytest.mark.parametrize(("url", "why"), [
    ("nats://:4222", "'nats://:4222' names no host"),
    # quoted as given, not as rebuilt from its parts ('nats:')
    ("nats://", "'nats://' names no host"),
    ("nats://u:secret@", "'nats://' names no host"),
    ("nats:///x", "'nats:///x' names no host"),
    ("nats://not a host:4222", "'not a host' is not a host name or IP address"),
    (f"nats://{'a' * 64}.com:4222", f"'{'a' * 64}.com' is not a host name or IP address"),
    ("nats://u:secret@127.0.0.1:0",
     "'nats://127.0.0.1:0' has port 0, on which no server can be reached"),
    # nats-py read these as the host NATS or nats, or refused them with a traceback
    ("NATS://127.0.0.1:4222",
     "NATS:// must be written in lowercase, nats://: nats-py reads 'NATS' as a host name"),
    ("u:secret@nats:/127.0.0.1", "'nats:/127.0.0.1' is neither host:port nor a URL "
                                 "(nats://host:port)"),
    ("none", "'none' is no host nats-py connects to: it takes it for a missing one"),
    ("nats://127.0.0.1:4222,ws://127.0.0.1:8080",
     "websocket (ws://, wss://) and other (nats://, tls://) servers in one list: nats-py "
     "connects to either kind, never both"),
])
def test_a_value_that_cannot_be_a_nats_url_is_a_usage_error_of_every_command(
        command: str, url: str, why: str) -> None:
    assert NATS_COMMANDS == ["binder", "decisions", "planner", "replay", "run", "watcher"]
    for argv, env in (([command, "--nats", url], {}), ([command], {"GANGSCHED_NATS": url})):
        result = CliRunner().invoke(app, argv, env=env)  # refused when parsed: nothing starts
        assert (result.exit_code, result.output) == (
            2, f"gangsched {command}: invalid value for '--nats' (env var: 'GANGSCHED_NATS'): "
               f"not a NATS URL: {why} (see gangsched {command} --help)\n"), result.output


@pytest.mark.parametrize("host", ["a..b", f"{'a' * 64}.example", "not a host", "a/b"])
def test_an_http_host_that_cannot_be_a_host_is_a_usage_line(host: str) -> None:
    """Python's resolver refuses such a name with a UnicodeError, no OSError: it used to end
    `gangsched run` with a traceback once NATS had started."""
    code, output = invoke("planner", "--http-host", host)
    assert (code, output) == (
        2, f"gangsched planner: invalid value for '--http-host' (env var: 'GANGSCHED_HTTP_HOST'): "
           f"{host!r} is not a host name or IP address (see gangsched planner --help)\n")


@pytest.mark.parametrize("host", ["127.0.0.1", "::", "0.0.0.0", "localhost", "scheduler.local.",
                                  "ex-ample_1.com", "bücher.de", f"{'a' * 63}.com"])
def test_a_host_name_or_address_is_a_host(host: str) -> None:
    assert names.is_host(host)


@pytest.mark.parametrize("command", [["planner"], ["replay"], ["simulate", "x.yaml"]])
@pytest.mark.parametrize("key", ["", "bad key!", "/zone", "a..b/zone", "-zone", "x" * 64])
def test_a_topology_key_no_label_can_have_is_a_usage_line(command: list[str], key: str) -> None:
    """No node carries such a label: taken, it silently turned topology preference off."""
    code, output = invoke(*command, "--topology-key", key)
    assert (code, output.count("\n")) == (2, 1), output
    assert f"invalid value for '--topology-key' (env var: 'GANGSCHED_TOPOLOGY_KEY'): {key!r} " \
           "is not a label key: [prefix/]name" in output


@pytest.mark.parametrize("key", ["zone", "topology.kubernetes.io/zone", "kubernetes.io/hostname",
                                 "example.com/rack_1.a"])
def test_a_label_key_is_a_topology_key(key: str) -> None:
    assert names.is_label_name(key)


@pytest.mark.parametrize(("given", "told"), [
    ("", "no PodGroup API group"), (" , ", "no PodGroup API group"),
    ("bogus.io", "unknown PodGroup API group(s) ['bogus.io']")])
def test_group_apis_that_name_no_known_group_say_what_is_wrong(given: str, told: str) -> None:
    code, output = invoke("watcher", "--nats", "nats://127.0.0.1:1", "--group-apis", given)
    assert (code, output) == (
        2, f"gangsched watcher: invalid value for --group-apis: {told}; choose from "
           "scheduling.x-k8s.io, scheduling.k8s.io (see gangsched watcher --help)\n")


@pytest.mark.parametrize("command", [["planner"], ["run"], ["replay"]])
def test_a_backoff_cap_below_the_first_backoff_is_a_usage_line(command: list[str]) -> None:
    """Documented (the chart: "at least backoffInitialSeconds"), as kube-scheduler requires,
    and used to be taken: every backoff then silently was the cap."""
    code, output = invoke(*command, "--backoff-initial-seconds", "100",
                          "--backoff-max-seconds", "1")
    assert (code, output) == (
        2, f"gangsched {command[0]}: invalid value: --backoff-max-seconds must be at least "
           f"--backoff-initial-seconds (100.0), got 1.0 (see gangsched {command[0]} --help)\n")
    assert planner_config({"backoff_initial_seconds": 5.0, "backoff_max_seconds": 5.0}) == (
        PlannerConfig(backoff_initial_seconds=5.0, backoff_max_seconds=5.0))  # equal is fine


def test_a_refused_planner_setting_names_as_options_only_the_fields_that_are_options(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """`release_grace_seconds` has no option: `--release-grace-seconds` would send the user
    looking for one. Every field used to be told as an option."""
    import services.cli.main as main

    def refusing(**values: Any) -> PlannerConfig:
        if values:
            raise ValueError("release_grace_seconds (5.0) must be below backoff_max_seconds "
                             "and score_resources")
        return PlannerConfig()

    monkeypatch.setattr(main, "PlannerConfig", refusing)
    with pytest.raises(click.BadParameter) as refused:
        planner_config({})
    assert refused.value.message == ("release_grace_seconds (5.0) must be below "
                                     "--backoff-max-seconds and score_resources")
    for command in ("planner", "run", "replay", "simulate"):  # each an option of them all
        assert set(main.PLANNER_OPTIONS) <= {param.name for param in app.commands[
            command].params}, command


def test_a_refused_backoff_cap_is_told_with_every_digit() -> None:
    """Both used to print as 1e+06: a refusal of 1e+06 below 1e+06."""
    code, output = invoke("replay", "--backoff-initial-seconds", "1000000.5",
                          "--backoff-max-seconds", "1000000.4")
    assert (code, output) == (
        2, "gangsched replay: invalid value: --backoff-max-seconds must be at least "
           "--backoff-initial-seconds (1000000.5), got 1000000.4 (see gangsched replay --help)\n")


def test_schemas_that_cannot_be_written_are_one_line() -> None:
    code, output = invoke("schema", "--out", "/proc/nope")
    assert code == 1
    assert output.strip().startswith("Error: cannot write the schemas to /proc/nope: ")


def test_schema_makes_its_out_directory_but_never_a_missing_parent(tmp_path: Path) -> None:
    """As `migrate --db` makes the file, never its directory: it used to make the whole path
    and exit 0 (a mistyped --out became a new tree of directories)."""
    out = tmp_path / "typo" / "more" / "schema"
    assert invoke("schema", "--out", str(out)) == (
        1, f"Error: cannot write the schemas to {out}: directory {tmp_path / 'typo'} does not "
           "exist (gangsched makes only the --out directory itself: create it first)\n")
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "a-file").write_text("")
    assert invoke("schema", "--out", str(tmp_path / "a-file" / "schema")) == (
        1, f"Error: cannot write the schemas to {tmp_path / 'a-file' / 'schema'}: "
           f"{tmp_path / 'a-file'} is not a directory\n")
    code, output = invoke("schema", "--out", str(tmp_path / "schema"))
    assert code == 0, output
    assert sorted(path.name for path in (tmp_path / "schema").iterdir()) == sorted(
        Path(line).name for line in output.splitlines())


def test_schema_out_that_is_no_directory_says_so(tmp_path: Path) -> None:
    """It said only `File exists`."""
    a_file, nowhere = tmp_path / "empty.yaml", tmp_path / "link"
    a_file.write_text("")
    nowhere.symlink_to(tmp_path / "missing")
    hint = "--out names the directory to write the schemas into"
    for out, what in ((a_file, "a file, not a directory"), (Path("/dev/null"), "not a directory"),
                      (nowhere, "a symbolic link that leads to nothing (a loop, or a missing "
                                "target)")):
        assert invoke("schema", "--out", str(out)) == (
            1, f"Error: cannot write the schemas to {out}: it is {what}; {hint}\n")
    assert a_file.read_text() == "" and nowhere.is_symlink() and not nowhere.exists()


@pytest.mark.parametrize(("flag", "value", "why"), [
    ("--nomination-seconds", "nan", "is not a finite number of seconds"),
    ("--backoff-max-seconds", "nan", "is not a finite number of seconds"),
    ("--nomination-seconds", "inf", "is not in the range"),
    ("--starvation-seconds", "1e300", "is not in the range"),
    ("--batch-linger-seconds", "-1", "is not in the range"),
])
def test_a_duration_that_is_not_finite_or_beyond_range_is_one_line_and_exit_2(
        flag: str, value: str, why: str, tmp_path: Path) -> None:
    (tmp_path / "pod.yaml").write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n"
                                       "spec: {schedulerName: gangsched, containers: "
                                       "[{name: c, image: i}]}\n")
    command = "run" if flag == "--batch-linger-seconds" else "simulate"
    argv = [command, flag, value] + ([str(tmp_path)] if command == "simulate" else [])
    code, output = invoke(*argv)
    assert code == 2 and why in output, output
    assert "Traceback" not in output


@pytest.mark.parametrize("content, reason", [
    (None, "cannot read"),
    ("garbage\n", "is no NATS credentials file (no 'BEGIN NATS USER JWT' block)"),
    ("-----BEGIN NATS USER JWT-----\neyJ0\n------END NATS USER JWT------\n",
     "(no 'BEGIN USER NKEY SEED' block)"),
])
def test_a_nats_credentials_file_that_is_missing_or_no_creds_is_one_line(
        tmp_path: Path, content: str | None, reason: str) -> None:
    creds = tmp_path / "user.creds"
    if content is not None:
        creds.write_text(content)
    code, output = invoke("decisions", "--nats", "nats://127.0.0.1:1", "--nats-creds",
                          str(creds))
    assert code == 2
    assert "invalid value for '--nats-creds'" in output and reason in output
    assert "Traceback" not in output


@pytest.mark.parametrize(("argv", "line"), [
    (("simulate", "--nodez", "x"),
     "gangsched simulate: no such option: --nodez (see gangsched simulate --help)"),
    (("simulate",), "gangsched simulate: missing argument 'FILES...' (see gangsched simulate "
                    "--help)"),
    (("simulate", "-o", "yaml", "."), "gangsched simulate: invalid value for '-o' / '--output': "
     "'yaml' is not one of 'table', 'json' (see gangsched simulate --help)"),
    (("simulate", "--scorin", "x", "."), "gangsched simulate: no such option: --scorin (did you "
     "mean --scoring?) (see gangsched simulate --help)"),
    (("run", "--log-level", "verbose"), "gangsched run: invalid value for '--log-level' (env "
     "var: 'GANGSCHED_LOG_LEVEL'): 'verbose' is not one of 'DEBUG', 'INFO', 'WARNING', 'ERROR', "
     "'CRITICAL' (see gangsched run --help)"),  # as --help names them, not casefolded
    (("bogus",), "gangsched: no such command 'bogus' (see gangsched --help)"),
    (("--bogus",), "gangsched: no such option: --bogus (see gangsched --help)"),
    (("explain",), "gangsched explain: missing argument 'KIND_OR_NAME' (see gangsched explain "
     "--help)"),
    (("planner", "--http-port", "-1"), "gangsched planner: `gangsched planner` needs --nats (or "
     "GANGSCHED_NATS): the services run apart share one NATS; only `gangsched run` starts an "
     "embedded nats-server of its own (see gangsched planner --help)"),
])
def test_a_usage_error_is_one_line_naming_the_command_and_its_help(
        argv: tuple[str, ...], line: str) -> None:
    result = CliRunner().invoke(app, list(argv), env={"GANGSCHED_NATS": ""})
    assert (result.exit_code, result.stdout, result.stderr) == (2, "", line + "\n")


COMMANDS = sorted(app.commands)
"""Every command of `gangsched`."""


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_tells_an_unknown_option_in_one_line(command: str) -> None:
    result = CliRunner().invoke(app, [command, "--zzz"], env={"GANGSCHED_NATS": ""})
    assert (result.exit_code, result.stderr) == (
        2, f"gangsched {command}: no such option: --zzz (see gangsched {command} --help)\n")


@pytest.mark.parametrize(("argv", "line"), [
    (["run", "--kubeconfg", "x"],
     "gangsched run: no such option: --kubeconfg (did you mean --kubeconfig?) "
     "(see gangsched run --help)"),
    (["replay", "--podgrup", "x"],
     "gangsched replay: no such option: --podgrup (did you mean --podgroup?) "
     "(see gangsched replay --help)"),
    (["migrate", "--zzz"],
     "gangsched migrate: no such option: --zzz (see gangsched migrate --help)"),
])
def test_an_unknown_option_is_offered_only_close_matches(argv: list[str], line: str) -> None:
    """click offers every option above difflib's 0.6 (`--kubeconfg`: also `--scoring`)."""
    assert invoke(*argv) == (2, line + "\n")


@pytest.mark.parametrize("prefix", ["*", ">", "a.>", "a b", "", "a..b", ".a", "a.", "$JS"])
def test_a_prefix_nats_cannot_take_or_that_hides_its_stream_name_is_refused(prefix: str) -> None:
    code, output = invoke("planner", "--nats", "nats://127.0.0.1:1", "--prefix", prefix)
    assert code == 2
    assert output == (
        "gangsched planner: invalid value for '--prefix' (env var: 'GANGSCHED_PREFIX'): "
        f"{prefix!r} is not a prefix: dot-separated tokens of letters, digits, _ and - (e.g. "
        "gangsched or prod.gangsched) (see gangsched planner --help)\n")


def test_leader_timing_the_planner_could_not_keep_is_refused(tmp_path: Path) -> None:
    code, output = invoke("planner", "--nats", "nats://127.0.0.1:1", "--leader-election",
                          "--leader-lease-seconds", "1", "--leader-retry-seconds", "5",
                          "--data-dir", str(tmp_path / "data"))
    assert code == 2
    assert ("--leader-retry-seconds (5) must be shorter than two thirds of "
            "--leader-lease-seconds (1)") in output
    assert not (tmp_path / "data").exists()


@pytest.mark.parametrize("name", ["Gangsched", "gang_sched", "a..b", "example.com/gangsched",
                                  "Gang.Sched"])
def test_a_scheduler_name_that_cannot_name_the_lease_is_refused_while_it_is_held(
        name: str, tmp_path: Path) -> None:
    code, output = invoke("binder", "--nats", "nats://127.0.0.1:1", "--scheduler-name", name,
                          "--data-dir", str(tmp_path / "data"))
    assert code == 2
    assert output == (
        f"gangsched binder: --scheduler-name {name!r} cannot name the binder's Lease (a DNS-1123 "
        "subdomain: lowercase letters, digits, - and ., at most 253 characters): choose such a "
        "name, or run without the Lease (--no-scheduler-lease) (see gangsched binder --help)\n")
    for argv in (("binder", "--no-scheduler-lease"), ("watcher",), ("planner",)):
        code, output = invoke(*argv, "--nats", "nats://127.0.0.1:1", "--scheduler-name", name,
                              "--data-dir", str(tmp_path / "data"))
        assert "cannot name the binder's Lease" not in output


@pytest.mark.parametrize("name", ["Bad Name!", "-gangsched", "gangsched.", "x" * 64,
                                  "a/b/c", "/gangsched", "Example.com/gangsched",
                                  "x" * 254 + "/gangsched"])
@pytest.mark.parametrize("argv", [("planner",), ("watcher",), ("binder", "--no-scheduler-lease"),
                                  ("run", "--no-scheduler-lease"), ("simulate",)])
def test_a_scheduler_name_no_event_can_carry_is_refused_by_every_service_and_simulate(
        name: str, argv: tuple[str, ...], tmp_path: Path) -> None:
    """The API server takes any spec.schedulerName, but not as the reportingController of the
    binder's events; `Bad Name!` used to run, recording no event."""
    where = (str(Path(__file__).resolve().parents[3] / "examples"),) if argv == ("simulate",) \
        else ("--nats", "nats://127.0.0.1:1", "--data-dir", str(tmp_path / "data"))
    code, output = invoke(*argv, *where, "--scheduler-name", name)
    assert (code, output) == (2, (
        f"gangsched {argv[0]}: invalid value for '--scheduler-name' (env var: "
        f"'GANGSCHED_SCHEDULER_NAME'): {name!r} cannot name gangsched in the events it records "
        "(the API server takes only a qualified name: [prefix/]name, a name of at most 63 "
        "letters, digits, -, _ and . starting and ending with a letter or digit, a prefix a DNS "
        f"subdomain) (see gangsched {argv[0]} --help)\n"))
    assert not (tmp_path / "data").exists()


def test_the_audit_commands_take_any_scheduler_name_an_earlier_gangsched_served(
        log: str) -> None:
    code, output = invoke("replay", "--db", log, "--scheduler-name", "Bad Name!")
    assert code != 2 and "--scheduler-name" not in output, output


@pytest.mark.parametrize("name", ["", " "])
def test_an_empty_scheduler_name_is_refused(name: str) -> None:
    code, output = invoke("binder", "--nats", "nats://127.0.0.1:1", "--scheduler-name", name)
    assert code == 2
    assert "an empty scheduler name is the default scheduler's, not gangsched's" in output


@pytest.mark.parametrize("namespace", ["kube.system", "Kube-system", "-a", "x" * 64, ""])
def test_a_lease_namespace_that_is_no_namespace_name_is_refused(namespace: str) -> None:
    code, output = invoke("binder", "--nats", "nats://127.0.0.1:1",
                          "--scheduler-lease-namespace", namespace)
    assert code == 2
    assert f"{namespace!r} is not a namespace name: lowercase letters, digits and -, starting" \
        in output


def test_lease_names_and_namespaces_as_the_api_server_takes_them() -> None:
    from services.cli.options import NAMESPACE_NAME
    from services.contracts.names import is_dns_subdomain

    for name in ("gangsched", "batch.example.com", "a", "a-1.b-2", "x" * 253):
        assert is_dns_subdomain(name)
    assert not is_dns_subdomain("x" * 254)
    for namespace in ("kube-system", "a", "x" * 63):
        assert NAMESPACE_NAME.convert(namespace, None, None) == namespace


@pytest.mark.parametrize("url", ["sqlite://", "sqlite+aiosqlite://", "sqlite:///",
                                 "sqlite:///:memory:", "sqlite+aiosqlite:///:memory:",
                                 "sqlite:///file::memory:?uri=true",
                                 "sqlite:///file:x?mode=memory&uri=true"])
@pytest.mark.parametrize("command", ["migrate", "replay", "explain", "planner"])
def test_an_in_memory_sqlite_database_is_refused_wherever_a_url_is_taken(
        url: str, command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """It would keep nothing: `migrate` "upgraded" a database gone at once, and the planner
    then asked for that migration again."""
    monkeypatch.chdir(tmp_path)
    argv = [command, *(["pod", "x"] if command == "explain" else []), "--db", url]
    code, output = invoke(*argv)
    assert code == 2
    assert "is an in-memory SQLite database" in output and len(output.splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


def test_a_sqlite_file_url_is_no_in_memory_database() -> None:
    from services.store.urls import in_memory_sqlite

    assert not in_memory_sqlite("sqlite+aiosqlite:///var/lib/gangsched/gangsched.db")
    assert not in_memory_sqlite("sqlite:///memory.db")
    assert not in_memory_sqlite("postgresql+asyncpg://u@h/db")


@pytest.mark.parametrize("argv", [["watcher", "--nats"], ["simulate", "-o"],
                                  ["replay", "--from-seq"], ["migrate", "--db"]])
def test_an_option_given_no_value_is_told_under_its_command(argv: list[str]) -> None:
    """click's parser raises this error without its command: it read `gangsched: option
    '--nats' requires an argument (see gangsched --help)`, unlike every other usage error."""
    command, option = argv
    assert invoke(*argv) == (2, f"gangsched {command}: option '{option}' requires an argument "
                                f"(see gangsched {command} --help)\n")
