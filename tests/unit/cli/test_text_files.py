"""Files named on the command line that are no files: a device such as /dev/zero never ends, so
reading it whole held the command forever while its memory grew. A secret, a NATS credentials
file and a manifest now refuse devices (and sockets) unread and anything past a size limit, in
one line with exit status 2; a pipe with a writer is still read (`<(kubectl get -o yaml)`)."""

from __future__ import annotations

import os
import pty
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from services.cli import exit_codes, text_files
from services.cli.main import app
from tests.unit.cli.test_nats_password import invoke

NODE = """apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
"""
POD = """---
apiVersion: v1
kind: Pod
metadata: {name: p1, namespace: default}
spec:
  schedulerName: gangsched
  containers: [{name: c, image: x, resources: {requests: {cpu: "1"}}}]
"""


def test_a_regular_file_within_the_limit_is_read_as_it_is(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes("héllo\r\nworld".encode())
    assert text_files.read_text(path, 13) == "héllo\r\nworld"


def test_a_file_over_the_limit_is_refused_with_the_limit_in_its_unit(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"x" * 2049)
    with pytest.raises(text_files.TextFileRefused, match=r"^it is larger than 2 KiB$"):
        text_files.read_text(path, 2048)
    with pytest.raises(text_files.TextFileRefused, match=r"^it is larger than 2000 bytes$"):
        text_files.read_text(path, 2000)


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom", "/dev/null"])
def test_a_character_device_is_refused_unread(device: str) -> None:
    with pytest.raises(text_files.TextFileRefused, match=r"^it is a character device, not a "
                       r"file$"):
        text_files.read_text(Path(device), 1 << 30)


def test_a_socket_is_refused_unread(tmp_path: Path) -> None:
    path = tmp_path / "s"
    listener = socket.socket(socket.AF_UNIX)
    try:
        listener.bind(str(path))
        with pytest.raises(text_files.TextFileRefused, match=r"^it is a socket, not a file$"):
            text_files.read_text(path, 100)
    finally:
        listener.close()


def test_a_link_to_a_device_is_refused_as_the_device(tmp_path: Path) -> None:
    (tmp_path / "link").symlink_to("/dev/zero")
    with pytest.raises(text_files.TextFileRefused, match="character device"):
        text_files.read_text(tmp_path / "link", 100)


def test_a_pipe_with_a_writer_is_read_and_an_endless_one_stops_at_the_limit(
        tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)

    def write(data: bytes) -> None:
        try:
            with fifo.open("wb") as writer:
                writer.write(data)
        except BrokenPipeError:  # the reader stopped at its limit
            pass

    writer = threading.Thread(target=write, args=(b"kind: Node\n",))
    writer.start()
    assert text_files.read_text(fifo, 100) == "kind: Node\n"
    writer.join()
    writer = threading.Thread(target=write, args=(b"0" * 70_000,))
    writer.start()
    with pytest.raises(text_files.TextFileRefused, match="larger than 64 KiB"):
        text_files.read_text(fifo, 64 << 10)
    writer.join()


def test_what_cannot_be_opened_or_decoded_raises_as_reading_does(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        text_files.read_text(tmp_path / "absent", 10)
    with pytest.raises(IsADirectoryError):
        text_files.read_text(tmp_path, 10)
    (tmp_path / "latin1").write_bytes(b"caf\xe9")
    with pytest.raises(UnicodeDecodeError):
        text_files.read_text(tmp_path / "latin1", 10)


def test_a_device_for_a_secret_file_is_one_line_and_exit_2() -> None:
    code, out, err = invoke("--nats-password-file", "/dev/zero")
    assert (code, out) == (exit_codes.USAGE, "")
    assert "cannot read '/dev/zero': it is a character device, not a file" in err
    assert "Traceback" not in err


def test_credentials_must_be_a_regular_file_as_nats_reads_them_at_each_connection(
        tmp_path: Path) -> None:
    fifo = tmp_path / "creds"
    os.mkfifo(fifo)  # no writer: refused before anything waits for one
    for given, kind in ((str(fifo), "a named pipe (FIFO)"), ("/dev/zero", "a character device")):
        code, out, err = invoke("--nats-creds", given)
        assert (code, out) == (exit_codes.USAGE, "")
        assert (f"cannot use '{given}': it is {kind}, not a file: NATS reads it again at every "
                "connection") in err


def test_an_oversized_secret_file_is_refused(tmp_path: Path) -> None:
    secret = tmp_path / "password"
    secret.write_bytes(b"p" * ((1 << 20) + 1))
    code, _, err = invoke("--nats-password-file", str(secret))
    assert code == exit_codes.USAGE and "it is larger than 1 MiB" in err


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_simulate_refuses_a_device_in_one_line(device: str, tmp_path: Path) -> None:
    (tmp_path / "node.yaml").write_text(NODE)
    result = CliRunner().invoke(app, ["simulate", str(tmp_path / "node.yaml"), device])
    assert result.exit_code == exit_codes.USAGE
    assert result.output == (f"gangsched simulate: {device}: it is a character device, not "
                             "a file\n")


def test_simulate_reads_manifests_from_a_pipe(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)

    def write() -> None:
        with fifo.open("w") as writer:
            writer.write(NODE + POD)

    writer = threading.Thread(target=write)
    writer.start()
    result = CliRunner().invoke(app, ["simulate", "-o", "json", str(fifo)])
    writer.join()
    assert result.exit_code == exit_codes.OK, result.output
    assert '"default/p1"' in result.output and '"n1"' in result.output  # placed there


def test_the_terminal_of_standard_input_is_read_as_a_file(tmp_path: Path) -> None:
    """`gangsched simulate /dev/stdin` typed or pasted at a terminal, ended by Ctrl-D."""
    leader, follower = pty.openpty()
    try:
        child = subprocess.Popen(
            [sys.executable, "-m", "services.cli.main", "simulate", "-o", "json", "/dev/stdin"],
            stdin=follower, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        os.write(leader, (NODE + POD).replace("\n", "\r").encode() + b"\r\x04")
        out, err = child.communicate(timeout=60)
    finally:
        os.close(leader)
        os.close(follower)
    assert child.returncode == exit_codes.OK, err
    assert b'"default/p1"' in out and b'"n1"' in out
