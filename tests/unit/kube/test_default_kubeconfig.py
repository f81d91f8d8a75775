"""With no --kubeconfig, the client reads the files kubectl would: each path of $KUBECONFIG,
or ~/.kube/config when $KUBECONFIG is unset or empty (the library alone took an empty one for
a path)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from services.config.settings import KubeSettings
from services.kube import client as kube_client

KUBECONFIG = """apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
"""


@pytest.mark.parametrize("variable", ["", None])
async def test_an_empty_or_unset_kubeconfig_variable_reads_home_kube_config(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
        variable: str | None):
    (tmp_path / ".kube").mkdir()
    (tmp_path / ".kube" / "config").write_text(KUBECONFIG)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    if variable is None:
        monkeypatch.delenv("KUBECONFIG", raising=False)
    else:
        monkeypatch.setenv("KUBECONFIG", variable)
    with caplog.at_level(logging.INFO, logger="services.kube.client"):
        client = await kube_client.connect(KubeSettings())
    await client.close()
    assert f"(credentials: kubeconfig {tmp_path}/.kube/config)" in caplog.text


async def test_several_kubeconfig_paths_use_those_that_exist(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture):
    present = tmp_path / "present"
    present.write_text(KUBECONFIG)
    monkeypatch.setenv("KUBECONFIG", f"{tmp_path / 'absent'}:{present}")
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with caplog.at_level(logging.INFO, logger="services.kube.client"):
        client = await kube_client.connect(KubeSettings())
    await client.close()
    assert f"(credentials: kubeconfig {present})" in caplog.text


@pytest.mark.parametrize(("text", "why"), [
    ("hello\n", "TypeError: 'str' object does not support item assignment"),
    ("{ not yaml\n", "ParserError: while parsing a flow mapping"),
])
async def test_a_file_that_is_not_a_kubeconfig_is_one_clear_error(
        tmp_path: Path, text: str, why: str) -> None:
    from services.kube.errors import KubeError

    path = tmp_path / "notes.txt"
    path.write_text(text)
    with pytest.raises(KubeError) as raised:
        await kube_client.connect(KubeSettings(kubeconfig=path))
    assert str(raised.value) == (
        f"no Kubernetes credentials: {path} is not a kubeconfig ({why})")
