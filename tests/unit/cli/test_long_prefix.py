"""A --prefix too long for the stream names made of it is refused as parsed, in one line. It was
taken, and every start then failed on NATS's refusal of the stream (names are at most 255
characters), with advice about replicas and retention that did not fit."""

from __future__ import annotations

from click.testing import CliRunner

from services.cli.main import app
from services.cli.options import PREFIX
from services.contracts import subjects


def test_a_prefix_too_long_for_a_stream_name_is_one_usage_line() -> None:
    result = CliRunner().invoke(app, ["planner", "--prefix", "a" * 245],
                                env={"GANGSCHED_NATS": ""})
    assert (result.exit_code, result.output) == (
        2, "gangsched planner: invalid value for '--prefix' (env var: 'GANGSCHED_PREFIX'): a "
           "prefix of 245 characters is too long: NATS names a stream at most 255, so at most "
           "244 (<PREFIX>_DEADLETTER) (see gangsched planner --help)\n")


def test_the_longest_prefix_taken_makes_stream_names_nats_takes() -> None:
    prefix = PREFIX.convert("a" * subjects.MAX_PREFIX_LENGTH, None, None)
    names = [subjects.stream_name(prefix, suffix) for suffix in ("EVENTS", "DECISIONS",
                                                                    "DEADLETTER")]
    names.append("KV_" + subjects.stream_name(prefix, "LEADER"))
    assert max(len(name) for name in names) == 255
