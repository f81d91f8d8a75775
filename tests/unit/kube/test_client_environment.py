"""The API client reads proxy settings from the environment once, not on every request."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.config.settings import KubeSettings
from services.kube import client, errors

KUBECONFIG = """
apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://10.1.2.3:6443", insecure-skip-tls-verify: true}
users:
- name: u
  user: {token: "t0ken"}
contexts:
- name: x
  context: {cluster: c, user: u}
current-context: x
"""


def test_the_environments_proxy_is_used_unless_no_proxy_bypasses_the_host(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy", "HTTPS_PROXY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("https_proxy", "http://proxy.example:3128")
    assert client.proxy_from_environment("https://10.1.2.3:6443") == "http://proxy.example:3128"
    monkeypatch.setenv("no_proxy", "10.1.2.3")
    assert client.proxy_from_environment("https://10.1.2.3:6443") is None


async def test_a_connected_client_does_not_trust_the_environment_per_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy", "HTTPS_PROXY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("https_proxy", "http://proxy.example:3128")
    path = tmp_path / "kubeconfig"
    path.write_text(KUBECONFIG)
    kube = await client.connect(KubeSettings(kubeconfig=path))
    try:
        rest = kube._api.rest_client
        assert rest.pool_manager.trust_env is False
        assert rest.proxy == "http://proxy.example:3128"
    finally:
        await kube.close()


async def test_a_missing_kubeconfig_is_named_in_the_error(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "kubeconfig"
    with pytest.raises(errors.KubeError, match=f"kubeconfig {missing} does not exist"):
        await client.connect(KubeSettings(kubeconfig=missing))
