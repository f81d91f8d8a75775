"""With no --kubeconfig, the client reads the files kubectl would: each path of $KUBECONFIG,
or ~/.kube/config when $KUBECONFIG is unset or empty (the library alone took an empty one for
a path), merged as kubectl merges them (empty files skipped, the first to set a value wins);
a file that is not a kubeconfig is refused in one line naming it, also among several."""

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
        variable: str | None) -> None:
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
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    present = tmp_path / "present"
    present.write_text(KUBECONFIG)
    monkeypatch.setenv("KUBECONFIG", f"{tmp_path / 'absent'}:{present}")
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with caplog.at_level(logging.INFO, logger="services.kube.client"):
        client = await kube_client.connect(KubeSettings())
    await client.close()
    assert f"(credentials: kubeconfig {present})" in caplog.text


@pytest.mark.parametrize(("text", "why"), [
    ("hello\n", "a string, not a mapping"),
    ("{ not yaml\n", "ParserError: while parsing a flow mapping"),
    ("", "the file is empty"),
    ("- 1\n", "a list, not a mapping"),
    ("current-context: [x]\n", "current-context is a list, not a string"),
    ("clusters: {c: {server: https://h}}\n", "clusters is a mapping, not a list"),
    ("users: [u]\n", "users[0] is a string, not a mapping"),
    ("contexts: [{context: {cluster: c}}]\n", "contexts[0] has no name"),
    ("clusters: [{name: c, cluster: [https://h]}]\n",
     "clusters[0].cluster is a list, not a mapping"),
    ("clusters: [{name: c, cluster: {server: {host: h}}}]\n",
     "clusters[0].cluster.server is a mapping, not a string"),
    ('clusters: [{name: c, cluster: {server: "https://h", insecure-skip-tls-verify: "false"}}]\n',
     "clusters[0].cluster.insecure-skip-tls-verify is a string, not true or false"),
], ids=["string", "not-yaml", "empty", "list", "current-context", "clusters-mapping",
        "user-string", "no-name", "cluster-list", "server-mapping", "insecure-string"])
async def test_a_file_that_is_not_a_kubeconfig_is_one_clear_error(
        tmp_path: Path, text: str, why: str) -> None:
    from services.kube.errors import KubeError

    path = tmp_path / "notes.txt"
    path.write_text(text)
    with pytest.raises(KubeError) as raised:
        await kube_client.connect(KubeSettings(kubeconfig=path))
    assert str(raised.value) == (
        f"no Kubernetes credentials: {path} is not a kubeconfig ({why})")


def several(monkeypatch: pytest.MonkeyPatch, *paths: Path) -> None:
    """$KUBECONFIG lists `paths`, outside a cluster."""
    monkeypatch.setenv("KUBECONFIG", ":".join(str(path) for path in paths))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)


@pytest.mark.parametrize("text", ["- 1\n", "{ not yaml\n"], ids=["list", "not-yaml"])
async def test_among_several_kubeconfigs_the_one_that_is_not_is_named(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    from services.kube.errors import KubeError

    bad, good = tmp_path / "bad", tmp_path / "good"
    bad.write_text(text)
    good.write_text(KUBECONFIG)
    several(monkeypatch, good, bad)
    with pytest.raises(KubeError) as raised:
        await kube_client.connect(KubeSettings())
    assert str(raised.value).startswith(f"no Kubernetes credentials: {bad} is not a kubeconfig (")


async def test_an_empty_kubeconfig_among_several_is_skipped_as_kubectl_skips_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
) -> None:
    empty, good = tmp_path / "empty", tmp_path / "good"
    empty.write_text("")
    good.write_text(KUBECONFIG)
    several(monkeypatch, empty, good)
    with caplog.at_level(logging.INFO, logger="services.kube.client"):
        client = await kube_client.connect(KubeSettings())
    await client.close()
    assert f"Kubernetes API https://127.0.0.1:6443 (credentials: kubeconfig {empty}:{good})" in (
        caplog.text)


async def test_several_empty_kubeconfigs_are_named(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from services.kube.errors import KubeError

    first, second = tmp_path / "first", tmp_path / "second"
    first.write_text("")
    second.write_text("# nothing yet\n")
    several(monkeypatch, first, second)
    with pytest.raises(KubeError) as raised:
        await kube_client.connect(KubeSettings())
    assert str(raised.value) == (f"no Kubernetes credentials: {first}, {second} are not "
                                 "kubeconfigs (the files are empty)")


async def test_the_first_kubeconfig_to_set_a_current_context_wins(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    first.write_text(KUBECONFIG)
    second.write_text(KUBECONFIG.replace("name: x", "name: y").replace(
        "current-context: x", "current-context: y").replace("name: c", "name: c2").replace(
        "{cluster: c,", "{cluster: c2,").replace("6443", "7443"))
    several(monkeypatch, first, second)
    client = await kube_client.connect(KubeSettings())
    await client.close()
    assert client.host == "https://127.0.0.1:6443"  # first's current-context, x


@pytest.mark.parametrize(("text", "context", "why"), [
    ("{}\n", None, "kubeconfig {path} sets no current-context, and no --context was given"),
    (KUBECONFIG, "nope", 'no context "nope" in kubeconfig {path}'),
    (KUBECONFIG.replace("{cluster: c,", "{cluster: c2,"), None,
     'no cluster "c2" (of context "x") in kubeconfig {path}'),
    (KUBECONFIG.replace("{cluster: c, ", "{"), None,
     'kubeconfig {path}: context "x" names no cluster'),
], ids=["no-current-context", "no-such-context", "no-such-cluster", "no-cluster"])
async def test_a_context_that_cannot_be_used_is_named(
        tmp_path: Path, text: str, context: str | None, why: str) -> None:
    from services.kube.errors import KubeError

    path = tmp_path / "kubeconfig"
    path.write_text(text)
    with pytest.raises(KubeError) as raised:
        await kube_client.connect(KubeSettings(kubeconfig=path, context=context))
    assert str(raised.value) == "no Kubernetes credentials: " + why.format(path=path)


async def test_a_kubeconfig_variable_path_that_is_a_directory_is_refused_naming_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from services.kube.errors import KubeError

    directory, good = tmp_path / "somedir", tmp_path / "good"
    directory.mkdir()
    good.write_text(KUBECONFIG)
    several(monkeypatch, tmp_path / "absent", good, directory)  # the missing one is skipped
    with pytest.raises(KubeError) as raised:
        await kube_client.connect(KubeSettings())
    assert str(raised.value) == (
        f"no Kubernetes credentials: cannot read kubeconfig {directory}: Is a directory")


@pytest.mark.parametrize(("name", "why"), [
    ("somedir", "Is a directory"), ("x" * 300, "File name too long")])
async def test_a_kubeconfig_option_that_cannot_be_read_is_refused_naming_it(
        tmp_path: Path, name: str, why: str) -> None:
    from services.kube.errors import KubeError

    path = tmp_path / name
    if name == "somedir":
        path.mkdir()
    with pytest.raises(KubeError) as raised:
        await kube_client.connect(KubeSettings(kubeconfig=path))
    assert str(raised.value) == f"no Kubernetes credentials: cannot read kubeconfig {path}: {why}"
