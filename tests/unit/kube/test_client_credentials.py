"""Credentials that cannot be supplied for a request leave the client as a KubeError, like
every other failure, and a kubeconfig's exec plugin is run again after it failed once; TLS
material that can never be used (not base64, not PEM, a directory, a key that is not the
certificate's or needs a passphrase) is refused at connect, in one line naming its field.

The in-cluster case uses kubernetes_asyncio's own service-account loader on token files in a
temporary directory (re-read before every request: refresh period 0); the exec case a real
plugin, a Python script that counts its runs.
"""

from __future__ import annotations

import asyncio
import base64
import datetime
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import certifi
import pytest
from kubernetes_asyncio.config import incluster_config

from services.config.settings import KubeSettings
from services.kube import client, errors


@pytest.fixture
def service_account(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A pod's service account: the token file (returned) and CA file, and the API server's
    address (a port nothing listens on) in the environment, as the kubelet provides them."""
    token = tmp_path / "token"
    token.write_text("t0ken")
    monkeypatch.setattr(incluster_config, "SERVICE_TOKEN_FILENAME", str(token))
    monkeypatch.setattr(incluster_config, "SERVICE_CERT_FILENAME", certifi.where())
    monkeypatch.setattr(incluster_config, "TOKEN_REFRESH_PERIOD", datetime.timedelta(0))
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "1")
    return token


def removed(token: Path) -> None:
    token.unlink()


def emptied(token: Path) -> None:
    token.write_text("")


@pytest.mark.parametrize("spoil", [removed, emptied], ids=["token-removed", "token-empty"])
async def test_a_service_account_token_that_cannot_be_reread_is_kube_unavailable(
        service_account: Path, spoil: Callable[[Path], None]) -> None:
    kube = await client.connect(KubeSettings())
    try:
        spoil(service_account)
        with pytest.raises(errors.KubeUnavailable,
                           match=r"^GET /api/v1/nodes/n1: credentials unavailable: "):
            await kube.request("GET", "/api/v1/nodes/n1")
        with pytest.raises(errors.KubeUnavailable, match="credentials unavailable"):
            async for _ in kube.stream("/api/v1/nodes", (("watch", "true"),),
                                       read_timeout_seconds=1):
                pass
    finally:
        await kube.close()


async def test_credentials_are_reused_for_a_second_then_asked_again(
        service_account: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kube = await client.connect(KubeSettings())
    try:
        assert (await kube._credentials("GET /api"))[0] == {"authorization": "Bearer t0ken"}
        service_account.write_text("rotated")
        # within CREDENTIALS_REUSE_SECONDS the token read first is sent again
        assert (await kube._credentials("GET /api"))[0] == {"authorization": "Bearer t0ken"}
        monkeypatch.setattr(client, "CREDENTIALS_REUSE_SECONDS", 0.0)
        assert (await kube._credentials("GET /api"))[0] == {"authorization": "Bearer rotated"}
        monkeypatch.setattr(client, "CREDENTIALS_REUSE_SECONDS", 3600.0)
        emptied(service_account)
        assert (await kube._credentials("GET /api"))[0] == {"authorization": "Bearer rotated"}
        monkeypatch.setattr(client, "CREDENTIALS_REUSE_SECONDS", 0.0)
        with pytest.raises(errors.KubeUnavailable, match="credentials unavailable"):
            await kube._credentials("GET /api")
        # a failure keeps nothing: the token written next is used at once, whatever the window
        monkeypatch.setattr(client, "CREDENTIALS_REUSE_SECONDS", 3600.0)
        service_account.write_text("fresh")
        assert (await kube._credentials("GET /api"))[0] == {"authorization": "Bearer fresh"}
    finally:
        await kube.close()


PLUGIN = """
import json, pathlib, sys
runs = pathlib.Path(sys.argv[1])
count = len(runs.read_text()) + 1 if runs.exists() else 1
runs.write_text("x" * count)
if count == 2:
    sys.exit("the identity provider is unreachable")
print(json.dumps({"apiVersion": "client.authentication.k8s.io/v1beta1",
                  "kind": "ExecCredential", "status": {"token": f"token-{count}"}}))
"""

def exec_kubeconfig(plugin: Path, runs: Path) -> str:
    """A kubeconfig whose user's credentials come from running `plugin` (JSON is YAML)."""
    return json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "x",
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1",
                                               "insecure-skip-tls-verify": True}}],
        "users": [{"name": "u", "user": {"exec": {
            "apiVersion": "client.authentication.k8s.io/v1beta1", "command": sys.executable,
            "args": [str(plugin), str(runs)], "interactiveMode": "Never"}}}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
    })


async def test_an_exec_plugin_that_failed_once_is_run_again_and_its_new_token_used(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plugin, runs = tmp_path / "plugin.py", tmp_path / "runs"
    plugin.write_text(PLUGIN)
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(exec_kubeconfig(plugin, runs))
    monkeypatch.setattr(client, "TOKEN_REFRESH_SECONDS", 0.01)
    kube = await client.connect(KubeSettings(kubeconfig=kubeconfig))
    try:
        headers: dict[str, str] = {}
        await kube._api.update_params_for_auth(headers, [], client.AUTH_SETTINGS)
        assert headers["authorization"] == "Bearer token-1"
        # the second run fails; the refresher must not give up but run the plugin again
        async with asyncio.timeout(30):  # a bound on a hang, not on the expected outcome
            while len(runs.read_text()) < 3:
                assert kube._refresher is not None and not kube._refresher.done(), (
                    f"the refresher ended after {len(runs.read_text())} runs of the plugin")
                await asyncio.sleep(0.01)
            while headers["authorization"] != "Bearer token-3":
                await asyncio.sleep(0.01)
                await kube._api.update_params_for_auth(headers, [], client.AUTH_SETTINGS)
    finally:
        await kube.close()


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory of PEM files: `cert` and its `key`, `other.key` (another certificate's),
    `encrypted.key` (`key` under a passphrase), `junk` (not PEM) and `dir` (a directory)."""
    pki = tmp_path_factory.mktemp("pki")
    for name in ("", "other."):
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                        "ec_paramgen_curve:P-256", "-nodes", "-days", "1", "-subj", "/CN=u",
                        "-keyout", str(pki / f"{name}key"), "-out", str(pki / f"{name}cert")],
                       check=True, capture_output=True)
    subprocess.run(["openssl", "pkey", "-in", str(pki / "key"), "-aes256", "-passout",
                    "pass:secret", "-out", str(pki / "encrypted.key")],
                   check=True, capture_output=True)
    (pki / "junk").write_text("NOTBASE64!\n")
    (pki / "dir").mkdir()
    return pki


def tls_kubeconfig(path: Path, cluster: dict[str, str], user: dict[str, str]) -> Path:
    """A kubeconfig at `path` whose cluster (at a port nothing listens on) and user have
    these TLS fields."""
    path.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "x",
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1", **cluster}}],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
    }))
    return path


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


NOT_PEM = b64(b"NOTBASE64!")  # base64, of something that is not PEM


@pytest.mark.parametrize(("cluster", "user", "why"), [
    ({"certificate-authority-data": NOT_PEM}, {},
     'cluster "c": certificate-authority-data is not a PEM certificate'),
    ({"certificate-authority-data": "NOTBASE64!"}, {},
     'cluster "c": certificate-authority-data is not base64'),
    ({"certificate-authority": "{pki}/junk"}, {},
     'cluster "c": certificate-authority {pki}/junk is not a PEM certificate'),
    ({"certificate-authority": "{pki}/key"}, {},
     'cluster "c": certificate-authority {pki}/key is not a PEM certificate'),
    ({"certificate-authority": "{pki}/dir"}, {},
     'cluster "c": certificate-authority {pki}/dir is a directory'),
    ({"certificate-authority": "{pki}/absent"}, {},
     'cluster "c": certificate-authority {pki}/absent does not exist'),
    ({}, {"client-certificate-data": NOT_PEM, "client-key": "{pki}/key"},
     'user "u": client-certificate-data is not a PEM certificate'),
    ({}, {"client-certificate": "{pki}/dir", "client-key": "{pki}/key"},
     'user "u": client-certificate {pki}/dir is a directory'),
    ({}, {"client-certificate": "{pki}/cert", "client-key-data": NOT_PEM},
     'user "u": client-key-data is not a PEM private key'),
    ({}, {"client-certificate": "{pki}/cert", "client-key-data": "NOTBASE64!"},
     'user "u": client-key-data is not base64'),
    ({}, {"client-certificate": "{pki}/cert", "client-key": "{pki}/other.key"},
     'user "u": client-key {pki}/other.key is not the private key of the client certificate'),
    ({}, {"client-certificate": "{pki}/cert", "client-key": "{pki}/encrypted.key"},
     'user "u": client-key {pki}/encrypted.key is encrypted: a key with a passphrase is not '
     "supported"),
    ({}, {"client-certificate": "{pki}/cert"},
     'user "u": client-certificate without client-key (or client-key-data)'),
    ({}, {"client-key-data": NOT_PEM},
     'user "u": client-key without client-certificate (or client-certificate-data)'),
], ids=["ca-data-not-pem", "ca-data-not-base64", "ca-file-not-pem", "ca-file-a-key",
        "ca-file-a-directory", "ca-file-absent", "cert-data-not-pem", "cert-file-a-directory",
        "key-data-not-pem", "key-data-not-base64", "key-of-another", "key-encrypted",
        "cert-without-key", "key-without-cert"])
async def test_tls_material_that_cannot_be_used_is_named_in_one_line(
        pki: Path, tmp_path: Path, cluster: dict[str, str], user: dict[str, str],
        why: str) -> None:
    def placed(fields: dict[str, str]) -> dict[str, str]:
        return {name: value.format(pki=pki) for name, value in fields.items()}

    path = tls_kubeconfig(tmp_path / "kubeconfig", placed(cluster), placed(user))
    with pytest.raises(errors.KubeError) as raised:
        await client.connect(KubeSettings(kubeconfig=path))
    assert str(raised.value) == (
        f"no Kubernetes credentials: kubeconfig {path}: {why.format(pki=pki)}")


async def test_relative_tls_files_are_read_from_the_kubeconfigs_directory(
        pki: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tls_kubeconfig(pki / "kubeconfig", {"certificate-authority": "cert"},
                          {"client-certificate": "cert", "client-key": "junk"})
    monkeypatch.chdir(tmp_path)
    with pytest.raises(errors.KubeError) as raised:
        await client.connect(KubeSettings(kubeconfig=path))
    assert str(raised.value) == (f'no Kubernetes credentials: kubeconfig {path}: user "u": '
                                 f"client-key {pki}/junk is not a PEM private key")


async def test_an_in_cluster_ca_file_that_is_not_a_certificate_is_named(
        service_account: Path, pki: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(incluster_config, "SERVICE_CERT_FILENAME", str(pki / "junk"))
    with pytest.raises(errors.KubeError) as raised:
        await client.connect(KubeSettings())
    assert str(raised.value) == ("no Kubernetes credentials: in-cluster service account: CA "
                                 f"file {pki}/junk is not a PEM certificate")


async def test_an_in_cluster_api_server_port_that_is_not_one_is_refused(
        service_account: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "https")
    with pytest.raises(errors.KubeError) as raised:
        await client.connect(KubeSettings())
    assert str(raised.value) == (
        "no Kubernetes credentials: in-cluster service account: the API server "
        "https://127.0.0.1:https (from KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT): "
        'port "https" is not a number from 1 to 65535')
