"""Credentials that cannot be supplied for a request leave the client as a KubeError, like
every other failure, and a kubeconfig's exec plugin is run again after it failed once.

The in-cluster case uses kubernetes_asyncio's own service-account loader on token files in a
temporary directory (re-read before every request: refresh period 0); the exec case a real
plugin, a Python script that counts its runs.
"""

from __future__ import annotations

import asyncio
import datetime
import json
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
