"""`gangsched simulate DIR` reads a symbolic link named as a manifest as kubectl does: one
that leads nowhere is one line naming it, exit 2, never its objects silently missing."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from services.cli import exit_codes
from services.cli.main import app
from services.cli.simulate import load_documents

NODE = """apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
"""


@pytest.mark.parametrize("target", ["nowhere.yaml", "b-loop.yaml"])
def test_a_dangling_or_looping_manifest_link_is_named(target: str, tmp_path: Path) -> None:
    (tmp_path / "a-node.yaml").write_text(NODE)
    (tmp_path / "b-loop.yaml").symlink_to(target)  # to itself: a loop
    result = CliRunner().invoke(app, ["simulate", str(tmp_path)])
    assert result.exit_code == exit_codes.USAGE
    assert result.output.startswith(f"gangsched simulate: {tmp_path / 'b-loop.yaml'}: ")
    assert len(result.output.splitlines()) == 1


def test_a_link_to_a_manifest_is_read_and_one_to_a_directory_is_not(tmp_path: Path) -> None:
    manifests, elsewhere = tmp_path / "manifests", tmp_path / "elsewhere"
    manifests.mkdir()
    elsewhere.mkdir()
    (elsewhere / "node.yaml").write_text(NODE)
    (manifests / "node.yaml").symlink_to(elsewhere / "node.yaml")
    (manifests / "sub.yaml").symlink_to(elsewhere)  # a directory: not read, as before
    result = CliRunner().invoke(app, ["simulate", "-o", "json", str(manifests)])
    assert result.exit_code == exit_codes.OK, result.output
    documents = load_documents([manifests])
    assert [document.source for document in documents] == [str(manifests / "node.yaml")]
