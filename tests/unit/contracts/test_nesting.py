"""JSON nested deeper than a decoder goes is malformed input like any other: msgspec and json
raise RecursionError for it, which no handler of DecodeError or ValueError catches. A 10 KB
message of 5,000 nested arrays on the bus crashed the planner on every restart; here each
reader of untrusted JSON refuses it as it refuses garbage."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.cli import run_info
from services.contracts import codec
from services.kube import client, errors

DEEP = b"[" * 5000 + b"]" * 5000
IN_AN_OBJECT = b'{"type": "PodObserved", "extra": ' + DEEP + b"}"


def test_a_deep_event_or_decision_is_a_poisoned_message() -> None:
    with pytest.raises(codec.PoisonedMessage, match="recursion"):
        codec.decode_event(IN_AN_OBJECT)
    with pytest.raises(codec.PoisonedMessage, match="recursion"):
        codec.decode_decision(b'{"type": "Placement", "extra": ' + DEEP + b"}")


def test_a_deep_watch_line_is_a_garbled_stream_and_a_deep_body_no_object() -> None:
    with pytest.raises(errors.KubeUnavailable, match="undecodable line"):
        client._decode_line(b'{"object": ' + DEEP + b"}", "watch pods")
    assert client._decode_object(b'{"a": ' + DEEP + b"}")["message"].startswith('{"a": [[[')


def test_a_deep_run_file_is_damaged_not_a_crash(tmp_path: Path) -> None:
    (tmp_path / run_info.RUN_FILE).write_bytes(b'{"db": ' + DEEP + b"}")
    assert run_info.load(tmp_path) == {}
    with pytest.raises(run_info.Damaged, match="not JSON"):
        run_info.recorded(tmp_path, "db")
